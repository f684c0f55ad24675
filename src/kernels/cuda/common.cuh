// What every CUDA kernel file shares: launch sizes, strided walks, dtype dispatch, the maths
// functions per type, and block reductions. Included by the .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/runtime.hpp"

namespace xgrad::kernels::cuda {

using i64 = std::int64_t;

// ---- launch sizes -------------------------------------------------------------------------------------

/// Threads of an elementwise block; grid-stride loops cover what kMaxBlocks blocks do not.
inline constexpr int kThreads = 256;
inline constexpr i64 kMaxBlocks = 65535;

inline unsigned blocks_for(i64 n) {
    const i64 b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

/// Threads of a block that reduces one row of `width` elements: a multiple of the warp size.
inline int row_threads(i64 width) {
    return width >= 4096 ? 512 : width >= 1024 ? 256 : width >= 256 ? 128 : width >= 64 ? 64 : 32;
}

/// Blocks for one block per row, rows beyond the grid taken by a grid-stride loop.
inline unsigned row_blocks(i64 rows) {
    constexpr i64 kMaxRowBlocks = i64{1} << 20;
    return static_cast<unsigned>(rows < kMaxRowBlocks ? rows : kMaxRowBlocks);
}

// ---- dispatch -------------------------------------------------------------------------------------------

/// The name of a narrow element type, for the error of a kernel not built for it.
inline const char* narrow_name(Scalar t) {
    return t == Scalar::kBool ? "torch.bool" : t == Scalar::kInt32 ? "torch.int32" : "torch.uint8";
}

/// Calls `f(T{})` with T the C++ type of `t`, for the compute types (float32, float64, int64): ops
/// bring bool, uint8 and int32 operands to int64 or a floating type first.
template <typename F>
void dispatch(Scalar t, F&& f) {
    switch (t) {
        case Scalar::kFloat32:
            f(float{});
            return;
        case Scalar::kFloat64:
            f(double{});
            return;
        case Scalar::kInt64:
            f(i64{});
            return;
        default:
            throw std::invalid_argument(std::string("xgrad: this operation does not support ") + narrow_name(t) +
                                        " tensors");
    }
}

/// Like dispatch, for every element type (bool, uint8 and int32 too): copies, fills, indexing.
template <typename F>
void dispatch_all(Scalar t, F&& f) {
    switch (t) {
        case Scalar::kBool:
            f(bool{});
            return;
        case Scalar::kInt32:
            f(std::int32_t{});
            return;
        case Scalar::kUInt8:
            f(std::uint8_t{});
            return;
        default:
            dispatch(t, static_cast<F&&>(f));
    }
}

/// dispatch for floating types; the tensor side has already refused int64 with the op's name.
template <typename F>
void dispatch_float(Scalar t, const char* op, F&& f) {
    if (t == Scalar::kFloat32)
        f(float{});
    else if (t == Scalar::kFloat64)
        f(double{});
    else
        throw std::invalid_argument(std::string(op) + ": needs a floating-point tensor, got torch.int64");
}

// ---- strided walks --------------------------------------------------------------------------------------

/// The offsets of element i of a walk in each of its N operands.
template <int N>
__device__ inline void walk_offsets(const Walk<N>& w, i64 i, i64 (&off)[N]) {
    if (w.contiguous) {
        for (int k = 0; k < N; ++k) off[k] = i;
        return;
    }
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = w.ndim - 1; d >= 0; --d) {
        const i64 size = w.sizes[d];
        const i64 idx = i % size;
        i /= size;
        for (int k = 0; k < N; ++k) off[k] += idx * w.strides[k][d];
    }
}

// ---- maths per type (CUDA's correctly rounded +, -, *, /, sqrt; nvcc runs with --fmad=false) ----------

__device__ inline float m_exp(float x) {
    return expf(x);
}
__device__ inline double m_exp(double x) {
    return exp(x);
}
__device__ inline float m_log(float x) {
    return logf(x);
}
__device__ inline double m_log(double x) {
    return log(x);
}
__device__ inline float m_sqrt(float x) {
    return sqrtf(x);
}
__device__ inline double m_sqrt(double x) {
    return sqrt(x);
}
__device__ inline float m_tanh(float x) {
    return tanhf(x);
}
__device__ inline double m_tanh(double x) {
    return tanh(x);
}
__device__ inline float m_erf(float x) {
    return erff(x);
}
__device__ inline double m_erf(double x) {
    return erf(x);
}
__device__ inline float m_pow(float x, float y) {
    return powf(x, y);
}
__device__ inline double m_pow(double x, double y) {
    return pow(x, y);
}
__device__ inline float m_abs(float x) {
    return fabsf(x);
}
__device__ inline double m_abs(double x) {
    return fabs(x);
}
__device__ inline float m_fma(float a, float b, float c) {
    return fmaf(a, b, c);
}
__device__ inline double m_fma(double a, double b, double c) {
    return fma(a, b, c);
}

template <typename T>
__device__ inline T m_inf() {
    return static_cast<T>(INFINITY);
}

template <typename T>
__device__ inline bool is_nan(T x) {
    return x != x;
}

/// max/min with NaN propagating, as PyTorch's max(): a NaN operand wins.
template <typename T>
__device__ inline T nan_max(T a, T b) {
    return is_nan(a) ? a : is_nan(b) ? b : (a < b ? b : a);
}
template <typename T>
__device__ inline T nan_min(T a, T b) {
    return is_nan(a) ? a : is_nan(b) ? b : (b < a ? b : a);
}

// ---- block reductions (blockDim.x a multiple of 32, every thread of the block calling) -----------------

struct Sum {
    template <typename T>
    __device__ T operator()(T a, T b) const {
        return a + b;
    }
};
struct Max {
    template <typename T>
    __device__ T operator()(T a, T b) const {
        return nan_max(a, b);
    }
};
struct Min {
    template <typename T>
    __device__ T operator()(T a, T b) const {
        return nan_min(a, b);
    }
};

template <typename T, typename Op>
__device__ inline T warp_reduce(T v, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

/// The reduction of every thread's `v` over the block, returned to every thread. `identity` fills
/// the lanes of the last step that have no warp behind them. `shared` holds 32 values.
template <typename T, typename Op>
__device__ inline T block_reduce(T v, Op op, T identity, T* shared) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_reduce(v, op);
    __syncthreads();  // `shared` may still be read by a previous reduction
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_reduce(lane < warps ? shared[lane] : identity, op);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}

/// Sums accumulate in double for floating types (one rounding at the end, so the result is within
/// an ulp of the exact sum, as the CPU's cascade is) and in int64 for int64.
template <typename T>
struct Acc {
    using type = double;
};
template <>
struct Acc<i64> {
    using type = i64;
};
template <typename T>
using acc_t = typename Acc<T>::type;

/// Column sums of a contiguous (rows × columns) block of P: out[c] = Σ_i in[i][c] as T (divided by
/// `rows` when `mean`), accumulated in acc_t<T> (int64 for bool, uint8 or int32 summed into int64).
/// A block covers 32 columns with kDown threads down each (each adds every kDown-th row); then those
/// kDown sums are added in order. Launch with ((columns + 31) / 32) blocks of dim3(32, kDown).
template <typename P, typename T, int kDown>
__global__ void sum_columns_kernel(const P* in, T* out, i64 columns, i64 rows, bool mean) {
    using A = acc_t<T>;
    __shared__ A shared[kDown][33];
    const i64 c = blockIdx.x * i64{32} + threadIdx.x;
    A s = 0;
    if (c < columns)
        for (i64 i = threadIdx.y; i < rows; i += kDown) s += static_cast<A>(in[i * columns + c]);
    shared[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < columns) {
        for (int k = 1; k < kDown; ++k) s += shared[k][threadIdx.x];
        const T v = static_cast<T>(s);
        out[c] = mean ? v / static_cast<T>(rows) : v;
    }
}

}  // namespace xgrad::kernels::cuda
