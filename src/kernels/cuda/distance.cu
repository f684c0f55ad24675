// CUDA cdist, the direct kernel: one thread per distance in the forward, one per (row, feature) of
// the first input in the backward. The formulas are the CPU kernel's (cpu/distance.cpp), with CUDA's
// pow for SLEEF's.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__device__ T sign_of(T v) {
    return isnan(v) ? v : v > T(0) ? T(1) : v < T(0) ? T(-1) : T(0);
}

template <typename T>
__global__ void cdist_forward_kernel(const T* a, const T* b, double p, T* out, i64 batch, i64 r1, i64 r2, i64 m) {
    const i64 k = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x;
    if (k >= batch * r1 * r2) return;
    const i64 l = k / (r1 * r2), i = k / r2 % r1, j = k % r2;
    const T* x = a + (l * r1 + i) * m;
    const T* y = b + (l * r2 + j) * m;
    const T pt = static_cast<T>(p);
    const bool inf = isinf(p);
    T agg = 0;
    for (i64 f = 0; f < m; ++f) {
        const T d = fabs(x[f] - y[f]);
        if (p == 0)
            agg = agg + fmin(ceil(d), T(1));
        else if (p == 1)
            agg = agg + d;
        else if (p == 2)
            agg = fma(d, d, agg);
        else if (inf)
            agg = fmax(agg, d);
        else
            agg = agg + pow(d, pt);
    }
    if (p == 2)
        agg = sqrt(agg);
    else if (p != 0 && p != 1 && !inf)
        agg = static_cast<T>(pow(static_cast<double>(agg), 1.0 / static_cast<double>(pt)));
    out[k] = agg;
}

template <typename T>
__global__ void cdist_backward_kernel(const T* grad, const T* a, const T* b, double p, const T* dist, T* out, i64 batch,
                                      i64 r1, i64 r2, i64 m) {
    const i64 k = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x;
    if (k >= batch * r1 * m) return;
    const i64 q = k / m, f = k % m, l = q / r1;
    const T pt = static_cast<T>(p);
    const T e_diff = p < 2 ? pt - T(1) : pt - T(2), e_dist = pt - T(1);
    T res = 0;
    if (p != 0) {
        for (i64 j = 0; j < r2; ++j) {
            const T diff = a[q * m + f] - b[(l * r2 + j) * m + f];
            const T g = grad[q * r2 + j], dv = dist[q * r2 + j];
            T term;
            if (p == 1) {
                term = g * sign_of(diff);
            } else if (isinf(p)) {
                term = g * sign_of(diff) * (T(1) - fmin(T(1), ceil(fabs(fabs(diff) - dv))));
            } else if (dv == 0) {
                continue;
            } else if (p == 2) {
                term = g * diff / dv;
            } else {
                const T lead = p < 2 ? sign_of(diff) : diff;
                term = p < 1 && diff == 0 ? T(0) : lead * pow(fabs(diff), e_diff) * g / pow(dv, e_dist);
            }
            res = res + term;
        }
    }
    out[k] = res;
}

unsigned cdist_blocks(i64 n) {
    return static_cast<unsigned>((n + 255) / 256);
}

}  // namespace

void cdist_forward(Scalar t, const void* a, const void* b, double p, void* out, std::int64_t batch, std::int64_t r1,
                   std::int64_t r2, std::int64_t m) {
    if (batch * r1 * r2 == 0) return;
    dispatch_float(t, "cdist", [&](auto tag) {
        using T = decltype(tag);
        cdist_forward_kernel<T><<<cdist_blocks(batch * r1 * r2), 256>>>(
            static_cast<const T*>(a), static_cast<const T*>(b), p, static_cast<T*>(out), batch, r1, r2, m);
    });
    check_launch("cdist kernel");
}

void cdist_backward(Scalar t, const void* grad, const void* a, const void* b, double p, const void* dist, void* out,
                    std::int64_t batch, std::int64_t r1, std::int64_t r2, std::int64_t m) {
    if (batch * r1 * m == 0) return;
    dispatch_float(t, "cdist", [&](auto tag) {
        using T = decltype(tag);
        cdist_backward_kernel<T><<<cdist_blocks(batch * r1 * m), 256>>>(
            static_cast<const T*>(grad), static_cast<const T*>(a), static_cast<const T*>(b), p,
            static_cast<const T*>(dist), static_cast<T*>(out), batch, r1, r2, m);
    });
    check_launch("cdist backward kernel");
}

}  // namespace xgrad::kernels::cuda
