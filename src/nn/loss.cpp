// Losses and softmaxes: each forward beside its backward, checked against PyTorch in test_nn_loss.
#include "xgrad/nn/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "detail/kernels.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"

namespace xgrad::nn::functional {

using detail::fail;
using detail::NeedsGrad;
using Grads = detail::GradList;

LossReduction::LossReduction(const char* name) {
    std::string s = name ? name : "";
    if (s == "none")
        value_ = Reduction::kNone;
    else if (s == "mean")
        value_ = Reduction::kMean;
    else if (s == "sum")
        value_ = Reduction::kSum;
    else
        fail("reduction", "\"" + s + "\" is not a valid value for reduction (expected \"none\", \"mean\" or \"sum\")");
}

std::string to_string(Reduction reduction) {
    switch (reduction) {
        case Reduction::kNone:
            return "none";
        case Reduction::kMean:
            return "mean";
        case Reduction::kSum:
            return "sum";
    }
    return "?";
}

namespace {

std::string shape_of(const Tensor& t) {
    return to_string(t.shape());
}

Tensor reduce(const Tensor& loss, Reduction reduction) {
    switch (reduction) {
        case Reduction::kNone:
            return loss;
        case Reduction::kMean:
            return loss.mean();
        case Reduction::kSum:
            return loss.sum();
    }
    return loss;
}

/// Element-wise losses compare tensors of one shape; PyTorch only warns when they differ and then
/// broadcasts, which is nearly always a bug in the caller, so xgrad refuses.
void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
    detail::check_defined(input, op);
    detail::check_defined(target, op);
    if (input.shape() != target.shape())
        fail(op, "target of shape " + shape_of(target) + " must have the input's shape " + shape_of(input));
}

/// `weight` (or `pos_weight`) must broadcast to the input's shape without growing it.
void check_broadcasts_to(const Tensor& w, const Tensor& input, const char* what, const char* op) {
    if (!w.defined()) return;
    bool ok = w.dim() <= input.dim();
    for (std::int64_t i = 1; ok && i <= w.dim(); ++i) ok = w.size(-i) == 1 || w.size(-i) == input.size(-i);
    if (!ok)
        fail(op, std::string(what) + " of shape " + shape_of(w) + " does not broadcast to the input's shape " +
                     shape_of(input));
}

/// A class-index problem seen as input (N, C, L): N samples, C classes, L positions per sample.
struct ClassLayout {
    std::int64_t n, c, l;
};

/// Checks input (C) / (N, C) / (N, C, d1, ...) against int64 target () / (N) / (N, d1, ...) and a
/// per-class weight; names `op` and the shapes in every error.
ClassLayout check_class_target(const Tensor& input, const Tensor& target, const Tensor& weight, const char* op) {
    detail::check_defined(input, op);
    detail::check_defined(target, op);
    if (!input.is_floating_point()) fail(op, "input must be floating-point, got " + to_string(input.dtype()));
    if (input.dim() == 0) fail(op, "input must have a class dimension: (C), (N, C) or (N, C, d1, ...), got shape ()");
    if (target.dtype() != kInt64)
        fail(op, "target must hold int64 class indices, got " + to_string(target.dtype()) + " of shape " +
                     shape_of(target) + " for input of shape " + shape_of(input));
    std::vector<std::int64_t> expected;
    for (std::int64_t d = 0; d < input.dim(); ++d)
        if (d != (input.dim() == 1 ? 0 : 1)) expected.push_back(input.size(d));
    if (target.shape() != Shape(expected))
        fail(op, "input of shape " + shape_of(input) + " needs a target of shape " + to_string(Shape(expected)) +
                     ", got " + shape_of(target));
    ClassLayout lay{input.dim() == 1 ? 1 : input.size(0), input.dim() == 1 ? input.size(0) : input.size(1), 1};
    for (std::int64_t d = 2; d < input.dim(); ++d) lay.l *= input.size(d);
    if (weight.defined() && (weight.dim() != 1 || weight.size(0) != lay.c))
        fail(op, "weight of shape " + shape_of(weight) + " must hold one value per class, shape " +
                     to_string(Shape{lay.c}));
    return lay;
}

/// The class weight shaped to broadcast along the class dimension: (C) or (1, C, 1, ...).
Tensor class_weight_view(const Tensor& weight, const Tensor& input) {
    if (input.dim() == 1) return weight;
    std::vector<std::int64_t> s(static_cast<std::size_t>(input.dim()), 1);
    s[1] = weight.size(0);
    return weight.reshape(Shape(s));
}

/// nll_loss proper, with `op` naming the caller in errors. input (N, C, L) log-probabilities.
///
/// The picking of each target's log-probability is the device's nll_loss kernels, forward and
/// backward: no host loop, and no copies to the CPU for a loss on another device.
Tensor nll_impl(const Tensor& input, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                Reduction reduction, const char* op) {
    const ClassLayout lay = check_class_target(input, target, weight, op);
    detail::check_same_device(input, target, op);
    if (weight.defined()) detail::check_same_device(input, weight, op);
    const std::int64_t n = lay.n, c = lay.c, l = lay.l;
    const DType dt = input.dtype();
    const Device device = input.device();
    const bool reduce = reduction != Reduction::kNone, mean = reduction == Reduction::kMean;
    Tensor x = input.detach().contiguous().view(Shape{n, c, l});
    Tensor t = target.contiguous();
    Tensor w = weight.defined() ? weight.detach().to(dt).contiguous() : Tensor();

    // PyTorch: (C) and (N, C) go through nll_loss; others through nll_loss2d on an (N, C, 1, L) view,
    // whose unreduced (N, 1, L) result is viewed back to the target's shape except for 4-D input.
    const bool two_d = input.dim() > 2;
    const bool view_back = reduction == Reduction::kNone && (input.dim() == 3 || input.dim() > 4);
    Shape out_shape = reduce ? Shape{} : view_back ? Shape{n, l} : target.shape();
    Tensor out = detail::make_empty(out_shape, dt, device, op);
    Tensor total = reduce ? detail::make_empty(Shape{}, kFloat64, device, op) : Tensor();
    const std::int64_t bad = kernels::nll_loss_forward(x, t, w, ignore_index, reduce, mean, out, total);
    if (bad >= 0)
        fail(op, "target " + std::to_string(t.to(kCPU).data_ptr<std::int64_t>()[bad]) + " is out of bounds for " +
                     std::to_string(c) + " classes (input of shape " + shape_of(input) + ")");

    if (detail::needs_grad({&input})) {
        detail::record(out, two_d ? "NllLoss2DBackward0" : "NllLossBackward0", {&input},
                       [st = detail::Saved(t), w, total, ignore_index, reduce, mean, n, c, l, shape = input.shape(), dt,
                        device](const Tensor& grad, const NeedsGrad&) {
                           Tensor gi = zeros(Shape{n, c, l}, FactoryOptions(dt).device(device));
                           kernels::nll_loss_backward(grad.contiguous(), st, w, ignore_index, reduce, mean, total, gi);
                           return Grads{gi.view(shape)};
                       });
    }
    return view_back ? out.view(target.shape()) : out;
}

/// `s / count` recorded as PyTorch records a division by an integer scalar (DivBackward1).
Tensor div_by_count(const Tensor& s, double count) {
    Tensor out;
    {
        NoGradGuard no_grad;
        out = s / count;
    }
    if (detail::needs_grad({&s}))
        detail::record(out, "DivBackward1", {&s},
                       [count](const Tensor& g, const NeedsGrad&) { return Grads{g / count}; });
    return out;
}

/// `t * s` recorded as PyTorch's C++ records a product with a Scalar (mul.Scalar, MulBackward1). Its
/// forward rounds s to t's dtype; its backward multiplies by scalar_to_tensor(s), a 0-d float64 tensor,
/// so a 0-d gradient (of a reduced loss) is multiplied by s in double and rounded back, where s's float
/// rounding would give other bits (label smoothing's 0.9 and 0.025).
Tensor mul_by_scalar(const Tensor& t, double s) {
    Tensor out;
    {
        NoGradGuard no_grad;
        out = t * s;
    }
    if (detail::needs_grad({&t}))
        detail::record(out, "MulBackward1", {&t}, [s, dt = t.dtype()](const Tensor& g, const NeedsGrad&) {
            return Grads{g.dim() == 0 && g.is_floating_point() ? (g.to(kFloat64) * s).to(dt) : g * s};
        });
    return out;
}

/// Cross entropy against class probabilities shaped like the input (PyTorch's soft-target form).
Tensor cross_entropy_probs(const Tensor& input, const Tensor& target, const nn::CrossEntropyLossOptions& o) {
    const char* op = "cross_entropy";
    if (!target.is_floating_point())
        fail(op, "a target shaped like the input " + shape_of(input) +
                     " holds class probabilities and must be "
                     "floating-point, got " +
                     to_string(target.dtype()));
    if (o.ignore_index >= 0) fail(op, "ignore_index is not supported for class-probability targets");
    const std::int64_t class_dim = input.dim() == 1 ? 0 : 1;
    const std::int64_t c = input.size(class_dim);
    if (o.weight.defined() && (o.weight.dim() != 1 || o.weight.size(0) != c))
        fail(op,
             "weight of shape " + shape_of(o.weight) + " must hold one value per class, shape " + to_string(Shape{c}));
    Tensor logp = log_softmax(input, class_dim);
    Tensor tgt =
        o.label_smoothing > 0 ? target * (1 - o.label_smoothing) + o.label_smoothing / static_cast<double>(c) : target;
    Tensor prod = logp * tgt;
    if (o.weight.defined()) prod = prod * class_weight_view(o.weight.detach().to(input.dtype()), input);
    switch (o.reduction.value()) {
        case Reduction::kNone:
            return -prod.sum(class_dim);
        case Reduction::kSum:
            return -prod.sum();
        case Reduction::kMean:
            return div_by_count(-prod.sum(), static_cast<double>(input.numel() / c));
    }
    return Tensor();
}

}  // namespace

// ---- softmax ----------------------------------------------------------------------------------------

namespace {

/// Softmax or log_softmax along `dim` through the fused row kernels: the dim is moved last (a
/// copy only when it is not already last and contiguous), and the result comes back in `input`'s shape.
/// softmax_impl over dim d of input, not its last, where the device has a kernel for that layout:
/// input seen as (outer, size(d), inner), without a transpose (the CPU's: PyTorch's bits).
Tensor softmax_inner(const Tensor& input, std::int64_t d, bool log) {
    const std::int64_t size = input.size(d);
    std::int64_t inner = 1;
    for (std::int64_t k = d + 1; k < input.dim(); ++k) inner *= input.size(k);
    Tensor out;
    {
        NoGradGuard no_grad;
        const Tensor x = input.detach().contiguous();
        out = detail::make_empty(x.shape(), x.dtype(), x.device());
        kernels::softmax_inner(x, out, size, inner, log);
    }
    if (detail::needs_grad({&input}))
        detail::record(out, log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&input},
                       [out_ = detail::Saved(out), size, inner, log](const Tensor& g, const NeedsGrad&) {
                           const Tensor o = out_, gc = g.contiguous();
                           Tensor dx = detail::make_empty(o.shape(), o.dtype(), o.device());
                           kernels::softmax_backward_inner(gc, o, dx, size, inner, log);
                           return Grads{dx};
                       });
    return out;
}

Tensor softmax_impl(const Tensor& input, std::int64_t dim, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    detail::check_defined(input, op);
    if (!input.is_floating_point()) fail(op, "needs a floating-point tensor, got " + to_string(input.dtype()));
    const std::int64_t d = detail::wrap_dim(dim, std::max<std::int64_t>(input.dim(), 1), op);
    const bool last = input.dim() == 0 || d == input.dim() - 1;
    if (!last && kernels::has_softmax_inner(input.device())) return softmax_inner(input, d, log);
    // (..., width) rows with the softmax dim last.
    auto to_rows = [d, last](const Tensor& t) { return last ? t.contiguous() : t.transpose(d, -1).contiguous(); };
    auto from_rows = [d, last](const Tensor& t) { return last ? t : t.transpose(d, -1).contiguous(); };
    Tensor out;
    {
        NoGradGuard no_grad;
        Tensor x = to_rows(input.detach());
        Tensor y = detail::make_empty(x.shape(), x.dtype(), x.device());
        kernels::softmax_rows(x, y, log);
        out = from_rows(y);
    }
    if (detail::needs_grad({&input}))
        detail::record(out, log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&input},
                       [out_ = detail::Saved(out), to_rows, from_rows, log](const Tensor& g, const NeedsGrad&) {
                           Tensor o = to_rows(out_), gr = to_rows(g);
                           Tensor dx = detail::make_empty(o.shape(), o.dtype(), o.device());
                           kernels::softmax_backward_rows(gr, o, dx, log);
                           return Grads{from_rows(dx)};
                       });
    return out;
}

}  // namespace

Tensor log_softmax(const Tensor& input, std::int64_t dim) {
    return softmax_impl(input, dim, /*log=*/true);
}

Tensor softmax(const Tensor& input, std::int64_t dim) {
    return softmax_impl(input, dim, /*log=*/false);
}

// ---- regression losses --------------------------------------------------------------------------------

Tensor mse_loss(const Tensor& input, const Tensor& target, const nn::MSELossOptions& options) {
    check_same_shape(input, target, "mse_loss");
    const Reduction reduction = options.reduction;
    Tensor diff, out;
    {
        NoGradGuard no_grad;
        diff = input - target;
        if (!diff.is_floating_point()) fail("mse_loss", "needs floating-point tensors, got " + to_string(diff.dtype()));
        out = reduce(diff * diff, reduction);
    }
    if (detail::needs_grad({&input, &target}))
        detail::record(out, "MseLossBackward0", {&input, &target},
                       [diff, reduction, di = input.dtype(), dt = target.dtype()](const Tensor& g, const NeedsGrad& n) {
                           // d/dinput = 2 (input - target) / numel for the mean; the target's is its negative.
                           const double norm =
                               reduction == Reduction::kMean ? 2.0 / static_cast<double>(diff.numel()) : 2.0;
                           // Contiguous, as PyTorch's grad_input (zeros_like, contiguous format): an expanded
                           // input then sums its gradient in PyTorch's order.
                           Tensor gi = (diff * norm * g).contiguous();
                           return Grads{n[0] ? gi.to(di) : Tensor(), n[1] ? gi.neg().to(dt) : Tensor()};
                       });
    return out;
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const nn::L1LossOptions& options) {
    check_same_shape(input, target, "l1_loss");
    return reduce((input - target).abs(), options.reduction);
}

// ---- classification losses ----------------------------------------------------------------------------

Tensor nll_loss(const Tensor& input, const Tensor& target, const nn::NLLLossOptions& options) {
    return nll_impl(input, target, options.weight, options.ignore_index, options.reduction, "nll_loss");
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const nn::CrossEntropyLossOptions& options) {
    const char* op = "cross_entropy";
    detail::check_defined(input, op);
    detail::check_defined(target, op);
    const double eps = options.label_smoothing;
    if (!(eps >= 0.0 && eps <= 1.0))
        fail(op, "label_smoothing must be between 0.0 and 1.0, got " + nn::python_float_repr(eps));
    if (input.dim() == 0) fail(op, "input must have a class dimension: (C), (N, C) or (N, C, d1, ...), got shape ()");
    // As PyTorch: a target of the input's own shape holds class probabilities.
    if (target.shape() == input.shape()) return cross_entropy_probs(input, target, options);
    const ClassLayout lay = check_class_target(input, target, options.weight, op);
    const Reduction reduction = options.reduction;
    const std::int64_t class_dim = input.dim() == 1 ? 0 : 1;
    Tensor logp = log_softmax(input, class_dim);
    Tensor nll = nll_impl(logp, target, options.weight, options.ignore_index, reduction, op);
    if (eps == 0.0) return nll;

    // Label smoothing (PyTorch's cross_entropy_loss_label_smoothing, op for op, on the input's device):
    // the uniform part of the target costs Σ_c -weight[c] log p_c per element, zero where the target is
    // ignored; its mean divides by the kept targets' count, or by their summed class weights.
    const Tensor ignored = target.eq(static_cast<double>(options.ignore_index));
    const Tensor weight = options.weight.defined() ? options.weight.detach().to(input.dtype()) : Tensor();
    Tensor smooth = weight.defined() ? -(logp * class_weight_view(weight, input)).sum(class_dim) : -logp.sum(class_dim);
    smooth = smooth.masked_fill(ignored, 0.0);
    Tensor ret = smooth;
    if (reduction == Reduction::kSum) {
        ret = smooth.sum();
    } else if (reduction == Reduction::kMean) {
        const Tensor kept = ignored.logical_not();
        ret = smooth.sum() /
              (weight.defined() ? weight.gather(0, target.masked_select(kept).flatten()).sum() : kept.sum());
    }
    return mul_by_scalar(nll, 1.0 - eps) + mul_by_scalar(ret, eps / static_cast<double>(lay.c));
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const nn::BCEWithLogitsLossOptions& options) {
    const char* op = "binary_cross_entropy_with_logits";
    check_same_shape(input, target, op);
    if (!input.is_floating_point() || !target.is_floating_point())
        fail(op, "input and target must be floating-point, got " + to_string(input.dtype()) + " and " +
                     to_string(target.dtype()));
    check_broadcasts_to(options.weight, input, "weight", op);
    check_broadcasts_to(options.pos_weight, input, "pos_weight", op);
    const Reduction reduction = options.reduction;
    Tensor x = input.detach(), t = target.detach();
    Tensor w = options.weight.defined() ? options.weight.detach() : Tensor();
    Tensor pw = options.pos_weight.defined() ? options.pos_weight.detach() : Tensor();
    Tensor out;
    {
        NoGradGuard no_grad;
        // log(1 + exp(-x)) = max(-x, 0) + log(exp(-max) + exp(-x - max)): no exp of a large positive.
        Tensor max_val = (-x).clamp(0.0);
        Tensor log_term = ((-max_val).exp() + (-x - max_val).exp()).log();
        Tensor loss = pw.defined() ? (1.0 - t) * x + ((pw - 1.0) * t + 1.0) * (log_term + max_val)
                                   : (1.0 - t) * x + max_val + log_term;
        if (w.defined()) loss = loss * w;
        out = reduce(loss, reduction);
    }
    if (detail::needs_grad({&input, &target}))
        detail::record(out, "BinaryCrossEntropyWithLogitsBackward0", {&input, &target},
                       [sx = detail::Saved(x), st = detail::Saved(t), sw = detail::Saved(w), spw = detail::Saved(pw),
                        reduction](const Tensor& g, const NeedsGrad& n) {
                           const Tensor &x = sx, &t = st, &w = sw, &pw = spw;
                           auto finish = [&](Tensor r, DType dt) {
                               if (w.defined()) r = r * w;
                               if (reduction == Reduction::kMean) r = r / static_cast<double>(x.numel());
                               return r.to(dt);
                           };
                           Grads r(2);
                           if (n[0]) {
                               // σ(x)(1 + (pw - 1) t) - pw t, times the incoming gradient.
                               Tensor gi = pw.defined() ? ((pw * t + 1.0 - t) * x.sigmoid() - pw * t) * g
                                                        : (x.sigmoid() - t) * g;
                               r[0] = finish(gi, x.dtype());
                           }
                           if (n[1]) {
                               // PyTorch's (log σ(-x) - log σ(x) pw) g, its log σ being logsigmoid's kernel.
                               Tensor gt = pw.defined() ? (logsigmoid(-x) - logsigmoid(x) * pw) * g : -x * g;
                               r[1] = finish(gt, t.dtype());
                           }
                           return r;
                       });
    return out;
}

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

namespace F = functional;

Tensor Loss::forward(const Tensor&) {
    detail::fail(name().c_str(), "a loss takes an input and a target: call loss(input, target)");
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
    return F::mse_loss(input, target, options);
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
    return F::l1_loss(input, target, options);
}

NLLLoss::NLLLoss(NLLLossOptions options) : options(std::move(options)) {
    register_buffer("weight", this->options.weight);
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
    return F::nll_loss(input, target, options);
}

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyLossOptions options) : options(std::move(options)) {
    register_buffer("weight", this->options.weight);
}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
    return F::cross_entropy(input, target, options);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(BCEWithLogitsLossOptions options) : options(std::move(options)) {
    register_buffer("weight", this->options.weight);
    register_buffer("pos_weight", this->options.pos_weight);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
    return F::binary_cross_entropy_with_logits(input, target, options);
}

}  // namespace xgrad::nn

// ---- binary cross entropy, smooth L1, Huber and KL divergence -----------------------------------------

namespace xgrad::nn::functional {

namespace {

/// Floating-point, same-shape input and target for the elementwise losses below.
void check_float_pair(const Tensor& input, const Tensor& target, const char* op) {
    check_same_shape(input, target, op);
    if (!input.is_floating_point() || !target.is_floating_point())
        fail(op, "input and target must be floating-point, got " + to_string(input.dtype()) + " and " +
                     to_string(target.dtype()));
}

/// The innermost run of PyTorch's TensorIterator over a contiguous output of `shape` and inputs read
/// through `inputs` (broadcast_strides): the innermost dim of size > 1, merged with the dims outside it
/// while every input's memory continues across them (coalesce_dimensions; dims of size 1 merged away),
/// and whether cpu_kernel_vec takes the run with its vector formula: every input contiguous along it,
/// or all but one, which is a single value there (stride 0). Two such single values, or any other
/// stride, make it run the scalar formula over the whole run.
struct InnerRun {
    std::int64_t length = 1;
    bool vectorised = true;
};
InnerRun inner_run(const Shape& shape, const std::vector<Strides>& inputs) {
    InnerRun run;
    auto d = static_cast<std::int64_t>(shape.size()) - 1;
    while (d >= 0 && shape[d] == 1) --d;
    if (d < 0) return run;
    std::vector<std::int64_t> inner;
    for (const Strides& s : inputs) inner.push_back(s[static_cast<std::size_t>(d)]);
    run.length = shape[d];
    for (--d; d >= 0; --d) {
        if (shape[d] == 1) continue;
        bool merges = true;
        for (std::size_t k = 0; k < inputs.size(); ++k)
            merges = merges && inner[k] * run.length == inputs[k][static_cast<std::size_t>(d)];
        if (!merges) break;
        run.length *= shape[d];
    }
    int single = 0;
    for (const std::int64_t s : inner) {
        if (s == 0) ++single;
        run.vectorised = run.vectorised && (s == 0 || s == 1);
    }
    run.vectorised = run.vectorised && single <= 1;
    return run;
}

/// The input gradient of smooth_l1_loss (`huber` false, param beta) or huber_loss (param delta) at
/// d = input - target, as PyTorch 1.13's CPU kernels compute it, with norm = 1/N (mean) or 1 in the
/// dtype, into a contiguous tensor (PyTorch's grad_input). Its TensorIterator reads input, target
/// (`operands`: their broadcast_strides) and g over the contiguous result; along each of its innermost
/// runs (inner_run) that its loop vectorises, blocks of 16 floats (8 doubles) take the vector formula,
/// norm·out·g with out the clamped slope (±1 or d/beta; ±delta or d); the rest of each run, and every
/// element of a run it does not vectorise, the scalar formula, which compares d with the parameter in
/// double and, outside huber's quadratic zone and inside smooth_l1's, finishes its product in double.
Tensor robust_loss_grad(const Tensor& d, const Tensor& g, Reduction reduction, double param, bool huber,
                        std::vector<Strides> operands) {
    const DType dt = d.dtype();
    const bool f32 = dt == kFloat32;
    auto in_dtype = [f32](double v) { return f32 ? static_cast<double>(static_cast<float>(v)) : v; };
    const double norm = in_dtype(reduction == Reduction::kMean ? 1.0 / static_cast<double>(d.numel()) : 1.0);
    const double p = in_dtype(param);
    const Tensor gx = g.expand(d.shape());
    operands.push_back(detail::broadcast_strides(g, d.shape()));
    const InnerRun run = inner_run(d.shape(), operands);
    const std::int64_t n = d.numel(), block = f32 ? 16 : 8;
    const std::int64_t vectorised = run.vectorised ? run.length - run.length % block : 0;  // of each run
    // The scalar formula, over the elements given (all of them, or the tails of the runs).
    auto scalar = [&](const Tensor& d, const Tensor& gx) {
        const Tensor dd = d.to(kFloat64);
        const Tensor ng = gx * norm;
        if (huber) {
            const Tensor edge = (ng.to(kFloat64) * param).to(dt);  // norm·g·delta, the last product in double
            return xgrad::where(dd <= -param, -edge, xgrad::where(dd >= param, edge, d * norm * gx));
        }
        const Tensor inside = ((d * norm * gx).to(kFloat64) / param).to(dt);  // norm·x·g / beta in double
        return xgrad::where(dd <= -param, -ng, xgrad::where(dd >= param, ng, inside));
    };
    if (vectorised == 0) return scalar(d, gx).contiguous();
    // The vector formula in one pass (kernels' kSmoothL1Backward, kHuberBackward), then the runs' tails
    // (fewer than a block each) by the scalar one, written over them.
    Tensor out =
        detail::map_binary(gx, d, huber ? "huber_loss" : "smooth_l1_loss",
                           huber ? kernels::BinaryOp::kHuberBackward : kernels::BinaryOp::kSmoothL1Backward, p, norm)
            .contiguous();
    if (vectorised < run.length && n > 0) {
        const Shape runs{n / run.length, run.length};
        auto tail = [&](const Tensor& t) { return t.reshape(runs).narrow(1, vectorised, run.length - vectorised); };
        // A single gradient number stays one (not a reshaped copy of its expansion).
        const Tensor g_tail =
            g.numel() == 1 ? g.reshape(Shape{}).expand(Shape{n / run.length, run.length - vectorised}) : tail(gx);
        tail(out).copy_(scalar(tail(d), g_tail));
    }
    return out;
}

}  // namespace

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const nn::BCELossOptions& options) {
    const char* op = "binary_cross_entropy";
    check_float_pair(input, target, op);
    check_broadcasts_to(options.weight, input, "weight", op);
    const Reduction reduction = options.reduction;
    Tensor x = input.detach(), t = target.detach();
    Tensor w = options.weight.defined() ? options.weight.detach() : Tensor();
    Tensor out;
    {
        NoGradGuard no_grad;
        if (x.numel() > 0) {
            const double lo = x.min().item<double>(), hi = x.max().item<double>();
            if (!(lo >= 0.0 && hi <= 1.0))  // NaN fails too, as in PyTorch's kernel
                fail(op, "all elements of input should be between 0 and 1 (input of shape " + shape_of(input) +
                             " holds values in [" + nn::python_float_repr(lo) + ", " + nn::python_float_repr(hi) +
                             "])");
        }
        // PyTorch clamps each log at -100 so that a confident wrong answer costs 100, not inf.
        Tensor loss = -(t * x.log().clamp(-100.0) + (1.0 - t) * (1.0 - x).log().clamp(-100.0));
        if (w.defined()) loss = loss * w;
        out = reduce(loss, reduction);
    }
    if (detail::needs_grad({&input, &target}))
        detail::record(out, "BinaryCrossEntropyBackward0", {&input, &target},
                       [sx = detail::Saved(x), st = detail::Saved(t), sw = detail::Saved(w), reduction](
                           const Tensor& g, const NeedsGrad& n) {
                           const Tensor &x = sx, &t = st, &w = sw;
                           auto finish = [&](Tensor r, DType dt) {
                               if (w.defined()) r = r * w;
                               if (reduction == Reduction::kMean) r = r / static_cast<double>(x.numel());
                               return r.to(dt);
                           };
                           Grads r(2);
                           // As PyTorch's kernel: g (x - t) / max((1 - x) x, EPSILON), its EPSILON being the
                           // float 1e-12 (9.9999999600419720e-13) in every dtype.
                           const double eps = static_cast<double>(1e-12F);
                           if (n[0]) r[0] = finish(g * (x - t) / ((1.0 - x) * x).clamp(eps), x.dtype());
                           // d/dt = (log(1 - x) - log(x)) g, unclamped, as PyTorch 1.13's
                           // binary_cross_entropy_target_backward.
                           if (n[1]) r[1] = finish(((1.0 - x).log() - x.log()) * g, t.dtype());
                           return r;
                       });
    return out;
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const nn::SmoothL1LossOptions& options) {
    const char* op = "smooth_l1_loss";
    check_float_pair(input, target, op);
    const double beta = options.beta;
    if (beta < 0.0 || std::isnan(beta))
        fail(op, "smooth_l1_loss does not support negative values for beta (got " + nn::python_float_repr(beta) + ")");
    const Reduction reduction = options.reduction;
    Tensor d, out;
    {
        NoGradGuard no_grad;
        d = input.detach() - target.detach();
        // PyTorch's kernel, in the dtype: z = |d|, z < beta ? 0.5 z z / beta : z - 0.5 beta (beta 0 is
        // the L1 loss; its gradient below is sign(d), NaN at d = 0 as PyTorch's).
        out = reduce(beta == 0.0 ? d.abs() : detail::map_unary(d, kernels::UnaryOp::kSmoothL1, beta), reduction);
    }
    if (detail::needs_grad({&input, &target}))
        detail::record(out, "SmoothL1LossBackward0", {&input, &target},
                       [sd = detail::Saved(d), beta, reduction, di = input.dtype(), dt = target.dtype(),
                        operands = std::vector<Strides>{detail::broadcast_strides(input, d.shape()),
                                                        detail::broadcast_strides(target, d.shape())}](
                           const Tensor& g, const NeedsGrad& n) {
                           // d/dd = d / beta inside the quadratic zone, sign(d) outside; the target's is
                           // its negation.
                           const Tensor gi = robust_loss_grad(sd.get(), g, reduction, beta, false, operands);
                           return Grads{n[0] ? gi.to(di) : Tensor(), n[1] ? gi.neg().to(dt) : Tensor()};
                       });
    return out;
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const nn::HuberLossOptions& options) {
    const char* op = "huber_loss";
    check_float_pair(input, target, op);
    const double delta = options.delta;
    if (!(delta > 0.0))
        fail(op,
             "huber_loss does not support non-positive values for delta (got " + nn::python_float_repr(delta) + ")");
    const Reduction reduction = options.reduction;
    Tensor d, out;
    {
        NoGradGuard no_grad;
        d = input.detach() - target.detach();
        // PyTorch's kernel, in the dtype: z = |d|, z < delta ? 0.5 z z : delta (z - 0.5 delta).
        out = reduce(detail::map_unary(d, kernels::UnaryOp::kHuber, delta), reduction);
    }
    if (detail::needs_grad({&input, &target}))
        detail::record(out, "HuberLossBackward0", {&input, &target},
                       [sd = detail::Saved(d), delta, reduction, di = input.dtype(), dt = target.dtype(),
                        operands = std::vector<Strides>{detail::broadcast_strides(input, d.shape()),
                                                        detail::broadcast_strides(target, d.shape())}](
                           const Tensor& g, const NeedsGrad& n) {
                           // d/dd = d inside the quadratic zone, ±delta outside; the target's is its negation.
                           const Tensor gi = robust_loss_grad(sd.get(), g, reduction, delta, true, operands);
                           return Grads{n[0] ? gi.to(di) : Tensor(), n[1] ? gi.neg().to(dt) : Tensor()};
                       });
    return out;
}

namespace {

void check_kl_reduction(const std::string& reduction) {
    if (reduction != "none" && reduction != "mean" && reduction != "batchmean" && reduction != "sum")
        fail("kl_div",
             reduction + " is not a valid value for reduction (expected \"none\", \"mean\", \"batchmean\" or \"sum\")");
}

}  // namespace

namespace {

/// PyTorch 1.13's kl_div term xlogy(t, t) - t·x (log_target false), xlogy by the C library's log element
/// by element (NaN where t is NaN, 0 where t is 0), as its xlogy kernel; and its gradients as PyTorch's
/// autograd adds them up: input -g·t; target (g·xlogy(t != 0, t) + g·t / t) - g·x, XlogyBackward's two
/// gradients first, then MulBackward's (0/0 = NaN where t is 0, as PyTorch's).
Tensor kl_div_term(const Tensor& input, const Tensor& target) {
    const Tensor x = input.detach(), t = target.detach();
    Tensor log_t, out;
    {
        NoGradGuard no_grad;
        log_t = detail::map_unary(t, kernels::UnaryOp::kLogLibm);
        const double nan = std::numeric_limits<double>::quiet_NaN();
        out = xgrad::where(t.isnan(), nan, xgrad::where(t == 0.0, 0.0, t * log_t)) - t * x;
    }
    if (detail::needs_grad({&input, &target}))
        detail::record(out, "SubBackward0", {&input, &target},
                       [sx = detail::Saved(x), st = detail::Saved(t), slog = detail::Saved(log_t)](const Tensor& g,
                                                                                                   const NeedsGrad& n) {
                           const Tensor &x = sx, &t = st, &log_t = slog;
                           const Tensor neg = -g;
                           Grads r(2);
                           // Each in its input's dtype, as PyTorch's engine casts them (mixed dtypes).
                           if (n[0]) r[0] = (neg * t).to(x.dtype());
                           if (n[1]) {
                               // xlogy(t != 0, t): log(t), 0 where t is 0, NaN where t is NaN.
                               const Tensor self_grad = g * xgrad::where(t == 0.0, 0.0, log_t);
                               r[1] = ((self_grad + g * t / t) + neg * x).to(t.dtype());
                           }
                           return r;
                       });
    return out;
}

}  // namespace

Tensor kl_div(const Tensor& input, const Tensor& target, const nn::KLDivLossOptions& options) {
    const char* op = "kl_div";
    check_kl_reduction(options.reduction);
    check_float_pair(input, target, op);
    Tensor loss;
    if (options.log_target) {
        loss = target.exp() * (target - input);
    } else {
        loss = kl_div_term(input, target);
    }
    const std::string& r = options.reduction;
    if (r == "none") return loss;
    if (r == "mean") return loss.mean();
    Tensor total = loss.sum();
    return r == "batchmean" && input.dim() != 0 ? total / static_cast<double>(input.size(0)) : total;
}

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

BCELoss::BCELoss(BCELossOptions options) : options(std::move(options)) {
    register_buffer("weight", this->options.weight);
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
    return functional::binary_cross_entropy(input, target, options);
}

Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
    return functional::smooth_l1_loss(input, target, options);
}

Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
    return functional::huber_loss(input, target, options);
}

KLDivLoss::KLDivLoss(KLDivLossOptions options) : options(std::move(options)) {
    functional::check_kl_reduction(this->options.reduction);
}
Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
    return functional::kl_div(input, target, options);
}

}  // namespace xgrad::nn
