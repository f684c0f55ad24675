// SGD's update, written as PyTorch 1.13's _single_tensor_sgd so the numbers agree: one fused kernel
// (kernels::sgd_step) for contiguous parameters, the same steps as tensor ops otherwise.
#include "xgrad/optim/sgd.hpp"

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "optim/common.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::optim {

namespace {

GroupOptions as_group(const SGDOptions& o) {
    return {{"lr", o.lr},
            {"momentum", o.momentum},
            {"dampening", o.dampening},
            {"weight_decay", o.weight_decay},
            {"nesterov", o.nesterov ? 1.0 : 0.0},
            {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : Optimizer(std::move(params), as_group(options), "SGD"), options_(options) {
    check_options(as_group(options));
    buffers_.resize(parameters().size());
}

void SGD::check_options(const GroupOptions& o) const {
    using nn::python_float_repr;
    if (!(o.at("momentum") >= 0.0))
        xgrad::detail::fail("SGD", "invalid momentum value: " + python_float_repr(o.at("momentum")));
    if (!(o.at("weight_decay") >= 0.0))
        xgrad::detail::fail("SGD", "invalid weight_decay value: " + python_float_repr(o.at("weight_decay")));
    if (o.at("nesterov") != 0.0 && (o.at("momentum") <= 0.0 || o.at("dampening") != 0.0))
        xgrad::detail::fail("SGD", "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::on_params_added(std::size_t) {
    buffers_.resize(parameters().size());
}

ParamState SGD::get_state(std::size_t index) const {
    ParamState s;
    if (buffers_.at(index).momentum_buffer.defined()) s["momentum_buffer"] = buffers_[index].momentum_buffer;
    return s;
}

void SGD::set_state(std::size_t index, ParamState state) {
    auto it = state.find("momentum_buffer");
    buffers_.at(index).momentum_buffer = it == state.end() ? Tensor() : it->second;
}

void SGD::update(const GroupOptions& o, std::size_t index, Tensor& param, const Tensor& grad) {
    const double momentum = o.at("momentum"), weight_decay = o.at("weight_decay");
    Tensor* buf = momentum != 0.0 ? &buffers_[index].momentum_buffer : nullptr;
    const bool first = buf && (!buf->defined() || buf->shape() != param.shape());
    if (buf && !first) {
        if (buf->dtype() != param.dtype()) *buf = buf->to(param.dtype());     // the module was converted
        if (buf->device() != param.device()) *buf = buf->to(param.device());  // or moved
    }
    const kernels::SgdStep step{.lr = o.at("lr"),
                                .momentum = momentum,
                                .dampening = o.at("dampening"),
                                .weight_decay = weight_decay,
                                .nesterov = o.at("nesterov") != 0.0,
                                .maximize = o.at("maximize") != 0.0,
                                .first = first};
    if (param.is_contiguous() && (!buf || first || buf->is_contiguous())) {
        // One fused pass over param, grad and buffer, run by finish_step() together with the other
        // parameters of this step.
        if (first) *buf = empty_like(param);
        deferred_.push_back({{param, grad.to(param.dtype()).contiguous(), buf ? *buf : Tensor()},
                             {step.lr, step.momentum, step.dampening, step.weight_decay},
                             {step.nesterov, step.maximize, step.first}});
        return;
    }
    // A parameter or buffer of another layout: the same kernel on contiguous copies, the parameter
    // copied back (the buffer stays contiguous).
    Tensor p = param.contiguous();
    if (buf) *buf = first ? empty_like(p) : buf->contiguous();
    const kernels::SgdTensors t{p, grad.to(param.dtype()).contiguous(), buf ? *buf : Tensor()};
    kernels::sgd_step(&t, 1, step);
    param.copy_(p);
    if (buf) xgrad::detail::bump_version(*buf);
}

void SGD::finish_step() {
    optim::detail::run_deferred(
        deferred_, 2, [](const Deferred& a, const Deferred& b) { return a.options == b.options && a.flags == b.flags; },
        [](const Deferred* first, const Deferred* last) {
            std::vector<kernels::SgdTensors> run;
            for (const Deferred* d = first; d != last; ++d)
                run.push_back({d->tensors[0], d->tensors[1], d->tensors[2]});
            const auto& o = first->options;
            const auto& f = first->flags;
            kernels::sgd_step(run.data(), run.size(),
                              {.lr = o[0],
                               .momentum = o[1],
                               .dampening = o[2],
                               .weight_decay = o[3],
                               .nesterov = f[0],
                               .maximize = f[1],
                               .first = f[2]});
            for (const auto& t : run) {
                xgrad::detail::bump_version(t.param);
                if (t.momentum_buffer.defined()) xgrad::detail::bump_version(t.momentum_buffer);
            }
        });
}

}  // namespace xgrad::optim
