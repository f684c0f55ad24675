// Pooling: max_pool1d/2d (with indices), avg_pool1d/2d, adaptive_avg_pool2d (kernels in kernels/*/conv) and their
// modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "xgrad/nn/conv.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

namespace functional {

/// Max pooling over windows of input (N, C, H, W) or (C, H, W), as `torch.nn.functional.max_pool2d`:
/// `stride` defaults to the kernel size, the window's taps are `dilation` apart, `ceil_mode` rounds the
/// output size up (a last window that starts inside the input or its left padding), padding never
/// wins, NaN does. The gradient goes to the element PyTorch's indices name
/// (`MaxPool2DWithIndicesBackward0`).
Tensor max_pool2d(const Tensor& input, Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                  Pair dilation = 1, bool ceil_mode = false);
/// max_pool2d and the int64 indices of the maxima, each flattened over its plane (h·W + w), as
/// `torch.nn.functional.max_pool2d(..., return_indices=True)`.
///
/// ```cpp
/// auto [y, idx] = F::max_pool2d_with_indices(x, 2);   // x (N, C, 4, 4): y and idx (N, C, 2, 2)
/// ```
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, Pair kernel_size,
                                                  std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                                                  Pair dilation = 1, bool ceil_mode = false);
/// Average pooling, as `torch.nn.functional.avg_pool2d`: padded zeros count in the divisor unless
/// `count_include_pad` is false, `ceil_mode` rounds the output size up as max_pool2d's, and
/// `divisor_override` (when given, non-zero) replaces the divisor.
/// The flags come in PyTorch's order: ceil_mode, count_include_pad, divisor_override.
Tensor avg_pool2d(const Tensor& input, Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<std::int64_t> divisor_override = std::nullopt);
/// 1-D max pooling of input (N, C, L) or (C, L), as `torch.nn.functional.max_pool1d` (the 2-D kernel
/// on a height of 1).
Tensor max_pool1d(const Tensor& input, std::int64_t kernel_size, std::optional<std::int64_t> stride = std::nullopt,
                  std::int64_t padding = 0, std::int64_t dilation = 1, bool ceil_mode = false);
/// max_pool1d and the int64 indices of the maxima along L, as
/// `torch.nn.functional.max_pool1d(..., return_indices=True)`.
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, std::int64_t kernel_size,
                                                  std::optional<std::int64_t> stride = std::nullopt,
                                                  std::int64_t padding = 0, std::int64_t dilation = 1,
                                                  bool ceil_mode = false);
/// 1-D average pooling of input (N, C, L) or (C, L), as `torch.nn.functional.avg_pool1d` (flags in
/// PyTorch's order: ceil_mode, then count_include_pad).
Tensor avg_pool1d(const Tensor& input, std::int64_t kernel_size, std::optional<std::int64_t> stride = std::nullopt,
                  std::int64_t padding = 0, bool ceil_mode = false, bool count_include_pad = true);
/// Average pooling to a fixed output size (PyTorch's windows [⌊i·H/out⌋, ⌈(i+1)·H/out⌉)), as
/// `torch.nn.functional.adaptive_avg_pool2d`.
Tensor adaptive_avg_pool2d(const Tensor& input, Pair output_size);

}  // namespace functional

/// `torch.nn.MaxPool2d`: max over `kernel_size` windows every `stride` (default: the kernel size), with
/// PyTorch's arguments in PyTorch's order. With `return_indices`, call `forward_with_indices` for
/// the indices too (`forward` gives the values either way).
///
/// ```cpp
/// xgrad::nn::MaxPool2d pool(2);
/// std::cout << pool;   // MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
/// xgrad::nn::MaxPool2d pool2(3, 2, 1, /*dilation=*/2, /*return_indices=*/true, /*ceil_mode=*/true);
/// auto [y, idx] = pool2.forward_with_indices(x);
/// ```
class MaxPool2d : public Module {
public:
    /// Pools over `kernel_size` windows.
    explicit MaxPool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0, Pair dilation = 1,
                       bool return_indices = false, bool ceil_mode = false);
    /// Applies the pooling to (N, C, H, W) or (C, H, W).
    Tensor forward(const Tensor& input) override;
    /// The pooled values and the int64 indices of the maxima, as F::max_pool2d_with_indices.
    std::pair<Tensor, Tensor> forward_with_indices(const Tensor& input);
    /// `kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False`.
    std::string extra_repr() const override;
    /// Whether the layer was made with `return_indices` (as PyTorch's attribute).
    bool return_indices() const { return return_indices_; }

private:
    Pair kernel_, stride_, padding_, dilation_;
    bool return_indices_, ceil_mode_;
};

/// `torch.nn.AvgPool2d`: mean over `kernel_size` windows every `stride` (default: the kernel size).
///
/// The flags after `padding` are in PyTorch's order: ceil_mode, count_include_pad, divisor_override.
///
/// ```cpp
/// xgrad::nn::AvgPool2d pool(3, 1, 1, /*ceil_mode=*/false, /*count_include_pad=*/false);
/// std::cout << pool;   // AvgPool2d(kernel_size=3, stride=1, padding=1)
/// xgrad::nn::AvgPool2d sum_pool(2, 2, 0, /*ceil_mode=*/true, /*count_include_pad=*/true, /*divisor_override=*/1);
/// ```
class AvgPool2d : public Module {
public:
    /// Pools over `kernel_size` windows.
    explicit AvgPool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                       bool ceil_mode = false, bool count_include_pad = true,
                       std::optional<std::int64_t> divisor_override = std::nullopt);
    /// Applies the pooling to (N, C, H, W) or (C, H, W).
    Tensor forward(const Tensor& input) override;
    /// `kernel_size=3, stride=1, padding=1`, as PyTorch prints it.
    std::string extra_repr() const override;

private:
    Pair kernel_, stride_, padding_;
    bool count_include_pad_, ceil_mode_;
    std::optional<std::int64_t> divisor_override_;
};

/// `torch.nn.MaxPool1d`: max over `kernel_size` windows of (N, C, L) or (C, L), arguments as MaxPool2d's.
///
/// ```cpp
/// xgrad::nn::MaxPool1d pool(3, 2, 1);
/// std::cout << pool;   // MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)
/// ```
class MaxPool1d : public Module {
public:
    /// Pools over `kernel_size` windows.
    explicit MaxPool1d(std::int64_t kernel_size, std::optional<std::int64_t> stride = std::nullopt,
                       std::int64_t padding = 0, std::int64_t dilation = 1, bool return_indices = false,
                       bool ceil_mode = false);
    /// Applies the pooling to (N, C, L) or (C, L).
    Tensor forward(const Tensor& input) override;
    /// The pooled values and the int64 indices of the maxima, as F::max_pool1d_with_indices.
    std::pair<Tensor, Tensor> forward_with_indices(const Tensor& input);
    /// `kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False`.
    std::string extra_repr() const override;
    /// Whether the layer was made with `return_indices` (as PyTorch's attribute).
    bool return_indices() const { return return_indices_; }

private:
    std::int64_t kernel_, stride_, padding_, dilation_;
    bool return_indices_, ceil_mode_;
};

/// `torch.nn.AvgPool1d`: mean over `kernel_size` windows of (N, C, L) or (C, L), flags as AvgPool2d's.
///
/// ```cpp
/// xgrad::nn::AvgPool1d pool(3, 2, 1);
/// std::cout << pool;   // AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))
/// ```
class AvgPool1d : public Module {
public:
    /// Pools over `kernel_size` windows.
    explicit AvgPool1d(std::int64_t kernel_size, std::optional<std::int64_t> stride = std::nullopt,
                       std::int64_t padding = 0, bool ceil_mode = false, bool count_include_pad = true);
    /// Applies the pooling to (N, C, L) or (C, L).
    Tensor forward(const Tensor& input) override;
    /// `kernel_size=(3,), stride=(2,), padding=(1,)`, as PyTorch prints it.
    std::string extra_repr() const override;

private:
    std::int64_t kernel_, stride_, padding_;
    bool count_include_pad_, ceil_mode_;
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
