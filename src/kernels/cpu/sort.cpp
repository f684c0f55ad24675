// CPU sorting kernels over rows: sort/topk with indices, and the scatter of their gradients.
#include <algorithm>
#include <numeric>
#include <vector>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"

namespace xgrad::kernels::cpu {

void sort_rows(const RowsView& v, const Tensor& values, const Tensor& indices, std::int64_t k, bool descending) {
    detail::dispatch(values.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = v.input.impl()->data<T>();
        T* o = values.impl()->data<T>();
        auto* idx = indices.impl()->data<std::int64_t>();
        const std::int64_t grain = std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(v.width, 1));
        parallel_for(0, v.rows, grain, [&](std::int64_t lo, std::int64_t hi) {
            std::vector<std::int64_t> order(static_cast<std::size_t>(v.width));
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* x = in + r * v.width;
                // NaN sorts above every number, as PyTorch; a stable sort keeps ties in index order.
                const auto before = [&](std::int64_t a, std::int64_t b) {
                    const bool na = x[a] != x[a], nb = x[b] != x[b];
                    return descending ? (na && !nb) || x[a] > x[b] : (!na && nb) || x[a] < x[b];
                };
                std::iota(order.begin(), order.end(), std::int64_t{0});
                std::stable_sort(order.begin(), order.end(), before);
                for (std::int64_t j = 0; j < k; ++j) {
                    idx[r * k + j] = order[static_cast<std::size_t>(j)];
                    o[r * k + j] = x[order[static_cast<std::size_t>(j)]];
                }
            }
        });
    });
}

void scatter_rows(const Tensor& grad, const Tensor& indices, const Tensor& dx) {
    detail::dispatch_float(dx.dtype(), "scatter", [&](auto tag) {
        using T = decltype(tag);
        const std::int64_t width = dx.dim() == 0 ? 1 : dx.size(-1), rows = width == 0 ? 0 : dx.numel() / width;
        const std::int64_t k = rows == 0 ? 0 : grad.numel() / rows;
        const T* g = grad.impl()->data<T>();
        const auto* idx = indices.impl()->data<std::int64_t>();
        T* d = dx.impl()->data<T>();
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t j = 0; j < k; ++j) d[r * width + idx[r * k + j]] += g[r * k + j];
    });
}

}  // namespace xgrad::kernels::cpu
