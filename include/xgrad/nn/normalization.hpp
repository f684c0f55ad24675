// Normalisation layers: LayerNorm and RMSNorm in giagrad's `dimensions` form and PyTorch's shape form.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// Layer normalisation: each sample is normalised over its last dimensions to mean 0 and (population)
/// variance 1, then scaled by `weight` and shifted by `bias` elementwise.
///
/// **From PyTorch: write `nn::LayerNorm({10})` (or `nn::LayerNorm(xgrad::Shape{10})`) for PyTorch's
/// `nn.LayerNorm(10)`.** A bare integer is giagrad's *number of trailing dimensions*, not a size:
/// `nn::LayerNorm(3)` on a `(B, T, 3)` input normalises over all three axes, the batch included,
/// where `nn.LayerNorm(3)` normalises the last axis of size 3. xgrad keeps giagrad's meaning (its
/// notebooks rely on it) and writes a warning to stderr, once per process, the first time an integer
/// form normalises over every axis of its input.
///
/// The two forms:
/// - PyTorch's, `LayerNorm(Shape normalized_shape, eps, elementwise_affine)`: the sizes are given,
///   parameters are created at once.
/// - giagrad's, `LayerNorm(dimensions, eps, elementwise_affine)`: normalise over the last
///   `dimensions` axes, whatever their sizes. The parameters exist (as empty handles) from
///   construction, so an optimizer built before the first forward trains them; they take the shape
///   `input.shape[-dimensions:]` at the first forward, and a later input with other trailing sizes
///   is an error. Until then the module is lazy: `load_state_dict` gives it the file's shapes, and
///   saving it throws.
///
/// ```cpp
/// xgrad::nn::LayerNorm ln({10});                       // PyTorch's nn.LayerNorm(10)
/// xgrad::nn::LayerNorm ln3(xgrad::Shape{5, 10});       // PyTorch's normalized_shape (5, 10)
/// std::cout << ln3;   // LayerNorm((5, 10), eps=1e-05, elementwise_affine=True)
/// xgrad::nn::LayerNorm last(1);                        // giagrad: the last axis, any size
/// xgrad::nn::LayerNorm two(2, 1e-5, false);            // giagrad: the last two axes, no parameters
/// ```
class LayerNorm : public Module {
public:
    /// giagrad's form: normalise over the last `dimensions` axes (sizes fixed by the first input).
    template <std::integral I>
    explicit LayerNorm(I dimensions, double eps = 1e-5, bool elementwise_affine = true)
        : LayerNorm(static_cast<std::int64_t>(dimensions), std::nullopt, eps, elementwise_affine) {}
    /// PyTorch's form: normalise over trailing axes of exactly `normalized_shape`.
    explicit LayerNorm(const Shape& normalized_shape, double eps = 1e-5, bool elementwise_affine = true)
        : LayerNorm(normalized_shape.size(), normalized_shape, eps, elementwise_affine) {}
    /// PyTorch's form from braces: `LayerNorm({10})` is `nn.LayerNorm(10)` in PyTorch.
    explicit LayerNorm(std::initializer_list<std::int64_t> normalized_shape, double eps = 1e-5,
                       bool elementwise_affine = true)
        : LayerNorm(Shape(normalized_shape), eps, elementwise_affine) {}

    /// Normalises `input`, whose trailing sizes must match the normalised shape.
    Tensor forward(const Tensor& input) override;
    /// `(5, 10), eps=1e-05, elementwise_affine=True`, as PyTorch prints it.
    std::string extra_repr() const override;
    /// The normalised shape, once known.
    std::optional<Shape> normalized_shape() const { return normalized_shape_; }

    Tensor weight;  ///< Scale (ones at start), shaped like the normalised axes; undefined without affine.
    Tensor bias;    ///< Shift (zeros at start), shaped like the normalised axes; undefined without affine.

    /// True for the integer form before its first forward (with elementwise_affine).
    bool has_uninitialized_parameters() const override { return affine_ && !normalized_shape_; }

protected:
    /// Takes the normalised shape from `state`'s weight (see Module::initialize_from).
    void initialize_from(const std::map<std::string, Tensor>& state, const std::string& prefix, bool apply) override;

private:
    LayerNorm(std::int64_t dimensions, std::optional<Shape> shape, double eps, bool affine);
    void materialize(const Shape& shape);

    std::int64_t dimensions_;
    std::optional<Shape> normalized_shape_;
    double eps_;
    bool affine_;
    bool from_int_;  // giagrad's integer form (warns when it normalises every axis)
};

/// Root-mean-square normalisation: `y = x / sqrt(mean(x², last dims) + eps) * weight`.
///
/// The same two forms as LayerNorm, with the same trap: PyTorch's `nn.RMSNorm(10)` is
/// `nn::RMSNorm({10})`; a bare integer counts trailing dimensions. `eps` defaults, as `torch.nn.RMSNorm`'s, to the
/// machine epsilon of the input's dtype (`torch.finfo(dtype).eps`).
///
/// ```cpp
/// xgrad::nn::RMSNorm rms(1);                       // last axis
/// xgrad::nn::RMSNorm rms2(xgrad::Shape{10}, 1e-6);  // PyTorch's form with an explicit eps
/// ```
class RMSNorm : public Module {
public:
    /// giagrad-style form: normalise over the last `dimensions` axes.
    template <std::integral I>
    explicit RMSNorm(I dimensions, std::optional<double> eps = std::nullopt, bool elementwise_affine = true)
        : RMSNorm(static_cast<std::int64_t>(dimensions), std::nullopt, eps, elementwise_affine) {}
    /// PyTorch's form: normalise over trailing axes of exactly `normalized_shape`.
    explicit RMSNorm(const Shape& normalized_shape, std::optional<double> eps = std::nullopt,
                     bool elementwise_affine = true)
        : RMSNorm(normalized_shape.size(), normalized_shape, eps, elementwise_affine) {}
    /// PyTorch's form from braces: `RMSNorm({10})`.
    explicit RMSNorm(std::initializer_list<std::int64_t> normalized_shape, std::optional<double> eps = std::nullopt,
                     bool elementwise_affine = true)
        : RMSNorm(Shape(normalized_shape), eps, elementwise_affine) {}

    /// Normalises `input`.
    Tensor forward(const Tensor& input) override;
    /// `(10,), eps=None, elementwise_affine=True`, as PyTorch prints it.
    std::string extra_repr() const override;
    /// The normalised shape, once known.
    std::optional<Shape> normalized_shape() const { return normalized_shape_; }

    Tensor weight;  ///< Scale (ones at start); undefined without affine.

    /// True for the integer form before its first forward (with elementwise_affine).
    bool has_uninitialized_parameters() const override { return affine_ && !normalized_shape_; }

protected:
    /// Takes the normalised shape from `state`'s weight (see Module::initialize_from).
    void initialize_from(const std::map<std::string, Tensor>& state, const std::string& prefix, bool apply) override;

private:
    RMSNorm(std::int64_t dimensions, std::optional<Shape> shape, std::optional<double> eps, bool affine);
    void materialize(const Shape& shape);

    std::int64_t dimensions_;
    std::optional<Shape> normalized_shape_;
    std::optional<double> eps_;
    bool affine_;
    bool from_int_;  // giagrad's integer form (warns when it normalises every axis)
};

}  // namespace xgrad::nn
