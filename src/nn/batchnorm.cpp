// batch_norm and group_norm (one recorded op each, PyTorch's CPU kernels: kernels::batch_norm_* and
// kernels::group_norm_*), dropout2d, and the BatchNorm1d/2d, GroupNorm and Dropout2d modules.
#include "xgrad/nn/batchnorm.hpp"

#include <sstream>
#include <vector>

#include "detail/format.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/random.hpp"

namespace xgrad::nn {

using detail::fail;
using Grads = detail::GradList;

namespace functional {

namespace {

/// Whether t (N, C, ...) lies in memory as (N, ..., C) without gaps: PyTorch's channels-last layout for
/// 4-D, the dims of size 1 left out of the test.
bool channels_last(const Tensor& t) {
    std::vector<std::int64_t> order;  // fastest first: C, then the spatial dims from the last, then N
    order.push_back(1);
    for (std::int64_t d = t.dim() - 1; d >= 2; --d) order.push_back(d);
    order.push_back(0);
    std::int64_t expected = 1;
    for (const std::int64_t d : order) {
        if (t.size(d) == 1) continue;
        if (t.strides()[static_cast<std::size_t>(d)] != expected) return false;
        expected *= t.size(d);
    }
    return true;
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
    const char* op = "batch_norm";
    detail::check_defined(input, op);
    if (input.dim() < 2) fail(op, "expected input with at least 2 dims (N, C, *), got " + to_string(input.shape()));
    if (!input.is_floating_point()) fail(op, "needs a floating-point input, got " + to_string(input.dtype()));
    const std::int64_t c = input.size(1);
    for (const auto& [t, name] : {std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"},
                                  std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
        if (!t->defined()) continue;
        if (t->numel() != c)
            fail(op, std::string(name) + " should contain " + std::to_string(c) + " elements not " +
                         std::to_string(t->numel()));
        detail::check_same_device(input, *t, op);
    }
    if (!training && (!running_mean.defined() || !running_var.defined()))
        fail(op, "running_mean and running_var must be defined when not training");
    if (training && input.numel() / std::max<std::int64_t>(c, 1) <= 1) {
        std::ostringstream size;  // PyTorch prints it as torch.Size([1, 3])
        size << input.shape();
        fail(op, "Expected more than 1 value per channel when training, got input size " + size.str());
    }
    // A channels-last 4-D input (a permuted (N, H, W, C) tensor): PyTorch 1.13 runs its channels-last
    // kernels, which are its (N, C) kernels on the (N·H·W, C) rows that the memory holds (image size 1),
    // and returns a channels-last result. So does xgrad: the rows are a view, and so is the result.
    // (PyTorch's backward takes them when the gradient is channels-last too, as it is after elementwise
    // ops on the result; a 5-D channels-last-3d input goes to its element-by-element kernels.)
    if (input.dim() == 4 && !input.is_contiguous() && channels_last(input)) {
        std::vector<std::int64_t> to_last{0}, back{0, input.dim() - 1};
        for (std::int64_t d = 2; d < input.dim(); ++d) to_last.push_back(d);
        to_last.push_back(1);
        for (std::int64_t d = 1; d < input.dim() - 1; ++d) back.push_back(d);
        const Tensor last = input.permute(Dims(to_last));
        const Tensor y =
            batch_norm(last.reshape({-1, c}), running_mean, running_var, weight, bias, training, momentum, eps);
        return y.view(last.shape()).permute(Dims(back));
    }
    // PyTorch's CPU kernel on a contiguous input (kernels::batch_norm_forward); running statistics and
    // parameters of another dtype or layout go through copies in the input's dtype.
    const DType dt = input.dtype();
    const Device dev = input.device();
    const Tensor x = input.detach().contiguous();
    auto as_input = [&](const Tensor& t) { return t.defined() ? t.detach().to(dt).contiguous() : Tensor(); };
    const Tensor w = as_input(weight), b = as_input(bias);
    auto stats_copy = [&](const Tensor& t) {
        if (!t.defined()) return Tensor();
        return t.dtype() == dt && t.is_contiguous() ? t : t.detach().to(dt).contiguous();
    };
    const Tensor rm = stats_copy(running_mean), rv = stats_copy(running_var);
    Tensor out = detail::make_empty(x.shape(), dt, dev);
    Tensor save_mean = detail::make_empty(Shape{c}, dt, dev), save_invstd = detail::make_empty(Shape{c}, dt, dev);
    {
        NoGradGuard no_grad;
        kernels::batch_norm_forward(x, w, b, rm, rv, training, momentum, eps, out, save_mean, save_invstd);
        // The running statistics changed in place: copied back, or their version moved on as an in-place op's.
        for (const auto& [stat, copy] : {std::pair{&running_mean, &rm}, std::pair{&running_var, &rv}}) {
            if (!training || !copy->defined()) continue;
            if (copy->impl() != stat->impl())
                Tensor(*stat).copy_(*copy);
            else
                detail::bump_version(*stat);
        }
    }
    // In evaluation the kernel's save_mean is the running mean; the backward takes 1 / sqrt(var + eps) of
    // the running variance again, in double as PyTorch's backward does.
    if (!training) save_invstd = rv.clone();
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    detail::record(
        out, "NativeBatchNormBackward0", {&input, &weight, &bias},
        [sx = detail::Saved(x), sw = detail::Saved(w), save_mean, save_invstd, training, eps,
         wshape = weight.defined() ? weight.shape() : Shape{c},
         wtype = weight.defined() ? weight.dtype() : dt](const Tensor& grad, const detail::NeedsGrad& need) {
            const Tensor &x = sx, &w = sw;
            const Tensor g = grad.contiguous();
            Tensor dx = need[0] ? detail::make_empty(x.shape(), x.dtype(), x.device()) : Tensor();
            Tensor dw = need[1] ? detail::make_empty(Shape{save_mean.numel()}, x.dtype(), x.device()) : Tensor();
            Tensor db = need[2] ? detail::make_empty(Shape{save_mean.numel()}, x.dtype(), x.device()) : Tensor();
            kernels::batch_norm_backward(g, x, w, save_mean, save_invstd, training, eps, dx, dw, db);
            Grads r(3);
            r[0] = dx;
            if (need[1]) r[1] = dw.view(wshape).to(wtype);
            if (need[2]) r[2] = db.view(wshape).to(wtype);
            return r;
        });
    return out;
}

Tensor group_norm(const Tensor& input, std::int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
    const char* op = "group_norm";
    detail::check_defined(input, op);
    if (input.dim() < 2) fail(op, "expected input with at least 2 dims (N, C, *), got " + to_string(input.shape()));
    const std::int64_t n = input.size(0), c = input.size(1);
    if (num_groups <= 0 || c % num_groups != 0) {
        fail(op, "Expected number of channels in input to be divisible by num_groups, but got input of shape " +
                     detail::size_list(input.shape()) + " and num_groups=" + std::to_string(num_groups));
    }
    for (const Tensor* t : {&weight, &bias})
        if (t->defined() && (t->dim() != 1 || t->numel() != c))
            fail(op, "Expected weight and bias to be 1-dimensional with " + std::to_string(c) +
                         " elements, but got shape " + to_string(t->shape()));
    if (!input.is_floating_point()) fail(op, "needs a floating-point input, got " + to_string(input.dtype()));
    // PyTorch's CPU kernel on a contiguous input (kernels::group_norm_forward).
    const DType dt = input.dtype();
    const Device dev = input.device();
    const Tensor x = input.detach().contiguous();
    auto as_input = [&](const Tensor& t) {
        if (t.defined()) detail::check_same_device(input, t, op);
        return t.defined() ? t.detach().to(dt).contiguous() : Tensor();
    };
    const Tensor w = as_input(weight), b = as_input(bias);
    Tensor out = detail::make_empty(x.shape(), dt, dev);
    Tensor mean = detail::make_empty(Shape{n * num_groups}, dt, dev),
           rstd = detail::make_empty(Shape{n * num_groups}, dt, dev);
    kernels::group_norm_forward(x, w, b, num_groups, eps, out, mean, rstd);
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    detail::record(out, "NativeGroupNormBackward0", {&input, &weight, &bias},
                   [sx = detail::Saved(x), sw = detail::Saved(w), mean, rstd, num_groups, c,
                    wtype = weight.defined() ? weight.dtype() : dt,
                    btype = bias.defined() ? bias.dtype() : dt](const Tensor& grad, const detail::NeedsGrad& need) {
                       const Tensor &x = sx, &w = sw;
                       const Tensor g = grad.contiguous();
                       Tensor dx = need[0] ? detail::make_empty(x.shape(), x.dtype(), x.device()) : Tensor();
                       Tensor dw = need[1] ? detail::make_empty(Shape{c}, x.dtype(), x.device()) : Tensor();
                       Tensor db = need[2] ? detail::make_empty(Shape{c}, x.dtype(), x.device()) : Tensor();
                       kernels::group_norm_backward(g, x, w, mean, rstd, num_groups, dx, dw, db);
                       Grads r(3);
                       r[0] = dx;
                       if (need[1]) r[1] = dw.to(wtype);
                       if (need[2]) r[2] = db.to(btype);
                       return r;
                   });
    return out;
}

Tensor dropout2d(const Tensor& input, double p, bool training, Generator* gen) {
    detail::check_defined(input, "dropout2d");
    if (p < 0 || p > 1)
        fail("dropout2d", "dropout probability has to be between 0 and 1, but got " + python_float_repr(p));
    if (input.dim() < 2)
        fail("dropout2d",
             "Feature dropout requires at least 2 dimensions in the input, got " + to_string(input.shape()));
    if (!training || p == 0 || input.numel() == 0) return input;
    if (p == 1) return input * zeros(Shape{}, FactoryOptions(input.dtype()).device(input.device()));
    // PyTorch's _dropout_impl with feature_dropout: noise of shape (N, C, 1, ...) from bernoulli_(1 - p),
    // divided by 1 - p, times the input.
    std::vector<std::int64_t> ns(static_cast<std::size_t>(input.dim()), 1);
    ns[0] = input.size(0);
    ns[1] = input.size(1);
    Tensor noise = empty(Shape(ns), FactoryOptions(input.dtype()).device(input.device()));
    bernoulli_(noise, 1 - p, gen);
    noise.div_(1 - p);
    return input * noise;
}

}  // namespace functional

// ---- modules -------------------------------------------------------------------------------------------

BatchNormBase::BatchNormBase(std::int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                             bool track_running_stats)
    : num_features_(num_features), eps_(eps), momentum_(momentum), affine_(affine), track_(track_running_stats) {
    if (num_features < 0) fail("BatchNorm", "num_features must be non-negative, got " + std::to_string(num_features));
    if (affine) {
        weight = empty({num_features});
        bias = empty({num_features});
        register_parameter("weight", weight);
        register_parameter("bias", bias);
    }
    if (track_running_stats) {
        running_mean = zeros({num_features});
        running_var = ones({num_features});
        num_batches_tracked = zeros({}, kInt64);
        register_buffer("running_mean", running_mean);
        register_buffer("running_var", running_var);
        register_buffer("num_batches_tracked", num_batches_tracked);
    }
    initialize_parameters();
}

void BatchNormBase::reset_parameters() {
    NoGradGuard no_grad;
    if (track_) {
        running_mean.zero_();
        running_var.fill_(1.0);
        num_batches_tracked.zero_();
    }
    if (affine_) {
        weight.fill_(1.0);
        bias.zero_();
    }
}

Tensor BatchNormBase::forward(const Tensor& input) {
    check_input_dim(input);
    double factor = momentum_.value_or(0.0);
    if (is_training() && track_) {
        NoGradGuard no_grad;
        num_batches_tracked.add_(1.0);
        if (!momentum_) factor = 1.0 / static_cast<double>(num_batches_tracked.item<std::int64_t>());
    }
    // Batch statistics in training mode, and in eval mode when no running statistics are kept.
    const bool use_batch = is_training() || !track_;
    return functional::batch_norm(input, use_batch && !is_training() ? Tensor() : running_mean,
                                  use_batch && !is_training() ? Tensor() : running_var, weight, bias, use_batch, factor,
                                  eps_);
}

std::string BatchNormBase::extra_repr() const {
    return std::to_string(num_features_) + ", eps=" + python_float_repr(eps_) +
           ", momentum=" + (momentum_ ? python_float_repr(*momentum_) : "None") +
           ", affine=" + (affine_ ? "True" : "False") + ", track_running_stats=" + (track_ ? "True" : "False");
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
    detail::check_defined(input, "BatchNorm1d");
    if (input.dim() != 2 && input.dim() != 3)
        fail("BatchNorm1d", "expected 2D or 3D input (got " + std::to_string(input.dim()) + "D input)");
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
    detail::check_defined(input, "BatchNorm2d");
    if (input.dim() != 4) fail("BatchNorm2d", "expected 4D input (got " + std::to_string(input.dim()) + "D input)");
}

GroupNorm::GroupNorm(std::int64_t num_groups, std::int64_t num_channels, double eps, bool affine)
    : groups_(num_groups), channels_(num_channels), eps_(eps) {
    if (num_groups <= 0 || num_channels % num_groups != 0)
        fail("GroupNorm", "num_channels must be divisible by num_groups");
    if (affine) {
        weight = empty({num_channels});
        bias = empty({num_channels});
        register_parameter("weight", weight);
        register_parameter("bias", bias);
    }
    initialize_parameters();
}

void GroupNorm::reset_parameters() {
    NoGradGuard no_grad;
    if (weight.defined()) weight.fill_(1.0);
    if (bias.defined()) bias.zero_();
}

Tensor GroupNorm::forward(const Tensor& input) {
    return functional::group_norm(input, groups_, weight, bias, eps_);
}

std::string GroupNorm::extra_repr() const {
    return std::to_string(groups_) + ", " + std::to_string(channels_) + ", eps=" + python_float_repr(eps_) +
           ", affine=" + (weight.defined() ? "True" : "False");
}

Dropout2d::Dropout2d(double p) : p_(p) {
    if (p < 0 || p > 1)
        fail("Dropout2d", "dropout probability has to be between 0 and 1, but got " + python_float_repr(p));
}

Tensor Dropout2d::forward(const Tensor& input) {
    return functional::dropout2d(input, p_, is_training());
}

std::string Dropout2d::extra_repr() const {
    return "p=" + python_float_repr(p_) + ", inplace=False";
}

}  // namespace xgrad::nn
