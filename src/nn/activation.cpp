// Activation and dropout modules.
#include "xgrad/nn/activation.hpp"

#include <cmath>

#include "detail/tensor_impl.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/loss.hpp"

namespace xgrad::nn {

Tensor ReLU::forward(const Tensor& input) {
    return input.relu();
}

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
    if (approximate_ != "none" && approximate_ != "tanh")
        detail::fail("GELU", "approximate must be \"none\" or \"tanh\", got \"" + approximate_ + "\"");
}
Tensor GELU::forward(const Tensor& input) {
    return input.gelu(approximate_);
}
std::string GELU::extra_repr() const {
    return "approximate='" + approximate_ + "'";
}

Tensor Tanh::forward(const Tensor& input) {
    return input.tanh();
}

Tensor Sigmoid::forward(const Tensor& input) {
    return input.sigmoid();
}

namespace {

/// A parameter as PyTorch prints it: whole numbers as integers (Softplus's defaults are Python ints).
std::string whole_or_float(double v) {
    if (std::floor(v) == v && std::abs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
    return python_float_repr(v);
}

}  // namespace

Tensor SiLU::forward(const Tensor& input) {
    return functional::silu(input);
}

LeakyReLU::LeakyReLU(double negative_slope) : negative_slope_(negative_slope) {}
Tensor LeakyReLU::forward(const Tensor& input) {
    return functional::leaky_relu(input, negative_slope_);
}
std::string LeakyReLU::extra_repr() const {
    return "negative_slope=" + python_float_repr(negative_slope_);
}

ELU::ELU(double alpha) : alpha_(alpha) {}
Tensor ELU::forward(const Tensor& input) {
    return functional::elu(input, alpha_);
}
std::string ELU::extra_repr() const {
    return "alpha=" + python_float_repr(alpha_);
}

Tensor SELU::forward(const Tensor& input) {
    return functional::selu(input);
}

CELU::CELU(double alpha) : alpha_(alpha) {
    if (alpha == 0) detail::fail("CELU", "ZeroDivisionError: alpha cannot be 0 for CELU");
}
Tensor CELU::forward(const Tensor& input) {
    return functional::celu(input, alpha_);
}
std::string CELU::extra_repr() const {
    return "alpha=" + python_float_repr(alpha_);
}

Softplus::Softplus(double beta, double threshold) : beta_(beta), threshold_(threshold) {}
Tensor Softplus::forward(const Tensor& input) {
    return functional::softplus(input, beta_, threshold_);
}
std::string Softplus::extra_repr() const {
    return "beta=" + whole_or_float(beta_) + ", threshold=" + whole_or_float(threshold_);
}

Tensor Mish::forward(const Tensor& input) {
    return functional::mish(input);
}

Tensor ReLU6::forward(const Tensor& input) {
    return functional::relu6(input);
}

Tensor Hardswish::forward(const Tensor& input) {
    return functional::hardswish(input);
}

Tensor Hardsigmoid::forward(const Tensor& input) {
    return functional::hardsigmoid(input);
}

Hardtanh::Hardtanh(double min_val, double max_val) : min_val_(min_val), max_val_(max_val) {
    if (!(max_val > min_val))
        detail::fail("Hardtanh", "max_val (" + python_float_repr(max_val) + ") must be greater than min_val (" +
                                     python_float_repr(min_val) + ")");
}
Tensor Hardtanh::forward(const Tensor& input) {
    return functional::hardtanh(input, min_val_, max_val_);
}
std::string Hardtanh::extra_repr() const {
    return "min_val=" + python_float_repr(min_val_) + ", max_val=" + python_float_repr(max_val_);
}

Tensor LogSigmoid::forward(const Tensor& input) {
    return functional::logsigmoid(input);
}

Tensor Softsign::forward(const Tensor& input) {
    return functional::softsign(input);
}

Tensor QuickGELU::forward(const Tensor& input) {
    return functional::quick_gelu(input);
}

Softmax::Softmax(std::int64_t dim) : dim_(dim) {}
Tensor Softmax::forward(const Tensor& input) {
    return functional::softmax(input, dim_);
}
std::string Softmax::extra_repr() const {
    return "dim=" + std::to_string(dim_);
}

LogSoftmax::LogSoftmax(std::int64_t dim) : dim_(dim) {}
Tensor LogSoftmax::forward(const Tensor& input) {
    return functional::log_softmax(input, dim_);
}
std::string LogSoftmax::extra_repr() const {
    return "dim=" + std::to_string(dim_);
}

Dropout::Dropout(double p) : p_(p) {
    if (p < 0 || p > 1) detail::fail("Dropout", "probability has to be between 0 and 1, but got " + std::to_string(p));
}
Tensor Dropout::forward(const Tensor& input) {
    return functional::dropout(input, p_, is_training());
}
std::string Dropout::extra_repr() const {
    return "p=" + python_float_repr(p_) + ", inplace=False";
}

}  // namespace xgrad::nn
