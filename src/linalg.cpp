// torch.matmul on 1-D, 2-D and batched operands, reduced to the products PyTorch 1.13 runs (dot, mv,
// mm, bmm) with its backward formulas for them, so that values and gradients come out of the same
// BLAS calls as PyTorch's. The arithmetic is in kernels/cpu/matmul.cpp.
#include "detail/linalg.hpp"

#include <stdexcept>
#include <utility>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/ops.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using detail::Saved;
using Grads = detail::GradList;

namespace detail {

namespace {

Shape with(Shape s, std::initializer_list<std::int64_t> tail) {
    for (std::int64_t d : tail) s.push_back(d);
    return s;
}

Tensor mv(const Tensor& a, const Tensor& x) {
    Tensor out = make_empty(Shape{a.size(0)}, a.dtype(), a.device(), "matmul");
    kernels::mv(a, x, out);
    return out;
}

Tensor dot(const Tensor& a, const Tensor& b) {
    Tensor out = make_empty(Shape{}, a.dtype(), a.device(), "matmul");
    kernels::dot(a, b, out);
    return out;
}

/// `x` (..., n, k) · `y` (..., k, m) over one batch shape, as PyTorch's bmm.
Tensor bmm(const Tensor& x, const Tensor& y) {
    Shape s = x.shape();
    s[s.size() - 1] = y.size(-1);
    Tensor out = make_empty(s, x.dtype(), x.device(), "matmul");
    kernels::matmul(x, y, out);
    return out;
}

/// PyTorch's MvBackward0: the outer product g·xᵀ (single products, exact) and aᵀ·g.
Grads mv_backward(const Tensor& g, const Tensor& a, const Tensor& x, bool need_a, bool need_x) {
    return {need_a ? g.unsqueeze(1) * x : Tensor(), need_x ? mv(a.t(), g) : Tensor()};
}

/// torch 1.13 folds the batch of a ≥3-D operand into matrix rows (one mm or mv instead of a batch of
/// them) when the other operand has 1 or 2 dims; not a 3-D operand whose matrices are transposed
/// in a batch-major layout (permute(0, 2, 1)), which bmm reads in place.
bool should_fold(const Tensor& t, std::int64_t other_dim) {
    if (t.dim() < 3 || other_dim > 2) return false;
    const auto& st = t.strides();
    return !(t.dim() == 3 && other_dim == 2 && st[2] != 1 && st[0] == t.size(1) * t.size(2));
}

/// A ≥3-D operand times a 1-D or 2-D one, folded: the ≥3-D operand t1 (its matrix dims in the
/// product's order) becomes one tall matrix (a copy unless its batch folds into its rows as a view)
/// and one mv or mm runs. When b is the ≥3-D operand, PyTorch computes the transposed product
/// bᵀ·aᵀ, then copies it back transposed.
Product folded(const Tensor& a, const Tensor& b) {
    const bool transpose = b.dim() > a.dim();
    const Tensor t1 = transpose ? b.transpose(-1, -2) : a;
    const Tensor t2 = transpose && a.dim() == 2 ? a.t() : transpose ? a : b;
    const Shape lead(std::vector<std::int64_t>(t1.shape().begin(), t1.shape().end() - 1));  // (..., r)
    const Tensor x = t1.reshape(Shape{lead.numel(), t1.size(-1)});
    // The gradients of (x, t2) are those of (a, b), reshaped and transposed back.
    auto to_ab = [transpose, s1 = t1.shape(), a_t = transpose && a.dim() == 2](Grads g) {
        if (g[0].defined()) g[0] = g[0].reshape(s1);
        if (!transpose) return g;
        if (g[1].defined() && a_t) g[1] = g[1].t();
        return Grads{g[1], g[0].defined() ? g[0].transpose(-1, -2) : Tensor()};
    };
    const Saved sx(x), st2(t2);
    if (t2.dim() == 1) {
        auto backward = [=](const Tensor& g, const NeedsGrad& n) {
            const Tensor gz = g.reshape(Shape{sx->size(0)});
            return to_ab(mv_backward(gz, sx, st2, transpose ? n[1] : n[0], transpose ? n[0] : n[1]));
        };
        return {mv(x, t2).view(lead), std::move(backward)};
    }
    const Tensor z = mm(x, t2).view(with(lead, {t2.size(1)}));
    auto backward = [=](const Tensor& g, const NeedsGrad& n) {
        const Tensor gz = (transpose ? g.transpose(-1, -2) : g).reshape(Shape{sx->size(0), st2->size(1)});
        return to_ab(mm_backward(gz, sx, st2, transpose ? n[1] : n[0], transpose ? n[0] : n[1]));
    };
    return {transpose ? z.transpose(-1, -2).contiguous() : z, std::move(backward)};
}

/// Batched operands: both expanded to the broadcast batch shape, one product per matrix (bmm). The
/// expanded views go to the kernel as they are; PyTorch copies a broadcast operand first, which
/// changes no bits (BLAS's results do not depend on the operands' layout).
Product batched(const Tensor& a, const Tensor& b) {
    const std::int64_t n = a.dim() > 1 ? a.size(-2) : 1, k = a.size(-1), p = b.dim() > 1 ? b.size(-1) : 1;
    auto batch_of = [](const Tensor& t) {
        const std::int64_t matrix_dims = std::min<std::int64_t>(t.dim(), 2);
        return Shape(std::vector<std::int64_t>(t.shape().begin(), t.shape().end() - matrix_dims));
    };
    Shape batch;
    try {
        batch = broadcast_shapes(batch_of(a), batch_of(b), "matmul");
    } catch (const std::invalid_argument&) {
        fail("matmul", "the batch dimensions of shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                           " cannot be broadcast together");
    }
    const Tensor x = a.expand(with(batch, {n, k}));                                    // (..., n, k)
    const Tensor y = (b.dim() == 1 ? b.unsqueeze(1) : b).expand(with(batch, {k, p}));  // (..., k, p)
    const Tensor z = bmm(x, y);                                                        // (..., n, p)
    Shape out_shape = batch;
    if (a.dim() > 1) out_shape.push_back(n);
    if (b.dim() > 1) out_shape.push_back(p);
    // PyTorch's BmmBackward0, then each gradient summed over the dims its operand was broadcast along.
    auto backward = [sx = Saved(x), sy = Saved(y), sa = a.shape(), sb = b.shape(), sz = z.shape()](const Tensor& g,
                                                                                                   const NeedsGrad& n) {
        const Tensor &x = sx, &y = sy;
        const Tensor gz = g.reshape(sz);
        Grads r(2);
        if (n[0]) r[0] = sum_to(bmm(gz, y.transpose(-1, -2)), sa);
        if (n[1]) {
            const Tensor gy = bmm(x.transpose(-1, -2), gz);  // (..., k, p)
            r[1] = sum_to(sb.size() == 1 ? gy.squeeze(-1) : gy, sb);
        }
        return r;
    };
    return {z.view(out_shape), std::move(backward)};
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b, kernels::Transpose t) {
    Tensor out = make_empty(Shape{a.size(t.a ? 1 : 0), b.size(t.b ? 0 : 1)}, a.dtype(), a.device(), "matmul");
    kernels::matmul(a, b, out, 0, t);
    return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
    Tensor out = detail::contiguous_clone(bias.expand(Shape{a.size(0), b.size(1)}));  // row-major for BLAS
    kernels::matmul(a, b, out, /*beta=*/1.0);
    return out;
}

namespace {

/// A fresh 2-D product transposed in place (its handle is the only one): the column-major result
/// PyTorch returns, without a view over it.
Tensor transposed(Tensor t) {
    swap_dims(*t.impl(), 0, 1);
    return t;
}

}  // namespace

Grads mm_backward(const Tensor& g, const Tensor& a, const Tensor& b, bool need_a, bool need_b) {
    // g·bᵀ and aᵀ·g; for an operand stored column-major PyTorch computes its gradient transposed
    // (b·gᵀ)ᵀ or (gᵀ·a)ᵀ, which swaps the operands' roles in BLAS, and so some roundings. Transposed
    // operands go to the kernel as flags, not views.
    auto column_major = [](const Tensor& t) { return t.strides()[0] == 1 && t.strides()[1] == t.size(0); };
    Grads r(2);
    if (need_a) r[0] = column_major(a) ? transposed(mm(b, g, {.b = true})) : mm(g, b, {.b = true});
    if (need_b) r[1] = column_major(b) ? transposed(mm(g, a, {.a = true})) : mm(a, g, {.a = true});
    return r;
}

Product matmul_product(const Tensor& a_in, const Tensor& b_in) {
    NoGradGuard no_grad;  // nothing below records; the saved operands are detached by Saved
    const Tensor &a = a_in, &b = b_in;
    const std::int64_t da = a.dim(), db = b.dim();
    if (da == 1 && db == 1)
        return {dot(a, b), [sa = Saved(a), sb = Saved(b)](const Tensor& g, const NeedsGrad& n) {
                    return Grads{n[0] ? g * sb : Tensor(), n[1] ? g * sa : Tensor()};
                }};
    if (da == 2 && db == 1)
        return {mv(a, b), [sa = Saved(a), sb = Saved(b)](const Tensor& g, const NeedsGrad& n) {
                    return mv_backward(g, sa, sb, n[0], n[1]);
                }};
    if (da <= 2 && db == 2) {  // mm; a vector on the left is a one-row matrix
        // Handles are moved, not copied, where they can be: each copy costs two atomic count updates,
        // a fair share of a small model's step.
        Tensor row;
        const Tensor& x = da == 1 ? (row = a.unsqueeze(0)) : a;
        Tensor z = mm(x, b);
        if (da == 1) z = z.squeeze(0);
        return {std::move(z), [sx = Saved(x), sb = Saved(b), vector = da == 1](const Tensor& g, const NeedsGrad& n) {
                    // Two calls, not `vector ? g.unsqueeze(0) : g`, which would copy g's handle.
                    Grads r =
                        vector ? mm_backward(g.unsqueeze(0), sx, sb, n[0], n[1]) : mm_backward(g, sx, sb, n[0], n[1]);
                    if (vector && r[0].defined()) r[0] = r[0].squeeze(0);
                    return r;
                }};
    }
    if (should_fold(a, db) || should_fold(b, da)) return folded(a, b);
    return batched(a, b);
}

}  // namespace detail

Tensor matmul(const Tensor& a, const Tensor& b) {
    detail::check_defined(a, "matmul");
    detail::check_defined(b, "matmul");
    detail::check_same_device(a, b, "matmul");
    if (a.dtype() == kBool && b.dtype() == kBool) detail::not_implemented_for(a, "matmul", "addmm_impl_cpu_", false);
    if (a.dim() == 0 || b.dim() == 0)
        fail("matmul", "both arguments need at least 1 dimension, got shapes " + to_string(a.shape()) + " and " +
                           to_string(b.shape()));
    if (a.dtype() != b.dtype())  // PyTorch does not promote here either
        fail("matmul", "expected both arguments to have the same dtype, but got " + to_string(a.dtype()) + " and " +
                           to_string(b.dtype()) + " (shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                           ")");
    const std::int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
    if (ka != kb)
        fail("matmul", "shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) + " cannot be multiplied (" +
                           std::to_string(ka) + " != " + std::to_string(kb) + ")");
    if (detail::is_narrow(a.dtype())) return matmul(a.to(kInt64), b.to(kInt64)).to(a.dtype());
    detail::Product p = detail::matmul_product(a, b);  // one dtype (checked above); records nothing
    if (detail::needs_grad({&a, &b})) {
        // One node records the whole product, named as PyTorch names the 1-D and 2-D cases.
        const char* name = a.dim() == 1 && b.dim() == 1   ? "DotBackward0"
                           : b.dim() == 1 && a.dim() == 2 ? "MvBackward0"
                           : a.dim() <= 2 && b.dim() <= 2 ? "MmBackward0"
                                                          : "BmmBackward0";
        detail::record(p.out, name, {&a, &b}, std::move(p.backward));
    }
    return std::move(p.out);
}

Tensor Tensor::matmul(const Tensor& other) const {
    return xgrad::matmul(*this, other);
}

}  // namespace xgrad
