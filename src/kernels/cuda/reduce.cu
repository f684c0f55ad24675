// CUDA reduction kernels over rows: one block per row (warp shuffles, then one warp over the warps'
// results), or one thread per column for reductions over the leading dim. Sums accumulate in
// double (int64 in int64) and round once, so they agree with the CPU's cascade sums to an ulp or so
// rather than bit for bit; variance is computed in double as on the CPU. max/min with indices,
// products, running sums/products and cumprod's gradient take one thread per row, in the CPU's order.
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

template <typename P, typename T>
__global__ void sum_rows_kernel(const P* in, T* out, i64 rows, i64 width, bool mean) {
    using A = acc_t<T>;
    __shared__ A shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const P* x = in + r * width;
        A s = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) s += static_cast<A>(x[j]);
        s = block_reduce(s, Sum{}, A(0), shared);
        if (threadIdx.x == 0) {
            const T v = static_cast<T>(s);
            out[r] = mean ? v / static_cast<T>(width) : v;  // as the CPU: sum, then a division in T
        }
    }
}

/// Threads down each column in the column sums (sum_columns_kernel, common.cuh).
constexpr int kColumnThreads = 8;

template <typename T>
__global__ void var_rows_kernel(const T* in, T* out, T* mean_out, i64 rows, i64 width, double correction,
                                bool take_sqrt) {
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
            if (mean_out) mean_out[r] = static_cast<T>(m);
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

/// One thread per row: the extreme value and the index of its first occurrence (the first NaN wins).
template <typename T>
__global__ void arg_extreme_kernel(const T* in, T* values, i64* indices, i64 rows, i64 width, bool max) {
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r < rows; r += i64{gridDim.x} * blockDim.x) {
        const T* x = in + r * width;
        i64 at = 0;
        for (i64 i = 1; i < width && !is_nan(x[at]); ++i)
            if (is_nan(x[i]) || (max ? x[i] > x[at] : x[i] < x[at])) at = i;
        values[r] = x[at];
        indices[r] = at;
    }
}

/// The p-norm of each row, a thread per row in the CPU kernel's order (kernels::Backend::norm_rows).
template <typename T>
__global__ void norm_rows_kernel(const T* in, T* out, i64 rows, i64 width, T p, bool lanes) {
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r < rows; r += i64{gridDim.x} * blockDim.x) {
        const T* x = in + r * width;
        T s = 0;
        i64 i = 0;
        if (p == T(2) && lanes) {
            T acc[8] = {};
            for (; i + 8 <= width; i += 8)
                for (int k = 0; k < 8; ++k) acc[k] = fma(x[i + k], x[i + k], acc[k]);
            s = acc[0];
            for (int k = 1; k < 8; ++k) s += acc[k];
            for (; i + 4 <= width; i += 4)  // the CPU's rest: four squares rounded on their own, then fused
                for (int k = 0; k < 4; ++k) {
                    if constexpr (sizeof(T) == 4)
                        s = __fadd_rn(s, __fmul_rn(x[i + k], x[i + k]));
                    else
                        s = __dadd_rn(s, __dmul_rn(x[i + k], x[i + k]));
                }
        }
        if (p == T(2)) {
            for (; i < width; ++i) s = fma(x[i], x[i], s);
            out[r] = sqrt(s);
        } else if (p == T(1)) {
            for (; i < width; ++i) s += fabs(x[i]);
            out[r] = s;
        } else {
            for (; i < width; ++i) s += pow(fabs(x[i]), p);
            out[r] = pow(s, T(1) / p);
        }
    }
}

template <typename T>
__global__ void prod_kernel(const T* in, T* out, i64 rows, i64 width) {
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r < rows; r += i64{gridDim.x} * blockDim.x) {
        T p = 1;
        for (i64 i = 0; i < width; ++i) p *= in[r * width + i];
        out[r] = p;
    }
}

/// Running sums/products accumulate as the CPU's: in double for floating types, int64 for int64.
template <typename T>
__global__ void scan_kernel(const T* in, T* out, i64 rows, i64 width, bool prod, bool reverse) {
    using A = acc_t<T>;
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r < rows; r += i64{gridDim.x} * blockDim.x) {
        A acc = prod ? 1 : 0;
        for (i64 j = 0; j < width; ++j) {
            const i64 i = r * width + (reverse ? width - 1 - j : j);
            acc = prod ? acc * static_cast<A>(in[i]) : acc + static_cast<A>(in[i]);
            out[i] = static_cast<T>(acc);
        }
    }
}

}  // namespace

void sum_rows(Scalar in_t, Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool outer,
              bool mean) {
    if (rows == 0) return;
    auto launch = [&](auto in_tag, auto out_tag) {
        using P = decltype(in_tag);
        using T = decltype(out_tag);
        const P* x = static_cast<const P*>(in);
        T* o = static_cast<T*>(out);
        if (outer) {
            const auto blocks = static_cast<unsigned>((rows + 31) / 32);
            sum_columns_kernel<P, T, kColumnThreads><<<blocks, dim3(32, kColumnThreads)>>>(x, o, rows, width, mean);
        } else {
            sum_rows_kernel<P, T><<<row_blocks(rows), row_threads(width)>>>(x, o, rows, width, mean);
        }
    };
    if (in_t == t) {
        dispatch(t, [&](auto tag) { launch(tag, tag); });
    } else if (t == Scalar::kInt64 && (in_t == Scalar::kBool || in_t == Scalar::kUInt8 || in_t == Scalar::kInt32)) {
        dispatch_all(in_t, [&](auto tag) {
            if constexpr (std::is_integral_v<decltype(tag)>) launch(tag, i64{});  // (always: in_t is narrow)
        });
    } else {
        throw std::invalid_argument(
            "sum kernel: an input of another type than its output must be bool, uint8 or "
            "int32, summed into int64");
    }
    check_launch("sum kernel");
}

void var_rows(Scalar t, const void* in, void* out, void* mean, std::int64_t rows, std::int64_t width, double correction,
              bool take_sqrt) {
    if (rows == 0) return;
    dispatch_float(t, "var", [&](auto tag) {
        using T = decltype(tag);
        var_rows_kernel<T><<<row_blocks(rows), row_threads(width)>>>(
            static_cast<const T*>(in), static_cast<T*>(out), static_cast<T*>(mean), rows, width, correction, take_sqrt);
    });
    check_launch("var kernel");
}

void norm_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, double p, bool lanes) {
    if (rows == 0) return;
    dispatch_float(t, "norm", [&](auto tag) {
        using T = decltype(tag);
        norm_rows_kernel<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(out), rows,
                                                            width, static_cast<T>(p), lanes);
    });
    check_launch("norm kernel");
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

void arg_extreme_rows(Scalar t, const void* in, void* values, void* indices, std::int64_t rows, std::int64_t width,
                      bool max) {
    if (rows == 0 || width == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        arg_extreme_kernel<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(values),
                                                              static_cast<i64*>(indices), rows, width, max);
    });
    check_launch("max/min kernel");
}

void prod_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width) {
    if (rows == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        prod_kernel<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(out), rows, width);
    });
    check_launch("prod kernel");
}

void scan_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool prod, bool reverse) {
    if (rows == 0 || width == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        scan_kernel<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(in), static_cast<T*>(out), rows, width,
                                                       prod, reverse);
    });
    check_launch(prod ? "cumprod kernel" : "cumsum kernel");
}

}  // namespace xgrad::kernels::cuda
