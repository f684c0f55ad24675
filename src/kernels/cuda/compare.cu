// CUDA comparisons and logical ops: one thread per output bool, operands read through their strides.
#include "kernels/compare_op.hpp"
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__global__ void compare_kernel(CompareOp op, const T* x, const T* y, bool* out, Walk<2> walk) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[2];
        walk_offsets(walk, i, off);
        out[i] = scalar::compare(op, x[off[0]], y[off[1]]);
    }
}

}  // namespace

void compare(CompareOp op, Scalar t, const void* x, const void* y, bool* out, const Walk<2>& walk) {
    if (walk.numel == 0) return;
    dispatch_all(t, [&](auto tag) {
        using T = decltype(tag);
        compare_kernel<T>
            <<<blocks_for(walk.numel), kThreads>>>(op, static_cast<const T*>(x), static_cast<const T*>(y), out, walk);
    });
    check_launch("compare kernel");
}

}  // namespace xgrad::kernels::cuda
