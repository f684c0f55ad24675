// CUDA kernels that move data on a device: strided copy with dtype conversion, fill, and
// dst += alpha * src. (Copies between the host and a device are cudaMemcpy, in backend.cpp.)
#include "detail/convert.hpp"
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename D, typename S>
__global__ void copy_kernel(D* dst, const S* src, Walk<2> walk) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[2];
        walk_offsets(walk, i, off);
        dst[off[0]] = detail::convert<D>(src[off[1]]);  // the CPU's values for NaN/inf
    }
}

template <typename T>
__global__ void fill_kernel(T* dst, Walk<1> walk, T value) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[1];
        walk_offsets(walk, i, off);
        dst[off[0]] = value;
    }
}

template <typename T>
__global__ void axpy_kernel(T* dst, const T* src, i64 n, T alpha, bool unit) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x)
        if constexpr (std::is_floating_point_v<T>)
            dst[i] = unit ? dst[i] + src[i] : m_fma(alpha, src[i], dst[i]);  // PyTorch's add_(src, alpha), fused
        else
            dst[i] = unit ? dst[i] + src[i] : dst[i] + alpha * src[i];
}

template <typename T>
__global__ void addcmul_kernel(T* dst, const T* a, const T* b, i64 n) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x)
        dst[i] = m_fma(a[i], b[i], dst[i]);
}

}  // namespace

void copy(Scalar dst_t, void* dst, Scalar src_t, const void* src, const Walk<2>& walk) {
    if (walk.numel == 0) return;
    if (walk.contiguous && dst_t == src_t) {
        // Dense and of one type: the copy engine's own device-to-device copy (PyTorch's path, and
        // about 1.5 times the element-by-element kernel's rate on an H200), queued on the same stream.
        if (dst == src) return;
        std::size_t bytes = 0;
        dispatch_all(dst_t, [&](auto tag) { bytes = static_cast<std::size_t>(walk.numel) * sizeof(tag); });
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0), "copy");
        return;
    }
    dispatch_all(dst_t, [&](auto dtag) {
        using D = decltype(dtag);
        dispatch_all(src_t, [&](auto stag) {
            using S = decltype(stag);
            copy_kernel<D, S>
                <<<blocks_for(walk.numel), kThreads>>>(static_cast<D*>(dst), static_cast<const S*>(src), walk);
        });
    });
    check_launch("copy kernel");
}

void fill(Scalar t, void* dst, const Walk<1>& walk, double value) {
    if (walk.numel == 0) return;
    dispatch_all(t, [&](auto tag) {
        using T = decltype(tag);
        fill_kernel<T><<<blocks_for(walk.numel), kThreads>>>(static_cast<T*>(dst), walk, detail::convert<T>(value));
    });
    check_launch("fill kernel");
}

void addcmul(Scalar t, void* dst, const void* a, const void* b, std::int64_t n) {
    if (n == 0) return;
    dispatch_float(t, "addcmul_", [&](auto tag) {
        using T = decltype(tag);
        addcmul_kernel<T>
            <<<blocks_for(n), kThreads>>>(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n);
    });
    check_launch("addcmul kernel");
}

void axpy(Scalar t, void* dst, const void* src, std::int64_t n, double alpha) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        axpy_kernel<T><<<blocks_for(n), kThreads>>>(static_cast<T*>(dst), static_cast<const T*>(src), n,
                                                    static_cast<T>(alpha), alpha == 1.0);
    });
    check_launch("axpy kernel");
}

}  // namespace xgrad::kernels::cuda
