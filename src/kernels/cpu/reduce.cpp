// CPU reduction kernels over rows: sums in PyTorch's order, variance, max/min.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"

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

// ---- PyTorch's summation order ------------------------------------------------------------------
// PyTorch's CPU sum (the cascade sum of its AVX2 kernels) adds float32 and float64 in their own
// precision, in an order fixed by the shape. xgrad adds in the same order, so sums and means are
// bit-identical to PyTorch's: the notebooks print means of normalised rows, which are pure rounding
// noise (2.4835e-09) and depend on every bit. Exact for one reduction of up to 32768 elements;
// beyond that PyTorch may split the work between threads. Other layouts than "reduced dims last"
// or "reduced dims first" are summed in the inner order after a permutation.

/// Elements of one AVX2 register: the width of PyTorch's vector accumulators.
template <typename T>
constexpr int kLanes = static_cast<int>(32 / sizeof(T));

/// W accumulators added lane by lane, like one vector register.
template <typename T, int W>
struct Lanes {
    T v[W] = {};
    Lanes& operator+=(const Lanes& o) {
        for (int i = 0; i < W; ++i) v[i] += o.v[i];
        return *this;
    }
    static Lanes load(const T* p) {
        Lanes l;
        for (int i = 0; i < W; ++i) l.v[i] = p[i];
        return l;
    }
};

std::int64_t ceil_log2(std::int64_t x) {
    std::int64_t r = 0;
    while ((std::int64_t{1} << r) < x) ++r;
    return r;
}

/// Sums `size` rows of N accumulators (`get(i, k)`: row i, column k) in a cascade: partial sums move
/// up one of four levels every 2^power rows, so that only numbers of similar magnitude are added.
template <typename Acc, int N, typename Get>
std::array<Acc, N> cascade_sum(std::int64_t size, Get&& get) {
    constexpr int levels = 4;
    const std::int64_t power = std::max<std::int64_t>(4, ceil_log2(size) / levels);
    const std::int64_t step = std::int64_t{1} << power, mask = step - 1;
    std::array<std::array<Acc, N>, levels> acc{};
    std::int64_t i = 0;
    while (i + step <= size) {
        for (std::int64_t j = 0; j < step; ++j, ++i)
            for (int k = 0; k < N; ++k) acc[0][k] += get(i, k);
        for (int j = 1; j < levels; ++j) {
            for (int k = 0; k < N; ++k) {
                acc[j][k] += acc[j - 1][k];
                acc[j - 1][k] = Acc{};
            }
            if ((i & (mask << (j * power))) != 0) break;
        }
    }
    for (; i < size; ++i)
        for (int k = 0; k < N; ++k) acc[0][k] += get(i, k);
    for (int j = 1; j < levels; ++j)
        for (int k = 0; k < N; ++k) acc[0][k] += acc[j][k];
    return acc[0];
}

/// A row of `size` elements (`get(i)`) as four interleaved cascades, the tail added to the first,
/// then the four combined in order.
template <typename Acc, typename Get>
Acc interleaved_sum(std::int64_t size, Get&& get) {
    const std::int64_t quads = size / 4;
    auto part = cascade_sum<Acc, 4>(quads, [&](std::int64_t i, int k) { return get(i * 4 + k); });
    for (std::int64_t i = quads * 4; i < size; ++i) part[0] += get(i);
    for (int k = 1; k < 4; ++k) part[0] += part[k];
    return part[0];
}

/// The sum of a contiguous row, in PyTorch's order: vector accumulators for rows of at least one
/// register, the scalar tail first and then the lanes in order; a scalar cascade for shorter rows.
template <typename T>
T inner_sum(const T* x, std::int64_t n) {
    constexpr int W = kLanes<T>;
    if (n < W) return interleaved_sum<T>(n, [&](std::int64_t i) { return x[i]; });
    const std::int64_t vectors = n / W;
    auto lanes = interleaved_sum<Lanes<T, W>>(vectors, [&](std::int64_t i) { return Lanes<T, W>::load(x + i * W); });
    T total = 0;
    for (std::int64_t k = vectors * W; k < n; ++k) total += x[k];
    for (int k = 0; k < W; ++k) total += lanes.v[k];
    return total;
}

/// Column sums of a contiguous (rows × cols) block, in PyTorch's order for reductions over leading
/// dimensions: blocks of four registers of columns share a cascade, then single registers, then
/// single columns; with fewer columns than a register, groups of four scalar columns.
template <typename T>
void outer_sum(const T* x, std::int64_t rows, std::int64_t cols, T* out) {
    constexpr int W = kLanes<T>;
    using L = Lanes<T, W>;
    if (cols == 1) {  // PyTorch sees a contiguous inner reduction here
        out[0] = inner_sum(x, rows);
        return;
    }
    std::int64_t j = 0;
    auto column = [&](std::int64_t c) {
        return interleaved_sum<T>(rows, [&](std::int64_t i) { return x[i * cols + c]; });
    };
    if (cols >= W) {
        for (; j + 4 * W <= cols; j += 4 * W) {
            auto s = cascade_sum<L, 4>(rows, [&](std::int64_t i, int k) { return L::load(x + i * cols + j + k * W); });
            for (int k = 0; k < 4; ++k) std::copy(s[k].v, s[k].v + W, out + j + k * W);
        }
        for (; j + W <= cols; j += W) {
            L s = interleaved_sum<L>(rows, [&](std::int64_t i) { return L::load(x + i * cols + j); });
            std::copy(s.v, s.v + W, out + j);
        }
    } else {
        for (; j + 3 < cols; j += 4) {
            auto s = cascade_sum<T, 4>(rows, [&](std::int64_t i, int k) { return x[i * cols + j + k]; });
            std::copy(s.begin(), s.end(), out + j);
        }
    }
    for (; j < cols; ++j) out[j] = column(j);
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
