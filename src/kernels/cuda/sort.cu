// CUDA sorting kernels over rows: each element finds its own rank (how many of its row come before
// it, ties by index), which is a stable sort in O(width²) work but without scratch memory or a
// second pass; then the gradients' scatter, one thread per row.
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

/// Whether a comes before b (a at index ia, b at ib): NaN above every number, ties in index order.
template <typename T>
__device__ inline bool before(T a, i64 ia, T b, i64 ib, bool descending) {
    const bool na = is_nan(a), nb = is_nan(b);
    if (descending ? (na && !nb) || a > b : (!na && nb) || a < b) return true;
    if (descending ? (nb && !na) || b > a : (!nb && na) || b < a) return false;
    return ia < ib;
}

template <typename T>
__global__ void rank_sort_kernel(const T* in, T* values, i64* indices, i64 rows, i64 width, i64 k, bool descending) {
    const i64 n = rows * width;
    for (i64 e = blockIdx.x * i64{blockDim.x} + threadIdx.x; e < n; e += i64{gridDim.x} * blockDim.x) {
        const i64 r = e / width, i = e % width;
        const T* x = in + r * width;
        i64 rank = 0;
        for (i64 j = 0; j < width; ++j) rank += before(x[j], j, x[i], i, descending) ? 1 : 0;
        if (rank < k) {
            values[r * k + rank] = x[i];
            indices[r * k + rank] = i;
        }
    }
}

template <typename T>
__global__ void scatter_kernel(const T* g, const i64* idx, T* dx, i64 rows, i64 width, i64 k) {
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r < rows; r += i64{gridDim.x} * blockDim.x)
        for (i64 j = 0; j < k; ++j) dx[r * width + idx[r * k + j]] += g[r * k + j];
}

}  // namespace

void sort_rows(Scalar t, const void* in, void* values, void* indices, std::int64_t rows, std::int64_t width,
               std::int64_t k, bool descending) {
    if (rows == 0 || width == 0 || k == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        rank_sort_kernel<T><<<blocks_for(rows * width), kThreads>>>(
            static_cast<const T*>(in), static_cast<T*>(values), static_cast<i64*>(indices), rows, width, k, descending);
    });
    check_launch("sort kernel");
}

void scatter_rows(Scalar t, const void* grad, const void* indices, void* dx, std::int64_t rows, std::int64_t width,
                  std::int64_t k) {
    if (rows == 0 || k == 0) return;
    dispatch_float(t, "scatter", [&](auto tag) {
        using T = decltype(tag);
        scatter_kernel<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(grad), static_cast<const i64*>(indices),
                                                          static_cast<T*>(dx), rows, width, k);
    });
    check_launch("sort backward kernel");
}

}  // namespace xgrad::kernels::cuda
