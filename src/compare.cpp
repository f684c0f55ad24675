// Comparisons, logical ops, the isnan family, any/all, equal and isclose: none differentiable, all
// giving bool tensors (kernels::compare) or bools, with PyTorch's promotion of the operands first.
#include <charconv>
#include <cmath>

#include "detail/convert.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using kernels::BinaryOp;
using kernels::CompareOp;

namespace {

/// The shortest text that reads back as `v` ("-1", "-0.5"), as Python prints a number.
std::string number(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

/// out = op(x, y) with x and y of one dtype (any: the kernels compare bool, uint8 and int32 in place,
/// where converting to int64 first cost two copies; logical_and of two masks took 45 times PyTorch's
/// time), broadcast; names `name` in the errors. The result takes the operands' layout, as PyTorch's
/// (a transposed x gives a transposed mask, and a where or a sum of it later runs in that order).
Tensor compare_same(const Tensor& x, const Tensor& y, const char* name, CompareOp op) {
    detail::check_same_device(x, y, name);
    const Shape shape = x.shape() == y.shape() ? x.shape() : detail::broadcast_shapes(x.shape(), y.shape(), name);
    const bool fresh = detail::row_major(x) && detail::row_major(y);
    if (const Strides st = fresh || shape.numel() == 0 ? Strides() : detail::output_strides(shape, {&x, &y});
        !st.empty()) {
        const detail::OrderedOutput o(shape, st, kBool, x.device(), name);
        kernels::compare(op, o.operand(x, shape), o.operand(y, shape), o.dense);
        return o.result;
    }
    Tensor out = detail::make_empty(shape, kBool, x.device(), name);
    kernels::compare(op, detail::broadcast_view(x, shape), detail::broadcast_view(y, shape), out);
    return out;
}

/// A comparison (or logical op) of two tensors: both brought to torch.result_type first, so that
/// `uint8 == int64 0-d` compares the 0-d value converted to uint8, as PyTorch does.
Tensor compare(const Tensor& a, const Tensor& b, const char* name, CompareOp op) {
    detail::check_defined(a, name);
    detail::check_defined(b, name);
    detail::check_same_device(a, b, name);
    const DType t = detail::result_type(a, b);
    return compare_same(a.to(t), b.to(t), name, op);
}

/// A comparison with a number, which PyTorch wraps as a 0-d tensor: a whole number (that int64 can
/// hold) meets an integer tensor in the tensor's dtype (converted, wrapping: `uint8 == 256` compares
/// with 0), any other number meets it in float32; a floating tensor compares in its own dtype.
Tensor compare(const Tensor& a, double s, const char* name, CompareOp op) {
    detail::check_defined(a, name);
    DType t = a.dtype();
    if (!a.is_floating_point()) {
        if (!(std::floor(s) == s && detail::fits_int64(s)))
            t = kFloat32;
        else if (t == kBool && s != 0 && s != 1)
            t = kInt64;  // bool meets an integer in int64 (0 and 1 compare the same as bools)
    }
    Tensor scalar = is_floating_point(t) ? full({}, s, FactoryOptions(t).device(a.device()))
                                         : full({}, s, FactoryOptions(kInt64).device(a.device())).to(t);
    return compare_same(a.to(t), scalar, name, op);
}

/// A test of each element (isnan ...): y is not read, so x stands in for it.
Tensor test(const Tensor& x, const char* name, CompareOp op) {
    detail::check_defined(x, name);
    return compare_same(x, x, name, op);
}

/// PyTorch's error for a bitwise op on a floating tensor: `"bitwise_and_cpu" not implemented for 'Float'`.
[[noreturn]] void refuse_floating(const char* name, DType t, Device device) {
    detail::fail(name, std::string("\"") + name + (device.is_cpu() ? "_cpu" : "_cuda") + "\" not implemented for '" +
                           detail::scalar_type_name(t) + "'");
}

/// PyTorch's bitwise operators: on bool tensors the logical ops (a bool result), on integer tensors
/// bitwise in their result_type (bool operands as 0 and 1); floating tensors throw.
Tensor bitwise(const Tensor& a, const Tensor& b, const char* name, CompareOp logical, BinaryOp op) {
    detail::check_defined(a, name);
    detail::check_defined(b, name);
    detail::check_same_device(a, b, name);
    const DType t = detail::result_type(a, b);
    if (is_floating_point(t)) refuse_floating(name, t, a.device());
    if (t == kBool) return compare(a, b, name, logical);
    return detail::map_binary(a.to(t), b.to(t), name, op);
}

/// How many elements over `dims` satisfy `op` against 0 (an int64 count, 0 over an empty range).
Tensor count(const Tensor& x, const char* name, CompareOp op, const Dims& dims, bool keepdim) {
    return compare(x, 0.0, name, op).to(kInt64).sum(dims, keepdim);
}

/// The result of any/all: bool, except that PyTorch 1.13 gives uint8 for uint8 tensors.
Tensor any_all_result(const Tensor& x, const Tensor& counts, bool any) {
    Tensor b = any ? compare(counts, 0.0, "any", CompareOp::kGt) : compare(counts, 0.0, "all", CompareOp::kEq);
    return x.dtype() == kUInt8 ? b.to(kUInt8) : b;
}

}  // namespace

// ---- comparisons ----------------------------------------------------------------------------------------

Tensor Tensor::eq(const Tensor& other) const {
    return compare(*this, other, "eq", CompareOp::kEq);
}
Tensor Tensor::eq(double other) const {
    return compare(*this, other, "eq", CompareOp::kEq);
}
Tensor Tensor::ne(const Tensor& other) const {
    return compare(*this, other, "ne", CompareOp::kNe);
}
Tensor Tensor::ne(double other) const {
    return compare(*this, other, "ne", CompareOp::kNe);
}
Tensor Tensor::lt(const Tensor& other) const {
    return compare(*this, other, "lt", CompareOp::kLt);
}
Tensor Tensor::lt(double other) const {
    return compare(*this, other, "lt", CompareOp::kLt);
}
Tensor Tensor::le(const Tensor& other) const {
    return compare(*this, other, "le", CompareOp::kLe);
}
Tensor Tensor::le(double other) const {
    return compare(*this, other, "le", CompareOp::kLe);
}
Tensor Tensor::gt(const Tensor& other) const {
    return compare(*this, other, "gt", CompareOp::kGt);
}
Tensor Tensor::gt(double other) const {
    return compare(*this, other, "gt", CompareOp::kGt);
}
Tensor Tensor::ge(const Tensor& other) const {
    return compare(*this, other, "ge", CompareOp::kGe);
}
Tensor Tensor::ge(double other) const {
    return compare(*this, other, "ge", CompareOp::kGe);
}

Tensor operator==(const Tensor& a, const Tensor& b) {
    return a.eq(b);
}
Tensor operator==(const Tensor& a, double b) {
    return a.eq(b);
}
Tensor operator==(double a, const Tensor& b) {
    return b.eq(a);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
    return a.ne(b);
}
Tensor operator!=(const Tensor& a, double b) {
    return a.ne(b);
}
Tensor operator!=(double a, const Tensor& b) {
    return b.ne(a);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
    return a.lt(b);
}
Tensor operator<(const Tensor& a, double b) {
    return a.lt(b);
}
Tensor operator<(double a, const Tensor& b) {
    return b.gt(a);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
    return a.le(b);
}
Tensor operator<=(const Tensor& a, double b) {
    return a.le(b);
}
Tensor operator<=(double a, const Tensor& b) {
    return b.ge(a);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
    return a.gt(b);
}
Tensor operator>(const Tensor& a, double b) {
    return a.gt(b);
}
Tensor operator>(double a, const Tensor& b) {
    return b.lt(a);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
    return a.ge(b);
}
Tensor operator>=(const Tensor& a, double b) {
    return a.ge(b);
}
Tensor operator>=(double a, const Tensor& b) {
    return b.le(a);
}

// ---- logical ops ----------------------------------------------------------------------------------------

Tensor Tensor::logical_and(const Tensor& other) const {
    return compare(*this, other, "logical_and", CompareOp::kLogicalAnd);
}
Tensor Tensor::logical_or(const Tensor& other) const {
    return compare(*this, other, "logical_or", CompareOp::kLogicalOr);
}
Tensor Tensor::logical_xor(const Tensor& other) const {
    return compare(*this, other, "logical_xor", CompareOp::kLogicalXor);
}
Tensor Tensor::logical_not() const {
    return compare(*this, 0.0, "logical_not", CompareOp::kEq);
}

Tensor detail::integral_operand(std::int64_t value, bool boolean, const Tensor& like) {
    detail::check_defined(like, "bitwise");
    return from_vector(std::vector<std::int64_t>{value}, Shape{},
                       TensorOptions{.dtype = boolean ? kBool : kInt64, .device = like.device()});
}

Tensor operator&(const Tensor& a, const Tensor& b) {
    return bitwise(a, b, "bitwise_and", CompareOp::kLogicalAnd, BinaryOp::kBitAnd);
}
Tensor operator|(const Tensor& a, const Tensor& b) {
    return bitwise(a, b, "bitwise_or", CompareOp::kLogicalOr, BinaryOp::kBitOr);
}
Tensor operator^(const Tensor& a, const Tensor& b) {
    return bitwise(a, b, "bitwise_xor", CompareOp::kLogicalXor, BinaryOp::kBitXor);
}
Tensor operator~(const Tensor& a) {
    detail::check_defined(a, "bitwise_not");
    if (a.dtype() == kBool) return a.logical_not();
    if (a.is_floating_point()) refuse_floating("bitwise_not", a.dtype(), a.device());
    // ~x == -x - 1 in two's complement; uint8 and int32 wrap back from int64 (~5 == 250 for uint8).
    return detail::map_unary(detail::map_unary(a, kernels::UnaryOp::kNeg), kernels::UnaryOp::kSub, 1.0);
}

// ---- tests of each element ------------------------------------------------------------------------------

Tensor Tensor::isnan() const {
    return test(*this, "isnan", CompareOp::kIsNan);
}
Tensor Tensor::isinf() const {
    return test(*this, "isinf", CompareOp::kIsInf);
}
Tensor Tensor::isposinf() const {
    return test(*this, "isposinf", CompareOp::kIsPosInf);
}
Tensor Tensor::isneginf() const {
    return test(*this, "isneginf", CompareOp::kIsNegInf);
}
Tensor Tensor::isfinite() const {
    return test(*this, "isfinite", CompareOp::kIsFinite);
}

// ---- any / all --------------------------------------------------------------------------------------------

Tensor Tensor::any() const {
    detail::check_defined(*this, "any");
    return any_all_result(*this, count(*this, "any", CompareOp::kNe, Dims(std::vector<std::int64_t>{}), false), true);
}
Tensor Tensor::all() const {
    detail::check_defined(*this, "all");
    return any_all_result(*this, count(*this, "all", CompareOp::kEq, Dims(std::vector<std::int64_t>{}), false), false);
}
Tensor Tensor::any(std::int64_t dim, bool keepdim) const {
    detail::check_defined(*this, "any");
    const std::int64_t d = detail::wrap_dim(dim, this->dim(), "any");
    return any_all_result(*this, count(*this, "any", CompareOp::kNe, Dims({d}), keepdim), true);
}
Tensor Tensor::all(std::int64_t dim, bool keepdim) const {
    detail::check_defined(*this, "all");
    const std::int64_t d = detail::wrap_dim(dim, this->dim(), "all");
    return any_all_result(*this, count(*this, "all", CompareOp::kEq, Dims({d}), keepdim), false);
}

// ---- equal, isclose, allclose -------------------------------------------------------------------------------

bool Tensor::equal(const Tensor& other) const {
    detail::check_defined(*this, "equal");
    detail::check_defined(other, "equal");
    detail::check_same_device(*this, other, "equal");
    if (shape() != other.shape()) return false;
    return eq(other).all().item<bool>();
}

Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
    detail::check_defined(*this, "isclose");
    detail::check_defined(other, "isclose");
    if (dtype() != other.dtype())
        detail::fail("isclose",
                     detail::scalar_type_name(dtype()) + " did not match " + detail::scalar_type_name(other.dtype()));
    if (!(rtol >= 0)) detail::fail("isclose", "rtol must be greater than or equal to zero, but got " + number(rtol));
    if (!(atol >= 0)) detail::fail("isclose", "atol must be greater than or equal to zero, but got " + number(atol));
    detail::broadcast_shapes(shape(), other.shape(), "isclose");  // names isclose in the error
    Tensor close = eq(other);
    if (equal_nan && is_floating_point()) close = close.logical_or(isnan().logical_and(other.isnan()));
    if (rtol == 0 && atol == 0) return close;
    // PyTorch's formula, in float32 for bool and integer tensors (so uint8 differences do not wrap).
    const Tensor a = is_floating_point() ? *this : to(kFloat32);
    const Tensor b = other.is_floating_point() ? other : other.to(kFloat32);
    const Tensor allowed = b.mul(rtol).abs().add(atol);
    const Tensor actual = a.sub(b).abs();
    return close.logical_or(actual.isfinite().logical_and(actual.le(allowed)));
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
    return isclose(other, rtol, atol, equal_nan).all().item<bool>();
}

}  // namespace xgrad
