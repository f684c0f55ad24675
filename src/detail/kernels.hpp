// CPU kernel building blocks on xtensor/xsimd (dtype dispatch, flat views, strided visits); included
// only by CPU sources, never by public headers.
#pragma once

#include <cstdint>
#include <type_traits>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>

#include "detail/dispatch.hpp"
#include "detail/tensor_impl.hpp"

namespace xgrad::detail {

/// A 1-D xtensor view of `n` contiguous elements at `p`, so expressions on it vectorise with xsimd.
template <typename T>
auto flat(T* p, std::size_t n) {
    return xt::adapt(p, n, xt::no_ownership(), std::array<std::size_t, 1>{n});
}

/// Visits every element of a strided view in row-major order: `f(flat_index, storage_offset)`.
template <typename F>
void for_each_offset(const Shape& shape, const Strides& strides, std::int64_t offset, F&& f) {
    const std::int64_t nd = shape.size();
    const std::int64_t n = shape.numel();
    if (n == 0) return;
    if (nd == 0) {
        f(0, offset);
        return;
    }
    // Inner loop over the last dimension; an odometer over the others.
    const std::int64_t inner = shape[nd - 1], inner_stride = strides[static_cast<std::size_t>(nd - 1)];
    std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
    std::int64_t base = offset;
    for (std::int64_t i = 0; i < n; i += inner) {
        for (std::int64_t j = 0; j < inner; ++j) f(i + j, base + j * inner_stride);
        for (std::int64_t d = nd - 2; d >= 0; --d) {
            auto du = static_cast<std::size_t>(d);
            if (++idx[du] < shape[d]) {
                base += strides[du];
                break;
            }
            base -= strides[du] * (shape[d] - 1);
            idx[du] = 0;
        }
    }
}

}  // namespace xgrad::detail
