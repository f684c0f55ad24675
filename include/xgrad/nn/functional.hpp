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
// ---- more activations (torch.nn.functional's names and defaults) ----------------------------------
/// `x * sigmoid(x)` (SiLU, also called swish).
Tensor silu(const Tensor& input);
/// `x` where positive, else `negative_slope * x`.
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
/// `x` where positive, else `alpha * (exp(x) - 1)`.
Tensor elu(const Tensor& input, double alpha = 1.0);
/// `scale * elu(x, alpha)` with SELU's fixed alpha ≈ 1.6733 and scale ≈ 1.0507.
Tensor selu(const Tensor& input);
/// `x` where positive, else `alpha * (exp(x / alpha) - 1)`; throws for alpha 0.
Tensor celu(const Tensor& input, double alpha = 1.0);
/// `log(1 + exp(beta x)) / beta`, and `x` itself where `beta x > threshold`.
Tensor softplus(const Tensor& input, double beta = 1.0, double threshold = 20.0);
/// `x * tanh(softplus(x))`.
Tensor mish(const Tensor& input);
/// `min(max(x, 0), 6)`; recorded as PyTorch records it, as hardtanh (HardtanhBackward0).
Tensor relu6(const Tensor& input);
/// `x * relu6(x + 3) / 6`.
Tensor hardswish(const Tensor& input);
/// `relu6(x + 3) / 6`.
Tensor hardsigmoid(const Tensor& input);
/// `clamp(x, min_val, max_val)`, with a zero gradient at and beyond the bounds. An integer tensor keeps
/// its dtype, the limits truncated to integers (PyTorch's); bool is refused, as is uint8 with a negative
/// limit.
Tensor hardtanh(const Tensor& input, double min_val = -1.0, double max_val = 1.0);
/// `log(sigmoid(x))`, computed stably.
Tensor logsigmoid(const Tensor& input);
/// `x` where positive, else `weight * x`, as `torch.nn.functional.prelu`: `weight` holds one slope,
/// or one per channel (dim 1 of an input of two or more dims); PreluBackward0.
Tensor prelu(const Tensor& input, const Tensor& weight);
/// The gated linear unit `a * sigmoid(b)`, with a and b the two halves of `input` along `dim`, as
/// `torch.nn.functional.glu` (GluBackward0).
Tensor glu(const Tensor& input, std::int64_t dim = -1);
/// `x / (1 + |x|)`, as PyTorch's composite (DivBackward0).
Tensor softsign(const Tensor& input);
/// `x * sigmoid(1.702 x)`, GELU's sigmoid approximation (CLIP's QuickGELU; not in PyTorch itself).
Tensor quick_gelu(const Tensor& input);

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
/// "replicate" (these two for the last 1, 2 or 3 dims of a batched or unbatched input, as PyTorch's),
/// or "circular" (wrapping around, each pad at most the dim's size, negative pads crop; as PyTorch 1.13
/// only for a batched input (N, C, *) with one pair per dim after C).
///
/// ```cpp
/// Tensor y = F::pad(x, {1, 2}, "circular");   // x (N, C, L) -> (N, C, L + 3): x[..., -1], x, x[..., :2]
/// ```
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pad, const std::string& mode = "constant",
           double value = 0.0);

// ---- vector normalisation and attention --------------------------------------------------------------

/// `input / max(‖input‖_p, eps)` along `dim`, as `torch.nn.functional.normalize`.
///
/// `p` is any number: ‖x‖_∞ = max |x|, ‖x‖_-∞ = min |x|, ‖x‖_0 = the count of non-zeros (no
/// gradient), and Σ|x|^p to the 1/p otherwise, with PyTorch's norm gradients (for ±∞ shared evenly by
/// the tied elements; for p < 1 zero where x is 0). For p ≥ 1 the norm's gradient is 0 where the norm is
/// 0, so a zero row gets a zero gradient, not NaN.
/// ```cpp
/// Tensor unit = F::normalize(embeddings);              // rows of unit L2 norm
/// Tensor cos = F::normalize(a).matmul(F::normalize(b).t());
/// ```
Tensor normalize(const Tensor& input, double p = 2.0, std::int64_t dim = 1, double eps = 1e-12);

/// `softmax(q kᵀ / √E + attn_mask) v`: attention of queries (..., L, E) over keys (..., S, E) and
/// values (..., S, Ev), giving (..., L, Ev), computed as PyTorch 1.13's MultiheadAttention does
/// (q divided by √E, then the product, then the mask added).
///
/// `attn_mask` broadcasts to (..., L, S): an additive float mask (`-inf` hides a key) or a kBool
/// one in which True lets the query attend to the key (PyTorch 2.x: False becomes `-inf`).
/// `is_causal` hides every key after the query's position (an upper triangle of `-inf`, built
/// internally); it cannot be combined with `attn_mask`. With `dropout_p` > 0 the attention weights
/// go through dropout (drawn from `gen`, or the default generator). A row whose keys are all hidden
/// gives NaN, as PyTorch.
/// ```cpp
/// Tensor y = F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, /*is_causal=*/true);
/// ```
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0, bool is_causal = false,
                                    Generator* gen = nullptr);

}  // namespace xgrad::nn::functional
