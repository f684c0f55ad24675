// RMSprop: gradient descent scaled by a running average of the squared gradient.
#pragma once

#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// RMSprop's options with PyTorch 1.13's defaults, in PyTorch's order.
struct RMSpropOptions {
    double lr = 1e-2;           ///< Learning rate.
    double alpha = 0.99;        ///< Smoothing constant of the squared-gradient average.
    double eps = 1e-8;          ///< Added to the denominator for stability.
    double weight_decay = 0.0;  ///< L2 penalty, added to the gradient.
    double momentum = 0.0;      ///< Momentum factor; 0 keeps no buffer.
    bool centered = false;      ///< Normalise by the gradient's estimated variance instead of its second moment.
    bool maximize = false;      ///< Ascend the objective instead of descending it.
};

/// RMSprop, with PyTorch 1.13's single-tensor update:
///
/// `g = grad + weight_decay·p`; `v = α·v + (1-α)·g²`; centered: `m = α·m + (1-α)·g`, `avg = sqrt(v - m²)`,
/// else `avg = sqrt(v)`; `avg += eps`; with momentum `buf = momentum·buf + g/avg`, `p -= lr·buf`, else
/// `p -= lr·g/avg`. State: `step` (int64), `square_avg`, `momentum_buffer`, `grad_avg`.
///
/// ```cpp
/// xgrad::optim::RMSprop opt(model.parameters(), {.lr = 1e-3, .momentum = 0.9, .centered = true});
/// ```
class RMSprop : public Optimizer {
public:
    /// An optimizer over `params`; throws for a negative lr, eps, momentum, weight decay or alpha.
    RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {});
    /// The options given at construction (groups' current ones are option()).
    const RMSpropOptions& options() const { return options_; }
    /// The state of parameter `index` by PyTorch's names (empty until its first update).
    const ParamState& state(std::size_t index) const { return state_.at(index); }

protected:
    /// One RMSprop update of one parameter with its group's options.
    void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) override;
    /// PyTorch's ValueErrors for RMSprop's options.
    void check_options(const GroupOptions& options) const override;
    /// `step`, `square_avg`, `momentum_buffer`, `grad_avg`.
    bool is_state_name(const std::string& name) const override;

private:
    RMSpropOptions options_;
};

}  // namespace xgrad::optim
