// Matrix products: a blocked CPU GEMM and torch.matmul's rules for 1-D, 2-D and batched operands.
#include <algorithm>
#include <stdexcept>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/ops.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using Grads = std::vector<Tensor>;

namespace {

/// C (n×m) = A (n×k) · B (k×m), all contiguous row-major. The j loop is innermost so it vectorises;
/// k is blocked so a panel of B stays in cache. Rows are spread over OpenMP threads when large.
template <typename T>
void gemm(const T* a, const T* b, T* c, std::int64_t n, std::int64_t k, std::int64_t m) {
    std::fill(c, c + n * m, T(0));
    constexpr std::int64_t kb = 256;
    const bool parallel = n * k * m > (1 << 18);
#pragma omp parallel for schedule(static) if (parallel)
    for (std::int64_t i = 0; i < n; ++i) {
        T* crow = c + i * m;
        for (std::int64_t p0 = 0; p0 < k; p0 += kb) {
            const std::int64_t p1 = std::min(k, p0 + kb);
            for (std::int64_t p = p0; p < p1; ++p) {
                const T av = a[i * k + p];
                const T* brow = b + p * m;
                for (std::int64_t j = 0; j < m; ++j) crow[j] += av * brow[j];
            }
        }
    }
}

/// Batched product of (B, n, k) and (B, k, m) contiguous tensors of one dtype.
Tensor bmm_raw(const Tensor& a, const Tensor& b) {
    const std::int64_t batch = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
    Tensor out = detail::make_empty(Shape{batch, n, m}, a.dtype());
    detail::dispatch(a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* pa = a.impl()->data<T>();
        const T* pb = b.impl()->data<T>();
        T* pc = out.impl()->data<T>();
        for (std::int64_t i = 0; i < batch; ++i) gemm(pa + i * n * k, pb + i * k * m, pc + i * n * m, n, k, m);
    });
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
    if (b.dim() == 2) {
        // Fold a's batch into rows: one large GEMM, no copies of b.
        Tensor r = bmm_raw(x.contiguous().reshape(Shape{1, batch.numel() * n, k}), y.contiguous().reshape(Shape{1, k, m}));
        return r.reshape(out_shape);
    }
    Shape sa = batch, sb = batch;
    sa.push_back(n);
    sa.push_back(k);
    sb.push_back(k);
    sb.push_back(m);
    const std::int64_t nb = batch.numel();
    Tensor r = bmm_raw(x.expand(sa).contiguous().reshape(Shape{nb, n, k}), y.expand(sb).contiguous().reshape(Shape{nb, k, m}));
    return r.reshape(out_shape);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
    detail::check_defined(a, "matmul");
    detail::check_defined(b, "matmul");
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
        const char* name = a.dim() == 1 && b.dim() == 1 ? "DotBackward0"
                           : b.dim() == 1 && a.dim() == 2 ? "MvBackward0"
                           : a.dim() <= 2 && b.dim() <= 2 ? "MmBackward0"
                                                          : "BmmBackward0";
        detail::record(out, name, {&a, &b},
                       [a2 = a2.detach(), b2 = b2.detach(), sa = a.shape(), sb = b.shape(), sf = full.shape()](
                           const Tensor& g, const NeedsGrad& need) {
                           // d(A·B) = dA·B + A·dB: gA = g·Bᵀ, gB = Aᵀ·g, summed over broadcast batch dims.
                           Tensor gf = g.reshape(sf);  // (..., n, m)
                           Grads r(2);
                           if (need[0]) r[0] = detail::sum_to(matmul_nd(gf, b2.transpose(-1, -2)), a2.shape()).reshape(sa);
                           if (need[1]) r[1] = detail::sum_to(matmul_nd(a2.transpose(-1, -2), gf), b2.shape()).reshape(sb);
                           return r;
                       });
    }
    return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return xgrad::matmul(*this, other); }

}  // namespace xgrad
