// Batch and group normalisation (BatchNorm1d/2d, GroupNorm) and channel dropout (Dropout2d).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xgrad/nn/module.hpp"

namespace xgrad {
class Generator;
}

namespace xgrad::nn {

namespace functional {

/// Batch normalisation over dim 1 of input (N, C, *), as `torch.nn.functional.batch_norm`.
///
/// In `training`, normalises with the batch's mean and biased variance and, when the running
/// statistics are defined, updates them in place: `running = (1 - momentum)·running + momentum·stat`,
/// with the unbiased variance, as PyTorch does. Otherwise normalises with the running statistics.
/// One recorded operation (`NativeBatchNormBackward0`). On the CPU the forward, the backward and the
/// running statistics are PyTorch 1.13's bits where the CPU has FMA (its CPU kernels, one thread's
/// order at any thread count; see "The same numbers, to the last bit" in docs/from_pytorch.md).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
/// Group normalisation of input (N, C, *) over `num_groups` groups of channels, then a per-channel
/// affine transform, as `torch.nn.functional.group_norm`. One recorded operation
/// (`NativeGroupNormBackward0`); on the CPU, PyTorch 1.13's bits where the CPU has FMA (its CPU kernel;
/// see "The same numbers, to the last bit" in docs/from_pytorch.md).
Tensor group_norm(const Tensor& input, std::int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
/// Zeroes whole channels of input (N, C, H, W), or (N, C, L) as PyTorch 1.13 treats 3-D input, with
/// probability `p` and scales the rest by 1/(1 - p) when `training`; the mask (N, C, 1, 1) is drawn
/// as PyTorch's CPU feature_dropout draws it (`bernoulli_(1 - p)`).
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true, Generator* gen = nullptr);

}  // namespace functional

/// What BatchNorm1d and BatchNorm2d share: the parameters, the running statistics and the forward.
class BatchNormBase : public Module {
public:
    /// Applies batch normalisation (batch statistics in training mode, running ones in eval mode).
    Tensor forward(const Tensor& input) override;
    /// `3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True`.
    std::string extra_repr() const override;
    /// Ones for the weight, zeros for the bias, and fresh running statistics.
    void reset_parameters() override;

    Tensor weight;               ///< (num_features), ones at start; undefined without affine.
    Tensor bias;                 ///< (num_features), zeros at start; undefined without affine.
    Tensor running_mean;         ///< (num_features) buffer; undefined without track_running_stats.
    Tensor running_var;          ///< (num_features) buffer; undefined without track_running_stats.
    Tensor num_batches_tracked;  ///< int64 scalar buffer counting training forwards.

protected:
    /// Registers the parameters and buffers under PyTorch's names.
    BatchNormBase(std::int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                  bool track_running_stats);
    /// Throws unless `input` has a dimension this layer accepts.
    virtual void check_input_dim(const Tensor& input) const = 0;

private:
    std::int64_t num_features_;
    double eps_;
    std::optional<double> momentum_;
    bool affine_, track_;
};

/// `torch.nn.BatchNorm1d` for input (N, C) or (N, C, L).
///
/// ```cpp
/// xgrad::nn::BatchNorm1d bn(16);
/// bn.eval();   // from now on normalises with running_mean and running_var
/// ```
class BatchNorm1d : public BatchNormBase {
public:
    /// Normalises `num_features` channels; `momentum` nullopt is PyTorch's None (cumulative average).
    explicit BatchNorm1d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true)
        : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}

protected:
    /// Accepts 2-D and 3-D input.
    void check_input_dim(const Tensor& input) const override;
};

/// `torch.nn.BatchNorm2d` for input (N, C, H, W).
///
/// ```cpp
/// xgrad::nn::Sequential block(xgrad::nn::Conv2d(3, 8, 3), xgrad::nn::BatchNorm2d(8), xgrad::nn::ReLU());
/// ```
class BatchNorm2d : public BatchNormBase {
public:
    /// Normalises `num_features` channels; `momentum` nullopt is PyTorch's None (cumulative average).
    explicit BatchNorm2d(std::int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true)
        : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}

protected:
    /// Accepts 4-D input.
    void check_input_dim(const Tensor& input) const override;
};

/// `torch.nn.GroupNorm`: normalises groups of channels of (N, C, *) per sample.
///
/// ```cpp
/// xgrad::nn::GroupNorm gn(2, 6);   // 6 channels in 2 groups of 3
/// ```
class GroupNorm : public Module {
public:
    /// `num_channels` in `num_groups` groups, with a per-channel affine transform unless `affine` is false.
    GroupNorm(std::int64_t num_groups, std::int64_t num_channels, double eps = 1e-5, bool affine = true);
    /// Normalises `input`.
    Tensor forward(const Tensor& input) override;
    /// `2, 6, eps=1e-05, affine=True`.
    std::string extra_repr() const override;
    /// Ones for the weight, zeros for the bias.
    void reset_parameters() override;

    Tensor weight;  ///< (num_channels), ones at start; undefined without affine.
    Tensor bias;    ///< (num_channels), zeros at start; undefined without affine.

private:
    std::int64_t groups_, channels_;
    double eps_;
};

/// `torch.nn.Dropout2d`: zeroes whole channels with probability `p` in training mode.
///
/// ```cpp
/// xgrad::nn::Dropout2d drop(0.2);
/// ```
class Dropout2d : public Module {
public:
    /// Channel dropout with probability `p`.
    explicit Dropout2d(double p = 0.5);
    /// Applies channel dropout in training mode; returns the input in eval mode.
    Tensor forward(const Tensor& input) override;
    /// `p=0.5, inplace=False`.
    std::string extra_repr() const override;

private:
    double p_;
};

}  // namespace xgrad::nn
