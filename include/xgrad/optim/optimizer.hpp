// The Optimizer base class: the parameters, their gradients' reset, and the step loop.
#pragma once

#include <cstddef>
#include <vector>

#include "xgrad/tensor.hpp"

namespace xgrad::optim {

/// Base of the optimizers: holds handles to the parameters and updates them in place.
///
/// The handles share storage with the module's parameters, so a module that converts or
/// materialises its parameters in place (`Module::to`, a lazily shaped LayerNorm) stays trained.
/// State (momentum, moments) is created per parameter at the first step that sees its gradient.
/// All parameters form one group with one learning rate, which schedulers change through set_lr().
///
/// ```cpp
/// xgrad::optim::SGD opt(model.parameters(), {.lr = 0.1});
/// opt.zero_grad();
/// loss.backward();
/// opt.step();
/// ```
class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;             ///< Not copyable: the state would be shared.
    Optimizer& operator=(const Optimizer&) = delete;  ///< Not copyable: the state would be shared.

    /// Resets every parameter's gradient to undefined (PyTorch's `set_to_none=True` default).
    void zero_grad();
    /// Updates, under NoGradGuard, every parameter whose gradient is defined; the others are skipped.
    void step();
    /// The current learning rate.
    double lr() const { return lr_; }
    /// Sets the learning rate (what schedulers do); throws when negative.
    void set_lr(double lr);
    /// The parameters, in the order given.
    const std::vector<Tensor>& parameters() const { return params_; }

protected:
    /// Checks that `params` is not empty and holds only leaves; `name` names the optimizer in errors.
    Optimizer(std::vector<Tensor> params, double lr, const char* name);
    /// Updates parameter `index` in place from its gradient; called by step() under NoGradGuard.
    virtual void update(std::size_t index, Tensor& param, const Tensor& grad) = 0;

    const char* name_;  ///< "SGD", "Adam" ...: names the optimizer in errors.

private:
    std::vector<Tensor> params_;
    double lr_;
};

}  // namespace xgrad::optim
