// CPU im2col/col2im (convolution as one matrix product) and 2-D max/average pooling, each parallel
// over images or planes, with PyTorch's loop orders so that sums of the same terms add up alike.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/dispatch.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

using i64 = std::int64_t;

/// The window of output index `o` along one axis: [start, end) clipped to [0, size), and its divisor
/// before clipping (average pooling with count_include_pad), as PyTorch's avg_pool2d computes them.
struct Span {
    i64 start, end, padded;
};

Span span(i64 o, i64 size, i64 out, i64 kernel, i64 stride, i64 pad, bool adaptive) {
    if (adaptive) {
        const i64 s = (o * size) / out, e = ((o + 1) * size + out - 1) / out;
        return {s, e, e - s};
    }
    i64 s = o * stride - pad, e = std::min(s + kernel, size + pad);
    const i64 padded = e - s;
    return {std::max<i64>(s, 0), std::min(e, size), padded};
}

/// The divisor of a window: divisor_override, else its size with or without the padding.
i64 divisor_of(const Span& h, const Span& w, const Window2d& g) {
    if (g.divisor != 0 && !g.adaptive) return g.divisor;
    return g.count_include_pad || g.adaptive ? h.padded * w.padded : (h.end - h.start) * (w.end - w.start);
}

/// The output columns [lo, hi) whose input column ow * stride_w + off, for kernel column kw, lies in the
/// image (the others read the zero padding).
struct Cols {
    i64 lo, hi, off;
};

Cols cols_in(i64 kw, const Window2d& w) {
    const i64 off = kw * w.dilation_w - w.pad_w, s = w.stride_w;
    const i64 lo = std::min(off >= 0 ? 0 : (-off + s - 1) / s, w.out_w);
    const i64 last = w.width - 1 - off;  // the largest ow * s allowed
    const i64 hi = last < 0 ? lo : std::clamp(last / s + 1, lo, w.out_w);
    return {lo, hi, off};
}

/// Copies n elements, typically a few dozen (an output row of im2col): in pieces of fixed size, which
/// the compiler inlines, rather than through a call to memmove per row. The last piece ends at the
/// last element and may overlap the one before it (the source and destination never overlap).
template <typename T>
void copy_short(const T* src, T* dst, i64 n) {
    const auto* s = reinterpret_cast<const unsigned char*>(src);
    auto* d = reinterpret_cast<unsigned char*>(dst);
    const i64 bytes = n * static_cast<i64>(sizeof(T));
    auto pieces = [&](auto size) {  // bytes >= size
        i64 i = 0;
        for (; i + size <= bytes; i += size) std::memcpy(d + i, s + i, size);
        if (i < bytes) std::memcpy(d + bytes - size, s + bytes - size, size);
    };
    if (bytes >= 64)
        pieces(std::integral_constant<i64, 64>{});
    else if (bytes >= 32)
        pieces(std::integral_constant<i64, 32>{});
    else if (bytes >= 16)
        pieces(std::integral_constant<i64, 16>{});
    else if (bytes >= 8)
        pieces(std::integral_constant<i64, 8>{});
    else if (bytes >= 4)
        pieces(std::integral_constant<i64, 4>{});
    else if (bytes > 0)
        std::memcpy(d, s, static_cast<std::size_t>(bytes));
}

/// Whether a row of the columns is its input plane shifted by a fixed offset: stride 1, and output rows
/// as wide as the input's (padding "same" in width, the usual 3×3 with padding 1).
bool shifted_rows(const Window2d& w) {
    return w.stride_h == 1 && w.stride_w == 1 && w.out_w == w.width;
}

/// Where such a row of the columns reads its plane, for a kernel row offset dh = kh·dilation - pad and
/// a kernel column's Cols: the output rows [oh0, oh1) inside the plane, and the run of the row from
/// the first in-image element of row oh0 to the last of row oh1 - 1 ([first, last)), which reads the
/// plane at first + shift on (all inside it). `empty` when no element reads the plane.
struct ShiftedRun {
    i64 oh0, oh1, first, last, shift;
    bool empty;
};

ShiftedRun shifted_run(i64 dh, const Cols& cw, const Window2d& w) {
    const i64 oh0 = std::clamp<i64>(-dh, 0, w.out_h), oh1 = std::clamp<i64>(w.height - dh, oh0, w.out_h);
    return {oh0,
            oh1,
            oh0 * w.width + cw.lo,
            (oh1 - 1) * w.width + cw.hi,
            dh * w.width + cw.off,
            oh0 == oh1 || cw.lo == cw.hi};
}

/// Sets the window columns outside [cw.lo, cw.hi) of the run's rows to `value`.
template <typename T>
void fill_outside(T* row, const ShiftedRun& run, const Cols& cw, i64 width, T value) {
    for (i64 oh = run.oh0; oh < run.oh1; ++oh) {
        T* r = row + oh * width;
        std::fill(r, r + cw.lo, value);
        std::fill(r + cw.hi, r + width, value);
    }
}

/// One row of im2col's columns when shifted_rows: row[oh·W + ow] = src[(oh + dh)·W + ow + cw.off] where
/// that lies in the plane, else 0. The run is copied at once, and the window columns outside
/// [cw.lo, cw.hi) zeroed afterwards.
template <typename T>
void shifted_row(const T* src, T* row, i64 dh, const Cols& cw, const Window2d& w) {
    const ShiftedRun run = shifted_run(dh, cw, w);
    if (run.empty) return (void)std::fill(row, row + w.out_h * w.width, T(0));
    std::fill(row, row + run.oh0 * w.width, T(0));
    std::fill(row + run.oh1 * w.width, row + w.out_h * w.width, T(0));
    std::memcpy(row + run.first, src + run.first + run.shift,
                static_cast<std::size_t>(run.last - run.first) * sizeof(T));
    fill_outside(row, run, cw, w.width, T(0));
}

/// The adjoint of shifted_row: dst[(oh + dh)·W + ow + cw.off] += row[oh·W + ow] for the window columns in
/// [cw.lo, cw.hi) and the rows inside the plane, as one loop over their run. The row's other columns
/// in that run are set to -0.0 first, which leaves any sum as it is (x + -0 is x, -0 included), so
/// every element gets the same additions in the same order as in the loop over windows.
template <typename T>
void add_shifted_row(T* row, T* dst, i64 dh, const Cols& cw, const Window2d& w) {
    const ShiftedRun run = shifted_run(dh, cw, w);
    if (run.empty) return;
    fill_outside(row, run, cw, w.width, T(-0.0));
    const T* __restrict src = row + run.first;
    T* __restrict out = dst + run.first + run.shift;
    for (i64 i = 0; i < run.last - run.first; ++i) out[i] += src[i];
}

/// Runs `body(p)` for each of `n` planes (or images), split between threads.
template <typename F>
void for_planes(i64 n, i64 work_per_plane, F&& body) {
    const i64 grain = std::max<i64>(1, 32768 / std::max<i64>(1, work_per_plane));
    parallel_for(0, n, grain, [&](i64 lo, i64 hi) {
        for (i64 p = lo; p < hi; ++p) body(p);
    });
}

}  // namespace

void im2col(const Tensor& x, const Tensor& cols, const Window2d& w) {
    const i64 plane = w.height * w.width, image = w.channels * plane;
    const i64 n = image == 0 ? 0 : x.numel() / image, rows = w.channels * w.kernel_h * w.kernel_w;
    const i64 length = w.out_h * w.out_w;
    detail::dispatch_float(x.dtype(), "conv2d", [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.impl()->data<T>();
        T* pc = cols.impl()->data<T>();
        const bool shifted = shifted_rows(w);
        for_planes(n, rows * length, [&](i64 b) {
            const T* xi = px + b * image;
            T* ci = pc + b * rows * length;
            for (i64 r = 0; r < rows; ++r) {
                const i64 kw = r % w.kernel_w, kh = (r / w.kernel_w) % w.kernel_h, c = r / (w.kernel_w * w.kernel_h);
                T* row = ci + r * length;
                if (shifted) {
                    shifted_row(xi + c * plane, row, kh * w.dilation_h - w.pad_h, cols_in(kw, w), w);
                    continue;
                }
                for (i64 oh = 0; oh < w.out_h; ++oh) {
                    const i64 ih = oh * w.stride_h - w.pad_h + kh * w.dilation_h;
                    T* dst = row + oh * w.out_w;
                    if (ih < 0 || ih >= w.height) {
                        std::fill(dst, dst + w.out_w, T(0));
                        continue;
                    }
                    const T* src = xi + c * plane + ih * w.width;
                    const Cols cw = cols_in(kw, w);
                    for (i64 ow = 0; ow < cw.lo; ++ow) dst[ow] = T(0);
                    if (w.stride_w == 1)
                        copy_short(src + cw.lo + cw.off, dst + cw.lo, cw.hi - cw.lo);
                    else
                        for (i64 ow = cw.lo; ow < cw.hi; ++ow) dst[ow] = src[ow * w.stride_w + cw.off];
                    for (i64 ow = cw.hi; ow < w.out_w; ++ow) dst[ow] = T(0);
                }
            }
        });
    });
}

void col2im(const Tensor& cols, const Tensor& dx, const Window2d& w) {
    const i64 plane = w.height * w.width, image = w.channels * plane;
    const i64 n = image == 0 ? 0 : dx.numel() / image, rows = w.channels * w.kernel_h * w.kernel_w;
    const i64 length = w.out_h * w.out_w;
    detail::dispatch_float(dx.dtype(), "conv2d", [&](auto tag) {
        using T = decltype(tag);
        T* pc = cols.impl()->data<T>();
        T* pd = dx.impl()->data<T>();
        const bool shifted = shifted_rows(w);
        for_planes(n, rows * length, [&](i64 b) {
            T* di = pd + b * image;
            T* ci = pc + b * rows * length;
            std::fill(di, di + image, T(0));
            for (i64 r = 0; r < rows; ++r) {
                const i64 kw = r % w.kernel_w, kh = (r / w.kernel_w) % w.kernel_h, c = r / (w.kernel_w * w.kernel_h);
                T* row = ci + r * length;
                if (shifted) {
                    add_shifted_row(row, di + c * plane, kh * w.dilation_h - w.pad_h, cols_in(kw, w), w);
                    continue;
                }
                for (i64 oh = 0; oh < w.out_h; ++oh) {
                    const i64 ih = oh * w.stride_h - w.pad_h + kh * w.dilation_h;
                    if (ih < 0 || ih >= w.height) continue;
                    T* dst = di + c * plane + ih * w.width;
                    const T* src = row + oh * w.out_w;
                    const Cols cw = cols_in(kw, w);
                    if (w.stride_w == 1) {
                        for (i64 ow = cw.lo; ow < cw.hi; ++ow) dst[ow + cw.off] += src[ow];
                    } else {
                        for (i64 ow = cw.lo; ow < cw.hi; ++ow) dst[ow * w.stride_w + cw.off] += src[ow];
                    }
                }
            }
        });
    });
}

void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Window2d& w) {
    const i64 plane = w.height * w.width, out_plane = w.out_h * w.out_w;
    const i64 planes = out_plane == 0 ? 0 : out.numel() / out_plane;
    // The taps k of a window starting at `start` (stride `dilation`) that land in [0, size).
    auto taps = [](i64 start, i64 dilation, i64 kernel, i64 size) {
        const i64 lo = start < 0 ? (-start + dilation - 1) / dilation : 0;
        const i64 hi = start >= size ? 0 : std::min(kernel, (size - start + dilation - 1) / dilation);
        return std::pair<i64, i64>{lo, std::max(lo, hi)};
    };
    // The output columns [inner_lo, inner_hi) whose windows lie in the row (no padding, no clipping):
    // they go through vec_math side by side, the others one at a time.
    const i64 inner_lo = std::min(w.out_w, (w.pad_w + w.stride_w - 1) / w.stride_w);
    const i64 reach = w.width - 1 - (w.kernel_w - 1) * w.dilation_w + w.pad_w;
    const i64 inner_hi = reach < 0 ? inner_lo : std::max(inner_lo, std::min(w.out_w, reach / w.stride_w + 1));
    const bool side_by_side = inner_hi > inner_lo && plane < (i64{1} << 31);
    detail::dispatch_float(x.dtype(), "max_pool2d", [&](auto tag) {
        using T = decltype(tag);
        using Idx = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
        const T* px = x.impl()->data<T>();
        T* po = out.impl()->data<T>();
        i64* pi = indices.impl()->data<i64>();
        for_planes(planes, out_plane * w.kernel_h * w.kernel_w, [&](i64 p) {
            const T* xp = px + p * plane;
            std::vector<T> m(static_cast<std::size_t>(side_by_side ? inner_hi - inner_lo : 0));
            std::vector<Idx> best(m.size());
            for (i64 oh = 0; oh < w.out_h; ++oh) {
                const i64 h0 = oh * w.stride_h - w.pad_h;
                const auto rows = taps(h0, w.dilation_h, w.kernel_h, w.height);
                const i64 kh0 = rows.first, kh1 = rows.second;  // not a structured binding: the lambda below uses them
                T* orow = po + p * out_plane + oh * w.out_w;
                i64* irow = pi + p * out_plane + oh * w.out_w;
                // As PyTorch: the first valid position and -inf to start, then each value taken where it
                // is larger or NaN (the first maximum wins, and the last NaN), in the order of the taps.
                auto one = [&](i64 ow) {
                    const i64 w0 = ow * w.stride_w - w.pad_w;
                    const auto [kw0, kw1] = taps(w0, w.dilation_w, w.kernel_w, w.width);
                    i64 at_best =
                        kh0 < kh1 && kw0 < kw1 ? (h0 + kh0 * w.dilation_h) * w.width + w0 + kw0 * w.dilation_w : -1;
                    T mx = -std::numeric_limits<T>::infinity();
                    for (i64 kh = kh0; kh < kh1; ++kh)
                        for (i64 kw = kw0; kw < kw1; ++kw) {
                            const i64 at = (h0 + kh * w.dilation_h) * w.width + w0 + kw * w.dilation_w;
                            const T v = xp[at];
                            if (v > mx || std::isnan(v)) {
                                mx = v;
                                at_best = at;
                            }
                        }
                    orow[ow] = mx;
                    irow[ow] = at_best;
                };
                if (!side_by_side || kh0 >= kh1) {
                    for (i64 ow = 0; ow < w.out_w; ++ow) one(ow);
                    continue;
                }
                for (i64 ow = 0; ow < inner_lo; ++ow) one(ow);
                for (i64 ow = inner_hi; ow < w.out_w; ++ow) one(ow);
                const i64 count = inner_hi - inner_lo, first = inner_lo * w.stride_w - w.pad_w;
                std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
                for (i64 j = 0; j < count; ++j)
                    best[j] = static_cast<Idx>((h0 + kh0 * w.dilation_h) * w.width + first + j * w.stride_w);
                for (i64 kh = kh0; kh < kh1; ++kh)
                    for (i64 kw = 0; kw < w.kernel_w; ++kw) {
                        const i64 at = (h0 + kh * w.dilation_h) * w.width + first + kw * w.dilation_w;
                        max_pool_taps(xp + at, w.stride_w, count, at, m.data(), best.data());
                    }
                std::copy(m.begin(), m.end(), orow + inner_lo);
                std::copy(best.begin(), best.end(), irow + inner_lo);
            }
        });
    });
}

void max_pool2d_backward(const Tensor& grad, const Tensor& indices, const Tensor& dx, const Window2d& w) {
    const i64 plane = w.height * w.width, out_plane = w.out_h * w.out_w;
    const i64 planes = plane == 0 ? 0 : dx.numel() / plane;
    detail::dispatch_float(dx.dtype(), "max_pool2d", [&](auto tag) {
        using T = decltype(tag);
        const T* pg = grad.impl()->data<T>();
        const i64* pi = indices.impl()->data<i64>();
        T* pd = dx.impl()->data<T>();
        for_planes(planes, plane + out_plane, [&](i64 p) {
            T* dp = pd + p * plane;
            std::fill(dp, dp + plane, T(0));
            for (i64 o = 0; o < out_plane; ++o) {
                const i64 idx = pi[p * out_plane + o];
                if (idx >= 0) dp[idx] += pg[p * out_plane + o];
            }
        });
    });
}

void avg_pool2d(const Tensor& x, const Tensor& out, const Window2d& w) {
    const i64 plane = w.height * w.width, out_plane = w.out_h * w.out_w;
    const i64 planes = out_plane == 0 ? 0 : out.numel() / out_plane;
    const char* op = w.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d";
    detail::dispatch_float(x.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.impl()->data<T>();
        T* po = out.impl()->data<T>();
        for_planes(planes, plane, [&](i64 p) {
            const T* xp = px + p * plane;
            for (i64 oh = 0; oh < w.out_h; ++oh) {
                const Span sh = span(oh, w.height, w.out_h, w.kernel_h, w.stride_h, w.pad_h, w.adaptive);
                for (i64 ow = 0; ow < w.out_w; ++ow) {
                    const Span sw = span(ow, w.width, w.out_w, w.kernel_w, w.stride_w, w.pad_w, w.adaptive);
                    T sum = 0;
                    for (i64 ih = sh.start; ih < sh.end; ++ih)
                        for (i64 iw = sw.start; iw < sw.end; ++iw) sum += xp[ih * w.width + iw];
                    po[p * out_plane + oh * w.out_w + ow] = sum / static_cast<T>(divisor_of(sh, sw, w));
                }
            }
        });
    });
}

void avg_pool2d_backward(const Tensor& grad, const Tensor& dx, const Window2d& w) {
    const i64 plane = w.height * w.width, out_plane = w.out_h * w.out_w;
    const i64 planes = plane == 0 ? 0 : dx.numel() / plane;
    const char* op = w.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d";
    detail::dispatch_float(dx.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        const T* pg = grad.impl()->data<T>();
        T* pd = dx.impl()->data<T>();
        for_planes(planes, plane + out_plane, [&](i64 p) {
            T* dp = pd + p * plane;
            std::fill(dp, dp + plane, T(0));
            for (i64 oh = 0; oh < w.out_h; ++oh) {
                const Span sh = span(oh, w.height, w.out_h, w.kernel_h, w.stride_h, w.pad_h, w.adaptive);
                for (i64 ow = 0; ow < w.out_w; ++ow) {
                    const Span sw = span(ow, w.width, w.out_w, w.kernel_w, w.stride_w, w.pad_w, w.adaptive);
                    const T g = pg[p * out_plane + oh * w.out_w + ow] / static_cast<T>(divisor_of(sh, sw, w));
                    for (i64 ih = sh.start; ih < sh.end; ++ih)
                        for (i64 iw = sw.start; iw < sw.end; ++iw) dp[ih * w.width + iw] += g;
                }
            }
        });
    });
}

}  // namespace xgrad::kernels::cpu
