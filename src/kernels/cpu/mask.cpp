// CPU kernel of selection by a boolean mask: where(cond, x, y), which masked_fill builds on too.
#include "detail/dispatch.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"

namespace xgrad::kernels::cpu {

void where(const Tensor& cond, const Tensor& x, const Tensor& y, const Tensor& out) {
    if (out.numel() == 0) return;
    detail::dispatch_all(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* o = static_cast<T*>(out.impl()->storage->data);
        const bool* c = static_cast<const bool*>(cond.impl()->storage->data);
        const T* a = static_cast<const T*>(x.impl()->storage->data);
        const T* b = static_cast<const T*>(y.impl()->storage->data);
        const StridedGeometry<4> geo(out.shape(), {&out, &cond, &x, &y});
        parallel_for(0, out.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                for (std::int64_t i = 0; i < count; ++i)
                    o[off[0] + i * st[0]] = c[off[1] + i * st[1]] ? a[off[2] + i * st[2]] : b[off[3] + i * st[3]];
            });
        });
    });
}

}  // namespace xgrad::kernels::cpu
