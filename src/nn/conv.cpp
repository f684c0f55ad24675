// conv1d/conv2d as im2col + one batched matrix product per group (kernels in kernels/*/conv), and
// the Conv1d/Conv2d modules, initialised as PyTorch's.
#include "xgrad/nn/conv.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detail/format.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/init.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/parallel.hpp"

namespace xgrad::nn {

using detail::fail;
using Grads = detail::GradList;

namespace {

/// `(3, 3)` or `(3,)`: a Python tuple of one or two values.
std::string tuple(const Pair& p, int spatial) {
    std::string r = "(";
    if (spatial == 2) r += std::to_string(p.h) + ", ";
    r += std::to_string(p.w);
    return r + (spatial == 1 ? ",)" : ")");
}

/// The (left, right) padding of each axis that "same" asks for, last axis first as F::pad takes it:
/// dilation·(k - 1) in all, the extra one on the right (PyTorch's _reversed_padding_repeated_twice).
std::vector<std::int64_t> same_padding(Pair kernel, Pair dilation, int spatial) {
    const std::int64_t tw = dilation.w * (kernel.w - 1), th = dilation.h * (kernel.h - 1);
    std::vector<std::int64_t> pad{tw / 2, tw - tw / 2};
    if (spatial == 2) pad.insert(pad.end(), {th / 2, th - th / 2});
    return pad;
}

/// The shared body of conv1d (spatial = 1, a height of 1 added) and conv2d (spatial = 2).
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, Pair stride,
                   const Padding& padding_in, Pair dilation, std::int64_t groups, int spatial) {
    const char* op = spatial == 1 ? "conv1d" : "conv2d";
    detail::check_defined(input, op);
    detail::check_defined(weight, op);
    if (!padding_in.mode.empty() && padding_in.mode != "same" && padding_in.mode != "valid")
        fail(op, "Invalid padding string: '" + padding_in.mode + "'");
    if (padding_in.mode == "same" && (stride.h != 1 || stride.w != 1))
        fail(op, "padding='same' is not supported for strided convolutions");
    Pair padding = padding_in.mode.empty() ? padding_in.pair : Pair(0);
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
        return convolution(input.unsqueeze(0), weight, bias, stride, padding_in, dilation, groups, spatial).squeeze(0);
    if (padding_in.mode == "same") {
        // PyTorch's _convolution_mode: pad left = total / 2 on both sides in the convolution, and
        // an odd total's extra zero on the right / bottom of the input first.
        const std::vector<std::int64_t> pads =
            same_padding(Pair(spatial == 1 ? 1 : weight.size(2), weight.size(-1)), dilation, spatial);
        std::vector<std::int64_t> extra;
        bool uneven = false;
        for (std::size_t i = 0; i < pads.size(); i += 2) {
            extra.insert(extra.end(), {0, pads[i + 1] - pads[i]});
            uneven = uneven || pads[i + 1] != pads[i];
        }
        const Pair left(spatial == 1 ? 0 : pads[2], pads[0]);
        return convolution(uneven ? functional::pad(input, extra) : input, weight, bias, stride, left, dilation, groups,
                           spatial);
    }
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

    // (G, O/G, K) · (N, G, K, L) → (N, G, O/G, L), a chunk of images at a time through one columns buffer
    // of that many images: the columns of a whole batch are far larger than the caches (K·L per image,
    // 9 times the image for a 3×3 kernel), and a chunk's are still in them when multiplied; they are not
    // kept for the backward, which builds them again from x. On the CPU a chunk gives each thread
    // images whose columns take up to 512 KiB (at least one image), and on a GPU it is the whole batch.
    const std::int64_t image_cols =
        in_c * g.kernel_h * g.kernel_w * length * static_cast<std::int64_t>(element_size(input.dtype()));
    const std::int64_t step =
        input.device().is_cpu()
            ? std::max(1, get_num_threads()) *
                  std::max<std::int64_t>(1, (std::int64_t{512} << 10) / std::max<std::int64_t>(image_cols, 1))
            : std::max<std::int64_t>(n, 1);
    const Tensor wg = weight.detach().contiguous().view(Shape{groups, og, kk});  // (G, O/G, K)
    const Tensor x = input.detach().contiguous();
    Tensor out = detail::make_empty(Shape{n, groups, og, length}, x.dtype(), x.device(), op);
    {
        NoGradGuard no_grad;
        const Tensor cols = detail::make_empty(Shape{std::min(step, n), in_c * g.kernel_h * g.kernel_w, length},
                                               x.dtype(), x.device(), op);
        // With a bias, the products are added to it (PyTorch's slow_conv2d order), which spares a pass over
        // the output.
        const Tensor bias_rows = bias.defined() ? bias.detach().view(Shape{1, groups, og, 1}) : Tensor();
        for (std::int64_t b0 = 0; b0 < n; b0 += step) {
            const std::int64_t nb = std::min(step, n - b0);
            const Tensor cb = cols.narrow(0, 0, nb), zb = out.narrow(0, b0, nb);
            kernels::im2col(x.narrow(0, b0, nb), cb, g);
            if (bias.defined()) kernels::copy(bias_rows.expand(Shape{nb, groups, og, length}), zb);
            kernels::matmul_batch_parallel(wg.expand(Shape{nb, groups, og, kk}), cb.view(Shape{nb, groups, kk, length}),
                                           zb, bias.defined() ? 1.0 : 0.0);
        }
        out = out.view(out_shape);
    }
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    detail::record(
        out, "ConvolutionBackward0", {&input, &weight, &bias},
        [sx = weight.requires_grad() ? detail::Saved(x) : detail::Saved(), swg = detail::Saved(wg), g, n, step, groups,
         og, kk, length, ishape = input.shape(),
         wshape = weight.shape()](const Tensor& grad, const detail::NeedsGrad& need) {
            const Tensor &x = sx, &wg = swg;
            const Tensor gz = grad.contiguous().view(Shape{n, groups, og, length});  // (N, G, O/G, L)
            Grads r(3);
            // On the CPU each image's product for the weight gradient goes to a slot of its own, and the
            // slots are summed at the end (as the batched product and its sum over the batch that PyTorch's
            // numbers were closest to: examples/conv_classifier then follows PyTorch's losses to 1e-7, where
            // 8 running sums drifted to 2e-4 in 50 steps). The products of a chunk run on threads
            // of their own, and the sum is the same for any number of threads. Where the slots of a whole
            // batch would take more than 64 MiB, there are fewer, image b going to slot b % slots.
            const bool slotted = need[1] && wg.device().is_cpu();
            const std::int64_t wbytes = groups * og * kk * static_cast<std::int64_t>(element_size(wg.dtype()));
            const std::int64_t slots = std::clamp<std::int64_t>(
                (std::int64_t{64} << 20) / std::max<std::int64_t>(wbytes, 1), 1, std::max<std::int64_t>(n, 1));
            Tensor dx, dw, part, cols;
            if (need[0])
                dx = detail::make_empty(Shape{n, g.channels, g.height, g.width}, wg.dtype(), wg.device(), "conv2d");
            if (slotted) part = detail::make_empty(Shape{slots, groups, og, kk}, wg.dtype(), wg.device(), "conv2d");
            if (need[0] || need[1])
                cols =
                    detail::make_empty(Shape{std::min(step, n), groups, kk, length}, wg.dtype(), wg.device(), "conv2d");
            for (std::int64_t b0 = 0, nb = 0; cols.defined() && b0 < n; b0 += nb) {
                nb = std::min(step, n - b0);
                if (slotted) nb = std::min(nb, slots - b0 % slots);  // the chunk's slots are consecutive
                const Tensor cb = cols.narrow(0, 0, nb), gb = gz.narrow(0, b0, nb);
                if (need[0]) {
                    // dcols (nb, G, K, L) = wgᵀ · gz, folded back onto the input's pixels.
                    kernels::matmul_batch_parallel(wg.expand(Shape{nb, groups, og, kk}), gb, cb, 0, {true, false});
                    kernels::col2im(cb, dx.narrow(0, b0, nb), g);
                }
                if (!need[1]) continue;
                // dw (G, O/G, K) = Σ over the images of gz · colsᵀ, the columns built again from x. On a GPU,
                // one batched product and its sum per chunk.
                kernels::im2col(x.narrow(0, b0, nb), cb.view(Shape{nb, groups * kk, length}), g);
                if (slotted) {
                    kernels::matmul_batch_parallel(gb, cb, part.narrow(0, b0 % slots, nb), b0 < slots ? 0.0 : 1.0,
                                                   {false, true});
                    continue;
                }
                const Tensor sum = matmul(gb, cb.transpose(-1, -2)).sum({0});
                dw = b0 == 0 ? sum : dw + sum;
            }
            if (slotted) dw = part.narrow(0, 0, std::min(slots, n)).sum({0});
            if (need[1] && !dw.defined())
                dw = zeros(Shape{groups, og, kk}, TensorOptions{.dtype = wg.dtype(), .device = wg.device()});
            if (need[0]) r[0] = dx.view(ishape);
            if (need[1]) r[1] = dw.view(wshape);
            if (need[2]) r[2] = gz.view(Shape{n, groups * og, length}).sum({0, 2});
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

/// PyTorch's _ConvNd checks, as ValueError texts (Python prints its sets of valid strings in a
/// hash order that varies from run to run; xgrad lists them in the order PyTorch's source does).
void check_options(const char* name, std::int64_t in, std::int64_t out, std::int64_t groups, const Padding& padding,
                   Pair stride, const std::string& padding_mode) {
    if (groups <= 0) fail(name, "groups must be a positive integer, got " + std::to_string(groups));
    if (in < 0 || out < 0)
        fail(name, "in_channels and out_channels must be non-negative, got " + std::to_string(in) + " and " +
                       std::to_string(out));
    if (in % groups != 0) fail(name, "in_channels must be divisible by groups");
    if (out % groups != 0) fail(name, "out_channels must be divisible by groups");
    if (!padding.mode.empty() && padding.mode != "same" && padding.mode != "valid")
        fail(name, "Invalid padding string '" + padding.mode + "', should be one of {'same', 'valid'}");
    if (padding.mode == "same" && (stride.h != 1 || stride.w != 1))
        fail(name, "padding='same' is not supported for strided convolutions");
    if (padding_mode != "zeros" && padding_mode != "reflect" && padding_mode != "replicate" &&
        padding_mode != "circular")
        fail(name, "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got padding_mode='" +
                       padding_mode + "'");
}

/// F::pad's list for a padding_mode other than "zeros" (PyTorch's _reversed_padding_repeated_twice).
std::vector<std::int64_t> mode_padding(const Padding& padding, Pair kernel, Pair dilation, int spatial) {
    if (padding.mode == "same") return same_padding(kernel, dilation, spatial);
    if (padding.mode == "valid") return std::vector<std::int64_t>(static_cast<std::size_t>(2 * spatial), 0);
    std::vector<std::int64_t> pad{padding.pair.w, padding.pair.w};
    if (spatial == 2) pad.insert(pad.end(), {padding.pair.h, padding.pair.h});
    return pad;
}

/// `, padding=(1, 1)` or `, padding=same`, or nothing for zero padding.
std::string padding_repr(const Padding& padding, int spatial) {
    if (!padding.mode.empty()) return ", padding=" + padding.mode;
    if (padding.pair.h == 0 && padding.pair.w == 0) return "";
    return ", padding=" + tuple(padding.pair, spatial);
}

}  // namespace

namespace functional {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Pair stride, Padding padding,
              Pair dilation, std::int64_t groups) {
    return convolution(input, weight, bias, stride, padding, dilation, groups, 2);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, std::int64_t stride, Padding padding,
              std::int64_t dilation, std::int64_t groups) {
    if (padding.mode.empty()) {
        if (!padding.pair.single && padding.pair.h != padding.pair.w)
            fail("conv1d", "padding must be one number, got " + tuple(padding.pair, 2));
        padding = Pair(0, padding.pair.w);
    }
    return convolution(input, weight, bias, Pair(1, stride), padding, Pair(1, dilation), groups, 1);
}

}  // namespace functional

// ---- modules -------------------------------------------------------------------------------------------

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, Pair kernel_size, Pair stride, Padding padding,
               Pair dilation, std::int64_t groups, bool has_bias, std::string padding_mode)
    : in_(in_channels),
      out_(out_channels),
      groups_(groups),
      kernel_(kernel_size),
      stride_(stride),
      dilation_(dilation),
      padding_(std::move(padding)),
      padding_mode_(std::move(padding_mode)) {
    check_options("Conv2d", in_channels, out_channels, groups, padding_, stride, padding_mode_);
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
    if (padding_mode_ == "zeros") return functional::conv2d(input, weight, bias, stride_, padding_, dilation_, groups_);
    return functional::conv2d(functional::pad(input, mode_padding(padding_, kernel_, dilation_, 2), padding_mode_),
                              weight, bias, stride_, 0, dilation_, groups_);
}

std::string Conv2d::extra_repr() const {
    std::string s = std::to_string(in_) + ", " + std::to_string(out_) + ", kernel_size=" + tuple(kernel_, 2) +
                    ", stride=" + tuple(stride_, 2) + padding_repr(padding_, 2);
    if (dilation_.h != 1 || dilation_.w != 1) s += ", dilation=" + tuple(dilation_, 2);
    if (groups_ != 1) s += ", groups=" + std::to_string(groups_);
    if (!bias.defined()) s += ", bias=False";
    if (padding_mode_ != "zeros") s += ", padding_mode=" + padding_mode_;
    return s;
}

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride,
               Padding padding, std::int64_t dilation, std::int64_t groups, bool has_bias, std::string padding_mode)
    : in_(in_channels),
      out_(out_channels),
      kernel_(kernel_size),
      stride_(stride),
      dilation_(dilation),
      groups_(groups),
      padding_(std::move(padding)),
      padding_mode_(std::move(padding_mode)) {
    check_options("Conv1d", in_channels, out_channels, groups, padding_, Pair(stride), padding_mode_);
    if (padding_.mode.empty()) {
        if (!padding_.pair.single && padding_.pair.h != padding_.pair.w)
            fail("Conv1d", "padding must be one number, got " + tuple(padding_.pair, 2));
        padding_ = Padding(padding_.pair.w);
    }
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
    if (padding_mode_ == "zeros") return functional::conv1d(input, weight, bias, stride_, padding_, dilation_, groups_);
    return functional::conv1d(
        functional::pad(input, mode_padding(padding_, Pair(1, kernel_), Pair(1, dilation_), 1), padding_mode_), weight,
        bias, stride_, 0, dilation_, groups_);
}

std::string Conv1d::extra_repr() const {
    auto one = [](std::int64_t v) { return tuple(Pair(v), 1); };
    std::string s = std::to_string(in_) + ", " + std::to_string(out_) + ", kernel_size=" + one(kernel_) +
                    ", stride=" + one(stride_) + padding_repr(padding_, 1);
    if (dilation_ != 1) s += ", dilation=" + one(dilation_);
    if (groups_ != 1) s += ", groups=" + std::to_string(groups_);
    if (!bias.defined()) s += ", bias=False";
    if (padding_mode_ != "zeros") s += ", padding_mode=" + padding_mode_;
    return s;
}

}  // namespace xgrad::nn
