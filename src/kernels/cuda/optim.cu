// CUDA optimizer kernels: one fused pass over a parameter and its Adam or SGD state per step, in the CPU
// kernel's operations and order (cpu/optim.cpp), with the fused multiply-adds of a CPU that has FMA,
// so that with --fmad=false each element's update is that CPU's, bit for bit. Adam and SGD update up to kListTensors
// parameters per launch (PyTorch's multi-tensor apply): a small model's step is then one launch, not one per parameter.
#include "kernels/cuda/common.cuh"
#include "kernels/scalar_ops.hpp"

namespace xgrad::kernels::cuda {

namespace {

/// Parameters per Adam or SGD launch: their pointers travel as the kernel's argument (well under its
/// 4 KiB).
constexpr int kListTensors = 32;

/// Blocks along x of a launch over several parameters: enough for the largest, capped (the grid-stride
/// loop covers the rest, and a smaller parameter's surplus blocks return at once).
unsigned list_blocks(i64 largest) {
    const unsigned b = blocks_for(largest);
    return b < 1024u ? b : 1024u;
}

/// Splits `count` parameters into lists of at most kListTensors, one launch each: `add(list, k, i)`
/// puts parameter i into slot k and returns its element count (an empty one is left out), and
/// `launch(list, k, largest)` launches over the list's k parameters.
template <class List, class Add, class Launch>
void for_each_list(std::size_t count, Add&& add, Launch&& launch) {
    std::size_t i = 0;
    while (i < count) {
        List list{};
        int k = 0;
        i64 largest = 0;
        for (; i < count && k < kListTensors; ++i) {
            const i64 n = add(list, k, i);
            if (n == 0) continue;
            largest = largest > n ? largest : n;
            ++k;
        }
        if (k > 0) launch(list, k, largest);
    }
}

/// The parameters of one Adam launch, by value.
template <typename T>
struct AdamList {
    T* p[kListTensors];
    const T* g[kListTensors];
    T* m[kListTensors];
    T* v[kListTensors];
    T* vmax[kListTensors];  // null without amsgrad
    i64 n[kListTensors];
};

/// Block row y updates parameter y of the list, its blocks striding over the parameter's elements.
template <typename T>
__global__ void adam_kernel(AdamList<T> list, T b1, T one_minus_b1, T b2, T one_minus_b2, T neg_step, T bc2, T e) {
    const int t = blockIdx.y;
    T* p = list.p[t];
    const T* g = list.g[t];
    T* m = list.m[t];
    T* v = list.v[t];
    T* vmax = list.vmax[t];
    const i64 n = list.n[t];
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
        // PyTorch 1.13's _single_tensor_adam:
        //   exp_avg.mul_(β1).add_(grad, alpha=1-β1); exp_avg_sq.mul_(β2).addcmul_(grad, grad, value=1-β2)
        //   denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        //   param.addcdiv_(exp_avg, denom, value=-step_size)
        // The adds fused as PyTorch's CUDA kernels (and its AVX2 CPU kernels) fuse them.
        const T gi = g[i];
        const T mi = scalar::fused_mla(one_minus_b1, gi, m[i] * b1);
        const T vi = scalar::fused_mla(gi * one_minus_b2, gi, v[i] * b2);
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

/// The parameters of one SGD launch, by value.
template <typename T>
struct SgdList {
    T* p[kListTensors];
    const T* g[kListTensors];
    T* buf[kListTensors];  // null without momentum
    i64 n[kListTensors];
};

/// Block row y updates parameter y of the list, as adam_kernel.
template <typename T>
__global__ void sgd_kernel(SgdList<T> list, T wd, T m, T one_minus_damp, T neg_lr, bool maximize, bool decay,
                           bool first, bool nesterov) {
    const int t = blockIdx.y;
    T* p = list.p[t];
    const T* g = list.g[t];
    T* buf = list.buf[t];
    const i64 n = list.n[t];
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
        // PyTorch 1.13's _single_tensor_sgd, as on the CPU; its CUDA add fuses x + alpha * y.
        scalar::sgd_element<true>(p[i], g[i], buf ? buf + i : nullptr, wd, m, one_minus_damp, neg_lr, maximize, decay,
                                  first, nesterov);
    }
}

}  // namespace

void sgd_step(Scalar t, const SgdPointers* params, std::size_t count, const SgdStep& s) {
    dispatch_float(t, "sgd", [&](auto tag) {
        using T = decltype(tag);
        for_each_list<SgdList<T>>(
            count,
            [&](SgdList<T>& list, int k, std::size_t i) {
                list.p[k] = static_cast<T*>(params[i].param);
                list.g[k] = static_cast<const T*>(params[i].grad);
                list.buf[k] = static_cast<T*>(params[i].momentum_buffer);
                return list.n[k] = params[i].n;
            },
            [&](const SgdList<T>& list, int k, i64 largest) {
                sgd_kernel<T><<<dim3(list_blocks(largest), static_cast<unsigned>(k)), kThreads>>>(
                    list, static_cast<T>(s.weight_decay), static_cast<T>(s.momentum), static_cast<T>(1.0 - s.dampening),
                    static_cast<T>(-s.lr), s.maximize, s.weight_decay != 0.0, s.first, s.nesterov);
                check_launch("sgd kernel");
            });
    });
}

void adam_step(Scalar t, const AdamPointers* params, std::size_t count, const AdamStep& s) {
    dispatch_float(t, "adam", [&](auto tag) {
        using T = decltype(tag);
        for_each_list<AdamList<T>>(
            count,
            [&](AdamList<T>& list, int k, std::size_t i) {
                const AdamPointers& a = params[i];
                list.p[k] = static_cast<T*>(a.param);
                list.g[k] = static_cast<const T*>(a.grad);
                list.m[k] = static_cast<T*>(a.exp_avg);
                list.v[k] = static_cast<T*>(a.exp_avg_sq);
                list.vmax[k] = static_cast<T*>(a.max_exp_avg_sq);
                return list.n[k] = a.n;
            },
            [&](const AdamList<T>& list, int k, i64 largest) {
                adam_kernel<T><<<dim3(list_blocks(largest), static_cast<unsigned>(k)), kThreads>>>(
                    list, static_cast<T>(s.beta1), static_cast<T>(1.0 - s.beta1), static_cast<T>(s.beta2),
                    static_cast<T>(1.0 - s.beta2), static_cast<T>(-s.step_size),
                    static_cast<T>(s.bias_correction2_sqrt), static_cast<T>(s.eps));
                check_launch("adam kernel");
            });
    });
}

}  // namespace xgrad::kernels::cuda
