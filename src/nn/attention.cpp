// Scaled dot-product attention and MultiheadAttention, composed of matmul, softmax and dropout.
#include "xgrad/nn/attention.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "detail/format.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/init.hpp"
#include "xgrad/nn/loss.hpp"
#include "xgrad/ops.hpp"

namespace xgrad::nn {

using detail::fail;

namespace {

std::string shape_of(const Tensor& t) {
    return to_string(t.shape());
}

/// softmax(q kᵀ / √E + mask) for q (..., L, E), k (..., S, E): PyTorch 1.13's order (q scaled
/// first, then the product, then the mask added as baddbmm does), then dropout.
Tensor attention_weights(const Tensor& q, const Tensor& k, const Tensor& mask, double dropout_p, Generator* gen) {
    const double e = static_cast<double>(q.size(-1));
    Tensor scores = (q / std::sqrt(e)).matmul(k.transpose(-2, -1));  // (..., L, S)
    if (mask.defined()) scores = mask + scores;
    Tensor w = functional::softmax(scores, -1);
    return dropout_p > 0.0 ? functional::dropout(w, dropout_p, true, gen) : w;
}

/// The (L, S) causal mask: 0 where key j <= query i, -inf above the diagonal.
Tensor causal_mask(std::int64_t l, std::int64_t s, DType dtype, Device device) {
    std::vector<double> m(static_cast<std::size_t>(l * s), 0.0);
    for (std::int64_t i = 0; i < l; ++i)
        for (std::int64_t j = i + 1; j < s; ++j)
            m[static_cast<std::size_t>(i * s + j)] = -std::numeric_limits<double>::infinity();
    return from_vector(m, Shape{l, s}, FactoryOptions(dtype).device(device));
}

void check_float_mask(const Tensor& mask, const Tensor& query, const char* op) {
    if (!mask.is_floating_point())
        fail(op, "attn_mask must be an additive floating-point mask, got " + to_string(mask.dtype()));
    if (mask.dtype() != query.dtype())
        fail(op, "attn_mask of dtype " + to_string(mask.dtype()) + " must have the query's dtype " +
                     to_string(query.dtype()));
    detail::check_same_device(query, mask, op);
}

/// A bool mask as an additive one of `query`'s dtype: -inf where `hide_where_true` says a key is
/// hidden (True for MultiheadAttention's masks, False for scaled_dot_product_attention's), else 0.
Tensor additive_mask(const Tensor& mask, const Tensor& query, bool hide_where_true) {
    const FactoryOptions o = FactoryOptions(query.dtype()).device(mask.device());
    const Tensor zero = zeros({}, o), hidden = full({}, -std::numeric_limits<double>::infinity(), o);
    return hide_where_true ? where(mask, hidden, zero) : where(mask, zero, hidden);
}

}  // namespace

}  // namespace xgrad::nn

namespace xgrad::nn::functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal, Generator* gen) {
    const char* op = "scaled_dot_product_attention";
    detail::check_defined(query, op);
    detail::check_defined(key, op);
    detail::check_defined(value, op);
    if (query.dim() < 2 || key.dim() < 2 || value.dim() < 2)
        fail(op, "query, key and value must have at least 2 dimensions (..., L, E), got shapes " + shape_of(query) +
                     ", " + shape_of(key) + " and " + shape_of(value));
    if (!query.is_floating_point()) fail(op, "needs floating-point tensors, got " + to_string(query.dtype()));
    if (query.size(-1) != key.size(-1))
        fail(op, "query of shape " + shape_of(query) + " and key of shape " + shape_of(key) +
                     " must have the same embedding size (last dimension)");
    if (key.size(-2) != value.size(-2))
        fail(op, "key of shape " + shape_of(key) + " and value of shape " + shape_of(value) +
                     " must have the same sequence length (dimension -2)");
    if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
        fail(op, "dropout_p must be between 0 and 1, got " + python_float_repr(dropout_p));
    if (is_causal && attn_mask.defined()) fail(op, "Explicit attn_mask should not be set when is_causal=True");
    const std::int64_t l = query.size(-2), s = key.size(-2);
    Tensor mask = attn_mask;
    if (mask.defined()) {
        if (mask.dtype() == kBool) mask = additive_mask(mask, query, false);  // True takes part (PyTorch 2.x)
        check_float_mask(mask, query, op);
        // The mask must broadcast to the scores (..., L, S).
        auto with_ls = [l, s](const Shape& shape) {
            std::vector<std::int64_t> dims(shape.begin(), shape.end());
            dims[dims.size() - 2] = l, dims.back() = s;
            return Shape(dims);
        };
        Shape want = detail::broadcast_shapes(with_ls(query.shape()), with_ls(key.shape()), op);
        if (detail::broadcast_shapes(mask.shape(), want, op) != want)  // throws when they do not broadcast
            fail(op, "attn_mask of shape " + shape_of(mask) + " does not broadcast to the attention scores' shape " +
                         to_string(want));
    }
    if (is_causal) mask = causal_mask(l, s, query.dtype(), query.device());
    return attention_weights(query, key, mask, dropout_p, gen).matmul(value);  // (..., L, Ev)
}

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       MultiheadAttentionOptions options)
    // PyTorch builds out_proj (drawing its weight and bias) before _reset_parameters draws
    // in_proj_weight: the member initialiser keeps that order.
    : out_proj(embed_dim, embed_dim, options.bias),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      kdim_(options.kdim != 0 ? options.kdim : embed_dim),
      vdim_(options.vdim != 0 ? options.vdim : embed_dim),
      options_(options) {
    const char* op = "MultiheadAttention";
    if (embed_dim <= 0 || num_heads <= 0)
        fail(op, "embed_dim and num_heads must be positive, got " + std::to_string(embed_dim) + " and " +
                     std::to_string(num_heads));
    if (kdim_ < 0 || vdim_ < 0)
        fail(op, "kdim and vdim must be positive, got " + std::to_string(kdim_) + " and " + std::to_string(vdim_));
    if (embed_dim % num_heads != 0)
        fail(op, "embed_dim must be divisible by num_heads (embed_dim=" + std::to_string(embed_dim) +
                     ", num_heads=" + std::to_string(num_heads) + ")");
    if (!(options.dropout >= 0.0 && options.dropout <= 1.0))
        fail(op, "dropout probability has to be between 0 and 1, but got " + python_float_repr(options.dropout));
    // Parameters in PyTorch's registration order (named_parameters lists them so).
    if (kdim_ == embed_dim && vdim_ == embed_dim) {
        in_proj_weight = empty({3 * embed_dim, embed_dim});
        register_parameter("in_proj_weight", in_proj_weight);
    } else {
        q_proj_weight = empty({embed_dim, embed_dim});
        k_proj_weight = empty({embed_dim, kdim_});
        v_proj_weight = empty({embed_dim, vdim_});
        register_parameter("q_proj_weight", q_proj_weight);
        register_parameter("k_proj_weight", k_proj_weight);
        register_parameter("v_proj_weight", v_proj_weight);
    }
    if (options.bias) {
        in_proj_bias = empty({3 * embed_dim});
        register_parameter("in_proj_bias", in_proj_bias);
    }
    register_module("out_proj", out_proj);
    if (options.add_bias_kv) {
        bias_k = empty({1, 1, embed_dim});
        bias_v = empty({1, 1, embed_dim});
        register_parameter("bias_k", bias_k);
        register_parameter("bias_v", bias_v);
    }
    initialize_parameters();
}

void MultiheadAttention::reset_parameters() {
    NoGradGuard no_grad;
    if (in_proj_weight.defined()) {
        init::xavier_uniform_(in_proj_weight);
    } else {
        init::xavier_uniform_(q_proj_weight);
        init::xavier_uniform_(k_proj_weight);
        init::xavier_uniform_(v_proj_weight);
    }
    if (in_proj_bias.defined()) {
        init::zeros_(in_proj_bias);
        init::zeros_(out_proj.bias);
    }
    if (bias_k.defined()) {
        init::xavier_normal_(bias_k);
        init::xavier_normal_(bias_v);
    }
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const Tensor& attn_mask, bool need_weights,
                                                      bool average_attn_weights, const Tensor& key_padding_mask) {
    const char* op = "MultiheadAttention";
    detail::check_defined(query, op);
    detail::check_defined(key, op);
    detail::check_defined(value, op);
    if (query.dim() != 2 && query.dim() != 3)
        fail(op, "query should be unbatched 2D or batched 3D tensor but received " + std::to_string(query.dim()) +
                     "-D query tensor");
    const bool batched = query.dim() == 3;
    if (key.dim() != query.dim() || value.dim() != query.dim())
        fail(op, std::string(batched ? "For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                                     : "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D") +
                     " but found " + std::to_string(key.dim()) + "-D and " + std::to_string(value.dim()) +
                     "-D tensors respectively");
    const bool separate = !in_proj_weight.defined();
    if (!separate && key.shape() != value.shape())
        fail(op, "key shape " + shape_of(key) + " does not match value shape " + shape_of(value));
    // Self-attention (query, key and value one tensor) projects once, as PyTorch does when `query is key`.
    const bool self_attention = query.impl() == key.impl() && key.impl() == value.impl();
    // Work in PyTorch's (L, N, E) layout.
    auto to_lne = [&](const Tensor& t) {
        return !batched ? t.unsqueeze(1) : options_.batch_first ? t.transpose(0, 1) : t;
    };
    Tensor q = to_lne(query), k = to_lne(key), v = to_lne(value);
    const std::int64_t l = q.size(0), n = q.size(1), e = embed_dim_;
    std::int64_t s = k.size(0);
    const std::int64_t h = num_heads_, hd = e / h;
    if (q.size(2) != e)
        fail(op, "was expecting embedding dimension of " + std::to_string(e) + ", but got " +
                     std::to_string(q.size(2)) + " (query of shape " + shape_of(query) + ")");
    if (separate && (k.size(0) != v.size(0) || k.size(1) != v.size(1)))
        fail(op, "key's sequence and batch dims torch.Size([" + std::to_string(k.size(0)) + ", " +
                     std::to_string(k.size(1)) + "]) do not match value's torch.Size([" + std::to_string(v.size(0)) +
                     ", " + std::to_string(v.size(1)) + "])");
    if (k.size(2) != kdim_ || k.size(1) != n)
        fail(op, "key of shape " + shape_of(key) + " does not match the query of shape " + shape_of(query) +
                     " in batch size, or its feature size is not kdim=" + std::to_string(kdim_));
    if (v.size(2) != vdim_)
        fail(op, "value of shape " + shape_of(value) + " does not have the feature size vdim=" + std::to_string(vdim_));

    // In-projection: (L, N, E) → q, k, v each (L or S, N, E).
    auto w_part = [&](std::int64_t i) { return in_proj_weight.narrow(0, i * e, e); };
    auto b_part = [&](std::int64_t i) { return in_proj_bias.defined() ? in_proj_bias.narrow(0, i * e, e) : Tensor(); };
    Tensor qp, kp, vp;
    if (separate) {
        qp = functional::linear(q, q_proj_weight, b_part(0));
        kp = functional::linear(k, k_proj_weight, b_part(1));
        vp = functional::linear(v, v_proj_weight, b_part(2));
    } else if (self_attention) {
        Tensor proj = functional::linear(q, in_proj_weight, in_proj_bias);  // (L, N, 3E)
        qp = proj.narrow(2, 0, e), kp = proj.narrow(2, e, e), vp = proj.narrow(2, 2 * e, e);
    } else {
        qp = functional::linear(q, w_part(0), b_part(0));
        kp = functional::linear(k, w_part(1), b_part(1));
        vp = functional::linear(v, w_part(2), b_part(2));
    }

    // Bool (and, deprecated, uint8) masks hide where True: -inf there, as PyTorch 1.13's masked_fill_.
    Tensor mask = attn_mask;
    if (mask.defined()) {
        if (mask.dtype() == kBool || mask.dtype() == kUInt8)
            mask = additive_mask(mask.to(kBool), query, true);
        else if (!mask.is_floating_point())
            fail(op, "Only float, byte, and bool types are supported for attn_mask, not " + to_string(mask.dtype()));
        check_float_mask(mask, query, op);
        if (mask.dim() == 2) {
            if (mask.shape() != Shape{l, s})
                fail(op, "The shape of the 2D attn_mask is " + shape_of(mask) + ", but should be " +
                             to_string(Shape{l, s}) + ".");
            mask = mask.unsqueeze(0);
        } else if (mask.dim() == 3) {
            if (mask.shape() != Shape{n * h, l, s})
                fail(op, "The shape of the 3D attn_mask is " + shape_of(mask) + ", but should be " +
                             to_string(Shape{n * h, l, s}) + ".");
        } else {
            fail(op, "attn_mask's dimension " + std::to_string(mask.dim()) + " is not supported");
        }
    }

    // key_padding_mask (N, S) ((S) unbatched): bool hides the keys where True, float is added.
    Tensor pad_mask = key_padding_mask;
    if (pad_mask.defined()) {
        if (pad_mask.dtype() != kBool && !pad_mask.is_floating_point())
            fail(op, "only bool and floating types of key_padding_mask are supported");
        const std::int64_t want = batched ? 2 : 1;
        if (pad_mask.dim() != want)
            fail(op,
                 std::string(batched ? "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D"
                                     : "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D") +
                     " but found " + std::to_string(pad_mask.dim()) + "-D tensor instead");
        if (!batched) pad_mask = pad_mask.unsqueeze(0);
        if (pad_mask.shape() != Shape{n, s})
            fail(op, "expecting key_padding_mask shape of (" + std::to_string(n) + ", " + std::to_string(s) +
                         "), but got torch.Size(" + detail::size_list(pad_mask.shape()) + ")");
        pad_mask = pad_mask.dtype() == kBool ? additive_mask(pad_mask, query, true) : pad_mask.to(query.dtype());
        detail::check_same_device(query, pad_mask, op);
    }

    // add_bias_kv: one more key and value, (1, N, E), the same for every batch element; the masks
    // get a zero column for it.
    if (bias_k.defined()) {
        kp = cat({kp, bias_k.repeat({1, n, 1})});
        vp = cat({vp, bias_v.repeat({1, n, 1})});
        if (mask.defined()) mask = functional::pad(mask, {0, 1});
        if (pad_mask.defined()) pad_mask = functional::pad(pad_mask, {0, 1});
        ++s;
    }

    // Heads: (L, N, E) → (N·H, L, hd).
    auto heads = [&](const Tensor& t, std::int64_t len) {
        return t.contiguous().view({len, n * h, hd}).transpose(0, 1);
    };
    Tensor kh = heads(kp, s), vh = heads(vp, s);
    // add_zero_attn: a zero key and value after everything else, (N·H, 1, hd).
    if (options_.add_zero_attn) {
        const Tensor zero = zeros({n * h, 1, hd}, FactoryOptions(kh.dtype()).device(kh.device()));
        kh = cat({kh, zero}, 1);
        vh = cat({vh, zero}, 1);
        if (mask.defined()) mask = functional::pad(mask, {0, 1});
        if (pad_mask.defined()) pad_mask = functional::pad(pad_mask, {0, 1});
        ++s;
    }
    // The padding mask joins the attention mask per batch element: (N, S) → (N·H, 1, S). Added, which
    // is PyTorch's logical_or / masked_fill for bool masks (-inf either way).
    if (pad_mask.defined()) {
        pad_mask = pad_mask.view({n, 1, 1, s}).expand({n, h, 1, s}).reshape({n * h, 1, s});
        mask = mask.defined() ? mask + pad_mask : pad_mask;
    }
    const double p = is_training() ? options_.dropout : 0.0;
    Tensor weights = attention_weights(heads(qp, l), kh, mask, p, nullptr);  // (N·H, L, S)
    Tensor out = weights.matmul(vh);                                         // (N·H, L, hd)
    out = out.transpose(0, 1).contiguous().view({l * n, e});
    out = out_proj(out).view({l, n, e});
    out = !batched ? out.squeeze(1) : options_.batch_first ? out.transpose(0, 1) : out;

    if (!need_weights) return {out, Tensor()};
    weights = weights.view({n, h, l, s});
    if (average_attn_weights) weights = weights.sum({1}) / static_cast<double>(h);
    if (!batched) weights = weights.squeeze(0);
    return {out, weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
    return forward(x, x, x, Tensor(), false).first;
}

}  // namespace xgrad::nn
