// CPU cdist, the direct kernel: bit for bit as PyTorch 1.13's CPU kernels (its _cdist_forward and
// _cdist_backward, aten/src/ATen/native/cpu/DistanceOpsKernel.cpp, AVX2 build).
//
// The forward adds each pair's terms over the features in order, in the dtype: |d| for p = 1, |d|² for
// p = 2 (GCC vectorised PyTorch's loop, keeping the adds in order: the squares in whole 8- and 4-lane
// float registers, or 4- and 2-lane double ones, are rounded apart from the sum, the rest fused with
// it), |d|^p for other p (C's pow),
// the largest |d| for p = ∞ and min(ceil(|d|), 1) for p = 0; then the square root, or C's pow of the sum
// to 1 / p (in double). The backward adds, for each row of the first input, the derivative times the
// gradient over the rows of the second, in order, from 0; its powers are SLEEF's, as PyTorch's
// Vectorized pow.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

/// PyTorch's Vectorized sign: min(max(0, ceil(v)), 1) + min(max(-1, floor(v)), 0); +0 for ±0, NaN for NaN.
template <typename T>
T sign_of(T v) {
    const T s = static_cast<T>(v > 0) - static_cast<T>(v < 0);  // without branches: the signs are random
    return v == v ? s : v;
}

/// Each pair's distance over [k0, k1) for p other than 1 and 2: `term(agg, d)` adds a feature's |d| to
/// the sum and `finish` ends it. Eight pairs go side by side, each summed in its own order: their chains
/// of adds overlap.
template <typename T, typename Term, typename Finish>
void pair_distances(const T* pa, const T* pb, T* po, std::int64_t k0, std::int64_t k1, std::int64_t r1, std::int64_t r2,
                    std::int64_t m, Term term, Finish finish) {
    constexpr int kSide = 8;
    auto rows = [&](std::int64_t k, const T** x, const T** y) {
        const std::int64_t l = k / (r1 * r2), i = k / r2 % r1, j = k % r2;
        *x = pa + (l * r1 + i) * m;
        *y = pb + (l * r2 + j) * m;
    };
    std::int64_t k = k0;
    for (; k + kSide <= k1; k += kSide) {
        const T* x[kSide];
        const T* y[kSide];
        T agg[kSide] = {};
        for (int u = 0; u < kSide; ++u) rows(k + u, &x[u], &y[u]);
        for (std::int64_t f = 0; f < m; ++f)
            for (int u = 0; u < kSide; ++u) agg[u] = term(agg[u], std::abs(x[u][f] - y[u][f]));
        for (int u = 0; u < kSide; ++u) po[k + u] = finish(agg[u]);
    }
    for (; k < k1; ++k) {
        const T* x;
        const T* y;
        rows(k, &x, &y);
        T agg = 0;
        for (std::int64_t f = 0; f < m; ++f) agg = term(agg, std::abs(x[f] - y[f]));
        po[k] = finish(agg);
    }
}

template <typename T>
void forward_impl(const Tensor& a, const Tensor& b, double p, const Tensor& out) {
    const std::int64_t batch = a.size(0), r1 = a.size(1), r2 = b.size(1), m = a.size(2);
    const T* pa = a.impl()->data<T>();
    const T* pb = b.impl()->data<T>();
    T* po = out.impl()->data<T>();
    const T pt = static_cast<T>(p);
    // p = 2: the squares of whole registers (8 and 4 floats, 4 and 2 doubles) rounded apart, the rest fused.
    const std::int64_t apart = sizeof(T) == 4 ? m / 4 * 4 : m / 2 * 2;
    if (p == 1 || p == 2) {
        // Each batch's second input transposed, (m, r2): the pairs of a row of the first go side by side
        // in vector lanes, each summed in its own order.
        std::vector<T> yt(static_cast<std::size_t>(batch * m * r2));
        for (std::int64_t l = 0; l < batch; ++l)
            for (std::int64_t j = 0; j < r2; ++j)
                for (std::int64_t f = 0; f < m; ++f) yt[(l * m + f) * r2 + j] = pb[(l * r2 + j) * m + f];
        parallel_for(0, batch * r1 * r2, grain_for(16 * m), [&](std::int64_t k0, std::int64_t k1) {
            for (std::int64_t k = k0; k < k1;) {
                const std::int64_t l = k / (r1 * r2), i = k / r2 % r1, j = k % r2;
                const std::int64_t count = std::min(k1 - k, r2 - j);
                cdist_forward_row(pa + (l * r1 + i) * m, yt.data() + l * m * r2 + j, r2, count, m, static_cast<int>(p),
                                  apart, po + k);
                k += count;
            }
        });
        return;
    }
    parallel_for(0, batch * r1 * r2, grain_for(16 * m), [&](std::int64_t k0, std::int64_t k1) {
        auto run = [&](auto term, auto finish) { pair_distances(pa, pb, po, k0, k1, r1, r2, m, term, finish); };
        auto same = [](T agg) { return agg; };
        if (p == 0)
            run([](T agg, T d) { return agg + std::min(std::ceil(d), T(1)); }, same);
        else if (std::isinf(p))
            run([](T agg, T d) { return std::max(agg, d); }, same);
        else
            run([pt](T agg, T d) { return agg + std::pow(d, pt); },
                [pt](T agg) {
                    return static_cast<T>(std::pow(static_cast<double>(agg), 1.0 / static_cast<double>(pt)));
                });
    });
}

template <typename T>
void backward_impl(const Tensor& grad, const Tensor& a, const Tensor& b, double p, const Tensor& dist,
                   const Tensor& out) {
    const std::int64_t batch = a.size(0), r1 = a.size(1), r2 = b.size(1), m = a.size(2);
    const T* pg = grad.impl()->data<T>();
    const T* pa = a.impl()->data<T>();
    const T* pb = b.impl()->data<T>();
    const T* pd = dist.impl()->data<T>();
    T* po = out.impl()->data<T>();
    std::fill(po, po + batch * r1 * m, T(0));
    if (p == 0 || m == 0) return;
    const T pt = static_cast<T>(p);
    // The exponents of |d| and of the distance (PyTorch's p - 1 or p - 2, in the dtype).
    const T e_diff = p < 2 ? pt - T(1) : pt - T(2), e_dist = pt - T(1);
    parallel_for(0, batch * r1, grain_for(16 * r2 * m), [&](std::int64_t q0, std::int64_t q1) {
        std::vector<T> diff(static_cast<std::size_t>(m)), mag(diff), powed(diff), exps(diff.size(), e_diff);
        for (std::int64_t q = q0; q < q1; ++q) {
            const std::int64_t l = q / r1;
            const T* x = pa + q * m;
            T* res = po + q * m;
            if (p == 1 || p == 2) {  // vectorised over the features, as PyTorch's
                cdist_backward_row(x, pb + l * r2 * m, pg + q * r2, pd + q * r2, r2, m, static_cast<int>(p), res);
                continue;
            }
            for (std::int64_t j = 0; j < r2; ++j) {
                const T* y = pb + (l * r2 + j) * m;
                const T g = pg[q * r2 + j], dv = pd[q * r2 + j];
                if (std::isinf(p)) {
                    for (std::int64_t f = 0; f < m; ++f) {
                        const T d = x[f] - y[f];
                        const T hit = T(1) - std::min(T(1), std::ceil(std::abs(std::abs(d) - dv)));
                        res[f] = res[f] + g * sign_of(d) * hit;
                    }
                    continue;
                }
                if (dv == 0) continue;  // PyTorch's term is 0 there
                for (std::int64_t f = 0; f < m; ++f) {
                    diff[f] = x[f] - y[f];
                    mag[f] = std::abs(diff[f]);
                }
                T dist_pow;
                vpow(&dv, &e_dist, &dist_pow, 1);
                vpow(mag.data(), exps.data(), powed.data(), m);
                for (std::int64_t f = 0; f < m; ++f) {
                    const T lead = p < 2 ? sign_of(diff[f]) : diff[f];
                    // For p < 1 PyTorch blends in 0 where the difference is 0 (0·∞ there).
                    const T term = p < 1 && diff[f] == 0 ? T(0) : lead * powed[f] * g / dist_pow;
                    res[f] = res[f] + term;
                }
            }
        }
    });
}

}  // namespace

void cdist_forward(const Tensor& a, const Tensor& b, double p, const Tensor& out) {
    detail::dispatch_float(a.dtype(), "cdist", [&](auto tag) { forward_impl<decltype(tag)>(a, b, p, out); });
}

void cdist_backward(const Tensor& grad, const Tensor& a, const Tensor& b, double p, const Tensor& dist,
                    const Tensor& out) {
    detail::dispatch_float(a.dtype(), "cdist",
                           [&](auto tag) { backward_impl<decltype(tag)>(grad, a, b, p, dist, out); });
}

}  // namespace xgrad::kernels::cpu
