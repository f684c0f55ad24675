// Elementwise arithmetic and activations, each forward beside its backward; the arithmetic itself
// is the device's kernels (kernels/kernels.hpp).
#include <cmath>
#include <limits>

#include "detail/convert.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::map_binary;
using detail::map_unary;
using detail::NeedsGrad;
using detail::sum_to;
using kernels::BinaryOp;
using kernels::UnaryOp;
using Grads = std::vector<Tensor>;

namespace {

/// Brings two operands to their common dtype (float64 > float32 > int64).
std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, const char* op) {
    detail::check_defined(a, op);
    detail::check_defined(b, op);
    detail::check_same_device(a, b, op);
    DType t = detail::promote(a.dtype(), b.dtype());
    return {a.to(t), b.to(t)};
}

/// Integer tensors meet floating scalars in float32 (PyTorch's default dtype). A whole number stays
/// an integer scalar only while int64 can hold it (a Python int can't be 1e30 either).
Tensor for_scalar(const Tensor& a, double s, const char* op) {
    detail::check_defined(a, op);
    return a.is_floating_point() || (std::floor(s) == s && detail::fits_int64(s)) ? a : a.to(kFloat32);
}

/// Floating-point maths of an integer tensor happens in float32, as torch.exp(int) does.
Tensor floating(const Tensor& a) {
    return a.is_floating_point() ? a : a.to(kFloat32);
}

/// Ops that are only defined for floating-point operands name the op when given integers.
Tensor float_binary(const Tensor& a, const Tensor& b, const char* op, BinaryOp k) {
    if (!a.is_floating_point()) detail::fail(op, "needs a floating-point tensor, got " + to_string(a.dtype()));
    return map_binary(a, b, op, k);
}

}  // namespace

// ---- arithmetic ---------------------------------------------------------------------------------

Tensor Tensor::add(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "add");
    Tensor out = map_binary(a, b, "add", BinaryOp::kAdd);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "AddBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g, sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::sub(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "sub");
    Tensor out = map_binary(a, b, "sub", BinaryOp::kSub);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "SubBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g, sa) : Tensor(), n[1] ? sum_to(g.neg(), sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::mul(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "mul");
    Tensor out = map_binary(a, b, "mul", BinaryOp::kMul);
    if (detail::needs_grad({this, &other}))
        detail::record(
            out, "MulBackward0", {this, &other},
            [a = detail::Saved(*this), b = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
                return Grads{n[0] ? sum_to(g * b, a->shape()) : Tensor(), n[1] ? sum_to(g * a, b->shape()) : Tensor()};
            });
    return out;
}

Tensor Tensor::div(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "div");
    if (!a.is_floating_point()) {  // true division, as torch.div
        a = a.to(kFloat32);
        b = b.to(kFloat32);
    }
    Tensor out = map_binary(a, b, "div", BinaryOp::kDiv);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "DivBackward0", {this, &other},
                       [a = detail::Saved(*this), b = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g / b, a->shape()) : Tensor(),
                                        n[1] ? sum_to(g.neg() * a / (b * b), b->shape()) : Tensor()};
                       });
    return out;
}

Tensor Tensor::add(double s) const {
    Tensor a = for_scalar(*this, s, "add");
    Tensor out = map_unary(a, UnaryOp::kAdd, s);
    if (detail::needs_grad({this}))
        detail::record(out, "AddBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g}; });
    return out;
}

Tensor Tensor::sub(double s) const {
    Tensor a = for_scalar(*this, s, "sub");
    Tensor out = map_unary(a, UnaryOp::kSub, s);
    if (detail::needs_grad({this}))
        detail::record(out, "SubBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g}; });
    return out;
}

Tensor Tensor::mul(double s) const {
    Tensor a = for_scalar(*this, s, "mul");
    Tensor out = map_unary(a, UnaryOp::kMul, s);
    if (detail::needs_grad({this}))
        detail::record(out, "MulBackward0", {this}, [s](const Tensor& g, const NeedsGrad&) { return Grads{g * s}; });
    return out;
}

Tensor Tensor::div(double s) const {
    Tensor a = is_floating_point() ? *this : to(kFloat32);
    Tensor out = map_unary(a, UnaryOp::kDiv, s);
    if (detail::needs_grad({this}))
        detail::record(out, "DivBackward0", {this}, [s](const Tensor& g, const NeedsGrad&) { return Grads{g / s}; });
    return out;
}

Tensor Tensor::neg() const {
    detail::check_defined(*this, "neg");
    Tensor out = map_unary(*this, UnaryOp::kNeg);
    if (detail::needs_grad({this}))
        detail::record(out, "NegBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s - x`: PyTorch records it as RsubBackward1.
Tensor operator-(double s, const Tensor& x) {
    Tensor a = for_scalar(x, s, "rsub");
    Tensor out = map_unary(a, UnaryOp::kRsub, s);
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

Tensor Tensor::pow(double e) const {
    detail::check_defined(*this, "pow");
    // PyTorch's special exponents, exact (or as exact as sqrt) where exp(e log x) is not; and C's
    // x ** 0 == 1, 0 ** e == inf for e < 0, which xsimd's pow gets wrong.
    Tensor x = floating(*this);
    Tensor out = e == 0.0    ? ones_like(x)
                 : e == 2.0  ? map_unary(x, UnaryOp::kSquare)
                 : e == 3.0  ? map_unary(x, UnaryOp::kCube)
                 : e == 0.5  ? map_unary(x, UnaryOp::kSqrt)
                 : e == -1.0 ? map_unary(x, UnaryOp::kReciprocal)
                             : map_unary(x, UnaryOp::kPow, e);
    if (detail::needs_grad({this}))
        detail::record(out, "PowBackward0", {this}, [x = detail::Saved(*this), e](const Tensor& g, const NeedsGrad&) {
            return Grads{e == 0.0 ? zeros_like(g) : g * x->pow(e - 1.0) * e};
        });
    return out;
}

Tensor Tensor::pow(const Tensor& exponent) const {
    auto [a, b] = promoted(*this, exponent, "pow");
    Tensor out = float_binary(a, b, "pow", BinaryOp::kPow);
    if (detail::needs_grad({this, &exponent}))
        detail::record(out, "PowBackward1", {this, &exponent},
                       [a = detail::Saved(*this), b = detail::Saved(exponent), o = detail::Saved(out)](
                           const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) {
                               // b * a^(b-1), taken as 0 where b == 0 (PyTorch's convention; 0 * inf at a == 0).
                               Tensor d = b * a->pow(b - 1.0);
                               d = map_binary(d, b->to(d.dtype()), "pow", BinaryOp::kPowBaseGrad);
                               r[0] = sum_to(g * d, a->shape());
                           }
                           if (n[1]) {
                               // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (PyTorch's convention).
                               Tensor ln =
                                   map_binary(a->to(o->dtype()), b->to(o->dtype()), "pow", BinaryOp::kPowLogBase);
                               r[1] = sum_to(g * o * ln, b->shape());
                           }
                           return r;
                       });
    return out;
}

Tensor Tensor::sqrt() const {
    detail::check_defined(*this, "sqrt");
    Tensor out = map_unary(floating(*this), UnaryOp::kSqrt);
    if (detail::needs_grad({this}))
        detail::record(out, "SqrtBackward0", {this},
                       [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) { return Grads{g / (o * 2.0)}; });
    return out;
}

Tensor Tensor::rsqrt() const {
    detail::check_defined(*this, "rsqrt");
    Tensor out = map_unary(floating(*this), UnaryOp::kRsqrt);
    if (detail::needs_grad({this}))
        detail::record(out, "RsqrtBackward0", {this}, [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) {
            return Grads{g * o->pow(3.0) * -0.5};
        });
    return out;
}

Tensor Tensor::exp() const {
    detail::check_defined(*this, "exp");
    Tensor out = map_unary(floating(*this), UnaryOp::kExp);
    if (detail::needs_grad({this}))
        detail::record(out, "ExpBackward0", {this},
                       [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) { return Grads{g * o}; });
    return out;
}

Tensor Tensor::log() const {
    detail::check_defined(*this, "log");
    Tensor out = map_unary(floating(*this), UnaryOp::kLog);
    if (detail::needs_grad({this}))
        detail::record(out, "LogBackward0", {this},
                       [x = detail::Saved(*this)](const Tensor& g, const NeedsGrad&) { return Grads{g / x}; });
    return out;
}

Tensor Tensor::abs() const {
    detail::check_defined(*this, "abs");
    Tensor out = map_unary(*this, UnaryOp::kAbs);
    if (detail::needs_grad({this}))
        detail::record(out, "AbsBackward0", {this}, [x = detail::Saved(*this)](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, x->to(g.dtype()), "abs", BinaryOp::kAbsBackward)};
        });
    return out;
}

// ---- activations ----------------------------------------------------------------------------------

Tensor Tensor::tanh() const {
    detail::check_defined(*this, "tanh");
    Tensor out = map_unary(floating(*this), UnaryOp::kTanh);
    if (detail::needs_grad({this}))
        detail::record(out, "TanhBackward0", {this}, [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "tanh", BinaryOp::kTanhBackward)};
        });
    return out;
}

Tensor Tensor::sigmoid() const {
    detail::check_defined(*this, "sigmoid");
    Tensor out = map_unary(floating(*this), UnaryOp::kSigmoid);
    if (detail::needs_grad({this}))
        detail::record(out, "SigmoidBackward0", {this}, [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) {
            return Grads{map_binary(g, o, "sigmoid", BinaryOp::kSigmoidBackward)};
        });
    return out;
}

Tensor Tensor::relu() const {
    detail::check_defined(*this, "relu");
    Tensor out = map_unary(floating(*this), UnaryOp::kRelu);
    if (detail::needs_grad({this}))
        detail::record(out, "ReluBackward0", {this}, [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) {
            // PyTorch's threshold_backward: 0 where result <= 0, else g (also where the result is NaN).
            return Grads{map_binary(g, o, "relu", BinaryOp::kReluBackward)};
        });
    return out;
}

Tensor Tensor::gelu(const std::string& approximate) const {
    detail::check_defined(*this, "gelu");
    if (approximate != "none" && approximate != "tanh")
        detail::fail("gelu", "approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
    const bool tanh_form = approximate == "tanh";
    Tensor out = map_unary(floating(*this), tanh_form ? UnaryOp::kGeluTanh : UnaryOp::kGelu);
    if (detail::needs_grad({this}))
        detail::record(out, "GeluBackward0", {this},
                       [x = detail::Saved(*this), tanh_form](const Tensor& g, const NeedsGrad&) {
                           return Grads{map_binary(g, x->to(g.dtype()), "gelu",
                                                   tanh_form ? BinaryOp::kGeluTanhBackward : BinaryOp::kGeluBackward)};
                       });
    return out;
}

// ---- comparisons that select ---------------------------------------------------------------------

namespace {

/// Gradient of maximum/minimum: the winner takes g, ties split it evenly. Written as PyTorch's
/// `where(p == q, g / 2, g).masked_fill_(p < q, 0)` (p > q for minimum), so NaN lets g through.
Grads select_grads(const Tensor& g, const Tensor& a, const Tensor& b, const NeedsGrad& n, bool max) {
    Tensor x = a.to(g.dtype()), y = b.to(g.dtype());
    const BinaryOp share = max ? BinaryOp::kMaxShare : BinaryOp::kMinShare;
    const char* op = max ? "maximum" : "minimum";
    return Grads{n[0] ? sum_to(g * map_binary(x, y, op, share), a.shape()) : Tensor(),
                 n[1] ? sum_to(g * map_binary(y, x, op, share), b.shape()) : Tensor()};
}

}  // namespace

Tensor Tensor::maximum(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "maximum");
    Tensor out = map_binary(a, b, "maximum", BinaryOp::kMaximum);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "MaximumBackward0", {this, &other},
                       [a = detail::Saved(*this), b = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
                           return select_grads(g, a, b, n, true);
                       });
    return out;
}

Tensor Tensor::minimum(const Tensor& other) const {
    auto [a, b] = promoted(*this, other, "minimum");
    Tensor out = map_binary(a, b, "minimum", BinaryOp::kMinimum);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "MinimumBackward0", {this, &other},
                       [a = detail::Saved(*this), b = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
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
    // Integers clip the infinite defaults to their own range.
    auto bound = [&](double v) { return a.is_floating_point() ? v : std::clamp<double>(v, -9.2e18, 9.2e18); };
    Tensor out = map_unary(a, UnaryOp::kClamp, bound(l), bound(h));
    if (detail::needs_grad({this})) {
        // PyTorch's Tensor.clamp records ClampBackward1 with either bound or both (ClampMinBackward0
        // and ClampMaxBackward0 belong to clamp_min and clamp_max).
        detail::record(out, "ClampBackward1", {this},
                       [x = detail::Saved(*this), l, h](const Tensor& g, const NeedsGrad&) {
                           return Grads{map_binary(g, x->to(g.dtype()), "clamp", BinaryOp::kClampBackward, l, h)};
                       });
    }
    return out;
}

}  // namespace xgrad
