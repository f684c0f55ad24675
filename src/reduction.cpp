// Reductions (sum, mean, var, std, max, min) over one dim, a list of dims, or all.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::NeedsGrad;
using Grads = std::vector<Tensor>;

namespace {

/// How a reduction sees its input: `rows` rows of `width` contiguous elements, one result per row.
struct Plan {
    std::vector<bool> reduced;  // per input dim
    Shape kept_shape;           // result with keepdim=true
    Shape out_shape;            // result as requested
    std::int64_t rows = 1, width = 1;
    Tensor rows_view;    // contiguous, reduced dims last (or first, when `outer`)
    bool outer = false;  // rows_view is (width, rows): the reduced dims lead, as in bias gradients
};

/// `allow_outer`: the caller handles the (width, rows) layout of leading reductions (sum, mean).
Plan plan(const Tensor& a, const Dims& dims, bool keepdim, const char* op, bool allow_outer = false) {
    detail::check_defined(a, op);
    Plan p;
    const std::int64_t nd = a.dim();
    p.reduced.assign(static_cast<std::size_t>(nd), dims.vec().empty());
    const std::int64_t n = std::max<std::int64_t>(nd, 1);  // a 0-d tensor accepts dim 0 and -1, as PyTorch
    for (std::int64_t d : dims.vec()) {
        if (d < -n || d >= n)
            detail::fail(op, "dimension " + std::to_string(d) + " is out of range for a tensor of shape " +
                                 to_string(a.shape()) + " (expected to be in [" + std::to_string(-n) + ", " +
                                 std::to_string(n - 1) + "])");
        auto w = static_cast<std::size_t>(detail::wrap_dim(d, nd, op));
        if (nd > 0 && p.reduced[w] && !dims.vec().empty())
            detail::fail(op, "dimension " + std::to_string(d) + " appears multiple times in the list of dims " +
                                 "for a tensor of shape " + to_string(a.shape()));
        if (nd > 0) p.reduced[w] = true;
    }
    std::vector<std::int64_t> perm, kept, out;
    for (std::int64_t d = 0; d < nd; ++d)
        if (!p.reduced[static_cast<std::size_t>(d)]) perm.push_back(d);
    // The reduced dims are already last (the common `dim=-1` case): no permutation needed.
    const auto n_reduced = std::count(p.reduced.begin(), p.reduced.end(), true);
    const bool trailing = std::all_of(p.reduced.end() - n_reduced, p.reduced.end(), [](bool r) { return r; });
    for (std::int64_t d = 0; d < nd; ++d) {
        bool r = p.reduced[static_cast<std::size_t>(d)];
        if (r) {
            perm.push_back(d);
            p.width *= a.size(d);
        } else {
            p.rows *= a.size(d);
            out.push_back(a.size(d));
        }
        kept.push_back(r ? 1 : a.size(d));
    }
    p.kept_shape = Shape(kept);
    p.out_shape = keepdim ? p.kept_shape : Shape(out);
    const bool leading = std::all_of(p.reduced.begin(), p.reduced.begin() + n_reduced, [](bool r) { return r; });
    Tensor base = a.detach();
    p.outer = allow_outer && leading && !trailing && a.is_contiguous();
    p.rows_view = trailing || p.outer ? base.contiguous() : base.permute(Dims(perm)).contiguous();
    return p;
}

/// Applies `row_fn(const T* row, width)` to every row, writing its result, converted to T, into a
/// tensor of `p.out_shape`.
template <typename F>
Tensor reduce_rows(const Plan& p, DType dtype, const char* op, F&& row_fn) {
    Tensor out = detail::make_empty(p.out_shape, dtype);
    detail::dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* in = p.rows_view.impl()->data<T>();
        T* o = out.impl()->data<T>();
        for (std::int64_t r = 0; r < p.rows; ++r) o[r] = static_cast<T>(row_fn(in + r * p.width, p.width));
    });
    (void)op;
    return out;
}

/// The gradient of a reduction's output, reshaped to keepdim form and broadcast back to `input`.
Tensor expand_back(const Tensor& g, const Shape& kept_shape, const Shape& input_shape) {
    return g.reshape(kept_shape).expand(input_shape);
}

/// Floats add up in double; int64 adds up exactly in int64, as PyTorch (a double would round past 2^53).
template <typename T>
auto row_sum(const T* x, std::int64_t n) {
    using Acc = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
    Acc s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<Acc>(x[i]);
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

/// Sums every output of a plan into `out` (p.rows values), in PyTorch's order for floats.
template <typename T>
void plan_sums(const Plan& p, T* out) {
    const T* in = p.rows_view.impl()->data<T>();
    if constexpr (std::is_integral_v<T>) {
        if (p.outer) {
            std::fill(out, out + p.rows, T(0));
            for (std::int64_t i = 0; i < p.width; ++i)
                for (std::int64_t c = 0; c < p.rows; ++c) out[c] += in[i * p.rows + c];
        } else {
            for (std::int64_t r = 0; r < p.rows; ++r) out[r] = static_cast<T>(row_sum(in + r * p.width, p.width));
        }
    } else if (p.outer) {
        outer_sum(in, p.width, p.rows, out);
    } else {
        const bool parallel = p.rows > 1 && p.rows * p.width >= (1 << 16);
        if (parallel) {
#pragma omp parallel for schedule(static)
            for (std::int64_t r = 0; r < p.rows; ++r) out[r] = inner_sum(in + r * p.width, p.width);
        } else {
            for (std::int64_t r = 0; r < p.rows; ++r) out[r] = inner_sum(in + r * p.width, p.width);
        }
    }
}

template <typename T>
double row_var(const T* x, std::int64_t n, double correction) {
    double mean = static_cast<double>(row_sum(x, n)) / static_cast<double>(n);
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        double d = static_cast<double>(x[i]) - mean;
        ss += d * d;
    }
    return ss / std::max(0.0, static_cast<double>(n) - correction);
}

Tensor sum_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    Plan p = plan(self, dims, keepdim, "sum", /*allow_outer=*/true);
    Tensor out = detail::make_empty(p.out_shape, self.dtype());
    detail::dispatch(self.dtype(), [&](auto tag) { plan_sums(p, out.impl()->data<decltype(tag)>()); });
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self}, [k = p.kept_shape, s = self.shape()](const Tensor& g, const NeedsGrad&) {
            return Grads{expand_back(g, k, s)};
        });
    return out;
}

/// mean, var and std are defined for floating-point tensors only, as in PyTorch.
void check_floating(const Tensor& self, const char* op) {
    detail::check_defined(self, op);
    if (!self.is_floating_point())
        detail::fail(op, "needs a floating-point tensor, got " + to_string(self.dtype()) + " of shape " +
                             to_string(self.shape()));
}

Tensor mean_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    check_floating(self, "mean");
    Plan p = plan(self, dims, keepdim, "mean", /*allow_outer=*/true);
    // PyTorch's CPU mean is sum() then a division by the count, both in the tensor's dtype.
    Tensor out = detail::make_empty(p.out_shape, self.dtype());
    detail::dispatch_float(self.dtype(), "mean", [&](auto tag) {
        using T = decltype(tag);
        T* o = out.impl()->data<T>();
        plan_sums(p, o);
        for (std::int64_t r = 0; r < p.rows; ++r) o[r] = o[r] / static_cast<T>(p.width);
    });
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [k = p.kept_shape, s = self.shape(), n = p.width](const Tensor& g, const NeedsGrad&) {
                           return Grads{expand_back(g, k, s) / static_cast<double>(n)};
                       });
    return out;
}

Tensor var_impl(const Tensor& self, const Dims& dims, bool unbiased, bool keepdim, bool take_sqrt) {
    const char* op = take_sqrt ? "std" : "var";
    check_floating(self, op);
    Plan p = plan(self, dims, keepdim, op);
    const double correction = unbiased ? 1.0 : 0.0;
    Tensor out = reduce_rows(p, self.dtype(), op, [=](const auto* x, std::int64_t n) {
        double v = row_var(x, n, correction);
        return take_sqrt ? std::sqrt(v) : v;
    });
    if (detail::needs_grad({&self}))
        detail::record(out, take_sqrt ? "StdBackward0" : "VarBackward0", {&self},
                       [x = self.detach(), o = out.detach(), k = p.kept_shape, d = Dims(dims), n = p.width, correction,
                        take_sqrt](const Tensor& g, const NeedsGrad&) {
                           Tensor centred = x - x.mean(d, true);
                           double denom = static_cast<double>(n) - correction;
                           Tensor gk = g.reshape(k);
                           if (!take_sqrt) return Grads{centred * (gk * (2.0 / denom))};
                           // d std = d var / (2 std), taken as 0 where std == 0 (a constant row) instead of
                           // 0/0, as PyTorch.
                           Tensor scale = detail::map_binary(
                               gk, o.reshape(k).to(gk.dtype()), "std", [denom](const auto& gg, const auto& oo) {
                                   using T = detail::value_t<decltype(oo)>;
                                   return xt::where(xt::equal(oo, T(0)), T(0), gg / (oo * static_cast<T>(denom)));
                               });
                           return Grads{centred * scale};
                       });
    return out;
}

Tensor extreme_impl(const Tensor& self, const Dims& dims, bool keepdim, bool all, bool max) {
    const char* op = max ? "max" : "min";
    Plan p = plan(self, dims, keepdim, op);
    if (p.width == 0) detail::fail(op, "cannot reduce over an empty dimension (shape " + to_string(self.shape()) + ")");
    Tensor out = reduce_rows(p, self.dtype(), op, [max](const auto* x, std::int64_t n) {
        auto best = x[0];
        for (std::int64_t i = 1; i < n; ++i) {
            if (x[i] != x[i]) return x[i];  // NaN propagates, as PyTorch
            best = max ? std::max(best, x[i]) : std::min(best, x[i]);
        }
        return best;  // in T: an int64 through double would round past 2^53
    });
    if (detail::needs_grad({&self})) {
        const char* name = all ? (max ? "MaxBackward1" : "MinBackward1") : (max ? "MaxBackward0" : "MinBackward0");
        detail::record(out, name, {&self},
                       [x = self.detach(), o = out.detach(), k = p.kept_shape, d = Dims(dims), all](const Tensor& g,
                                                                                                    const NeedsGrad&) {
                           // All-reduce: ties share the gradient evenly. Along a dim: the first extreme
                           // element takes it, as the index PyTorch returns. A NaN result hits the NaN inputs.
                           auto is_hit = [](const auto& a, const auto& b) {
                               using T = detail::value_t<decltype(a)>;
                               return xt::where(xt::equal(a, b) || (xt::not_equal(a, a) && xt::not_equal(b, b)), T(1),
                                                T(0));
                           };
                           Tensor hit = detail::map_binary(x, o.reshape(k).expand_as(x).contiguous(), "max", is_hit);
                           if (!all) {
                               // Keep only the first hit along the reduced dims: zero the hits after a prior hit.
                               Plan q = plan(hit, d, true, "max");
                               Tensor first = detail::make_empty(q.rows_view.shape(), hit.dtype());
                               detail::dispatch_float(hit.dtype(), "max", [&](auto tag) {
                                   using T = decltype(tag);
                                   const T* h = q.rows_view.impl()->data<T>();
                                   T* f = first.impl()->data<T>();
                                   for (std::int64_t r = 0; r < q.rows; ++r) {
                                       bool seen = false;
                                       for (std::int64_t i = 0; i < q.width; ++i) {
                                           T v = h[r * q.width + i];
                                           f[r * q.width + i] = seen ? T(0) : v;
                                           seen = seen || v != T(0);
                                       }
                                   }
                               });
                               // rows_view was permuted so reduced dims come last; undo that permutation.
                               std::vector<std::int64_t> perm, inverse(static_cast<std::size_t>(x.dim()));
                               for (std::int64_t i = 0; i < x.dim(); ++i)
                                   if (!q.reduced[static_cast<std::size_t>(i)]) perm.push_back(i);
                               for (std::int64_t i = 0; i < x.dim(); ++i)
                                   if (q.reduced[static_cast<std::size_t>(i)]) perm.push_back(i);
                               for (std::size_t i = 0; i < perm.size(); ++i)
                                   inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
                               Shape permuted;
                               for (auto i : perm) permuted.push_back(x.size(i));
                               hit = first.reshape(permuted).permute(Dims(inverse));
                               return Grads{hit * g.reshape(k)};
                           }
                           return Grads{hit * (g.reshape(k) / hit.sum())};
                       });
    }
    return out;
}

}  // namespace

Tensor Tensor::sum() const {
    return sum_impl(*this, Dims(std::vector<std::int64_t>{}), false, "SumBackward0");
}
Tensor Tensor::sum(const Dims& dims, bool keepdim) const {
    return sum_impl(*this, dims, keepdim, "SumBackward1");
}
Tensor Tensor::mean() const {
    return mean_impl(*this, Dims(std::vector<std::int64_t>{}), false, "MeanBackward0");
}
Tensor Tensor::mean(const Dims& dims, bool keepdim) const {
    return mean_impl(*this, dims, keepdim, "MeanBackward1");
}
Tensor Tensor::var() const {
    return var_impl(*this, Dims(std::vector<std::int64_t>{}), true, false, false);
}
Tensor Tensor::var(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased, keepdim, false);
}
Tensor Tensor::std() const {
    return var_impl(*this, Dims(std::vector<std::int64_t>{}), true, false, true);
}
Tensor Tensor::std(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased, keepdim, true);
}
Tensor Tensor::max() const {
    return extreme_impl(*this, Dims(std::vector<std::int64_t>{}), false, true, true);
}
Tensor Tensor::max(const Dims& dims, bool keepdim) const {
    return extreme_impl(*this, dims, keepdim, false, true);
}
Tensor Tensor::min() const {
    return extreme_impl(*this, Dims(std::vector<std::int64_t>{}), false, true, false);
}
Tensor Tensor::min(const Dims& dims, bool keepdim) const {
    return extreme_impl(*this, dims, keepdim, false, false);
}

}  // namespace xgrad
