// CUDA optimizer kernels: one fused pass over a parameter and its Adam or SGD state per step, in the CPU
// kernel's operations and order (cpu/optim.cpp), so that with --fmad=false each element's update is
// the CPU's, bit for bit.
#include "kernels/cuda/common.cuh"
#include "kernels/scalar_ops.hpp"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, i64 n, T b1, T one_minus_b1, T b2, T one_minus_b2,
                            T neg_step, T bc2, T e) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
        // PyTorch 1.13's _single_tensor_adam:
        //   exp_avg.mul_(β1).add_(grad, alpha=1-β1); exp_avg_sq.mul_(β2).addcmul_(grad, grad, value=1-β2)
        //   denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        //   param.addcdiv_(exp_avg, denom, value=-step_size)
        const T gi = g[i];
        T mi = m[i] * b1;
        mi = mi + one_minus_b1 * gi;
        T vi = v[i] * b2;
        vi = vi + gi * one_minus_b2 * gi;
        m[i] = mi;
        v[i] = vi;
        T vd = vi;
        if (vmax) {
            vd = nan_max(vmax[i], vi);  // maximum, NaN propagating
            vmax[i] = vd;
        }
        const T denom = m_sqrt(vd) / bc2 + e;
        p[i] = p[i] + mi * neg_step / denom;
    }
}

template <typename T>
__global__ void sgd_kernel(T* p, const T* g, T* buf, i64 n, T wd, T m, T one_minus_damp, T neg_lr, bool maximize,
                           bool decay, bool first, bool nesterov) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
        scalar::sgd_element(p[i], g[i], buf ? buf + i : nullptr, wd, m, one_minus_damp, neg_lr, maximize, decay, first,
                            nesterov);  // PyTorch 1.13's _single_tensor_sgd, as on the CPU
    }
}

}  // namespace

void sgd_step(Scalar t, void* param, const void* grad, void* momentum_buffer, std::int64_t n, const SgdStep& s) {
    if (n == 0) return;
    dispatch_float(t, "sgd", [&](auto tag) {
        using T = decltype(tag);
        sgd_kernel<T><<<blocks_for(n), kThreads>>>(
            static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(momentum_buffer), n,
            static_cast<T>(s.weight_decay), static_cast<T>(s.momentum), static_cast<T>(1.0 - s.dampening),
            static_cast<T>(-s.lr), s.maximize, s.weight_decay != 0.0, s.first, s.nesterov);
    });
    check_launch("sgd kernel");
}

void adam_step(Scalar t, void* param, const void* grad, void* exp_avg, void* exp_avg_sq, void* max_exp_avg_sq,
               std::int64_t n, double beta1, double beta2, double step_size, double bias_correction2_sqrt, double eps) {
    if (n == 0) return;
    dispatch_float(t, "adam", [&](auto tag) {
        using T = decltype(tag);
        adam_kernel<T><<<blocks_for(n), kThreads>>>(
            static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(exp_avg), static_cast<T*>(exp_avg_sq),
            static_cast<T*>(max_exp_avg_sq), n, static_cast<T>(beta1), static_cast<T>(1.0 - beta1),
            static_cast<T>(beta2), static_cast<T>(1.0 - beta2), static_cast<T>(-step_size),
            static_cast<T>(bias_correction2_sqrt), static_cast<T>(eps));
    });
    check_launch("adam kernel");
}

}  // namespace xgrad::kernels::cuda
