// Adam's and AdamW's update, written as PyTorch 1.13's _single_tensor_adam(w) so the numbers agree.
#include "xgrad/optim/adam.hpp"

#include <cmath>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "optim/common.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::optim {

namespace {

AdamOptions as_adam(const AdamWOptions& o) {
    return {.lr = o.lr,
            .betas = o.betas,
            .eps = o.eps,
            .weight_decay = o.weight_decay,
            .amsgrad = o.amsgrad,
            .maximize = o.maximize};
}

GroupOptions as_group(const AdamOptions& o) {
    return {{"lr", o.lr},
            {"beta1", o.betas[0]},
            {"beta2", o.betas[1]},
            {"eps", o.eps},
            {"weight_decay", o.weight_decay},
            {"amsgrad", o.amsgrad ? 1.0 : 0.0},
            {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options) : Adam(std::move(params), options, false, "Adam") {}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : Adam(std::move(params), as_adam(options), true, "AdamW") {}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled, const char* name)
    : Optimizer(std::move(params), as_group(options), name), options_(options), decoupled_(decoupled) {
    check_options(as_group(options));
    moments_.resize(parameters().size());
}

void Adam::check_options(const GroupOptions& o) const {
    using nn::python_float_repr;
    if (!(o.at("eps") >= 0.0)) xgrad::detail::fail(name_, "invalid epsilon value: " + python_float_repr(o.at("eps")));
    for (int i = 0; i < 2; ++i) {
        const double beta = o.at(i == 0 ? "beta1" : "beta2");
        if (!(beta >= 0.0 && beta < 1.0))
            xgrad::detail::fail(name_, "invalid beta parameter at index " + std::to_string(i) + ": " +
                                           python_float_repr(beta) + " (must be in [0, 1))");
    }
    if (!(o.at("weight_decay") >= 0.0))
        xgrad::detail::fail(name_, "invalid weight_decay value: " + python_float_repr(o.at("weight_decay")));
}

void Adam::on_params_added(std::size_t) {
    moments_.resize(parameters().size());
}

bool Adam::is_state_name(const std::string& name) const {
    return name == "step" || name == "exp_avg" || name == "exp_avg_sq" || name == "max_exp_avg_sq";
}

ParamState Adam::get_state(std::size_t index) const {
    const AdamState& s = moments_.at(index);
    if (s.step == 0) return {};
    ParamState out{{"step", full({}, static_cast<double>(s.step), kFloat32)},
                   {"exp_avg", s.exp_avg},
                   {"exp_avg_sq", s.exp_avg_sq}};
    if (s.max_exp_avg_sq.defined()) out["max_exp_avg_sq"] = s.max_exp_avg_sq;
    return out;
}

void Adam::set_state(std::size_t index, ParamState state) {
    AdamState s;
    if (!state.empty()) {
        if (!state.count("step") || !state.count("exp_avg") || !state.count("exp_avg_sq"))
            xgrad::detail::fail(name_, "load_state_dict: the state of parameter " + std::to_string(index) +
                                           " needs step, exp_avg and exp_avg_sq");
        s.step = static_cast<std::int64_t>(state.at("step").to(kFloat64).item<double>());
        s.exp_avg = state.at("exp_avg");
        s.exp_avg_sq = state.at("exp_avg_sq");
        if (state.count("max_exp_avg_sq")) s.max_exp_avg_sq = state.at("max_exp_avg_sq");
    }
    moments_.at(index) = std::move(s);
}

void Adam::update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad_in) {
    const AdamOptions o{.lr = group.at("lr"),
                        .betas = {group.at("beta1"), group.at("beta2")},
                        .eps = group.at("eps"),
                        .weight_decay = group.at("weight_decay"),
                        .amsgrad = group.at("amsgrad") != 0.0,
                        .maximize = group.at("maximize") != 0.0};
    const double beta1 = o.betas[0], beta2 = o.betas[1];
    AdamState& s = moments_[index];
    if (s.step == 0 || s.exp_avg.shape() != param.shape()) {  // lazily: the parameter may have been materialised late
        s = AdamState{};
        s.exp_avg = zeros_like(param);
        s.exp_avg_sq = zeros_like(param);
        if (o.amsgrad) s.max_exp_avg_sq = zeros_like(param);
    } else if (s.exp_avg.dtype() != param.dtype() || s.exp_avg.device() != param.device()) {
        // The module was converted or moved with Module::to: the state follows its parameter.
        s.exp_avg = s.exp_avg.to(param.dtype()).to(param.device());
        s.exp_avg_sq = s.exp_avg_sq.to(param.dtype()).to(param.device());
        if (s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = s.max_exp_avg_sq.to(param.dtype()).to(param.device());
    }
    if (o.amsgrad && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros_like(param);  // amsgrad set later
    Tensor grad = (o.maximize ? grad_in.neg() : grad_in).to(param.dtype());
    s.step += 1;
    if (decoupled_)
        param.mul_(1.0 - o.lr * o.weight_decay);
    else if (o.weight_decay != 0.0)
        grad = grad.clone().add_(param, o.weight_decay);  // grad.add(param, alpha=weight_decay)

    const auto step = static_cast<double>(s.step);
    const double bias_correction1 = 1.0 - std::pow(beta1, step);
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    const double step_size = o.lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    if (param.is_contiguous()) {
        // One fused pass, run by finish_step() together with the other parameters of this step.
        deferred_.push_back(
            {{param, grad.contiguous(), s.exp_avg, s.exp_avg_sq, o.amsgrad ? s.max_exp_avg_sq : Tensor()},
             {beta1, beta2, step_size, bias_correction2_sqrt, o.eps}});
        return;
    }
    // A parameter of another layout: the same kernel on a contiguous copy, copied back; the state is
    // kept contiguous.
    Tensor p = param.contiguous();
    s.exp_avg = s.exp_avg.contiguous();
    s.exp_avg_sq = s.exp_avg_sq.contiguous();
    if (o.amsgrad) s.max_exp_avg_sq = s.max_exp_avg_sq.contiguous();
    const kernels::AdamTensors t{p, grad.contiguous(), s.exp_avg, s.exp_avg_sq,
                                 o.amsgrad ? s.max_exp_avg_sq : Tensor()};
    kernels::adam_step(&t, 1,
                       {.beta1 = beta1,
                        .beta2 = beta2,
                        .step_size = step_size,
                        .bias_correction2_sqrt = bias_correction2_sqrt,
                        .eps = o.eps});
    param.copy_(p);
}

void Adam::finish_step() {
    optim::detail::run_deferred(
        deferred_, 4, [](const Deferred& a, const Deferred& b) { return a.coefficients == b.coefficients; },
        [](const Deferred* first, const Deferred* last) {
            std::vector<kernels::AdamTensors> run;
            for (const Deferred* d = first; d != last; ++d) {
                const auto& t = d->tensors;
                run.push_back({t[0], t[1], t[2], t[3], t[4]});
            }
            const auto& c = first->coefficients;
            kernels::adam_step(
                run.data(), run.size(),
                {.beta1 = c[0], .beta2 = c[1], .step_size = c[2], .bias_correction2_sqrt = c[3], .eps = c[4]});
            for (const auto& t : run) xgrad::detail::bump_version(t.param);
        });
}

}  // namespace xgrad::optim
