// CPU kernels that move data: strided copy with dtype conversion, fill, and dst += alpha * src.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "detail/convert.hpp"
#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// Rows [i0, i1) and columns [j0, j1) of a transpose: q[i * cols + j] = p[i + j * cs]. Elements of 4
/// and 8 bytes move as 4x4 and 2x2 blocks through SSE2 registers (shuffles only: the bits are kept,
/// NaN payloads included); the rest one by one.
template <typename T>
void transpose_block(const T* p, T* q, std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1,
                     std::int64_t cols, std::int64_t cs) {
    std::int64_t i = i0;
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 4) {
        const auto* pf = reinterpret_cast<const float*>(p);
        auto* qf = reinterpret_cast<float*>(q);
        for (; i + 4 <= i1; i += 4) {
            std::int64_t j = j0;
            for (; j + 4 <= j1; j += 4) {
                __m128 r0 = _mm_loadu_ps(pf + i + j * cs), r1 = _mm_loadu_ps(pf + i + (j + 1) * cs);
                __m128 r2 = _mm_loadu_ps(pf + i + (j + 2) * cs), r3 = _mm_loadu_ps(pf + i + (j + 3) * cs);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                _mm_storeu_ps(qf + i * cols + j, r0);
                _mm_storeu_ps(qf + (i + 1) * cols + j, r1);
                _mm_storeu_ps(qf + (i + 2) * cols + j, r2);
                _mm_storeu_ps(qf + (i + 3) * cols + j, r3);
            }
            for (; j < j1; ++j)
                for (std::int64_t k = i; k < i + 4; ++k) q[k * cols + j] = p[k + j * cs];
        }
    } else if constexpr (sizeof(T) == 8) {
        const auto* pd = reinterpret_cast<const double*>(p);
        auto* qd = reinterpret_cast<double*>(q);
        for (; i + 2 <= i1; i += 2) {
            std::int64_t j = j0;
            for (; j + 2 <= j1; j += 2) {
                const __m128d r0 = _mm_loadu_pd(pd + i + j * cs), r1 = _mm_loadu_pd(pd + i + (j + 1) * cs);
                _mm_storeu_pd(qd + i * cols + j, _mm_unpacklo_pd(r0, r1));
                _mm_storeu_pd(qd + (i + 1) * cols + j, _mm_unpackhi_pd(r0, r1));
            }
            for (; j < j1; ++j)
                for (std::int64_t k = i; k < i + 2; ++k) q[k * cols + j] = p[k + j * cs];
        }
    }
#endif
    for (; i < i1; ++i)
        for (std::int64_t j = j0; j < j1; ++j) q[i * cols + j] = p[i + j * cs];
}

/// dst (contiguous) = src where src's last two dims are a transposed matrix (its dim -2 has stride
/// 1, its dim -1 a larger one), as x.t().contiguous() makes: tile by tile, so that both the reads
/// (down src's columns) and the writes (along dst's rows) stay in the caches. The element loop read
/// a float per cache line. False (nothing done) for any other layout.
///
/// A tile reads one line or two from each of its columns in src and writes a part of each of its rows
/// in dst. Lines whose addresses are a multiple of 2 KiB apart (a stride of 1024 floats, as in
/// x.t() of a 1500x1024 x) fall into one or two sets of the level-1 cache, which holds 8 to 12 lines
/// per set: a 32x32 tile then misses on every access. On that side the tile is 8 wide and 128 long (16x16
/// where both sides have such a stride). Measured here on floats, one thread: x.t().contiguous() of a
/// 1500x1024 x from 3.3 to about 0.3 ms, of 2048x2048 from 10 to about 2.5 ms (PyTorch 1.13: 1.6 and 4.9).
template <typename T>
bool copy_transposed(const Tensor& src, const Tensor& dst, const T* in, T* out) {
    const std::int64_t nd = src.dim();
    if (!transposed_matrix(src) || !dst.is_contiguous()) return false;
    const auto& shape = src.shape();
    const auto& strides = src.strides();
    const std::int64_t rows = shape[nd - 2], cols = shape[nd - 1];
    const std::int64_t col_stride = strides[static_cast<std::size_t>(nd - 1)];
    if (rows < 16 || cols < 16) return false;
    const std::int64_t batches = rows * cols == 0 ? 0 : dst.numel() / (rows * cols);
    constexpr std::int64_t kConflict = 2048, kSize = sizeof(T);
    const bool reads = col_stride * kSize % kConflict == 0, writes = cols * kSize % kConflict == 0;
    const std::int64_t tile_i = reads && writes ? 16 : reads ? 128 : writes ? 8 : 32;
    const std::int64_t tile_j = reads && writes ? 16 : reads ? 8 : writes ? 128 : 32;
    const std::int64_t row_tiles = (rows + tile_i - 1) / tile_i;
    T* base_out = out + dst.storage_offset();
    parallel_for(0, batches * row_tiles, std::max<std::int64_t>(1, kGrain / (tile_i * cols)),
                 [&](std::int64_t lo, std::int64_t hi) {
                     for (std::int64_t w = lo; w < hi; ++w) {
                         const std::int64_t b = w / row_tiles, i0 = (w % row_tiles) * tile_i;
                         std::int64_t off = src.storage_offset(), rest = b;  // the batch's offset in src
                         for (std::int64_t d = nd - 3; d >= 0; --d) {
                             off += (rest % shape[d]) * strides[static_cast<std::size_t>(d)];
                             rest /= shape[d];
                         }
                         const std::int64_t i1 = std::min(rows, i0 + tile_i);
                         for (std::int64_t j0 = 0; j0 < cols; j0 += tile_j)
                             transpose_block(in + off, base_out + b * rows * cols, i0, i1, j0,
                                             std::min(cols, j0 + tile_j), cols, col_stride);
                     }
                 });
    return true;
}

}  // namespace

bool transposed_matrix(const Tensor& t) {
    const std::int64_t nd = t.dim();
    if (nd < 2) return false;
    const auto& strides = t.strides();
    return strides[static_cast<std::size_t>(nd - 2)] == 1 &&
           strides[static_cast<std::size_t>(nd - 1)] >= t.size(nd - 2);
}

void copy(const Tensor& src, const Tensor& dst) {
    const std::int64_t n = dst.numel();
    detail::dispatch_all(dst.dtype(), [&](auto dtag) {
        using D = decltype(dtag);
        D* out = static_cast<D*>(dst.impl()->storage->data);
        detail::dispatch_all(src.dtype(), [&](auto stag) {
            using S = decltype(stag);
            const S* in = static_cast<const S*>(src.impl()->storage->data);
            // A run of the same dtype is copied by memcpy, whose vector loop and large-copy stores suit
            // the machine (cat along an inner dim was 1.8x PyTorch's time with an element loop).
            auto run = [](D* q, const S* p, std::int64_t count) {
                if constexpr (std::is_same_v<D, S>)
                    std::memcpy(q, p, static_cast<std::size_t>(count) * sizeof(D));
                else
                    for (std::int64_t i = 0; i < count; ++i) q[i] = detail::convert<D>(p[i]);
            };
            if (src.is_contiguous() && dst.is_contiguous()) {
                const S* p = in + src.storage_offset();
                D* q = out + dst.storage_offset();
                parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) { run(q + lo, p + lo, hi - lo); });
                return;
            }
            if constexpr (std::is_same_v<D, S>) {
                if (copy_transposed(src, dst, in, out)) return;
            }
            const StridedGeometry<2> geo(dst.shape(), {&dst, &src});
            parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                    D* q = out + off[0];
                    const S* p = in + off[1];
                    if (st[0] == 1 && st[1] == 1) {
                        run(q, p, count);
                    } else if (st[0] == 1 && st[1] == 0) {  // one value broadcast (an expanded gradient)
                        std::fill(q, q + count, detail::convert<D>(p[0]));
                    } else {
                        for (std::int64_t i = 0; i < count; ++i) q[i * st[0]] = detail::convert<D>(p[i * st[1]]);
                    }
                });
            });
        });
    });
}

void fill(const Tensor& dst, double value) {
    detail::dispatch_all(dst.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T v = detail::convert<T>(value);
        const bool zero_bytes = value == 0 && !std::signbit(value);  // memset's widest stores (factory.cpp)
        T* base = static_cast<T*>(dst.impl()->storage->data);
        const StridedGeometry<1> geo(dst.shape(), {&dst});
        parallel_for(0, dst.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                T* q = base + off[0];
                if (st[0] == 1 && zero_bytes)
                    std::memset(q, 0, static_cast<std::size_t>(count) * sizeof(T));
                else if (st[0] == 1)
                    std::fill(q, q + count, v);
                else
                    for (std::int64_t i = 0; i < count; ++i) q[i * st[0]] = v;
            });
        });
    });
}

void axpy(const Tensor& dst, const Tensor& src, double alpha) {
    detail::dispatch(dst.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* o = dst.impl()->data<T>();
        const T* x = src.impl()->data<T>();
        const T a = static_cast<T>(alpha);
        // o + x as a plain loop, which the compiler vectorises (a small parameter's update is then a
        // few instructions); o + a·x as PyTorch's add_(x, alpha=a), fused where the CPU has FMA.
        parallel_for(0, dst.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            if constexpr (std::is_floating_point_v<T>) {
                if (alpha != 1.0) return axpy(o + lo, x + lo, a, hi - lo);
            }
            if (alpha == 1.0)
                for (std::int64_t i = lo; i < hi; ++i) o[i] = o[i] + x[i];
            else
                for (std::int64_t i = lo; i < hi; ++i) o[i] = o[i] + a * x[i];
        });
    });
}

void addcmul(const Tensor& dst, const Tensor& a, const Tensor& b) {
    detail::dispatch_float(dst.dtype(), "addcmul_", [&](auto tag) {
        using T = decltype(tag);
        T* o = dst.impl()->data<T>();
        const T* x = a.impl()->data<T>();
        const T* y = b.impl()->data<T>();
        parallel_for(0, dst.numel(), kGrain,
                     [&](std::int64_t lo, std::int64_t hi) { vmla(x + lo, y + lo, o + lo, o + lo, hi - lo); });
    });
}

}  // namespace xgrad::kernels::cpu
