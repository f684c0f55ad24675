// 2-D pooling: max_pool2d, avg_pool2d, adaptive_avg_pool2d (kernels in kernels/*/conv) and their modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xgrad/nn/conv.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

namespace functional {

/// Max pooling over windows of input (N, C, H, W) or (C, H, W), as `torch.nn.functional.max_pool2d`
/// (ceil_mode false, dilation 1): `stride` defaults to the kernel size, padding never wins, NaN does.
/// The gradient goes to the element PyTorch's indices name (`MaxPool2DWithIndicesBackward0`).
Tensor max_pool2d(const Tensor& input, Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0);
/// Average pooling, as `torch.nn.functional.avg_pool2d` (ceil_mode false): padded zeros count in the
/// divisor unless `count_include_pad` is false.
Tensor avg_pool2d(const Tensor& input, Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                  bool count_include_pad = true);
/// Average pooling to a fixed output size (PyTorch's windows [⌊i·H/out⌋, ⌈(i+1)·H/out⌉)), as
/// `torch.nn.functional.adaptive_avg_pool2d`.
Tensor adaptive_avg_pool2d(const Tensor& input, Pair output_size);

}  // namespace functional

/// `torch.nn.MaxPool2d`: max over `kernel_size` windows every `stride` (default: the kernel size).
///
/// ```cpp
/// xgrad::nn::MaxPool2d pool(2);
/// std::cout << pool;   // MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
/// ```
class MaxPool2d : public Module {
public:
    /// Pools over `kernel_size` windows.
    explicit MaxPool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0);
    /// Applies the pooling to (N, C, H, W) or (C, H, W).
    Tensor forward(const Tensor& input) override;
    /// `kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False`.
    std::string extra_repr() const override;

private:
    Pair kernel_, stride_, padding_;
};

/// `torch.nn.AvgPool2d`: mean over `kernel_size` windows every `stride` (default: the kernel size).
///
/// ```cpp
/// xgrad::nn::AvgPool2d pool(3, 1, 1, /*count_include_pad=*/false);
/// std::cout << pool;   // AvgPool2d(kernel_size=3, stride=1, padding=1)
/// ```
class AvgPool2d : public Module {
public:
    /// Pools over `kernel_size` windows.
    explicit AvgPool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                       bool count_include_pad = true);
    /// Applies the pooling to (N, C, H, W) or (C, H, W).
    Tensor forward(const Tensor& input) override;
    /// `kernel_size=3, stride=1, padding=1`, as PyTorch prints it.
    std::string extra_repr() const override;

private:
    Pair kernel_, stride_, padding_;
    bool count_include_pad_;
};

/// `torch.nn.AdaptiveAvgPool2d`: average pooling to a fixed (H_out, W_out).
///
/// ```cpp
/// xgrad::nn::AdaptiveAvgPool2d gap(1);   // global average pooling: (N, C, H, W) -> (N, C, 1, 1)
/// ```
class AdaptiveAvgPool2d : public Module {
public:
    /// Pools to `output_size`.
    explicit AdaptiveAvgPool2d(Pair output_size);
    /// Applies the pooling to (N, C, H, W) or (C, H, W).
    Tensor forward(const Tensor& input) override;
    /// `output_size=3` or `output_size=(5, 7)`.
    std::string extra_repr() const override;

private:
    Pair output_size_;
};

}  // namespace xgrad::nn
