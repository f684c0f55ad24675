// CUDA BatchNorm, forward and backward: one block per channel, its (n × image) elements visited with a
// block-stride loop. The formulas are the CPU kernel's (cpu/batch_norm.cpp), the sums accumulated in
// double as PyTorch's CPU kernel accumulates float inputs, but in the order of a block reduction.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

constexpr int kChannelThreads = 256;

/// The index of a channel's j-th element in (n, channels, image) memory.
__device__ inline i64 channel_index(i64 j, i64 c, i64 channels, i64 image) {
    return (j / image * channels + c) * image + j % image;
}

template <typename T>
__global__ void batch_norm_forward_kernel(const T* x, const T* w, const T* b, T* rm, T* rv, bool training, T momentum,
                                          double eps, T* y, T* save_mean, T* save_invstd, i64 n, i64 channels,
                                          i64 image) {
    __shared__ double shared[32];
    __shared__ T stats[2];
    const i64 c = blockIdx.x, count = n * image;
    if (training) {
        double s = 0;
        for (i64 j = threadIdx.x; j < count; j += blockDim.x)
            s += static_cast<double>(x[channel_index(j, c, channels, image)]);
        const T mean = static_cast<T>(block_reduce(s, Sum{}, 0.0, shared) / static_cast<double>(count));
        double q = 0;
        for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
            const T d = x[channel_index(j, c, channels, image)] - mean;
            q += static_cast<double>(d * d);
        }
        const T var_sum = static_cast<T>(block_reduce(q, Sum{}, 0.0, shared));
        if (threadIdx.x == 0) {
            const double var = static_cast<double>(var_sum / static_cast<T>(count));
            stats[0] = mean;
            stats[1] = var != 0 || eps != 0 ? static_cast<T>(1.0 / m_sqrt(var + eps)) : T(0);
            if (rm) rm[c] = momentum * mean + (T(1) - momentum) * rm[c];
            if (rv) {
                const double unbiased = static_cast<double>(var_sum / static_cast<T>(count - 1));
                rv[c] = static_cast<T>(static_cast<double>(momentum) * unbiased +
                                       static_cast<double>((T(1) - momentum) * rv[c]));
            }
        }
    } else if (threadIdx.x == 0) {
        stats[0] = rm[c];
        stats[1] = T(1) / m_sqrt(rv[c] + static_cast<T>(eps));
    }
    __syncthreads();
    const T mean = stats[0], invstd = stats[1];
    if (threadIdx.x == 0) {
        save_mean[c] = mean;
        save_invstd[c] = invstd;
    }
    const T alpha = invstd * (w ? w[c] : T(1));
    const T beta = fma(-mean, alpha, b ? b[c] : T(0));
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
        const i64 k = channel_index(j, c, channels, image);
        y[k] = fma(x[k], alpha, beta);
    }
}

template <typename T>
__global__ void batch_norm_backward_kernel(const T* g, const T* x, const T* w, const T* mean_in, const T* invstd_in,
                                           bool training, double eps, T* dx, T* dw, T* db, i64 n, i64 channels,
                                           i64 image) {
    __shared__ double shared[32];
    const i64 c = blockIdx.x, count = n * image;
    const T mean = mean_in[c];
    const T invstd = training ? invstd_in[c] : static_cast<T>(1.0 / m_sqrt(static_cast<double>(invstd_in[c]) + eps));
    double s = 0, dot = 0;
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
        const i64 k = channel_index(j, c, channels, image);
        s += static_cast<double>(g[k]);
        dot += static_cast<double>((x[k] - mean) * g[k]);
    }
    const double sum = block_reduce(s, Sum{}, 0.0, shared);
    const double dotp = block_reduce(dot, Sum{}, 0.0, shared);
    const T wc = w ? w[c] : T(1);
    if (dx) {
        const T k = static_cast<T>(dotp) * invstd * invstd / static_cast<T>(count);
        const T grad_mean = static_cast<T>(sum / static_cast<double>(count));
        for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
            const i64 q = channel_index(j, c, channels, image);
            dx[q] = training ? fma(-(x[q] - mean), k, g[q] - grad_mean) * invstd * wc : g[q] * invstd * wc;
        }
    }
    if (threadIdx.x == 0) {
        if (dw) dw[c] = static_cast<T>(dotp * static_cast<double>(invstd));
        if (db) db[c] = static_cast<T>(sum);
    }
}

}  // namespace

void batch_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, void* rm, void* rv,
                        bool training, double momentum, double eps, void* out, void* save_mean, void* save_invstd,
                        std::int64_t n, std::int64_t channels, std::int64_t image) {
    if (channels == 0) return;
    dispatch_float(t, "batch_norm", [&](auto tag) {
        using T = decltype(tag);
        batch_norm_forward_kernel<T><<<static_cast<unsigned>(channels), kChannelThreads>>>(
            static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T*>(rm),
            static_cast<T*>(rv), training, static_cast<T>(momentum), eps, static_cast<T*>(out),
            static_cast<T*>(save_mean), static_cast<T*>(save_invstd), n, channels, image);
    });
    check_launch("batch_norm kernel");
}

void batch_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* mean,
                         const void* invstd, bool training, double eps, void* dx, void* dw, void* db, std::int64_t n,
                         std::int64_t channels, std::int64_t image) {
    if (channels == 0) return;
    dispatch_float(t, "batch_norm", [&](auto tag) {
        using T = decltype(tag);
        batch_norm_backward_kernel<T><<<static_cast<unsigned>(channels), kChannelThreads>>>(
            static_cast<const T*>(grad), static_cast<const T*>(x), static_cast<const T*>(weight),
            static_cast<const T*>(mean), static_cast<const T*>(invstd), training, eps, static_cast<T*>(dx),
            static_cast<T*>(dw), static_cast<T*>(db), n, channels, image);
    });
    check_launch("batch_norm backward kernel");
}

}  // namespace xgrad::kernels::cuda
