// CPU kernels that move data: strided copy with dtype conversion, fill, and dst += alpha * src.
#include "detail/convert.hpp"
#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"

namespace xgrad::kernels::cpu {

void copy(const Tensor& src, const Tensor& dst) {
    const std::int64_t n = dst.numel();
    detail::dispatch_all(dst.dtype(), [&](auto dtag) {
        using D = decltype(dtag);
        D* out = static_cast<D*>(dst.impl()->storage->data);
        detail::dispatch_all(src.dtype(), [&](auto stag) {
            using S = decltype(stag);
            const S* in = static_cast<const S*>(src.impl()->storage->data);
            if (src.is_contiguous() && dst.is_contiguous()) {
                const S* p = in + src.storage_offset();
                D* q = out + dst.storage_offset();
                parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                    for (std::int64_t i = lo; i < hi; ++i) q[i] = detail::convert<D>(p[i]);
                });
                return;
            }
            const StridedGeometry<2> geo(dst.shape(), {&dst, &src});
            parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                    D* q = out + off[0];
                    const S* p = in + off[1];
                    if (st[0] == 1 && st[1] == 1) {
                        for (std::int64_t i = 0; i < count; ++i) q[i] = detail::convert<D>(p[i]);
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
