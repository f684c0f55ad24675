// CPU kernels of indexing along one dim: gather and scatter (index_select, index_add, Embedding and
// one_hot are built on them by the ops).
#include <algorithm>
#include <type_traits>

#include "detail/dispatch.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// to[i] = from[at[i] * stride] for i < count: four elements per step, without the multiply for the
/// stride of a contiguous dim (1). gather(1) of 1024x1500 floats with a full-size index went from
/// 1.31 to 1.13 ms (the loop with a multiply per element and stores that might alias the inputs).
template <typename T>
void gather_run(T* __restrict to, const T* __restrict from, const std::int64_t* __restrict at, std::int64_t count,
                std::int64_t stride) {
    std::int64_t i = 0;
    if (stride == 1) {
        for (; i + 4 <= count; i += 4) {
            const T a = from[at[i]], b = from[at[i + 1]], c = from[at[i + 2]], d = from[at[i + 3]];
            to[i] = a;
            to[i + 1] = b;
            to[i + 2] = c;
            to[i + 3] = d;
        }
        for (; i < count; ++i) to[i] = from[at[i]];
        return;
    }
    for (; i < count; ++i) to[i] = from[at[i] * stride];
}

}  // namespace

void gather(const Tensor& src, const Tensor& index, std::int64_t stride, const Tensor& out) {
    if (index.numel() == 0) return;
    detail::dispatch_all(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* o = static_cast<T*>(out.impl()->storage->data);
        const T* s = static_cast<const T*>(src.impl()->storage->data);
        const auto* idx = static_cast<const std::int64_t*>(index.impl()->storage->data);
        const StridedGeometry<3> geo(index.shape(), {&out, &src, &index});
        parallel_for(0, index.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
            geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                if (st[2] == 0) {  // one index for the run (a row of index_select, Embedding): a row copy
                    const T* row = s + off[1] + idx[off[2]] * stride;
                    if (st[0] == 1 && st[1] == 1) {
                        std::copy(row, row + count, o + off[0]);
                    } else {
                        for (std::int64_t i = 0; i < count; ++i) o[off[0] + i * st[0]] = row[i * st[1]];
                    }
                    return;
                }
                if (st[0] == 1 && st[1] == 0 && st[2] == 1) {  // along the run's own dim (gather(-1))
                    gather_run(o + off[0], s + off[1], idx + off[2], count, stride);
                    return;
                }
                for (std::int64_t i = 0; i < count; ++i)
                    o[off[0] + i * st[0]] = s[off[1] + i * st[1] + idx[off[2] + i * st[2]] * stride];
            });
        });
    });
}

void scatter(const Tensor& dst, const Tensor& index, std::int64_t stride, const Tensor& src, bool accumulate) {
    if (index.numel() == 0) return;
    detail::dispatch_all(dst.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* d = static_cast<T*>(dst.impl()->storage->data);
        const T* s = static_cast<const T*>(src.impl()->storage->data);
        const auto* idx = static_cast<const std::int64_t*>(index.impl()->storage->data);
        const StridedGeometry<3> geo(index.shape(), {&dst, &src, &index});
        // One thread, in row-major order of the index: several elements may land on one place, and
        // their sum then has PyTorch's CPU order (increasing position along the scattered dim).
        geo.for_runs(0, index.numel(), [&](std::int64_t count, const auto& off, const auto& st) {
            // One index for a contiguous run (a row of index_add, Embedding's backward): the row added
            // with vec_math (each element one addition, in the same order as the element loop).
            if constexpr (std::is_floating_point_v<T>) {
                if (accumulate && st[2] == 0 && st[0] == 1 && (st[1] == 1 || st[1] == 0)) {
                    T* row = d + off[0] + idx[off[2]] * stride;
                    if (st[1] == 1)
                        varith(Arith::kAdd, row, s + off[1], row, count, false);
                    else  // one value for the run (an expanded gradient, as sum()'s)
                        vscalar_map(ScalarMap::kAdd, row, s[off[1]], T(0), row, count, false);
                    return;
                }
            }
            if constexpr (!std::is_same_v<T, bool>) {
                if (st[0] == 0 && st[1] == 1 && st[2] == 1) {  // along the run's own dim (scatter_add(-1))
                    T* row = d + off[0];
                    const T* from = s + off[1];
                    const std::int64_t* at = idx + off[2];
                    if (accumulate)
                        for (std::int64_t i = 0; i < count; ++i) row[at[i] * stride] += from[i];
                    else
                        for (std::int64_t i = 0; i < count; ++i) row[at[i] * stride] = from[i];
                    return;
                }
            }
            for (std::int64_t i = 0; i < count; ++i) {
                T& target = d[off[0] + i * st[0] + idx[off[2] + i * st[2]] * stride];
                const T value = s[off[1] + i * st[1]];
                if constexpr (std::is_same_v<T, bool>) {
                    target = accumulate ? (target || value) : value;
                } else if (accumulate)
                    target += value;
                else
                    target = value;
            }
        });
    });
}

}  // namespace xgrad::kernels::cpu
