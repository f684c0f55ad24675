// Stateless neural-network functions (PyTorch's torch.nn.functional): layers, normalisation, losses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// ---- indexing (src/indexing.cpp) ---------------------------------------------------------------------
/// int64 one-hot rows of an int64 tensor of class indices, shape (..., num_classes), as
/// `torch.nn.functional.one_hot`; `num_classes = -1` takes the largest value + 1.
Tensor one_hot(const Tensor& input, std::int64_t num_classes = -1);
/// The rows of `weight` (num_embeddings, embedding_dim) that the int64 `input` names, shape
/// (*input.shape, embedding_dim), as `torch.nn.functional.embedding`; the row `padding_idx` (negative
/// counts from the end) gets no gradient.
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<std::int64_t> padding_idx = std::nullopt);

/// Pads the last dims of `input` as `torch.nn.functional.pad`: `pad` holds (left, right) pairs,
/// the last dim's first. `mode` is "constant" (with `value`; negative pads crop), "reflect" or
/// "replicate" (these two for the last 1, 2 or 3 dims of a batched input, as PyTorch's).
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pad, const std::string& mode = "constant",
           double value = 0.0);

}  // namespace xgrad::nn::functional
