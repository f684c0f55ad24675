// Learning-rate schedulers with PyTorch 1.13's formulas, acting on every parameter group.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// Base of the schedulers: each step() sets every group's learning rate for the next epoch.
///
/// As in PyTorch, construction counts as step 0 and the scheduler holds a reference to the
/// optimizer, which must outlive it. The first scheduler made on an optimizer records each group's
/// learning rate as the group option `"initial_lr"`; the base learning rates of every scheduler are
/// those (PyTorch's `base_lrs`).
class LRScheduler {
public:
    virtual ~LRScheduler() = default;
    /// Advances one epoch and writes the new learning rates into the optimizer's groups.
    virtual void step();
    /// Jumps to `epoch` with the closed-form rate where the scheduler has one (PyTorch's deprecated
    /// `step(epoch)`, which SequentialLR uses at its milestones), else the recursive one.
    void step(std::int64_t epoch);
    /// The learning rates set by the last step, one per parameter group.
    std::vector<double> get_last_lr() const { return last_lr_; }
    /// The epoch reached: 0 after construction, then one more per step().
    std::int64_t last_epoch() const { return last_epoch_; }
    /// The first group's base learning rate.
    double base_lr() const { return base_lrs_.at(0); }
    /// Every group's base learning rate.
    const std::vector<double>& base_lrs() const { return base_lrs_; }
    /// The optimizer scheduled.
    Optimizer& optimizer() const { return optimizer_; }
    /// The progress, as PyTorch's `state_dict()` of its counters: `last_epoch` (0-d int64), `base_lrs`
    /// and `_last_lr` (1-d float64), plus what a derived scheduler adds. The configuration (and
    /// LambdaLR's functions) comes from the constructor, as in PyTorch.
    virtual StateDict state_dict() const;
    /// Restores a state_dict() of a scheduler of the same kind; throws naming a missing entry.
    virtual void load_state_dict(const StateDict& state);

protected:
    /// Remembers the optimizer and records `initial_lr`; derived constructors call initial_step().
    explicit LRScheduler(Optimizer& optimizer);
    /// PyTorch's `_initial_step`: the first step(), to epoch 0.
    void initial_step() { step(); }
    /// The learning rate of `group` for last_epoch(), as PyTorch's (chainable) `get_lr`.
    virtual double get_lr(std::size_t group) const = 0;
    /// The closed-form rate at last_epoch() (PyTorch's `_get_closed_form_lr`); get_lr() where there is none.
    virtual double closed_form_lr(std::size_t group) const { return get_lr(group); }
    /// Group `group`'s current learning rate.
    double group_lr(std::size_t group) const { return optimizer_.option(group, "lr"); }
    /// Writes `lrs` into the groups and remembers them as the last ones.
    void apply(const std::vector<double>& lrs);
    /// The number of parameter groups.
    std::size_t groups() const { return optimizer_.param_groups().size(); }

    Optimizer& optimizer_;          ///< The optimizer whose learning rates are set.
    std::int64_t last_epoch_ = -1;  ///< The epoch reached.
    std::vector<double> base_lrs_;  ///< Each group's `initial_lr`.
    std::vector<double> last_lr_;   ///< The rates the last step set.

    /// SequentialLR rewinds and restarts the schedulers it runs.
    friend class SequentialLR;
};

/// Multiplies the learning rate by `gamma` every `step_size` epochs.
///
/// ```cpp
/// xgrad::optim::SGD opt(model.parameters(), {.lr = 0.1});
/// xgrad::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
/// for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
/// ```
class StepLR : public LRScheduler {
public:
    /// A schedule over `optimizer`; throws unless step_size >= 1.
    StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);

protected:
    /// `lr · gamma` at multiples of step_size, else `lr`.
    double get_lr(std::size_t group) const override;
    /// `base_lr · gamma^(epoch / step_size)`.
    double closed_form_lr(std::size_t group) const override;

private:
    std::int64_t step_size_;
    double gamma_;
};

/// Anneals the learning rate from its base to `eta_min` along half a cosine over `t_max` epochs,
/// then back up (a period of 2·t_max), with PyTorch 1.13's recursive formula, so the values match
/// PyTorch's to the last bits.
///
/// ```cpp
/// xgrad::optim::Adam opt(model.parameters(), {.lr = 1e-3});
/// xgrad::optim::CosineAnnealingLR sched(opt, /*t_max=*/50, /*eta_min=*/1e-5);
/// ```
class CosineAnnealingLR : public LRScheduler {
public:
    /// A schedule over `optimizer`; throws unless t_max >= 1.
    CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min = 0.0);

protected:
    /// The next value of the recursion (see PyTorch's `CosineAnnealingLR.get_lr`).
    double get_lr(std::size_t group) const override;
    /// `eta_min + (base_lr - eta_min)·(1 + cos(π·epoch/t_max))/2`.
    double closed_form_lr(std::size_t group) const override;

private:
    std::int64_t t_max_;
    double eta_min_;
};

/// The learning rate `base_lr · lr_lambda(epoch)`, one function for every group or one per group.
///
/// ```cpp
/// xgrad::optim::LambdaLR warmup(opt, [](std::int64_t epoch) { return std::min(1.0, (epoch + 1) / 10.0); });
/// ```
class LambdaLR : public LRScheduler {
public:
    /// A factor of the epoch.
    using Lambda = std::function<double(std::int64_t)>;
    /// One function for every group.
    LambdaLR(Optimizer& optimizer, Lambda lr_lambda);
    /// One function per group; throws PyTorch's "Expected 2 lr_lambdas, but got 1" otherwise.
    LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

protected:
    /// `base_lr · lr_lambda(epoch)`.
    double get_lr(std::size_t group) const override;

private:
    std::vector<Lambda> lambdas_;
};

/// Scales the learning rate linearly from `start_factor`·base to `end_factor`·base over `total_iters`
/// epochs, then keeps it (PyTorch's recursive formula).
///
/// ```cpp
/// xgrad::optim::LinearLR warmup(opt, /*start_factor=*/0.1, /*end_factor=*/1.0, /*total_iters=*/10);
/// ```
class LinearLR : public LRScheduler {
public:
    /// A schedule over `optimizer`; throws unless 0 < start_factor <= 1 and 0 <= end_factor <= 1
    /// (PyTorch's messages) and total_iters >= 1.
    LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
             std::int64_t total_iters = 5);

protected:
    /// The next value of the recursion (PyTorch's `LinearLR.get_lr`).
    double get_lr(std::size_t group) const override;
    /// `base_lr · (start + (end - start)·min(total_iters, epoch)/total_iters)`.
    double closed_form_lr(std::size_t group) const override;

private:
    double start_factor_, end_factor_;
    std::int64_t total_iters_;
};

/// OneCycleLR's options with PyTorch 1.13's defaults (total_steps, or epochs × steps_per_epoch).
struct OneCycleOptions {
    std::int64_t total_steps = 0;      ///< Steps in the cycle; 0 to use epochs × steps_per_epoch.
    std::int64_t epochs = 0;           ///< Epochs, with steps_per_epoch, when total_steps is 0.
    std::int64_t steps_per_epoch = 0;  ///< Steps per epoch, with epochs.
    double pct_start = 0.3;            ///< Share of the cycle spent increasing the learning rate.
    bool anneal_cos = true;            ///< Cosine annealing (PyTorch's 'cos'); false for 'linear'.
    bool cycle_momentum = true;        ///< Cycle SGD's momentum or Adam's beta1 inversely to the rate.
    double base_momentum = 0.85;       ///< The lowest momentum of the cycle.
    double max_momentum = 0.95;        ///< The highest momentum of the cycle.
    double div_factor = 25.0;          ///< initial_lr = max_lr / div_factor.
    double final_div_factor = 1e4;     ///< min_lr = initial_lr / final_div_factor.
    bool three_phase = false;          ///< Back to initial_lr, then down to min_lr (fast.ai's schedule).
};

/// The 1cycle policy: the learning rate rises from `max_lr/div_factor` to `max_lr`, then falls to
/// `initial_lr/final_div_factor`, stepped once per batch; the momentum (or Adam's beta1) moves the
/// other way. As PyTorch, it writes the group options `initial_lr`, `max_lr`, `min_lr`,
/// `max_momentum`, `base_momentum`, and stepping past total_steps throws.
///
/// ```cpp
/// xgrad::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
/// xgrad::optim::OneCycleLR sched(opt, /*max_lr=*/0.1, {.total_steps = 1000});
/// ```
class OneCycleLR : public LRScheduler {
public:
    /// A schedule with one max_lr for every group; throws for bad options with PyTorch's messages.
    OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleOptions& options);
    /// A schedule with one max_lr per group.
    OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, const OneCycleOptions& options);
    /// The number of steps of the cycle.
    std::int64_t total_steps() const { return total_steps_; }

protected:
    /// The rate of the current phase at last_epoch(); also sets the group's momentum or beta1.
    double get_lr(std::size_t group) const override;

private:
    struct Phase {
        double end_step;
        const char *start_lr, *end_lr, *start_momentum, *end_momentum;
    };
    OneCycleOptions options_;
    std::int64_t total_steps_ = 0;
    std::vector<Phase> phases_;
    bool use_beta1_ = false;
};

/// Runs schedulers one after another: `schedulers[i]` from epoch `milestones[i-1]` on, restarted at its
/// epoch 0 there (PyTorch's `step(0)`). The schedulers must be built on `optimizer` beforehand, as in
/// PyTorch, and must outlive this one.
///
/// ```cpp
/// xgrad::optim::LinearLR warmup(opt, 0.1, 1.0, 5);
/// xgrad::optim::CosineAnnealingLR cosine(opt, 95);
/// xgrad::optim::SequentialLR sched(opt, {&warmup, &cosine}, /*milestones=*/{5});
/// ```
class SequentialLR : public LRScheduler {
public:
    /// Throws unless every scheduler is on `optimizer` and there is one milestone fewer than schedulers.
    SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<std::int64_t> milestones);
    /// Steps the scheduler whose interval the next epoch is in.
    void step() override;
    /// Its own counters and each scheduler's, as `_schedulers.{i}.{name}`.
    StateDict state_dict() const override;
    /// Restores a state_dict() (each scheduler's too).
    void load_state_dict(const StateDict& state) override;

protected:
    /// Not used: step() delegates.
    double get_lr(std::size_t group) const override { return group_lr(group); }

private:
    std::vector<LRScheduler*> schedulers_;
    std::vector<std::int64_t> milestones_;
};

/// ReduceLROnPlateau's options with PyTorch 1.13's defaults.
struct PlateauOptions {
    bool mode_max = false;          ///< PyTorch's mode='max': a larger metric is better (else 'min').
    double factor = 0.1;            ///< The rate is multiplied by factor (< 1) on a plateau.
    std::int64_t patience = 10;     ///< Epochs without improvement tolerated before a reduction.
    double threshold = 1e-4;        ///< What counts as an improvement.
    bool threshold_abs = false;     ///< PyTorch's threshold_mode='abs' (else 'rel').
    std::int64_t cooldown = 0;      ///< Epochs to wait after a reduction before counting again.
    std::vector<double> min_lr{0};  ///< Lower bound of the rate: one value, or one per group.
    double eps = 1e-8;              ///< Reductions smaller than eps are skipped.
};

/// Divides the learning rate by 1/factor when a metric has stopped improving for `patience` epochs, as
/// PyTorch 1.13's ReduceLROnPlateau (which is not an LRScheduler there either).
///
/// ```cpp
/// xgrad::optim::ReduceLROnPlateau sched(opt, {.factor = 0.5, .patience = 3});
/// for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(validation_loss()); }
/// ```
class ReduceLROnPlateau {
public:
    /// Throws PyTorch's "Factor should be < 1.0." and "expected 2 min_lrs, got 3".
    explicit ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& options = {});
    /// Records this epoch's metric and reduces the rates after `patience` epochs without improvement.
    void step(double metric);
    /// The groups' learning rates after the last step.
    std::vector<double> get_last_lr() const { return last_lr_; }
    /// The best metric so far.
    double best() const { return best_; }
    /// Epochs since the last improvement.
    std::int64_t num_bad_epochs() const { return num_bad_epochs_; }
    /// The epoch reached (0 after construction).
    std::int64_t last_epoch() const { return last_epoch_; }
    /// Its counters: `best`, `num_bad_epochs`, `cooldown_counter`, `last_epoch`, `_last_lr`.
    StateDict state_dict() const;
    /// Restores a state_dict().
    void load_state_dict(const StateDict& state);

private:
    bool is_better(double a, double best) const;
    Optimizer& optimizer_;
    PlateauOptions options_;
    std::vector<double> min_lrs_;
    double best_;
    std::int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
    std::vector<double> last_lr_;
};

}  // namespace xgrad::optim
