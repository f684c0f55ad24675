// Affine layers: Linear and Identity.
#pragma once

#include <cstdint>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// `y = x · weightᵀ + bias`, initialised exactly as `torch.nn.Linear`.
///
/// The weight (out_features × in_features) is drawn with `kaiming_uniform_(a = √5)`, then the bias
/// uniformly in ±1/√in_features, from the default generator: after the same `manual_seed` and the
/// same earlier draws, the values are PyTorch's.
///
/// ```cpp
/// xgrad::manual_seed(123);
/// xgrad::nn::Linear fc(5, 6);
/// std::cout << fc;   // Linear(in_features=5, out_features=6, bias=True)
/// ```
class Linear : public Module {
public:
    /// A layer from `in_features` to `out_features`, with a bias unless `bias` is false.
    Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
    /// Applies the layer to input (..., in_features).
    Tensor forward(const Tensor& input) override;
    /// `in_features=5, out_features=6, bias=True`.
    std::string extra_repr() const override;
    /// Redraws the weight (kaiming_uniform_, a = √5) and then the bias (±1/√in_features).
    void reset_parameters() override;

    Tensor weight;  ///< (out_features, in_features).
    Tensor bias;    ///< (out_features), or undefined without bias.

private:
    std::int64_t in_features_, out_features_;
};

/// Returns its input unchanged (a placeholder where a layer is optional).
///
/// ```cpp
/// xgrad::nn::Sequential body(xgrad::nn::Linear(4, 4), xgrad::nn::Identity());   // prints (1): Identity()
/// ```
class Identity : public Module {
public:
    Identity() = default;
    /// `input`.
    Tensor forward(const Tensor& input) override { return input; }
};

}  // namespace xgrad::nn
