// Activation and dropout modules: ReLU, GELU, Tanh, Sigmoid, Dropout.
#pragma once

#include <string>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// `max(x, 0)` elementwise; prints as `ReLU()`.
///
/// ```cpp
/// xgrad::nn::Sequential layer(xgrad::nn::Linear(5, 6), xgrad::nn::ReLU());
/// xgrad::Tensor y = xgrad::nn::ReLU()(xgrad::tensor({-1.0, 2.0}));   // tensor([0., 2.])
/// ```
class ReLU : public Module {
public:
    ReLU() = default;
    /// Applies ReLU.
    Tensor forward(const Tensor& input) override;
};

/// Gaussian Error Linear Unit; `approximate` is "none" (erf, the default) or "tanh".
///
/// ```cpp
/// xgrad::nn::GELU gelu;                  // prints GELU(approximate='none')
/// xgrad::nn::GELU fast("tanh");          // the tanh approximation
/// xgrad::Tensor y = gelu(xgrad::randn({2, 3}));
/// ```
class GELU : public Module {
public:
    /// A GELU with PyTorch's default exact form.
    explicit GELU(std::string approximate = "none");
    /// Applies GELU.
    Tensor forward(const Tensor& input) override;
    /// `approximate='none'`.
    std::string extra_repr() const override;

private:
    std::string approximate_;
};

/// Hyperbolic tangent elementwise.
///
/// ```cpp
/// xgrad::Tensor y = xgrad::nn::Tanh()(xgrad::randn({4}));   // values in (-1, 1)
/// ```
class Tanh : public Module {
public:
    Tanh() = default;
    /// Applies tanh.
    Tensor forward(const Tensor& input) override;
};

/// Logistic sigmoid elementwise.
///
/// ```cpp
/// xgrad::Tensor p = xgrad::nn::Sigmoid()(xgrad::randn({4}));   // values in (0, 1)
/// ```
class Sigmoid : public Module {
public:
    Sigmoid() = default;
    /// Applies the sigmoid.
    Tensor forward(const Tensor& input) override;
};

/// In training mode, zeroes each element with probability `p` and scales the others by 1/(1-p);
/// in evaluation mode, the identity. Masks match PyTorch's for the same seed.
///
/// ```cpp
/// xgrad::manual_seed(7);
/// xgrad::nn::Dropout drop(0.3);
/// xgrad::Tensor y = drop(xgrad::ones({4, 5}));   // PyTorch's mask; kept values are 1/0.7
/// drop.eval();                                   // now the identity
/// ```
class Dropout : public Module {
public:
    /// A dropout layer; throws unless 0 <= p <= 1.
    explicit Dropout(double p = 0.5);
    /// Applies dropout (training mode) or nothing (evaluation mode).
    Tensor forward(const Tensor& input) override;
    /// `p=0.5, inplace=False`.
    std::string extra_repr() const override;

private:
    double p_;
};

}  // namespace xgrad::nn
