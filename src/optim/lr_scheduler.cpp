// The schedulers, with PyTorch 1.13's chainable (recursive) get_lr formulas, on every parameter group.
#include "xgrad/optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::optim {

namespace {

Tensor scalar(double v) {
    return full({}, v, kFloat64);
}
Tensor scalar_int(std::int64_t v) {
    return full({}, static_cast<double>(v), kInt64);
}
Tensor vec(const std::vector<double>& v) {
    return from_vector(v, {static_cast<std::int64_t>(v.size())}, kFloat64);
}

/// The entry `name` of `state`; throws naming the scheduler and the entry when it is missing.
const Tensor& entry(const StateDict& state, const std::string& name, const char* who) {
    for (const auto& [k, t] : state)
        if (k == name && t.defined()) return t;
    xgrad::detail::fail(who, "load_state_dict: missing entry '" + name + "'");
}

/// The entries of `state` under `prefix`, with it removed.
StateDict under(const StateDict& state, const std::string& prefix) {
    StateDict out;
    for (const auto& [k, t] : state)
        if (k.rfind(prefix, 0) == 0) out.emplace_back(k.substr(prefix.size()), t);
    return out;
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
    for (std::size_t g = 0; g < groups(); ++g) {
        const auto& o = optimizer.param_groups()[g].options;
        if (!o.count("initial_lr")) optimizer_.set_option(g, "initial_lr", o.at("lr"));  // PyTorch's setdefault
        base_lrs_.push_back(optimizer_.option(g, "initial_lr"));
        last_lr_.push_back(optimizer_.option(g, "lr"));
    }
}

void LRScheduler::apply(const std::vector<double>& lrs) {
    for (std::size_t g = 0; g < lrs.size(); ++g) optimizer_.set_option(g, "lr", lrs[g]);
    last_lr_ = lrs;
}

void LRScheduler::step() {
    ++last_epoch_;
    std::vector<double> lrs;
    for (std::size_t g = 0; g < groups(); ++g) lrs.push_back(get_lr(g));
    apply(lrs);
}

void LRScheduler::step(std::int64_t epoch) {
    last_epoch_ = epoch;
    std::vector<double> lrs;
    for (std::size_t g = 0; g < groups(); ++g) lrs.push_back(closed_form_lr(g));
    apply(lrs);
}

StateDict LRScheduler::state_dict() const {
    return {{"last_epoch", scalar_int(last_epoch_)}, {"base_lrs", vec(base_lrs_)}, {"_last_lr", vec(last_lr_)}};
}

void LRScheduler::load_state_dict(const StateDict& state) {
    const auto n = static_cast<std::int64_t>(groups());
    auto base = entry(state, "base_lrs", "LRScheduler").to_vector<double>();
    auto last = entry(state, "_last_lr", "LRScheduler").to_vector<double>();
    if (static_cast<std::int64_t>(base.size()) != n || static_cast<std::int64_t>(last.size()) != n)
        xgrad::detail::fail("LRScheduler", "load_state_dict: the state has " + std::to_string(base.size()) +
                                               " groups, the optimizer " + std::to_string(n));
    last_epoch_ = entry(state, "last_epoch", "LRScheduler").to(kInt64).item<std::int64_t>();
    base_lrs_ = std::move(base);
    last_lr_ = std::move(last);
}

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
    if (step_size < 1) xgrad::detail::fail("StepLR", "step_size must be at least 1, got " + std::to_string(step_size));
    initial_step();
}

double StepLR::get_lr(std::size_t g) const {
    const double lr = group_lr(g);
    if (last_epoch() == 0 || last_epoch() % step_size_ != 0) return lr;
    return lr * gamma_;
}

double StepLR::closed_form_lr(std::size_t g) const {
    return base_lrs_[g] * std::pow(gamma_, static_cast<double>(last_epoch() / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
    if (t_max < 1) xgrad::detail::fail("CosineAnnealingLR", "T_max must be at least 1, got " + std::to_string(t_max));
    initial_step();
}

double CosineAnnealingLR::get_lr(std::size_t g) const {
    using std::numbers::pi;
    const double lr = group_lr(g);
    const std::int64_t e = last_epoch();
    const auto t_max = static_cast<double>(t_max_);
    if (e == 0) return lr;
    // At the bottom of each cosine, the recursion's ratio is 0/0: PyTorch steps back up explicitly.
    if ((e - 1 - t_max_) % (2 * t_max_) == 0) return lr + (base_lrs_[g] - eta_min_) * (1 - std::cos(pi / t_max)) / 2;
    return (1 + std::cos(pi * static_cast<double>(e) / t_max)) /
               (1 + std::cos(pi * static_cast<double>(e - 1) / t_max)) * (lr - eta_min_) +
           eta_min_;
}

double CosineAnnealingLR::closed_form_lr(std::size_t g) const {
    using std::numbers::pi;
    return eta_min_ + (base_lrs_[g] - eta_min_) *
                          (1 + std::cos(pi * static_cast<double>(last_epoch()) / static_cast<double>(t_max_))) / 2;
}

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(optimizer), lambdas_(std::move(lr_lambdas)) {
    if (lambdas_.size() != groups())
        xgrad::detail::fail("LambdaLR", "Expected " + std::to_string(groups()) + " lr_lambdas, but got " +
                                            std::to_string(lambdas_.size()));
    for (const auto& f : lambdas_)
        if (!f) xgrad::detail::fail("LambdaLR", "lr_lambda is empty");
    initial_step();
}

double LambdaLR::get_lr(std::size_t g) const {
    return base_lrs_[g] * lambdas_[g](last_epoch());
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, std::int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
    if (!(start_factor > 0.0 && start_factor <= 1.0))
        xgrad::detail::fail("LinearLR", "Starting multiplicative factor expected to be between 0 and 1.");
    if (!(end_factor >= 0.0 && end_factor <= 1.0))
        xgrad::detail::fail("LinearLR", "Ending multiplicative factor expected to be between 0 and 1.");
    if (total_iters < 1)
        xgrad::detail::fail("LinearLR", "total_iters must be at least 1, got " + std::to_string(total_iters));
    initial_step();
}

double LinearLR::get_lr(std::size_t g) const {
    const double lr = group_lr(g);
    const std::int64_t e = last_epoch();
    if (e == 0) return lr * start_factor_;
    if (e > total_iters_) return lr;
    return lr * (1. + (end_factor_ - start_factor_) / (static_cast<double>(total_iters_) * start_factor_ +
                                                       static_cast<double>(e - 1) * (end_factor_ - start_factor_)));
}

double LinearLR::closed_form_lr(std::size_t g) const {
    return base_lrs_[g] *
           (start_factor_ + (end_factor_ - start_factor_) * static_cast<double>(std::min(total_iters_, last_epoch())) /
                                static_cast<double>(total_iters_));
}

namespace {
std::vector<double> per_group(const char* name, const std::vector<double>& v, std::size_t groups) {
    if (v.size() == 1 && groups != 1) return std::vector<double>(groups, v[0]);
    if (v.size() != groups)
        xgrad::detail::fail("OneCycleLR", "expected " + std::to_string(groups) + " values for " + name + ", got " +
                                              std::to_string(v.size()));
    return v;
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleOptions& options)
    : OneCycleLR(optimizer, std::vector<double>{max_lr}, options) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, const OneCycleOptions& o)
    : LRScheduler(optimizer), options_(o) {
    const char* who = "OneCycleLR";
    if (o.total_steps == 0 && o.epochs == 0 && o.steps_per_epoch == 0)
        xgrad::detail::fail(who, "You must define either total_steps OR (epochs AND steps_per_epoch)");
    if (o.total_steps != 0) {
        if (o.total_steps < 0)
            xgrad::detail::fail(who, "Expected positive integer total_steps, but got " + std::to_string(o.total_steps));
        total_steps_ = o.total_steps;
    } else {
        if (o.epochs <= 0)
            xgrad::detail::fail(who, "Expected positive integer epochs, but got " + std::to_string(o.epochs));
        if (o.steps_per_epoch <= 0)
            xgrad::detail::fail(
                who, "Expected positive integer steps_per_epoch, but got " + std::to_string(o.steps_per_epoch));
        total_steps_ = o.epochs * o.steps_per_epoch;
    }
    const auto total = static_cast<double>(total_steps_);
    if (o.three_phase)
        phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
                   {2 * o.pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
                   {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
    else
        phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
                   {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
    if (!(o.pct_start >= 0.0 && o.pct_start <= 1.0))
        xgrad::detail::fail(who,
                            "Expected float between 0 and 1 pct_start, but got " + nn::python_float_repr(o.pct_start));
    max_lrs = per_group("max_lr", max_lrs, groups());
    const auto& defaults = optimizer.defaults();
    if (o.cycle_momentum && !defaults.count("momentum") && !defaults.count("beta1"))
        xgrad::detail::fail(who, "optimizer must support momentum with `cycle_momentum` option enabled");
    use_beta1_ = defaults.count("beta1") != 0;
    for (std::size_t g = 0; g < groups(); ++g) {
        optimizer_.set_option(g, "initial_lr", max_lrs[g] / o.div_factor);
        optimizer_.set_option(g, "max_lr", max_lrs[g]);
        optimizer_.set_option(g, "min_lr", max_lrs[g] / o.div_factor / o.final_div_factor);
        if (o.cycle_momentum) {
            optimizer_.set_option(g, use_beta1_ ? "beta1" : "momentum", o.max_momentum);
            optimizer_.set_option(g, "max_momentum", o.max_momentum);
            optimizer_.set_option(g, "base_momentum", o.base_momentum);
        }
        base_lrs_[g] = optimizer_.option(g, "initial_lr");
    }
    initial_step();
}

double OneCycleLR::get_lr(std::size_t g) const {
    using std::numbers::pi;
    const std::int64_t step_num = last_epoch();
    if (step_num > total_steps_)
        xgrad::detail::fail("OneCycleLR", "Tried to step " + std::to_string(step_num) +
                                              " times. The specified number of total steps is " +
                                              std::to_string(total_steps_));
    const auto anneal = [&](double start, double end, double pct) {
        if (options_.anneal_cos) return end + (start - end) / 2.0 * (std::cos(pi * pct) + 1);
        return (end - start) * pct + start;
    };
    double start_step = 0, lr = 0, momentum = 0;
    for (std::size_t i = 0; i < phases_.size(); ++i) {
        const Phase& phase = phases_[i];
        if (static_cast<double>(step_num) <= phase.end_step || i == phases_.size() - 1) {
            const double pct = (static_cast<double>(step_num) - start_step) / (phase.end_step - start_step);
            lr = anneal(optimizer_.option(g, phase.start_lr), optimizer_.option(g, phase.end_lr), pct);
            if (options_.cycle_momentum)
                momentum =
                    anneal(optimizer_.option(g, phase.start_momentum), optimizer_.option(g, phase.end_momentum), pct);
            break;
        }
        start_step = phase.end_step;
    }
    if (options_.cycle_momentum) optimizer_.set_option(g, use_beta1_ ? "beta1" : "momentum", momentum);
    return lr;
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers,
                           std::vector<std::int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
    for (std::size_t i = 0; i < schedulers_.size(); ++i)
        if (!schedulers_[i] || &schedulers_[i]->optimizer() != &optimizer)
            xgrad::detail::fail("SequentialLR",
                                "Sequential Schedulers expects all schedulers to belong to the same optimizer, but "
                                "got schedulers at index " +
                                    std::to_string(i) + " to be different than the optimizer passed in.");
    if (schedulers_.empty() || milestones_.size() != schedulers_.size() - 1)
        xgrad::detail::fail("SequentialLR",
                            "Sequential Schedulers expects number of schedulers provided to be one more than the "
                            "number of milestone points, but got number of schedulers " +
                                std::to_string(schedulers_.size()) + " and the number of milestones to be equal to " +
                                std::to_string(milestones_.size()));
    last_epoch_ = 0;
    // Back to the initial rates, undo the schedulers' construction steps, and redo the first one's.
    for (std::size_t g = 0; g < groups(); ++g) optimizer_.set_option(g, "lr", optimizer_.option(g, "initial_lr"));
    for (auto* s : schedulers_) s->last_epoch_ -= 1;
    schedulers_.front()->initial_step();
    last_lr_ = schedulers_.front()->get_last_lr();
}

void SequentialLR::step() {
    ++last_epoch_;
    const auto idx = static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                                              milestones_.begin());
    LRScheduler* s = schedulers_[idx];
    if (idx > 0 && milestones_[idx - 1] == last_epoch_)
        s->step(std::int64_t{0});
    else
        s->step();
    last_lr_ = s->get_last_lr();
}

StateDict SequentialLR::state_dict() const {
    StateDict out = LRScheduler::state_dict();
    for (std::size_t i = 0; i < schedulers_.size(); ++i)
        for (auto& [k, t] : schedulers_[i]->state_dict())
            out.emplace_back("_schedulers." + std::to_string(i) + "." + k, t);
    return out;
}

void SequentialLR::load_state_dict(const StateDict& state) {
    for (std::size_t i = 0; i < schedulers_.size(); ++i)
        schedulers_[i]->load_state_dict(under(state, "_schedulers." + std::to_string(i) + "."));
    LRScheduler::load_state_dict(state);
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& options)
    : optimizer_(optimizer), options_(options) {
    const std::size_t n = optimizer.param_groups().size();
    if (!(options.factor < 1.0)) xgrad::detail::fail("ReduceLROnPlateau", "Factor should be < 1.0.");
    if (options.min_lr.size() == 1)
        min_lrs_.assign(n, options.min_lr[0]);
    else if (options.min_lr.size() == n)
        min_lrs_ = options.min_lr;
    else
        xgrad::detail::fail("ReduceLROnPlateau",
                            "expected " + std::to_string(n) + " min_lrs, got " + std::to_string(options.min_lr.size()));
    best_ = options.mode_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    for (std::size_t g = 0; g < n; ++g) last_lr_.push_back(optimizer.option(g, "lr"));
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
    const double t = options_.threshold;
    if (!options_.mode_max) return options_.threshold_abs ? a < best - t : a < best * (1. - t);
    return options_.threshold_abs ? a > best + t : a > best * (t + 1.);
}

void ReduceLROnPlateau::step(double metric) {
    ++last_epoch_;
    if (is_better(metric, best_)) {
        best_ = metric;
        num_bad_epochs_ = 0;
    } else {
        ++num_bad_epochs_;
    }
    if (cooldown_counter_ > 0) {
        --cooldown_counter_;
        num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
    }
    if (num_bad_epochs_ > options_.patience) {
        for (std::size_t g = 0; g < min_lrs_.size(); ++g) {
            const double old_lr = optimizer_.option(g, "lr");
            const double new_lr = std::max(old_lr * options_.factor, min_lrs_[g]);
            if (old_lr - new_lr > options_.eps) optimizer_.set_option(g, "lr", new_lr);
        }
        cooldown_counter_ = options_.cooldown;
        num_bad_epochs_ = 0;
    }
    for (std::size_t g = 0; g < min_lrs_.size(); ++g) last_lr_[g] = optimizer_.option(g, "lr");
}

StateDict ReduceLROnPlateau::state_dict() const {
    return {{"best", scalar(best_)},
            {"num_bad_epochs", scalar_int(num_bad_epochs_)},
            {"cooldown_counter", scalar_int(cooldown_counter_)},
            {"last_epoch", scalar_int(last_epoch_)},
            {"_last_lr", vec(last_lr_)}};
}

void ReduceLROnPlateau::load_state_dict(const StateDict& state) {
    const char* who = "ReduceLROnPlateau";
    auto last = entry(state, "_last_lr", who).to_vector<double>();
    if (last.size() != min_lrs_.size())
        xgrad::detail::fail(who, "load_state_dict: the state has " + std::to_string(last.size()) +
                                     " groups, the optimizer " + std::to_string(min_lrs_.size()));
    best_ = entry(state, "best", who).to(kFloat64).item<double>();
    num_bad_epochs_ = entry(state, "num_bad_epochs", who).to(kInt64).item<std::int64_t>();
    cooldown_counter_ = entry(state, "cooldown_counter", who).to(kInt64).item<std::int64_t>();
    last_epoch_ = entry(state, "last_epoch", who).to(kInt64).item<std::int64_t>();
    last_lr_ = std::move(last);
}

}  // namespace xgrad::optim
