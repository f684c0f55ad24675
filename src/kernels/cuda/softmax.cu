// CUDA softmax and log_softmax over contiguous rows, forward and backward, one block per row, in
// the CPU kernels' arithmetic (cpu/softmax.cpp): shifted = x - max, exp, a sum (here in double).
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

}  // namespace

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
