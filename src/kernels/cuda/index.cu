// CUDA kernels of indexing along one dim: gather, and scatter with atomic accumulation.
#include "kernels/cuda/common.cuh"
#include "kernels/search.hpp"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__global__ void gather_kernel(const T* src, const i64* index, i64 stride, T* out, Walk<3> walk) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[3];
        walk_offsets(walk, i, off);
        out[off[0]] = src[off[1] + index[off[2]] * stride];
    }
}

/// atomicAdd for the three element types (int64 through its two's-complement unsigned twin).
__device__ inline void atomic_add(float* p, float v) {
    atomicAdd(p, v);
}
__device__ inline void atomic_add(double* p, double v) {
    atomicAdd(p, v);
}
__device__ inline void atomic_add(i64* p, i64 v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

template <typename T, bool Accumulate>
__global__ void scatter_kernel(T* dst, const i64* index, i64 stride, const T* src, Walk<3> walk) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[3];
        walk_offsets(walk, i, off);
        T* target = dst + off[0] + index[off[2]] * stride;
        if constexpr (Accumulate)
            atomic_add(target, src[off[1]]);
        else
            *target = src[off[1]];
    }
}

template <typename T, typename I>
__global__ void search_kernel(const T* sorted, const T* values, I* out, i64 total, i64 m, i64 n, bool shared,
                              bool right) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < total; i += i64{gridDim.x} * blockDim.x) {
        const T* row = sorted + (shared ? 0 : (i / n) * m);
        out[i] = static_cast<I>(search_position(row, m, values[i], right));
    }
}

}  // namespace

void search_sorted(Scalar t, const void* sorted, const void* values, void* out, std::int64_t rows, std::int64_t m,
                   std::int64_t n, bool shared, bool right, bool out_int32) {
    const i64 total = rows * n;
    if (total == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        const auto* s = static_cast<const T*>(sorted);
        const auto* v = static_cast<const T*>(values);
        if (out_int32)
            search_kernel<T, std::int32_t>
                <<<blocks_for(total), kThreads>>>(s, v, static_cast<std::int32_t*>(out), total, m, n, shared, right);
        else
            search_kernel<T, i64>
                <<<blocks_for(total), kThreads>>>(s, v, static_cast<i64*>(out), total, m, n, shared, right);
    });
    check_launch("searchsorted kernel");
}

void gather(Scalar t, const void* src, const std::int64_t* index, std::int64_t stride, void* out, const Walk<3>& walk) {
    if (walk.numel == 0) return;
    dispatch_all(t, [&](auto tag) {
        using T = decltype(tag);
        gather_kernel<T><<<blocks_for(walk.numel), kThreads>>>(static_cast<const T*>(src), index, stride,
                                                               static_cast<T*>(out), walk);
    });
    check_launch("gather kernel");
}

void scatter(Scalar t, void* dst, const std::int64_t* index, std::int64_t stride, const void* src, const Walk<3>& walk,
             bool accumulate) {
    if (walk.numel == 0) return;
    if (accumulate) {
        dispatch(t, [&](auto tag) {
            using T = decltype(tag);
            scatter_kernel<T, true><<<blocks_for(walk.numel), kThreads>>>(static_cast<T*>(dst), index, stride,
                                                                          static_cast<const T*>(src), walk);
        });
    } else {
        dispatch_all(t, [&](auto tag) {
            using T = decltype(tag);
            scatter_kernel<T, false><<<blocks_for(walk.numel), kThreads>>>(static_cast<T*>(dst), index, stride,
                                                                           static_cast<const T*>(src), walk);
        });
    }
    check_launch("scatter kernel");
}

}  // namespace xgrad::kernels::cuda
