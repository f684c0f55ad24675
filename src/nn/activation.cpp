// Activation and dropout modules.
#include "xgrad/nn/activation.hpp"

#include "detail/tensor_impl.hpp"
#include "xgrad/nn/functional.hpp"

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
