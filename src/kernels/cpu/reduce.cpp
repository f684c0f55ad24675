// CPU reduction kernels over rows: sums in PyTorch's order, variance, max/min.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/sum_order.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// Rows per thread chunk so that a chunk holds at least kGrain elements.
std::int64_t row_grain(std::int64_t width) {
    return std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(width, 1));
}

/// int64 adds up exactly in int64, as PyTorch (a double would round past 2^53).
template <typename T>
T row_sum(const T* x, std::int64_t n) {
    T s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += x[i];
    return s;
}

/// Σ (x - mean)² over a row, in double with independent accumulators (a chain of dependent adds
/// runs at a tenth of memory bandwidth).
template <typename T>
double row_sum_sq(const T* x, std::int64_t n, double mean) {
    constexpr int kAcc = 8;
    double acc[kAcc] = {};
    std::int64_t i = 0;
    for (; i + kAcc <= n; i += kAcc)
        for (int k = 0; k < kAcc; ++k) {
            const double d = static_cast<double>(x[i + k]) - mean;
            acc[k] += d * d;
        }
    for (; i < n; ++i) {
        const double d = static_cast<double>(x[i]) - mean;
        acc[0] += d * d;
    }
    double s = 0;
    for (double v : acc) s += v;
    return s;
}

/// Σ x over a row in double, with independent accumulators.
template <typename T>
double row_sum_double(const T* x, std::int64_t n) {
    constexpr int kAcc = 8;
    double acc[kAcc] = {};
    std::int64_t i = 0;
    for (; i + kAcc <= n; i += kAcc)
        for (int k = 0; k < kAcc; ++k) acc[k] += static_cast<double>(x[i + k]);
    for (; i < n; ++i) acc[0] += static_cast<double>(x[i]);
    double s = 0;
    for (double v : acc) s += v;
    return s;
}

}  // namespace

void sum_rows(const RowsView& v, const Tensor& out, bool mean) {
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        if constexpr (std::is_integral_v<T>) {
            if (v.outer) {
                std::fill(o, o + v.rows, T(0));
                for (std::int64_t i = 0; i < v.width; ++i)
                    for (std::int64_t c = 0; c < v.rows; ++c) o[c] += in[i * v.rows + c];
            } else {
                for (std::int64_t r = 0; r < v.rows; ++r) o[r] = static_cast<T>(row_sum(in + r * v.width, v.width));
            }
        } else {
            if (v.outer) {
                outer_sum(in, v.width, v.rows, o);
            } else {
                parallel_for(0, v.rows, row_grain(v.width), [&](std::int64_t lo, std::int64_t hi) {
                    for (std::int64_t r = lo; r < hi; ++r) o[r] = inner_sum(in + r * v.width, v.width);
                });
            }
            // PyTorch's CPU mean is sum() then a division by the count, both in the tensor's dtype.
            if (mean)
                for (std::int64_t r = 0; r < v.rows; ++r) o[r] = o[r] / static_cast<T>(v.width);
        }
    });
}

void var_rows(const RowsView& v, const Tensor& out, double correction, bool take_sqrt) {
    detail::dispatch_float(out.dtype(), "var", [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        const double n = static_cast<double>(v.width);
        parallel_for(0, v.rows, row_grain(v.width), [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* x = in + r * v.width;
                const double m = row_sum_double(x, v.width) / n;
                const double var = row_sum_sq(x, v.width, m) / std::max(0.0, n - correction);
                o[r] = static_cast<T>(take_sqrt ? std::sqrt(var) : var);
            }
        });
    });
}

void extreme_rows(const RowsView& v, const Tensor& out, bool max) {
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        parallel_for(0, v.rows, row_grain(v.width), [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* x = in + r * v.width;
                T best = x[0];
                for (std::int64_t i = 1; i < v.width; ++i) {
                    if (x[i] != x[i]) {  // NaN propagates, as PyTorch
                        best = x[i];
                        break;
                    }
                    best = max ? std::max(best, x[i]) : std::min(best, x[i]);
                }
                o[r] = best;
            }
        });
    });
}

void first_hit_rows(const RowsView& v, const Tensor& out) {
    detail::dispatch_float(out.dtype(), "max", [&](auto tag) {
        using T = decltype(tag);
        const T* h = v.input.impl()->data<T>();
        T* f = out.impl()->data<T>();
        for (std::int64_t r = 0; r < v.rows; ++r) {
            bool seen = false;
            for (std::int64_t i = 0; i < v.width; ++i) {
                const T x = h[r * v.width + i];
                f[r * v.width + i] = seen ? T(0) : x;
                seen = seen || x != T(0);
            }
        }
    });
}

}  // namespace xgrad::kernels::cpu
