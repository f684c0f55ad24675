// conv1d/conv2d as im2col + one batched matrix product per group (kernels in kernels/*/conv), and
// the Conv1d/Conv2d modules, initialised as PyTorch's.
#include "xgrad/nn/conv.hpp"

#include <cmath>

#include "detail/format.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/init.hpp"
#include "xgrad/ops.hpp"

namespace xgrad::nn {

using detail::fail;
using Grads = std::vector<Tensor>;

namespace {

/// `(3, 3)` or `(3,)`: a Python tuple of one or two values.
std::string tuple(const Pair& p, int spatial) {
    std::string r = "(";
    if (spatial == 2) r += std::to_string(p.h) + ", ";
    r += std::to_string(p.w);
    return r + (spatial == 1 ? ",)" : ")");
}

/// The shared body of conv1d (spatial = 1, a height of 1 added) and conv2d (spatial = 2).
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                   Pair dilation, std::int64_t groups, int spatial) {
    const char* op = spatial == 1 ? "conv1d" : "conv2d";
    detail::check_defined(input, op);
    detail::check_defined(weight, op);
    if (stride.h <= 0 || stride.w <= 0) fail(op, "non-positive stride is not supported");
    if (padding.h < 0 || padding.w < 0) fail(op, "negative padding is not supported");
    if (dilation.h <= 0 || dilation.w <= 0) fail(op, "non-positive dilation is not supported");
    if (groups <= 0) fail(op, "non-positive groups is not supported");
    const std::int64_t in_dim = input.dim();
    if (in_dim != spatial + 1 && in_dim != spatial + 2)
        fail(op, "Expected " + std::to_string(spatial + 1) + "D (unbatched) or " + std::to_string(spatial + 2) +
                     "D (batched) input to " + op + ", but got input of size: " + detail::size_list(input.shape()));
    if (weight.dim() != spatial + 2)
        fail(op, "Expected " + std::to_string(spatial + 2) + "D weight (out_channels, in_channels / groups, kernel" +
                     (spatial == 2 ? "_h, kernel_w" : "") + "), but got weight of size " +
                     detail::size_list(weight.shape()));
    detail::check_same_device(input, weight, op);
    if (bias.defined()) detail::check_same_device(input, bias, op);
    if (!input.is_floating_point()) fail(op, "needs a floating-point input, got " + to_string(input.dtype()));
    if (weight.dtype() != input.dtype() || (bias.defined() && bias.dtype() != input.dtype()))
        fail(op, "expected input, weight and bias to have the same dtype, but got " + to_string(input.dtype()) + ", " +
                     to_string(weight.dtype()) + (bias.defined() ? " and " + to_string(bias.dtype()) : ""));
    // Unbatched input runs as a batch of one, squeezed afterwards (SqueezeBackward1, as PyTorch).
    if (in_dim == spatial + 1)
        return convolution(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, spatial).squeeze(0);
    const Shape ishape = input.shape();
    const std::int64_t out_c = weight.size(0), in_c = ishape[1];
    if (out_c % groups != 0)
        fail(op, "Given groups=" + std::to_string(groups) + ", expected weight to be divisible by " +
                     std::to_string(groups) + " at dimension 0, but got weight of size " +
                     detail::size_list(weight.shape()) + " instead");
    if (weight.size(1) * groups != in_c)
        fail(op, "Given groups=" + std::to_string(groups) + ", weight of size " + detail::size_list(weight.shape()) +
                     ", expected input" + detail::size_list(ishape) + " to have " +
                     std::to_string(weight.size(1) * groups) + " channels, but got " + std::to_string(in_c) +
                     " channels instead");
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out_c))
        fail(op, "Given weight of size " + detail::size_list(weight.shape()) +
                     ", expected bias to be 1-dimensional with " + std::to_string(out_c) +
                     " elements, but got bias of size " + detail::size_list(bias.shape()) + " instead");

    // Everything below works on (N, C, H, W) with H = 1 for conv1d.
    kernels::Window2d g;
    g.channels = in_c;
    g.height = spatial == 1 ? 1 : ishape[2];
    g.width = ishape[ishape.size() - 1];
    g.kernel_h = spatial == 1 ? 1 : weight.size(2);
    g.kernel_w = weight.size(-1);
    g.stride_h = spatial == 1 ? 1 : stride.h;
    g.stride_w = stride.w;
    g.pad_h = spatial == 1 ? 0 : padding.h;
    g.pad_w = padding.w;
    g.dilation_h = spatial == 1 ? 1 : dilation.h;
    g.dilation_w = dilation.w;
    const std::int64_t span_h = g.dilation_h * (g.kernel_h - 1) + 1, span_w = g.dilation_w * (g.kernel_w - 1) + 1;
    const std::int64_t padded_h = g.height + 2 * g.pad_h, padded_w = g.width + 2 * g.pad_w;
    if (padded_h < span_h || padded_w < span_w)
        fail(op, spatial == 1
                     ? "Calculated padded input size per channel: (" + std::to_string(padded_w) + "). Kernel size: (" +
                           std::to_string(span_w) + "). Kernel size can't be greater than actual input size"
                     : "Calculated padded input size per channel: (" + std::to_string(padded_h) + " x " +
                           std::to_string(padded_w) + "). Kernel size: (" + std::to_string(span_h) + " x " +
                           std::to_string(span_w) + "). Kernel size can't be greater than actual input size");
    g.out_h = (padded_h - span_h) / g.stride_h + 1;
    g.out_w = (padded_w - span_w) / g.stride_w + 1;

    const std::int64_t n = ishape[0], kk = in_c / groups * g.kernel_h * g.kernel_w, length = g.out_h * g.out_w;
    const std::int64_t og = out_c / groups;
    Shape out_shape{n, out_c};
    if (spatial == 2) out_shape.push_back(g.out_h);
    out_shape.push_back(g.out_w);

    Tensor out, cols;
    const Tensor wg = weight.detach().contiguous().view(Shape{groups, og, kk});  // (G, O/G, K)
    {
        NoGradGuard no_grad;
        const Tensor x = input.detach().contiguous();
        cols = detail::make_empty(Shape{n, in_c * g.kernel_h * g.kernel_w, length}, x.dtype(), x.device(), op);
        kernels::im2col(x, cols, g);
        // (G, O/G, K) · (N, G, K, L) → (N, G, O/G, L)
        Tensor z = matmul(wg, cols.view(Shape{n, groups, kk, length})).view(Shape{n, out_c, length});
        if (bias.defined()) z = z + bias.detach().view(Shape{1, out_c, 1});
        out = z.view(out_shape);
    }
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    detail::record(
        out, "ConvolutionBackward0", {&input, &weight, &bias},
        [scols = detail::Saved(cols), swg = detail::Saved(wg), g, n, groups, og, kk, length, ishape = input.shape(),
         wshape = weight.shape()](const Tensor& grad, const detail::NeedsGrad& need) {
            const Tensor &cols = scols, &wg = swg;
            const Tensor gz = grad.reshape(Shape{n, groups, og, length});  // (N, G, O/G, L)
            Grads r(3);
            if (need[0]) {
                // dcols (N, G, K, L) = wgᵀ · gz, folded back onto the input's pixels.
                const Tensor dcols = matmul(wg.transpose(-1, -2), gz).contiguous();
                Tensor dx =
                    detail::make_empty(Shape{n, g.channels, g.height, g.width}, cols.dtype(), cols.device(), "conv2d");
                kernels::col2im(dcols, dx, g);
                r[0] = dx.view(ishape);
            }
            if (need[1])  // Σ over the batch of gz · colsᵀ: (G, O/G, K)
                r[1] = matmul(gz, cols.view(Shape{n, groups, kk, length}).transpose(-1, -2)).sum({0}).view(wshape);
            if (need[2]) r[2] = gz.reshape(Shape{n, groups * og, length}).sum({0, 2});
            return r;
        });
    return out;
}

/// PyTorch's _ConvNd.reset_parameters: kaiming_uniform_(a = √5) on the weight, then the bias in
/// ±1/√fan_in, fan_in from the weight's shape.
void reset_conv(Tensor& weight, Tensor& bias) {
    NoGradGuard no_grad;
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
        const std::int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
        const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
        init::uniform_(bias, -bound, bound);
    }
}

/// PyTorch's _ConvNd checks, as ValueError texts.
void check_channels(const char* name, std::int64_t in, std::int64_t out, std::int64_t groups) {
    if (groups <= 0) fail(name, "groups must be a positive integer, got " + std::to_string(groups));
    if (in < 0 || out < 0)
        fail(name, "in_channels and out_channels must be non-negative, got " + std::to_string(in) + " and " +
                       std::to_string(out));
    if (in % groups != 0) fail(name, "in_channels must be divisible by groups");
    if (out % groups != 0) fail(name, "out_channels must be divisible by groups");
}

}  // namespace

namespace functional {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding, Pair dilation,
              std::int64_t groups) {
    return convolution(input, weight, bias, stride, padding, dilation, groups, 2);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, std::int64_t stride, std::int64_t padding,
              std::int64_t dilation, std::int64_t groups) {
    return convolution(input, weight, bias, Pair(1, stride), Pair(0, padding), Pair(1, dilation), groups, 1);
}

}  // namespace functional

// ---- modules -------------------------------------------------------------------------------------------

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, Pair kernel_size, Pair stride, Pair padding,
               Pair dilation, std::int64_t groups, bool has_bias)
    : in_(in_channels),
      out_(out_channels),
      groups_(groups),
      kernel_(kernel_size),
      stride_(stride),
      padding_(padding),
      dilation_(dilation) {
    check_channels("Conv2d", in_channels, out_channels, groups);
    if (kernel_size.h <= 0 || kernel_size.w <= 0)
        fail("Conv2d", "kernel_size must be positive, got " + tuple(kernel_size, 2));
    weight = empty({out_channels, in_channels / groups, kernel_size.h, kernel_size.w});
    register_parameter("weight", weight);
    if (has_bias) {
        bias = empty({out_channels});
        register_parameter("bias", bias);
    }
    initialize_parameters();
}

void Conv2d::reset_parameters() {
    reset_conv(weight, bias);
}

Tensor Conv2d::forward(const Tensor& input) {
    return functional::conv2d(input, weight, bias, stride_, padding_, dilation_, groups_);
}

std::string Conv2d::extra_repr() const {
    std::string s = std::to_string(in_) + ", " + std::to_string(out_) + ", kernel_size=" + tuple(kernel_, 2) +
                    ", stride=" + tuple(stride_, 2);
    if (padding_.h != 0 || padding_.w != 0) s += ", padding=" + tuple(padding_, 2);
    if (dilation_.h != 1 || dilation_.w != 1) s += ", dilation=" + tuple(dilation_, 2);
    if (groups_ != 1) s += ", groups=" + std::to_string(groups_);
    if (!bias.defined()) s += ", bias=False";
    return s;
}

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride,
               std::int64_t padding, std::int64_t dilation, std::int64_t groups, bool has_bias)
    : in_(in_channels),
      out_(out_channels),
      kernel_(kernel_size),
      stride_(stride),
      padding_(padding),
      dilation_(dilation),
      groups_(groups) {
    check_channels("Conv1d", in_channels, out_channels, groups);
    if (kernel_size <= 0) fail("Conv1d", "kernel_size must be positive, got " + std::to_string(kernel_size));
    weight = empty({out_channels, in_channels / groups, kernel_size});
    register_parameter("weight", weight);
    if (has_bias) {
        bias = empty({out_channels});
        register_parameter("bias", bias);
    }
    initialize_parameters();
}

void Conv1d::reset_parameters() {
    reset_conv(weight, bias);
}

Tensor Conv1d::forward(const Tensor& input) {
    return functional::conv1d(input, weight, bias, stride_, padding_, dilation_, groups_);
}

std::string Conv1d::extra_repr() const {
    auto one = [](std::int64_t v) { return tuple(Pair(v), 1); };
    std::string s = std::to_string(in_) + ", " + std::to_string(out_) + ", kernel_size=" + one(kernel_) +
                    ", stride=" + one(stride_);
    if (padding_ != 0) s += ", padding=" + one(padding_);
    if (dilation_ != 1) s += ", dilation=" + one(dilation_);
    if (groups_ != 1) s += ", groups=" + std::to_string(groups_);
    if (!bias.defined()) s += ", bias=False";
    return s;
}

}  // namespace xgrad::nn
