// torch.nn.init's initialisers: PyTorch's fan and gain arithmetic in double, then one random fill.
#include "xgrad/nn/init.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"

namespace xgrad::nn::init {

using detail::fail;

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
    static const char* const linear_fns[] = {"linear",           "conv1d",           "conv2d",          "conv3d",
                                             "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"};
    for (const char* name : linear_fns)
        if (nonlinearity == name) return 1.0;
    if (nonlinearity == "sigmoid") return 1.0;
    if (nonlinearity == "tanh") return 5.0 / 3;
    if (nonlinearity == "relu") return std::sqrt(2.0);
    if (nonlinearity == "leaky_relu") {
        double slope = param.value_or(0.01);
        return std::sqrt(2.0 / (1 + std::pow(slope, 2.0)));
    }
    if (nonlinearity == "selu") return 3.0 / 4;
    fail("calculate_gain", "unsupported nonlinearity '" + nonlinearity + "'");
}

std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
    detail::check_defined(tensor, "calculate_fan_in_and_fan_out");
    if (tensor.dim() < 2)
        fail("calculate_fan_in_and_fan_out",
             "fan in and fan out can not be computed for a tensor with fewer than 2 dimensions (shape " +
                 to_string(tensor.shape()) + ")");
    std::int64_t receptive_field = 1;
    for (std::int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
    return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

namespace {

std::int64_t correct_fan(const Tensor& tensor, std::string mode, const char* op) {
    std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return std::tolower(c); });
    if (mode != "fan_in" && mode != "fan_out")
        fail(op, "mode '" + mode + "' is not supported, please use one of 'fan_in', 'fan_out'");
    auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    return mode == "fan_in" ? fan_in : fan_out;
}

double xavier_std(const Tensor& tensor, double gain, const char* op) {
    auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    if (fan_in + fan_out == 0) fail(op, "the tensor of shape " + to_string(tensor.shape()) + " has no fan");
    return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}

}  // namespace

Tensor& uniform_(Tensor& tensor, double a, double b, Generator* gen) {
    NoGradGuard no_grad;
    return xgrad::uniform_(tensor, a, b, gen);
}

Tensor& normal_(Tensor& tensor, double mean, double std, Generator* gen) {
    NoGradGuard no_grad;
    return xgrad::normal_(tensor, mean, std, gen);
}

Tensor& constant_(Tensor& tensor, double value) {
    NoGradGuard no_grad;
    return tensor.fill_(value);
}

Tensor& ones_(Tensor& tensor) {
    return constant_(tensor, 1.0);
}

Tensor& zeros_(Tensor& tensor) {
    return constant_(tensor, 0.0);
}

Tensor& xavier_uniform_(Tensor& tensor, double gain, Generator* gen) {
    double a = std::sqrt(3.0) * xavier_std(tensor, gain, "xavier_uniform_");
    return init::uniform_(tensor, -a, a, gen);
}

Tensor& xavier_normal_(Tensor& tensor, double gain, Generator* gen) {
    return init::normal_(tensor, 0.0, xavier_std(tensor, gain, "xavier_normal_"), gen);
}

Tensor& kaiming_uniform_(Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity,
                         Generator* gen) {
    detail::check_defined(tensor, "kaiming_uniform_");
    if (tensor.numel() == 0) return tensor;  // PyTorch warns and does nothing
    auto fan = correct_fan(tensor, mode, "kaiming_uniform_");
    double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
    double bound = std::sqrt(3.0) * std;
    return init::uniform_(tensor, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity,
                        Generator* gen) {
    detail::check_defined(tensor, "kaiming_normal_");
    if (tensor.numel() == 0) return tensor;
    auto fan = correct_fan(tensor, mode, "kaiming_normal_");
    double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
    return init::normal_(tensor, 0.0, std, gen);
}

}  // namespace xgrad::nn::init
