// CPU kernels that move data: strided copy with dtype conversion, fill, and dst += alpha * src.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "detail/convert.hpp"
#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// dst (contiguous) = src where src's last two dims are a transposed matrix (its dim -2 has stride
/// 1, its dim -1 a larger one), as x.t().contiguous() makes: tile by tile, so that both the reads
/// (down src's columns) and the writes (along dst's rows) stay in the caches. The element loop read
/// a float per cache line. False (nothing done) for any other layout.
template <typename T>
bool copy_transposed(const Tensor& src, const Tensor& dst, const T* in, T* out) {
    const std::int64_t nd = src.dim();
    if (nd < 2 || !dst.is_contiguous()) return false;
    const auto& shape = src.shape();
    const auto& strides = src.strides();
    const std::int64_t rows = shape[nd - 2], cols = shape[nd - 1];
    const std::int64_t col_stride = strides[static_cast<std::size_t>(nd - 1)];
    if (strides[static_cast<std::size_t>(nd - 2)] != 1 || col_stride < rows || rows < 16 || cols < 16) return false;
    const std::int64_t batches = rows * cols == 0 ? 0 : dst.numel() / (rows * cols);
    constexpr std::int64_t kTile = 32;
    const std::int64_t row_tiles = (rows + kTile - 1) / kTile;
    T* base_out = out + dst.storage_offset();
    parallel_for(0, batches * row_tiles, std::max<std::int64_t>(1, kGrain / (kTile * cols)),
                 [&](std::int64_t lo, std::int64_t hi) {
                     for (std::int64_t w = lo; w < hi; ++w) {
                         const std::int64_t b = w / row_tiles, i0 = (w % row_tiles) * kTile;
                         std::int64_t off = src.storage_offset(), rest = b;  // the batch's offset in src
                         for (std::int64_t d = nd - 3; d >= 0; --d) {
                             off += (rest % shape[d]) * strides[static_cast<std::size_t>(d)];
                             rest /= shape[d];
                         }
                         const T* p = in + off;
                         T* q = base_out + b * rows * cols;
                         const std::int64_t i1 = std::min(rows, i0 + kTile);
                         for (std::int64_t j0 = 0; j0 < cols; j0 += kTile) {
                             const std::int64_t j1 = std::min(cols, j0 + kTile);
                             for (std::int64_t i = i0; i < i1; ++i)
                                 for (std::int64_t j = j0; j < j1; ++j) q[i * cols + j] = p[i + j * col_stride];
                         }
                     }
                 });
    return true;
}

}  // namespace

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
        T* base = static_cast<T*>(dst.impl()->storage->data);
        const StridedGeometry<1> geo(dst.shape(), {&dst});
        parallel_for(0, dst.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                T* q = base + off[0];
                if (st[0] == 1)
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
        // o + a·x, a product then a sum (no contraction); plain loops, which the compiler vectorises
        // (a small parameter's update is then a few instructions, not an expression template's setup).
        parallel_for(0, dst.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            if (alpha == 1.0)
                for (std::int64_t i = lo; i < hi; ++i) o[i] = o[i] + x[i];
            else
                for (std::int64_t i = lo; i < hi; ++i) o[i] = o[i] + a * x[i];
        });
    });
}

}  // namespace xgrad::kernels::cpu
