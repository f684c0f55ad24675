// Flatten and Unflatten: reshaping layers for Sequential models, as torch.nn.Flatten/Unflatten.
#pragma once

#include <cstdint>
#include <string>

#include "xgrad/nn/module.hpp"
#include "xgrad/shape.hpp"

namespace xgrad::nn {

/// Merges dims `start_dim`..`end_dim` into one (a view where possible), as `torch.nn.Flatten`;
/// by default every dim but the batch dim.
///
/// ```cpp
/// xgrad::nn::Flatten flat;                            // Flatten(start_dim=1, end_dim=-1)
/// auto y = flat(xgrad::randn({8, 3, 4, 4}));          // shape (8, 48)
/// ```
class Flatten : public Module {
public:
    /// A layer merging dims start_dim..end_dim.
    explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1);
    /// `input.flatten(start_dim, end_dim)`.
    Tensor forward(const Tensor& input) override;
    /// `start_dim=1, end_dim=-1`.
    std::string extra_repr() const override;

private:
    std::int64_t start_dim_, end_dim_;
};

/// Splits dim `dim` into `unflattened_size` (a view), as `torch.nn.Unflatten`.
///
/// ```cpp
/// xgrad::nn::Unflatten unflat(1, {3, 16});            // Unflatten(dim=1, unflattened_size=(3, 16))
/// auto y = unflat(xgrad::randn({8, 48}));             // shape (8, 3, 16)
/// ```
class Unflatten : public Module {
public:
    /// A layer splitting `dim` into `unflattened_size` (one size may be -1).
    Unflatten(std::int64_t dim, Shape unflattened_size);
    /// `input.unflatten(dim, unflattened_size)`.
    Tensor forward(const Tensor& input) override;
    /// `dim=1, unflattened_size=(3, 16)`.
    std::string extra_repr() const override;

private:
    std::int64_t dim_;
    Shape sizes_;
};

}  // namespace xgrad::nn
