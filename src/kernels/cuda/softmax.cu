// CUDA softmax and log_softmax over contiguous rows, forward and backward, one block per row, in
// the CPU kernels' arithmetic (cpu/softmax.cpp): shifted = x - max, exp, a sum (here in double);
// and nll_loss's pick of each target's log-probability, forward and backward.
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__global__ void softmax_kernel(const T* x, T* y, i64 rows, i64 width, bool log) {
    __shared__ T shared_max[32];
    __shared__ double shared_sum[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * width;
        T* yr = y + r * width;
        T m = xr[0];
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) m = nan_max(m, xr[j]);  // NaN wins, as in max()
        m = block_reduce(m, Max{}, xr[0], shared_max);
        double s = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) s += static_cast<double>(m_exp(xr[j] - m));
        const T sum = static_cast<T>(block_reduce(s, Sum{}, 0.0, shared_sum));
        const T log_sum = log ? m_log(sum) : T(0);
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
            const T shifted = xr[j] - m;  // the largest logit becomes 0
            yr[j] = log ? shifted - log_sum : m_exp(shifted) / sum;
        }
    }
}

template <typename T>
__global__ void softmax_backward_kernel(const T* g, const T* o, T* dx, i64 rows, i64 width, bool log) {
    __shared__ double shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* gr = g + r * width;
        const T* orow = o + r * width;
        T* dr = dx + r * width;
        // log_softmax: g - softmax · Σg; softmax: out · (g - Σ(g · out)).
        double s = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
            const T term = log ? gr[j] : gr[j] * orow[j];
            s += static_cast<double>(term);
        }
        const T sum = static_cast<T>(block_reduce(s, Sum{}, 0.0, shared));
        for (i64 j = threadIdx.x; j < width; j += blockDim.x)
            dr[j] = log ? gr[j] - m_exp(orow[j]) * sum : orow[j] * (gr[j] - sum);
    }
}

/// Element i's loss and class weight (0 and 0 where ignored); a target outside [0, c) lowers `*bad`
/// to i.
template <typename T>
__device__ inline void nll_term(const T* x, const i64* target, const T* weight, i64 i, i64 c, i64 l, i64 ignore_index,
                                unsigned long long* bad, double& loss, double& w) {
    const i64 ti = target[i];
    loss = 0;
    w = 0;
    if (ti == ignore_index) return;
    if (ti < 0 || ti >= c) {
        atomicMin(bad, static_cast<unsigned long long>(i));
        return;
    }
    w = weight ? static_cast<double>(weight[ti]) : 1.0;
    loss = -w * static_cast<double>(x[((i / l) * c + ti) * l + i % l]);
}

template <typename T>
__global__ void nll_kernel(const T* x, const i64* target, const T* weight, i64 n, i64 c, i64 l, i64 ignore_index,
                           T* out, unsigned long long* bad) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n * l; i += i64{gridDim.x} * blockDim.x) {
        double loss, w;
        nll_term(x, target, weight, i, c, l, ignore_index, bad, loss, w);
        out[i] = static_cast<T>(loss);
    }
}

/// One block: the sum of the losses and of the weights, in float64 (a tree, not the CPU's order).
template <typename T>
__global__ void nll_sum_kernel(const T* x, const i64* target, const T* weight, i64 n, i64 c, i64 l, i64 ignore_index,
                               bool mean, T* out, double* total_weight, unsigned long long* bad) {
    __shared__ double shared[32];
    double sum = 0, total = 0;
    for (i64 i = threadIdx.x; i < n * l; i += blockDim.x) {
        double loss, w;
        nll_term(x, target, weight, i, c, l, ignore_index, bad, loss, w);
        sum += loss;
        total += w;
    }
    sum = block_reduce(sum, Sum{}, 0.0, shared);
    __syncthreads();
    total = block_reduce(total, Sum{}, 0.0, shared);
    if (threadIdx.x == 0) {
        out[0] = static_cast<T>(mean ? sum / total : sum);  // 0/0 = NaN, as PyTorch
        *total_weight = total;
    }
}

template <typename T>
__global__ void nll_backward_kernel(const T* grad, const i64* target, const T* weight, i64 n, i64 c, i64 l,
                                    i64 ignore_index, bool reduce, bool mean, const double* total_weight, T* dx) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n * l; i += i64{gridDim.x} * blockDim.x) {
        const i64 ti = target[i];
        if (ti == ignore_index) continue;
        const T scale = !reduce ? grad[i] : mean ? grad[0] / static_cast<T>(*total_weight) : grad[0];
        const T w = weight ? weight[ti] : T(1);
        dx[((i / l) * c + ti) * l + i % l] = -w * scale;
    }
}

}  // namespace

std::int64_t nll_loss_forward(Scalar t, const void* x, const std::int64_t* target, const void* weight, std::int64_t n,
                              std::int64_t c, std::int64_t l, std::int64_t ignore_index, bool reduce, bool mean,
                              void* out, double* total_weight, int device) {
    const i64 count = n * l;
    if (count == 0 && !reduce) return -1;
    const Scratch scratch(sizeof(unsigned long long), device);
    auto* bad = scratch.as<unsigned long long>();
    const auto none = static_cast<unsigned long long>(count);
    copy_to_device(bad, &none, sizeof none, device);
    dispatch_float(t, "nll_loss", [&](auto tag) {
        using T = decltype(tag);
        const auto* px = static_cast<const T*>(x);
        const auto* pw = static_cast<const T*>(weight);
        if (reduce)
            nll_sum_kernel<T>
                <<<1, 512>>>(px, target, pw, n, c, l, ignore_index, mean, static_cast<T*>(out), total_weight, bad);
        else
            nll_kernel<T>
                <<<blocks_for(count), kThreads>>>(px, target, pw, n, c, l, ignore_index, static_cast<T*>(out), bad);
    });
    check_launch("nll_loss kernel");
    unsigned long long first = none;
    copy_to_host(&first, bad, sizeof first, device);
    return first == none ? -1 : static_cast<std::int64_t>(first);
}

void nll_loss_backward(Scalar t, const void* grad, const std::int64_t* target, const void* weight, std::int64_t n,
                       std::int64_t c, std::int64_t l, std::int64_t ignore_index, bool reduce, bool mean,
                       const double* total_weight, void* dx) {
    if (n * l == 0) return;
    dispatch_float(t, "nll_loss", [&](auto tag) {
        using T = decltype(tag);
        nll_backward_kernel<T><<<blocks_for(n * l), kThreads>>>(static_cast<const T*>(grad), target,
                                                                static_cast<const T*>(weight), n, c, l, ignore_index,
                                                                reduce, mean, total_weight, static_cast<T*>(dx));
    });
    check_launch("nll_loss backward kernel");
}

void softmax_rows(Scalar t, const void* x, void* out, std::int64_t rows, std::int64_t width, bool log) {
    if (rows == 0 || width == 0) return;
    dispatch_float(t, log ? "log_softmax" : "softmax", [&](auto tag) {
        using T = decltype(tag);
        softmax_kernel<T><<<row_blocks(rows), row_threads(width)>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                                    rows, width, log);
    });
    check_launch(log ? "log_softmax kernel" : "softmax kernel");
}

void softmax_backward_rows(Scalar t, const void* grad, const void* out, void* dx, std::int64_t rows, std::int64_t width,
                           bool log) {
    if (rows == 0 || width == 0) return;
    dispatch_float(t, log ? "log_softmax" : "softmax", [&](auto tag) {
        using T = decltype(tag);
        softmax_backward_kernel<T><<<row_blocks(rows), row_threads(width)>>>(
            static_cast<const T*>(grad), static_cast<const T*>(out), static_cast<T*>(dx), rows, width, log);
    });
    check_launch(log ? "log_softmax backward kernel" : "softmax backward kernel");
}

}  // namespace xgrad::kernels::cuda
