// Adadelta: steps scaled by the ratio of running averages of squared updates and squared gradients.
#pragma once

#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// Adadelta's options with PyTorch 1.13's defaults, in PyTorch's order.
struct AdadeltaOptions {
    double lr = 1.0;            ///< Scales the delta before it is applied.
    double rho = 0.9;           ///< Decay rate of both running averages, in [0, 1].
    double eps = 1e-6;          ///< Added inside both square roots.
    double weight_decay = 0.0;  ///< L2 penalty, added to the gradient.
    bool maximize = false;      ///< Ascend the objective instead of descending it.
};

/// Adadelta, with PyTorch 1.13's single-tensor update:
///
/// `g = grad + weight_decay·p`; `v = ρ·v + (1-ρ)·g²`; `δ = sqrt(a + eps) / sqrt(v + eps) · g`;
/// `a = ρ·a + (1-ρ)·δ²`; `p -= lr·δ`. State: `step` (int64), `square_avg`, `acc_delta`.
///
/// ```cpp
/// xgrad::optim::Adadelta opt(model.parameters(), {.rho = 0.95});
/// ```
class Adadelta : public Optimizer {
public:
    /// An optimizer over `params`; throws for a negative lr, eps or weight decay and rho outside [0, 1].
    Adadelta(std::vector<Tensor> params, const AdadeltaOptions& options = {});
    /// The options given at construction (groups' current ones are option()).
    const AdadeltaOptions& options() const { return options_; }
    /// The state of parameter `index` by PyTorch's names (empty until its first update).
    const ParamState& state(std::size_t index) const { return state_.at(index); }

protected:
    /// One Adadelta update of one parameter with its group's options.
    void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) override;
    /// PyTorch's ValueErrors for Adadelta's options.
    void check_options(const GroupOptions& options) const override;
    /// `step`, `square_avg`, `acc_delta`.
    bool is_state_name(const std::string& name) const override;

private:
    AdadeltaOptions options_;
};

}  // namespace xgrad::optim
