// Loss functions (torch.nn.functional's and torch.nn's losses) and the softmaxes they are built on.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/module.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad::nn::functional {

/// A loss's `reduction` argument: a Reduction, or PyTorch's spelling `"none"`, `"mean"` or `"sum"`.
///
/// ```cpp
/// F::mse_loss(x, y, {.reduction = F::Reduction::kSum});
/// F::mse_loss(x, y, {.reduction = "sum"});   // the same
/// ```
class LossReduction {
public:
    /// From the enum (implicit, so that options read `.reduction = Reduction::kSum`).
    LossReduction(Reduction reduction = Reduction::kMean) : value_(reduction) {}  // NOLINT: implicit
    /// From PyTorch's string; throws std::invalid_argument for anything but "none", "mean", "sum".
    LossReduction(const char* name);  // NOLINT: implicit, so that `.reduction = "sum"` works
    /// From PyTorch's string, as a std::string.
    LossReduction(const std::string& name) : LossReduction(name.c_str()) {}  // NOLINT: implicit
    /// The reduction as the enum.
    operator Reduction() const { return value_; }  // NOLINT: implicit
    /// The reduction as the enum.
    Reduction value() const { return value_; }

private:
    Reduction value_;
};

/// PyTorch's name of a reduction: "none", "mean" or "sum".
std::string to_string(Reduction reduction);

/// `log(softmax(x))` along `dim`, computed stably as `x - max - log(sum(exp(x - max)))`.
///
/// One recorded operation (`LogSoftmaxBackward0`); its backward is `g - softmax(x) * sum(g, dim)`.
Tensor log_softmax(const Tensor& input, std::int64_t dim);
/// `exp(x) / sum(exp(x))` along `dim`, with the maximum subtracted first (`SoftmaxBackward0`).
Tensor softmax(const Tensor& input, std::int64_t dim);

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

/// Options of mse_loss and MSELoss.
struct MSELossOptions {
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-element losses.
};

/// Options of l1_loss and L1Loss.
struct L1LossOptions {
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-element losses.
};

/// Options of nll_loss and NLLLoss, in PyTorch's order.
struct NLLLossOptions {
    Tensor weight{};                   ///< A weight per class, shape (C); undefined means all ones.
    std::int64_t ignore_index = -100;  ///< Targets equal to this contribute neither loss nor gradient.
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< Mean: over the summed target weights.
};

/// Options of cross_entropy and CrossEntropyLoss, in PyTorch's order.
struct CrossEntropyLossOptions {
    Tensor weight{};                   ///< A weight per class, shape (C); undefined means all ones.
    std::int64_t ignore_index = -100;  ///< Class-index targets equal to this are ignored.
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-sample losses.
    double label_smoothing = 0.0;  ///< In [0, 1]: mixes the target with the uniform distribution.
};

/// Options of binary_cross_entropy_with_logits and BCEWithLogitsLoss, in PyTorch's order.
struct BCEWithLogitsLossOptions {
    Tensor weight{};  ///< Rescales each element's loss; broadcast to the input's shape.
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-element losses.
    Tensor pos_weight{};  ///< Weight of the positive term, broadcast along the last (class) dimension.
};

}  // namespace xgrad::nn

namespace xgrad::nn::functional {

/// Mean squared error `(input - target)²`, reduced; input and target must have the same shape.
///
/// One recorded operation (`MseLossBackward0`) for every reduction.
/// ```cpp
/// Tensor loss = F::mse_loss(model(x), y);                      // mean
/// Tensor per  = F::mse_loss(model(x), y, {.reduction = "none"});
/// ```
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossOptions& options = {});

/// Mean absolute error `|input - target|`, reduced; input and target must have the same shape.
///
/// Built from `abs` and `mean`/`sum`, as PyTorch 1.13 builds it (so its grad_fn is theirs).
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossOptions& options = {});

/// Negative log-likelihood of class indices under log-probabilities.
///
/// `input` is (C), (N, C) or (N, C, d1, ...); `target` holds int64 class indices shaped (), (N) or
/// (N, d1, ...). The loss of one element is `-weight[t] * input[n, t, ...]`; `kMean` divides the sum
/// by the summed weights of the targets that are not `ignore_index` (NaN when there are none, as
/// PyTorch). Throws when a target is out of [0, C) or the shapes do not match.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossOptions& options = {});

/// Cross entropy between logits and targets: `nll_loss(log_softmax(input, 1), target)`, plus label
/// smoothing as PyTorch defines it.
///
/// `input` holds unnormalised logits, (C), (N, C) or (N, C, d1, ...). `target` is either int64 class
/// indices shaped (), (N) or (N, d1, ...), or class probabilities with the input's shape and dtype.
/// With `label_smoothing` ε the loss is `(1 - ε) · nll + ε/C · Σ_c -weight[c] · log p_c`. Class
/// weights are constants here and in nll_loss: no gradient flows into them.
/// ```cpp
/// Tensor loss = F::cross_entropy(logits, labels);
/// Tensor l2 = F::cross_entropy(logits, labels, {.reduction = F::Reduction::kSum, .label_smoothing = 0.1});
/// ```
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyLossOptions& options = {});

/// Binary cross entropy of `sigmoid(input)` against targets in [0, 1], computed stably from the
/// logits: `(1 - t) x + log_w · (log(1 + exp(-|x|)) + max(-x, 0))` with `log_w = 1 + (pos_weight - 1) t`.
///
/// One recorded operation (`BinaryCrossEntropyWithLogitsBackward0`), differentiable in input and
/// target; `weight` and `pos_weight` are constants.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsLossOptions& options = {});

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

/// Base of the loss modules: they are called with an input and a target, not a single tensor.
class Loss : public Module {
public:
    /// The loss of `input` against `target`.
    virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
    /// `forward(input, target)`, as calling a loss module in Python.
    Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
    /// Throws: a loss needs a target too.
    Tensor forward(const Tensor& input) override;

protected:
    Loss() = default;
};

/// Mean squared error as a module (see functional::mse_loss); prints as `MSELoss()`.
///
/// ```cpp
/// xgrad::nn::MSELoss criterion;
/// Tensor loss = criterion(model(x), y);
/// xgrad::nn::MSELoss summed({.reduction = "sum"});
/// ```
class MSELoss : public Loss {
public:
    /// A loss with the given options (PyTorch's defaults when omitted).
    explicit MSELoss(MSELossOptions options = {}) : options(std::move(options)) {}
    using Loss::forward;
    /// `F::mse_loss(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    MSELossOptions options;  ///< The options given at construction.
};

/// Mean absolute error as a module (see functional::l1_loss); prints as `L1Loss()`.
///
/// ```cpp
/// xgrad::nn::L1Loss criterion;
/// Tensor loss = criterion(pred, y);
/// ```
class L1Loss : public Loss {
public:
    /// A loss with the given options.
    explicit L1Loss(L1LossOptions options = {}) : options(std::move(options)) {}
    using Loss::forward;
    /// `F::l1_loss(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    L1LossOptions options;  ///< The options given at construction.
};

/// Negative log-likelihood as a module (see functional::nll_loss); a class weight is a buffer named
/// `weight`, as in PyTorch's state dict.
///
/// ```cpp
/// xgrad::nn::NLLLoss criterion({.ignore_index = 0});
/// Tensor loss = criterion(F::log_softmax(logits, 1), labels);
/// ```
class NLLLoss : public Loss {
public:
    /// A loss with the given options.
    explicit NLLLoss(NLLLossOptions options = {});
    using Loss::forward;
    /// `F::nll_loss(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    NLLLossOptions options;  ///< The options given at construction.
};

/// Cross entropy as a module (see functional::cross_entropy); a class weight is a buffer named
/// `weight`. Prints as `CrossEntropyLoss()` whatever its options, as PyTorch.
///
/// ```cpp
/// xgrad::nn::CrossEntropyLoss criterion({.label_smoothing = 0.1});
/// Tensor loss = criterion(logits, labels);   // logits (N, C), labels (N) int64
/// loss.backward();
/// ```
class CrossEntropyLoss : public Loss {
public:
    /// A loss with the given options.
    explicit CrossEntropyLoss(CrossEntropyLossOptions options = {});
    using Loss::forward;
    /// `F::cross_entropy(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    CrossEntropyLossOptions options;  ///< The options given at construction.
};

/// Binary cross entropy on logits as a module (see functional::binary_cross_entropy_with_logits);
/// `weight` and `pos_weight` are buffers, as in PyTorch's state dict.
///
/// ```cpp
/// xgrad::nn::BCEWithLogitsLoss criterion({.pos_weight = xgrad::full({3}, 2.0)});
/// Tensor loss = criterion(logits, targets);   // both (N, 3), targets in [0, 1]
/// ```
class BCEWithLogitsLoss : public Loss {
public:
    /// A loss with the given options.
    explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions options = {});
    using Loss::forward;
    /// `F::binary_cross_entropy_with_logits(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    BCEWithLogitsLossOptions options;  ///< The options given at construction.
};

}  // namespace xgrad::nn

// ---- binary cross entropy, smooth L1, Huber and KL divergence -----------------------------------------

namespace xgrad::nn {

/// Options of binary_cross_entropy and BCELoss, in PyTorch's order.
struct BCELossOptions {
    Tensor weight{};  ///< Rescales each element's loss; broadcast to the input's shape.
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-element losses.
};

/// Options of smooth_l1_loss and SmoothL1Loss, in PyTorch's order.
struct SmoothL1LossOptions {
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-element losses.
    double beta = 1.0;  ///< Where the loss turns from quadratic to linear; 0 gives the L1 loss.
};

/// Options of huber_loss and HuberLoss, in PyTorch's order.
struct HuberLossOptions {
    functional::LossReduction reduction = functional::Reduction::kMean;  ///< How to reduce the per-element losses.
    double delta = 1.0;  ///< Where the loss turns from quadratic to linear; must be positive.
};

/// Options of kl_div and KLDivLoss, in PyTorch's order.
struct KLDivLossOptions {
    /// "none", "mean" (over every element, PyTorch's default), "batchmean" (the sum over the first
    /// dimension's size: the KL divergence's definition) or "sum".
    std::string reduction = "mean";
    bool log_target = false;  ///< True when the target holds log-probabilities.
};

}  // namespace xgrad::nn

namespace xgrad::nn::functional {

/// Binary cross entropy between probabilities `input` in [0, 1] and targets:
/// `-weight · (t · log(x) + (1 - t) · log(1 - x))`, each log clamped at -100 as PyTorch.
///
/// One recorded operation (`BinaryCrossEntropyBackward0`), differentiable in input and target; its
/// input gradient is `weight · (x - t) / max(x (1 - x), ε)` with PyTorch's ε (the float 1e-12). Throws PyTorch's
/// "all elements of input should be between 0 and 1" otherwise.
/// ```cpp
/// Tensor loss = F::binary_cross_entropy(model(x).sigmoid(), labels);
/// ```
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BCELossOptions& options = {});

/// Smooth L1 loss: `0.5 d² / beta` where `|d| < beta`, else `|d| - 0.5 beta`, with `d = input - target`.
///
/// One recorded operation (`SmoothL1LossBackward0`); `beta` 0 is the L1 loss, a negative `beta` throws.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossOptions& options = {});

/// Huber loss: `0.5 d²` where `|d| < delta`, else `delta (|d| - 0.5 delta)`, with `d = input - target`.
///
/// One recorded operation (`HuberLossBackward0`); `delta` must be positive.
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& options = {});

/// Kullback-Leibler divergence of `target` from the log-probabilities `input`, pointwise
/// `target · (log(target) - input)` (0 where target is 0), or `exp(target) · (target - input)` with
/// `log_target`, reduced as `options.reduction` says.
///
/// Built from elementwise ops and reductions, as PyTorch 1.13 builds it.
/// ```cpp
/// Tensor kl = F::kl_div(F::log_softmax(student, 1), F::softmax(teacher, 1), {.reduction = "batchmean"});
/// ```
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivLossOptions& options = {});

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

/// Binary cross entropy on probabilities as a module (see functional::binary_cross_entropy); a
/// `weight` is a buffer, as in PyTorch's state dict.
///
/// ```cpp
/// xgrad::nn::BCELoss criterion;
/// Tensor loss = criterion(model(x).sigmoid(), targets);
/// ```
class BCELoss : public Loss {
public:
    /// A loss with the given options.
    explicit BCELoss(BCELossOptions options = {});
    using Loss::forward;
    /// `F::binary_cross_entropy(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    BCELossOptions options;  ///< The options given at construction.
};

/// Smooth L1 loss as a module (see functional::smooth_l1_loss); prints as `SmoothL1Loss()`.
///
/// ```cpp
/// xgrad::nn::SmoothL1Loss criterion({.beta = 0.5});
/// Tensor loss = criterion(boxes, target_boxes);
/// ```
class SmoothL1Loss : public Loss {
public:
    /// A loss with the given options.
    explicit SmoothL1Loss(SmoothL1LossOptions options = {}) : options(std::move(options)) {}
    using Loss::forward;
    /// `F::smooth_l1_loss(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    SmoothL1LossOptions options;  ///< The options given at construction.
};

/// Huber loss as a module (see functional::huber_loss); prints as `HuberLoss()`.
///
/// ```cpp
/// xgrad::nn::HuberLoss criterion({.delta = 2.0});
/// ```
class HuberLoss : public Loss {
public:
    /// A loss with the given options.
    explicit HuberLoss(HuberLossOptions options = {}) : options(std::move(options)) {}
    using Loss::forward;
    /// `F::huber_loss(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    HuberLossOptions options;  ///< The options given at construction.
};

/// KL divergence as a module (see functional::kl_div); prints as `KLDivLoss()`.
///
/// ```cpp
/// xgrad::nn::KLDivLoss criterion({.reduction = "batchmean"});
/// Tensor loss = criterion(F::log_softmax(logits, 1), target_probs);
/// ```
class KLDivLoss : public Loss {
public:
    /// A loss with the given options; throws for an unknown reduction.
    explicit KLDivLoss(KLDivLossOptions options = {});
    using Loss::forward;
    /// `F::kl_div(input, target, options)`.
    Tensor forward(const Tensor& input, const Tensor& target) override;

    KLDivLossOptions options;  ///< The options given at construction.
};

}  // namespace xgrad::nn
