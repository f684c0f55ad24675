// CUDA reduction kernels over rows: one block per row (warp shuffles, then one warp over the warps'
// results), or one thread per column for reductions over the leading dim. Sums accumulate in
// double (int64 in int64) and round once, so they agree with the CPU's cascade sums to an ulp or so
// rather than bit for bit; variance is computed in double as on the CPU.
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename T>
__global__ void sum_rows_kernel(const T* in, T* out, i64 rows, i64 width, bool mean) {
    using A = acc_t<T>;
    __shared__ A shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* x = in + r * width;
        A s = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) s += static_cast<A>(x[j]);
        s = block_reduce(s, Sum{}, A(0), shared);
        if (threadIdx.x == 0) {
            const T v = static_cast<T>(s);
            out[r] = mean ? v / static_cast<T>(width) : v;  // as the CPU: sum, then a division in T
        }
    }
}

/// Column sums of a (width × rows) block: 32 columns per block, 8 threads down each column.
constexpr int kColumnThreads = 8;

template <typename T>
__global__ void sum_columns_kernel(const T* in, T* out, i64 columns, i64 width, bool mean) {
    using A = acc_t<T>;
    __shared__ A shared[kColumnThreads][33];
    const i64 c = blockIdx.x * i64{32} + threadIdx.x;
    A s = 0;
    if (c < columns)
        for (i64 i = threadIdx.y; i < width; i += kColumnThreads) s += static_cast<A>(in[i * columns + c]);
    shared[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < columns) {
        for (int k = 1; k < kColumnThreads; ++k) s += shared[k][threadIdx.x];
        const T v = static_cast<T>(s);
        out[c] = mean ? v / static_cast<T>(width) : v;
    }
}

template <typename T>
__global__ void var_rows_kernel(const T* in, T* out, i64 rows, i64 width, double correction, bool take_sqrt) {
    __shared__ double shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* x = in + r * width;
        double s = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) s += static_cast<double>(x[j]);
        const double m = block_reduce(s, Sum{}, 0.0, shared) / static_cast<double>(width);
        double q = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
            const double d = static_cast<double>(x[j]) - m;
            q += d * d;
        }
        q = block_reduce(q, Sum{}, 0.0, shared);
        if (threadIdx.x == 0) {
            const double var = q / fmax(0.0, static_cast<double>(width) - correction);
            out[r] = static_cast<T>(take_sqrt ? sqrt(var) : var);
        }
    }
}

/// Largest (or smallest) of each row; every thread starts from the row's first element, which is
/// part of the result anyway. NaN propagates.
template <typename T>
__global__ void extreme_rows_kernel(const T* in, T* out, i64 rows, i64 width, bool max) {
    __shared__ T shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* x = in + r * width;
        T best = x[0];
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) best = max ? nan_max(best, x[j]) : nan_min(best, x[j]);
        best = max ? block_reduce(best, Max{}, x[0], shared) : block_reduce(best, Min{}, x[0], shared);
        if (threadIdx.x == 0) out[r] = best;
    }
}

/// One thread per row: keeps the first non-zero of the row, zeroes the rest.
template <typename T>
__global__ void first_hit_kernel(const T* h, T* f, i64 rows, i64 width) {
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r < rows; r += i64{gridDim.x} * blockDim.x) {
        bool seen = false;
        for (i64 i = 0; i < width; ++i) {
            const T x = h[r * width + i];
            f[r * width + i] = seen ? T(0) : x;
            seen = seen || x != T(0);
        }
    }
}

}  // namespace

void sum_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool outer, bool mean) {
    if (rows == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        const T* x = static_cast<const T*>(in);
        T* o = static_cast<T*>(out);
        if (outer) {
            const auto blocks = static_cast<unsigned>((rows + 31) / 32);
            sum_columns_kernel<T><<<blocks, dim3(32, kColumnThreads)>>>(x, o, rows, width, mean);
        } else {
            sum_rows_kernel<T><<<row_blocks(rows), row_threads(width)>>>(x, o, rows, width, mean);
        }
    });
    check_launch("sum kernel");
}

void var_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, double correction,
              bool take_sqrt) {
    if (rows == 0) return;
    dispatch_float(t, "var", [&](auto tag) {
        using T = decltype(tag);
        var_rows_kernel<T><<<row_blocks(rows), row_threads(width)>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                                     rows, width, correction, take_sqrt);
    });
    check_launch("var kernel");
}

void extreme_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool max) {
    if (rows == 0 || width == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        extreme_rows_kernel<T><<<row_blocks(rows), row_threads(width)>>>(static_cast<const T*>(in),
                                                                         static_cast<T*>(out), rows, width, max);
    });
    check_launch("max/min kernel");
}

void first_hit_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width) {
    if (rows == 0 || width == 0) return;
    dispatch_float(t, "max", [&](auto tag) {
        using T = decltype(tag);
        first_hit_kernel<T>
            <<<blocks_for(rows), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(out), rows, width);
    });
    check_launch("max/min backward kernel");
}

}  // namespace xgrad::kernels::cuda
