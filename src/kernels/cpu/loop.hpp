// Walks strided operands of one shape as runs along the innermost dimension, so elementwise
// kernels read broadcast (stride 0) and transposed operands in place instead of copying them.
#pragma once

#include <array>
#include <cstdint>

#include "detail/tensor_impl.hpp"

namespace xgrad::kernels::cpu {

/// N operands viewed over one shape, with dims merged where every operand allows it.
template <int N>
struct StridedGeometry {
    Strides sizes;                          // innermost last (inline lists: a small op allocates nothing here)
    std::array<Strides, N> strides;         // per operand, in elements
    std::array<std::int64_t, N> offsets{};  // storage offsets

    StridedGeometry(const Shape& shape, const std::array<const Tensor*, N>& ops) {
        for (int k = 0; k < N; ++k)
            offsets[static_cast<std::size_t>(k)] = ops[static_cast<std::size_t>(k)]->storage_offset();
        // Drop size-1 dims, then merge dim d into d+1 when each operand's stride allows.
        for (std::int64_t d = 0; d < shape.size(); ++d) {
            if (shape[d] == 1) continue;
            const bool merge = !sizes.empty() && [&] {
                for (int k = 0; k < N; ++k) {
                    const auto& st = ops[static_cast<std::size_t>(k)]->strides();
                    if (strides[static_cast<std::size_t>(k)].back() != st[static_cast<std::size_t>(d)] * shape[d])
                        return false;
                }
                return true;
            }();
            if (merge) {
                sizes.back() *= shape[d];
                for (int k = 0; k < N; ++k)
                    strides[static_cast<std::size_t>(k)].back() =
                        ops[static_cast<std::size_t>(k)]->strides()[static_cast<std::size_t>(d)];
            } else {
                sizes.push_back(shape[d]);
                for (int k = 0; k < N; ++k)
                    strides[static_cast<std::size_t>(k)].push_back(
                        ops[static_cast<std::size_t>(k)]->strides()[static_cast<std::size_t>(d)]);
            }
        }
        if (sizes.empty()) {  // a single element
            sizes.push_back(1);
            for (auto& s : strides) s.push_back(0);
        }
    }

    /// Calls `run(count, offsets, inner_strides)` for each run of elements [lo, hi) in row-major order.
    template <typename F>
    void for_runs(std::int64_t lo, std::int64_t hi, F&& run) const {
        const auto nd = static_cast<std::int64_t>(sizes.size());
        const std::int64_t inner = sizes.back();
        std::array<std::int64_t, N> inner_stride{};
        for (int k = 0; k < N; ++k)
            inner_stride[static_cast<std::size_t>(k)] = strides[static_cast<std::size_t>(k)].back();
        // The multi-index of `lo` and each operand's offset there.
        Strides idx(static_cast<std::size_t>(nd), 0);
        std::array<std::int64_t, N> off = offsets;
        std::int64_t rest = lo;
        for (std::int64_t d = nd - 1; d >= 0; --d) {
            const auto du = static_cast<std::size_t>(d);
            idx[du] = rest % sizes[du];
            rest /= sizes[du];
            for (int k = 0; k < N; ++k)
                off[static_cast<std::size_t>(k)] += idx[du] * strides[static_cast<std::size_t>(k)][du];
        }
        std::int64_t i = lo;
        while (i < hi) {
            const std::int64_t count = std::min(inner - idx[static_cast<std::size_t>(nd - 1)], hi - i);
            run(count, off, inner_stride);
            i += count;
            if (i >= hi) break;
            // Advance to the start of the next run.
            for (int k = 0; k < N; ++k)
                off[static_cast<std::size_t>(k)] += count * inner_stride[static_cast<std::size_t>(k)];
            idx[static_cast<std::size_t>(nd - 1)] += count;
            for (std::int64_t d = nd - 1;
                 d > 0 && idx[static_cast<std::size_t>(d)] == sizes[static_cast<std::size_t>(d)]; --d) {
                const auto du = static_cast<std::size_t>(d);
                for (int k = 0; k < N; ++k)
                    off[static_cast<std::size_t>(k)] -= sizes[du] * strides[static_cast<std::size_t>(k)][du];
                idx[du] = 0;
                ++idx[du - 1];
                for (int k = 0; k < N; ++k)
                    off[static_cast<std::size_t>(k)] += strides[static_cast<std::size_t>(k)][du - 1];
            }
        }
    }
};

}  // namespace xgrad::kernels::cpu
