// Embedding: a lookup table of learned vectors, as torch.nn.Embedding.
#pragma once

#include <cstdint>
#include <optional>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// A table of `num_embeddings` vectors of `embedding_dim` values, indexed by an int64 tensor, as
/// `torch.nn.Embedding`.
///
/// The weight is drawn from normal(0, 1) with the default generator (PyTorch's values after the
/// same `manual_seed`); the row `padding_idx` (negative counts from the end) is zeros and gets no
/// gradient.
///
/// ```cpp
/// xgrad::manual_seed(0);
/// xgrad::nn::Embedding emb(10, 3, /*padding_idx=*/0);
/// auto vectors = emb(xgrad::tensor({{1.0, 0.0, 4.0}}, xgrad::kInt64));   // shape (1, 3, 3)
/// std::cout << emb;   // Embedding(10, 3, padding_idx=0)
/// ```
class Embedding : public Module {
public:
    /// A table of `num_embeddings` rows of `embedding_dim` values.
    Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim,
              std::optional<std::int64_t> padding_idx = std::nullopt);
    /// The rows that `input` (int64, any shape) names: shape (*input.shape, embedding_dim).
    Tensor forward(const Tensor& input) override;
    /// `10, 3, padding_idx=0`.
    std::string extra_repr() const override;
    /// Redraws the weight from normal(0, 1) and zeroes the padding row.
    void reset_parameters() override;

    Tensor weight;  ///< (num_embeddings, embedding_dim).

private:
    std::int64_t num_embeddings_, embedding_dim_;
    std::optional<std::int64_t> padding_idx_;
};

}  // namespace xgrad::nn
