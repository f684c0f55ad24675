// CPU optimizer kernels: one pass over a parameter and its state per step (Adam/AdamW, SGD).
#include <cmath>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

void adam_one(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
              const Tensor& max_exp_avg_sq, double beta1, double beta2, double step_size, double bias_correction2_sqrt,
              double eps) {
    detail::dispatch_float(param.dtype(), "adam", [&](auto tag) {
        using T = decltype(tag);
        T* p = param.impl()->data<T>();
        const T* g = grad.impl()->data<T>();
        T* m = exp_avg.impl()->data<T>();
        T* v = exp_avg_sq.impl()->data<T>();
        T* vmax = max_exp_avg_sq.defined() ? max_exp_avg_sq.impl()->data<T>() : nullptr;
        // PyTorch 1.13's _single_tensor_adam, element by element, in its order and its dtype:
        //   exp_avg.mul_(β1).add_(grad, alpha=1-β1); exp_avg_sq.mul_(β2).addcmul_(grad, grad, value=1-β2)
        //   denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        //   param.addcdiv_(exp_avg, denom, value=-step_size)
        // vectorised at run time (vec_math), each lane giving the scalar formula's bits.
        const AdamCoefficients<T> c{
            static_cast<T>(beta1),       static_cast<T>(1.0 - beta1),           static_cast<T>(beta2),
            static_cast<T>(1.0 - beta2), static_cast<T>(bias_correction2_sqrt), static_cast<T>(eps),
            static_cast<T>(-step_size)};
        parallel_for(0, param.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            adam_update(p + lo, g + lo, m + lo, v + lo, vmax ? vmax + lo : nullptr, c, hi - lo);
        });
    });
}

void sgd_one(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdStep& s) {
    detail::dispatch_float(param.dtype(), "sgd", [&](auto tag) {
        using T = decltype(tag);
        T* p = param.impl()->data<T>();
        const T* g = grad.impl()->data<T>();
        T* buf = momentum_buffer.defined() ? momentum_buffer.impl()->data<T>() : nullptr;
        const SgdCoefficients<T> c{static_cast<T>(s.weight_decay),
                                   static_cast<T>(s.momentum),
                                   static_cast<T>(1.0 - s.dampening),
                                   static_cast<T>(-s.lr),
                                   s.maximize,
                                   s.weight_decay != 0.0,
                                   s.first,
                                   s.nesterov};
        parallel_for(0, param.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            sgd_update(p + lo, g + lo, buf ? buf + lo : nullptr, c, hi - lo);
        });
    });
}

}  // namespace

void adam_step(const AdamTensors* params, std::size_t count, const AdamStep& s) {
    for (std::size_t i = 0; i < count; ++i) {
        const AdamTensors& t = params[i];
        adam_one(t.param, t.grad, t.exp_avg, t.exp_avg_sq, t.max_exp_avg_sq, s.beta1, s.beta2, s.step_size,
                 s.bias_correction2_sqrt, s.eps);
    }
}

void sgd_step(const SgdTensors* params, std::size_t count, const SgdStep& s) {
    for (std::size_t i = 0; i < count; ++i) sgd_one(params[i].param, params[i].grad, params[i].momentum_buffer, s);
}

}  // namespace xgrad::kernels::cpu
