// CPU sorting kernels over rows: sort/topk with indices, and the scatter of their gradients.
#include <algorithm>
#include <vector>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/search.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// Puts the element of rank k (from 0, in the order `after` is the reverse of) at q[k], the smaller
/// ones before it, as PyTorch's kthvalue does: Sedgewick's quickselect with a median-of-three pivot,
/// swapping (value, index) pairs, so equal values leave the same index at q[k] as there.
template <typename Pair, typename After>
void quick_select(std::vector<Pair>& q, std::int64_t k, After after) {
    std::int64_t lo = 0, hi = static_cast<std::int64_t>(q.size()) - 1;
    auto at = [&](std::int64_t i) -> Pair& { return q[static_cast<std::size_t>(i)]; };
    auto swap = [&](std::int64_t i, std::int64_t j) { std::swap(at(i), at(j)); };
    while (hi > lo) {
        if (hi == lo + 1) {
            if (after(at(lo), at(hi))) swap(lo, hi);
            return;
        }
        swap((lo + hi) >> 1, lo + 1);
        if (after(at(lo + 1), at(hi))) swap(lo + 1, hi);
        if (after(at(lo), at(hi))) swap(lo, hi);
        if (after(at(lo + 1), at(lo))) swap(lo + 1, lo);
        const Pair pivot = at(lo);
        std::int64_t i = lo + 1, j = hi;
        while (true) {
            do ++i;
            while (after(pivot, at(i)));
            do --j;
            while (after(at(j), pivot));
            if (j < i) break;
            swap(i, j);
        }
        swap(lo, j);
        if (j <= k) lo = i;
        if (j >= k) hi = j - 1;
    }
}

/// Puts the first k of `q` (a row's (value, index) pairs in index order) in place, as `ties` says:
/// PyTorch 1.13's CPU sort and topk run these libstdc++ algorithms with the same comparison, so equal
/// values come out in their order (tests/golden/gen_reduction_more.py's *_ties cases check it).
template <typename Pair, typename Before, typename After>
void order_row(std::vector<Pair>& q, std::int64_t k, TieOrder ties, Before before, After after) {
    const auto first_k = q.begin() + k;
    switch (ties) {
        case TieOrder::kSelect:
            if (k > 0) quick_select(q, k - 1, after);
            return;
        case TieOrder::kIndex:
            std::stable_sort(q.begin(), q.end(), before);
            return;
        case TieOrder::kRank:  // a total order: any selection puts the same pair at k - 1
            if (k > 0)
                std::nth_element(q.begin(), first_k - 1, q.end(), [&](const Pair& a, const Pair& b) {
                    return before(a, b) || (!before(b, a) && a.second < b.second);
                });
            return;
        case TieOrder::kSort:
            std::sort(q.begin(), q.end(), before);
            return;
        case TieOrder::kTopk:
        case TieOrder::kTopkUnsorted:
            if (k == 0) return;
            if (k * 64 <= static_cast<std::int64_t>(q.size())) {
                std::partial_sort(q.begin(), first_k, q.end(), before);
                return;
            }
            std::nth_element(q.begin(), first_k - 1, q.end(), before);
            if (ties == TieOrder::kTopk) std::sort(q.begin(), first_k - 1, before);
            return;
    }
}

}  // namespace

void search_sorted(const Tensor& sorted, const Tensor& values, const Tensor& out, bool right) {
    const std::int64_t rows = values.size(0), n = values.size(1), m = sorted.size(1);
    const bool shared = sorted.size(0) == 1;
    detail::dispatch(values.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* s = sorted.impl()->data<T>();
        const T* v = values.impl()->data<T>();
        auto search = [&](auto* o) {
            const std::int64_t log_m = 64 - __builtin_clzll(static_cast<unsigned long long>(m) | 1);
            parallel_for(0, rows * n, std::max<std::int64_t>(1, kGrain / log_m), [&](std::int64_t lo, std::int64_t hi) {
                for (std::int64_t i = lo; i < hi; ++i) {
                    const T* row = s + (shared ? 0 : (i / n) * m);
                    o[i] = static_cast<std::remove_pointer_t<decltype(o)>>(search_position(row, m, v[i], right));
                }
            });
        };
        if (out.dtype() == kInt32)
            search(out.impl()->data<std::int32_t>());
        else
            search(out.impl()->data<std::int64_t>());
    });
}

void sort_rows(const RowsView& v, const Tensor& values, const Tensor& indices, std::int64_t k, bool descending,
               TieOrder ties) {
    detail::dispatch(values.dtype(), [&](auto tag) {
        using T = decltype(tag);
        using Pair = std::pair<T, std::int64_t>;
        const T* in = v.input.impl()->data<T>();
        T* o = values.impl()->data<T>();
        auto* idx = indices.impl()->data<std::int64_t>();
        const std::int64_t grain = std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(v.width, 1));
        parallel_for(0, v.rows, grain, [&](std::int64_t lo, std::int64_t hi) {
            std::vector<Pair> q(static_cast<std::size_t>(v.width));
            // NaN sorts above every number, as PyTorch.
            const auto greater = [](const Pair& a, const Pair& b) {
                return (a.first != a.first && b.first == b.first) || a.first > b.first;
            };
            const auto less = [](const Pair& a, const Pair& b) {
                return (a.first == a.first && b.first != b.first) || a.first < b.first;
            };
            for (std::int64_t r = lo; r < hi; ++r) {
                const T* x = in + r * v.width;
                for (std::int64_t j = 0; j < v.width; ++j) q[static_cast<std::size_t>(j)] = {x[j], j};
                if (descending)
                    order_row(q, k, ties, greater, less);
                else
                    order_row(q, k, ties, less, greater);
                for (std::int64_t j = 0; j < k; ++j) {
                    o[r * k + j] = q[static_cast<std::size_t>(j)].first;
                    idx[r * k + j] = q[static_cast<std::size_t>(j)].second;
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
