// The order in which PyTorch's TensorIterator walks the dims of its operands, which fixes the order of
// a reduction's arithmetic (and so its bits) for strided inputs; shared by reduction.cpp's plans and
// the CPU reduction kernels.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "xgrad/shape.hpp"

namespace xgrad::detail {

/// The dims of a tensor of sizes `shape`, read through input strides `in` into output strides `out`
/// (0 along a reduced dim; all 0 for an input alone), in the order PyTorch 1.13's TensorIterator
/// sorts them (reorder_dimensions), the fastest first. It starts from the innermost dim and sorts by
/// insertion with its comparison: reduced dims first, then by the output's and the input's strides, a
/// stride of 0 (broadcast) deciding nothing, equal strides by size; an undecided comparison moves on
/// to the next dim to the left without swapping. Dims of size 1 take part.
inline std::vector<std::size_t> iterator_order(const Strides& shape, const Strides& in, const Strides& out) {
    const std::size_t nd = shape.size();
    std::vector<std::size_t> perm;
    for (std::size_t d = nd; d-- > 0;) perm.push_back(d);
    auto should_swap = [&](std::size_t a, std::size_t b) {
        if ((out[a] == 0) != (out[b] == 0)) return out[b] == 0 ? 1 : -1;  // reduced dims first
        for (const Strides* s : {&out, &in}) {
            const std::int64_t sa = (*s)[a], sb = (*s)[b];
            if (sa == 0 || sb == 0) continue;
            if (sa != sb) return sa < sb ? -1 : 1;
            if (shape[a] > shape[b]) return 1;
        }
        return 0;
    };
    for (std::size_t i = 1; i < perm.size(); ++i)
        for (std::size_t b = i, a = i; a-- > 0;) {
            const int c = should_swap(perm[a], perm[b]);
            if (c < 0) break;
            if (c > 0) {
                std::swap(perm[a], perm[b]);
                b = a;
            }
        }
    return perm;
}

/// The output strides PyTorch's TensorIterator sees for a reduction of `shape` (reduced[d] along the
/// reduced dims): its result is contiguous over the kept dims in their order, and 0 along a reduced
/// dim, except that with `keepdim` a reduced dim of size 1 keeps the result's own stride there (the
/// iterator zeroes the strides of broadcast dims only).
inline Strides reduction_out_strides(const Strides& shape, const std::vector<bool>& reduced, bool keepdim) {
    Strides out(shape.size(), 0);
    std::int64_t step = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
        if (!reduced[d]) {
            out[d] = step;
            step *= shape[d];
        } else if (keepdim && shape[d] == 1) {
            out[d] = step;
        }
    }
    return out;
}

/// A dim of PyTorch's TensorIterator after its sort and merge: its size, the input's stride and the
/// output's (in elements; the output's is 0 along a reduced dim, and everywhere for an input alone).
using IterDim = std::array<std::int64_t, 3>;

/// TensorIterator's dims for sizes `shape`, input strides `in` and output strides `out`: sorted
/// (iterator_order), then neighbours that form one run of memory in the input and in the output
/// merged (coalesce_dimensions), and a dim of size 1 with its neighbour (taking the neighbour's
/// strides); at least two (padded with (1, 0, 0)).
inline std::vector<IterDim> iter_dims(const Strides& shape, const Strides& in, const Strides& out) {
    std::vector<IterDim> dims;
    for (std::size_t d : iterator_order(shape, in, out)) {
        if (!dims.empty()) {
            auto& [n, a, b] = dims.back();
            if (n == 1) {
                n = shape[d];
                a = in[d];
                b = out[d];
                continue;
            }
            if (shape[d] == 1) continue;
            if (n * a == in[d] && n * b == out[d]) {
                n *= shape[d];
                continue;
            }
        }
        dims.push_back({shape[d], in[d], out[d]});
    }
    while (dims.size() < 2) dims.push_back({1, 0, 0});
    return dims;
}

}  // namespace xgrad::detail
