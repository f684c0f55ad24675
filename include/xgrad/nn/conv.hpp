// Convolutions: conv1d/conv2d (im2col and one matrix product per group) and the Conv1d/Conv2d modules.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// A 2-D size or step, as PyTorch's int-or-tuple arguments: `3` for both axes, `{3, 5}` per axis
/// (height, width). Remembers which form it was given in, for printing as PyTorch prints it.
struct Pair {
    /// The same value for both axes.
    Pair(std::int64_t v) : h(v), w(v), single(true) {}  // NOLINT(google-explicit-constructor): 3 ≡ (3, 3)
    /// One value per axis.
    Pair(std::int64_t height, std::int64_t width) : h(height), w(width) {}
    std::int64_t h;       ///< Along the height (the second-to-last axis).
    std::int64_t w;       ///< Along the width (the last axis).
    bool single = false;  ///< Given as one number.
};

/// A convolution's padding, as PyTorch's int, tuple or string argument: `1`, `{1, 2}` (height, width),
/// or `"same"` (the output keeps the input's size; stride 1 only; an odd total puts the extra on the
/// right / bottom) or `"valid"` (no padding).
struct Padding {
    /// The same padding on both sides of every axis (an integer, so that a literal `0` is not a string).
    template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    Padding(I v) : pair(static_cast<std::int64_t>(v)) {}  // NOLINT(google-explicit-constructor): 1 ≡ (1, 1)
    /// One padding per axis (height, width).
    Padding(std::int64_t height, std::int64_t width) : pair(height, width) {}
    /// One padding per axis, as a Pair.
    Padding(Pair p) : pair(p) {}  // NOLINT(google-explicit-constructor)
    /// `"same"` or `"valid"`.
    Padding(const char* s) : mode(s) {}  // NOLINT(google-explicit-constructor)
    /// `"same"` or `"valid"`.
    Padding(std::string s) : mode(std::move(s)) {}  // NOLINT(google-explicit-constructor)
    Pair pair = 0;                                  ///< The padding per axis, when `mode` is empty.
    std::string mode;                               ///< `"same"`, `"valid"`, or empty for `pair`.
};

namespace functional {

/// 2-D convolution (cross-correlation, as `torch.nn.functional.conv2d`) of input (N, C_in, H, W), or
/// (C_in, H, W) unbatched, with weight (C_out, C_in / groups, kH, kW) and an optional bias (C_out).
///
/// Computed as im2col followed by one matrix product per image and group, a few images at a time; one
/// recorded operation (`ConvolutionBackward0`) whose backward gives the input, weight and bias
/// gradients. It keeps the input for the backward (as PyTorch does), not its columns. On the CPU the
/// results do not depend on the number of threads: each image's products run on one thread. `padding` may
/// be `"same"` or `"valid"` as in PyTorch; "same" with an odd total padding (an even kernel) first
/// pads the input by one zero on the right / bottom, as PyTorch does.
///
/// ```cpp
/// Tensor y = F::conv2d(x, w, b, /*stride=*/2, /*padding=*/1);   // x (8, 3, 32, 32), w (16, 3, 3, 3)
/// Tensor s = F::conv2d(x, w, b, 1, "same");                     // (8, 16, 32, 32)
/// ```
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Pair stride = 1,
              Padding padding = 0, Pair dilation = 1, std::int64_t groups = 1);
/// 1-D convolution of input (N, C_in, L), or (C_in, L), with weight (C_out, C_in / groups, k), as
/// `torch.nn.functional.conv1d` (the 2-D code on a height of 1); `padding` is a number, "same" or "valid".
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), std::int64_t stride = 1,
              Padding padding = 0, std::int64_t dilation = 1, std::int64_t groups = 1);

}  // namespace functional

/// 2-D convolution layer, initialised exactly as `torch.nn.Conv2d`: the weight with
/// `kaiming_uniform_(a = √5)`, then the bias uniformly in ±1/√fan_in (fan_in = in/groups·kH·kW),
/// from the default generator.
///
/// `padding` is a number, a pair, "same" or "valid"; `padding_mode` is "zeros", "reflect", "replicate"
/// or "circular": any but "zeros" pads the input with `F::pad` in that mode and then convolves without
/// padding, as PyTorch does.
///
/// ```cpp
/// xgrad::nn::Conv2d conv(3, 16, 3, /*stride=*/1, /*padding=*/1);
/// std::cout << conv;   // Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
/// xgrad::nn::Conv2d ring(3, 16, 4, 1, "same", 1, 1, true, "circular");   // even kernel: 1 left, 2 right
/// ```
class Conv2d : public Module {
public:
    /// A layer from `in_channels` to `out_channels` planes with PyTorch's defaults.
    Conv2d(std::int64_t in_channels, std::int64_t out_channels, Pair kernel_size, Pair stride = 1, Padding padding = 0,
           Pair dilation = 1, std::int64_t groups = 1, bool bias = true, std::string padding_mode = "zeros");
    /// Applies the convolution to input (N, C_in, H, W) or (C_in, H, W).
    Tensor forward(const Tensor& input) override;
    /// `3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)`, non-default options only.
    std::string extra_repr() const override;
    /// Redraws the weight (kaiming_uniform_, a = √5) and then the bias (±1/√fan_in).
    void reset_parameters() override;

    Tensor weight;  ///< (out_channels, in_channels / groups, kH, kW).
    Tensor bias;    ///< (out_channels), or undefined without bias.

private:
    std::int64_t in_, out_, groups_;
    Pair kernel_, stride_, dilation_;
    Padding padding_;
    std::string padding_mode_;
};

/// 1-D convolution layer, initialised exactly as `torch.nn.Conv1d` (as Conv2d, with fan_in =
/// in/groups·k).
///
/// `padding` and `padding_mode` as Conv2d's.
///
/// ```cpp
/// xgrad::nn::Conv1d conv(4, 6, 3, /*stride=*/1, /*padding=*/1, /*dilation=*/1, /*groups=*/2);
/// xgrad::nn::Conv1d edge(4, 6, 3, 1, 1, 1, 1, true, "replicate");
/// ```
class Conv1d : public Module {
public:
    /// A layer from `in_channels` to `out_channels` channels with PyTorch's defaults.
    Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride = 1,
           Padding padding = 0, std::int64_t dilation = 1, std::int64_t groups = 1, bool bias = true,
           std::string padding_mode = "zeros");
    /// Applies the convolution to input (N, C_in, L) or (C_in, L).
    Tensor forward(const Tensor& input) override;
    /// `4, 6, kernel_size=(3,), stride=(1,), padding=(1,), groups=2`, non-default options only.
    std::string extra_repr() const override;
    /// Redraws the weight (kaiming_uniform_, a = √5) and then the bias (±1/√fan_in).
    void reset_parameters() override;

    Tensor weight;  ///< (out_channels, in_channels / groups, kernel_size).
    Tensor bias;    ///< (out_channels), or undefined without bias.

private:
    std::int64_t in_, out_, kernel_, stride_, dilation_, groups_;
    Padding padding_;
    std::string padding_mode_;
};

}  // namespace xgrad::nn
