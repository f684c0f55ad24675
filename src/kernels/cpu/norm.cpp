// CPU LayerNorm and RMSNorm kernels: rows split into chunks run on the pool's threads, and
// per-chunk partial sums for the weight and bias gradients, added in chunk order at the end.
//
// Rows of at least one AVX2 register run vec_math's row kernels (the best instruction set this CPU
// has, picked at run time); narrower rows keep the scalar/xsimd code below, PyTorch's bits.
#include <algorithm>
#include <cmath>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

// ---- row primitives (xsimd) ----------------------------------------------------------------------

template <typename T>
T row_sum(const T* x, std::int64_t n) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    B acc(T(0));
    std::int64_t i = 0;
    for (; i + w <= n; i += w) acc += B::load_unaligned(x + i);
    T s = xsimd::hadd(acc);
    for (; i < n; ++i) s += x[i];
    return s;
}

/// Σ a·b
template <typename T>
T row_dot(const T* a, const T* b, std::int64_t n) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    B acc(T(0));
    std::int64_t i = 0;
    for (; i + w <= n; i += w) acc += B::load_unaligned(a + i) * B::load_unaligned(b + i);
    T s = xsimd::hadd(acc);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

/// Runs `body(lo, hi, chunk)` over row ranges; `chunks` ranges when the work is large enough.
template <typename F>
void for_row_chunks(std::int64_t rows, int chunks, F&& body) {
    parallel_for(0, chunks, 1, [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t c = c0; c < c1; ++c) body(rows * c / chunks, rows * (c + 1) / chunks, c);
    });
}

/// How many row chunks a (rows × width) kernel is split into: a function of the shape alone, so the
/// weight gradients (summed per chunk, then over chunks in order) do not depend on the thread count.
int row_chunks(std::int64_t rows, std::int64_t width) {
    constexpr std::int64_t kMaxChunks = 16;
    if (rows * width < (1 << 16) || rows < 2) return 1;
    return static_cast<int>(std::min(rows, kMaxChunks));
}

/// Whether an output of n elements of T is written with non-temporal stores (vec_math's kStreamBytes):
/// the rows are written one by one, so the decision is the whole tensor's.
template <typename T>
bool streams(std::int64_t n) {
    return n * static_cast<std::int64_t>(sizeof(T)) >= kStreamBytes;
}

/// Rows narrower than this take the narrow-row code (one AVX2 register of T).
template <typename T>
constexpr std::int64_t kNarrow = 32 / static_cast<std::int64_t>(sizeof(T));

/// `n` zeros of T (x's dtype) for per-chunk partial sums, kept alive by `holder`: a tensor's storage, so
/// that a large block comes back from the storage's block cache. A std::vector of a few hundred KiB is
/// handed back to the system when freed (unmapped, or trimmed off the top of the heap), and every
/// call then page-faulted it in again: 2.9x the time of a 384x4096 LayerNorm backward.
template <typename T>
T* zeroed(Tensor& holder, DType dtype, std::int64_t n) {
    holder = detail::make_empty(Shape{n}, dtype);
    T* p = holder.impl()->data<T>();
    std::fill(p, p + n, T(0));
    return p;
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& out,
                        const Tensor& mean, const Tensor& rstd) {
    const std::int64_t rows = mean.numel(), width = rows == 0 ? 0 : x.numel() / rows;
    detail::dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
        using T = decltype(tag);
        const bool stream = streams<T>(x.numel());
        const T* px = x.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        const T* pb = b.defined() ? b.impl()->data<T>() : nullptr;
        T* py = out.impl()->data<T>();
        T* pm = mean.impl()->data<T>();
        T* pr = rstd.impl()->data<T>();
        for_row_chunks(rows, row_chunks(rows, width), [&](std::int64_t lo, std::int64_t hi, std::int64_t) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* xr = px + r * width;
                T* yr = py + r * width;
                // (x - mean) * rstd, written as PyTorch's CPU kernel does: x * rstd + (-rstd * mean).
                if (width < kNarrow<T>) {
                    // Rows narrower than one AVX2 register take PyTorch's scalar path, bit for bit:
                    // Welford moments, then one fused multiply-add per element.
                    T m = 0, m2 = 0;
                    for (std::int64_t j = 0; j < width; ++j) {
                        const T d = xr[j] - m;
                        m += d / static_cast<T>(j + 1);
                        m2 += d * (xr[j] - m);
                    }
                    const T rs = T(1) / std::sqrt(m2 / static_cast<T>(width) + static_cast<T>(eps));
                    const T shift = -rs * m;
                    pm[r] = m;
                    pr[r] = rs;
                    for (std::int64_t j = 0; j < width; ++j) {
                        T v = std::fma(xr[j], rs, shift);
                        if (pw) v = v * pw[j];
                        if (pb) v = v + pb[j];
                        yr[j] = v;
                    }
                    continue;
                }
                T m, m2;
                norm_moments(xr, width, &m, &m2);
                const T rs = T(1) / std::sqrt(m2 / static_cast<T>(width) + static_cast<T>(eps));
                pm[r] = m;
                pr[r] = rs;
                norm_apply(xr, rs, -rs * m, pw, pb, yr, width, stream, rows_ahead<T>(stream, r, rows, width));
            }
            if (stream) stream_fence();
        });
    });
}

void layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dx, const Tensor& dw, const Tensor& db) {
    // Without rows the width comes from the weight gradients, which are then zeros.
    const std::int64_t rows = mean.numel(), width = rows > 0       ? x.numel() / rows
                                                    : dw.defined() ? dw.numel()
                                                    : db.defined() ? db.numel()
                                                                   : 0;
    detail::dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
        using T = decltype(tag);
        const bool stream = streams<T>(x.numel());
        const T* px = x.impl()->data<T>();
        const T* pg = g.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        const T* pm = mean.impl()->data<T>();
        const T* pr = rstd.impl()->data<T>();
        const int chunks = row_chunks(rows, width);
        // Per-chunk partial sums of dweight and dbias, added in chunk order at the end.
        const std::int64_t part = chunks * width;
        Tensor hold_w, hold_b;
        T* part_w = dw.defined() ? zeroed<T>(hold_w, x.dtype(), part) : nullptr;
        T* part_b = db.defined() ? zeroed<T>(hold_b, x.dtype(), part) : nullptr;
        for_row_chunks(rows, chunks, [&](std::int64_t lo, std::int64_t hi, std::int64_t c) {
            // Scratch rows for the narrow-row path only.
            const auto scratch = static_cast<std::size_t>(width < kNarrow<T> ? width : 0);
            std::vector<T> xhat(scratch), dxhat(scratch);
            T* acc_w = part_w ? part_w + c * width : nullptr;
            T* acc_b = part_b ? part_b + c * width : nullptr;
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* xr = px + r * width;
                const T* gr = pg + r * width;
                const T rs = pr[r], shift = -pr[r] * pm[r];
                if (width >= kNarrow<T>) {
                    norm_backward(gr, xr, pw, rs, shift, true,
                                  dx.defined() ? dx.impl()->data<T>() + r * width : nullptr, acc_w, acc_b, width,
                                  stream, rows_ahead<T>(stream, r, rows, width));
                    continue;
                }
                for (std::int64_t j = 0; j < width; ++j) {
                    xhat[static_cast<std::size_t>(j)] = xr[j] * rs + shift;
                    dxhat[static_cast<std::size_t>(j)] = pw ? gr[j] * pw[j] : gr[j];
                }
                if (acc_w)
                    for (std::int64_t j = 0; j < width; ++j) acc_w[j] += gr[j] * xhat[static_cast<std::size_t>(j)];
                if (acc_b)
                    for (std::int64_t j = 0; j < width; ++j) acc_b[j] += gr[j];
                if (!dx.defined()) continue;
                // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
                const T n = static_cast<T>(width);
                const T mean_d = row_sum(dxhat.data(), width) / n;
                const T mean_dx = row_dot(dxhat.data(), xhat.data(), width) / n;
                T* dr = dx.impl()->data<T>() + r * width;
                for (std::int64_t j = 0; j < width; ++j) {
                    auto ju = static_cast<std::size_t>(j);
                    dr[j] = rs * (dxhat[ju] - mean_d - xhat[ju] * mean_dx);
                }
            }
            if (stream) stream_fence();
        });
        for (const auto& [part_sums, dst] : {std::pair{part_w, &dw}, std::pair{part_b, &db}}) {
            if (!part_sums) continue;
            T* d = dst->impl()->template data<T>();
            std::fill(d, d + width, T(0));
            for (int c = 0; c < chunks; ++c)
                for (std::int64_t j = 0; j < width; ++j) d[j] += part_sums[c * width + j];
        }
    });
}

void rms_norm_forward(const Tensor& x, const Tensor& w, double eps, const Tensor& out, const Tensor& rstd) {
    const std::int64_t rows = rstd.numel(), width = rows == 0 ? 0 : x.numel() / rows;
    detail::dispatch_float(x.dtype(), "rms_norm", [&](auto tag) {
        using T = decltype(tag);
        const bool stream = streams<T>(x.numel());
        using B = xsimd::batch<T>;
        constexpr auto vw = static_cast<std::int64_t>(B::size);
        const T* px = x.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        T* py = out.impl()->data<T>();
        T* pr = rstd.impl()->data<T>();
        for_row_chunks(rows, row_chunks(rows, width), [&](std::int64_t lo, std::int64_t hi, std::int64_t) {
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* xr = px + r * width;
                T* yr = py + r * width;
                // As PyTorch's composite: x * rsqrt(mean(x²) + eps), then * weight.
                if (width >= kNarrow<T>) {
                    const T rs = T(1) / std::sqrt(sum_squares(xr, width) / static_cast<T>(width) + static_cast<T>(eps));
                    pr[r] = rs;
                    norm_apply(xr, rs, T(0), pw, nullptr, yr, width, stream, rows_ahead<T>(stream, r, rows, width));
                    continue;
                }
                const T ms = row_dot(xr, xr, width) / static_cast<T>(width);
                const T rs = T(1) / std::sqrt(ms + static_cast<T>(eps));
                pr[r] = rs;
                std::int64_t j = 0;
                for (; j + vw <= width; j += vw) {
                    B v = B::load_unaligned(xr + j) * B(rs);
                    if (pw) v = v * B::load_unaligned(pw + j);
                    v.store_unaligned(yr + j);
                }
                for (; j < width; ++j) yr[j] = pw ? (xr[j] * rs) * pw[j] : xr[j] * rs;
            }
            if (stream) stream_fence();
        });
    });
}

void rms_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dw) {
    const std::int64_t rows = rstd.numel(), width = rows > 0 ? x.numel() / rows : dw.defined() ? dw.numel() : 0;
    detail::dispatch_float(x.dtype(), "rms_norm", [&](auto tag) {
        using T = decltype(tag);
        const bool stream = streams<T>(x.numel());
        const T* px = x.impl()->data<T>();
        const T* pg = g.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        const T* pr = rstd.impl()->data<T>();
        const int chunks = row_chunks(rows, width);
        Tensor hold_w;
        T* part_w = dw.defined() ? zeroed<T>(hold_w, x.dtype(), chunks * width) : nullptr;
        for_row_chunks(rows, chunks, [&](std::int64_t lo, std::int64_t hi, std::int64_t c) {
            const auto scratch = static_cast<std::size_t>(width < kNarrow<T> ? width : 0);
            std::vector<T> xhat(scratch), dxhat(scratch);
            T* acc_w = part_w ? part_w + c * width : nullptr;
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* xr = px + r * width;
                const T* gr = pg + r * width;
                const T rs = pr[r];
                if (width >= kNarrow<T>) {
                    norm_backward(gr, xr, pw, rs, T(0), false,
                                  dx.defined() ? dx.impl()->data<T>() + r * width : nullptr, acc_w, nullptr, width,
                                  stream, rows_ahead<T>(stream, r, rows, width));
                    continue;
                }
                for (std::int64_t j = 0; j < width; ++j) {
                    xhat[static_cast<std::size_t>(j)] = xr[j] * rs;
                    dxhat[static_cast<std::size_t>(j)] = pw ? gr[j] * pw[j] : gr[j];
                }
                if (acc_w)
                    for (std::int64_t j = 0; j < width; ++j) acc_w[j] += gr[j] * xhat[static_cast<std::size_t>(j)];
                if (!dx.defined()) continue;
                // dx = rstd * (dxhat - xhat * mean(dxhat * xhat))
                const T mean_dx = row_dot(dxhat.data(), xhat.data(), width) / static_cast<T>(width);
                T* dr = dx.impl()->data<T>() + r * width;
                for (std::int64_t j = 0; j < width; ++j) {
                    auto ju = static_cast<std::size_t>(j);
                    dr[j] = rs * (dxhat[ju] - xhat[ju] * mean_dx);
                }
            }
            if (stream) stream_fence();
        });
        if (part_w) {
            T* d = dw.impl()->data<T>();
            std::fill(d, d + width, T(0));
            for (int c = 0; c < chunks; ++c)
                for (std::int64_t j = 0; j < width; ++j) d[j] += part_w[c * width + j];
        }
    });
}

}  // namespace xgrad::kernels::cpu
