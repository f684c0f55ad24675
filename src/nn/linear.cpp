// Linear and Identity, initialised as torch.nn.Linear.
#include "xgrad/nn/linear.hpp"

#include <cmath>

#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/init.hpp"

namespace xgrad::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool has_bias)
    : in_features_(in_features), out_features_(out_features) {
    if (in_features < 0 || out_features < 0)
        detail::fail("Linear", "in_features and out_features must be non-negative, got " + std::to_string(in_features) +
                                   " and " + std::to_string(out_features));
    weight = empty({out_features, in_features});
    register_parameter("weight", weight);
    if (has_bias) {
        bias = empty({out_features});
        register_parameter("bias", bias);
    }
    initialize_parameters();
}

void Linear::reset_parameters() {
    // PyTorch's reset_parameters: the weight first, then the bias, from the default generator.
    NoGradGuard no_grad;
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
        double bound = in_features_ > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features_)) : 0.0;
        init::uniform_(bias, -bound, bound);
    }
}

Tensor Linear::forward(const Tensor& input) {
    return functional::linear(input, weight, bias);
}

std::string Linear::extra_repr() const {
    return "in_features=" + std::to_string(in_features_) + ", out_features=" + std::to_string(out_features_) +
           ", bias=" + (bias.defined() ? "True" : "False");
}

}  // namespace xgrad::nn
