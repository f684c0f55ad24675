// Convolutions: conv1d/conv2d (im2col and one matrix product per group) and the Conv1d/Conv2d modules.
#pragma once

#include <cstdint>
#include <string>

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

namespace functional {

/// 2-D convolution (cross-correlation, as `torch.nn.functional.conv2d`) of input (N, C_in, H, W), or
/// (C_in, H, W) unbatched, with weight (C_out, C_in / groups, kH, kW) and an optional bias (C_out).
///
/// Computed as im2col followed by one batched matrix product per group; one recorded operation
/// (`ConvolutionBackward0`) whose backward gives the input, weight and bias gradients.
///
/// ```cpp
/// Tensor y = F::conv2d(x, w, b, /*stride=*/2, /*padding=*/1);   // x (8, 3, 32, 32), w (16, 3, 3, 3)
/// ```
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Pair stride = 1,
              Pair padding = 0, Pair dilation = 1, std::int64_t groups = 1);
/// 1-D convolution of input (N, C_in, L), or (C_in, L), with weight (C_out, C_in / groups, k), as
/// `torch.nn.functional.conv1d` (the 2-D code on a height of 1).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), std::int64_t stride = 1,
              std::int64_t padding = 0, std::int64_t dilation = 1, std::int64_t groups = 1);

}  // namespace functional

/// 2-D convolution layer, initialised exactly as `torch.nn.Conv2d`: the weight with
/// `kaiming_uniform_(a = √5)`, then the bias uniformly in ±1/√fan_in (fan_in = in/groups·kH·kW),
/// from the default generator.
///
/// ```cpp
/// xgrad::nn::Conv2d conv(3, 16, 3, /*stride=*/1, /*padding=*/1);
/// std::cout << conv;   // Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
/// ```
class Conv2d : public Module {
public:
    /// A layer from `in_channels` to `out_channels` planes with PyTorch's defaults.
    Conv2d(std::int64_t in_channels, std::int64_t out_channels, Pair kernel_size, Pair stride = 1, Pair padding = 0,
           Pair dilation = 1, std::int64_t groups = 1, bool bias = true);
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
    Pair kernel_, stride_, padding_, dilation_;
};

/// 1-D convolution layer, initialised exactly as `torch.nn.Conv1d` (as Conv2d, with fan_in =
/// in/groups·k).
///
/// ```cpp
/// xgrad::nn::Conv1d conv(4, 6, 3, /*stride=*/1, /*padding=*/1, /*dilation=*/1, /*groups=*/2);
/// ```
class Conv1d : public Module {
public:
    /// A layer from `in_channels` to `out_channels` channels with PyTorch's defaults.
    Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size, std::int64_t stride = 1,
           std::int64_t padding = 0, std::int64_t dilation = 1, std::int64_t groups = 1, bool bias = true);
    /// Applies the convolution to input (N, C_in, L) or (C_in, L).
    Tensor forward(const Tensor& input) override;
    /// `4, 6, kernel_size=(3,), stride=(1,), padding=(1,), groups=2`, non-default options only.
    std::string extra_repr() const override;
    /// Redraws the weight (kaiming_uniform_, a = √5) and then the bias (±1/√fan_in).
    void reset_parameters() override;

    Tensor weight;  ///< (out_channels, in_channels / groups, kernel_size).
    Tensor bias;    ///< (out_channels), or undefined without bias.

private:
    std::int64_t in_, out_, kernel_, stride_, padding_, dilation_, groups_;
};

}  // namespace xgrad::nn
