// Multi-head attention (torch.nn.MultiheadAttention) on top of F::scaled_dot_product_attention.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "xgrad/nn/linear.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// The output projection of MultiheadAttention: a Linear under PyTorch's class name, so that the
/// module prints as PyTorch's.
class NonDynamicallyQuantizableLinear : public Linear {
public:
    using Linear::Linear;
};

/// Options of MultiheadAttention, in PyTorch's order.
struct MultiheadAttentionOptions {
    double dropout = 0.0;        ///< Dropout on the attention weights in training mode.
    bool bias = true;            ///< Biases on the input and output projections.
    bool add_bias_kv = false;    ///< Learnt `bias_k` and `bias_v` appended to the keys and values.
    bool add_zero_attn = false;  ///< A zero key and value appended after the projection (and the biases).
    std::int64_t kdim = 0;       ///< The key's feature size; 0 means embed_dim.
    std::int64_t vdim = 0;       ///< The value's feature size; 0 means embed_dim.
    bool batch_first = false;    ///< Inputs and outputs (N, L, E) instead of (L, N, E).
};

/// Multi-head attention as `torch.nn.MultiheadAttention(embed_dim, num_heads)`, with PyTorch 1.13's
/// parameters, initialisation and forward.
///
/// Parameters: `in_proj_weight` (3E, E), drawn with xavier_uniform_ (or, when `kdim` or `vdim`
/// differs from E, `q_proj_weight` (E, E), `k_proj_weight` (E, kdim) and `v_proj_weight` (E, vdim),
/// drawn in that order); `in_proj_bias` (3E), zeros; with `add_bias_kv`, `bias_k` and `bias_v` (1, 1, E)
/// drawn with xavier_normal_; `out_proj` (a Linear E → E, drawn as Linear, then its bias zeroed). The
/// draws come in PyTorch's order (out_proj first), so after the same `manual_seed` the values are
/// PyTorch's.
///
/// ```cpp
/// xgrad::nn::MultiheadAttention attn(16, 4, {.batch_first = true});
/// auto [y, w] = attn.forward(x, x, x);          // x (N, L, 16): y (N, L, 16), w (N, L, L)
/// Tensor masked = attn.forward(x, x, x, causal_mask, false).first;
/// xgrad::nn::MultiheadAttention cross(16, 4, {.add_bias_kv = true, .kdim = 8, .vdim = 12});
/// auto [z, a] = cross.forward(q, k, v);         // q (L, N, 16), k (S, N, 8), v (S, N, 12): a (N, L, S + 1)
/// ```
class MultiheadAttention : public Module {
public:
    /// `num_heads` heads of `embed_dim / num_heads` each; `embed_dim` must be divisible by `num_heads`.
    MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, MultiheadAttentionOptions options = {});

    /// Attention of `query` (L, N, E) over `key` (S, N, kdim) and `value` (S, N, vdim) ((N, L, E) and
    /// (N, S, ·) with batch_first; (L, E) and (S, ·) unbatched). Returns the output, shaped as the
    /// query, and with `need_weights` the attention weights (N, L, S') ((L, S') unbatched), averaged
    /// over the heads when `average_attn_weights`, else per head (N, num_heads, L, S'); undefined
    /// otherwise. S' is S plus one for `add_bias_kv` and one for `add_zero_attn`. `attn_mask`, (L, S)
    /// or (N·num_heads, L, S), is an additive float mask or a kBool one that hides a key where True
    /// (PyTorch 1.13's MultiheadAttention); `key_padding_mask` (N, S) ((S) unbatched) hides key j of
    /// batch element b where True, or is added when floating. Both get zero columns for the added
    /// keys; a query whose keys are all hidden gives NaN, as PyTorch. (A float key_padding_mask
    /// with an attn_mask is added to it; PyTorch 1.13 reads it as bool there.)
    ///
    /// ```cpp
    /// auto pad = xgrad::tensor({{0.0, 0.0, 1.0}}, xgrad::kBool);   // batch element 0 ignores key 2
    /// auto [y, w] = attn.forward(x, x, x, Tensor(), true, true, pad);
    /// ```
    std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                      const Tensor& attn_mask = Tensor(), bool need_weights = true,
                                      bool average_attn_weights = true, const Tensor& key_padding_mask = Tensor());
    /// Self-attention `forward(x, x, x, Tensor(), false).first`, so the module can sit in a Sequential.
    Tensor forward(const Tensor& x) override;
    /// Redraws `in_proj_weight` (xavier_uniform_) and zeroes the biases, as PyTorch's `_reset_parameters`
    /// (the output projection's weight keeps its draw).
    void reset_parameters() override;

    Tensor in_proj_weight;  ///< (3·embed_dim, embed_dim): the q, k and v projections stacked; undefined with kdim/vdim.
    Tensor q_proj_weight;   ///< (embed_dim, embed_dim) when kdim or vdim differs from embed_dim, else undefined.
    Tensor k_proj_weight;   ///< (embed_dim, kdim) when kdim or vdim differs from embed_dim, else undefined.
    Tensor v_proj_weight;   ///< (embed_dim, vdim) when kdim or vdim differs from embed_dim, else undefined.
    Tensor in_proj_bias;    ///< (3·embed_dim), or undefined without bias.
    Tensor bias_k;          ///< (1, 1, embed_dim) with add_bias_kv, else undefined.
    Tensor bias_v;          ///< (1, 1, embed_dim) with add_bias_kv, else undefined.
    NonDynamicallyQuantizableLinear out_proj;  ///< embed_dim → embed_dim.

    /// The embedding size E.
    std::int64_t embed_dim() const { return embed_dim_; }
    /// The number of heads.
    std::int64_t num_heads() const { return num_heads_; }

    /// The key's feature size (embed_dim unless given).
    std::int64_t kdim() const { return kdim_; }
    /// The value's feature size (embed_dim unless given).
    std::int64_t vdim() const { return vdim_; }

private:
    std::int64_t embed_dim_, num_heads_, kdim_, vdim_;
    MultiheadAttentionOptions options_;
};

}  // namespace xgrad::nn
