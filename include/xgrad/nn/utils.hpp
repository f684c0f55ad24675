// Training utilities on gradients: clipping by total norm or by value (PyTorch's torch.nn.utils).
#pragma once

#include <vector>

#include "xgrad/tensor.hpp"

/// Utilities on parameters and their gradients (PyTorch's `torch.nn.utils`).
namespace xgrad::nn::utils {

/// Scales the gradients of `parameters` in place so that their total `norm_type`-norm (the norm of
/// the vector of every parameter's gradient norm) is at most `max_norm`, as PyTorch 1.13's
/// `clip_grad_norm_`: each gradient is multiplied by `min(1, max_norm / (total_norm + 1e-6))`.
///
/// Returns the total norm before clipping, a 0-d tensor (float32 `0.` when no parameter has a
/// gradient); parameters without a gradient are skipped. `norm_type` is a positive p or infinity
/// (the largest |g|). With `error_if_nonfinite`, a NaN or infinite total norm throws
/// std::runtime_error with PyTorch's message instead of scaling.
///
/// ```cpp
/// loss.backward();
/// xgrad::Tensor norm = xgrad::nn::utils::clip_grad_norm_(model.parameters(), /*max_norm=*/1.0);
/// opt.step();
/// ```
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/// Clamps every gradient of `parameters` in place to [-clip_value, clip_value], as PyTorch's
/// `clip_grad_value_`; parameters without a gradient are skipped.
///
/// ```cpp
/// xgrad::nn::utils::clip_grad_value_(model.parameters(), 0.5);
/// ```
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace xgrad::nn::utils
