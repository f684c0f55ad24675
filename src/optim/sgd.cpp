// SGD's update, written as PyTorch 1.13's _single_tensor_sgd so the numbers agree.
#include "xgrad/optim/sgd.hpp"

#include "detail/tensor_impl.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : Optimizer(std::move(params), options.lr, "SGD"), options_(options) {
    using nn::python_float_repr;
    if (!(options.momentum >= 0.0))
        detail::fail("SGD", "invalid momentum value: " + python_float_repr(options.momentum));
    if (!(options.weight_decay >= 0.0))
        detail::fail("SGD", "invalid weight_decay value: " + python_float_repr(options.weight_decay));
    if (options.nesterov && (options.momentum <= 0.0 || options.dampening != 0.0))
        detail::fail("SGD", "Nesterov momentum requires a momentum and zero dampening");
    state_.resize(parameters().size());
}

void SGD::update(std::size_t index, Tensor& param, const Tensor& grad) {
    const SGDOptions& o = options_;
    Tensor d_p = (o.maximize ? grad.neg() : grad).to(param.dtype());
    if (o.weight_decay != 0.0) d_p = d_p + param * o.weight_decay;
    if (o.momentum != 0.0) {
        Tensor& buf = state_[index].momentum_buffer;
        if (!buf.defined() || buf.shape() != param.shape()) {
            buf = d_p.clone();  // the first step's buffer is the gradient itself, undampened
        } else {
            if (buf.dtype() != param.dtype()) buf = buf.to(param.dtype());     // the module was converted
            if (buf.device() != param.device()) buf = buf.to(param.device());  // or moved
            buf.mul_(o.momentum).add_(d_p, 1.0 - o.dampening);
        }
        d_p = o.nesterov ? d_p + buf * o.momentum : buf;
    }
    param.add_(d_p, -lr());
}

}  // namespace xgrad::optim
