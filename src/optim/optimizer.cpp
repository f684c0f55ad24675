// The Optimizer base class: parameter checks, groups, zero_grad, the step loop and state_dict.
#include "xgrad/optim/optimizer.hpp"

#include <set>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::optim {

namespace {

/// Splits "a.b.c" after its first two dots: {"a", "b", "c"}; fewer parts when there are fewer dots.
std::vector<std::string> split_key(const std::string& key) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (int i = 0; i < 2; ++i) {
        const std::size_t dot = key.find('.', start);
        if (dot == std::string::npos) break;
        parts.push_back(key.substr(start, dot - start));
        start = dot + 1;
    }
    parts.push_back(key.substr(start));
    return parts;
}

/// The non-negative integer `s` spells, or -1.
std::int64_t parse_index(const std::string& s) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoll(s);
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, GroupOptions defaults, const char* name)
    : name_(name), defaults_(std::move(defaults)) {
    if (params.empty()) detail::fail(name_, "got an empty parameter list");
    if (!(defaults_.at("lr") >= 0.0))  // checked before anything else, as PyTorch does
        detail::fail(name_, "invalid learning rate: " + nn::python_float_repr(defaults_.at("lr")));
    append_group(std::move(params), defaults_);  // no virtual calls here: derived constructors check
}

void Optimizer::set_lr(double lr) {
    if (!(lr >= 0.0)) detail::fail(name_, "invalid learning rate: " + nn::python_float_repr(lr));
    for (auto& g : groups_) g.options["lr"] = lr;
}

double Optimizer::option(std::size_t group, const std::string& name) const {
    if (group >= groups_.size())
        detail::fail(name_, "no parameter group " + std::to_string(group) + " (there are " +
                                std::to_string(groups_.size()) + ")");
    auto it = groups_[group].options.find(name);
    if (it == groups_[group].options.end())
        detail::fail(name_, "parameter group " + std::to_string(group) + " has no option '" + name + "'");
    return it->second;
}

void Optimizer::set_option(std::size_t group, const std::string& name, double value) {
    option(group, "lr");  // checks the group index
    GroupOptions options = groups_[group].options;
    options[name] = value;
    if (!(options.at("lr") >= 0.0)) detail::fail(name_, "invalid learning rate: " + nn::python_float_repr(value));
    check_options(options);
    groups_[group].options = std::move(options);
}

void Optimizer::add_param_group(std::vector<Tensor> params, const GroupOptions& options) {
    if (params.empty()) detail::fail(name_, "got an empty parameter list");
    GroupOptions merged = defaults_;
    for (const auto& [k, v] : options) merged[k] = v;
    if (!(merged.at("lr") >= 0.0))
        detail::fail(name_, "invalid learning rate: " + nn::python_float_repr(merged.at("lr")));
    check_options(merged);
    const std::size_t first = params_.size();
    append_group(std::move(params), std::move(merged));
    on_params_added(first);
}

void Optimizer::append_group(std::vector<Tensor> params, GroupOptions options) {
    std::set<const void*> seen;
    for (const auto& p : params_) seen.insert(p.impl().get());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const std::string which = "parameter " + std::to_string(params_.size() + i);
        if (!params[i].defined()) detail::fail(name_, which + " is undefined");
        if (!params[i].is_leaf())
            detail::fail(
                name_, "can't optimize a non-leaf tensor (" + which + " has grad_fn " + params[i].grad_fn_name() + ")");
        if (!seen.insert(params[i].impl().get()).second)
            detail::fail(name_, "some parameters appear in more than one parameter group (" + which + ")");
    }
    params_.insert(params_.end(), params.begin(), params.end());
    state_.resize(params_.size());
    groups_.push_back({std::move(params), std::move(options)});
}

void Optimizer::zero_grad() {
    for (auto& p : params_) p.mutable_grad() = Tensor();
}

void Optimizer::step() {
    NoGradGuard no_grad;
    std::size_t i = 0;
    try {
        for (auto& group : groups_) {
            for (std::size_t k = 0; k < group.params.size(); ++k, ++i) {
                Tensor& param = params_[i];
                Tensor grad = param.grad();
                if (!grad.defined()) continue;
                if (grad.shape() != param.shape())
                    detail::fail(name_, "the gradient of shape " + to_string(grad.shape()) +
                                            " does not match parameter " + std::to_string(i) + " of shape " +
                                            to_string(param.shape()));
                update(group.options, i, param, grad);
            }
        }
    } catch (...) {
        finish_step();  // the parameters before the one that threw are updated, as without deferral
        throw;
    }
    finish_step();
}

StateDict Optimizer::state_dict() const {
    StateDict out;
    for (std::size_t i = 0; i < params_.size(); ++i)
        for (const auto& [k, t] : get_state(i))
            if (t.defined()) out.emplace_back("state." + std::to_string(i) + "." + k, t.detach().clone());
    std::int64_t first = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const std::string prefix = "param_groups." + std::to_string(g) + ".";
        for (const auto& [k, v] : groups_[g].options) out.emplace_back(prefix + k, full({}, v, kFloat64));
        const auto n = static_cast<std::int64_t>(groups_[g].params.size());
        out.emplace_back(prefix + "params",
                         arange(static_cast<double>(first), static_cast<double>(first + n), 1.0, kInt64));
        first += n;
    }
    return out;
}

void Optimizer::load_state_dict(const StateDict& state) {
    const auto bad = [&](const std::string& msg) { detail::fail(name_, "load_state_dict: " + msg); };
    std::map<std::int64_t, GroupOptions> options;
    std::map<std::int64_t, Tensor> indices;
    std::map<std::int64_t, ParamState> saved;
    for (const auto& [key, t] : state) {
        const auto parts = split_key(key);
        const std::int64_t n = parts.size() == 3 ? parse_index(parts[1]) : -1;
        if (n < 0 || !t.defined() || (parts[0] != "state" && parts[0] != "param_groups"))
            bad("unexpected key '" + key + "'");
        if (parts[0] == "state") {
            if (!is_state_name(parts[2])) bad("unexpected key '" + key + "'");
            saved[n][parts[2]] = t;
        } else if (parts[2] == "params") {
            if (t.dtype() != kInt64 || t.dim() != 1) bad("'" + key + "' must be a 1-d int64 tensor");
            indices[n] = t;
        } else {
            if (t.numel() != 1) bad("'" + key + "' must hold one value, got shape " + to_string(t.shape()));
            options[n][parts[2]] = t.to(kFloat64).item<double>();
        }
    }
    if (indices.size() != groups_.size() || options.size() != groups_.size() ||
        (!indices.empty() && indices.rbegin()->first != static_cast<std::int64_t>(groups_.size()) - 1))
        bad("loaded state dict has a different number of parameter groups (" + std::to_string(indices.size()) +
            " != " + std::to_string(groups_.size()) + ")");
    // Saved parameter ids map onto this optimizer's parameters group by group, in order (as PyTorch).
    std::map<std::int64_t, std::size_t> id_to_param;
    std::size_t i = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const auto ids = indices.at(static_cast<std::int64_t>(g)).to_vector<std::int64_t>();
        if (ids.size() != groups_[g].params.size())
            bad("loaded state dict contains a parameter group that doesn't match the size of optimizer's group (" +
                std::to_string(ids.size()) + " != " + std::to_string(groups_[g].params.size()) + " in group " +
                std::to_string(g) + ")");
        for (auto id : ids) id_to_param[id] = i++;
        for (const auto& [k, v] : defaults_)
            if (!options.at(static_cast<std::int64_t>(g)).count(k))
                bad("parameter group " + std::to_string(g) + " has no option '" + k + "'");
        check_options(options.at(static_cast<std::int64_t>(g)));
    }
    std::vector<ParamState> new_state(params_.size());
    for (auto& [id, entries] : saved) {
        auto found = id_to_param.find(id);
        if (found == id_to_param.end()) bad("state " + std::to_string(id) + " belongs to no parameter group");
        const Tensor& p = params_[found->second];
        for (auto& [k, t] : entries) {
            if (k == "step") {
                if (t.numel() != 1) bad("state." + std::to_string(id) + ".step must hold one value");
                new_state[found->second][k] = t.clone();
                continue;
            }
            if (t.shape() != p.shape())
                bad("state." + std::to_string(id) + "." + k + " has shape " + to_string(t.shape()) + " but parameter " +
                    std::to_string(found->second) + " has shape " + to_string(p.shape()));
            new_state[found->second][k] = t.to(p.dtype()).to(p.device()).clone();
        }
    }
    for (std::size_t g = 0; g < groups_.size(); ++g) groups_[g].options = options.at(static_cast<std::int64_t>(g));
    for (std::size_t k = 0; k < params_.size(); ++k) set_state(k, std::move(new_state[k]));
}

}  // namespace xgrad::optim
