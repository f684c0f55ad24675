// Learning-rate schedulers: StepLR and CosineAnnealingLR, with PyTorch's recursive formulas.
#pragma once

#include <cstdint>
#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// Base of the schedulers: each step() sets the optimizer's learning rate for the next epoch.
///
/// As in PyTorch, construction counts as step 0 (the learning rate is left as it is) and the
/// scheduler holds a reference to the optimizer, which must outlive it.
class LRScheduler {
public:
    virtual ~LRScheduler() = default;
    /// Advances one epoch and writes the new learning rate into the optimizer.
    void step();
    /// The learning rate set by the last step, one per parameter group (xgrad has one group).
    std::vector<double> get_last_lr() const { return {last_lr_}; }
    /// The epoch reached: 0 after construction, then one more per step().
    std::int64_t last_epoch() const { return last_epoch_; }
    /// The optimizer's learning rate when the scheduler was made.
    double base_lr() const { return base_lr_; }

protected:
    /// Remembers the optimizer and its current lr as the base; derived constructors call initial_step().
    explicit LRScheduler(Optimizer& optimizer);
    /// PyTorch's `_initial_step`: the first step(), to epoch 0.
    void initial_step() { step(); }
    /// The learning rate for last_epoch(), computed from the optimizer's current one (PyTorch's
    /// chainable `get_lr`).
    virtual double get_lr() const = 0;

    Optimizer& optimizer_;  ///< The optimizer whose learning rate is set.

private:
    double base_lr_;
    double last_lr_;
    std::int64_t last_epoch_ = -1;
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
    double get_lr() const override;

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
    double get_lr() const override;

private:
    std::int64_t t_max_;
    double eta_min_;
};

}  // namespace xgrad::optim
