// Activation and dropout modules: ReLU, GELU, Tanh, Sigmoid, Dropout.
#pragma once

#include <string>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// `max(x, 0)` elementwise; prints as `ReLU()`.
class ReLU : public Module {
public:
    ReLU() = default;
    /// Applies ReLU.
    Tensor forward(const Tensor& input) override;
};

/// Gaussian Error Linear Unit; `approximate` is "none" (erf, the default) or "tanh".
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
class Tanh : public Module {
public:
    Tanh() = default;
    /// Applies tanh.
    Tensor forward(const Tensor& input) override;
};

/// Logistic sigmoid elementwise.
class Sigmoid : public Module {
public:
    Sigmoid() = default;
    /// Applies the sigmoid.
    Tensor forward(const Tensor& input) override;
};

/// In training mode, zeroes each element with probability `p` and scales the others by 1/(1-p);
/// in evaluation mode, the identity. Masks match PyTorch's for the same seed.
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
