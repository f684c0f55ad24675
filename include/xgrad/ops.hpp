// Free-function forms of tensor operations, spelled as in `torch.*`, and the ops that take many tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xgrad/tensor.hpp"

namespace xgrad {

/// Matrix product with torch.matmul's rules: 1-D·1-D is a dot product, 2-D·2-D a matrix product,
/// N-D operands are batches of matrices whose batch dimensions broadcast.
///
/// Throws `std::invalid_argument` naming both shapes when the inner sizes differ.
Tensor matmul(const Tensor& a, const Tensor& b);
/// The dtype of an elementwise op's result on `a` and `b`, as `torch.result_type`: the promoted dtype
/// of the operands, where a zero-dim tensor counts only when it is of a higher category (bool <
/// integer < floating) than the dimensioned ones (`ones({2}, kInt32) + tensor(1.0, kFloat64)` is
/// float64, `ones({2}) + tensor(1.0, kFloat64)` float32).
DType result_type(const Tensor& a, const Tensor& b);
/// Joins tensors along an existing dimension; all other sizes must match.
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Joins tensors of equal shape along a new dimension.
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Elementwise maximum with broadcasting.
inline Tensor maximum(const Tensor& a, const Tensor& b) {
    return a.maximum(b);
}
/// Elementwise minimum with broadcasting.
inline Tensor minimum(const Tensor& a, const Tensor& b) {
    return a.minimum(b);
}

/// `torch.sqrt(x)`.
inline Tensor sqrt(const Tensor& x) {
    return x.sqrt();
}
/// `torch.rsqrt(x)`.
inline Tensor rsqrt(const Tensor& x) {
    return x.rsqrt();
}
/// `torch.exp(x)`.
inline Tensor exp(const Tensor& x) {
    return x.exp();
}
/// `torch.log(x)`.
inline Tensor log(const Tensor& x) {
    return x.log();
}
/// `torch.abs(x)`.
inline Tensor abs(const Tensor& x) {
    return x.abs();
}
/// `torch.tanh(x)`.
inline Tensor tanh(const Tensor& x) {
    return x.tanh();
}
/// `torch.sigmoid(x)`.
inline Tensor sigmoid(const Tensor& x) {
    return x.sigmoid();
}
/// `torch.relu(x)`.
inline Tensor relu(const Tensor& x) {
    return x.relu();
}
/// `torch.pow(x, exponent)`. An int64 tensor to a whole power stays int64 and exact (wrapping on
/// overflow, as PyTorch); to a negative whole power it throws "Integers to negative integer powers
/// are not allowed.", as PyTorch does for `x.pow(-2)` (a C++ double cannot tell -2 from -2.0).
inline Tensor pow(const Tensor& x, double exponent) {
    return x.pow(exponent);
}
/// `torch.pow(x, exponent)` with a tensor exponent.
inline Tensor pow(const Tensor& x, const Tensor& exponent) {
    return x.pow(exponent);
}
/// `torch.clamp(x, min, max)`.
inline Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt) {
    return x.clamp(min, max);
}
// ---- more elementwise maths (torch.erf, torch.sin, ...): the Tensor methods as free functions ----
/// `torch.erf(x)`: the error function.
inline Tensor erf(const Tensor& x) {
    return x.erf();
}
/// `torch.sin(x)`: sine.
inline Tensor sin(const Tensor& x) {
    return x.sin();
}
/// `torch.cos(x)`: cosine.
inline Tensor cos(const Tensor& x) {
    return x.cos();
}
/// `torch.tan(x)`: tangent.
inline Tensor tan(const Tensor& x) {
    return x.tan();
}
/// `torch.asin(x)`: arcsine.
inline Tensor asin(const Tensor& x) {
    return x.asin();
}
/// `torch.acos(x)`: arccosine.
inline Tensor acos(const Tensor& x) {
    return x.acos();
}
/// `torch.atan(x)`: arctangent.
inline Tensor atan(const Tensor& x) {
    return x.atan();
}
/// `torch.sinh(x)`: hyperbolic sine.
inline Tensor sinh(const Tensor& x) {
    return x.sinh();
}
/// `torch.cosh(x)`: hyperbolic cosine.
inline Tensor cosh(const Tensor& x) {
    return x.cosh();
}
/// `torch.log2(x)`: base-2 logarithm.
inline Tensor log2(const Tensor& x) {
    return x.log2();
}
/// `torch.log10(x)`: base-10 logarithm.
inline Tensor log10(const Tensor& x) {
    return x.log10();
}
/// `torch.log1p(x)`: `log(1 + x)`.
inline Tensor log1p(const Tensor& x) {
    return x.log1p();
}
/// `torch.logaddexp(a, b)`: `log(exp(a) + exp(b))` without overflow (broadcasting).
inline Tensor logaddexp(const Tensor& a, const Tensor& b) {
    return a.logaddexp(b);
}
/// `torch.logaddexp2(a, b)`: `log2(2^a + 2^b)`.
inline Tensor logaddexp2(const Tensor& a, const Tensor& b) {
    return a.logaddexp2(b);
}
/// `torch.nan_to_num(x, nan, posinf, neginf)` (Tensor::nan_to_num).
inline Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                         std::optional<double> neginf = std::nullopt) {
    return x.nan_to_num(nan, posinf, neginf);
}
/// `torch.diff(x, n, dim, prepend, append)` (Tensor::diff).
inline Tensor diff(const Tensor& x, std::int64_t n = 1, std::int64_t dim = -1, const Tensor& prepend = Tensor(),
                   const Tensor& append = Tensor()) {
    return x.diff(n, dim, prepend, append);
}
/// `torch.count_nonzero(x, dims)` (Tensor::count_nonzero).
inline Tensor count_nonzero(const Tensor& x, const Dims& dims = Dims(std::vector<std::int64_t>{})) {
    return x.count_nonzero(dims);
}
/// What xgrad::unique and xgrad::unique_consecutive return: the values, and when asked for, each
/// input element's index in them (input's shape) and how often each value occurs (int64).
struct UniqueResult {
    Tensor values;   ///< The distinct values (1-D).
    Tensor inverse;  ///< With return_inverse: values[inverse] is the input; else undefined.
    Tensor counts;   ///< With return_counts: the occurrences of each value; else undefined.
};
/// The distinct elements of `x`, ascending, as `torch.unique(x, sorted, return_inverse,
/// return_counts)` (dim = None). Of equal values (-0 and +0) the first in x is kept; each NaN is a
/// value of its own, after the numbers (PyTorch 1.13's CPU kernel places NaNs anywhere and counts
/// them 0). `sorted = false` allows any order; xgrad sorts. No gradient flows to x.
/// @code
/// auto [labels, which, n] = xgrad::unique(y, true, true, true);   // classes, class of each, sizes
/// @endcode
UniqueResult unique(const Tensor& x, bool sorted = true, bool return_inverse = false, bool return_counts = false);
/// One value of each run of equal consecutive elements of `x` (flattened), as
/// `torch.unique_consecutive(x, return_inverse, return_counts)`.
UniqueResult unique_consecutive(const Tensor& x, bool return_inverse = false, bool return_counts = false);
/// Coordinate grids from 0-D or 1-D tensors of one dtype, as `torch.meshgrid`: with `indexing` "ij"
/// output k has shape (n0, n1, ...) and varies along dim k; with "xy" the first two dims are swapped
/// (NumPy's and MATLAB's convention). The outputs are expanded views of the inputs.
/// @code
/// auto grids = xgrad::meshgrid({xgrad::arange(3.0), xgrad::arange(2.0)});   // two (3, 2) grids
/// @endcode
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");
/// `torch.expm1(x)`: `exp(x) - 1`.
inline Tensor expm1(const Tensor& x) {
    return x.expm1();
}
/// `torch.exp2(x)`: `2 ** x`.
inline Tensor exp2(const Tensor& x) {
    return x.exp2();
}
/// `torch.sign(x)`: -1, 0 or 1 by sign.
inline Tensor sign(const Tensor& x) {
    return x.sign();
}
/// `torch.floor(x)`: rounded down.
inline Tensor floor(const Tensor& x) {
    return x.floor();
}
/// `torch.ceil(x)`: rounded up.
inline Tensor ceil(const Tensor& x) {
    return x.ceil();
}
/// `torch.round(x)`: rounded half to even.
inline Tensor round(const Tensor& x) {
    return x.round();
}
/// `torch.trunc(x)`: rounded toward zero.
inline Tensor trunc(const Tensor& x) {
    return x.trunc();
}
/// `torch.atan2(y, x)`: the angle of the point (x, y).
inline Tensor atan2(const Tensor& y, const Tensor& x) {
    return y.atan2(x);
}
/// `torch.pow(base, exponent)` with a scalar base (differentiable in the exponent).
Tensor pow(double base, const Tensor& exponent);
/// `torch.remainder(a, b)`: Python's `%` (the divisor's sign).
inline Tensor remainder(const Tensor& a, const Tensor& b) {
    return a.remainder(b);
}
/// `torch.remainder(a, b)` with a scalar divisor.
inline Tensor remainder(const Tensor& a, double b) {
    return a.remainder(b);
}
/// `torch.fmod(a, b)`: C's fmod (the dividend's sign).
inline Tensor fmod(const Tensor& a, const Tensor& b) {
    return a.fmod(b);
}
/// `torch.fmod(a, b)` with a scalar divisor.
inline Tensor fmod(const Tensor& a, double b) {
    return a.fmod(b);
}
/// `torch.div(a, b, rounding_mode=...)` with "trunc" or "floor".
inline Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
    return a.div(b, rounding_mode);
}
/// `torch.div(a, b, rounding_mode=...)` with a scalar divisor.
inline Tensor div(const Tensor& a, double b, const std::string& rounding_mode) {
    return a.div(b, rounding_mode);
}
/// `torch.lerp(start, end, weight)`.
inline Tensor lerp(const Tensor& start, const Tensor& end, double weight) {
    return start.lerp(end, weight);
}
/// `torch.lerp(start, end, weight)` with an elementwise weight.
inline Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
    return start.lerp(end, weight);
}
/// `torch.clamp(x, min, max)` with tensor bounds (either may be undefined).
inline Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) {
    return x.clamp(min, max);
}
/// `torch.clamp_min(x, min)`.
inline Tensor clamp_min(const Tensor& x, const Tensor& min) {
    return x.clamp_min(min);
}
/// `torch.clamp_min(x, min)` with a scalar bound.
inline Tensor clamp_min(const Tensor& x, double min) {
    return x.clamp_min(min);
}
/// `torch.clamp_max(x, max)`.
inline Tensor clamp_max(const Tensor& x, const Tensor& max) {
    return x.clamp_max(max);
}
/// `torch.clamp_max(x, max)` with a scalar bound.
inline Tensor clamp_max(const Tensor& x, double max) {
    return x.clamp_max(max);
}
/// `torch.sum(x)`.
inline Tensor sum(const Tensor& x) {
    return x.sum();
}
/// `torch.sum(x, dims, keepdim)`.
inline Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false) {
    return x.sum(dims, keepdim);
}
/// `torch.mean(x)`.
inline Tensor mean(const Tensor& x) {
    return x.mean();
}
/// `torch.mean(x, dims, keepdim)`.
inline Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false) {
    return x.mean(dims, keepdim);
}
/// `torch.amax(x, dims, keepdim)`.
inline Tensor amax(const Tensor& x, const Dims& dims = Dims(std::vector<std::int64_t>{}), bool keepdim = false) {
    return x.amax(dims, keepdim);
}
/// `torch.amin(x, dims, keepdim)`.
inline Tensor amin(const Tensor& x, const Dims& dims = Dims(std::vector<std::int64_t>{}), bool keepdim = false) {
    return x.amin(dims, keepdim);
}
/// `torch.norm(x, p)`: the p-norm of all elements (Tensor::norm).
inline Tensor norm(const Tensor& x, double p = 2.0) {
    return x.norm(p);
}
/// `torch.norm(x, p, dim, keepdim)`: the p-norm over `dims`.
inline Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim = false) {
    return x.norm(p, dims, keepdim);
}
/// The outer product of two 1-D tensors, `a[i] * b[j]`, as `torch.outer` (`torch.ger`).
Tensor outer(const Tensor& a, const Tensor& b);

/// Linear algebra (PyTorch's `torch.linalg`).
namespace linalg {
/// The vector `ord`-norm over `dims` (every element without them), as `torch.linalg.vector_norm`:
/// Tensor::norm's values, with the grad_fn `LinalgVectorNormBackward0`.
/// @code
/// Tensor n = xgrad::linalg::vector_norm(x, 2.0, {-1}, true);   // each row's L2 norm, shape (..., 1)
/// @endcode
Tensor vector_norm(const Tensor& x, double ord = 2.0, const Dims& dims = Dims(std::vector<std::int64_t>{}),
                   bool keepdim = false);
}  // namespace linalg

/// `torch.argmax(x, dim, keepdim)`.
inline Tensor argmax(const Tensor& x, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false) {
    return x.argmax(dim, keepdim);
}
/// `torch.argmin(x, dim, keepdim)`.
inline Tensor argmin(const Tensor& x, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false) {
    return x.argmin(dim, keepdim);
}
/// `torch.prod(x)`.
inline Tensor prod(const Tensor& x) {
    return x.prod();
}
/// `torch.prod(x, dim, keepdim)`.
inline Tensor prod(const Tensor& x, std::int64_t dim, bool keepdim = false) {
    return x.prod(dim, keepdim);
}
/// `torch.cumsum(x, dim)`.
inline Tensor cumsum(const Tensor& x, std::int64_t dim) {
    return x.cumsum(dim);
}
/// `torch.cumprod(x, dim)`.
inline Tensor cumprod(const Tensor& x, std::int64_t dim) {
    return x.cumprod(dim);
}
/// `torch.logsumexp(x, dims, keepdim)`.
inline Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false) {
    return x.logsumexp(dims, keepdim);
}
/// `torch.sort(x, dim, descending, stable)`.
inline ValuesIndices sort(const Tensor& x, std::int64_t dim = -1, bool descending = false, bool stable = false) {
    return x.sort(dim, descending, stable);
}
/// `torch.argsort(x, dim, descending, stable)`.
inline Tensor argsort(const Tensor& x, std::int64_t dim = -1, bool descending = false, bool stable = false) {
    return x.argsort(dim, descending, stable);
}
/// `torch.kthvalue(x, k, dim, keepdim)`.
inline ValuesIndices kthvalue(const Tensor& x, std::int64_t k, std::int64_t dim = -1, bool keepdim = false) {
    return x.kthvalue(k, dim, keepdim);
}
/// `torch.median(x, dim, keepdim)`.
inline ValuesIndices median(const Tensor& x, std::int64_t dim, bool keepdim = false) {
    return x.median(dim, keepdim);
}
/// `torch.median(x)`: the lower median of all elements.
inline Tensor median(const Tensor& x) {
    return x.median();
}
/// `torch.nanmedian(x, dim, keepdim)`: the lower median of the numbers, NaNs left out.
inline ValuesIndices nanmedian(const Tensor& x, std::int64_t dim, bool keepdim = false) {
    return x.nanmedian(dim, keepdim);
}
/// `torch.nanmedian(x)`: the lower median of all elements that are not NaN.
inline Tensor nanmedian(const Tensor& x) {
    return x.nanmedian();
}
/// `torch.mode(x, dim, keepdim)`: the most frequent value along `dim` and its index (Tensor::mode).
inline ValuesIndices mode(const Tensor& x, std::int64_t dim = -1, bool keepdim = false) {
    return x.mode(dim, keepdim);
}
/// `torch.quantile(x, q, dim, keepdim, interpolation)` (Tensor::quantile).
inline Tensor quantile(const Tensor& x, const Tensor& q, std::optional<std::int64_t> dim = std::nullopt,
                       bool keepdim = false, const std::string& interpolation = "linear") {
    return x.quantile(q, dim, keepdim, interpolation);
}
/// `torch.quantile(x, q, dim, keepdim, interpolation)` with one q.
inline Tensor quantile(const Tensor& x, double q, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false,
                       const std::string& interpolation = "linear") {
    return x.quantile(q, dim, keepdim, interpolation);
}
/// `torch.nanquantile(x, q, dim, keepdim, interpolation)` (Tensor::nanquantile).
inline Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<std::int64_t> dim = std::nullopt,
                          bool keepdim = false, const std::string& interpolation = "linear") {
    return x.nanquantile(q, dim, keepdim, interpolation);
}
/// `torch.nanquantile(x, q, dim, keepdim, interpolation)` with one q.
inline Tensor nanquantile(const Tensor& x, double q, std::optional<std::int64_t> dim = std::nullopt,
                          bool keepdim = false, const std::string& interpolation = "linear") {
    return x.nanquantile(q, dim, keepdim, interpolation);
}
/// `torch.topk(x, k, dim, largest, sorted)`.
inline ValuesIndices topk(const Tensor& x, std::int64_t k, std::int64_t dim = -1, bool largest = true,
                          bool sorted = true) {
    return x.topk(k, dim, largest, sorted);
}
/// The options of searchsorted and bucketize (PyTorch's keyword arguments).
struct SearchOptions {
    bool right = false;        ///< After the elements equal to the value, not before them (`side="right"`).
    bool out_int32 = false;    ///< int32 positions instead of int64.
    Tensor sorter = Tensor();  ///< searchsorted only: int64 indices that sort the sequence's last dim (argsort's).
};
/// `torch.searchsorted(sorted_sequence, values, right=, out_int32=, sorter=)`: for each value, the
/// position in the last dim of `sorted_sequence` (1-D for all values, else the row with the values'
/// leading indices) where inserting it keeps the order; int64 (or int32) of `values`' shape, no
/// gradient. Both are compared in their common dtype; NaN goes last. A bisection, O(log m) per value.
/// ```cpp
/// auto i = xgrad::searchsorted(xgrad::tensor({1., 3., 5.}), xgrad::tensor({3., 6.}));   // [1, 3]
/// auto j = xgrad::searchsorted(xgrad::tensor({1., 3., 5.}), xgrad::tensor({3.}), {.right = true});   // [2]
/// ```
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, const SearchOptions& options = {});
/// `torch.searchsorted(sorted_sequence, value)` for one number (a 0-d result); `sorted_sequence` is 1-D.
Tensor searchsorted(const Tensor& sorted_sequence, double value, const SearchOptions& options = {});
/// `torch.bucketize(input, boundaries, right=, out_int32=)`: searchsorted of every element of `input` in
/// the 1-D `boundaries` (the index i with boundaries[i-1] < x <= boundaries[i], or <= and < with `right`).
Tensor bucketize(const Tensor& input, const Tensor& boundaries, const SearchOptions& options = {});

/// The smallest and the largest elements of a reduction (`torch.aminmax`'s named tuple).
struct MinMax {
    Tensor min;  ///< amin's result.
    Tensor max;  ///< amax's result.
};
/// `torch.aminmax(x, dim=, keepdim=)`: amin and amax together, over `dim` or every element. The gradient
/// is amin's and amax's (shared evenly among equal extremes), which PyTorch 1.13 does not implement.
MinMax aminmax(const Tensor& x, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false);
/// `torch.var_mean(x, dims, unbiased, keepdim)`: (variance, mean) over `dims` (every dim when empty),
/// both from one pass, as PyTorch's CPU var_mean (a Welford pass in double, whose mean can differ from
/// x.mean()'s in the last bit); the gradients are x.var's and x.mean's.
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const Dims& dims = Dims(std::vector<std::int64_t>{}),
                                   bool unbiased = true, bool keepdim = false);
/// `torch.std_mean(x, dims, unbiased, keepdim)`: (standard deviation, mean), as var_mean.
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const Dims& dims = Dims(std::vector<std::int64_t>{}),
                                   bool unbiased = true, bool keepdim = false);
/// `torch.kron(a, b)`: the Kronecker product, over max(a.dim(), b.dim()) dims (the shorter shape
/// padded with leading 1s): out[i·b.shape + j] = a[i] · b[j], in a and b's promoted dtype; differentiable.
Tensor kron(const Tensor& a, const Tensor& b);

/// `torch.transpose(x, dim0, dim1)`.
inline Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1) {
    return x.transpose(dim0, dim1);
}
/// `torch.reshape(x, shape)`.
inline Tensor reshape(const Tensor& x, const Shape& shape) {
    return x.reshape(shape);
}
/// `torch.flatten(x, start_dim, end_dim)`.
inline Tensor flatten(const Tensor& x, std::int64_t start_dim = 0, std::int64_t end_dim = -1) {
    return x.flatten(start_dim, end_dim);
}

// ---- indexing along one dim (src/indexing.cpp); each is the Tensor method of the same name ----------
/// `torch.index_select(input, dim, index)`.
Tensor index_select(const Tensor& input, std::int64_t dim, const Tensor& index);
/// `torch.gather(input, dim, index)`.
Tensor gather(const Tensor& input, std::int64_t dim, const Tensor& index);
/// `torch.scatter(input, dim, index, src)`.
Tensor scatter(const Tensor& input, std::int64_t dim, const Tensor& index, const Tensor& src);
/// `torch.scatter(input, dim, index, value)`.
Tensor scatter(const Tensor& input, std::int64_t dim, const Tensor& index, double value);
/// `torch.scatter_add(input, dim, index, src)`.
Tensor scatter_add(const Tensor& input, std::int64_t dim, const Tensor& index, const Tensor& src);
/// `torch.index_add(input, dim, index, source, alpha=alpha)`.
Tensor index_add(const Tensor& input, std::int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0);

// ---- more shape ops (src/shape_ops.cpp); each is the Tensor method of the same name --------------------
/// `torch.split(input, split_size, dim)`.
std::vector<Tensor> split(const Tensor& input, std::int64_t split_size, std::int64_t dim = 0);
/// `torch.split(input, split_sizes, dim)`.
std::vector<Tensor> split(const Tensor& input, const std::vector<std::int64_t>& split_sizes, std::int64_t dim = 0);
/// `torch.chunk(input, chunks, dim)`.
std::vector<Tensor> chunk(const Tensor& input, std::int64_t chunks, std::int64_t dim = 0);
/// `torch.repeat_interleave(input, repeats, dim)`.
Tensor repeat_interleave(const Tensor& input, std::int64_t repeats, std::optional<std::int64_t> dim = std::nullopt);
/// `torch.flip(input, dims)`.
Tensor flip(const Tensor& input, const Dims& dims);
/// `torch.roll(input, shifts, dims)`.
Tensor roll(const Tensor& input, const std::vector<std::int64_t>& shifts, const std::vector<std::int64_t>& dims = {});
/// `torch.tril(input, diagonal)`.
Tensor tril(const Tensor& input, std::int64_t diagonal = 0);
/// `torch.triu(input, diagonal)`.
Tensor triu(const Tensor& input, std::int64_t diagonal = 0);
/// `torch.unflatten(input, dim, sizes)`.
Tensor unflatten(const Tensor& input, std::int64_t dim, const Shape& sizes);
/// `torch.diag(input, diagonal)`.
Tensor diag(const Tensor& input, std::int64_t diagonal = 0);

// ---- einsum (src/einsum.cpp): a composite of views, sums and matmuls, so on every device -------------
/// `torch.einsum(equation, *operands)`: sums of products over the labelled dims, with an implicit or
/// explicit (`->`) output, `...` for broadcast dims, repeated labels in one operand for its diagonal,
/// and operands contracted left to right, as PyTorch 1.13 without opt_einsum.
///
/// ```cpp
/// Tensor c = xgrad::einsum("ij,jk->ik", {a, b});   // a.matmul(b)
/// Tensor tr = xgrad::einsum("ii", {m});            // the trace
/// Tensor att = xgrad::einsum("...qd,...kd->...qk", {q, k});
/// ```
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

// ---- comparisons and logical ops (src/compare.cpp); each is the Tensor method of the same name -------
/// `torch.eq(a, b)`: a bool tensor, true where equal.
inline Tensor eq(const Tensor& a, const Tensor& b) {
    return a.eq(b);
}
/// `torch.eq(a, b)` with a number.
inline Tensor eq(const Tensor& a, double b) {
    return a.eq(b);
}
/// `torch.ne(a, b)`.
inline Tensor ne(const Tensor& a, const Tensor& b) {
    return a.ne(b);
}
/// `torch.ne(a, b)` with a number.
inline Tensor ne(const Tensor& a, double b) {
    return a.ne(b);
}
/// `torch.lt(a, b)`.
inline Tensor lt(const Tensor& a, const Tensor& b) {
    return a.lt(b);
}
/// `torch.lt(a, b)` with a number.
inline Tensor lt(const Tensor& a, double b) {
    return a.lt(b);
}
/// `torch.le(a, b)`.
inline Tensor le(const Tensor& a, const Tensor& b) {
    return a.le(b);
}
/// `torch.le(a, b)` with a number.
inline Tensor le(const Tensor& a, double b) {
    return a.le(b);
}
/// `torch.gt(a, b)`.
inline Tensor gt(const Tensor& a, const Tensor& b) {
    return a.gt(b);
}
/// `torch.gt(a, b)` with a number.
inline Tensor gt(const Tensor& a, double b) {
    return a.gt(b);
}
/// `torch.ge(a, b)`.
inline Tensor ge(const Tensor& a, const Tensor& b) {
    return a.ge(b);
}
/// `torch.ge(a, b)` with a number.
inline Tensor ge(const Tensor& a, double b) {
    return a.ge(b);
}
/// `torch.logical_and(a, b)`.
inline Tensor logical_and(const Tensor& a, const Tensor& b) {
    return a.logical_and(b);
}
/// `torch.logical_or(a, b)`.
inline Tensor logical_or(const Tensor& a, const Tensor& b) {
    return a.logical_or(b);
}
/// `torch.logical_xor(a, b)`.
inline Tensor logical_xor(const Tensor& a, const Tensor& b) {
    return a.logical_xor(b);
}
/// `torch.logical_not(x)`.
inline Tensor logical_not(const Tensor& x) {
    return x.logical_not();
}
/// `torch.isnan(x)`.
inline Tensor isnan(const Tensor& x) {
    return x.isnan();
}
/// `torch.isinf(x)`.
inline Tensor isinf(const Tensor& x) {
    return x.isinf();
}
/// `torch.isposinf(x)`.
inline Tensor isposinf(const Tensor& x) {
    return x.isposinf();
}
/// `torch.isneginf(x)`.
inline Tensor isneginf(const Tensor& x) {
    return x.isneginf();
}
/// `torch.isfinite(x)`.
inline Tensor isfinite(const Tensor& x) {
    return x.isfinite();
}
/// `torch.any(x)`.
inline Tensor any(const Tensor& x) {
    return x.any();
}
/// `torch.any(x, dim, keepdim)`.
inline Tensor any(const Tensor& x, std::int64_t dim, bool keepdim = false) {
    return x.any(dim, keepdim);
}
/// `torch.all(x)`.
inline Tensor all(const Tensor& x) {
    return x.all();
}
/// `torch.all(x, dim, keepdim)`.
inline Tensor all(const Tensor& x, std::int64_t dim, bool keepdim = false) {
    return x.all(dim, keepdim);
}
/// `torch.equal(a, b)`: same shape and values.
inline bool equal(const Tensor& a, const Tensor& b) {
    return a.equal(b);
}
/// `torch.isclose(a, b, rtol, atol, equal_nan)`.
inline Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08,
                      bool equal_nan = false) {
    return a.isclose(b, rtol, atol, equal_nan);
}
/// `torch.allclose(a, b, rtol, atol, equal_nan)`.
inline bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08,
                     bool equal_nan = false) {
    return a.allclose(b, rtol, atol, equal_nan);
}
// ---- selection by a mask (src/masking.cpp) -----------------------------------------------------------
/// `torch.where(condition, x, y)`: x where the kBool `condition` is true, else y, all three
/// broadcast together and x, y promoted as PyTorch (torch.result_type); differentiable in x and y.
///
/// ```cpp
/// auto m = xgrad::tensor({1.0, 0.0, 1.0}, xgrad::kBool);
/// auto y = xgrad::where(m, x, 0.0);   // x where m, else 0
/// ```
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
/// `torch.where(condition, x, y)` with a number for x (a Python scalar in PyTorch's promotion).
Tensor where(const Tensor& condition, double x, const Tensor& y);
/// `torch.where(condition, x, y)` with a number for y.
Tensor where(const Tensor& condition, const Tensor& x, double y);
/// `torch.where(condition)`: `nonzero()` split into one int64 index tensor per dim.
std::vector<Tensor> where(const Tensor& condition);
/// `torch.masked_fill(input, mask, value)`.
Tensor masked_fill(const Tensor& input, const Tensor& mask, double value);
/// `torch.masked_fill(input, mask, value)` with a 0-d value tensor.
Tensor masked_fill(const Tensor& input, const Tensor& mask, const Tensor& value);
/// `torch.nonzero(input)`: int64 indices (n, input.dim()) of the nonzero elements, row-major.
Tensor nonzero(const Tensor& input);
/// `torch.argwhere(input)`, the same as nonzero.
Tensor argwhere(const Tensor& input);
/// `torch.masked_select(input, mask)`.
Tensor masked_select(const Tensor& input, const Tensor& mask);

}  // namespace xgrad
