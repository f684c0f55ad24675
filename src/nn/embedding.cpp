// Embedding, initialised as torch.nn.Embedding (the lookup itself is functional::embedding).
#include "xgrad/nn/embedding.hpp"

#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/init.hpp"

namespace xgrad::nn {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, std::optional<std::int64_t> padding_idx)
    : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim), padding_idx_(padding_idx) {
    if (num_embeddings < 0 || embedding_dim < 0)
        detail::fail("Embedding", "num_embeddings and embedding_dim must be non-negative, got " +
                                      std::to_string(num_embeddings) + " and " + std::to_string(embedding_dim));
    if (padding_idx_) {
        if (*padding_idx_ >= num_embeddings || *padding_idx_ < -num_embeddings)
            detail::fail("Embedding", "Padding_idx must be within num_embeddings");
        if (*padding_idx_ < 0) *padding_idx_ += num_embeddings;  // stored from the front, as PyTorch
    }
    weight = empty({num_embeddings, embedding_dim});
    register_parameter("weight", weight);
    initialize_parameters();
}

void Embedding::reset_parameters() {
    NoGradGuard no_grad;
    init::normal_(weight);
    if (padding_idx_) weight.select(0, *padding_idx_).fill_(0.0);
}

Tensor Embedding::forward(const Tensor& input) {
    return functional::embedding(input, weight, padding_idx_);
}

std::string Embedding::extra_repr() const {
    std::string s = std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_);
    if (padding_idx_) s += ", padding_idx=" + std::to_string(*padding_idx_);
    return s;
}

}  // namespace xgrad::nn
