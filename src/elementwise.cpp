// Elementwise arithmetic and activations, each forward beside its backward.
#include <cmath>
#include <numbers>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::map_binary;
using detail::map_unary;
using detail::NeedsGrad;
using detail::sum_to;
using detail::value_t;
using Grads = std::vector<Tensor>;

namespace {

/// Brings two operands to their common dtype (float64 > float32 > int64).
std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, const char* op) {
    detail::check_defined(a, op);
    detail::check_defined(b, op);
    DType t = detail::promote(a.dtype(), b.dtype());
    return {a.to(t), b.to(t)};
}

/// Integer tensors meet floating scalars in float32 (PyTorch's default dtype).
Tensor for_scalar(const Tensor& a, double s, const char* op) {
    detail::check_defined(a, op);
    return a.is_floating_point() || std::floor(s) == s ? a : a.to(kFloat32);
}

/// `x op s` on any dtype; int64 stays int64 for integral scalars.
template <typename F>
Tensor map_scalar(const Tensor& a, const char* op, F&& f) {
    if (a.is_floating_point()) return map_unary(a, op, f);
    Tensor src = a.contiguous();
    Tensor out = detail::make_empty(src.shape(), kInt64);
    auto n = static_cast<std::size_t>(src.numel());
    auto o = detail::flat(out.impl()->data<std::int64_t>(), n);
    xt::noalias(o) = f(detail::flat(static_cast<const std::int64_t*>(src.impl()->data<std::int64_t>()), n));
    return out;
}

}  // namespace

// ---- arithmetic ---------------------------------------------------------------------------------

Tensor Tensor::add(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "add");
    Tensor out = map_binary<true>(a, b, "add", [](auto x, auto y) { return x + y; });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "AddBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g, sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::sub(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "sub");
    Tensor out = map_binary<true>(a, b, "sub", [](auto x, auto y) { return x - y; });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "SubBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g.neg(), sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::mul(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "mul");
    Tensor out = map_binary<true>(a, b, "mul", [](auto x, auto y) { return x * y; });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "MulBackward0", {this, &other},
                       [a = detach(), b = other.detach()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g * b, a.shape()) : Tensor(),
                                        n[1] ? sum_to(g * a, b.shape()) : Tensor()};
                       });
    return out;
}

Tensor Tensor::div(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "div");
    if (!a.is_floating_point()) {  // true division, as torch.div
        a = a.to(kFloat32);
        b = b.to(kFloat32);
    }
    Tensor out = map_binary(a, b, "div", [](auto x, auto y) { return x / y; });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "DivBackward0", {this, &other},
                       [a = detach(), b = other.detach()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g / b, a.shape()) : Tensor(),
                                        n[1] ? sum_to(g.neg() * a / (b * b), b.shape()) : Tensor()};
                       });
    return out;
}

Tensor Tensor::add(double s) const {
    Tensor a = for_scalar(*this, s, "add");
    Tensor out = map_scalar(a, "add", [s](auto x) { return x + static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "AddBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g}; });
    return out;
}

Tensor Tensor::sub(double s) const {
    Tensor a = for_scalar(*this, s, "sub");
    Tensor out = map_scalar(a, "sub", [s](auto x) { return x - static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "SubBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g}; });
    return out;
}

Tensor Tensor::mul(double s) const {
    Tensor a = for_scalar(*this, s, "mul");
    Tensor out = map_scalar(a, "mul", [s](auto x) { return x * static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "MulBackward0", {this}, [s](const Tensor& g, const NeedsGrad&) { return Grads{g * s}; });
    return out;
}

Tensor Tensor::div(double s) const {
    Tensor a = is_floating_point() ? *this : to(kFloat32);
    Tensor out = map_unary(a, "div", [s](auto x) { return x / static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "DivBackward0", {this}, [s](const Tensor& g, const NeedsGrad&) { return Grads{g / s}; });
    return out;
}

Tensor Tensor::neg() const {
    detail::check_defined(*this, "neg");
    Tensor out = map_scalar(*this, "neg", [](auto x) { return -x; });
    if (detail::needs_grad({this}))
        detail::record(out, "NegBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s - x`: PyTorch records it as RsubBackward1.
Tensor operator-(double s, const Tensor& x) {
    Tensor a = for_scalar(x, s, "rsub");
    Tensor out = map_scalar(a, "rsub", [s](auto v) { return static_cast<value_t<decltype(v)>>(s) - v; });
    if (detail::needs_grad({&x}))
        detail::record(out, "RsubBackward1", {&x}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s / x`: PyTorch computes `x.reciprocal() * s`, so the result's grad_fn is MulBackward0.
Tensor operator/(double s, const Tensor& x) { return x.pow(-1.0) * s; }

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator+(const Tensor& a, double b) { return a.add(b); }
Tensor operator+(double a, const Tensor& b) { return b.add(a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator-(const Tensor& a, double b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator*(const Tensor& a, double b) { return a.mul(b); }
Tensor operator*(double a, const Tensor& b) { return b.mul(a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator/(const Tensor& a, double b) { return a.div(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }

// ---- powers, roots, exponentials ------------------------------------------------------------------

Tensor Tensor::pow(double e) const {
    detail::check_defined(*this, "pow");
    Tensor out = e == 2.0 ? map_unary(*this, "pow", [](auto x) { return x * x; })
                          : map_unary(*this, "pow", [e](auto x) { return xt::pow(x, static_cast<value_t<decltype(x)>>(e)); });
    if (detail::needs_grad({this}))
        detail::record(out, "PowBackward0", {this}, [x = detach(), e](const Tensor& g, const NeedsGrad&) {
            return Grads{e == 0.0 ? g * 0.0 : g * x.pow(e - 1.0) * e};
        });
    return out;
}

Tensor Tensor::pow(const Tensor& exponent) const {
    auto [a, b] = promoted(*this, exponent, "pow");
    Tensor out = map_binary(a, b, "pow", [](auto x, auto y) { return xt::pow(x, y); });
    if (detail::needs_grad({this, &exponent}))
        detail::record(out, "PowBackward1", {this, &exponent},
                       [a = detach(), b = exponent.detach(), o = out.detach()](const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) r[0] = sum_to(g * b * a.pow(b - 1.0), a.shape());
                           if (n[1]) {
                               // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (PyTorch's convention).
                               Tensor ln = map_binary(a.expand_as(o), b.expand_as(o).to(a.dtype()), "pow",
                                                      [](auto x, auto y) {
                                                          using T = value_t<decltype(x)>;
                                                          return xt::where(xt::equal(x, T(0)) && y >= T(0), T(0), xt::log(x));
                                                      });
                               r[1] = sum_to(g * o * ln, b.shape());
                           }
                           return r;
                       });
    return out;
}

Tensor Tensor::sqrt() const {
    detail::check_defined(*this, "sqrt");
    Tensor out = map_unary(*this, "sqrt", [](auto x) { return xt::sqrt(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "SqrtBackward0", {this},
                       [o = out.detach()](const Tensor& g, const NeedsGrad&) { return Grads{g / (o * 2.0)}; });
    return out;
}

Tensor Tensor::rsqrt() const {
    detail::check_defined(*this, "rsqrt");
    Tensor out = map_unary(*this, "rsqrt", [](auto x) { return value_t<decltype(x)>(1) / xt::sqrt(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "RsqrtBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{g * o.pow(3.0) * -0.5};
        });
    return out;
}

Tensor Tensor::exp() const {
    detail::check_defined(*this, "exp");
    Tensor out = map_unary(*this, "exp", [](auto x) { return xt::exp(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "ExpBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) { return Grads{g * o}; });
    return out;
}

Tensor Tensor::log() const {
    detail::check_defined(*this, "log");
    Tensor out = map_unary(*this, "log", [](auto x) { return xt::log(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "LogBackward0", {this}, [x = detach()](const Tensor& g, const NeedsGrad&) { return Grads{g / x}; });
    return out;
}

Tensor Tensor::abs() const {
    detail::check_defined(*this, "abs");
    Tensor out = is_floating_point() ? map_unary(*this, "abs", [](auto x) { return xt::abs(x); })
                                     : map_scalar(*this, "abs", [](auto x) { return xt::abs(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "AbsBackward0", {this}, [x = detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, x.to(g.dtype()), "abs", [](auto gg, auto xx) { return gg * xt::sign(xx); })};
        });
    return out;
}

// ---- activations ----------------------------------------------------------------------------------

Tensor Tensor::tanh() const {
    detail::check_defined(*this, "tanh");
    Tensor out = map_unary(*this, "tanh", [](auto x) { return xt::tanh(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "TanhBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "tanh", [](auto gg, auto oo) { return gg * (value_t<decltype(oo)>(1) - oo * oo); })};
        });
    return out;
}

Tensor Tensor::sigmoid() const {
    detail::check_defined(*this, "sigmoid");
    Tensor out = map_unary(*this, "sigmoid", [](auto x) {
        using T = value_t<decltype(x)>;
        return T(1) / (T(1) + xt::exp(-x));
    });
    if (detail::needs_grad({this}))
        detail::record(out, "SigmoidBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "sigmoid", [](auto gg, auto oo) { return gg * oo * (value_t<decltype(oo)>(1) - oo); })};
        });
    return out;
}

Tensor Tensor::relu() const {
    detail::check_defined(*this, "relu");
    Tensor out = map_unary(*this, "relu", [](auto x) { return xt::maximum(x, value_t<decltype(x)>(0)); });
    if (detail::needs_grad({this}))
        detail::record(out, "ReluBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "relu", [](auto gg, auto oo) {
                using T = value_t<decltype(oo)>;
                return xt::where(oo > T(0), gg, T(0));
            })};
        });
    return out;
}

Tensor Tensor::gelu(const std::string& approximate) const {
    detail::check_defined(*this, "gelu");
    if (approximate != "none" && approximate != "tanh")
        detail::fail("gelu", "approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
    const bool tanh_form = approximate == "tanh";
    Tensor out = tanh_form ? map_unary(*this, "gelu", [](auto x) {
        using T = value_t<decltype(x)>;
        const T k = static_cast<T>(std::sqrt(2.0 / std::numbers::pi));
        return T(0.5) * x * (T(1) + xt::tanh(k * (x + T(0.044715) * x * x * x)));
    })
                           : map_unary(*this, "gelu", [](auto x) {
                                 using T = value_t<decltype(x)>;
                                 return T(0.5) * x * (T(1) + xt::erf(x * static_cast<T>(1.0 / std::numbers::sqrt2)));
                             });
    if (detail::needs_grad({this}))
        detail::record(out, "GeluBackward0", {this}, [x = detach(), tanh_form](const Tensor& g, const NeedsGrad&) {
            if (tanh_form)
                return Grads{map_binary(g, x, "gelu", [](auto gg, auto xx) {
                    using T = value_t<decltype(xx)>;
                    const T k = static_cast<T>(std::sqrt(2.0 / std::numbers::pi));
                    auto inner = k * (xx + T(0.044715) * xx * xx * xx);
                    auto t = xt::tanh(inner);
                    return gg * (T(0.5) * (T(1) + t) +
                                 T(0.5) * xx * (T(1) - t * t) * k * (T(1) + T(3 * 0.044715) * xx * xx));
                })};
            return Grads{map_binary(g, x, "gelu", [](auto gg, auto xx) {
                using T = value_t<decltype(xx)>;
                const T inv_sqrt2 = static_cast<T>(1.0 / std::numbers::sqrt2);
                const T inv_sqrt2pi = static_cast<T>(1.0 / std::sqrt(2.0 * std::numbers::pi));
                return gg * (T(0.5) * (T(1) + xt::erf(xx * inv_sqrt2)) + xx * inv_sqrt2pi * xt::exp(T(-0.5) * xx * xx));
            })};
        });
    return out;
}

// ---- comparisons that select ---------------------------------------------------------------------

namespace {

/// Gradient of maximum/minimum: the winner takes g, ties split it evenly (as PyTorch).
Grads select_grads(const Tensor& g, const Tensor& a, const Tensor& b, const NeedsGrad& n, bool max) {
    Tensor x = a.to(g.dtype()).expand_as(g), y = b.to(g.dtype()).expand_as(g);
    auto share = [&](const Tensor& p, const Tensor& q) {
        Tensor w = max ? map_binary(p, q, "maximum", [](auto u, auto v) {
            using T = value_t<decltype(u)>;
            return xt::where(u > v, T(1), xt::where(xt::equal(u, v), T(0.5), T(0)));
        })
                       : map_binary(p, q, "minimum", [](auto u, auto v) {
                             using T = value_t<decltype(u)>;
                             return xt::where(u < v, T(1), xt::where(xt::equal(u, v), T(0.5), T(0)));
                         });
        return g * w;
    };
    return Grads{n[0] ? sum_to(share(x, y), a.shape()) : Tensor(), n[1] ? sum_to(share(y, x), b.shape()) : Tensor()};
}

}  // namespace

Tensor Tensor::maximum(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "maximum");
    Tensor out = map_binary<true>(a, b, "maximum", [](auto x, auto y) { return xt::maximum(x, y); });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "MaximumBackward0", {this, &other},
                       [a = detach(), b = other.detach()](const Tensor& g, const NeedsGrad& n) {
                           return select_grads(g, a, b, n, true);
                       });
    return out;
}

Tensor Tensor::minimum(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "minimum");
    Tensor out = map_binary<true>(a, b, "minimum", [](auto x, auto y) { return xt::minimum(x, y); });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "MinimumBackward0", {this, &other},
                       [a = detach(), b = other.detach()](const Tensor& g, const NeedsGrad& n) {
                           return select_grads(g, a, b, n, false);
                       });
    return out;
}

Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const {
    detail::check_defined(*this, "clamp");
    if (!lo && !hi) detail::fail("clamp", "at least one of min or max must be given");
    const double l = lo.value_or(-INFINITY), h = hi.value_or(INFINITY);
    Tensor out = map_scalar(*this, "clamp", [l, h](auto x) {
        using T = value_t<decltype(x)>;
        // min(max(x, l), h) as PyTorch: a max below min gives max everywhere. Integers clip the
        // infinite defaults to their own range.
        auto bound = [](double v) {
            if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
            else return static_cast<T>(std::clamp<double>(v, -9.2e18, 9.2e18));
        };
        return xt::minimum(xt::maximum(x, bound(l)), bound(h));
    });
    if (detail::needs_grad({this})) {
        const char* name = lo && hi ? "ClampBackward1" : lo ? "ClampMinBackward0" : "ClampMaxBackward0";
        detail::record(out, name, {this}, [x = detach(), l, h](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, x.to(g.dtype()), "clamp", [l, h](auto gg, auto xx) {
                using T = value_t<decltype(xx)>;
                return xt::where(xx >= static_cast<T>(l) && xx <= static_cast<T>(h), gg, T(0));
            })};
        });
    }
    return out;
}

}  // namespace xgrad
