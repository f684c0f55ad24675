// The Tensor handle: a shared, strided view of typed storage plus its autograd record.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "xgrad/shape.hpp"

namespace xgrad {

namespace detail {
struct TensorImpl;
struct TensorFields;
}  // namespace detail

/// Thrown when memory for a tensor cannot be had: on the CPU when the system refuses the
/// allocation, on a CUDA device even after xgrad has returned its cached blocks (PyTorch's
/// `torch.cuda.OutOfMemoryError`). The message names the operation and the bytes asked for. Nothing
/// is allocated then, and later (smaller) allocations work as before.
///
/// ```cpp
/// try {
///     auto huge = xgrad::empty({1 << 20, 1 << 20, 1 << 10});
/// } catch (const xgrad::OutOfMemoryError& e) {
///     std::cerr << e.what() << "\n";   // empty: out of memory: tried to allocate 4096.00 TiB ...
/// }
/// ```
class OutOfMemoryError : public std::runtime_error {
public:
    /// An error with this message.
    explicit OutOfMemoryError(const std::string& message) : std::runtime_error(message) {}
};

struct ValuesIndices;

/// The divisor `N - correction` of var and std (PyTorch's `correction=` argument), as its own type so
/// that it never converts from the `unbiased` flag: `x.var(-1, xgrad::Correction(0))` is the biased
/// variance, `Correction(1)` the unbiased one.
struct Correction {
    /// A correction of `value` (may be any real number; N - value is clamped at 0, as PyTorch).
    explicit Correction(double value) : value(value) {}
    double value;  ///< Subtracted from the number of elements reduced.
};

/// An n-dimensional array of float32, float64 or int64 values that records the operations applied to
/// it, so that `backward()` can compute gradients.
///
/// A Tensor is a cheap handle: copying one shares the storage and the autograd history, exactly like
/// assigning a Python variable. Views (`transpose`, `slice`, `view`, `expand` ...) share storage with
/// their base too; `clone()` makes an independent copy.
///
/// ```cpp
/// auto x = xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();
/// auto y = (x * x).sum();
/// y.backward();
/// // x.grad() == 2 * x
/// ```
class Tensor {
public:
    /// An undefined tensor (as `grad()` before any backward).
    Tensor() = default;
    /// Wraps an implementation; used by xgrad's own operations.
    explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

    // ---- metadata -------------------------------------------------------------------------
    /// False for a default-constructed (undefined) tensor.
    bool defined() const { return impl_ != nullptr; }
    /// The sizes, e.g. `torch.Size([2, 5])` when printed.
    const Shape& shape() const;
    /// Alias of shape(), as libtorch names it.
    const Shape& sizes() const { return shape(); }
    /// Size of dimension `dim`; negative counts from the end. Throws for a 0-d tensor, as PyTorch.
    std::int64_t size(std::int64_t dim) const;
    /// Number of dimensions.
    std::int64_t dim() const;
    /// Number of elements.
    std::int64_t numel() const;
    /// Element type.
    DType dtype() const;
    /// Device the storage lives on (`cpu`, or `cuda:0` with its index).
    Device device() const;
    /// True when the storage is on a CUDA device.
    bool is_cuda() const { return device() == kCUDA; }
    /// Strides in elements, one per dimension.
    const Strides& strides() const;
    /// Offset of the first element in the storage, in elements.
    std::int64_t storage_offset() const;
    /// True when the elements are laid out densely in row-major order.
    bool is_contiguous() const;
    /// True for float32 and float64 tensors.
    bool is_floating_point() const { return xgrad::is_floating_point(dtype()); }

    /// The single value of a one-element tensor, converted to T (any arithmetic type: `float`,
    /// `double`, `int`, `std::int64_t`, `bool` ...). As libtorch's `item<T>()`, a value that T cannot
    /// hold throws ("value cannot be converted to type int without overflow"). On a CUDA tensor it
    /// waits for the GPU and copies the value to the host.
    template <typename T>
    T item() const {
        static_assert(std::is_arithmetic_v<T>,
                      "Tensor::item<T>() needs an arithmetic T (bool, an integer or a "
                      "floating-point type)");
        return item_as<T>();
    }
    /// All values in row-major order, converted to T (any arithmetic type) as `to(dtype)` converts;
    /// copied from the GPU (after waiting for it) for a CUDA tensor.
    template <typename T>
    std::vector<T> to_vector() const {
        static_assert(std::is_arithmetic_v<T>,
                      "Tensor::to_vector<T>() needs an arithmetic T (bool, an integer or "
                      "a floating-point type)");
        return to_vector_as<T>();
    }
    /// Pointer to the first element of a contiguous tensor whose dtype is T; throws otherwise. For a
    /// CUDA tensor it is a device pointer (as in PyTorch), returned once the GPU has finished the
    /// work queued so far, so that other CUDA code may use it at once.
    template <typename T>
    T* data_ptr() const;

    // ---- autograd ---------------------------------------------------------------------------
    /// Whether gradients flow to or through this tensor.
    bool requires_grad() const;
    /// Makes a leaf tensor require grad (or not); returns *this.
    Tensor& requires_grad_(bool requires_grad = true);
    /// The accumulated gradient of a leaf; undefined until a backward reaches it. A reference, as
    /// PyTorch's: it stays valid while this tensor lives, and shows what later backward passes add.
    const Tensor& grad() const;
    /// grad() of a non-const handle: the gradient slot itself (as mutable_grad()), so that in-place
    /// updates read as in libtorch: `p.grad().zero_()`.
    Tensor& grad();
    /// The gradient slot itself, for optimizers that reset or replace it.
    Tensor& mutable_grad();
    /// True for tensors created by the user rather than by a differentiable operation.
    bool is_leaf() const;
    /// PyTorch's name of the operation that created this tensor (`"MulBackward0"`), or "" for a leaf.
    std::string grad_fn_name() const;
    /// A new leaf sharing this tensor's storage, outside the graph.
    Tensor detach() const;
    /// Computes the gradients of this tensor with respect to the graph's leaves.
    ///
    /// `gradient` may be omitted for a one-element tensor (it is then 1); otherwise it has this
    /// tensor's shape and device, and is cast to its dtype first (as PyTorch does). Gradients
    /// accumulate (`+=`) into each leaf's grad(). The graph is freed afterwards unless `retain_graph`
    /// is true; a second backward through a freed graph throws.
    void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;

    // ---- elementwise maths (broadcasting as in PyTorch) -----------------------------------------
    Tensor add(const Tensor& other) const;     ///< `self + other`.
    Tensor add(double other) const;            ///< `self + other`.
    Tensor sub(const Tensor& other) const;     ///< `self - other`.
    Tensor sub(double other) const;            ///< `self - other`.
    Tensor mul(const Tensor& other) const;     ///< `self * other`.
    Tensor mul(double other) const;            ///< `self * other`.
    Tensor div(const Tensor& other) const;     ///< `self / other`.
    Tensor div(double other) const;            ///< `self / other`.
    Tensor neg() const;                        ///< `-self`.
    Tensor pow(double exponent) const;         ///< `self ** exponent` (see xgrad::pow for integers).
    Tensor pow(const Tensor& exponent) const;  ///< `self ** exponent`, elementwise (int64 stays int64).
    Tensor sqrt() const;                       ///< Square root.
    Tensor rsqrt() const;                      ///< `1 / sqrt(self)`.
    Tensor exp() const;                        ///< `e ** self`.
    Tensor log() const;                        ///< Natural logarithm.
    Tensor abs() const;                        ///< Absolute value (gradient 0 at 0, as PyTorch).
    Tensor tanh() const;                       ///< Hyperbolic tangent.
    Tensor sigmoid() const;                    ///< `1 / (1 + exp(-self))`.
    /// `max(self, 0)` (gradient 0 at 0, as PyTorch); an integer tensor keeps its dtype, bool is refused.
    Tensor relu() const;
    /// GELU; `approximate` is "none" (erf form, PyTorch's default) or "tanh".
    Tensor gelu(const std::string& approximate = "none") const;
    Tensor maximum(const Tensor& other) const;  ///< Elementwise maximum (ties share the gradient).
    Tensor minimum(const Tensor& other) const;  ///< Elementwise minimum (ties share the gradient).
    /// Limits values to [min, max]; either bound may be omitted.
    Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
    /// Limits values to [min, max] elementwise with tensor bounds (broadcasting); either may be
    /// undefined. Where max < min the result is max, as PyTorch. The result's dtype is torch.result_type
    /// of the three: a zero-dim bound counts only when of a higher category than self (a float64 0-d
    /// bound keeps a float32 self float32), and is converted to that dtype first.
    Tensor clamp(const Tensor& min, const Tensor& max) const;
    Tensor clamp_min(double min) const;         ///< `clamp(min, nullopt)`, recorded as ClampMinBackward0.
    Tensor clamp_min(const Tensor& min) const;  ///< Elementwise lower bound (NaN propagates).
    Tensor clamp_max(double max) const;         ///< `clamp(nullopt, max)`, recorded as ClampMaxBackward0.
    Tensor clamp_max(const Tensor& max) const;  ///< Elementwise upper bound (NaN propagates).
    /// `self / other` rounded as `rounding_mode` says: "trunc" (toward zero) or "floor" (Python's
    /// `//`); integer tensors stay integers and a zero divisor throws. The gradient is zero.
    Tensor div(const Tensor& other, const std::string& rounding_mode) const;
    /// `self / other` with a scalar divisor, rounded as `rounding_mode` says ("trunc" or "floor").
    Tensor div(double other, const std::string& rounding_mode) const;
    /// Python's `%`: the remainder has the divisor's sign (`torch.remainder`).
    Tensor remainder(const Tensor& other) const;
    Tensor remainder(double other) const;    ///< Python's `%` with a scalar divisor.
    Tensor fmod(const Tensor& other) const;  ///< C's fmod: the remainder has the dividend's sign.
    Tensor fmod(double other) const;         ///< C's fmod with a scalar divisor.
    /// `atan2(self, other)`: the angle of the point (other, self), in (-pi, pi].
    Tensor atan2(const Tensor& other) const;
    /// `self + weight * (end - self)`, as torch.lerp (differentiable in self and end).
    Tensor lerp(const Tensor& end, double weight) const;
    /// `self + weight * (end - self)` with an elementwise weight (differentiable in all three).
    Tensor lerp(const Tensor& end, const Tensor& weight) const;
    Tensor erf() const;    ///< The error function.
    Tensor sin() const;    ///< Sine.
    Tensor cos() const;    ///< Cosine.
    Tensor tan() const;    ///< Tangent.
    Tensor asin() const;   ///< Arcsine (NaN outside [-1, 1]).
    Tensor acos() const;   ///< Arccosine (NaN outside [-1, 1]).
    Tensor atan() const;   ///< Arctangent.
    Tensor sinh() const;   ///< Hyperbolic sine.
    Tensor cosh() const;   ///< Hyperbolic cosine.
    Tensor log2() const;   ///< Base-2 logarithm.
    Tensor log10() const;  ///< Base-10 logarithm.
    Tensor log1p() const;  ///< `log(1 + self)`, accurate near 0.
    Tensor expm1() const;  ///< `exp(self) - 1`, accurate near 0.
    Tensor exp2() const;   ///< `2 ** self`.
    /// -1, 0 or 1 by the sign of each element (0 for NaN and -0, as PyTorch); the gradient is zero.
    Tensor sign() const;
    Tensor floor() const;  ///< Rounds down (integers unchanged); the gradient is zero.
    Tensor ceil() const;   ///< Rounds up (integers unchanged); the gradient is zero.
    Tensor round() const;  ///< Rounds half to even, as torch.round; the gradient is zero.
    Tensor trunc() const;  ///< Rounds toward zero; the gradient is zero.

    // ---- reductions ---------------------------------------------------------------------------
    /// Sum of all elements (a 0-d tensor).
    Tensor sum() const;
    /// Sum over `dims` (an empty list means all dimensions).
    Tensor sum(const Dims& dims, bool keepdim = false) const;
    /// Mean of all elements.
    Tensor mean() const;
    /// Mean over `dims`.
    Tensor mean(const Dims& dims, bool keepdim = false) const;
    /// Unbiased variance of all elements.
    Tensor var() const;
    /// Variance over `dims`; `unbiased` divides by n-1 (PyTorch's default), else by n.
    Tensor var(const Dims& dims, bool unbiased = true, bool keepdim = false) const;
    /// Unbiased standard deviation of all elements.
    Tensor std() const;
    /// Standard deviation over `dims`, with var's flags.
    Tensor std(const Dims& dims, bool unbiased = true, bool keepdim = false) const;
    /// Largest element.
    Tensor max() const;
    /// Largest values over `dims`, values only: over one dim the gradient goes to the index that
    /// max(dim) returns, over several ties share it evenly (as amax).
    Tensor max(const Dims& dims, bool keepdim = false) const;
    /// Smallest element.
    Tensor min() const;
    /// Smallest values over `dims`, with max(dims)'s gradient rule.
    Tensor min(const Dims& dims, bool keepdim = false) const;
    /// Largest values along `dim` and their int64 indices, as `torch.max(x, dim)`: the index of the
    /// first occurrence (of the first NaN, which wins), and the gradient goes there.
    ///
    /// ```cpp
    /// auto [values, indices] = logits.max(-1);   // or logits.max(-1).indices
    /// ```
    ValuesIndices max(std::int64_t dim, bool keepdim = false) const;
    /// Smallest values along `dim` and their int64 indices, as `torch.min(x, dim)`.
    ValuesIndices min(std::int64_t dim, bool keepdim = false) const;
    /// The p-norm of all elements (0-d), as `torch.norm(x, p)` / `x.norm(p)`: (Σ|x|^p)^(1/p) for a
    /// finite non-zero p, the largest |x| for +∞, the smallest for -∞, the number of non-zeros for 0
    /// (whose gradient is zero). Floating-point tensors. The gradient is PyTorch's `NormBackward1`. Over no
    /// elements every norm is 0, ±∞ included (PyTorch 1.13's Tensor.norm; linalg::vector_norm refuses ±∞).
    /// @code
    /// Tensor l2 = w.norm();                  // Frobenius / L2 norm of every element
    /// Tensor rows = x.norm(1.0, 1);          // L1 norm of each row
    /// @endcode
    Tensor norm(double p = 2.0) const;
    /// The p-norm over `dims` (all when empty), as `torch.norm(x, p, dim, keepdim)`.
    Tensor norm(double p, const Dims& dims, bool keepdim = false) const;
    /// Largest values over `dims` (all when empty), ties sharing the gradient evenly, as `torch.amax`.
    Tensor amax(const Dims& dims = Dims(std::vector<std::int64_t>{}), bool keepdim = false) const;
    /// Smallest values over `dims` (all when empty), as `torch.amin`.
    Tensor amin(const Dims& dims = Dims(std::vector<std::int64_t>{}), bool keepdim = false) const;
    /// int64 index of the largest value: of the flattened tensor without `dim` (a 0-d result), else
    /// along `dim`; the first occurrence, as `torch.argmax`.
    Tensor argmax(std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false) const;
    /// int64 index of the smallest value, as `torch.argmin`.
    Tensor argmin(std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false) const;
    /// Variance over `dims` (all when empty) divided by `N - correction`, as `x.var(dims, correction=c)`.
    Tensor var(const Dims& dims, Correction correction, bool keepdim = false) const;
    /// Standard deviation over `dims` divided by `N - correction`, as `x.std(dims, correction=c)`.
    Tensor std(const Dims& dims, Correction correction, bool keepdim = false) const;
    /// Product of all elements (int64 stays int64); the gradient is exact where elements are 0.
    Tensor prod() const;
    /// Product along `dim`.
    Tensor prod(std::int64_t dim, bool keepdim = false) const;
    /// The n-th forward difference along `dim`, `x[i + 1] - x[i]` (XOR for bool), with `prepend` and
    /// `append` joined first (each of self's shape but along `dim`, or 0-d), as `torch.diff`.
    Tensor diff(std::int64_t n = 1, std::int64_t dim = -1, const Tensor& prepend = Tensor(),
                const Tensor& append = Tensor()) const;
    /// The distinct elements, ascending (1-D), as `torch.unique(x)`; xgrad::unique also gives each
    /// element's index among them and their counts.
    Tensor unique(bool sorted = true) const;
    /// The number of non-zero elements over `dims` (all when empty), an int64 tensor, as
    /// `torch.count_nonzero`.
    Tensor count_nonzero(const Dims& dims = Dims(std::vector<std::int64_t>{})) const;
    /// Running sum along `dim`, as `torch.cumsum`.
    Tensor cumsum(std::int64_t dim) const;
    /// Running product along `dim`, as `torch.cumprod` (with an exact gradient where elements are 0).
    Tensor cumprod(std::int64_t dim) const;
    /// `log(sum(exp(x), dims))` computed without overflow, as `torch.logsumexp`.
    Tensor logsumexp(const Dims& dims, bool keepdim = false) const;
    /// The values along `dim` in order and their int64 indices, as `torch.sort`; NaN sorts above every
    /// number. Equal values keep their index order with `stable`; without it they come in the order
    /// PyTorch's CPU sort gives them (on a CUDA tensor, index order). `stable` names the grad_fn
    /// SortBackward1, as PyTorch's stable overload.
    ValuesIndices sort(std::int64_t dim = -1, bool descending = false, bool stable = false) const;
    /// The int64 indices that sort the values along `dim`, as `torch.argsort`.
    Tensor argsort(std::int64_t dim = -1, bool descending = false, bool stable = false) const;
    /// The `k` largest (or smallest) values along `dim` and their int64 indices, as `torch.topk`:
    /// PyTorch's CPU indices, for equal values and for `sorted = false` too (on a CUDA tensor, always
    /// in order, ties by index).
    ValuesIndices topk(std::int64_t k, std::int64_t dim = -1, bool largest = true, bool sorted = true) const;
    /// The k-th smallest value (k from 1) along `dim` and its int64 index, as `torch.kthvalue`; NaN
    /// counts above every number. Between equal values the CPU picks PyTorch's index (its
    /// quickselect), a CUDA tensor the lowest. The gradient goes to that index.
    ValuesIndices kthvalue(std::int64_t k, std::int64_t dim = -1, bool keepdim = false) const;
    /// The lower median along `dim` (the ((n + 1) / 2)-th smallest of n) and its int64 index, as
    /// `torch.median(x, dim)`: between equal values the index ranked there by index order; a NaN in
    /// the row gives NaN and the first NaN's index. The gradient goes to that index.
    ValuesIndices median(std::int64_t dim, bool keepdim = false) const;
    /// The lower median of all elements (0-d), as `torch.median(x)`; NaN if any element is NaN or
    /// self is empty.
    Tensor median() const;
    /// The lower median along `dim` of the elements that are not NaN, and its int64 index, as
    /// `torch.nanmedian(x, dim)`: between equal values the one ranked there by index order; a row of
    /// NaNs gives NaN and PyTorch's index. The gradient goes to that index. Integer tensors: median.
    ValuesIndices nanmedian(std::int64_t dim, bool keepdim = false) const;
    /// The lower median of the elements that are not NaN (0-d), as `torch.nanmedian(x)`; NaN when all
    /// are NaN or self is empty.
    Tensor nanmedian() const;
    /// The most frequent value along `dim` and its int64 index, as `torch.mode`: between values that
    /// occur equally often the smallest; its index is PyTorch's CPU one (the last of the equal values as
    /// its sort leaves them; on a CUDA tensor the highest). Each NaN counts once: rows where NaN sits
    /// between equal numbers can differ from PyTorch's CPU kernel, whose sort leaves NaN unordered. The
    /// gradient goes to that index.
    /// @code
    /// auto [label, at] = votes.mode(1);   // votes of shape (batch, voters): each row's majority
    /// @endcode
    ValuesIndices mode(std::int64_t dim = -1, bool keepdim = false) const;
    /// The `q`-quantiles (q in [0, 1], a 0-d or 1-D tensor of self's dtype) along `dim`, or of all
    /// elements without one, as `torch.quantile`. Between the two neighbouring sorted values
    /// `interpolation` is "linear" (the default), "lower", "higher", "midpoint" or "nearest". A 1-D `q`
    /// adds a first dim of its size to the result. A row holding NaN gives NaN. float32 and float64.
    /// @code
    /// auto q = x.quantile(xgrad::tensor({0.25, 0.5, 0.75}), 1);   // x of shape (4, 10): (3, 4)
    /// @endcode
    Tensor quantile(const Tensor& q, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false,
                    const std::string& interpolation = "linear") const;
    /// `quantile` of one `q` in [0, 1].
    Tensor quantile(double q, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false,
                    const std::string& interpolation = "linear") const;
    /// `quantile` of the elements that are not NaN, as `torch.nanquantile`; a row of NaNs gives NaN.
    Tensor nanquantile(const Tensor& q, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false,
                       const std::string& interpolation = "linear") const;
    /// `nanquantile` of one `q` in [0, 1].
    Tensor nanquantile(double q, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false,
                       const std::string& interpolation = "linear") const;

    // ---- shape and layout -----------------------------------------------------------------------
    /// Matrix product with torch.matmul's rules (1-D, 2-D and batched N-D with broadcasting).
    Tensor matmul(const Tensor& other) const;
    /// Swaps two dimensions (a view).
    Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
    /// Transpose of a matrix of at most 2 dimensions (a view).
    Tensor t() const;
    /// Reorders the dimensions (a view).
    Tensor permute(const Dims& order) const;
    /// The same elements in a new shape (one size may be -1); a view when possible, else a copy.
    Tensor reshape(const Shape& shape) const;
    /// The same elements in a new shape; a view, so the tensor must be contiguous enough.
    Tensor view(const Shape& shape) const;
    /// Inserts a dimension of size 1 at `dim` (a view).
    Tensor unsqueeze(std::int64_t dim) const;
    /// Removes every dimension of size 1 (a view).
    Tensor squeeze() const;
    /// Removes dimension `dim` if its size is 1 (a view).
    Tensor squeeze(std::int64_t dim) const;
    /// Merges dimensions `start_dim`..`end_dim` into one.
    Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
    /// Broadcasts size-1 dimensions to `shape` (-1 keeps a size); a view with stride 0.
    Tensor expand(const Shape& shape) const;
    /// Broadcasts to other's shape.
    Tensor expand_as(const Tensor& other) const;
    /// This tensor if contiguous, else a contiguous copy.
    Tensor contiguous() const;
    /// Elements `start, start+step, ...` below `end` along `dim` (a view); negative and
    /// out-of-range bounds are clamped as in Python slicing.
    Tensor slice(std::int64_t dim, std::optional<std::int64_t> start, std::optional<std::int64_t> end,
                 std::int64_t step = 1) const;
    /// `length` elements from `start` along `dim` (a view).
    Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
    /// The sub-tensor at `index` along `dim`, which is removed (a view).
    Tensor select(std::int64_t dim, std::int64_t index) const;
    /// `select(0, index)`, as `x[i]` in Python.
    Tensor operator[](std::int64_t index) const { return select(0, index); }
    /// A copy converted to `dtype` (this tensor if it already has it); differentiable. The copy keeps
    /// this tensor's layout, as clone() does.
    ///
    /// Floating values become int64 by truncation toward zero. A value int64 cannot hold (NaN, ±inf,
    /// anything at or beyond ±2^63) becomes -9223372036854775808, as PyTorch's CPU casts give on
    /// x86-64 (and as CUDA tensors give too); it is never undefined behaviour.
    Tensor to(DType dtype) const;
    /// A copy on `device` (this tensor if it is already there); differentiable. Copies to the host
    /// wait for the GPU. Throws when xgrad was built without CUDA or no GPU is present.
    Tensor to(Device device) const;
    /// `to(kCPU)`.
    Tensor cpu() const { return to(kCPU); }
    /// `to(kCUDA)`: the current GPU.
    Tensor cuda() const { return to(kCUDA); }
    /// Converts to other's dtype.
    Tensor type_as(const Tensor& other) const { return to(other.dtype()); }
    /// An independent copy with its own storage; differentiable. It keeps this tensor's layout, as
    /// PyTorch's `memory_format=torch.preserve_format`: a dense tensor's strides (`x.t().clone()` is
    /// transposed), dense strides in the same order of dims for a sliced or expanded one.
    Tensor clone() const;

    // ---- indexing along one dim (src/indexing.cpp) -------------------------------------------------
    /// The slices of `dim` that the 1-D int64 `index` names, in its order, as `torch.index_select`.
    /// Throws PyTorch's "index out of range in self" for an index outside [0, size(dim)).
    ///
    /// ```cpp
    /// auto rows = x.index_select(0, xgrad::tensor({2.0, 0.0}, xgrad::kInt64));   // rows 2 and 0
    /// ```
    Tensor index_select(std::int64_t dim, const Tensor& index) const;
    /// `out[i][j] = self[index[i][j]][j]` for dim 0 (`self[i][index[i][j]]` for dim 1 ...), as
    /// `torch.gather`: `index` is int64 with self's number of dims, no larger than self apart from
    /// `dim`; the result has index's shape.
    Tensor gather(std::int64_t dim, const Tensor& index) const;
    /// A copy of self with `src`'s elements written where `index` points along `dim` (gather's
    /// reverse), as `torch.scatter`; where indices repeat, which write wins is unspecified.
    Tensor scatter(std::int64_t dim, const Tensor& index, const Tensor& src) const;
    /// A copy of self with `value` written where `index` points along `dim`.
    Tensor scatter(std::int64_t dim, const Tensor& index, double value) const;
    /// scatter that adds instead of writing, so repeated indices sum (`torch.scatter_add`).
    Tensor scatter_add(std::int64_t dim, const Tensor& index, const Tensor& src) const;
    /// A copy of self with `alpha * source`'s slices along `dim` added to the slices that the 1-D
    /// `index` names (`torch.index_add`); repeated indices sum.
    Tensor index_add(std::int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0) const;
    /// `x[idx]` or `x[i, j, ...]` with index tensors for the leading dims. An int64 `idx` picks the
    /// rows (along dim 0) it names, with idx's shape in front of the remaining dims; negative indices
    /// count from the end. Several int64 tensors index the first dims together (PyTorch's advanced
    /// indexing): they broadcast to one shape, which comes in front of the remaining dims. A kBool
    /// (or uint8) mask, alone, covering the leading dims picks the elements of those dims where it is
    /// true, in row-major order, each with the remaining dims (PyTorch's `x[mask]`).
    ///
    /// ```cpp
    /// auto picked = x.index({xgrad::tensor({{0.0, 2.0}}, xgrad::kInt64)});   // shape (1, 2, ...)
    /// auto rows = x.index({xgrad::tensor({1.0, 0.0, 1.0}, xgrad::kBool)});   // rows 0 and 2
    /// auto target_logp = logp.index({xgrad::arange(n, xgrad::kInt64), targets});   // logp[arange(n), y]
    /// ```
    Tensor index(const std::vector<Tensor>& indices) const;

    // ---- more shape ops (src/shape_ops.cpp) ------------------------------------------------------------
    /// Views of consecutive pieces of `split_size` along `dim` (the last may be smaller), as
    /// `torch.split`.
    std::vector<Tensor> split(std::int64_t split_size, std::int64_t dim = 0) const;
    /// Views of consecutive pieces of the given sizes along `dim`, which must add up to its size.
    std::vector<Tensor> split(const std::vector<std::int64_t>& split_sizes, std::int64_t dim = 0) const;
    /// `chunks` views (fewer when the size does not allow) of equal size along `dim`, as `torch.chunk`;
    /// an empty dim gives `chunks` empty views.
    std::vector<Tensor> chunk(std::int64_t chunks, std::int64_t dim = 0) const;
    /// The tensor tiled `repeats[i]` times along dim i (leading repeats add dims), as `torch.Tensor.repeat`.
    Tensor repeat(const Shape& repeats) const;
    /// Each element repeated `repeats` times along `dim` (over the flattened tensor without one), as
    /// `torch.repeat_interleave`.
    Tensor repeat_interleave(std::int64_t repeats, std::optional<std::int64_t> dim = std::nullopt) const;
    /// The elements in reverse order along each of `dims` (a copy), as `torch.flip`.
    Tensor flip(const Dims& dims) const;
    /// Elements shifted by `shifts[i]` along `dims[i]`, wrapping around (`torch.roll`); without
    /// dims the flattened tensor is rolled by the single shift.
    Tensor roll(const std::vector<std::int64_t>& shifts, const std::vector<std::int64_t>& dims = {}) const;
    /// The lower triangle of the last two dims: elements above diagonal `diagonal` become 0.
    Tensor tril(std::int64_t diagonal = 0) const;
    /// The upper triangle of the last two dims: elements below diagonal `diagonal` become 0.
    Tensor triu(std::int64_t diagonal = 0) const;
    /// Dim `dim` split into `sizes` (one may be -1), a view as `torch.unflatten`.
    Tensor unflatten(std::int64_t dim, const Shape& sizes) const;
    /// A 1-D tensor becomes a square matrix with it on diagonal `diagonal`; a matrix gives its
    /// diagonal `diagonal` (a copy), as `torch.diag`.
    Tensor diag(std::int64_t diagonal = 0) const;

    // ---- comparisons and logical ops (src/compare.cpp): bool results, not differentiable ----------------
    /// `self == other` elementwise as a bool tensor, both brought to `result_type` first (bools
    /// compare as integers); NaN equals nothing.
    ///
    /// ```cpp
    /// auto hits = logits.argmax(1).eq(labels).sum();   // correct predictions
    /// ```
    Tensor eq(const Tensor& other) const;
    /// `self == other` with a number: a whole number meets an integer tensor in its dtype (so
    /// `uint8 == 256` compares with 0, as PyTorch), any other number in float32.
    Tensor eq(double other) const;
    Tensor ne(const Tensor& other) const;  ///< `self != other` (true where either is NaN).
    Tensor ne(double other) const;         ///< `self != other` with a number (see eq(double)).
    Tensor lt(const Tensor& other) const;  ///< `self < other`.
    Tensor lt(double other) const;         ///< `self < other` with a number (see eq(double)).
    Tensor le(const Tensor& other) const;  ///< `self <= other`.
    Tensor le(double other) const;         ///< `self <= other` with a number (see eq(double)).
    Tensor gt(const Tensor& other) const;  ///< `self > other`.
    Tensor gt(double other) const;         ///< `self > other` with a number (see eq(double)).
    Tensor ge(const Tensor& other) const;  ///< `self >= other`.
    Tensor ge(double other) const;         ///< `self >= other` with a number (see eq(double)).
    /// Elementwise AND of the truth values (nonzero, NaN included, is true) of any two dtypes, as bool.
    Tensor logical_and(const Tensor& other) const;
    Tensor logical_or(const Tensor& other) const;   ///< Elementwise OR of the truth values, as bool.
    Tensor logical_xor(const Tensor& other) const;  ///< Elementwise XOR of the truth values, as bool.
    Tensor logical_not() const;                     ///< True where self is zero.
    Tensor isnan() const;                           ///< True where self is NaN (never for integer tensors).
    Tensor isinf() const;                           ///< True where self is +inf or -inf.
    Tensor isposinf() const;                        ///< True where self is +inf.
    Tensor isneginf() const;                        ///< True where self is -inf.
    Tensor isfinite() const;                        ///< True where self is neither NaN nor infinite.
    /// NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by default the dtype's largest and
    /// lowest finite numbers), as `torch.nan_to_num`; the gradient is 0 at those places. Integer
    /// tensors come back as a copy.
    Tensor nan_to_num(double nan = 0.0, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt) const;
    /// `log(exp(self) + exp(other))`, computed without overflow, as `torch.logaddexp`.
    Tensor logaddexp(const Tensor& other) const;
    /// `log2(2^self + 2^other)`, as `torch.logaddexp2`.
    Tensor logaddexp2(const Tensor& other) const;
    /// Whether any element is nonzero, as a 0-d tensor: bool, but uint8 for a uint8 tensor (PyTorch
    /// 1.13's rule). False for an empty tensor.
    ///
    /// ```cpp
    /// if (loss.isnan().any().item<bool>()) throw std::runtime_error("diverged");
    /// ```
    Tensor any() const;
    /// Whether every element is nonzero (true for an empty tensor), bool or uint8 as any().
    Tensor all() const;
    /// any() along `dim`, which is removed unless `keepdim`.
    Tensor any(std::int64_t dim, bool keepdim = false) const;
    /// all() along `dim`, which is removed unless `keepdim`.
    Tensor all(std::int64_t dim, bool keepdim = false) const;
    /// True when other has self's shape and equal values (NaN equals nothing), as `torch.equal`;
    /// dtypes may differ (values compare after promotion).
    bool equal(const Tensor& other) const;
    /// `|self - other| <= atol + rtol * |other|` elementwise (or equal, or both NaN with
    /// `equal_nan`), as `torch.isclose`: both of one dtype ("Float did not match Double"),
    /// tolerances not negative.
    ///
    /// ```cpp
    /// auto close = a.isclose(b, 1e-4, 1e-6);   // bool tensor of the broadcast shape
    /// ```
    Tensor isclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;
    /// isclose(...).all() as a bool, as `torch.allclose`.
    bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;

    // ---- in-place updates (not recorded by autograd) -------------------------------------------
    // These are for optimizers and initialisers. As in PyTorch, they refuse a leaf that requires
    // grad unless called under NoGradGuard; unlike PyTorch, which records them, they also refuse there an
    // output of a recorded op and a tensor operand that requires grad (`buf.copy_(x * 2)` with x requiring
    // grad would lose x's gradient; write `buf = x * 2`). The arithmetic ones give the bits of the out-of-place op
    // (`x.mul_(y)` those of `x * y`); a contiguous floating-point tensor is written directly. An operand
    // that is another view of the same storage is read whole before the writes (PyTorch refuses a
    // partial overlap), so `x[1:] += x[:-1]` adds the old values. As in PyTorch, they throw when the
    // out-of-place op's result dtype cannot be written into self (a floating result into an integer or
    // bool tensor, an integer one into a bool tensor), and when elements of self share memory (an
    // expanded tensor; fill_ and zero_ excepted).
    /// `self += alpha * other`; for `other` of self's dtype (of its shape, or broadcasting to it), one
    /// rounding per element where the CPU has FMA, as PyTorch's `add_(other, alpha=alpha)` (its AVX2
    /// kernel fuses the multiply-add), except where PyTorch's compiled scalar loop rounds `alpha * other`
    /// first (a few elements at the end of each run along which `other` is one value): PyTorch's bits.
    /// Throws as PyTorch does where the result's dtype does not fit self (`i.add_(0.5)` or `i.div_(2)` for
    /// an int64 `i`: "result type Float can't be cast to the desired output type Long") and where self is
    /// expanded ("more than one element of the written-to tensor refers to a single memory location"),
    /// as do sub_, mul_, div_ and copy_ (which converts any dtype).
    Tensor& add_(const Tensor& other, double alpha = 1.0);
    Tensor& add_(double other);         ///< `self += other`.
    Tensor& sub_(const Tensor& other);  ///< `self -= other`.
    Tensor& mul_(const Tensor& other);  ///< `self *= other`.
    Tensor& mul_(double other);         ///< `self *= other`.
    Tensor& div_(const Tensor& other);  ///< `self /= other`.
    Tensor& div_(double other);         ///< `self /= other`.
    Tensor& zero_();                    ///< Sets every element to 0.
    Tensor& fill_(double value);        ///< Sets every element to `value`.
    /// Copies `src` (broadcast to this shape, converted to this dtype) into this tensor; `src` may
    /// overlap it (a view of the same storage), unlike in PyTorch.
    Tensor& copy_(const Tensor& src);

    // ---- selection by a mask (src/masking.cpp) ------------------------------------------------------
    /// A copy with `value` wherever the kBool `mask` (broadcast with self) is true, as
    /// `torch.masked_fill`; the result has the broadcast shape and self's dtype. Its gradient is 0
    /// at the filled places.
    ///
    /// ```cpp
    /// auto m = xgrad::tensor({1.0, 0.0, 1.0}, xgrad::kBool);
    /// auto y = x.masked_fill(m, 0.0);   // x = [1, 2, 3] gives [0, 2, 0]
    /// ```
    Tensor masked_fill(const Tensor& mask, double value) const;
    /// `masked_fill` with a 0-d `value` tensor (converted to self's dtype; a CPU one may fill a GPU
    /// tensor): value's gradient is the sum of the output's gradient over the filled places.
    Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
    /// In place: `self = self.masked_fill(mask, value)`; the mask must broadcast to self's shape.
    Tensor& masked_fill_(const Tensor& mask, double value);
    /// In place with a 0-d `value` tensor.
    Tensor& masked_fill_(const Tensor& mask, const Tensor& value);
    /// The int64 indices (n, dim()) of the nonzero elements in row-major order, as
    /// `torch.nonzero`. A CUDA tensor's positions are found on the host (PyTorch synchronises too).
    ///
    /// ```cpp
    /// auto at = xgrad::tensor({{0.0, 1.0}, {2.0, 0.0}}).nonzero();   // [[0, 1], [1, 0]]
    /// ```
    Tensor nonzero() const;
    /// `nonzero()`, as `torch.argwhere`.
    Tensor argwhere() const;
    /// The 1-D tensor of self's elements where the bool (or uint8) `mask` is true, self and mask
    /// broadcast together, as `torch.masked_select`; the gradient goes back to the selected places.
    ///
    /// ```cpp
    /// auto picked = x.masked_select(xgrad::tensor({1.0, 0.0, 1.0}, xgrad::kBool));   // x[0], x[2]
    /// ```
    Tensor masked_select(const Tensor& mask) const;
    /// `x[idx] = values` in place, as `torch.Tensor.index_put_`: `indices` holds one bool mask
    /// covering self's leading dims, or int64 indices of the leading dims as `index` takes them;
    /// `values` broadcasts to the shape of `x[idx]` and is converted to self's dtype. Where a place
    /// is named twice, which value it keeps is unspecified, as in PyTorch.
    ///
    /// ```cpp
    /// x.index_put_({mask}, xgrad::tensor({1.0, 2.0, 3.0}));   // every selected row = [1, 2, 3]
    /// ```
    Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values);
    /// `x[idx] = value` in place for a number.
    Tensor& index_put_(const std::vector<Tensor>& indices, double value);

    /// The implementation, for xgrad's own operations.
    const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }

private:
    /// The implementation's fields (the accessors above read them inline); throws naming `op` for an
    /// undefined tensor.
    const detail::TensorFields& fields(const char* op) const;
    /// Throws: `op` was asked of an undefined tensor.
    [[noreturn]] static void undefined(const char* op);
    /// size(dim) for a dim out of range: throws.
    [[noreturn]] std::int64_t size_out_of_range(std::int64_t dim) const;
    template <typename T>
    T item_as() const;
    template <typename T>
    std::vector<T> to_vector_as() const;

    std::shared_ptr<detail::TensorImpl> impl_;
};

namespace detail {

struct Storage;
struct Node;
struct PostAccumulateHook;

// What a Tensor handle points to: a strided view of a storage plus its autograd state. Internal: the
// fields are in the public header only so that the handle's accessors (shape(), dtype() ...) are
// inline, without a call each. detail::TensorImpl (src/detail/tensor_impl.hpp) derives from this and
// adds no fields, so the two are standard-layout and pointer-interconvertible.
struct TensorFields {
    std::shared_ptr<Storage> storage;
    Shape shape;
    Strides strides;
    std::int64_t offset = 0;
    DType dtype = kFloat32;
    Device device = kCPU;  // the storage's, kept here too for Tensor::device()
    bool requires_grad = false;
    std::shared_ptr<Node> grad_fn;                             // null for leaves
    Tensor grad;                                               // accumulated gradient of a leaf
    std::shared_ptr<PostAccumulateHook> post_accumulate_hook;  // leaves only; null but for DDP

    // True when the elements are laid out densely in row-major order (size-1 dims take any stride).
    bool is_contiguous() const {
        std::int64_t expected = 1;
        for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
            if (shape[d] != 1 && strides[static_cast<std::size_t>(d)] != expected) return false;
            expected *= shape[d];
        }
        return true;
    }
};

}  // namespace detail

inline const detail::TensorFields& Tensor::fields(const char* op) const {
    if (!impl_) [[unlikely]]
        undefined(op);
    return *reinterpret_cast<const detail::TensorFields*>(impl_.get());
}
inline const Shape& Tensor::shape() const {
    return fields("shape").shape;
}
inline std::int64_t Tensor::size(std::int64_t d) const {
    const Shape& s = shape();
    const std::int64_t n = s.size();
    if (d >= 0 && d < n) return s[d];
    if (d < 0 && d >= -n) return s[d + n];
    return size_out_of_range(d);
}
inline std::int64_t Tensor::dim() const {
    return shape().size();
}
inline std::int64_t Tensor::numel() const {
    return shape().numel();
}
inline DType Tensor::dtype() const {
    return fields("dtype").dtype;
}
inline Device Tensor::device() const {
    return fields("device").device;
}
inline const Strides& Tensor::strides() const {
    return fields("strides").strides;
}
inline std::int64_t Tensor::storage_offset() const {
    return fields("storage_offset").offset;
}
inline bool Tensor::is_contiguous() const {
    return fields("is_contiguous").is_contiguous();
}
inline bool Tensor::requires_grad() const {
    return impl_ && fields("requires_grad").requires_grad;
}

/// The values and int64 indices that max(dim), min(dim), sort and topk return, as PyTorch's named
/// tuples: `auto [values, indices] = x.sort();` or `x.max(1).indices`.
struct ValuesIndices {
    Tensor values;   ///< The selected values.
    Tensor indices;  ///< Where each value was along the dim (int64).
};

/// Tensor arithmetic with PyTorch's broadcasting; scalars may stand on either side.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);         ///< Adds a scalar.
Tensor operator+(double a, const Tensor& b);         ///< Adds a scalar.
Tensor operator-(const Tensor& a, const Tensor& b);  ///< Elementwise difference.
Tensor operator-(const Tensor& a, double b);         ///< Subtracts a scalar.
Tensor operator-(double a, const Tensor& b);         ///< Subtracts from a scalar.
Tensor operator*(const Tensor& a, const Tensor& b);  ///< Elementwise product.
Tensor operator*(const Tensor& a, double b);         ///< Multiplies by a scalar.
Tensor operator*(double a, const Tensor& b);         ///< Multiplies by a scalar.
Tensor operator/(const Tensor& a, const Tensor& b);  ///< Elementwise quotient.
Tensor operator/(const Tensor& a, double b);         ///< Divides by a scalar.
Tensor operator/(double a, const Tensor& b);         ///< Divides a scalar elementwise.
Tensor operator-(const Tensor& a);                   ///< Negation.
Tensor& operator+=(Tensor& a, const Tensor& b);      ///< In place: `a.add_(b)`.
Tensor& operator+=(Tensor& a, double b);             ///< In place: `a.add_(b)`.
Tensor& operator-=(Tensor& a, const Tensor& b);      ///< In place: `a.sub_(b)`.
Tensor& operator*=(Tensor& a, const Tensor& b);      ///< In place: `a.mul_(b)`.
Tensor& operator*=(Tensor& a, double b);             ///< In place: `a.mul_(b)`.
Tensor& operator/=(Tensor& a, const Tensor& b);      ///< In place: `a.div_(b)`.
Tensor& operator/=(Tensor& a, double b);             ///< In place: `a.div_(b)`.

// ---- comparisons and logical operators (src/compare.cpp): bool tensors, as PyTorch's ----------------
/// `a == b` elementwise as a bool tensor (Tensor::eq); numbers may stand on either side.
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);         ///< Tensor::eq with a number.
Tensor operator==(double a, const Tensor& b);         ///< Tensor::eq with a number.
Tensor operator!=(const Tensor& a, const Tensor& b);  ///< Tensor::ne.
Tensor operator!=(const Tensor& a, double b);         ///< Tensor::ne with a number.
Tensor operator!=(double a, const Tensor& b);         ///< Tensor::ne with a number.
Tensor operator<(const Tensor& a, const Tensor& b);   ///< Tensor::lt.
Tensor operator<(const Tensor& a, double b);          ///< Tensor::lt with a number.
Tensor operator<(double a, const Tensor& b);          ///< `b > a`.
Tensor operator<=(const Tensor& a, const Tensor& b);  ///< Tensor::le.
Tensor operator<=(const Tensor& a, double b);         ///< Tensor::le with a number.
Tensor operator<=(double a, const Tensor& b);         ///< `b >= a`.
Tensor operator>(const Tensor& a, const Tensor& b);   ///< Tensor::gt.
Tensor operator>(const Tensor& a, double b);          ///< Tensor::gt with a number.
Tensor operator>(double a, const Tensor& b);          ///< `b < a`.
Tensor operator>=(const Tensor& a, const Tensor& b);  ///< Tensor::ge.
Tensor operator>=(const Tensor& a, double b);         ///< Tensor::ge with a number.
Tensor operator>=(double a, const Tensor& b);         ///< `b <= a`.
/// Elementwise AND: of the truth values for two bool tensors (logical_and), bitwise for integer
/// tensors (in their result_type, bools as 0 and 1), as PyTorch's `&`; floating tensors throw.
///
/// ```cpp
/// auto in_range = (x >= 0) & (x < 10);   // bool
/// auto low = bytes & xgrad::tensor(15.0, xgrad::kUInt8);   // uint8
/// ```
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);  ///< Elementwise OR, logical or bitwise as `&`.
Tensor operator^(const Tensor& a, const Tensor& b);  ///< Elementwise XOR, logical or bitwise as `&`.
Tensor operator~(const Tensor& a);                   ///< logical_not of a bool tensor, bitwise NOT of an integer one.

namespace detail {
/// The 0-d operand on `like`'s device that an integer (or, with `boolean`, a bool) number of a
/// bitwise operator stands for: bool for a bool, else int64, which then promotes as PyTorch's
/// wrapped numbers do (an integer tensor keeps its dtype, a bool one becomes int64).
Tensor integral_operand(std::int64_t value, bool boolean, const Tensor& like);
}  // namespace detail

/// `a & n` with an integer or bool number, as PyTorch's: the number takes an integer tensor's dtype
/// (wrapping, as `uint8_tensor & 300` does), a bool tensor with a bool number stays bool, with an
/// integer number becomes int64; floating tensors throw.
///
/// ```cpp
/// auto low_bits = bytes & 15;       // uint8
/// auto flipped = mask ^ true;       // bool
/// ```
template <std::integral I>
Tensor operator&(const Tensor& a, I b) {
    return a & detail::integral_operand(static_cast<std::int64_t>(b), std::is_same_v<I, bool>, a);
}
/// `n & a`, as `a & n`.
template <std::integral I>
Tensor operator&(I a, const Tensor& b) {
    return b & a;
}
/// `a | n` with an integer or bool number, as `a & n`.
template <std::integral I>
Tensor operator|(const Tensor& a, I b) {
    return a | detail::integral_operand(static_cast<std::int64_t>(b), std::is_same_v<I, bool>, a);
}
/// `n | a`, as `a | n`.
template <std::integral I>
Tensor operator|(I a, const Tensor& b) {
    return b | a;
}
/// `a ^ n` with an integer or bool number, as `a & n`.
template <std::integral I>
Tensor operator^(const Tensor& a, I b) {
    return a ^ detail::integral_operand(static_cast<std::int64_t>(b), std::is_same_v<I, bool>, a);
}
/// `n ^ a`, as `a ^ n`.
template <std::integral I>
Tensor operator^(I a, const Tensor& b) {
    return b ^ a;
}

}  // namespace xgrad
