// Elementwise arithmetic and activations, each forward beside its backward.
#include <cmath>
#include <limits>
#include <numbers>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::map_binary;
using detail::map_unary;
using detail::NeedsGrad;
using detail::sum_to;
using detail::value_t;
using Grads = std::vector<Tensor>;

// Kernel lambdas take their operands as `const auto&` and use constants as prvalues (`T(0.5)`): the
// xtensor expression they return refers to its operands, so it must not outlive a by-value parameter
// or a named local (the temporary views map_unary/map_binary pass live to the end of the assignment).

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
    Tensor out = map_binary<true>(a, b, "add", [](const auto& x, const auto& y) { return x + y; });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "AddBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g, sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::sub(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "sub");
    Tensor out = map_binary<true>(a, b, "sub", [](const auto& x, const auto& y) { return x - y; });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "SubBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g.neg(), sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::mul(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "mul");
    Tensor out = map_binary<true>(a, b, "mul", [](const auto& x, const auto& y) { return x * y; });
    if (detail::needs_grad({this, &other}))
        detail::record(
            out, "MulBackward0", {this, &other},
            [a = detach(), b = other.detach()](const Tensor& g, const NeedsGrad& n) {
                return Grads{n[0] ? sum_to(g * b, a.shape()) : Tensor(), n[1] ? sum_to(g * a, b.shape()) : Tensor()};
            });
    return out;
}

Tensor Tensor::div(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "div");
    if (!a.is_floating_point()) {  // true division, as torch.div
        a = a.to(kFloat32);
        b = b.to(kFloat32);
    }
    Tensor out = map_binary(a, b, "div", [](const auto& x, const auto& y) { return x / y; });
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
    Tensor out = map_scalar(a, "add", [s](const auto& x) { return x + static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "AddBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g}; });
    return out;
}

Tensor Tensor::sub(double s) const {
    Tensor a = for_scalar(*this, s, "sub");
    Tensor out = map_scalar(a, "sub", [s](const auto& x) { return x - static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "SubBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g}; });
    return out;
}

Tensor Tensor::mul(double s) const {
    Tensor a = for_scalar(*this, s, "mul");
    Tensor out = map_scalar(a, "mul", [s](const auto& x) { return x * static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "MulBackward0", {this}, [s](const Tensor& g, const NeedsGrad&) { return Grads{g * s}; });
    return out;
}

Tensor Tensor::div(double s) const {
    Tensor a = is_floating_point() ? *this : to(kFloat32);
    Tensor out = map_unary(a, "div", [s](const auto& x) { return x / static_cast<value_t<decltype(x)>>(s); });
    if (detail::needs_grad({this}))
        detail::record(out, "DivBackward0", {this}, [s](const Tensor& g, const NeedsGrad&) { return Grads{g / s}; });
    return out;
}

Tensor Tensor::neg() const {
    detail::check_defined(*this, "neg");
    Tensor out = map_scalar(*this, "neg", [](const auto& x) { return -x; });
    if (detail::needs_grad({this}))
        detail::record(out, "NegBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s - x`: PyTorch records it as RsubBackward1.
Tensor operator-(double s, const Tensor& x) {
    Tensor a = for_scalar(x, s, "rsub");
    Tensor out = map_scalar(a, "rsub", [s](const auto& v) { return static_cast<value_t<decltype(v)>>(s) - v; });
    if (detail::needs_grad({&x}))
        detail::record(out, "RsubBackward1", {&x}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s / x`: PyTorch computes `x.reciprocal() * s`, so the result's grad_fn is MulBackward0.
Tensor operator/(double s, const Tensor& x) {
    return x.pow(-1.0) * s;
}

Tensor operator+(const Tensor& a, const Tensor& b) {
    return a.add(b);
}
Tensor operator+(const Tensor& a, double b) {
    return a.add(b);
}
Tensor operator+(double a, const Tensor& b) {
    return b.add(a);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
    return a.sub(b);
}
Tensor operator-(const Tensor& a, double b) {
    return a.sub(b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
    return a.mul(b);
}
Tensor operator*(const Tensor& a, double b) {
    return a.mul(b);
}
Tensor operator*(double a, const Tensor& b) {
    return b.mul(a);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
    return a.div(b);
}
Tensor operator/(const Tensor& a, double b) {
    return a.div(b);
}
Tensor operator-(const Tensor& a) {
    return a.neg();
}

// ---- powers, roots, exponentials ------------------------------------------------------------------

namespace {

/// `x ** y` elementwise, with C's answers where xsimd's pow (exp(y log|x|)) gives 0: `x ** 0` is 1 for
/// every x (0 and NaN included) and `0 ** y` is inf for y < 0.
template <typename T, typename X, typename Y>
auto safe_pow(const X& x, const Y& y) {
    return xt::where(
        xt::equal(y, T(0)), T(1),
        xt::where(xt::equal(x, T(0)), xt::where(y < T(0), std::numeric_limits<T>::infinity(), T(0)), xt::pow(x, y)));
}

}  // namespace

Tensor Tensor::pow(double e) const {
    detail::check_defined(*this, "pow");
    // PyTorch's special exponents, exact (or as exact as sqrt) where exp(e log x) is not; and C's
    // x ** 0 == 1, 0 ** e == inf for e < 0, which xsimd's pow gets wrong.
    Tensor out = e == 0.0    ? ones(shape(), is_floating_point() ? dtype() : kFloat32)
                 : e == 2.0  ? map_unary(*this, "pow", [](const auto& x) { return x * x; })
                 : e == 3.0  ? map_unary(*this, "pow", [](const auto& x) { return x * x * x; })
                 : e == 0.5  ? map_unary(*this, "pow", [](const auto& x) { return xt::sqrt(x); })
                 : e == -1.0 ? map_unary(*this, "pow", [](const auto& x) { return value_t<decltype(x)>(1) / x; })
                 : e < 0.0   ? map_unary(*this, "pow",
                                         [e](const auto& x) {
                                           using T = value_t<decltype(x)>;
                                           return xt::where(xt::equal(x, T(0)), std::numeric_limits<T>::infinity(),
                                                              xt::pow(x, static_cast<T>(e)));
                                       })
                             : map_unary(*this, "pow",
                                         [e](const auto& x) { return xt::pow(x, static_cast<value_t<decltype(x)>>(e)); });
    if (detail::needs_grad({this}))
        detail::record(out, "PowBackward0", {this}, [x = detach(), e](const Tensor& g, const NeedsGrad&) {
            return Grads{e == 0.0 ? zeros_like(g) : g * x.pow(e - 1.0) * e};
        });
    return out;
}

Tensor Tensor::pow(const Tensor& exponent) const {
    auto [a, b] = promoted(*this, exponent, "pow");
    Tensor out =
        map_binary(a, b, "pow", [](const auto& x, const auto& y) { return safe_pow<value_t<decltype(x)>>(x, y); });
    if (detail::needs_grad({this, &exponent}))
        detail::record(out, "PowBackward1", {this, &exponent},
                       [a = detach(), b = exponent.detach(), o = out.detach()](const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) {
                               // b * a^(b-1), taken as 0 where b == 0 (PyTorch's convention; 0 * inf at a == 0).
                               Tensor d = b * a.pow(b - 1.0);
                               d = map_binary(d, b.to(d.dtype()), "pow", [](const auto& dd, const auto& y) {
                                   using T = value_t<decltype(dd)>;
                                   return xt::where(xt::equal(y, T(0)), T(0), dd);
                               });
                               r[0] = sum_to(g * d, a.shape());
                           }
                           if (n[1]) {
                               // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (PyTorch's convention).
                               Tensor ln =
                                   map_binary(a.expand_as(o), b.expand_as(o).to(a.dtype()), "pow",
                                              [](const auto& x, const auto& y) {
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
    Tensor out = map_unary(*this, "sqrt", [](const auto& x) { return xt::sqrt(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "SqrtBackward0", {this},
                       [o = out.detach()](const Tensor& g, const NeedsGrad&) { return Grads{g / (o * 2.0)}; });
    return out;
}

Tensor Tensor::rsqrt() const {
    detail::check_defined(*this, "rsqrt");
    Tensor out = map_unary(*this, "rsqrt", [](const auto& x) { return value_t<decltype(x)>(1) / xt::sqrt(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "RsqrtBackward0", {this},
                       [o = out.detach()](const Tensor& g, const NeedsGrad&) { return Grads{g * o.pow(3.0) * -0.5}; });
    return out;
}

Tensor Tensor::exp() const {
    detail::check_defined(*this, "exp");
    Tensor out = map_unary(*this, "exp", [](const auto& x) { return xt::exp(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "ExpBackward0", {this},
                       [o = out.detach()](const Tensor& g, const NeedsGrad&) { return Grads{g * o}; });
    return out;
}

Tensor Tensor::log() const {
    detail::check_defined(*this, "log");
    Tensor out = map_unary(*this, "log", [](const auto& x) { return xt::log(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "LogBackward0", {this},
                       [x = detach()](const Tensor& g, const NeedsGrad&) { return Grads{g / x}; });
    return out;
}

Tensor Tensor::abs() const {
    detail::check_defined(*this, "abs");
    Tensor out = is_floating_point() ? map_unary(*this, "abs", [](const auto& x) { return xt::abs(x); })
                                     : map_scalar(*this, "abs", [](const auto& x) { return xt::abs(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "AbsBackward0", {this}, [x = detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, x.to(g.dtype()), "abs",
                                    [](const auto& gg, const auto& xx) { return gg * xt::sign(xx); })};
        });
    return out;
}

// ---- activations ----------------------------------------------------------------------------------

Tensor Tensor::tanh() const {
    detail::check_defined(*this, "tanh");
    Tensor out = map_unary(*this, "tanh", [](const auto& x) { return xt::tanh(x); });
    if (detail::needs_grad({this}))
        detail::record(out, "TanhBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "tanh", [](const auto& gg, const auto& oo) {
                return gg * (value_t<decltype(oo)>(1) - oo * oo);
            })};
        });
    return out;
}

Tensor Tensor::sigmoid() const {
    detail::check_defined(*this, "sigmoid");
    Tensor out = map_unary(*this, "sigmoid", [](const auto& x) {
        using T = value_t<decltype(x)>;
        return T(1) / (T(1) + xt::exp(-x));
    });
    if (detail::needs_grad({this}))
        detail::record(out, "SigmoidBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "sigmoid", [](const auto& gg, const auto& oo) {
                return gg * oo * (value_t<decltype(oo)>(1) - oo);
            })};
        });
    return out;
}

Tensor Tensor::relu() const {
    detail::check_defined(*this, "relu");
    // Written with where, not xt::maximum, so that NaN stays NaN as in PyTorch.
    Tensor out = map_unary(*this, "relu", [](const auto& x) {
        using T = value_t<decltype(x)>;
        return xt::where(x < T(0), T(0), x);
    });
    if (detail::needs_grad({this}))
        detail::record(out, "ReluBackward0", {this}, [o = out.detach()](const Tensor& g, const NeedsGrad&) {
            // PyTorch's threshold_backward: 0 where result <= 0, else g (also where the result is NaN).
            return Grads{map_binary(g, o, "relu", [](const auto& gg, const auto& oo) {
                using T = value_t<decltype(oo)>;
                return xt::where(oo <= T(0), T(0), gg);
            })};
        });
    return out;
}

namespace {

// GELU's constants as PyTorch writes them. Lambdas below use them as prvalues (`T(kBeta)`): a named
// local inside a lambda that returns an xtensor expression would be captured by reference and dangle.
constexpr double kBeta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;
constexpr double kInvSqrt2 = 1.0 / std::numbers::sqrt2;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;  // 1 / sqrt(2 pi)

}  // namespace

Tensor Tensor::gelu(const std::string& approximate) const {
    detail::check_defined(*this, "gelu");
    if (approximate != "none" && approximate != "tanh")
        detail::fail("gelu", "approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
    const bool tanh_form = approximate == "tanh";
    Tensor out = tanh_form
                     ? map_unary(*this, "gelu",
                                 [](const auto& x) {
                                     using T = value_t<decltype(x)>;
                                     return T(0.5) * x * (T(1) + xt::tanh(T(kBeta) * (x + T(kKappa) * x * x * x)));
                                 })
                     : map_unary(*this, "gelu", [](const auto& x) {
                           using T = value_t<decltype(x)>;
                           return x * T(0.5) * (T(1) + xt::erf(x * T(kInvSqrt2)));
                       });
    if (detail::needs_grad({this}))
        detail::record(out, "GeluBackward0", {this}, [x = detach(), tanh_form](const Tensor& g, const NeedsGrad&) {
            if (tanh_form) {
                // t = tanh(beta (x + kappa x^3)), materialised because the derivative uses it twice:
                // d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2)
                Tensor t = map_unary(x, "gelu", [](const auto& xx) {
                    using T = value_t<decltype(xx)>;
                    return xt::tanh(T(kBeta) * (xx + T(kKappa) * xx * xx * xx));
                });
                Tensor d = map_binary(x, t, "gelu", [](const auto& xx, const auto& tt) {
                    using T = value_t<decltype(xx)>;
                    return T(0.5) * (T(1) + tt) +
                           T(0.5) * xx * (T(1) - tt * tt) * T(kBeta) * (T(1) + T(3 * kKappa) * xx * xx);
                });
                return Grads{g * d};
            }
            // d/dx = Phi(x) + x phi(x)
            return Grads{map_binary(g, x, "gelu", [](const auto& gg, const auto& xx) {
                using T = value_t<decltype(xx)>;
                return gg * (T(0.5) * (T(1) + xt::erf(xx * T(kInvSqrt2))) +
                             xx * T(kInvSqrt2Pi) * xt::exp(T(-0.5) * xx * xx));
            })};
        });
    return out;
}

// ---- comparisons that select ---------------------------------------------------------------------

namespace {

/// Gradient of maximum/minimum: the winner takes g, ties split it evenly. Written as PyTorch's
/// `where(p == q, g / 2, g).masked_fill_(p < q, 0)` (p > q for minimum), so NaN lets g through.
Grads select_grads(const Tensor& g, const Tensor& a, const Tensor& b, const NeedsGrad& n, bool max) {
    Tensor x = a.to(g.dtype()).expand_as(g), y = b.to(g.dtype()).expand_as(g);
    auto share = [&](const Tensor& p, const Tensor& q) {
        Tensor w = max ? map_binary(p, q, "maximum",
                                    [](const auto& u, const auto& v) {
                                        using T = value_t<decltype(u)>;
                                        return xt::where(xt::equal(u, v), T(0.5), xt::where(u < v, T(0), T(1)));
                                    })
                       : map_binary(p, q, "minimum", [](const auto& u, const auto& v) {
                             using T = value_t<decltype(u)>;
                             return xt::where(xt::equal(u, v), T(0.5), xt::where(u > v, T(0), T(1)));
                         });
        return g * w;
    };
    return Grads{n[0] ? sum_to(share(x, y), a.shape()) : Tensor(), n[1] ? sum_to(share(y, x), b.shape()) : Tensor()};
}

}  // namespace

Tensor Tensor::maximum(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "maximum");
    // xsimd's max returns the other operand for NaN; PyTorch's maximum propagates NaN.
    Tensor out = map_binary<true>(a, b, "maximum", [](const auto& x, const auto& y) {
        return xt::where(xt::not_equal(x, x), x, xt::where(xt::not_equal(y, y), y, xt::maximum(x, y)));
    });
    if (detail::needs_grad({this, &other}))
        detail::record(out, "MaximumBackward0", {this, &other},
                       [a = detach(), b = other.detach()](const Tensor& g, const NeedsGrad& n) {
                           return select_grads(g, a, b, n, true);
                       });
    return out;
}

Tensor Tensor::minimum(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "minimum");
    Tensor out = map_binary<true>(a, b, "minimum", [](const auto& x, const auto& y) {
        return xt::where(xt::not_equal(x, x), x, xt::where(xt::not_equal(y, y), y, xt::minimum(x, y)));
    });
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
    // A fractional bound makes an int64 tensor float32, as a Python float does in PyTorch.
    Tensor a = for_scalar(for_scalar(*this, lo.value_or(0.0), "clamp"), hi.value_or(0.0), "clamp");
    Tensor out = map_scalar(a, "clamp", [l, h](const auto& x) {
        using T = value_t<decltype(x)>;
        // min(max(x, l), h) as PyTorch: a max below min gives max everywhere. Integers clip the
        // infinite defaults to their own range.
        auto bound = [](double v) {
            if constexpr (std::is_floating_point_v<T>)
                return static_cast<T>(v);
            else
                return static_cast<T>(std::clamp<double>(v, -9.2e18, 9.2e18));
        };
        return xt::where(xt::not_equal(x, x), x, xt::minimum(xt::maximum(x, bound(l)), bound(h)));  // NaN stays
    });
    if (detail::needs_grad({this})) {
        // PyTorch's Tensor.clamp records ClampBackward1 with either bound or both (ClampMinBackward0
        // and ClampMaxBackward0 belong to clamp_min and clamp_max).
        detail::record(out, "ClampBackward1", {this}, [x = detach(), l, h](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, x.to(g.dtype()), "clamp", [l, h](const auto& gg, const auto& xx) {
                using T = value_t<decltype(xx)>;
                return xt::where(xx >= static_cast<T>(l) && xx <= static_cast<T>(h), gg, T(0));
            })};
        });
    }
    return out;
}

}  // namespace xgrad
