// Matrix products: a blocked CPU GEMM and torch.matmul's rules for 1-D, 2-D and batched operands.
#include <algorithm>
#include <stdexcept>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/ops.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using Grads = std::vector<Tensor>;

namespace {

/// `x` (..., n, k) · `y` (..., k, m) for same-dtype operands whose batch shapes are `batch`
/// (already broadcast, as views), into a new contiguous tensor.
Tensor batched_gemm(const Tensor& x, const Tensor& y, const Shape& batch, const Shape& out_shape) {
    (void)batch;
    Tensor out = detail::make_empty(out_shape, x.dtype(), x.device());
    kernels::matmul(x, y, out);
    return out;
}

[[noreturn]] void shape_error(const Tensor& a, const Tensor& b, std::int64_t ka, std::int64_t kb) {
    fail("matmul", "shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) + " cannot be multiplied (" +
                       std::to_string(ka) + " != " + std::to_string(kb) + ")");
}

/// `a` (..., n, k) times `b` (..., k, m), batch dimensions broadcast; not recorded.
Tensor matmul_nd(const Tensor& a, const Tensor& b) {
    const std::int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
    Shape batch_a(std::vector<std::int64_t>(a.shape().begin(), a.shape().end() - 2));
    Shape batch_b(std::vector<std::int64_t>(b.shape().begin(), b.shape().end() - 2));
    Shape batch;
    try {
        batch = detail::broadcast_shapes(batch_a, batch_b, "matmul");
    } catch (const std::invalid_argument&) {
        fail("matmul", "the batch dimensions of shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                           " cannot be broadcast together");
    }
    Shape out_shape = batch;
    out_shape.push_back(n);
    out_shape.push_back(m);
    NoGradGuard no_grad;
    DType t = detail::promote(a.dtype(), b.dtype());
    Tensor x = a.to(t), y = b.to(t);
    if (y.dim() == 2 && x.dim() > 2 && x.is_contiguous()) {
        // Fold x's batch into rows: one large GEMM.
        const std::int64_t rows = batch.numel() * n;
        Tensor x2 = detail::make_view(x, Shape{rows, k}, {k, 1}, x.storage_offset());
        return batched_gemm(x2, y, Shape{}, Shape{rows, m}).view(out_shape);
    }
    Shape sa = batch, sb = batch;
    sa.push_back(n);
    sa.push_back(k);
    sb.push_back(k);
    sb.push_back(m);
    return batched_gemm(x.shape() == sa ? x : x.expand(sa), y.shape() == sb ? y : y.expand(sb), batch, out_shape);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
    detail::check_defined(a, "matmul");
    detail::check_defined(b, "matmul");
    detail::check_same_device(a, b, "matmul");
    if (a.dim() == 0 || b.dim() == 0)
        fail("matmul", "both arguments need at least 1 dimension, got shapes " + to_string(a.shape()) + " and " +
                           to_string(b.shape()));
    const std::int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
    if (ka != kb) shape_error(a, b, ka, kb);

    // A 1-D operand is a row (left) or column (right) vector whose new dimension is dropped again;
    // one node records the whole product, named as PyTorch names the 1-D and 2-D cases.
    Tensor a2, b2;
    {
        NoGradGuard no_grad;
        a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
        b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    }
    Tensor full = matmul_nd(a2, b2);  // (..., n, m)
    Tensor out = full;
    {
        NoGradGuard no_grad;
        if (b.dim() == 1) out = out.squeeze(-1);
        if (a.dim() == 1) out = out.squeeze(b.dim() == 1 ? -1 : -2);
    }
    if (detail::needs_grad({&a, &b})) {
        const char* name = a.dim() == 1 && b.dim() == 1   ? "DotBackward0"
                           : b.dim() == 1 && a.dim() == 2 ? "MvBackward0"
                           : a.dim() <= 2 && b.dim() <= 2 ? "MmBackward0"
                                                          : "BmmBackward0";
        detail::record(out, name, {&a, &b},
                       [a2 = a2.detach(), b2 = b2.detach(), sa = a.shape(), sb = b.shape(), sf = full.shape()](
                           const Tensor& g, const NeedsGrad& need) {
                           // d(A·B) = dA·B + A·dB: gA = g·Bᵀ, gB = Aᵀ·g, summed over broadcast batch dims.
                           auto as = [](const Tensor& t, const Shape& s) { return t.shape() == s ? t : t.reshape(s); };
                           Tensor gf = as(g, sf);  // (..., n, m)
                           Grads r(2);
                           if (need[0]) r[0] = as(detail::sum_to(matmul_nd(gf, b2.transpose(-1, -2)), a2.shape()), sa);
                           if (need[1]) r[1] = as(detail::sum_to(matmul_nd(a2.transpose(-1, -2), gf), b2.shape()), sb);
                           return r;
                       });
    }
    return out;
}

Tensor Tensor::matmul(const Tensor& other) const {
    return xgrad::matmul(*this, other);
}

}  // namespace xgrad
