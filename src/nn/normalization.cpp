// LayerNorm and RMSNorm: fused forward/backward kernels (xsimd, OpenMP over rows) and the modules.
#include "xgrad/nn/normalization.hpp"

#include <omp.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <xsimd/xsimd.hpp>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"

namespace xgrad::nn {

using detail::fail;
using Grads = std::vector<Tensor>;

namespace {

// ---- row primitives (xsimd) ----------------------------------------------------------------------

template <typename T>
T row_sum(const T* x, std::int64_t n) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    B acc(T(0));
    std::int64_t i = 0;
    for (; i + w <= n; i += w) acc += B::load_unaligned(x + i);
    T s = xsimd::hadd(acc);
    for (; i < n; ++i) s += x[i];
    return s;
}

/// Σ (x - c)²
template <typename T>
T row_sum_sq(const T* x, std::int64_t n, T c) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    B acc(T(0)), cb(c);
    std::int64_t i = 0;
    for (; i + w <= n; i += w) {
        B d = B::load_unaligned(x + i) - cb;
        acc += d * d;
    }
    T s = xsimd::hadd(acc);
    for (; i < n; ++i) s += (x[i] - c) * (x[i] - c);
    return s;
}

/// Σ a·b
template <typename T>
T row_dot(const T* a, const T* b, std::int64_t n) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    B acc(T(0));
    std::int64_t i = 0;
    for (; i + w <= n; i += w) acc += B::load_unaligned(a + i) * B::load_unaligned(b + i);
    T s = xsimd::hadd(acc);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

/// Splits `rows` over OpenMP threads when the work is large enough to pay for them.
template <typename F>
void parallel_rows(std::int64_t rows, std::int64_t width, F&& body) {
    if (rows * width >= (1 << 16) && omp_get_max_threads() > 1) {
#pragma omp parallel
        {
            const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
            const std::int64_t lo = rows * t / nt, hi = rows * (t + 1) / nt;
            body(lo, hi, t, nt);
        }
    } else {
        body(0, rows, 0, 1);
    }
}

/// Rows and width of a normalisation of `input` over trailing `shape`; checks the shapes.
std::pair<std::int64_t, std::int64_t> rows_and_width(const Tensor& input, const Shape& shape, const Tensor& weight,
                                                     const Tensor& bias, const char* op) {
    detail::check_defined(input, op);
    const std::int64_t k = shape.size();
    bool ok = k >= 1 && input.dim() >= k;
    for (std::int64_t i = 0; ok && i < k; ++i) ok = input.size(input.dim() - k + i) == shape[i];
    if (!ok)
        fail(op,
             "input of shape " + to_string(input.shape()) + " does not end with normalized_shape " + to_string(shape));
    for (const Tensor* p : {&weight, &bias})
        if (p->defined() && p->shape() != shape)
            fail(op, "weight and bias must have shape " + to_string(shape) + ", got " + to_string(p->shape()));
    if (!input.is_floating_point()) fail(op, "needs a floating-point input, got " + to_string(input.dtype()));
    const std::int64_t width = shape.numel();
    return {width == 0 ? 0 : input.numel() / width, width};
}

}  // namespace

namespace functional {

// ---- layer_norm ------------------------------------------------------------------------------------

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
    auto [rows, width] = rows_and_width(input, normalized_shape, weight, bias, "layer_norm");
    const DType dt = input.dtype();
    Tensor x = input.detach().contiguous();
    Tensor w = weight.defined() ? weight.detach().to(dt).contiguous() : Tensor();
    Tensor b = bias.defined() ? bias.detach().to(dt).contiguous() : Tensor();
    Tensor out = detail::make_empty(input.shape(), dt);
    Tensor mean = detail::make_empty(Shape{rows}, dt), rstd = detail::make_empty(Shape{rows}, dt);
    detail::dispatch_float(dt, "layer_norm", [&](auto tag) {
        using T = decltype(tag);
        using B = xsimd::batch<T>;
        constexpr auto vw = static_cast<std::int64_t>(B::size);
        const T* px = x.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        const T* pb = b.defined() ? b.impl()->data<T>() : nullptr;
        T* py = out.impl()->data<T>();
        T* pm = mean.impl()->data<T>();
        T* pr = rstd.impl()->data<T>();
        parallel_rows(rows, width, [&](std::int64_t lo, std::int64_t hi, std::int64_t, std::int64_t) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* xr = px + r * width;
                T* yr = py + r * width;
                // (x - mean) * rstd, written as PyTorch's CPU kernel does: x * rstd + (-rstd * mean).
                if (width < 32 / static_cast<std::int64_t>(sizeof(T))) {
                    // Rows narrower than one AVX2 register take PyTorch's scalar path, bit for bit:
                    // Welford moments, then one fused multiply-add per element.
                    T m = 0, m2 = 0;
                    for (std::int64_t j = 0; j < width; ++j) {
                        const T d = xr[j] - m;
                        m += d / static_cast<T>(j + 1);
                        m2 += d * (xr[j] - m);
                    }
                    const T rs = T(1) / std::sqrt(m2 / static_cast<T>(width) + static_cast<T>(eps));
                    const T shift = -rs * m;
                    pm[r] = m;
                    pr[r] = rs;
                    for (std::int64_t j = 0; j < width; ++j) {
                        T v = std::fma(xr[j], rs, shift);
                        if (pw) v = v * pw[j];
                        if (pb) v = v + pb[j];
                        yr[j] = v;
                    }
                    continue;
                }
                const T m = row_sum(xr, width) / static_cast<T>(width);
                const T var = row_sum_sq(xr, width, m) / static_cast<T>(width);
                const T rs = T(1) / std::sqrt(var + static_cast<T>(eps));
                const T shift = -rs * m;
                pm[r] = m;
                pr[r] = rs;
                std::int64_t j = 0;
                for (; j + vw <= width; j += vw) {
                    B v = B::load_unaligned(xr + j) * B(rs) + B(shift);
                    if (pw) v = v * B::load_unaligned(pw + j);
                    if (pb) v = v + B::load_unaligned(pb + j);
                    v.store_unaligned(yr + j);
                }
                for (; j < width; ++j) {
                    T v = xr[j] * rs + shift;
                    if (pw) v = v * pw[j];
                    if (pb) v = v + pb[j];
                    yr[j] = v;
                }
            }
        });
    });
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    detail::record(
        out, "NativeLayerNormBackward0", {&input, &weight, &bias},
        [x, w, mean, rstd, rows, width](const Tensor& grad, const detail::NeedsGrad& need) {
            Tensor g = grad.contiguous();
            const DType dt = x.dtype();
            Tensor dx = need[0] ? detail::make_empty(x.shape(), dt) : Tensor();
            Tensor dw = need[1] ? zeros(w.shape(), dt) : Tensor();
            Tensor db = need[2] ? zeros(w.defined() ? w.shape() : Shape{width}, dt) : Tensor();
            detail::dispatch_float(dt, "layer_norm", [&](auto tag) {
                using T = decltype(tag);
                const T* px = x.impl()->data<T>();
                const T* pg = g.impl()->data<T>();
                const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
                const T* pm = mean.impl()->data<T>();
                const T* pr = rstd.impl()->data<T>();
                const int nthreads = rows * width >= (1 << 16) ? omp_get_max_threads() : 1;
                // Per-thread partial sums of dweight and dbias, reduced at the end.
                std::vector<T> part_w(need[1] ? static_cast<std::size_t>(nthreads * width) : 0, T(0));
                std::vector<T> part_b(need[2] ? static_cast<std::size_t>(nthreads * width) : 0, T(0));
                parallel_rows(rows, width, [&](std::int64_t lo, std::int64_t hi, std::int64_t t, std::int64_t) {
                    std::vector<T> xhat(static_cast<std::size_t>(width)), dxhat(static_cast<std::size_t>(width));
                    T* acc_w = need[1] ? part_w.data() + t * width : nullptr;
                    T* acc_b = need[2] ? part_b.data() + t * width : nullptr;
                    for (std::int64_t r = lo; r < hi; ++r) {
                        const T* xr = px + r * width;
                        const T* gr = pg + r * width;
                        const T rs = pr[r], shift = -pr[r] * pm[r];
                        for (std::int64_t j = 0; j < width; ++j) {
                            xhat[static_cast<std::size_t>(j)] = xr[j] * rs + shift;
                            dxhat[static_cast<std::size_t>(j)] = pw ? gr[j] * pw[j] : gr[j];
                        }
                        if (acc_w)
                            for (std::int64_t j = 0; j < width; ++j)
                                acc_w[j] += gr[j] * xhat[static_cast<std::size_t>(j)];
                        if (acc_b)
                            for (std::int64_t j = 0; j < width; ++j) acc_b[j] += gr[j];
                        if (!dx.defined()) continue;
                        // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
                        const T n = static_cast<T>(width);
                        const T mean_d = row_sum(dxhat.data(), width) / n;
                        const T mean_dx = row_dot(dxhat.data(), xhat.data(), width) / n;
                        T* dr = dx.impl()->data<T>() + r * width;
                        for (std::int64_t j = 0; j < width; ++j) {
                            auto ju = static_cast<std::size_t>(j);
                            dr[j] = rs * (dxhat[ju] - mean_d - xhat[ju] * mean_dx);
                        }
                    }
                });
                for (int t = 0; t < nthreads; ++t)
                    for (std::int64_t j = 0; j < width; ++j) {
                        if (need[1]) dw.impl()->data<T>()[j] += part_w[static_cast<std::size_t>(t * width + j)];
                        if (need[2]) db.impl()->data<T>()[j] += part_b[static_cast<std::size_t>(t * width + j)];
                    }
            });
            return Grads{dx, dw, db};
        });
    return out;
}

// ---- rms_norm --------------------------------------------------------------------------------------

Tensor rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
    auto [rows, width] = rows_and_width(input, normalized_shape, weight, Tensor(), "rms_norm");
    const DType dt = input.dtype();
    const double e =
        eps.value_or(dt == kFloat32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon());
    Tensor x = input.detach().contiguous();
    Tensor w = weight.defined() ? weight.detach().to(dt).contiguous() : Tensor();
    Tensor out = detail::make_empty(input.shape(), dt);
    Tensor rstd = detail::make_empty(Shape{rows}, dt);
    detail::dispatch_float(dt, "rms_norm", [&](auto tag) {
        using T = decltype(tag);
        using B = xsimd::batch<T>;
        constexpr auto vw = static_cast<std::int64_t>(B::size);
        const T* px = x.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        T* py = out.impl()->data<T>();
        T* pr = rstd.impl()->data<T>();
        parallel_rows(rows, width, [&](std::int64_t lo, std::int64_t hi, std::int64_t, std::int64_t) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* xr = px + r * width;
                T* yr = py + r * width;
                // As PyTorch's composite: x * rsqrt(mean(x²) + eps), then * weight.
                const T ms = row_dot(xr, xr, width) / static_cast<T>(width);
                const T rs = T(1) / std::sqrt(ms + static_cast<T>(e));
                pr[r] = rs;
                std::int64_t j = 0;
                for (; j + vw <= width; j += vw) {
                    B v = B::load_unaligned(xr + j) * B(rs);
                    if (pw) v = v * B::load_unaligned(pw + j);
                    v.store_unaligned(yr + j);
                }
                for (; j < width; ++j) yr[j] = pw ? (xr[j] * rs) * pw[j] : xr[j] * rs;
            }
        });
    });
    if (!detail::needs_grad({&input, &weight})) return out;
    detail::record(
        out, "MulBackward0", {&input, &weight},
        [x, w, rstd, rows, width](const Tensor& grad, const detail::NeedsGrad& need) {
            Tensor g = grad.contiguous();
            const DType dt = x.dtype();
            Tensor dx = need[0] ? detail::make_empty(x.shape(), dt) : Tensor();
            Tensor dw = need[1] ? zeros(w.shape(), dt) : Tensor();
            detail::dispatch_float(dt, "rms_norm", [&](auto tag) {
                using T = decltype(tag);
                const T* px = x.impl()->data<T>();
                const T* pg = g.impl()->data<T>();
                const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
                const T* pr = rstd.impl()->data<T>();
                const int nthreads = rows * width >= (1 << 16) ? omp_get_max_threads() : 1;
                std::vector<T> part_w(need[1] ? static_cast<std::size_t>(nthreads * width) : 0, T(0));
                parallel_rows(rows, width, [&](std::int64_t lo, std::int64_t hi, std::int64_t t, std::int64_t) {
                    std::vector<T> xhat(static_cast<std::size_t>(width)), dxhat(static_cast<std::size_t>(width));
                    T* acc_w = need[1] ? part_w.data() + t * width : nullptr;
                    for (std::int64_t r = lo; r < hi; ++r) {
                        const T* xr = px + r * width;
                        const T* gr = pg + r * width;
                        const T rs = pr[r];
                        for (std::int64_t j = 0; j < width; ++j) {
                            xhat[static_cast<std::size_t>(j)] = xr[j] * rs;
                            dxhat[static_cast<std::size_t>(j)] = pw ? gr[j] * pw[j] : gr[j];
                        }
                        if (acc_w)
                            for (std::int64_t j = 0; j < width; ++j)
                                acc_w[j] += gr[j] * xhat[static_cast<std::size_t>(j)];
                        if (!dx.defined()) continue;
                        // dx = rstd * (dxhat - xhat * mean(dxhat * xhat))
                        const T mean_dx = row_dot(dxhat.data(), xhat.data(), width) / static_cast<T>(width);
                        T* dr = dx.impl()->data<T>() + r * width;
                        for (std::int64_t j = 0; j < width; ++j) {
                            auto ju = static_cast<std::size_t>(j);
                            dr[j] = rs * (dxhat[ju] - xhat[ju] * mean_dx);
                        }
                    }
                });
                for (int t = 0; t < nthreads; ++t)
                    for (std::int64_t j = 0; j < width; ++j)
                        if (need[1]) dw.impl()->data<T>()[j] += part_w[static_cast<std::size_t>(t * width + j)];
            });
            return Grads{dx, dw};
        });
    return out;
}

}  // namespace functional

// ---- modules -----------------------------------------------------------------------------------------

namespace {

/// PyTorch prints normalized_shape as a Python tuple: `(10,)`, `(5, 10)`.
std::string tuple_repr(const Shape& s) {
    return to_string(s);
}

/// The trailing `dimensions` sizes of `input`; throws naming `op` when the input has too few axes.
Shape trailing_shape(const Tensor& input, std::int64_t dimensions, const char* op) {
    if (input.dim() < dimensions)
        fail(op, "expects at least " + std::to_string(dimensions) + " dimensions, got input of shape " +
                     to_string(input.shape()));
    return Shape(std::vector<std::int64_t>(input.shape().end() - dimensions, input.shape().end()));
}

}  // namespace

LayerNorm::LayerNorm(std::int64_t dimensions, std::optional<Shape> shape, double eps, bool affine)
    : dimensions_(dimensions), eps_(eps), affine_(affine) {
    if (dimensions < 1) fail("LayerNorm", "dimensions must be at least 1, got " + std::to_string(dimensions));
    if (affine) {
        // Handles exist from the start (empty until the shape is known) so optimizers can hold them.
        weight = empty({0});
        bias = empty({0});
        register_parameter("weight", weight);
        register_parameter("bias", bias);
    }
    if (shape) materialize(*shape);
}

void LayerNorm::materialize(const Shape& shape) {
    normalized_shape_ = shape;
    if (!affine_) return;
    NoGradGuard no_grad;
    detail::replace_contents(weight, ones(shape, weight.dtype()));
    detail::replace_contents(bias, zeros(shape, bias.dtype()));
}

Tensor LayerNorm::forward(const Tensor& input) {
    Shape trailing = trailing_shape(input, dimensions_, "LayerNorm");
    if (!normalized_shape_) materialize(trailing);
    if (trailing != *normalized_shape_)
        fail("LayerNorm", "input of shape " + to_string(input.shape()) + " does not end with the normalized shape " +
                              to_string(*normalized_shape_) + " fixed by " +
                              (dimensions_ == normalized_shape_->size() ? "the first input" : "construction"));
    return functional::layer_norm(input, *normalized_shape_, weight, bias, eps_);
}

std::string LayerNorm::extra_repr() const {
    std::string shape =
        normalized_shape_ ? tuple_repr(*normalized_shape_) : "dimensions=" + std::to_string(dimensions_);
    return shape + ", eps=" + python_float_repr(eps_) + ", elementwise_affine=" + (affine_ ? "True" : "False");
}

RMSNorm::RMSNorm(std::int64_t dimensions, std::optional<Shape> shape, std::optional<double> eps, bool affine)
    : dimensions_(dimensions), eps_(eps), affine_(affine) {
    if (dimensions < 1) fail("RMSNorm", "dimensions must be at least 1, got " + std::to_string(dimensions));
    if (affine) {
        weight = empty({0});
        register_parameter("weight", weight);
    }
    if (shape) materialize(*shape);
}

void RMSNorm::materialize(const Shape& shape) {
    normalized_shape_ = shape;
    if (!affine_) return;
    NoGradGuard no_grad;
    detail::replace_contents(weight, ones(shape, weight.dtype()));
}

Tensor RMSNorm::forward(const Tensor& input) {
    Shape trailing = trailing_shape(input, dimensions_, "RMSNorm");
    if (!normalized_shape_) materialize(trailing);
    if (trailing != *normalized_shape_)
        fail("RMSNorm", "input of shape " + to_string(input.shape()) + " does not end with the normalized shape " +
                            to_string(*normalized_shape_));
    return functional::rms_norm(input, *normalized_shape_, weight, eps_);
}

std::string RMSNorm::extra_repr() const {
    std::string shape =
        normalized_shape_ ? tuple_repr(*normalized_shape_) : "dimensions=" + std::to_string(dimensions_);
    return shape + ", eps=" + (eps_ ? python_float_repr(*eps_) : "None") +
           ", elementwise_affine=" + (affine_ ? "True" : "False");
}

}  // namespace xgrad::nn
