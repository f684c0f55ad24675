// LayerNorm and RMSNorm: fused forward/backward ops (kernels in kernels/*/norm) and the modules.
#include "xgrad/nn/normalization.hpp"

#include <atomic>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"

namespace xgrad::nn {

using detail::fail;
using Grads = detail::GradList;

namespace {

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
    for (const Tensor* p : {&weight, &bias}) {
        if (p->defined() && p->shape() != shape)
            fail(op, "weight and bias must have shape " + to_string(shape) + ", got " + to_string(p->shape()));
        if (p->defined()) detail::check_same_device(input, *p, op);
    }
    if (!input.is_floating_point()) fail(op, "needs a floating-point input, got " + to_string(input.dtype()));
    const std::int64_t width = shape.numel();
    return {width == 0 ? 0 : input.numel() / width, width};
}

}  // namespace

namespace functional {

// ---- layer_norm ------------------------------------------------------------------------------------

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
    const auto [rows, width] = rows_and_width(input, normalized_shape, weight, bias, "layer_norm");
    const std::int64_t norm_width = width;
    const DType dt = input.dtype();
    Tensor x = input.detach().contiguous();
    Tensor w = weight.defined() ? weight.detach().to(dt).contiguous() : Tensor();
    Tensor b = bias.defined() ? bias.detach().to(dt).contiguous() : Tensor();
    const Device dev = input.device();
    Tensor out = detail::make_empty(input.shape(), dt, dev);
    Tensor mean = detail::make_empty(Shape{rows}, dt, dev), rstd = detail::make_empty(Shape{rows}, dt, dev);
    kernels::layer_norm_forward(x, w, b, eps, out, mean, rstd);
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    detail::record(out, "NativeLayerNormBackward0", {&input, &weight, &bias},
                   [sx = detail::Saved(x), sw = detail::Saved(w), mean, rstd, width = norm_width](
                       const Tensor& grad, const detail::NeedsGrad& need) {
                       const Tensor &x = sx, &w = sw;
                       Tensor g = grad.contiguous();
                       const DType dt = x.dtype();
                       const Device dev = x.device();
                       Tensor dx = need[0] ? detail::make_empty(x.shape(), dt, dev) : Tensor();
                       Tensor dw = need[1] ? detail::make_empty(w.shape(), dt, dev) : Tensor();
                       Tensor db =
                           need[2] ? detail::make_empty(w.defined() ? w.shape() : Shape{width}, dt, dev) : Tensor();
                       kernels::layer_norm_backward(g, x, w, mean, rstd, dx, dw, db);
                       return Grads{dx, dw, db};
                   });
    return out;
}

// ---- rms_norm --------------------------------------------------------------------------------------

Tensor rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
    const std::int64_t rows = rows_and_width(input, normalized_shape, weight, Tensor(), "rms_norm").first;
    const DType dt = input.dtype();
    const double e =
        eps.value_or(dt == kFloat32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon());
    Tensor x = input.detach().contiguous();
    Tensor w = weight.defined() ? weight.detach().to(dt).contiguous() : Tensor();
    const Device dev = input.device();
    Tensor out = detail::make_empty(input.shape(), dt, dev);
    Tensor rstd = detail::make_empty(Shape{rows}, dt, dev);
    kernels::rms_norm_forward(x, w, e, out, rstd);
    if (!detail::needs_grad({&input, &weight})) return out;
    detail::record(
        out, "MulBackward0", {&input, &weight},
        [sx = detail::Saved(x), sw = detail::Saved(w), rstd](const Tensor& grad, const detail::NeedsGrad& need) {
            const Tensor &x = sx, &w = sw;
            Tensor g = grad.contiguous();
            const DType dt = x.dtype();
            const Device dev = x.device();
            Tensor dx = need[0] ? detail::make_empty(x.shape(), dt, dev) : Tensor();
            Tensor dw = need[1] ? detail::make_empty(w.shape(), dt, dev) : Tensor();
            kernels::rms_norm_backward(g, x, w, rstd, dx, dw);
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

/// The warning for giagrad's integer form normalising every axis of `input` (the batch included),
/// once per process, as PyTorch's TORCH_WARN_ONCE.
void warn_if_all_axes(const char* module, std::int64_t dimensions, const Tensor& input) {
    static std::atomic<bool> warned{false};
    if (dimensions != input.dim() || input.dim() < 2 || warned.exchange(true)) return;
    const std::string d = std::to_string(dimensions), last = std::to_string(input.size(-1));
    std::cerr << "xgrad warning: nn::" << module << "(" << d << ") normalises the last " << d
              << " dimensions of its input of shape " << to_string(input.shape())
              << ", that is all of them, the batch included (giagrad's meaning of an integer). For PyTorch's nn."
              << module << "(" << last << "), over the last dimension only, write nn::" << module << "({" << last
              << "}).\n";
}

/// The normalised shape a lazy module takes from the entries of `state` under `prefix`; nothing
/// when `state` has no weight for it. Throws naming the entry when it cannot fit.
std::optional<Shape> shape_from_state(const std::map<std::string, Tensor>& state, const std::string& prefix,
                                      std::int64_t dimensions, bool has_bias, const char* module) {
    auto weight = state.find(prefix + "weight");
    if (weight == state.end() || !weight->second.defined()) return std::nullopt;
    const Shape shape = weight->second.shape();
    if (shape.size() != dimensions)
        fail("load_state_dict", "size mismatch for " + prefix + "weight: the file has shape " + to_string(shape) +
                                    ", which cannot be the normalized shape of " + module + "(" +
                                    std::to_string(dimensions) + ") (it needs " + std::to_string(dimensions) +
                                    " dimensions)");
    auto bias = has_bias ? state.find(prefix + "bias") : state.end();
    if (bias != state.end() && bias->second.defined() && bias->second.shape() != shape)
        fail("load_state_dict", "size mismatch for " + prefix + "bias: the file has shape " +
                                    to_string(bias->second.shape()) + ", the weight has shape " + to_string(shape));
    return shape;
}

}  // namespace

void LayerNorm::initialize_from(const std::map<std::string, Tensor>& state, const std::string& prefix, bool apply) {
    auto shape = shape_from_state(state, prefix, dimensions_, true, "LayerNorm");
    if (shape && apply) materialize(*shape);
}

void RMSNorm::initialize_from(const std::map<std::string, Tensor>& state, const std::string& prefix, bool apply) {
    auto shape = shape_from_state(state, prefix, dimensions_, false, "RMSNorm");
    if (shape && apply) materialize(*shape);
}

LayerNorm::LayerNorm(std::int64_t dimensions, std::optional<Shape> shape, double eps, bool affine)
    : dimensions_(dimensions), eps_(eps), affine_(affine), from_int_(!shape) {
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
    const FactoryOptions options = FactoryOptions(weight.dtype()).device(weight.device());  // where Module::to put it
    detail::replace_contents(weight, ones(shape, options));
    detail::replace_contents(bias, zeros(shape, options));
}

Tensor LayerNorm::forward(const Tensor& input) {
    Shape trailing = trailing_shape(input, dimensions_, "LayerNorm");
    if (!normalized_shape_) materialize(trailing);
    if (from_int_) warn_if_all_axes("LayerNorm", dimensions_, input);
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
    : dimensions_(dimensions), eps_(eps), affine_(affine), from_int_(!shape) {
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
    detail::replace_contents(weight, ones(shape, FactoryOptions(weight.dtype()).device(weight.device())));
}

Tensor RMSNorm::forward(const Tensor& input) {
    Shape trailing = trailing_shape(input, dimensions_, "RMSNorm");
    if (!normalized_shape_) materialize(trailing);
    if (from_int_) warn_if_all_axes("RMSNorm", dimensions_, input);
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
