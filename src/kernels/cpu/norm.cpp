// CPU LayerNorm and RMSNorm kernels: rows split into chunks run on the pool's threads, and
// per-chunk partial sums for LayerNorm's weight and bias gradients, added in chunk order at the end.
//
// Every row runs vec_math's row kernels (the best instruction set this CPU has, picked at run time).
// LayerNorm's forward and backward give PyTorch 1.13's bits (the weight and bias gradients where the
// rows are one chunk, fewer than 2^16 elements, as PyTorch sums them on one thread); RMSNorm's are
// PyTorch's composite x * rsqrt(mean(x.pow(2)) + eps) * w in its bits, forward and backward.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/sum_order.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// Runs `body(lo, hi, chunk)` over row ranges; `chunks` ranges when the work is large enough.
template <typename F>
void for_row_chunks(std::int64_t rows, int chunks, F&& body) {
    parallel_for(0, chunks, 1, [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t c = c0; c < c1; ++c) body(rows * c / chunks, rows * (c + 1) / chunks, c);
    });
}

/// Rows taken a block at a time by the norms' kernels: the block's sums first, then its rows' outputs.
/// Row by row (a sum, then that row's output), RMSNorm's 16384×768 float forward ran at 25 GB/s here
/// against LayerNorm's 39, which takes its moments four rows at a time; in blocks of four, 38.
constexpr std::int64_t kBlockRows = 4;

/// How many row chunks a (rows × width) kernel is split into: a function of the shape alone, so the
/// weight gradients (summed per chunk, then over chunks in order) do not depend on the thread count.
int row_chunks(std::int64_t rows, std::int64_t width) {
    constexpr std::int64_t kMaxChunks = 16;
    if (rows * width < (1 << 16) || rows < 2) return 1;
    return static_cast<int>(std::min(rows, kMaxChunks));
}

/// Whether a kernel writes an output of n elements of T with non-temporal stores, from `from` bytes
/// (vec_math's kStreamBytes for the forwards): the rows are written one by one, so the decision is the
/// whole tensor's.
template <typename T>
bool streams(std::int64_t n, std::int64_t from = kStreamBytes) {
    return n * static_cast<std::int64_t>(sizeof(T)) >= from;
}

/// The backwards' `from`: half kStreamBytes. Forward and backward together cycle four tensors of x's
/// size (x, y, dy, dx) through the level-3 cache, which both cores (and, on a VM, other guests) share;
/// the backward writes dx while it reads dy and x, and from about 4 MiB on, ordinary stores of dx pushed
/// out rows that were still to be read. Forward+backward, medians of alternating runs (this noisy 2-core
/// VM): 2048x768 floats on one thread 2.6 -> 1.9 ms (LayerNorm) and 1.4 -> 1.1 (RMSNorm), on two
/// 0.97 -> 0.64 and 0.76 -> 0.45; 1024x1500 on one thread 2.4 -> 2.2 and 2.0 -> 1.8, on two 1.0 -> 0.6
/// and 0.72 -> 0.44; 700x1500 about the same. The forwards keep kStreamBytes: a y streamed from 4 MiB ran
/// faster on one thread but slower on two (RMSNorm 2048x768: 0.13 -> 0.24 ms).
constexpr std::int64_t kBackwardStreamBytes = kStreamBytes / 2;

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

/// dst = the per-chunk partial sums (`chunks` rows of `width` at part) added in chunk order, starting
/// from 0 (as PyTorch adds its per-thread buffers); nothing when part is null.
template <typename T>
void add_chunks(const T* part, int chunks, std::int64_t width, const Tensor& dst) {
    if (!part) return;
    T* d = dst.impl()->data<T>();
    std::fill(d, d + width, T(0));
    for (int c = 0; c < chunks; ++c)
        for (std::int64_t j = 0; j < width; ++j) d[j] += part[c * width + j];
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
            // Four rows at a time (fewer at the end of the chunk).
            for (std::int64_t r0 = lo; r0 < hi; r0 += 4) {
                const std::int64_t r1 = std::min(r0 + 3, hi - 1);
                T m[4], m2[4];
                norm_moments_block(px + r0 * width, static_cast<int>(r1 - r0 + 1), width, m, m2);
                for (std::int64_t r = r0, k = 0; r <= r1; ++r, ++k) {
                    // As PyTorch's CPU kernel: its moments, rstd = 1 / sqrt(var + eps), then
                    // (x * rstd + (-rstd * mean)) * w + b.
                    const T rs = T(1) / std::sqrt(m2[k] / static_cast<T>(width) + static_cast<T>(eps));
                    pm[r] = m[k];
                    pr[r] = rs;
                    norm_apply(px + r * width, rs, -rs * m[k], pw, pb, py + r * width, width, stream,
                               rows_ahead<T>(stream, r, rows, width), true);
                }
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
        const bool stream = streams<T>(x.numel(), kBackwardStreamBytes);
        const T* px = x.impl()->data<T>();
        const T* pg = g.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        const T* pm = mean.impl()->data<T>();
        const T* pr = rstd.impl()->data<T>();
        T* pdx = dx.defined() ? dx.impl()->data<T>() : nullptr;
        const int chunks = row_chunks(rows, width);
        // Per-chunk partial sums of dweight and dbias, added in chunk order at the end.
        const std::int64_t part = chunks * width;
        Tensor hold_w, hold_b;
        T* part_w = dw.defined() ? zeroed<T>(hold_w, x.dtype(), part) : nullptr;
        T* part_b = db.defined() ? zeroed<T>(hold_b, x.dtype(), part) : nullptr;
        for_row_chunks(rows, chunks, [&](std::int64_t lo, std::int64_t hi, std::int64_t c) {
            T* acc_w = part_w ? part_w + c * width : nullptr;
            T* acc_b = part_b ? part_b + c * width : nullptr;
            // Rows side by side where they come from the caches (1.1-1.2x at 1024x1500 floats), or from
            // memory with rows longer than 4 KiB: a lone row's first pass waits on its two chains of
            // dependent sums, and four rows took 0.85-0.9x the time at 1500, 2048, 3000 and 4096 floats a
            // row. Rows of up to 4 KiB from memory go one at a time: four ran 15-20 % slower at 16384x768
            // (one thread, the same process taking turns).
            const bool side_by_side = !stream || width * static_cast<std::int64_t>(sizeof(T)) > 4096;
            const std::int64_t block = side_by_side ? kBlockRows : 1;
            for (std::int64_t r0 = lo; r0 < hi; r0 += block) {
                const std::int64_t r1 = std::min(r0 + block, hi);
                layer_norm_rows_backward(pg + r0 * width, px + r0 * width, pw, pr + r0, pm + r0,
                                         pdx ? pdx + r0 * width : nullptr, acc_w, acc_b, width, r1 - r0, stream,
                                         rows_ahead<T>(stream, r1 - 1, rows, width, r1 - r0));
            }
            if (stream) stream_fence();
        });
        add_chunks(part_w, chunks, width, dw);
        add_chunks(part_b, chunks, width, db);
    });
}

void rms_norm_forward(const Tensor& x, const Tensor& w, double eps, const Tensor& out, const Tensor& rstd) {
    const std::int64_t rows = rstd.numel(), width = rows == 0 ? 0 : x.numel() / rows;
    detail::dispatch_float(x.dtype(), "rms_norm", [&](auto tag) {
        using T = decltype(tag);
        const bool stream = streams<T>(x.numel());
        const T* px = x.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        T* py = out.impl()->data<T>();
        T* pr = rstd.impl()->data<T>();
        for_row_chunks(rows, row_chunks(rows, width), [&](std::int64_t lo, std::int64_t hi, std::int64_t) {
            for (std::int64_t r0 = lo; r0 < hi; r0 += kBlockRows) {
                const std::int64_t r1 = std::min(r0 + kBlockRows, hi);
                // As PyTorch's composite x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight, in
                // its bits: Σx² in the order of PyTorch's sum over the last dim (sum_order.hpp), then
                // divided by the width, as its CPU mean.
                T sq[kBlockRows];
                row_sums<T, true>(px + r0 * width, r1 - r0, width, sq);
                for (std::int64_t r = r0; r < r1; ++r)
                    pr[r] = T(1) / std::sqrt(sq[r - r0] / static_cast<T>(width) + static_cast<T>(eps));
                for (std::int64_t r = r0; r < r1; ++r)
                    // x * rs + (-0) is x * rs, -0 included.
                    norm_apply(px + r * width, pr[r], T(-0.0), pw, nullptr, py + r * width, width, stream,
                               rows_ahead<T>(stream, r, rows, width));
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
        const bool stream = streams<T>(x.numel(), kBackwardStreamBytes);
        const T* px = x.impl()->data<T>();
        const T* pg = g.impl()->data<T>();
        const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
        const T* pr = rstd.impl()->data<T>();
        T* pdx = dx.defined() ? dx.impl()->data<T>() : nullptr;
        // The gradients of PyTorch's composite y = x * r * w, r = rsqrt(x.pow(2).mean(dims) + eps), as its
        // autograd computes them, in their bits: with t = g * w,
        //   dx = t * r + dms * (2 * x), dms = ((Σ t·x) * -0.5) * (r * r * r) / width
        // (MulBackward0, then RsqrtBackward0, MeanBackward1 and PowBackward0, the two terms added by the
        // engine), the sum in the order of PyTorch's sum over the row; and dw = Σ over rows of
        // g * (x * r), in the order of its sum over the leading dims (ColumnSums: outer_sum's order).
        const ColumnSums<T> columns(rows, width);
        Tensor hold_w;
        T* slots = dw.defined() ? zeroed<T>(hold_w, x.dtype(), columns.size()) : nullptr;
        const std::int64_t cut = columns.cascaded();
        // Row chunks start at multiples of the column sums' alignment.
        const std::int64_t align = columns.align(), blocks = (rows + align - 1) / align;
        const int chunks = static_cast<int>(std::min<std::int64_t>(row_chunks(rows, width), blocks));
        parallel_for(0, chunks, 1, [&](std::int64_t c0, std::int64_t c1) {
            for (std::int64_t c = c0; c < c1; ++c) {
                const std::int64_t lo = std::min(rows, blocks * c / chunks * align);
                const std::int64_t hi = std::min(rows, blocks * (c + 1) / chunks * align);
                // Streamed rows one at a time, as LayerNorm's backward: blocks of four ran 3-7 % slower at
                // 16384x768 floats.
                const std::int64_t block = stream ? 1 : kBlockRows;
                for (std::int64_t r0 = lo; r0 < hi; r0 += block) {
                    const std::int64_t r1 = std::min(r0 + block, hi);
                    T dms[kBlockRows];
                    for (std::int64_t r = r0; r < r1; ++r) {
                        const T* gr = pg + r * width;
                        const T* xr = px + r * width;
                        T quads[kLanes<T> * 4];
                        std::pair<T*, T*> acc{nullptr, nullptr};
                        if (slots) acc = columns.row_slots(slots, r);
                        rms_norm_row_terms(gr, xr, pw, pr[r], pdx ? quads : nullptr, acc.first, acc.second, cut, width);
                        if (!pdx) continue;
                        // Σ t·x in the order of PyTorch's sum of the stored products q = t * x, its whole
                        // groups of four registers summed on the way (q is never stored).
                        const T sum = inner_sum_from_quads<T>(
                            quads, width, [&](std::int64_t i) { return (pw ? gr[i] * pw[i] : gr[i]) * xr[i]; });
                        dms[r - r0] = sum * T(-0.5) * (pr[r] * pr[r] * pr[r]) / static_cast<T>(width);
                    }
                    if (!pdx) continue;
                    for (std::int64_t r = r0; r < r1; ++r)
                        rms_norm_row_dx(pg + r * width, px + r * width, pw, pr[r], dms[r - r0], pdx + r * width, width,
                                        stream, rows_ahead<T>(stream, r, rows, width));
                }
            }
            if (stream) stream_fence();
        });
        if (slots) columns.finish(slots, dw.impl()->data<T>());
    });
}

}  // namespace xgrad::kernels::cpu
