// CUDA kernel of selection by a boolean mask: where(cond, x, y), which masked_fill builds on too.
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__global__ void where_kernel(const bool* cond, const T* x, const T* y, T* out, Walk<4> walk) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[4];
        walk_offsets(walk, i, off);
        out[off[0]] = cond[off[1]] ? x[off[2]] : y[off[3]];
    }
}

}  // namespace

void where(Scalar t, const bool* cond, const void* x, const void* y, void* out, const Walk<4>& walk) {
    if (walk.numel == 0) return;
    dispatch_all(t, [&](auto tag) {
        using T = decltype(tag);
        where_kernel<T><<<blocks_for(walk.numel), kThreads>>>(cond, static_cast<const T*>(x), static_cast<const T*>(y),
                                                              static_cast<T*>(out), walk);
    });
    check_launch("where kernel");
}

}  // namespace xgrad::kernels::cuda
