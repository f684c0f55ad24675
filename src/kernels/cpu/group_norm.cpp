// CPU GroupNorm, forward and backward, bit for bit as PyTorch 1.13's CPU kernel on contiguous inputs
// (aten/src/ATen/native/cpu/group_norm_kernel.cpp, its AVX2 build; checked against torch 1.13 on 266
// cases of both dtypes, with and without the affine parameters).
//
// x is (N, C, image), its channels in G groups of D. The forward takes each (sample, group) row of
// D·image elements: LayerNorm's moments (norm_moments_rows, four rows side by side), rstd =
// 1 / sqrt(max(var, 0) + eps), then per channel y = scale·x + bias fused, with scale = rstd·w and
// bias = -scale·mean + b rounded apart, or (x - mean)·rstd without weight and bias.
//
// The backward follows PyTorch's loops, including what its compiler made of them. Per (sample,
// channel), ds = Σ g·x and db = Σ g over the image: the whole registers in an AVX2 register's lanes
// (fused), the lanes added up in order from 0, then the elements left over added in order, where GCC
// vectorised the float loop in 4-lane registers (those products rounded apart, the rest fused) and
// not the double one (all fused). Per (sample, group), Σ ds·w and Σ db·w over the group's channels the
// same way (the channels left over: float's in 4-lane and double's in 2-lane registers rounded apart,
// the rest fused); then c2 = (db·mean - ds)·rstd³/(D·image) and c3 = -c2·mean - db·rstd/(D·image),
// and dx = (rstd·w·g + c2·x) + c3. The weight's and bias's gradients add each sample's terms in order.
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

/// The lanes of PyTorch's AVX2 register for T.
template <typename T>
constexpr int kLanes = 32 / static_cast<int>(sizeof(T));

/// The elements left over after PyTorch's whole AVX2 registers that its compiler's vectorised
/// epilogue multiplies apart from the sum (`width` lanes a register): the rest are fused.
constexpr std::int64_t rounded_apart(std::int64_t left, std::int64_t width) {
    return left / width * width;
}

/// Σ a·w and Σ b·w over the channels of one group (w null: 1), as PyTorch's GroupNormInputBackward.
template <typename T>
void group_sums(const T* a, const T* b, const T* w, std::int64_t d, T* sa, T* sb) {
    constexpr int kL = kLanes<T>;
    T la[kL] = {}, lb[kL] = {};
    const std::int64_t whole = d / kL * kL;
    for (std::int64_t j = 0; j < whole; ++j) {
        const T wj = w ? w[j] : T(1);
        la[j % kL] = std::fma(a[j], wj, la[j % kL]);
        lb[j % kL] = std::fma(b[j], wj, lb[j % kL]);
    }
    T s = 0, t = 0;
    for (int l = 0; l < kL; ++l) {
        s = s + la[l];
        t = t + lb[l];
    }
    const std::int64_t apart = whole + rounded_apart(d - whole, sizeof(T) == 4 ? 4 : 2);
    for (std::int64_t j = whole; j < d; ++j) {
        const T wj = w ? w[j] : T(1);
        if (j < apart) {
            s = s + a[j] * wj;
            t = t + b[j] * wj;
        } else {
            s = std::fma(a[j], wj, s);
            t = std::fma(b[j], wj, t);
        }
    }
    *sa = s;
    *sb = t;
}

template <typename T>
void forward_impl(const Tensor& x, const Tensor& w, const Tensor& b, std::int64_t groups, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) {
    const std::int64_t n = x.size(0), channels = x.size(1), d = channels / groups;
    const std::int64_t image = n * channels == 0 ? 1 : x.numel() / (n * channels), row = d * image;
    const T* px = x.impl()->data<T>();
    const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
    const T* pb = b.defined() ? b.impl()->data<T>() : nullptr;
    T* py = out.impl()->data<T>();
    T* pm = mean.impl()->data<T>();
    T* pr = rstd.impl()->data<T>();
    const T e = static_cast<T>(eps);
    parallel_for(0, n * groups, grain_for(2 * row), [&](std::int64_t i0, std::int64_t i1) {
        // The moments of four rows at once (fewer at the end: their chains of operations overlap), then
        // each row's output.
        for (std::int64_t i4 = i0; i4 < i1; i4 += 4) {
            const int count = static_cast<int>(std::min<std::int64_t>(4, i1 - i4));
            T m4[4] = {}, q4[4] = {};
            if (row > 0) norm_moments_block(px + i4 * row, count, row, m4, q4);
            for (int r = 0; r < count; ++r) {
                const std::int64_t i = i4 + r;
                const T* xr = px + i * row;
                T* yr = py + i * row;
                const T m = m4[r], m2 = q4[r];
                const T rs = T(1) / std::sqrt(std::max(row > 0 ? m2 / static_cast<T>(row) : T(0), T(0)) + e);
                pm[i] = m;
                pr[i] = rs;
                const std::int64_t g = i % groups;
                for (std::int64_t j = 0; j < d; ++j) {
                    const std::int64_t c = g * d + j;
                    const T* xc = xr + j * image;
                    T* yc = yr + j * image;
                    if (!pw && !pb) {
                        for (std::int64_t k = 0; k < image; ++k) yc[k] = (xc[k] - m) * rs;
                        continue;
                    }
                    const T scale = rs * (pw ? pw[c] : T(1));
                    const T shift = -scale * m + (pb ? pb[c] : T(0));
                    norm_apply(xc, scale, shift, nullptr, nullptr, yc, image, false, 0);
                }
            }
        }
    });
}

template <typename T>
void backward_impl(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                   std::int64_t groups, const Tensor& dx, const Tensor& dw, const Tensor& db) {
    constexpr int kL = kLanes<T>;
    const std::int64_t n = x.size(0), channels = x.size(1), d = channels / groups;
    const std::int64_t image = n * channels == 0 ? 1 : x.numel() / (n * channels);
    const T* pg = grad.impl()->data<T>();
    const T* px = x.impl()->data<T>();
    const T* pw = w.defined() ? w.impl()->data<T>() : nullptr;
    const T* pm = mean.impl()->data<T>();
    const T* pr = rstd.impl()->data<T>();
    std::vector<T> ds(static_cast<std::size_t>(n * channels)), dbs(ds.size());
    // Σ g·x and Σ g over each (sample, channel) image.
    parallel_for(0, n * channels, grain_for(2 * image), [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t whole = image / kL * kL;
        const std::int64_t apart = whole + (sizeof(T) == 4 ? rounded_apart(image - whole, 4) : 0);
        for (std::int64_t r = r0; r < r1; ++r) {
            const T* gr = pg + r * image;
            const T* xr = px + r * image;
            T lab[kL] = {}, la[kL] = {};
            lanes_fma_sums(gr, xr, whole, lab, la);
            T s = 0, t = 0;
            for (int l = 0; l < kL; ++l) {
                s = s + lab[l];
                t = t + la[l];
            }
            for (std::int64_t k = whole; k < image; ++k) {
                s = k < apart ? s + gr[k] * xr[k] : std::fma(gr[k], xr[k], s);
                t = t + gr[k];
            }
            ds[r] = s;
            dbs[r] = t;
        }
    });
    if (dx.defined()) {
        T* pdx = dx.impl()->data<T>();
        const T s = T(1) / static_cast<T>(d * image);
        parallel_for(0, n * groups, grain_for(3 * d * image), [&](std::int64_t i0, std::int64_t i1) {
            for (std::int64_t i = i0; i < i1; ++i) {
                const std::int64_t g = i % groups;
                T ds_val, db_val;
                group_sums(ds.data() + i * d, dbs.data() + i * d, pw ? pw + g * d : nullptr, d, &ds_val, &db_val);
                const T r = pr[i];
                const T c2 = std::fma(db_val, pm[i], -ds_val) * r * r * r * s;
                const T c3 = std::fma(-c2, pm[i], -(db_val * r * s));
                for (std::int64_t j = 0; j < d; ++j) {
                    const std::int64_t at = (i * d + j) * image;
                    const T c1 = r * (pw ? pw[g * d + j] : T(1));
                    group_norm_row_dx(pg + at, px + at, c1, c2, c3, pdx + at, image);
                }
            }
        });
    }
    // Each channel's terms over the samples, in order.
    T* pdw = dw.defined() ? dw.impl()->data<T>() : nullptr;
    T* pdb = db.defined() ? db.impl()->data<T>() : nullptr;
    if (!pdw && !pdb) return;
    for (std::int64_t c = 0; c < channels; ++c) {
        T acc_w = 0, acc_b = 0;
        for (std::int64_t b = 0; b < n; ++b) {
            const std::int64_t nc = b * channels + c, ng = b * groups + c / d;
            acc_w = std::fma(std::fma(-dbs[nc], pm[ng], ds[nc]), pr[ng], acc_w);
            acc_b = acc_b + dbs[nc];
        }
        if (pdw) pdw[c] = acc_w;
        if (pdb) pdb[c] = acc_b;
    }
}

}  // namespace

void group_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t groups, double eps,
                        const Tensor& out, const Tensor& mean, const Tensor& rstd) {
    detail::dispatch_float(x.dtype(), "group_norm", [&](auto tag) {
        forward_impl<decltype(tag)>(x, weight, bias, groups, eps, out, mean, rstd);
    });
}

void group_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& rstd, std::int64_t groups, const Tensor& dx, const Tensor& dweight,
                         const Tensor& dbias) {
    detail::dispatch_float(x.dtype(), "group_norm", [&](auto tag) {
        backward_impl<decltype(tag)>(grad, x, weight, mean, rstd, groups, dx, dweight, dbias);
    });
}

}  // namespace xgrad::kernels::cpu
