// Adamax: Adam with the infinity norm of the gradients in place of their second moment.
#pragma once

#include <array>
#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// Adamax's options with PyTorch 1.13's defaults, in PyTorch's order.
struct AdamaxOptions {
    double lr = 2e-3;                         ///< Learning rate.
    std::array<double, 2> betas{0.9, 0.999};  ///< Decay rates of the first moment and of the infinity norm, in [0, 1).
    double eps = 1e-8;                        ///< Added to |g| before the maximum.
    double weight_decay = 0.0;                ///< L2 penalty, added to the gradient.
    bool maximize = false;                    ///< Ascend the objective instead of descending it.
};

/// Adamax, with PyTorch 1.13's single-tensor update:
///
/// `g = grad + weight_decay·p`; `m = β1·m + (1-β1)·g`; `u = max(β2·u, |g| + eps)`;
/// `p -= lr/(1-β1^t) · m/u`. State: `step` (0-d float32), `exp_avg`, `exp_inf`.
///
/// ```cpp
/// xgrad::optim::Adamax opt(model.parameters(), {.lr = 2e-3});
/// ```
class Adamax : public Optimizer {
public:
    /// An optimizer over `params`; throws for a negative lr, eps or weight decay and betas outside [0, 1).
    Adamax(std::vector<Tensor> params, const AdamaxOptions& options = {});
    /// The options given at construction (groups' current ones are option()).
    const AdamaxOptions& options() const { return options_; }
    /// The state of parameter `index` by PyTorch's names (empty until its first update).
    const ParamState& state(std::size_t index) const { return state_.at(index); }

protected:
    /// One Adamax update of one parameter with its group's options.
    void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) override;
    /// PyTorch's ValueErrors for Adamax's options.
    void check_options(const GroupOptions& options) const override;
    /// `step`, `exp_avg`, `exp_inf`.
    bool is_state_name(const std::string& name) const override;

private:
    AdamaxOptions options_;
};

}  // namespace xgrad::optim
