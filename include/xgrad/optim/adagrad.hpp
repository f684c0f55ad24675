// Adagrad: per-element learning rates from the sum of all squared gradients so far.
#pragma once

#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// Adagrad's options with PyTorch 1.13's defaults, in PyTorch's order.
struct AdagradOptions {
    double lr = 1e-2;                        ///< Learning rate.
    double lr_decay = 0.0;                   ///< The step's rate is `lr / (1 + (step-1)·lr_decay)`.
    double weight_decay = 0.0;               ///< L2 penalty, added to the gradient.
    double initial_accumulator_value = 0.0;  ///< Where the sum of squared gradients starts.
    double eps = 1e-10;                      ///< Added to the denominator for stability.
    bool maximize = false;                   ///< Ascend the objective instead of descending it.
};

/// Adagrad, with PyTorch 1.13's single-tensor update:
///
/// `g = grad + weight_decay·p`; `clr = lr / (1 + (step-1)·lr_decay)`; `sum += g²`;
/// `p -= clr·g / (sqrt(sum) + eps)`. As in PyTorch, the state (`step`, a 0-d float32 tensor, and
/// `sum`) exists from construction on.
///
/// ```cpp
/// xgrad::optim::Adagrad opt(model.parameters(), {.lr = 0.1, .lr_decay = 1e-3});
/// ```
class Adagrad : public Optimizer {
public:
    /// An optimizer over `params`; throws for a negative lr, lr_decay, weight decay,
    /// initial_accumulator_value or eps.
    Adagrad(std::vector<Tensor> params, const AdagradOptions& options = {});
    /// The options given at construction (groups' current ones are option()).
    const AdagradOptions& options() const { return options_; }
    /// The state of parameter `index` by PyTorch's names.
    const ParamState& state(std::size_t index) const { return state_.at(index); }

protected:
    /// One Adagrad update of one parameter with its group's options.
    void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) override;
    /// PyTorch's ValueErrors for Adagrad's options.
    void check_options(const GroupOptions& options) const override;
    /// `step` and `sum`.
    bool is_state_name(const std::string& name) const override { return name == "step" || name == "sum"; }
    /// Makes the new parameters' state, as the constructor does.
    void on_params_added(std::size_t first) override;

private:
    AdagradOptions options_;
};

}  // namespace xgrad::optim
