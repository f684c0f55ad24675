// Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum.
#pragma once

#include <array>
#include <vector>

#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim {

/// SGD's options with PyTorch's defaults, in PyTorch's order (so designated initialisers follow it).
struct SGDOptions {
    double lr = 1e-3;           ///< Learning rate (PyTorch ≥ 2.2's default; 1.13 required one).
    double momentum = 0.0;      ///< Momentum factor; 0 disables the momentum buffer.
    double dampening = 0.0;     ///< Dampening of the gradient's share in the momentum buffer.
    double weight_decay = 0.0;  ///< L2 penalty, added to the gradient as `weight_decay * param`.
    bool nesterov = false;      ///< Nesterov momentum; needs momentum > 0 and dampening 0.
    bool maximize = false;      ///< Ascend the objective instead of descending it.
};

/// Stochastic gradient descent, with PyTorch's exact update:
///
/// `g = grad + weight_decay·p`; `buf = g` at the first step, else `buf = momentum·buf + (1 - dampening)·g`;
/// `g = nesterov ? g + momentum·buf : buf`; `p -= lr·g`.
///
/// ```cpp
/// xgrad::optim::SGD sgd(model.parameters(), {.lr = 0.1, .momentum = 0.9});
/// sgd.zero_grad();
/// loss.backward();
/// sgd.step();
/// ```
class SGD : public Optimizer {
public:
    /// Per-parameter state.
    struct State {
        Tensor momentum_buffer;  ///< Undefined until the first step with momentum.
    };

    /// An optimizer over `params`; throws for negative lr, momentum or weight decay, and for
    /// Nesterov without momentum or with dampening.
    SGD(std::vector<Tensor> params, const SGDOptions& options = {});
    /// The options given at construction (lr as given; the current one is lr(), groups' are option()).
    const SGDOptions& options() const { return options_; }
    /// The state of parameter `index` (default-constructed until its first update).
    const State& state(std::size_t index) const { return buffers_.at(index); }

protected:
    /// One SGD update of one parameter with its group's options.
    void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) override;
    /// PyTorch's ValueErrors for SGD's options.
    void check_options(const GroupOptions& options) const override;
    /// `momentum_buffer`, once made.
    ParamState get_state(std::size_t index) const override;
    /// Takes `momentum_buffer` (or none).
    void set_state(std::size_t index, ParamState state) override;
    /// Only `momentum_buffer`.
    bool is_state_name(const std::string& name) const override { return name == "momentum_buffer"; }
    /// Grows the buffers with the parameters.
    void on_params_added(std::size_t first) override;
    /// Runs the fused updates that update() deferred: one kernel call for each run of parameters with
    /// the same options, dtype and device (on the GPU, one launch for many parameters).
    void finish_step() override;

private:
    /// A fused update deferred to finish_step(): the parameter, its gradient and its momentum buffer
    /// (undefined without momentum); lr, momentum, dampening, weight decay; nesterov, maximize, and
    /// whether the buffer is new.
    struct Deferred {
        std::array<Tensor, 3> tensors;
        std::array<double, 4> options;
        std::array<bool, 3> flags;
    };

    SGDOptions options_;
    std::vector<State> buffers_;
    std::vector<Deferred> deferred_;
};

}  // namespace xgrad::optim
