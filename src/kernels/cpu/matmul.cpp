// CPU matrix products: a blocked GEMM (to be replaced by BLAS) looped over broadcast batches.
#include "kernels/cpu/matmul.hpp"

#include <algorithm>
#include <vector>

#include "detail/kernels.hpp"
#include "kernels/cpu/parallel.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// Runs `body(i)` for i in [0, n), on OpenMP threads when `parallel` (entering no parallel region
/// otherwise: that costs a futex round trip even when it would run on one thread).
template <typename F>
void for_rows(std::int64_t n, bool parallel, F&& body) {
    if (parallel) {
        parallel_for(0, n, 1, [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t i = lo; i < hi; ++i) body(i);
        });
    } else {
        for (std::int64_t i = 0; i < n; ++i) body(i);
    }
}

/// C (n×m, contiguous) = A (n×k) · B (k×m), where A[i,p] = a[i·sa0 + p·sa1] and B[p,j] = b[p·sb0 + j·sb1].
///
/// Each C[i,j] adds its k products in order p = 0..k-1, whichever loop form runs:
/// - B row-major: the j loop is innermost (it vectorises), p is blocked so a panel of B stays in cache;
/// - B column-major (a transposed weight, as in x·Wᵀ) and small: dot products along contiguous p;
/// - anything else: B is first copied row-major.
template <typename T>
void gemm(const T* a, std::int64_t sa0, std::int64_t sa1, const T* b, std::int64_t sb0, std::int64_t sb1, T* c,
          std::int64_t n, std::int64_t k, std::int64_t m) {
    const bool parallel = n > 1 && n * k * m > (1 << 18);
    if (sb1 == 1 || m == 1) {
        std::fill(c, c + n * m, T(0));
        constexpr std::int64_t kb = 256;
        for_rows(n, parallel, [&](std::int64_t i) {
            T* crow = c + i * m;
            for (std::int64_t p0 = 0; p0 < k; p0 += kb) {
                const std::int64_t p1 = std::min(k, p0 + kb);
                for (std::int64_t p = p0; p < p1; ++p) {
                    const T av = a[i * sa0 + p * sa1];
                    const T* brow = b + p * sb0;
                    for (std::int64_t j = 0; j < m; ++j) crow[j] += av * brow[j];
                }
            }
        });
        return;
    }
    if (sb0 == 1 && n * k * m <= (1 << 16)) {
        for_rows(n, false, [&](std::int64_t i) {
            for (std::int64_t j = 0; j < m; ++j) {
                const T* bcol = b + j * sb1;
                T acc = T(0);
                for (std::int64_t p = 0; p < k; ++p) acc += a[i * sa0 + p * sa1] * bcol[p];
                c[i * m + j] = acc;
            }
        });
        return;
    }
    std::vector<T> packed(static_cast<std::size_t>(k * m));
    for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t j = 0; j < m; ++j) packed[static_cast<std::size_t>(p * m + j)] = b[p * sb0 + j * sb1];
    gemm(a, sa0, sa1, packed.data(), m, std::int64_t{1}, c, n, k, m);
}

}  // namespace

void set_blas_threads(int) {}

void matmul(const Tensor& x, const Tensor& y, const Tensor& out, double beta) {
    const std::int64_t n = x.size(-2), k = x.size(-1), m = y.size(-1);
    Shape batch(std::vector<std::int64_t>(out.shape().begin(), out.shape().end() - 2));
    detail::dispatch(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* base_a = static_cast<const T*>(x.impl()->storage->data);
        const T* base_b = static_cast<const T*>(y.impl()->storage->data);
        T* pc = out.impl()->data<T>();
        std::vector<T> tmp(beta != 0.0 ? static_cast<std::size_t>(n * m) : 0);
        const auto& st_a = x.strides();
        const auto& st_b = y.strides();
        const std::int64_t nd = x.dim(), nb = batch.numel();
        std::vector<std::int64_t> idx(static_cast<std::size_t>(batch.size()), 0);
        for (std::int64_t bi = 0; bi < nb; ++bi) {
            std::int64_t off_a = x.storage_offset(), off_b = y.storage_offset();
            for (std::int64_t d = 0; d < batch.size(); ++d) {
                off_a += idx[static_cast<std::size_t>(d)] * st_a[static_cast<std::size_t>(d)];
                off_b += idx[static_cast<std::size_t>(d)] * st_b[static_cast<std::size_t>(d)];
            }
            T* c = beta != 0.0 ? tmp.data() : pc + bi * n * m;
            gemm(base_a + off_a, st_a[static_cast<std::size_t>(nd - 2)], st_a[static_cast<std::size_t>(nd - 1)],
                 base_b + off_b, st_b[static_cast<std::size_t>(nd - 2)], st_b[static_cast<std::size_t>(nd - 1)], c, n,
                 k, m);
            if (beta != 0.0)
                for (std::int64_t i = 0; i < n * m; ++i)
                    pc[bi * n * m + i] = static_cast<T>(beta) * pc[bi * n * m + i] + tmp[static_cast<std::size_t>(i)];
            for (std::int64_t d = batch.size() - 1; d >= 0; --d) {
                auto du = static_cast<std::size_t>(d);
                if (++idx[du] < batch[d]) break;
                idx[du] = 0;
            }
        }
    });
}

}  // namespace xgrad::kernels::cpu
