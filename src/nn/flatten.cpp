// Flatten and Unflatten modules (the work is Tensor::flatten and Tensor::unflatten).
#include "xgrad/nn/flatten.hpp"

namespace xgrad::nn {

Flatten::Flatten(std::int64_t start_dim, std::int64_t end_dim) : start_dim_(start_dim), end_dim_(end_dim) {}

Tensor Flatten::forward(const Tensor& input) {
    return input.flatten(start_dim_, end_dim_);
}

std::string Flatten::extra_repr() const {
    return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

Unflatten::Unflatten(std::int64_t dim, Shape unflattened_size) : dim_(dim), sizes_(std::move(unflattened_size)) {}

Tensor Unflatten::forward(const Tensor& input) {
    return input.unflatten(dim_, sizes_);
}

std::string Unflatten::extra_repr() const {
    // A Python tuple: (2, 3), or (2,) for one size.
    std::string t = "(";
    for (std::int64_t i = 0; i < sizes_.size(); ++i) t += (i ? ", " : "") + std::to_string(sizes_[i]);
    return "dim=" + std::to_string(dim_) + ", unflattened_size=" + t + (sizes_.size() == 1 ? ",)" : ")");
}

}  // namespace xgrad::nn
