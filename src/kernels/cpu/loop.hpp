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

    /// The multi-index of element `lo` (row-major) and each operand's offset there.
    void start_at(std::int64_t lo, Strides& idx, std::array<std::int64_t, N>& off) const {
        const auto nd = static_cast<std::int64_t>(sizes.size());
        idx = Strides(static_cast<std::size_t>(nd), 0);
        off = offsets;
        std::int64_t rest = lo;
        for (std::int64_t d = nd - 1; d >= 0; --d) {
            const auto du = static_cast<std::size_t>(d);
            idx[du] = rest % sizes[du];
            rest /= sizes[du];
            for (int k = 0; k < N; ++k)
                off[static_cast<std::size_t>(k)] += idx[du] * strides[static_cast<std::size_t>(k)][du];
        }
    }

    /// After idx[d] advanced: while a dim is past its end, back to its start and one on in the dim
    /// further out, each operand's offset following.
    void carry(Strides& idx, std::array<std::int64_t, N>& off, std::size_t d) const {
        for (; d > 0 && idx[d] == sizes[d]; --d) {
            for (int k = 0; k < N; ++k) {
                const auto& st = strides[static_cast<std::size_t>(k)];
                off[static_cast<std::size_t>(k)] += st[d - 1] - sizes[d] * st[d];
            }
            idx[d] = 0;
            ++idx[d - 1];
        }
    }

    /// As for_runs, a block of whole runs at a time where it can: `run(count, rows, offsets,
    /// inner_strides, row_strides)` for `rows` runs of `count` elements along the dim next to the
    /// innermost, run r starting r·row_strides after `offsets`. A run cut by lo or hi, and every run
    /// of a one-dim geometry, comes alone (rows = 1).
    template <typename F>
    void for_blocks(std::int64_t lo, std::int64_t hi, F&& run) const {
        const auto nd = static_cast<std::int64_t>(sizes.size());
        std::array<std::int64_t, N> inner_stride{}, row_stride{};
        for (int k = 0; k < N; ++k) {
            const auto& st = strides[static_cast<std::size_t>(k)];
            inner_stride[static_cast<std::size_t>(k)] = st.back();
            row_stride[static_cast<std::size_t>(k)] = nd > 1 ? st[static_cast<std::size_t>(nd - 2)] : 0;
        }
        if (nd < 2) {
            for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                run(count, std::int64_t{1}, off, st, row_stride);
            });
            return;
        }
        const std::int64_t inner = sizes.back(), outer = sizes[static_cast<std::size_t>(nd - 2)];
        Strides idx;
        std::array<std::int64_t, N> off;
        start_at(lo, idx, off);
        const auto last = static_cast<std::size_t>(nd - 1), row = static_cast<std::size_t>(nd - 2);
        std::int64_t i = lo;
        while (i < hi) {
            std::size_t moved;  // the dim that advanced
            if (idx[last] == 0 && hi - i >= inner) {
                const std::int64_t rows = std::min(outer - idx[row], (hi - i) / inner);
                run(inner, rows, off, inner_stride, row_stride);
                i += inner * rows;
                if (i >= hi) break;
                for (int k = 0; k < N; ++k)
                    off[static_cast<std::size_t>(k)] += rows * row_stride[static_cast<std::size_t>(k)];
                idx[row] += rows;
                moved = row;
            } else {
                const std::int64_t count = std::min(inner - idx[last], hi - i);
                run(count, std::int64_t{1}, off, inner_stride, row_stride);
                i += count;
                if (i >= hi) break;
                for (int k = 0; k < N; ++k)
                    off[static_cast<std::size_t>(k)] += count * inner_stride[static_cast<std::size_t>(k)];
                idx[last] += count;
                moved = last;
            }
            carry(idx, off, moved);
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
        Strides idx;
        std::array<std::int64_t, N> off;
        start_at(lo, idx, off);
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
            carry(idx, off, static_cast<std::size_t>(nd - 1));
        }
    }
};

}  // namespace xgrad::kernels::cpu
