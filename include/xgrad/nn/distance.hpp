// Similarities and distances between pairs of vectors, as torch.nn.functional.cosine_similarity and
// pairwise_distance, and their modules nn.CosineSimilarity and nn.PairwiseDistance.
#pragma once

#include <cstdint>
#include <string>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn::functional {

/// The cosine of the angle between `x1` and `x2` along `dim`, as `torch.nn.functional.cosine_similarity`:
/// Σ (x1 / ‖x1‖)(x2 / ‖x2‖), each norm at least `eps`. The inputs broadcast; `dim` is dropped from
/// the result. Floating-point tensors.
/// @code
/// Tensor sim = F::cosine_similarity(queries, keys, 1);             // (N, D) and (N, D): (N)
/// Tensor all = F::cosine_similarity(a.unsqueeze(1), b.unsqueeze(0), -1);   // (N, M) table
/// @endcode
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, std::int64_t dim = 1, double eps = 1e-8);

/// The p-norm distance between `x1` and `x2` along their last dim, `‖x1 - x2 + eps‖_p`, as
/// `torch.nn.functional.pairwise_distance` (the inputs broadcast; any p, as Tensor::norm).
/// @code
/// Tensor d = F::pairwise_distance(anchor, positive);   // (N, D) and (N, D): (N)
/// @endcode
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

/// functional::cosine_similarity as a module; prints as `CosineSimilarity()`, as PyTorch's.
///
/// ```cpp
/// xgrad::nn::CosineSimilarity cos(1, 1e-8);          // dim, eps
/// Tensor s = cos(a, b);
/// ```
class CosineSimilarity : public Module {
public:
    /// The similarity along `dim`, norms at least `eps`.
    explicit CosineSimilarity(std::int64_t dim = 1, double eps = 1e-8) : dim_(dim), eps_(eps) {}
    /// `F::cosine_similarity(x1, x2, dim, eps)`.
    Tensor forward(const Tensor& x1, const Tensor& x2);
    /// `forward(x1, x2)`, as calling the module in Python.
    Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
    /// Throws: the module compares two tensors.
    Tensor forward(const Tensor& input) override;

private:
    std::int64_t dim_;
    double eps_;
};

/// functional::pairwise_distance as a module; prints as `PairwiseDistance()`, as PyTorch's.
///
/// ```cpp
/// xgrad::nn::PairwiseDistance dist(2.0);               // p, eps, keepdim
/// Tensor d = dist(a, b);
/// ```
class PairwiseDistance : public Module {
public:
    /// The p-norm distance with `eps` added to the difference.
    explicit PairwiseDistance(double p = 2.0, double eps = 1e-6, bool keepdim = false)
        : p_(p), eps_(eps), keepdim_(keepdim) {}
    /// `F::pairwise_distance(x1, x2, p, eps, keepdim)`.
    Tensor forward(const Tensor& x1, const Tensor& x2);
    /// `forward(x1, x2)`, as calling the module in Python.
    Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
    /// Throws: the module compares two tensors.
    Tensor forward(const Tensor& input) override;

private:
    double p_, eps_;
    bool keepdim_;
};

}  // namespace xgrad::nn

namespace xgrad {

/// `torch.cdist(x1, x2, p, compute_mode)`: the p-norm distance between every row of `x1` (…, P, M) and
/// every row of `x2` (…, R, M), as a (…, P, R) tensor; the batch dims broadcast. For p = 2 with more
/// than 25 rows on either side (`compute_mode` "use_mm_for_euclid_dist_if_necessary", the default;
/// "use_mm_for_euclid_dist" always, "donot_use_mm_for_euclid_dist" never), as PyTorch: one matrix
/// product, √(‖a‖² − 2 a·b + ‖b‖²), fast and accurate to about √eps of the norms. Otherwise the
/// differences themselves, PyTorch's direct kernel, whose results on the CPU are PyTorch 1.13's bits.
/// Gradients as PyTorch's (zero where a distance is zero).
/// @code
/// Tensor d = xgrad::cdist(queries, keys);          // (100, 64) and (500, 64): (100, 500)
/// Tensor l1 = xgrad::cdist(a, b, 1.0);             // Manhattan distances
/// @endcode
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0,
             const std::string& compute_mode = "use_mm_for_euclid_dist_if_necessary");

}  // namespace xgrad
