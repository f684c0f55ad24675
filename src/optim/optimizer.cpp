// The Optimizer base class: parameter checks, zero_grad and the step loop shared by every optimizer.
#include "xgrad/optim/optimizer.hpp"

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr, const char* name)
    : name_(name), params_(std::move(params)), lr_(lr) {
    if (params_.empty()) detail::fail(name_, "got an empty parameter list");
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i].defined()) detail::fail(name_, "parameter " + std::to_string(i) + " is undefined");
        if (!params_[i].is_leaf())
            detail::fail(name_, "can't optimize a non-leaf tensor (parameter " + std::to_string(i) + " has grad_fn " +
                                    params_[i].grad_fn_name() + ")");
    }
    set_lr(lr);
}

void Optimizer::set_lr(double lr) {
    if (!(lr >= 0.0)) detail::fail(name_, "invalid learning rate: " + nn::python_float_repr(lr));
    lr_ = lr;
}

void Optimizer::zero_grad() {
    for (auto& p : params_) p.mutable_grad() = Tensor();
}

void Optimizer::step() {
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        Tensor grad = params_[i].grad();
        if (!grad.defined()) continue;
        if (grad.shape() != params_[i].shape())
            detail::fail(name_, "the gradient of shape " + to_string(grad.shape()) + " does not match parameter " +
                                    std::to_string(i) + " of shape " + to_string(params_[i].shape()));
        update(i, params_[i], grad);
    }
}

}  // namespace xgrad::optim
