// CUDA GroupNorm, forward and backward. The forward takes one block per (sample, group) row; the
// backward one block per (sample, channel) for Σg·x and Σg, one per (sample, group) for dx, and one
// thread per channel for the weight's and bias's gradients. The formulas are the CPU kernel's
// (cpu/group_norm.cpp); the sums accumulate in double, in the order of a block reduction.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

constexpr int kGroupThreads = 256;

template <typename T>
__global__ void group_norm_forward_kernel(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd, i64 groups,
                                          i64 d, i64 image) {
    __shared__ double shared[32];
    const i64 i = blockIdx.x, row = d * image, g = i % groups;
    const T* xr = x + i * row;
    T* yr = y + i * row;
    double s = 0;
    for (i64 k = threadIdx.x; k < row; k += blockDim.x) s += static_cast<double>(xr[k]);
    const T m = row > 0 ? static_cast<T>(block_reduce(s, Sum{}, 0.0, shared) / static_cast<double>(row)) : T(0);
    double q = 0;
    for (i64 k = threadIdx.x; k < row; k += blockDim.x) {
        const double dk = static_cast<double>(xr[k] - m);
        q += dk * dk;
    }
    const double m2 = block_reduce(q, Sum{}, 0.0, shared);
    const T var = row > 0 ? static_cast<T>(m2 / static_cast<double>(row)) : T(0);
    const T rs = T(1) / m_sqrt((var > T(0) ? var : T(0)) + eps);
    if (threadIdx.x == 0) {
        mean[i] = m;
        rstd[i] = rs;
    }
    for (i64 k = threadIdx.x; k < row; k += blockDim.x) {
        const i64 c = g * d + k / image;
        if (!w && !b) {
            yr[k] = (xr[k] - m) * rs;
        } else {
            const T scale = rs * (w ? w[c] : T(1));
            const T shift = -scale * m + (b ? b[c] : T(0));
            yr[k] = fma(scale, xr[k], shift);
        }
    }
}

template <typename T>
__global__ void group_norm_sums_kernel(const T* g, const T* x, T* ds, T* db, i64 image) {
    __shared__ double shared[32];
    const i64 r = blockIdx.x;
    double s = 0, t = 0;
    for (i64 k = threadIdx.x; k < image; k += blockDim.x) {
        s += static_cast<double>(g[r * image + k]) * static_cast<double>(x[r * image + k]);
        t += static_cast<double>(g[r * image + k]);
    }
    const double sv = block_reduce(s, Sum{}, 0.0, shared);
    const double tv = block_reduce(t, Sum{}, 0.0, shared);
    if (threadIdx.x == 0) {
        ds[r] = static_cast<T>(sv);
        db[r] = static_cast<T>(tv);
    }
}

template <typename T>
__global__ void group_norm_dx_kernel(const T* g, const T* x, const T* w, const T* mean, const T* rstd, const T* ds,
                                     const T* db, T* dx, i64 groups, i64 d, i64 image) {
    __shared__ T coef[2];
    const i64 i = blockIdx.x, grp = i % groups, row = d * image;
    if (threadIdx.x == 0) {
        T ds_val = 0, db_val = 0;
        for (i64 j = 0; j < d; ++j) {
            const T wj = w ? w[grp * d + j] : T(1);
            ds_val = fma(ds[i * d + j], wj, ds_val);
            db_val = fma(db[i * d + j], wj, db_val);
        }
        const T r = rstd[i], s = T(1) / static_cast<T>(row);
        const T c2 = fma(db_val, mean[i], -ds_val) * r * r * r * s;
        coef[0] = c2;
        coef[1] = fma(-c2, mean[i], -(db_val * r * s));
    }
    __syncthreads();
    const T c2 = coef[0], c3 = coef[1];
    for (i64 k = threadIdx.x; k < row; k += blockDim.x) {
        const T c1 = rstd[i] * (w ? w[grp * d + k / image] : T(1));
        const i64 at = i * row + k;
        dx[at] = fma(c1, g[at], c2 * x[at]) + c3;
    }
}

template <typename T>
__global__ void group_norm_params_kernel(const T* mean, const T* rstd, const T* ds, const T* db, T* dw, T* dbias, i64 n,
                                         i64 channels, i64 groups) {
    const i64 c = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x;
    if (c >= channels) return;
    const i64 d = channels / groups;
    T acc_w = 0, acc_b = 0;
    for (i64 b = 0; b < n; ++b) {
        const i64 nc = b * channels + c, ng = b * groups + c / d;
        acc_w = fma(fma(-db[nc], mean[ng], ds[nc]), rstd[ng], acc_w);
        acc_b = acc_b + db[nc];
    }
    if (dw) dw[c] = acc_w;
    if (dbias) dbias[c] = acc_b;
}

}  // namespace

void group_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, double eps, void* out,
                        void* mean, void* rstd, std::int64_t n, std::int64_t channels, std::int64_t image,
                        std::int64_t groups) {
    if (n * groups == 0) return;
    dispatch_float(t, "group_norm", [&](auto tag) {
        using T = decltype(tag);
        group_norm_forward_kernel<T><<<static_cast<unsigned>(n * groups), kGroupThreads>>>(
            static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T>(eps),
            static_cast<T*>(out), static_cast<T*>(mean), static_cast<T*>(rstd), groups, channels / groups, image);
    });
    check_launch("group_norm kernel");
}

void group_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* mean,
                         const void* rstd, void* dx, void* dw, void* db, std::int64_t n, std::int64_t channels,
                         std::int64_t image, std::int64_t groups, int device) {
    if (channels == 0) return;
    dispatch_float(t, "group_norm", [&](auto tag) {
        using T = decltype(tag);
        Scratch sums(static_cast<std::size_t>(2 * n * channels) * sizeof(T), device);
        T* ds = sums.as<T>();
        T* dbs = ds + n * channels;
        if (n > 0) {
            group_norm_sums_kernel<T><<<static_cast<unsigned>(n * channels), kGroupThreads>>>(
                static_cast<const T*>(grad), static_cast<const T*>(x), ds, dbs, image);
            check_launch("group_norm backward kernel");
        }
        if (dx && n > 0)
            group_norm_dx_kernel<T><<<static_cast<unsigned>(n * groups), kGroupThreads>>>(
                static_cast<const T*>(grad), static_cast<const T*>(x), static_cast<const T*>(weight),
                static_cast<const T*>(mean), static_cast<const T*>(rstd), ds, dbs, static_cast<T*>(dx), groups,
                channels / groups, image);
        if (dw || db)
            group_norm_params_kernel<T><<<static_cast<unsigned>((channels + 255) / 256), 256>>>(
                static_cast<const T*>(mean), static_cast<const T*>(rstd), ds, dbs, static_cast<T*>(dw),
                static_cast<T*>(db), n, channels, groups);
    });
    check_launch("group_norm backward kernel");
}

}  // namespace xgrad::kernels::cuda
