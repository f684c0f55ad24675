// Stateless neural-network functions (PyTorch's torch.nn.functional): layers, normalisation, losses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xgrad/shape.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {
class Generator;
}

namespace xgrad::nn::functional {

/// `input · weightᵀ + bias` for input (..., in_features), weight (out, in), optional bias (out).
///
/// One recorded operation (`AddmmBackward0`, as PyTorch names it for 2-D input).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());
/// `max(x, 0)`.
Tensor relu(const Tensor& input);
/// GELU; `approximate` is "none" or "tanh".
Tensor gelu(const Tensor& input, const std::string& approximate = "none");
/// Zeroes elements with probability `p` and scales the rest by `1/(1-p)` when `training`; the mask
/// is drawn exactly as PyTorch's CPU dropout draws it (`bernoulli_(1 - p)`).
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, Generator* gen = nullptr);

/// Layer normalisation over the trailing `normalized_shape` axes, as `torch.nn.functional.layer_norm`.
///
/// A single fused operation (`NativeLayerNormBackward0`): the forward saves each row's mean and
/// 1/std; the backward computes the input, weight and bias gradients in one pass over the rows.
/// `weight` and `bias` (shaped `normalized_shape`) may be undefined.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
/// RMS normalisation over the trailing `normalized_shape` axes, as `torch.nn.functional.rms_norm`:
/// `x / sqrt(mean(x²) + eps) * weight`; `eps` defaults to the dtype's machine epsilon. Fused like
/// layer_norm.
Tensor rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);

/// How a loss reduces its per-element values.
enum class Reduction { kNone, kMean, kSum };

}  // namespace xgrad::nn::functional
