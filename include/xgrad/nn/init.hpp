// torch.nn.init: in-place parameter initialisers with PyTorch's formulas, defaults and draw order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "xgrad/random.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad::nn::init {

// Every initialiser writes into the tensor's storage without recording autograd (as PyTorch's do
// under torch.no_grad()), so it works on parameters that require grad, and returns the tensor.

/// The recommended gain for `nonlinearity`: 1 for linear/conv/sigmoid, 5/3 for tanh, √2 for relu,
/// √(2 / (1 + slope²)) for leaky_relu (slope `param`, default 0.01), 3/4 for selu.
///
/// ```cpp
/// double g = xgrad::nn::init::calculate_gain("leaky_relu", 0.2);
/// ```
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
/// (fan_in, fan_out) of a weight of at least 2 dimensions: size(1) and size(0) times the product of
/// the remaining (receptive-field) sizes.
std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// Fills with values uniform in [a, b).
Tensor& uniform_(Tensor& tensor, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
/// Fills with values from N(mean, std²).
Tensor& normal_(Tensor& tensor, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
/// Fills with `value`.
Tensor& constant_(Tensor& tensor, double value);
/// Fills with ones.
Tensor& ones_(Tensor& tensor);
/// Fills with zeros.
Tensor& zeros_(Tensor& tensor);
/// Glorot uniform: U(-a, a) with a = gain·√(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
/// Glorot normal: N(0, std²) with std = gain·√(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
/// He uniform: U(-bound, bound) with bound = gain·√(3 / fan), fan chosen by `mode` ("fan_in" or
/// "fan_out") and gain by calculate_gain(nonlinearity, a). A tensor with no elements is left alone.
///
/// ```cpp
/// auto w = xgrad::empty({6, 5});
/// xgrad::nn::init::kaiming_uniform_(w, std::sqrt(5.0));   // what nn.Linear(5, 6) does to its weight
/// ```
Tensor& kaiming_uniform_(Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
/// He normal: N(0, std²) with std = gain / √fan; arguments as kaiming_uniform_.
Tensor& kaiming_normal_(Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);

}  // namespace xgrad::nn::init
