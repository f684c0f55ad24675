// max_pool1d/2d, avg_pool1d/2d and adaptive_avg_pool2d (kernels in kernels/*/conv), and their modules.
#include "xgrad/nn/pooling.hpp"

#include "detail/format.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"

namespace xgrad::nn {

using detail::fail;
using Grads = detail::GradList;

namespace {

/// Floor division, as PyTorch's div_rtn (the numerator may be negative).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// Input (N, C, H, W) or (C, H, W) seen as planes: the window's geometry and the output's shape.
struct Planes {
    kernels::Window2d g;
    std::int64_t planes;
    Shape out_shape;
};

Planes planes_of(const Tensor& input, const char* op) {
    detail::check_defined(input, op);
    if ((input.dim() != 3 && input.dim() != 4) || input.numel() == 0)
        fail(op, "non-empty 3D or 4D (batch mode) tensor expected for input, got input of size " +
                     to_string(input.shape()));
    if (!input.is_floating_point()) fail(op, "needs a floating-point input, got " + to_string(input.dtype()));
    Planes p;
    p.g.channels = input.size(-3);
    p.g.height = input.size(-2);
    p.g.width = input.size(-1);
    p.planes = input.numel() / (p.g.height * p.g.width);
    return p;
}

/// PyTorch's pooling_output_shape: windows `dilation` apart, the size rounded up in ceil_mode as long
/// as the last window starts inside the input or its left padding.
std::int64_t pooled_size(std::int64_t size, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                         std::int64_t dilation, bool ceil_mode) {
    std::int64_t out =
        floor_div(size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
    if (ceil_mode && (out - 1) * stride >= size + pad) --out;
    return out;
}

/// The checks and output size of max/avg pooling (PyTorch's pool2d_shape_check).
Planes window_planes(const Tensor& input, Pair kernel, const std::optional<Pair>& stride_in, Pair padding,
                     Pair dilation, bool ceil_mode, const char* op) {
    const Pair stride = stride_in.value_or(kernel);
    if (kernel.h <= 0 || kernel.w <= 0)
        fail(op, "kernel size should be greater than zero, but got kH: " + std::to_string(kernel.h) +
                     " kW: " + std::to_string(kernel.w));
    if (stride.h <= 0 || stride.w <= 0)
        fail(op, "stride should be greater than zero, but got dH: " + std::to_string(stride.h) +
                     " dW: " + std::to_string(stride.w));
    if (padding.h < 0 || padding.w < 0 || padding.h > kernel.h / 2 || padding.w > kernel.w / 2)
        fail(op,
             "pad should be at most half of kernel size, but got pad=" +
                 std::to_string(padding.h > kernel.h / 2 || padding.h < 0 ? padding.h : padding.w) +
                 " and kernel_size=" + std::to_string(padding.h > kernel.h / 2 || padding.h < 0 ? kernel.h : kernel.w));
    if (dilation.h <= 0 || dilation.w <= 0)
        fail(op, "dilation should be greater than zero, but got dilationH: " + std::to_string(dilation.h) +
                     " dilationW: " + std::to_string(dilation.w));
    Planes p = planes_of(input, op);
    kernels::Window2d& g = p.g;
    g.kernel_h = kernel.h;
    g.kernel_w = kernel.w;
    g.stride_h = stride.h;
    g.stride_w = stride.w;
    g.pad_h = padding.h;
    g.pad_w = padding.w;
    g.dilation_h = dilation.h;
    g.dilation_w = dilation.w;
    g.out_h = pooled_size(g.height, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, ceil_mode);
    g.out_w = pooled_size(g.width, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, ceil_mode);
    if (g.out_h < 1 || g.out_w < 1)
        fail(op, "Given input size: (" + std::to_string(g.channels) + "x" + std::to_string(g.height) + "x" +
                     std::to_string(g.width) + "). Calculated output size: (" + std::to_string(g.channels) + "x" +
                     std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + "). Output size is too small");
    Shape s = input.shape();
    s[s.size() - 2] = g.out_h;
    s[s.size() - 1] = g.out_w;
    p.out_shape = s;
    return p;
}

/// Average pooling (plain or adaptive) as one recorded op.
Tensor avg_pool(const Tensor& input, const Planes& p, const char* name) {
    const Tensor x = input.detach().contiguous();
    Tensor out = detail::make_empty(p.out_shape, x.dtype(), x.device());
    kernels::avg_pool2d(x, out, p.g);
    if (!detail::needs_grad({&input})) return out;
    detail::record(out, name, {&input}, [g = p.g, shape = input.shape()](const Tensor& grad, const detail::NeedsGrad&) {
        Tensor dx = detail::make_empty(shape, grad.dtype(), grad.device());
        kernels::avg_pool2d_backward(grad.contiguous(), dx, g);
        return Grads{dx};
    });
    return out;
}

/// Max pooling and its indices as one recorded op; `op` names it in error messages.
std::pair<Tensor, Tensor> max_pool(const Tensor& input, Pair kernel, const std::optional<Pair>& stride, Pair padding,
                                   Pair dilation, bool ceil_mode, const char* op) {
    const Planes p = window_planes(input, kernel, stride, padding, dilation, ceil_mode, op);
    const Tensor x = input.detach().contiguous();
    Tensor out = detail::make_empty(p.out_shape, x.dtype(), x.device());
    Tensor indices = detail::make_empty(p.out_shape, kInt64, x.device());
    kernels::max_pool2d(x, out, indices, p.g);
    if (!detail::needs_grad({&input})) return {out, indices};
    detail::record(out, "MaxPool2DWithIndicesBackward0", {&input},
                   [g = p.g, indices, shape = input.shape()](const Tensor& grad, const detail::NeedsGrad&) {
                       Tensor dx = detail::make_empty(shape, grad.dtype(), grad.device());
                       kernels::max_pool2d_backward(grad.contiguous(), indices, dx, g);
                       return Grads{dx};
                   });
    return {out, indices};
}

/// `2` or `(2, 3)`, as PyTorch prints an int-or-tuple argument.
std::string repr(const Pair& p) {
    if (p.single) return std::to_string(p.h);
    std::string r = "(";
    r += std::to_string(p.h) + ", " + std::to_string(p.w);
    return r + ")";
}

}  // namespace

namespace functional {

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Pair kernel_size, std::optional<Pair> stride,
                                                  Pair padding, Pair dilation, bool ceil_mode) {
    return max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
}

Tensor max_pool2d(const Tensor& input, Pair kernel_size, std::optional<Pair> stride, Pair padding, Pair dilation,
                  bool ceil_mode) {
    return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode).first;
}

Tensor avg_pool2d(const Tensor& input, Pair kernel_size, std::optional<Pair> stride, Pair padding, bool ceil_mode,
                  bool count_include_pad, std::optional<std::int64_t> divisor_override) {
    if (divisor_override && *divisor_override == 0) fail("avg_pool2d", "divisor must be not zero");
    Planes p = window_planes(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d");
    p.g.count_include_pad = count_include_pad;
    p.g.divisor = divisor_override.value_or(0);
    return avg_pool(input, p, "AvgPool2DBackward0");
}

std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, std::int64_t kernel_size,
                                                  std::optional<std::int64_t> stride, std::int64_t padding,
                                                  std::int64_t dilation, bool ceil_mode) {
    detail::check_defined(input, "max_pool1d");
    if (input.dim() != 2 && input.dim() != 3)
        fail("max_pool1d", "Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:" +
                               detail::size_list(input.shape()));
    // (N, C, L) as (N, C, 1, L); the indices along L are the flat ones of the 1-row planes.
    auto [y, i] = max_pool(input.unsqueeze(-2), Pair(1, kernel_size), Pair(1, stride.value_or(kernel_size)),
                           Pair(0, padding), Pair(1, dilation), ceil_mode, "max_pool1d");
    return {y.squeeze(-2), i.squeeze(-2)};
}

Tensor max_pool1d(const Tensor& input, std::int64_t kernel_size, std::optional<std::int64_t> stride,
                  std::int64_t padding, std::int64_t dilation, bool ceil_mode) {
    return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode).first;
}

Tensor avg_pool1d(const Tensor& input, std::int64_t kernel_size, std::optional<std::int64_t> stride,
                  std::int64_t padding, bool ceil_mode, bool count_include_pad) {
    detail::check_defined(input, "avg_pool1d");
    if (input.dim() != 2 && input.dim() != 3)
        fail("avg_pool1d", "Expected 2 to 3 dimensions, but got " + std::to_string(input.dim()) +
                               "-dimensional tensor for argument #1 'self' (while checking arguments for avg_pool1d)");
    Planes p = window_planes(input.unsqueeze(-2), Pair(1, kernel_size), Pair(1, stride.value_or(kernel_size)),
                             Pair(0, padding), 1, ceil_mode, "avg_pool1d");
    p.g.count_include_pad = count_include_pad;
    return avg_pool(input.unsqueeze(-2), p, "AvgPool2DBackward0").squeeze(-2);
}

Tensor adaptive_avg_pool2d(const Tensor& input, Pair output_size) {
    const char* op = "adaptive_avg_pool2d";
    detail::check_defined(input, op);
    if (input.dim() != 3 && input.dim() != 4)
        fail(op, "Expected 3D or 4D tensor, but got " + detail::size_list(input.shape()));
    for (std::int64_t d = input.dim() - 3; d < input.dim(); ++d)
        if (input.size(d) == 0)
            fail(op, "Expected input to have non-zero size for non-batch dimensions, but input has sizes " +
                         detail::size_list(input.shape()) + " with dimension " + std::to_string(d) + " being empty");
    if (output_size.h < 0 || output_size.w < 0)
        fail(op, "output_size must be non-negative, got (" + std::to_string(output_size.h) + ", " +
                     std::to_string(output_size.w) + ")");
    // PyTorch takes a mean for a 1 × 1 output (MeanBackward1), the same numbers.
    if (output_size.h == 1 && output_size.w == 1) {
        planes_of(input, op);
        return input.mean({-2, -1}, true);
    }
    Planes p = planes_of(input, op);
    p.g.adaptive = true;
    p.g.out_h = output_size.h;
    p.g.out_w = output_size.w;
    Shape s = input.shape();
    s[s.size() - 2] = output_size.h;
    s[s.size() - 1] = output_size.w;
    p.out_shape = s;
    return avg_pool(input, p, "AdaptiveAvgPool2DBackward0");
}

}  // namespace functional

// ---- modules -------------------------------------------------------------------------------------------

MaxPool2d::MaxPool2d(Pair kernel_size, std::optional<Pair> stride, Pair padding, Pair dilation, bool return_indices,
                     bool ceil_mode)
    : kernel_(kernel_size),
      stride_(stride.value_or(kernel_size)),
      padding_(padding),
      dilation_(dilation),
      return_indices_(return_indices),
      ceil_mode_(ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
    return functional::max_pool2d(input, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::pair<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& input) {
    return functional::max_pool2d_with_indices(input, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::string MaxPool2d::extra_repr() const {
    return "kernel_size=" + repr(kernel_) + ", stride=" + repr(stride_) + ", padding=" + repr(padding_) +
           ", dilation=" + repr(dilation_) + ", ceil_mode=" + (ceil_mode_ ? "True" : "False");
}

AvgPool2d::AvgPool2d(Pair kernel_size, std::optional<Pair> stride, Pair padding, bool ceil_mode, bool count_include_pad,
                     std::optional<std::int64_t> divisor_override)
    : kernel_(kernel_size),
      stride_(stride.value_or(kernel_size)),
      padding_(padding),
      count_include_pad_(count_include_pad),
      ceil_mode_(ceil_mode),
      divisor_override_(divisor_override) {}

Tensor AvgPool2d::forward(const Tensor& input) {
    return functional::avg_pool2d(input, kernel_, stride_, padding_, ceil_mode_, count_include_pad_, divisor_override_);
}

std::string AvgPool2d::extra_repr() const {
    return "kernel_size=" + repr(kernel_) + ", stride=" + repr(stride_) + ", padding=" + repr(padding_);
}

MaxPool1d::MaxPool1d(std::int64_t kernel_size, std::optional<std::int64_t> stride, std::int64_t padding,
                     std::int64_t dilation, bool return_indices, bool ceil_mode)
    : kernel_(kernel_size),
      stride_(stride.value_or(kernel_size)),
      padding_(padding),
      dilation_(dilation),
      return_indices_(return_indices),
      ceil_mode_(ceil_mode) {}

Tensor MaxPool1d::forward(const Tensor& input) {
    return functional::max_pool1d(input, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::pair<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& input) {
    return functional::max_pool1d_with_indices(input, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::string MaxPool1d::extra_repr() const {
    return "kernel_size=" + std::to_string(kernel_) + ", stride=" + std::to_string(stride_) +
           ", padding=" + std::to_string(padding_) + ", dilation=" + std::to_string(dilation_) +
           ", ceil_mode=" + (ceil_mode_ ? "True" : "False");
}

AvgPool1d::AvgPool1d(std::int64_t kernel_size, std::optional<std::int64_t> stride, std::int64_t padding, bool ceil_mode,
                     bool count_include_pad)
    : kernel_(kernel_size),
      stride_(stride.value_or(kernel_size)),
      padding_(padding),
      count_include_pad_(count_include_pad),
      ceil_mode_(ceil_mode) {}

Tensor AvgPool1d::forward(const Tensor& input) {
    return functional::avg_pool1d(input, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}

std::string AvgPool1d::extra_repr() const {
    // PyTorch's AvgPool1d keeps its arguments as 1-tuples.
    return "kernel_size=(" + std::to_string(kernel_) + ",), stride=(" + std::to_string(stride_) + ",), padding=(" +
           std::to_string(padding_) + ",)";
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Pair output_size) : output_size_(output_size) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
    return functional::adaptive_avg_pool2d(input, output_size_);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
    return "output_size=" + repr(output_size_);
}

}  // namespace xgrad::nn
