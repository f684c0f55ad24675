// Activation and dropout modules: ReLU, GELU, Tanh, Sigmoid, the rest of torch.nn's activations, Dropout.
#pragma once

#include <cstdint>
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

/// `x * sigmoid(x)` elementwise; prints as `SiLU()`.
///
/// ```cpp
/// xgrad::Tensor y = xgrad::nn::SiLU()(xgrad::tensor({-1.0, 2.0}));   // tensor([-0.2689,  1.7616])
/// ```
class SiLU : public Module {
public:
    SiLU() = default;
    /// Applies `nn::functional::silu`.
    Tensor forward(const Tensor& input) override;
};

/// `x` where positive, else `negative_slope * x`; prints as `LeakyReLU(negative_slope=0.01)`.
class LeakyReLU : public Module {
public:
    /// A LeakyReLU with PyTorch's default slope.
    explicit LeakyReLU(double negative_slope = 0.01);
    /// Applies `nn::functional::leaky_relu`.
    Tensor forward(const Tensor& input) override;
    /// `negative_slope=0.01`.
    std::string extra_repr() const override;

private:
    double negative_slope_;
};

/// functional::prelu with a learned slope, one for all channels or one per channel, each starting at
/// `init`; prints as `PReLU(num_parameters=1)`.
///
/// ```cpp
/// xgrad::nn::PReLU act(16);                       // one slope per channel of (N, 16, ...) inputs
/// ```
class PReLU : public Module {
public:
    /// `num_parameters` slopes (1, or the input's channels), each `init`.
    explicit PReLU(std::int64_t num_parameters = 1, double init = 0.25);
    /// `F::prelu(input, weight)`.
    Tensor forward(const Tensor& input) override;
    /// Sets every slope back to `init`, as PyTorch's reset_parameters.
    void reset_parameters() override;
    /// `num_parameters=1`.
    std::string extra_repr() const override;

    Tensor weight;  ///< (num_parameters): the slopes.

private:
    std::int64_t num_parameters_;
    double init_;
};

/// functional::glu as a module; prints as `GLU(dim=-1)`.
class GLU : public Module {
public:
    /// Halves the input along `dim`.
    explicit GLU(std::int64_t dim = -1) : dim_(dim) {}
    /// `F::glu(input, dim)`.
    Tensor forward(const Tensor& input) override;
    /// `dim=-1`.
    std::string extra_repr() const override;

private:
    std::int64_t dim_;
};

/// `x` where positive, else `alpha * (exp(x) - 1)`; prints as `ELU(alpha=1.0)`.
class ELU : public Module {
public:
    /// An ELU with PyTorch's default alpha.
    explicit ELU(double alpha = 1.0);
    /// Applies `nn::functional::elu`.
    Tensor forward(const Tensor& input) override;
    /// `alpha=1.0`.
    std::string extra_repr() const override;

private:
    double alpha_;
};

/// `scale * elu(x, alpha)` with SELU's fixed constants; prints as `SELU()`.
class SELU : public Module {
public:
    SELU() = default;
    /// Applies `nn::functional::selu`.
    Tensor forward(const Tensor& input) override;
};

/// `x` where positive, else `alpha * (exp(x / alpha) - 1)`; prints as `CELU(alpha=1.0)`.
class CELU : public Module {
public:
    /// A CELU with PyTorch's default alpha; throws for alpha 0.
    explicit CELU(double alpha = 1.0);
    /// Applies `nn::functional::celu`.
    Tensor forward(const Tensor& input) override;
    /// `alpha=1.0`.
    std::string extra_repr() const override;

private:
    double alpha_;
};

/// `log(1 + exp(beta x)) / beta` (x itself above `threshold`); prints as
/// `Softplus(beta=1, threshold=20)`: whole values print as integers, as PyTorch's integer defaults do.
class Softplus : public Module {
public:
    /// A Softplus with PyTorch's defaults.
    explicit Softplus(double beta = 1.0, double threshold = 20.0);
    /// Applies `nn::functional::softplus`.
    Tensor forward(const Tensor& input) override;
    /// `beta=1, threshold=20`.
    std::string extra_repr() const override;

private:
    double beta_, threshold_;
};

/// `x * tanh(softplus(x))` elementwise; prints as `Mish()`.
class Mish : public Module {
public:
    Mish() = default;
    /// Applies `nn::functional::mish`.
    Tensor forward(const Tensor& input) override;
};

/// `min(max(x, 0), 6)` elementwise; prints as `ReLU6()`.
class ReLU6 : public Module {
public:
    ReLU6() = default;
    /// Applies `nn::functional::relu6`.
    Tensor forward(const Tensor& input) override;
};

/// `x * relu6(x + 3) / 6` elementwise; prints as `Hardswish()`.
class Hardswish : public Module {
public:
    Hardswish() = default;
    /// Applies `nn::functional::hardswish`.
    Tensor forward(const Tensor& input) override;
};

/// `relu6(x + 3) / 6` elementwise; prints as `Hardsigmoid()`.
class Hardsigmoid : public Module {
public:
    Hardsigmoid() = default;
    /// Applies `nn::functional::hardsigmoid`.
    Tensor forward(const Tensor& input) override;
};

/// `clamp(x, min_val, max_val)` with a zero gradient at the bounds; prints as
/// `Hardtanh(min_val=-1.0, max_val=1.0)`.
class Hardtanh : public Module {
public:
    /// A Hardtanh; throws unless max_val > min_val (PyTorch's assertion).
    explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
    /// Applies `nn::functional::hardtanh`.
    Tensor forward(const Tensor& input) override;
    /// `min_val=-1.0, max_val=1.0`.
    std::string extra_repr() const override;

private:
    double min_val_, max_val_;
};

/// `log(sigmoid(x))` elementwise, computed stably; prints as `LogSigmoid()`.
class LogSigmoid : public Module {
public:
    LogSigmoid() = default;
    /// Applies `nn::functional::logsigmoid`.
    Tensor forward(const Tensor& input) override;
};

/// `x / (1 + |x|)` elementwise; prints as `Softsign()`.
class Softsign : public Module {
public:
    Softsign() = default;
    /// Applies `nn::functional::softsign`.
    Tensor forward(const Tensor& input) override;
};

/// `x * sigmoid(1.702 x)` elementwise (CLIP's GELU approximation; not in PyTorch 1.13); prints as `QuickGELU()`.
class QuickGELU : public Module {
public:
    QuickGELU() = default;
    /// Applies `nn::functional::quick_gelu`.
    Tensor forward(const Tensor& input) override;
};

/// Softmax along `dim`; prints as `Softmax(dim=1)`.
///
/// ```cpp
/// xgrad::nn::Softmax softmax(-1);
/// xgrad::Tensor p = softmax(xgrad::randn({2, 5}));   // each row sums to 1
/// ```
class Softmax : public Module {
public:
    /// A softmax over `dim` (PyTorch's implicit dim is not offered: name it).
    explicit Softmax(std::int64_t dim);
    /// Applies `nn::functional::softmax`.
    Tensor forward(const Tensor& input) override;
    /// `dim=1`.
    std::string extra_repr() const override;

private:
    std::int64_t dim_;
};

/// Log-softmax along `dim`; prints as `LogSoftmax(dim=1)`.
class LogSoftmax : public Module {
public:
    /// A log-softmax over `dim`.
    explicit LogSoftmax(std::int64_t dim);
    /// Applies `nn::functional::log_softmax`.
    Tensor forward(const Tensor& input) override;
    /// `dim=1`.
    std::string extra_repr() const override;

private:
    std::int64_t dim_;
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
