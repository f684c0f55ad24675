// Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// Adam's options with PyTorch's defaults, in PyTorch's order.
struct AdamOptions {
    double lr = 1e-3;                         ///< Learning rate.
    std::array<double, 2> betas{0.9, 0.999};  ///< Decay rates of the first and second moment averages, in [0, 1).
    double eps = 1e-8;                        ///< Added to the denominator for stability.
    double weight_decay = 0.0;                ///< L2 penalty, added to the gradient.
    bool amsgrad = false;                     ///< Normalise by the largest second moment seen so far.
    bool maximize = false;                    ///< Ascend the objective instead of descending it.
};

/// AdamW's options: Adam's, with PyTorch's default decoupled weight decay of 1e-2.
struct AdamWOptions {
    double lr = 1e-3;                         ///< Learning rate.
    std::array<double, 2> betas{0.9, 0.999};  ///< Decay rates of the first and second moment averages, in [0, 1).
    double eps = 1e-8;                        ///< Added to the denominator for stability.
    double weight_decay = 1e-2;               ///< Decoupled decay: `p *= 1 - lr·weight_decay` each step.
    bool amsgrad = false;                     ///< Normalise by the largest second moment seen so far.
    bool maximize = false;                    ///< Ascend the objective instead of descending it.
};

/// Per-parameter state of Adam and AdamW.
struct AdamState {
    std::int64_t step = 0;  ///< Updates applied so far.
    Tensor exp_avg;         ///< First moment: running average of the gradient.
    Tensor exp_avg_sq;      ///< Second moment: running average of the squared gradient.
    Tensor max_exp_avg_sq;  ///< Largest second moment so far (amsgrad only).
};

/// Adam, with PyTorch 1.13's single-tensor update:
///
/// `g = grad + weight_decay·p`; `m = β1·m + (1-β1)·g`; `v = β2·v + (1-β2)·g²`;
/// `p -= lr/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + eps)`.
///
/// ```cpp
/// xgrad::optim::Adam opt(model.parameters(), {.lr = 1e-3});
/// xgrad::optim::Adam ams(model.parameters(), {.lr = 1e-2, .betas = {0.8, 0.99}, .amsgrad = true});
/// ```
class Adam : public Optimizer {
public:
    /// An optimizer over `params`; throws for a negative lr, eps or weight decay and betas outside [0, 1).
    Adam(std::vector<Tensor> params, const AdamOptions& options = {});
    /// The options given at construction (groups' current ones are option()).
    const AdamOptions& options() const { return options_; }
    /// The state of parameter `index` (step 0 until its first update).
    const AdamState& state(std::size_t index) const { return moments_.at(index); }

protected:
    /// Adam or, with `decoupled`, AdamW; `name` names it in errors.
    Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled, const char* name);
    /// One Adam update of one parameter with its group's options.
    void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) override;
    /// PyTorch's ValueErrors for Adam's options.
    void check_options(const GroupOptions& options) const override;
    /// `step` (a 0-d float32 tensor, as PyTorch 1.13), `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`.
    ParamState get_state(std::size_t index) const override;
    /// Takes the entries get_state() gives.
    void set_state(std::size_t index, ParamState state) override;
    /// The names get_state() gives.
    bool is_state_name(const std::string& name) const override;
    /// Grows the state with the parameters.
    void on_params_added(std::size_t first) override;
    /// Runs the fused updates that update() deferred: one kernel call for each run of parameters with
    /// the same coefficients, dtype and device (on the GPU, one launch for many parameters).
    void finish_step() override;

private:
    /// A fused update deferred to finish_step(): the parameter, its gradient, exp_avg, exp_avg_sq and
    /// max_exp_avg_sq (undefined without amsgrad); β1, β2, step size, √(bias correction 2) and eps.
    struct Deferred {
        std::array<Tensor, 5> tensors;
        std::array<double, 5> coefficients;
    };

    AdamOptions options_;
    bool decoupled_ = false;
    std::vector<AdamState> moments_;
    std::vector<Deferred> deferred_;
};

/// AdamW: Adam whose weight decay shrinks the parameter directly (`p *= 1 - lr·weight_decay`)
/// instead of entering the gradient, as PyTorch 1.13's AdamW.
///
/// ```cpp
/// xgrad::optim::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.1});
/// ```
class AdamW : public Adam {
public:
    /// An optimizer over `params`; throws for bad options as Adam does.
    AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
};

}  // namespace xgrad::optim
