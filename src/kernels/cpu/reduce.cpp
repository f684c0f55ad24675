// CPU reduction kernels over rows: sums in PyTorch's order, variance, max/min (with indices),
// products and running sums/products.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "detail/iter_order.hpp"
#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/sum_order.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// Rows whose chains of dependent operations (a product, or a running sum or product, element by
/// element) are interleaved, so that the core overlaps them. A scan reads and writes each row: with
/// eight, rows 4 KiB apart (width 1024 floats, as a transposed 1024-row tensor has) put 16 lines in one
/// set of the level-1 cache, and the scan ran 1.7x slower than with four.
constexpr std::int64_t kProdChains = 8, kScanChains = 4;

/// The product of x[0, n). With `lanes`, in the order of PyTorch 1.13's CPU reduction over a
/// contiguous innermost dim (aten's vectorized_inner_reduction, AVX2 vectors of W = 32 / sizeof(T)
/// lanes): four vectors of lanes multiply along the row in blocks of 4W, then (v0 * v1) * (v2 * v3)
/// lane by lane, its lanes in order, and the rest of the row one element at a time. Without, element
/// by element from the row's start, as PyTorch's reduction over an outer dim (and this one below 4W
/// elements). The lanes are independent chains, which GCC vectorises: a long row 9x faster. `p` is
/// the product so far (PyTorch's output, which the row multiplies into).
template <typename T>
T row_prod(const T* x, std::int64_t n, bool lanes, T p = 1) {
    constexpr std::int64_t kW = 32 / static_cast<std::int64_t>(sizeof(T));
    const std::int64_t count = lanes ? n / (4 * kW) : 0;
    if (count > 0) {
        std::array<T, 4 * kW> acc;
        std::copy(x, x + 4 * kW, acc.begin());
        for (std::int64_t i = 1; i < count; ++i) {
            const T* block = x + i * 4 * kW;
            for (std::int64_t k = 0; k < 4 * kW; ++k) acc[static_cast<std::size_t>(k)] *= block[k];
        }
        std::array<T, kW> v;
        for (std::size_t k = 0; k < kW; ++k) v[k] = (acc[k] * acc[kW + k]) * (acc[2 * kW + k] * acc[3 * kW + k]);
        T b = v[0];
        for (std::size_t k = 1; k < kW; ++k) b *= v[k];
        p *= b;
    }
    for (std::int64_t i = count * 4 * kW; i < n; ++i) p *= x[i];
    return p;
}

/// Integers add up exactly in int64, as PyTorch (a double would round past 2^53), wrapping on
/// overflow; bool, uint8 and int32 are widened as they are read. Eight running sums, which the
/// compiler keeps in several vector registers: with one, the loop waited on each load (2.4 times
/// PyTorch's time on 1.5M elements). They add as unsigned integers, whose wrapping is defined, so
/// that the order of the additions cannot change the result.
template <typename T>
std::int64_t row_sum(const T* x, std::int64_t n) {
    using U = std::uint64_t;
    constexpr std::int64_t kWays = 8;
    U acc[kWays] = {};
    std::int64_t i = 0;
    for (; i + kWays <= n; i += kWays)
        for (std::int64_t k = 0; k < kWays; ++k) acc[k] += static_cast<U>(static_cast<std::int64_t>(x[i + k]));
    U s = 0;
    for (std::int64_t k = 0; k < kWays; ++k) s += acc[k];
    for (; i < n; ++i) s += static_cast<U>(static_cast<std::int64_t>(x[i]));
    return static_cast<std::int64_t>(s);
}

/// Sums of integer rows (bool, uint8, int32 or int64) into int64 `o`. Narrow integers are read in
/// place (PyTorch's sum of them is int64; converting the input to int64 first took 2 to 3.5 times
/// PyTorch's time).
template <typename T>
void int_sum_rows(const T* in, const RowsView& v, std::int64_t* o) {
    if (v.outer) {  // batches of (width, cols): each input row adds to every output of its batch
        // A buffer of its own rather than o read as uint64: through o (which the input may alias, as far
        // as GCC knows) the loop stopped vectorising, 3 to 4 times slower on a 1024x1500 mask.
        const std::int64_t cols = v.rows / std::max<std::int64_t>(v.batches, 1);
        std::vector<std::uint64_t> acc(static_cast<std::size_t>(cols));
        for (std::int64_t b = 0; b < v.batches; ++b) {
            std::fill(acc.begin(), acc.end(), 0);
            for (std::int64_t i = 0; i < v.width; ++i) {
                const T* row = in + (b * v.width + i) * cols;
                for (std::int64_t c = 0; c < cols; ++c)
                    acc[static_cast<std::size_t>(c)] += static_cast<std::uint64_t>(static_cast<std::int64_t>(row[c]));
            }
            for (std::int64_t c = 0; c < cols; ++c)
                o[b * cols + c] = static_cast<std::int64_t>(acc[static_cast<std::size_t>(c)]);
        }
        return;
    }
    parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t r = lo; r < hi; ++r) o[r] = row_sum(in + r * v.width, v.width);
    });
}

}  // namespace

/// sum_rows of an in-place view (RowsView::in_place): each row's slices, one after another (an odometer
/// over the reduced dims outside the innermost run), summed as PyTorch sums them and added in order.
template <typename T>
void sum_slices_in_place(const RowsView& v, T* o) {
    const Tensor& t = v.input;
    const T* base = t.impl()->data<T>();
    const Shape& shape = t.shape();
    const Strides& strides = t.strides();
    const int nd = static_cast<int>(t.dim()), rd = v.row_dims;
    // The innermost run: the trailing dims whose sizes multiply to `slice`; its step is the stride of
    // its innermost dim of size > 1.
    int inner = nd;
    for (std::int64_t run = 1; run < v.slice;) run *= shape[--inner];
    std::int64_t step = 1;
    for (int d = nd - 1; d >= inner; --d)
        if (shape[d] != 1) {
            step = strides[d];
            break;
        }
    const std::int64_t slices = v.width / v.slice;
    parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
        Strides index(static_cast<std::size_t>(nd), 0);
        for (std::int64_t r = lo; r < hi; ++r) {
            std::int64_t at = 0;
            for (std::int64_t d = rd - 1, rest = r; d >= 0; --d) {
                at += rest % shape[d] * strides[d];
                rest /= shape[d];
            }
            T acc = 0;
            for (std::int64_t j = 0; j < slices; ++j) {
                const T* x = base + at;
                acc += step == 1 ? inner_sum(x, v.slice)
                                 : interleaved_sum<T>(v.slice, [x, step](std::int64_t i) { return x[i * step]; });
                for (int d = inner - 1; d >= rd; --d) {
                    if (++index[d] < shape[d]) {
                        at += strides[d];
                        break;
                    }
                    at -= (shape[d] - 1) * strides[d];
                    index[d] = 0;
                }
            }
            o[r] = acc;
        }
    });
}

using detail::iter_dims;
using detail::IterDim;

/// The layout of RowsView::source_dims's input in its own dims' order: their sizes, the input's
/// strides, and the output's (contiguous over the kept dims in their order, 0 along the reduced ones).
struct SourceLayout {
    Strides shape, in, out;
    std::int64_t outputs = 1;
};

/// `whole`: as for a reduction of every dim without keepdim (x.mean() of var's std_var_all_cpu).
SourceLayout source_layout(const RowsView& v, bool whole = false) {
    const Tensor& t = v.input;
    const int nd = static_cast<int>(t.dim());
    SourceLayout l{Strides(static_cast<std::size_t>(nd), 1), Strides(static_cast<std::size_t>(nd), 0), {}};
    std::vector<bool> reduced(static_cast<std::size_t>(nd), true);
    for (int i = 0; i < nd; ++i) {
        const auto d = static_cast<std::size_t>(v.source_dims[static_cast<std::size_t>(i)]);
        l.shape[d] = t.size(i);
        l.in[d] = t.strides()[static_cast<std::size_t>(i)];
        reduced[d] = whole || i >= v.row_dims;
    }
    l.out = detail::reduction_out_strides(l.shape, reduced, v.keepdim && !whole);
    for (int i = 0; i < v.row_dims && !whole; ++i) l.outputs *= t.size(i);
    return l;
}

/// Calls block(input offset, output offset) for each index of the dims after the first two (the third
/// fastest), as TensorIterator's loop over its 2-D blocks.
template <typename F>
void for_each_block(const std::vector<IterDim>& dims, F&& block) {
    Strides index(dims.size(), 0);
    for (std::int64_t at = 0, to = 0;;) {
        block(at, to);
        std::size_t d = 2;
        for (; d < dims.size(); ++d) {
            at += dims[d][1];
            to += dims[d][2];
            if (++index[d] < dims[d][0]) break;
            at -= dims[d][0] * dims[d][1];
            to -= dims[d][0] * dims[d][2];
            index[d] = 0;
        }
        if (d == dims.size()) return;
    }
}

/// sum_rows of a strided input (RowsView::source_dims), read in place in PyTorch's order: its
/// TensorIterator's dims (iter_dims), the first two run as 2-D blocks (block_sums) for each index of
/// the others, each block's sums added into outputs that start at 0.
template <typename T>
void sum_strided_in_place(const RowsView& v, T* o, const SourceLayout& l) {
    const std::vector<IterDim> dims = iter_dims(l.shape, l.in, l.out);
    // The 2-D block: the reduced dim first; both dims kept (every reduced dim has size 1), each output
    // is 0 plus its element.
    std::int64_t size0 = dims[0][0], size1 = dims[1][0], a0 = dims[0][1], a1 = dims[1][1], o0 = dims[0][2],
                 o1 = dims[1][2];
    if (o0 != 0 && o1 == 0) {
        std::swap(size0, size1);
        std::swap(a0, a1);
        std::swap(o0, o1);
    }
    const T* base = v.input.impl()->data<T>();
    std::fill(o, o + l.outputs, T(0));
    if (v.input.numel() == 0) return;  // sums of nothing
    std::vector<T> sums(static_cast<std::size_t>(o0 != 0 ? 0 : size1));
    for_each_block(dims, [&](std::int64_t at, std::int64_t to) {
        const T* x = base + at;
        T* y = o + to;
        if (o0 != 0) {
            for (std::int64_t j = 0; j < size1; ++j)
                for (std::int64_t i = 0; i < size0; ++i) y[i * o0 + j * o1] += x[i * a0 + j * a1];
        } else {
            block_sums(x, size0, size1, a0, a1, sums.data());
            for (std::int64_t j = 0; j < size1; ++j) y[j * o1] += sums[static_cast<std::size_t>(j)];
        }
    });
}

/// y[u * os] *= x[i * xs + u * xu] for each output u < outs, in order of i < len: each output's chain of
/// products in PyTorch's order (element by element), the chains side by side, so that the core
/// overlaps them: the outputs in the inner loop where they are the closer in memory, else kProdChains
/// of them at a time, each in a register.
template <typename T>
void prod_chains(const T* x, T* y, std::int64_t outs, std::int64_t len, std::int64_t os, std::int64_t xu,
                 std::int64_t xs) {
    if (outs > 1 && xs != 0 && xu < xs) {
        for (std::int64_t i = 0; i < len; ++i)
            for (std::int64_t u = 0; u < outs; ++u) y[u * os] *= x[i * xs + u * xu];
        return;
    }
    std::int64_t u = 0;
    for (; u + kProdChains <= outs; u += kProdChains) {
        T p[kProdChains];
        for (std::int64_t k = 0; k < kProdChains; ++k) p[k] = y[(u + k) * os];
        for (std::int64_t i = 0; i < len; ++i)
            for (std::int64_t k = 0; k < kProdChains; ++k) p[k] *= x[i * xs + (u + k) * xu];
        for (std::int64_t k = 0; k < kProdChains; ++k) y[(u + k) * os] = p[k];
    }
    for (; u < outs; ++u) {
        T p = y[u * os];
        for (std::int64_t i = 0; i < len; ++i) p *= x[i * xs + u * xu];
        y[u * os] = p;
    }
}

/// prod_rows of a strided input (RowsView::source_dims), read in place in PyTorch 1.13's order (its
/// binary_kernel_reduce_vec): the outputs start at 1; for each 2-D block of its TensorIterator's dims
/// (iter_dims), rows contiguous along the reduced dim multiply into their outputs in row_prod's lanes,
/// anything else element by element (prod_chains). (PyTorch's kernel for outputs and input contiguous
/// along the block's second dim takes each column's product first, then times its output: the same
/// bits, since such a block is the only one an output gets, its output still 1.)
template <typename T>
void prod_strided_in_place(const RowsView& v, T* o) {
    const SourceLayout l = source_layout(v);
    const std::vector<IterDim> dims = iter_dims(l.shape, l.in, l.out);
    const std::int64_t size0 = dims[0][0], size1 = dims[1][0], a0 = dims[0][1], a1 = dims[1][1], o0 = dims[0][2],
                       o1 = dims[1][2];
    const T* base = v.input.impl()->data<T>();
    std::fill(o, o + l.outputs, T(1));
    if (v.input.numel() == 0) return;  // products of nothing
    for_each_block(dims, [&](std::int64_t at, std::int64_t to) {
        const T* x = base + at;
        T* y = o + to;
        if (o0 == 0 && a0 == 1) {
            for (std::int64_t j = 0; j < size1; ++j) y[j * o1] = row_prod(x + j * a1, size0, true, y[j * o1]);
        } else if (o0 == 0 && o1 == 0) {  // one output: one chain
            for (std::int64_t j = 0; j < size1; ++j) prod_chains(x + j * a1, y, 1, size0, 0, 0, a0);
        } else if (o0 == 0) {  // output j: the product down its column
            prod_chains(x, y, size1, size0, o1, a1, a0);
        } else {  // nothing reduced here (every reduced dim has size 1)
            for (std::int64_t j = 0; j < size1; ++j)
                for (std::int64_t i = 0; i < size0; ++i) y[i * o0 + j * o1] *= x[i * a0 + j * a1];
        }
    });
}

void sum_rows(const RowsView& v, const Tensor& out, bool mean) {
    if (v.in_place && !v.input.is_floating_point()) {  // integers add up exactly in any order
        RowsView copy = v;
        copy.input = v.input.contiguous();
        copy.in_place = false;
        return cpu::sum_rows(copy, out, mean);
    }
    if (!v.input.is_floating_point()) {  // integers add up in int64
        detail::dispatch_all(v.input.dtype(), [&](auto tag) {
            using T = decltype(tag);
            // A bool is a byte holding 0 or 1: read as uint8, which the compiler vectorises (bool it did not).
            using R = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
            if constexpr (std::is_integral_v<T>)
                if (out.dtype() == kInt64)
                    return int_sum_rows(reinterpret_cast<const R*>(v.input.impl()->data<T>()), v,
                                        out.impl()->data<std::int64_t>());
            detail::fail("sum", "cannot sum " + to_string(v.input.dtype()) + " into " + to_string(out.dtype()));
        });
        return;
    }
    detail::dispatch_float(out.dtype(), "sum", [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        if (v.in_place && !v.source_dims.empty()) {
            sum_strided_in_place(v, o, source_layout(v));
        } else if (v.in_place) {
            sum_slices_in_place(v, o);
        } else if (v.outer) {
            // Blocks of (width, cols), each down its columns; blocks split between threads.
            const std::int64_t cols = v.rows / std::max<std::int64_t>(v.batches, 1), block = v.width * cols;
            if (v.batches == 1) {
                outer_sum(in, v.width, cols, o);
            } else {
                parallel_for(0, v.batches, std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(block, 1)),
                             [&](std::int64_t lo, std::int64_t hi) {
                                 for (std::int64_t b = lo; b < hi; ++b)
                                     outer_sum(in + b * block, v.width, cols, o + b * cols);
                             });
            }
        } else {
            parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
                row_sums(in + lo * v.width, hi - lo, v.width, o + lo);
            });
        }
        // PyTorch's CPU mean is sum() then a division by the count, both in the tensor's dtype.
        if (mean)
            for (std::int64_t r = 0; r < v.rows; ++r) o[r] = o[r] / static_cast<T>(v.width);
    });
}

/// True when `v` (a result computed in double, to be rounded to float) lies within `tol`, relatively,
/// of a midpoint between two floats: another computation of it, off by that much, may round to the
/// other float. Such a value is computed again in PyTorch's own order (a rounding test).
bool near_float_midpoint(double v, double tol) {
    const float f = static_cast<float>(v);
    if (!std::isfinite(f) || v == static_cast<double>(f)) return false;
    const float next = std::nextafter(f, v > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                                    : -std::numeric_limits<float>::infinity());
    const double mid = (static_cast<double>(f) + static_cast<double>(next)) / 2;  // exact
    return std::abs(v - mid) <= tol * std::abs(v);
}

/// The relative error a float var's double result (var_row's, or sq_dev_sum's) is allowed before the
/// rounding test asks for PyTorch's own order: 2^-50 per element of the row (at least 1024 of them),
/// times `condition` (against a Welford pass, the variance's: 1 + |mean| / std).
double var_tolerance(std::int64_t n, double condition = 1) {
    return std::ldexp(static_cast<double>(std::max<std::int64_t>(n, 1024)), -50) * condition;
}

/// m2 = Σ (x - mean)² of PyTorch 1.13's std_var_all_cpu, its var with one result (and no mean asked
/// for): the mean as x.mean() gives it (the sum in PyTorch's order, then over n, in T: a constant float
/// row's variance is then 2.2e-16 rather than 0, as in PyTorch), then the squares in double. PyTorch
/// adds them one after another in its TensorIterator's order for the input alone (iter_dims without an
/// output), each 2-D block apart and then the blocks in order; so does a double tensor here, whose bits
/// depend on it. A float tensor's squares go through vector lanes (sq_dev_sum) or several running sums,
/// a double sum that rounds to the same float, unless `result` (the variance, or std, from m2) lies near
/// a float midpoint: then they are added again in PyTorch's order.
template <typename T, typename Result>
double var_all_m2(const RowsView& v, Result&& result) {
    const T* in = v.input.impl()->data<T>();
    const bool strided = v.in_place && !v.source_dims.empty();
    T sum = 0;
    const SourceLayout l = strided ? source_layout(v, /*whole=*/true) : SourceLayout{};
    if (strided)
        sum_strided_in_place(v, &sum, l);
    else
        sum = inner_sum(in, v.width);
    const double mean = static_cast<double>(sum / static_cast<T>(v.width));
    if (v.input.numel() == 0) return 0;
    const std::vector<IterDim> dims = strided ? iter_dims(l.shape, l.in, Strides(l.shape.size(), 0))
                                              : std::vector<IterDim>{{v.width, 1, 0}, {1, 0, 0}};
    const std::int64_t size0 = dims[0][0], size1 = dims[1][0], a0 = dims[0][1], a1 = dims[1][1];
    if constexpr (std::is_same_v<T, float>) {
        // Any order of the double sum rounds to the same float, the rounding test aside: vector lanes
        // along contiguous runs, four running sums along strided ones.
        double s = 0;
        for_each_block(dims, [&](std::int64_t at, std::int64_t) {
            for (std::int64_t i = 0; i < size1; ++i) {
                const float* x = in + at + i * a1;
                if (a0 == 1) {
                    s += sq_dev_sum(x, size0, mean);
                    continue;
                }
                double part[4] = {};
                std::int64_t j = 0;
                for (; j + 4 <= size0; j += 4)
                    for (std::int64_t k = 0; k < 4; ++k) {
                        const double d = static_cast<double>(x[(j + k) * a0]) - mean;
                        part[k] += d * d;
                    }
                for (; j < size0; ++j) {
                    const double d = static_cast<double>(x[j * a0]) - mean;
                    part[0] += d * d;
                }
                s += (part[0] + part[1]) + (part[2] + part[3]);
            }
        });
        if (!near_float_midpoint(result(s), var_tolerance(v.width))) return s;
    }
    double s = 0;
    for_each_block(dims, [&](std::int64_t at, std::int64_t) {
        double block = 0;
        for (std::int64_t i = 0; i < size1; ++i)
            for (std::int64_t j = 0; j < size0; ++j) {
                const double d = static_cast<double>(in[at + i * a1 + j * a0]) - mean;
                block += d * d;
            }
        s += block;
    });
    return s;
}

void var_rows(const RowsView& v, const Tensor& out, const Tensor& mean_out, double correction, bool take_sqrt) {
    detail::dispatch_float(out.dtype(), "var", [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        T* mo = mean_out.defined() ? mean_out.impl()->data<T>() : nullptr;
        const double n = static_cast<double>(v.width);
        // PyTorch's WelfordOps::project: m2 / (n - correction), or m2 / 0 when n <= correction (`result`,
        // in double; `project`, rounded to T).
        auto result = [&](double m2) {
            const double var = m2 / (n > correction ? n - correction : 0.0);
            return take_sqrt ? std::sqrt(var) : var;
        };
        auto project = [&](double m2) { return static_cast<T>(result(m2)); };
        if (v.rows == 1 && !mo) {
            o[0] = project(var_all_m2<T>(v, result));
        } else if (mo || std::is_same_v<T, double>) {
            // PyTorch 1.13's var_mean, and its double var over dims with more than one result: a Welford
            // pass in double along each row.
            parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
                constexpr std::int64_t kBlock = 64;
                double m[kBlock], q[kBlock];
                for (std::int64_t r = lo; r < hi; r += kBlock) {
                    const std::int64_t count = std::min(kBlock, hi - r);
                    welford_rows(in + r * v.width, count, v.width, m, q);
                    for (std::int64_t k = 0; k < count; ++k) {
                        o[r + k] = project(q[k]);
                        // An empty row's mean is NaN, as PyTorch fills an empty reduction.
                        if (mo) mo[r + k] = v.width ? static_cast<T>(m[k]) : std::numeric_limits<T>::quiet_NaN();
                    }
                }
            });
        } else {
            // float over dims with more than one result: the row's moments in double in one pass
            // (var_rows); its variance rounds to the float PyTorch's Welford pass gives, unless it lies
            // near a float midpoint (a row of two values, each repeated, can sit on one): then the
            // row takes the Welford pass (8x slower; about 1 row in 10^4 of random data).
            const bool large = v.rows * v.width * static_cast<std::int64_t>(sizeof(T)) >= kStreamBytes;
            parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
                // vec_math: in double, 32 accumulators, two rows side by side on AVX-512 (their chains of
                // dependent adds interleave), prefetching later rows when the tensor comes from memory.
                constexpr std::int64_t kBlock = 16;
                double m[kBlock], m2[kBlock];
                for (std::int64_t r0 = lo; r0 < hi; r0 += kBlock) {
                    const std::int64_t count = std::min(kBlock, hi - r0);
                    // (On AVX-512 the kernel takes the block's rows two at a time.)
                    var_rows(in + r0 * v.width, count, v.width, m, m2,
                             rows_ahead<T>(large, r0 + count - 1, v.rows, v.width, std::min<std::int64_t>(count, 2)));
                    for (std::int64_t k = 0; k < count; ++k) {
                        // (The condition is read only where m2 is not 0.)
                        if (v.width > 0 &&
                            (m2[k] == 0 ||
                             near_float_midpoint(result(m2[k]),
                                                 var_tolerance(v.width, 1 + std::abs(m[k]) / std::sqrt(m2[k] / n)))))
                            welford_rows(in + (r0 + k) * v.width, 1, v.width, &m[k], &m2[k]);
                        o[r0 + k] = project(m2[k]);
                    }
                }
            });
        }
    });
}

void norm_rows(const RowsView& v, const Tensor& out, double p, bool lanes) {
    detail::dispatch_float(out.dtype(), "norm", [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t r = lo; r < hi; ++r) o[r] = norm_row(in + r * v.width, v.width, static_cast<T>(p), lanes);
        });
    });
}

namespace {

/// The index of a row's max (or min): its first NaN if it has one (NaN propagates, as PyTorch), else
/// the first element equal to the extreme, so that of +0 and -0 the first one wins.
template <typename T>
std::int64_t extreme_index(const T* x, std::int64_t n, bool max) {
    if constexpr (std::is_floating_point_v<T>) {
        return row_extreme_index(x, n, max);  // vectorised
    } else {
        std::int64_t at = 0;
        for (std::int64_t i = 1; i < n; ++i)
            if (max ? x[i] > x[at] : x[i] < x[at]) at = i;
        return at;
    }
}

}  // namespace

/// Column blocks of a reduction over a leading dim: out[r] for r in a block stays in the level-1 cache
/// while the reduced rows go by.
constexpr std::int64_t kColumnBlock = 2048;

/// `body(b0, b1)` over the columns [b0, b1) of an outer (width, rows) view, in blocks of at most
/// kColumnBlock, the blocks shared between threads.
template <class F>
void for_column_blocks(const RowsView& v, F&& body) {
    parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t b0 = lo; b0 < hi; b0 += kColumnBlock) body(b0, std::min(hi, b0 + kColumnBlock));
    });
}

void extreme_rows(const RowsView& v, const Tensor& out, bool max) {
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        if (v.outer) {
            // (width, rows): out[r] is the extreme of column r, read row by row (PyTorch's amax(0) is
            // vectorised across the columns too). A later element replaces the running one only when
            // it is greater (smaller), or NaN where the running one is not: the first extreme and the
            // first NaN win, as extreme_index's. Floats take varith's maximum (minimum) of (row,
            // running), vectorised on the CPU's best instruction set: it keeps the running value on
            // ties, and of two NaNs takes the later one (which NaN it is shows in no value or print).
            // amax(0) of 1024x1500 floats: 0.42 -> 0.31 ms (the loop) -> 0.08 ms (PyTorch 0.21).
            auto columns = [&](auto better) {
                for_column_blocks(v, [&](std::int64_t b0, std::int64_t b1) {
                    std::copy(in + b0, in + b1, o + b0);
                    for (std::int64_t i = 1; i < v.width; ++i) {
                        const T* x = in + i * v.rows;
                        if constexpr (std::is_floating_point_v<T>)
                            varith(max ? Arith::kMaximum : Arith::kMinimum, x + b0, o + b0, o + b0, b1 - b0, false);
                        else
                            for (std::int64_t r = b0; r < b1; ++r) o[r] = better(x[r], o[r]) ? x[r] : o[r];
                    }
                });
            };
            if (max)
                columns([](T b, T a) { return b > a; });
            else
                columns([](T b, T a) { return b < a; });
            return;
        }
        parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* x = in + r * v.width;
                if constexpr (std::is_floating_point_v<T>) {
                    o[r] = x[extreme_index(x, v.width, max)];
                } else {  // integers: the value alone, without tracking where it is
                    T m = x[0];
                    for (std::int64_t i = 1; i < v.width; ++i) m = max ? std::max(m, x[i]) : std::min(m, x[i]);
                    o[r] = m;
                }
            }
        });
    });
}

void arg_extreme_rows(const RowsView& v, const Tensor& values, const Tensor& indices, bool max) {
    detail::dispatch(values.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = values.impl()->data<T>();
        auto* idx = indices.impl()->data<std::int64_t>();
        parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* x = in + r * v.width;
                const std::int64_t at = extreme_index(x, v.width, max);
                o[r] = x[at];
                idx[r] = at;
            }
        });
    });
}

/// The type a running sum or product accumulates in: double for floating types (as PyTorch's CPU
/// cumsum/cumprod), int64 for int64.
template <typename T>
using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;

void prod_rows(const RowsView& v, const Tensor& out, bool lanes) {
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        if (v.in_place && !v.source_dims.empty()) {
            prod_strided_in_place(v, o);
            return;
        }
        if (v.outer) {
            // (width, rows): column r's product element by element down the column, as PyTorch's
            // reduction over an outer dim, the columns side by side (prod(0) of 1024x1500 floats
            // read in place: no transposed copy).
            for_column_blocks(v, [&](std::int64_t b0, std::int64_t b1) {
                std::fill(o + b0, o + b1, T(1));
                for (std::int64_t i = 0; i < v.width; ++i) {
                    const T* x = in + i * v.rows;
                    for (std::int64_t r = b0; r < b1; ++r) o[r] *= x[r];
                }
            });
            return;
        }
        parallel_for(0, v.rows, grain_for(v.width), [&](std::int64_t lo, std::int64_t hi) {
            std::int64_t r = lo;
            // Element by element, each row's product is one chain of dependent multiplies: kProdChains
            // rows at a time, so that their chains overlap (each row's order, and so its bits,
            // unchanged). prod(0) of 1024x1500 floats through rows (a transposed copy) 1.9 -> 0.55 ms.
            if (!lanes)
                for (; r + kProdChains <= hi; r += kProdChains) {
                    T p[kProdChains];
                    std::fill(p, p + kProdChains, T(1));
                    for (std::int64_t j = 0; j < v.width; ++j)
                        for (std::int64_t k = 0; k < kProdChains; ++k) p[k] *= in[(r + k) * v.width + j];
                    std::copy(p, p + kProdChains, o + r);
                }
            for (; r < hi; ++r) o[r] = row_prod(in + r * v.width, v.width, lanes);
        });
    });
}

void scan_rows(const RowsView& v, const Tensor& out, bool prod, bool reverse) {
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = out.impl()->data<T>();
        // Each row is one chain of dependent operations: kScanChains rows at a time, so that their
        // chains overlap (each row's order, and so its bits, unchanged). cumsum(1) of 1024x1500 floats
        // 1.2 -> 0.7 ms, cumprod(1) 1.5 -> 0.56-0.76 ms.
        auto scan = [&](auto op, std::int64_t lo, std::int64_t hi) {
            const std::int64_t w = v.width, first = reverse ? w - 1 : 0, step = reverse ? -1 : 1;
            std::int64_t r = lo;
            for (; r + kScanChains <= hi; r += kScanChains) {
                Acc<T> acc[kScanChains];
                std::fill(acc, acc + kScanChains, Acc<T>(prod ? 1 : 0));
                for (std::int64_t j = 0, c = first; j < w; ++j, c += step)
                    for (std::int64_t k = 0; k < kScanChains; ++k) {
                        const std::int64_t i = (r + k) * w + c;
                        acc[k] = op(acc[k], static_cast<Acc<T>>(in[i]));
                        o[i] = static_cast<T>(acc[k]);
                    }
            }
            for (; r < hi; ++r) {
                Acc<T> acc = prod ? 1 : 0;
                for (std::int64_t j = 0, c = first; j < w; ++j, c += step) {
                    const std::int64_t i = r * w + c;
                    acc = op(acc, static_cast<Acc<T>>(in[i]));
                    o[i] = static_cast<T>(acc);
                }
            }
        };
        // (width, rows): column r runs down the column; the columns side by side, a block of running
        // values at a time. cumsum(0) of 1024x1500 floats read and written in place 2.0 -> 0.34 ms.
        auto scan_columns = [&](auto op) {
            for_column_blocks(v, [&, in, o](std::int64_t b0, std::int64_t b1) {
                // in and o by value: captured by reference, every store through o would reload them
                Acc<T> acc[kColumnBlock];
                const std::int64_t m = b1 - b0, width = v.width, rows = v.rows;
                std::fill(acc, acc + m, Acc<T>(prod ? 1 : 0));
                for (std::int64_t j = 0; j < width; ++j) {
                    const std::int64_t at = (reverse ? width - 1 - j : j) * rows + b0;
                    for (std::int64_t r = 0; r < m; ++r) {
                        acc[r] = op(acc[r], static_cast<Acc<T>>(in[at + r]));
                        o[at + r] = static_cast<T>(acc[r]);
                    }
                }
            });
        };
        auto run = [&](auto op) {
            if (v.outer)
                scan_columns(op);
            else
                parallel_for(0, v.rows, grain_for(v.width),
                             [&](std::int64_t lo, std::int64_t hi) { scan(op, lo, hi); });
        };
        if (prod)
            run([](Acc<T> a, Acc<T> b) { return a * b; });
        else
            run([](Acc<T> a, Acc<T> b) { return a + b; });
    });
}

}  // namespace xgrad::kernels::cpu
