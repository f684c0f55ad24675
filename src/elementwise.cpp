// Elementwise arithmetic and activations, each forward beside its backward; the arithmetic itself
// is the device's kernels (kernels/kernels.hpp).
#include <cmath>
#include <limits>
#include <numbers>

#include "detail/convert.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::map_binary;
using detail::map_unary;
using detail::NeedsGrad;
using detail::sum_to;
using kernels::BinaryOp;
using kernels::UnaryOp;
using Grads = detail::GradList;

namespace {

/// Two operands in their result dtype (torch.result_type): the inputs themselves when they have it
/// already (no handle copied), else converted copies. Checks both are defined and on one device. With
/// `integers_to_float`, an integer or bool result type is float32 instead (true division, atan2: PyTorch's
/// promote_integer_inputs_to_float), each operand converted from its own dtype: a zero-dim int64 divisor
/// of a uint8 tensor keeps its value (300, not 300 wrapped to a uint8 44).
class Promote {
public:
    Promote(const Tensor& a, const Tensor& b, const char* op, bool integers_to_float = false) : a_(&a), b_(&b) {
        detail::check_defined(a, op);
        detail::check_defined(b, op);
        detail::check_same_device(a, b, op);
        DType t = detail::result_type(a, b);
        if (integers_to_float && !is_floating_point(t)) t = kFloat32;
        if (a.dtype() != t) a_ = &(ca_ = a.to(t));
        if (b.dtype() != t) b_ = &(cb_ = b.to(t));
    }
    Promote(const Promote&) = delete;
    Promote& operator=(const Promote&) = delete;
    const Tensor& a() const { return *a_; }
    const Tensor& b() const { return *b_; }

private:
    Tensor ca_, cb_;
    const Tensor* a_;
    const Tensor* b_;
};

/// Brings two operands to their result type (torch.result_type: zero-dim tensors count only when of
/// a higher category), as copies of the handles.
std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, const char* op) {
    const Promote p(a, b, op);
    return {p.a(), p.b()};
}

/// Integer tensors meet floating scalars in float32 (PyTorch's default dtype). A whole number stays
/// an integer scalar only while int64 can hold it (a Python int can't be 1e30 either).
Tensor for_scalar(const Tensor& a, double s, const char* op) {
    detail::check_defined(a, op);
    if (a.is_floating_point()) return a;
    if (!(std::floor(s) == s && detail::fits_int64(s))) return a.to(kFloat32);
    return a.dtype() == kBool ? a.to(kInt64) : a;  // bool meets an integer in int64
}

/// PyTorch refuses `-` with a bool operand (`b` null for a number); a and b are defined.
void check_not_bool_sub(const Tensor& a, const Tensor* b, const char* op) {
    const bool ba = a.dtype() == kBool, bb = b && b->dtype() == kBool;
    if (ba && bb)
        detail::fail(op,
                     "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                     "`logical_xor()` operator instead.");
    if (ba || bb)
        detail::fail(op,
                     "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                     "a mask, use the `~` or `logical_not()` operator instead.");
}

/// Floating-point maths of an integer tensor happens in float32, as torch.exp(int) does: reads as `a`
/// itself when it is floating already (no handle copied), else as its float32 copy.
class Floating {
public:
    explicit Floating(const Tensor& a) : p_(a.is_floating_point() ? &a : &(copy_ = a.to(kFloat32))) {}
    Floating(const Floating&) = delete;
    Floating& operator=(const Floating&) = delete;
    operator const Tensor&() const { return *p_; }  // NOLINT: implicit, as an argument to map_unary

private:
    Tensor copy_;
    const Tensor* p_;
};

Floating floating(const Tensor& a) {
    return Floating(a);
}

}  // namespace

// ---- arithmetic ---------------------------------------------------------------------------------

Tensor Tensor::add(const Tensor& other) const {
    const Promote p(*this, other, "add");
    Tensor out = map_binary(p.a(), p.b(), "add", BinaryOp::kAdd);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "AddBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](Tensor& g, const NeedsGrad& n) {
                           // The last use of g takes over the engine's handle to it: the gradient
                           // that keeps g's shape, when the other one is summed (a bias's).
                           if (!n[1]) return Grads{sum_to(std::move(g), sa), Tensor()};
                           if (!n[0]) return Grads{Tensor(), sum_to(std::move(g), sb)};
                           if (sa == g.shape()) {
                               Tensor gb = sum_to(g, sb);
                               return Grads{std::move(g), std::move(gb)};
                           }
                           Tensor ga = sum_to(g, sa);
                           return Grads{std::move(ga), sum_to(std::move(g), sb)};
                       });
    return out;
}

Tensor Tensor::sub(const Tensor& other) const {
    const Promote p(*this, other, "sub");
    check_not_bool_sub(*this, &other, "sub");
    Tensor out = map_binary(p.a(), p.b(), "sub", BinaryOp::kSub);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "SubBackward0", {this, &other},
                       [sa = shape(), sb = other.shape()](Tensor& g, const NeedsGrad& n) {
                           // The last use of g takes over the engine's handle to it.
                           Tensor gb = n[1] ? sum_to(g.neg(), sb) : Tensor();
                           return Grads{n[0] ? sum_to(std::move(g), sa) : Tensor(), std::move(gb)};
                       });
    return out;
}

Tensor Tensor::mul(const Tensor& other) const {
    const Promote p(*this, other, "mul");
    Tensor out = map_binary(p.a(), p.b(), "mul", BinaryOp::kMul);
    if (detail::needs_grad({this, &other}))
        detail::record(
            out, "MulBackward0", {this, &other},
            [a = detail::Saved(*this), b = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
                return Grads{n[0] ? sum_to(g * b, a->shape()) : Tensor(), n[1] ? sum_to(g * a, b->shape()) : Tensor()};
            });
    return out;
}

Tensor Tensor::div(const Tensor& other) const {
    const Promote p(*this, other, "div", true);  // true division, as torch.div
    Tensor out = map_binary(p.a(), p.b(), "div", BinaryOp::kDiv);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "DivBackward0", {this, &other},
                       [a = detail::Saved(*this), b = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g / b, a->shape()) : Tensor(),
                                        // PyTorch's -grad * ((self / other) / other), so its bits
                                        n[1] ? sum_to(g.neg() * (a->div(b) / b), b->shape()) : Tensor()};
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
    check_not_bool_sub(*this, nullptr, "sub");
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
    if (dtype() == kBool)
        detail::fail("neg",
                     "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                     "mask, use the `~` or `logical_not()` operator instead.");
    Tensor out = map_unary(*this, UnaryOp::kNeg);
    if (detail::needs_grad({this}))
        detail::record(out, "NegBackward0", {this}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s - x`: PyTorch records it as RsubBackward1.
Tensor operator-(double s, const Tensor& x) {
    Tensor a = for_scalar(x, s, "rsub");
    check_not_bool_sub(x, nullptr, "rsub");
    Tensor out = map_unary(a, UnaryOp::kRsub, s);
    if (detail::needs_grad({&x}))
        detail::record(out, "RsubBackward1", {&x}, [](const Tensor& g, const NeedsGrad&) { return Grads{g.neg()}; });
    return out;
}

/// `s / x`: PyTorch computes `x.reciprocal() * s`, so the result's grad_fn is MulBackward0, and the
/// reciprocal's gradient is its -grad * (1/x)², not pow's.
Tensor operator/(double s, const Tensor& x) {
    const Floating fx(x);
    Tensor r = map_unary(fx, UnaryOp::kReciprocal);
    if (detail::needs_grad({&x}))
        detail::record(r, "ReciprocalBackward0", {&x}, [o = detail::Saved(r)](const Tensor& g, const NeedsGrad&) {
            const Tensor& r = o;
            return Grads{g.neg() * (r * r)};
        });
    return r * s;
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
    // An integer tensor to a whole power stays an integer tensor and exact (PyTorch's powi).
    if (!is_floating_point() && std::floor(e) == e && detail::fits_int64(e)) {
        if (e < 0) detail::fail("pow", "Integers to negative integer powers are not allowed.");
        return map_unary(dtype() == kBool ? to(kInt64) : *this, UnaryOp::kPowInt, e);  // bool meets an int in int64
    }
    // PyTorch's special exponents, exact (or as exact as sqrt) where exp(e log x) is not; and C's
    // x ** 0 == 1, 0 ** e == inf for e < 0, which xsimd's pow gets wrong.
    const Floating fx(*this);
    const Tensor& x = fx;
    Tensor out = e == 0.0    ? ones_like(x)
                 : e == 2.0  ? map_unary(x, UnaryOp::kSquare)
                 : e == 3.0  ? map_unary(x, UnaryOp::kCube)
                 : e == 0.5  ? map_unary(x, UnaryOp::kSqrt)
                 : e == -1.0 ? map_unary(x, UnaryOp::kReciprocal)
                             : map_unary(x, UnaryOp::kPow, e);
    if (detail::needs_grad({this}))
        detail::record(out, "PowBackward0", {this}, [x = detail::Saved(*this), e](const Tensor& g, const NeedsGrad&) {
            // PyTorch's order, g * (e * x^(e-1)), in one pass (kPowBackward): (g * x^(e-1)) * e rounds
            // differently. x^1 is x exactly (PyTorch copies it), so the square's gradient skips that copy.
            if (e == 0.0) return Grads{zeros_like(g)};
            return Grads{map_binary(g, e == 2.0 ? x.get() : x->pow(e - 1.0), "pow", BinaryOp::kPowBackward, e)};
        });
    return out;
}

Tensor Tensor::pow(const Tensor& exponent) const {
    auto [a, b] = promoted(*this, exponent, "pow");
    detail::refuse_bool(a, "pow", "pow", false);
    if (!a.is_floating_point()) return map_binary(a, b, "pow", BinaryOp::kPow);  // integers: exact, no grad
    Tensor out = map_binary(a, b, "pow", BinaryOp::kPow);
    if (detail::needs_grad({this, &exponent}))
        detail::record(out, "PowBackward1", {this, &exponent},
                       [a = detail::Saved(*this), b = detail::Saved(exponent), o = detail::Saved(out)](
                           const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) {
                               // g (b a^(b-1)), taken as 0 where b == 0 (PyTorch's convention, and its
                               // order: where(b == 0, 0, g * (b * a.pow(b - 1))); 0 * inf at a == 0).
                               Tensor d = g * (b * a->pow(b - 1.0));
                               d = map_binary(d, b->to(d.dtype()), "pow", BinaryOp::kPowBaseGrad);
                               r[0] = sum_to(d, a->shape());
                           }
                           if (n[1]) {
                               // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (PyTorch's convention).
                               Tensor ln =
                                   map_binary(a->to(o->dtype()), b->to(o->dtype()), "pow", BinaryOp::kPowLogBase);
                               r[1] = sum_to(g * (o * ln), b->shape());  // PyTorch's order
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
    detail::refuse_bool(*this, "abs", "abs");
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
    if (dtype() == kBool) detail::fail("relu", "Boolean inputs not supported for relu");
    if (!is_floating_point()) return clamp_min(0.0);  // integers keep their dtype, as PyTorch's
    Tensor out = map_unary(*this, UnaryOp::kRelu);
    if (detail::needs_grad({this}))
        detail::record(out, "ReluBackward0", {this}, [o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) {
            // PyTorch's threshold_backward: 0 where result <= 0, else g (also where the result is NaN).
            // PyTorch's threshold_backward lists the result before the gradient: its layout first.
            return Grads{map_binary(g, o, "relu", BinaryOp::kReluBackward, 0, 0, true)};
        });
    return out;
}

Tensor Tensor::gelu(const std::string& approximate) const {
    detail::check_defined(*this, "gelu");
    if (approximate != "none" && approximate != "tanh")
        detail::fail("gelu", "approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
    const bool tanh_form = approximate == "tanh";
    if (!is_floating_point())  // PyTorch's kernel is built for floating types only
        detail::not_implemented_for(*this, "gelu", "GeluKernelImpl", false);
    const Tensor& in = *this;
    // PyTorch 1.13 hands a contiguous float32 tensor of more than one element to oneDNN (kGelu's
    // float32 kernel), forward and backward, and computes any other float32 tensor by its own erf
    // formula (kGeluErf); the two differ by a few ulps.
    const bool own_formula = !tanh_form && in.dtype() == kFloat32 && !(in.is_contiguous() && in.numel() > 1);
    Tensor out = map_unary(in, tanh_form ? UnaryOp::kGeluTanh : own_formula ? UnaryOp::kGeluErf : UnaryOp::kGelu);
    if (detail::needs_grad({this}))
        detail::record(out, "GeluBackward0", {this},
                       [x = detail::Saved(*this), tanh_form, own_formula](const Tensor& g, const NeedsGrad&) {
                           const BinaryOp op = tanh_form     ? BinaryOp::kGeluTanhBackward
                                               : own_formula ? BinaryOp::kGeluErfBackward
                                                             : BinaryOp::kGeluBackward;
                           return Grads{map_binary(g, x->to(g.dtype()), "gelu", op)};
                       });
    return out;
}

// ---- comparisons that select ---------------------------------------------------------------------

namespace {

/// Gradient of maximum/minimum: the winner takes g, ties split it evenly. Written as PyTorch's
/// `where(p == q, g / 2, g).masked_fill_(p < q, 0)` (p > q for minimum), so NaN lets g through.
Grads select_grads(const Tensor& g, const Tensor& a, const Tensor& b, const NeedsGrad& n, bool max) {
    // Masked, not multiplied by 0, so that a lost negative gradient is +0 as PyTorch's (its bits).
    const Tensor x = a.to(g.dtype()), y = b.to(g.dtype());
    const Tensor half = xgrad::where(x.eq(y), g * 0.5, g);
    // a's share is lost where a < b (a > b for minimum), b's where a > b (a < b). A where, not
    // masked_fill (whose result is row-major): PyTorch fills in place, keeping the layout of `half`,
    // which is the comparisons' (the operands'), and sums to an input's shape in that order.
    auto lost = [&](bool below) { return below ? x.lt(y) : x.gt(y); };
    return Grads{n[0] ? sum_to(xgrad::where(lost(max), 0.0, half), a.shape()) : Tensor(),
                 n[1] ? sum_to(xgrad::where(lost(!max), 0.0, half), b.shape()) : Tensor()};
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

namespace {

/// clamp with scalar bounds, recorded under `name` (clamp, clamp_min and clamp_max share the kernel).
Tensor clamp_scalar(const Tensor& self, std::optional<double> lo, std::optional<double> hi, const char* name) {
    detail::check_defined(self, "clamp");
    if (!lo && !hi) detail::fail("clamp", "at least one of min or max must be given");
    const double l = lo.value_or(-INFINITY), h = hi.value_or(INFINITY);
    // A fractional bound makes an int64 tensor float32, as a Python float does in PyTorch.
    Tensor a = for_scalar(for_scalar(self, lo.value_or(0.0), "clamp"), hi.value_or(0.0), "clamp");
    // Integers clip the infinite defaults to their own range.
    auto bound = [&](double v) { return a.is_floating_point() ? v : std::clamp<double>(v, -9.2e18, 9.2e18); };
    Tensor out = map_unary(a, UnaryOp::kClamp, bound(l), bound(h));
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self}, [x = detail::Saved(self), l, h](const Tensor& g, const NeedsGrad&) {
            // PyTorch's where(l <= x <= h, g, 0): the layout of that mask, a comparison of x alone (an
            // expanded x's dims of stride 0 keep their order there, not g's: x is copied dense first).
            Tensor xs = x->to(g.dtype());
            for (std::int64_t d = 0; d < xs.dim(); ++d)
                if (xs.size(d) > 1 && xs.strides()[static_cast<std::size_t>(d)] == 0) {
                    xs = xs.clone();
                    break;
                }
            return Grads{map_binary(g, xs, "clamp", BinaryOp::kClampBackward, l, h, true)};
        });
    return out;
}

}  // namespace

Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const {
    // PyTorch's Tensor.clamp records ClampBackward1 with either bound or both (ClampMinBackward0
    // and ClampMaxBackward0 belong to clamp_min and clamp_max).
    return clamp_scalar(*this, lo, hi, "ClampBackward1");
}

Tensor Tensor::clamp_min(double min) const {
    return clamp_scalar(*this, min, std::nullopt, "ClampMinBackward0");
}

Tensor Tensor::clamp_max(double max) const {
    return clamp_scalar(*this, std::nullopt, max, "ClampMaxBackward0");
}

namespace {

/// x >= y (x > y when `strict`), compared in g's dtype: the masks of clamp's gradients (bool).
Tensor mask(const Tensor& g, const Tensor& x, const Tensor& y, bool strict) {
    const Tensor a = x.to(g.dtype()), b = y.to(g.dtype());
    return strict ? a.gt(b) : a.ge(b);
}

/// g where the mask m holds, else +0: PyTorch's where(mask, grad, 0), whose zeros are +0 where a
/// product with a 0/1 mask would give -0 for a negative g (its bits).
Tensor keep(const Tensor& g, const Tensor& m) {
    return xgrad::where(m, g, 0.0);
}

}  // namespace

Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi) const {
    detail::check_defined(*this, "clamp");
    if (!lo.defined() && !hi.defined()) detail::fail("clamp", "At least one of 'min' or 'max' must not be None");
    for (const Tensor* b : {&lo, &hi})
        if (b->defined()) detail::check_same_device(*this, *b, "clamp");
    // torch.result_type of the three: a zero-dim bound counts only when of a higher category, and is
    // converted to the result's dtype first (a uint8 tensor's bound -2 is 254).
    const DType t = detail::result_type({this, &lo, &hi});
    // min(max(x, lo), hi): where hi < lo the result is hi, as PyTorch; NaN propagates.
    Tensor out = to(t);
    if (lo.defined()) out = map_binary(out, lo.to(t), "clamp", BinaryOp::kMaximum);
    if (hi.defined()) out = map_binary(out, hi.to(t), "clamp", BinaryOp::kMinimum);
    if (detail::needs_grad({this, &lo, &hi}))
        detail::record(out, "ClampBackward0", {this, &lo, &hi},
                       [x = detail::Saved(*this), l = detail::Saved(lo), h = detail::Saved(hi)](const Tensor& g,
                                                                                                const NeedsGrad& n) {
                           const Tensor &lo = l, &hi = h;
                           Grads r(3);
                           if (n[0]) {  // x >= lo && x <= hi
                               Tensor m = lo.defined() ? mask(g, x, lo, false) : Tensor();
                               if (hi.defined())
                                   m = m.defined() ? m.logical_and(mask(g, hi, x, false)) : mask(g, hi, x, false);
                               r[0] = sum_to(keep(g, m), x->shape());
                           }
                           if (n[1]) {  // x < lo && lo < hi
                               Tensor m = mask(g, lo, x, true);
                               if (hi.defined()) m = m.logical_and(mask(g, hi, lo, true));
                               r[1] = sum_to(keep(g, m), lo.shape());
                           }
                           if (n[2]) {  // x > hi || hi < lo
                               Tensor m = mask(g, x, hi, true);
                               if (lo.defined()) m = m.logical_or(mask(g, lo, hi, true));
                               r[2] = sum_to(keep(g, m), hi.shape());
                           }
                           return r;
                       });
    return out;
}

Tensor Tensor::clamp_min(const Tensor& min) const {
    auto [a, b] = promoted(*this, min, "clamp_min");
    Tensor out = map_binary(a, b, "clamp_min", BinaryOp::kMaximum);
    if (detail::needs_grad({this, &min}))
        detail::record(out, "ClampMinBackward1", {this, &min},
                       [x = detail::Saved(*this), m = detail::Saved(min)](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(keep(g, mask(g, x, m, false)), x->shape()) : Tensor(),
                                        n[1] ? sum_to(keep(g, mask(g, m, x, true)), m->shape()) : Tensor()};
                       });
    return out;
}

Tensor Tensor::clamp_max(const Tensor& max) const {
    auto [a, b] = promoted(*this, max, "clamp_max");
    Tensor out = map_binary(a, b, "clamp_max", BinaryOp::kMinimum);
    if (detail::needs_grad({this, &max}))
        detail::record(out, "ClampMaxBackward1", {this, &max},
                       [x = detail::Saved(*this), m = detail::Saved(max)](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(keep(g, mask(g, m, x, false)), x->shape()) : Tensor(),
                                        n[1] ? sum_to(keep(g, mask(g, x, m, true)), m->shape()) : Tensor()};
                       });
    return out;
}

// ---- rounding divisions and remainders ----------------------------------------------------------------

namespace {

/// Integer division by zero has no answer: PyTorch's CPU kernels raise ZeroDivisionError (and a
/// trapping CPU would crash), so the divisor is checked before any kernel runs.
void check_divisor(const Tensor& b, const char* op) {
    if (b.is_floating_point()) return;
    for (std::int64_t v : b.to_vector<std::int64_t>())
        if (v == 0) detail::fail(op, "ZeroDivisionError (integer division by zero)");
}

/// The divisor `s` as a 0-d tensor of a's dtype and device.
Tensor scalar_like(const Tensor& a, double s) {
    return full(Shape{}, s, FactoryOptions(a.dtype()).device(a.device()));
}

BinaryOp rounding_op(const std::string& mode) {
    if (mode != "trunc" && mode != "floor")
        detail::fail("div", "expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + mode + "'");
    return mode == "trunc" ? BinaryOp::kDivTrunc : BinaryOp::kDivFloor;
}

/// div with rounding: piecewise constant, so both gradients are zero (PyTorch's DivBackward2).
Tensor rounded_div(const Tensor& self, const Tensor& other, BinaryOp k, std::initializer_list<const Tensor*> inputs) {
    auto [a, b] = promoted(self, other, "div");
    detail::refuse_bool(a, "div", k == BinaryOp::kDivFloor ? "div_floor" : "div_trunc");
    check_divisor(b, "div");
    Tensor out = map_binary(a, b, "div", k);
    if (detail::needs_grad(inputs))
        detail::record(
            out, "DivBackward2", inputs,
            [sa = self.shape(), sb = other.shape(), count = inputs.size()](const Tensor& g, const NeedsGrad& n) {
                auto zeros_of = [&](const Shape& s) { return zeros(s, FactoryOptions(g.dtype()).device(g.device())); };
                Grads r(count);
                r[0] = n[0] ? zeros_of(sa) : Tensor();
                if (count > 1 && n[1]) r[1] = zeros_of(sb);
                return r;
            });
    return out;
}

/// remainder or fmod: d/dself = 1, d/dother = -(self / other rounded as the op rounds).
Tensor modulo(const Tensor& self, const Tensor& other, const char* op, BinaryOp k, const char* name,
              std::initializer_list<const Tensor*> inputs) {
    auto [a, b] = promoted(self, other, op);
    detail::refuse_bool(a, op, op);
    check_divisor(b, op);
    Tensor out = map_binary(a, b, op, k);
    if (detail::needs_grad(inputs)) {
        const BinaryOp rounding = k == BinaryOp::kRemainder ? BinaryOp::kDivFloor : BinaryOp::kDivTrunc;
        detail::record(out, name, inputs,
                       [x = detail::Saved(self), y = detail::Saved(other), rounding, count = inputs.size()](
                           const Tensor& g, const NeedsGrad& n) {
                           Grads r(count);
                           if (n[0]) r[0] = sum_to(g, x->shape());
                           if (count > 1 && n[1]) {
                               Tensor q = map_binary(x->to(g.dtype()), y->to(g.dtype()), "remainder", rounding);
                               r[1] = sum_to(g.neg() * q, y->shape());
                           }
                           return r;
                       });
    }
    return out;
}

}  // namespace

Tensor Tensor::div(const Tensor& other, const std::string& rounding_mode) const {
    const BinaryOp k = rounding_op(rounding_mode);
    return rounded_div(*this, other, k, {this, &other});
}

Tensor Tensor::div(double other, const std::string& rounding_mode) const {
    const BinaryOp k = rounding_op(rounding_mode);
    const Tensor a = for_scalar(*this, other, "div");
    return rounded_div(*this, scalar_like(a, other), k, {this});
}

Tensor Tensor::remainder(const Tensor& other) const {
    return modulo(*this, other, "remainder", BinaryOp::kRemainder, "RemainderBackward1", {this, &other});
}

Tensor Tensor::remainder(double other) const {
    const Tensor a = for_scalar(*this, other, "remainder");
    return modulo(*this, scalar_like(a, other), "remainder", BinaryOp::kRemainder, "RemainderBackward0", {this});
}

Tensor Tensor::fmod(const Tensor& other) const {
    return modulo(*this, other, "fmod", BinaryOp::kFmod, "FmodBackward1", {this, &other});
}

Tensor Tensor::fmod(double other) const {
    const Tensor a = for_scalar(*this, other, "fmod");
    return modulo(*this, scalar_like(a, other), "fmod", BinaryOp::kFmod, "FmodBackward0", {this});
}

Tensor Tensor::atan2(const Tensor& other) const {
    const Promote p(*this, other, "atan2", true);
    Tensor out = map_binary(p.a(), p.b(), "atan2", BinaryOp::kAtan2);
    if (detail::needs_grad({this, &other}))
        detail::record(out, "Atan2Backward0", {this, &other},
                       [y = detail::Saved(*this), x = detail::Saved(other)](const Tensor& g, const NeedsGrad& n) {
                           // d/dy = x / r², d/dx = -y / r², as PyTorch's atan2_backward: times 1/r²
                           const Tensor &xs = x, &ys = y, recip = 1.0 / (ys * ys + xs * xs);
                           return Grads{n[0] ? sum_to(g * xs * recip, ys.shape()) : Tensor(),
                                        n[1] ? sum_to(g * ys.neg() * recip, xs.shape()) : Tensor()};
                       });
    return out;
}

namespace {

/// PyTorch 1.13's logaddexp (base e) or logaddexp2 in one pass of the device's kernel (BinaryOp::kLogAddExp:
/// its vectorised formula along contiguous runs, its scalar one in their tails and on strided runs, so
/// its bits), in the operands' result type, which must be floating. The gradient of a is
/// g / (1 + exp(b - a)) (or pow(2, b - a)), and b's likewise, each summed to its input's shape.
Tensor log_add_exp(const Tensor& self, const Tensor& other, bool base2) {
    const char* op = base2 ? "logaddexp2" : "logaddexp";
    auto [a, b] = promoted(self, other, op);
    if (!a.is_floating_point())  // PyTorch's message; an integer meets a floating tensor in the latter's dtype
        detail::not_implemented_for(a, op, op);
    Tensor out = map_binary(a, b, op, base2 ? BinaryOp::kLogAddExp2 : BinaryOp::kLogAddExp);
    if (!detail::needs_grad({&self, &other})) return out;
    detail::record(
        out, base2 ? "Logaddexp2Backward0" : "LogaddexpBackward0", {&self, &other},
        [sa = detail::Saved(self), sb = detail::Saved(other), base2](const Tensor& g, const NeedsGrad& need) {
            const Tensor &x = sa, &y = sb;
            auto share = [&](const Tensor& mine, const Tensor& theirs) {
                const Tensor e = base2 ? pow(2.0, theirs - mine) : (theirs - mine).exp();
                return sum_to(g / (e + 1.0), mine.shape());
            };
            return Grads{need[0] ? share(x, y) : Tensor(), need[1] ? share(y, x) : Tensor()};
        });
    return out;
}

}  // namespace

Tensor Tensor::logaddexp(const Tensor& other) const {
    return log_add_exp(*this, other, false);
}

Tensor Tensor::logaddexp2(const Tensor& other) const {
    return log_add_exp(*this, other, true);
}

namespace {

/// lerp mixes no dtypes: PyTorch's message, with its C type names.
void check_lerp_dtype(const Tensor& self, const Tensor& t, const char* what) {
    if (t.dtype() == self.dtype()) return;
    auto c_name = [](DType d) {
        switch (d) {
            case kFloat32:
                return "float";
            case kFloat64:
                return "double";
            case kInt64:
                return "long int";
            case kInt32:
                return "int";
            case kUInt8:
                return "unsigned char";
            default:
                return "bool";
        }
    };
    detail::fail("lerp", std::string("expected dtype ") + c_name(self.dtype()) + " for `" + what + "` but got dtype " +
                             c_name(t.dtype()));
}

/// PyTorch's lerp of self, end and weight (one floating dtype), broadcast together, in one pass of the
/// device's lerp kernel (kernels::Backend::lerp: PyTorch's formula and its fused multiply-adds, so its
/// bits); the result takes its operands' layout, as the elementwise maps' results do.
Tensor lerp_map(const Tensor& self, const Tensor& end, const Tensor& weight) {
    detail::check_same_device(self, end, "lerp");
    detail::check_same_device(self, weight, "lerp");
    const Shape shape =
        detail::broadcast_shapes(detail::broadcast_shapes(self.shape(), end.shape(), "lerp"), weight.shape(), "lerp");
    const bool fresh = detail::row_major(self) && detail::row_major(end) && detail::row_major(weight);
    if (const Strides st =
            fresh && shape.numel() > 0 ? Strides() : detail::output_strides(shape, {&self, &end, &weight});
        !st.empty()) {
        const detail::OrderedOutput o(shape, st, self.dtype(), self.device(), "lerp");
        kernels::lerp(o.operand(self, shape), o.operand(end, shape), o.operand(weight, shape), o.dense);
        return o.result;
    }
    Tensor out = detail::make_empty(shape, self.dtype(), self.device(), "lerp");
    kernels::lerp(detail::broadcast_view(self, shape), detail::broadcast_view(end, shape),
                  detail::broadcast_view(weight, shape), out);
    return out;
}

}  // namespace

Tensor Tensor::lerp(const Tensor& end, double weight) const {
    detail::check_defined(*this, "lerp");
    detail::check_defined(end, "lerp");
    check_lerp_dtype(*this, end, "end");
    if (!is_floating_point()) detail::fail("lerp", "needs a floating-point tensor, got " + to_string(dtype()));
    // The weight as a 0-d tensor of self's dtype (PyTorch converts it so too), broadcast.
    Tensor out = lerp_map(*this, end, scalar_like(*this, weight));
    if (detail::needs_grad({this, &end}))
        detail::record(out, "LerpBackward0", {this, &end},
                       [sa = shape(), sb = end.shape(), weight](const Tensor& g, const NeedsGrad& n) {
                           return Grads{n[0] ? sum_to(g * (1.0 - weight), sa) : Tensor(),
                                        n[1] ? sum_to(g * weight, sb) : Tensor()};
                       });
    return out;
}

Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
    detail::check_defined(*this, "lerp");
    detail::check_defined(end, "lerp");
    detail::check_defined(weight, "lerp");
    check_lerp_dtype(*this, end, "end");
    check_lerp_dtype(*this, weight, "weight");
    if (!is_floating_point()) detail::fail("lerp", "needs a floating-point tensor, got " + to_string(dtype()));
    Tensor out = lerp_map(*this, end, weight);
    if (detail::needs_grad({this, &end, &weight}))
        detail::record(out, "LerpBackward1", {this, &end, &weight},
                       [a = detail::Saved(*this), b = detail::Saved(end), w = detail::Saved(weight)](
                           const Tensor& g, const NeedsGrad& n) {
                           const Tensor &start = a, &stop = b, &wt = w;
                           return Grads{n[0] ? sum_to(g * (1.0 - wt), start.shape()) : Tensor(),
                                        n[1] ? sum_to(g * wt, stop.shape()) : Tensor(),
                                        n[2] ? sum_to(g * (stop - start), wt.shape()) : Tensor()};
                       });
    return out;
}

// ---- trigonometry, logarithms, exponentials, rounding -------------------------------------------------

namespace {

/// The gradient of a one-operand map from g, the input and the output.
using UnaryGrad = Tensor (*)(const Tensor& g, const Tensor& x, const Tensor& out);

/// A floating map of one operand (integers computed in float32, as PyTorch) recorded as `name`.
Tensor unary_math(const Tensor& self, const char* op, UnaryOp k, const char* name, UnaryGrad grad) {
    detail::check_defined(self, op);
    Tensor out = map_unary(floating(self), k);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [x = detail::Saved(self), o = detail::Saved(out), grad](const Tensor& g, const NeedsGrad&) {
                           return Grads{grad(g, x, o)};
                       });
    return out;
}

/// A rounding map: integers come back unchanged (a copy), floats get a zero gradient.
Tensor rounding(const Tensor& self, const char* op, UnaryOp k, const char* name) {
    detail::check_defined(self, op);
    if (!self.is_floating_point()) return k == UnaryOp::kSign ? map_unary(self, k) : self.clone();
    Tensor out = map_unary(self, k);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self}, [](const Tensor& g, const NeedsGrad&) { return Grads{zeros_like(g)}; });
    return out;
}

// PyTorch's constants in log2's and log10's gradients (its 2.3025850929940456 is an ulp below ln 10).
constexpr double kLn2 = 0.6931471805599453, kLn10 = 2.3025850929940456;

}  // namespace

Tensor Tensor::erf() const {
    return unary_math(*this, "erf", UnaryOp::kErf, "ErfBackward0", [](const Tensor& g, const Tensor& x, const Tensor&) {
        return (x * x).neg().exp() * (2.0 * std::numbers::inv_sqrtpi) * g;  // 2/sqrt(pi) exp(-x²)
    });
}
Tensor Tensor::sin() const {
    return unary_math(*this, "sin", UnaryOp::kSin, "SinBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g * x.cos(); });
}
Tensor Tensor::cos() const {
    return unary_math(*this, "cos", UnaryOp::kCos, "CosBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g * x.sin().neg(); });
}
Tensor Tensor::tan() const {
    return unary_math(*this, "tan", UnaryOp::kTan, "TanBackward0",
                      [](const Tensor& g, const Tensor&, const Tensor& o) { return g * (o * o + 1.0); });
}
Tensor Tensor::asin() const {
    return unary_math(*this, "asin", UnaryOp::kAsin, "AsinBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g * (1.0 - x * x).rsqrt(); });
}
Tensor Tensor::acos() const {
    return unary_math(*this, "acos", UnaryOp::kAcos, "AcosBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g * (1.0 - x * x).rsqrt().neg(); });
}
Tensor Tensor::atan() const {
    return unary_math(*this, "atan", UnaryOp::kAtan, "AtanBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g / (x * x + 1.0); });
}
Tensor Tensor::sinh() const {
    return unary_math(*this, "sinh", UnaryOp::kSinh, "SinhBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g * x.cosh(); });
}
Tensor Tensor::cosh() const {
    return unary_math(*this, "cosh", UnaryOp::kCosh, "CoshBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g * x.sinh(); });
}
Tensor Tensor::log2() const {
    return unary_math(*this, "log2", UnaryOp::kLog2, "Log2Backward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g / (x * kLn2); });
}
Tensor Tensor::log10() const {
    return unary_math(*this, "log10", UnaryOp::kLog10, "Log10Backward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g / (x * kLn10); });
}
Tensor Tensor::log1p() const {
    return unary_math(*this, "log1p", UnaryOp::kLog1p, "Log1PBackward0",
                      [](const Tensor& g, const Tensor& x, const Tensor&) { return g / (x + 1.0); });
}
Tensor Tensor::expm1() const {
    return unary_math(*this, "expm1", UnaryOp::kExpm1, "Expm1Backward0",
                      [](const Tensor& g, const Tensor&, const Tensor& o) { return g * (o + 1.0); });
}
Tensor Tensor::exp2() const {
    return unary_math(*this, "exp2", UnaryOp::kExp2, "Exp2Backward0",
                      [](const Tensor& g, const Tensor&, const Tensor& o) { return g * o * kLn2; });
}
Tensor Tensor::sign() const {
    return rounding(*this, "sign", UnaryOp::kSign, "SignBackward0");
}
Tensor Tensor::floor() const {
    detail::refuse_bool(*this, "floor", "floor_vml");
    return rounding(*this, "floor", UnaryOp::kFloor, "FloorBackward0");
}
Tensor Tensor::ceil() const {
    detail::refuse_bool(*this, "ceil", "ceil_vml");
    return rounding(*this, "ceil", UnaryOp::kCeil, "CeilBackward0");
}
Tensor Tensor::round() const {
    detail::refuse_bool(*this, "round", "round_vml");
    return rounding(*this, "round", UnaryOp::kRound, "RoundBackward0");
}
Tensor Tensor::trunc() const {
    detail::refuse_bool(*this, "trunc", "trunc_vml");
    return rounding(*this, "trunc", UnaryOp::kTrunc, "TruncBackward0");
}

/// `base ** exponent`: PyTorch's pow(Scalar, Tensor), recorded as PowBackward2. Its result is
/// contiguous whatever the exponent's layout, as PyTorch's (whose loop then takes a transposed
/// exponent element by element, with the scalar formula).
Tensor pow(double base, const Tensor& exponent) {
    Tensor e = for_scalar(exponent, base, "pow");
    // uint8 and int32 exponents: the power in int64, wrapped back (as PyTorch's, which computes in the
    // narrow type: the same residues).
    if (e.dtype() == kUInt8 || e.dtype() == kInt32) return pow(base, e.to(kInt64)).to(e.dtype());
    Tensor out = detail::map_binary_row_major(scalar_like(e, base), e, "pow", BinaryOp::kPow);
    if (detail::needs_grad({&exponent}))
        detail::record(out, "PowBackward2", {&exponent},
                       [o = detail::Saved(out), e = detail::Saved(exponent), base](const Tensor& g, const NeedsGrad&) {
                           // d/de base^e = base^e ln(base), as PyTorch: g * (result * log(base)), the log
                           // the Scalar's own (in double); 0 where base == 0 and e >= 0.
                           const Tensor& r = o;
                           if (base != 0.0) return Grads{g * (r * std::log(base))};
                           Tensor ln = map_binary(scalar_like(r, base), e->to(r.dtype()), "pow", BinaryOp::kPowLogBase);
                           return Grads{g * (r * ln)};
                       });
    return out;
}

}  // namespace xgrad
