// CPU BatchNorm, forward and backward, bit for bit as PyTorch 1.13's CPU kernels on contiguous inputs
// (aten/src/ATen/native/cpu/batch_norm_kernel.cpp and Normalization.cpp, in its AVX2 build with the
// multiply-adds its compiler fuses; checked against torch 1.13 on 348 cases of both dtypes).
//
// x is (N, C, image) with image the product of the dims after the channel. PyTorch takes one of two
// kernels, and so does this file:
// - image > 1 ("contiguous"): per channel, the mean's sum in double in memory order; the variance's
//   sum in double of (x - mean)² rounded to the dtype (for float64, GCC vectorises that loop over the
//   image with whole registers of products and fuses the one product left when the image is odd);
//   in the backward, per image row, Σg and Σ(x - mean)·g in the orders of PyTorch's vec::reduce_all
//   and vec::map2_reduce_all (vec_math's lanes_sum and lanes_dot), added up in double.
// - image == 1, 2-D input ("channels last", PyTorch's kernel for N×C×1×1): column sums in the dtype,
//   down the rows, (x - mean)² and (x - mean)·g added with fused multiply-adds.
// Every result of a channel comes from that channel's elements in a fixed order, so the results do not
// depend on the thread count (PyTorch's channels-last sums do: these are its single-thread ones).
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

/// t's data, or null for an undefined tensor.
template <typename T>
T* data_or_null(const Tensor& t) {
    return t.defined() ? t.impl()->data<T>() : nullptr;
}

/// PyTorch's InvStd: 1 / sqrt(var + eps) in double, 0 when both are 0.
template <typename T>
T inv_std(double var, double eps) {
    return var != 0 || eps != 0 ? static_cast<T>(1.0 / std::sqrt(var + eps)) : T(0);
}

/// The running statistics' update (Normalization.cpp, compiled without FMA): momentum in the dtype,
/// the running variance's new term in double.
template <typename T>
void update_running(T* rm, T* rv, std::int64_t c, T mean, T var_sum, std::int64_t count, double momentum) {
    const T m = static_cast<T>(momentum);
    if (rm) rm[c] = m * mean + (T(1) - m) * rm[c];
    if (rv) {
        const double unbiased = static_cast<double>(var_sum / static_cast<T>(count - 1));
        rv[c] = static_cast<T>(static_cast<double>(m) * unbiased + static_cast<double>((T(1) - m) * rv[c]));
    }
}

/// The means and variance sums of channels [c, c + K) over images of more than one element: sums in
/// double, each channel's in its own order (PyTorch's), the K channels' chains of adds side by side so
/// that they overlap instead of each waiting on its last add.
template <int K, typename T>
void image_moments(const T* x, std::int64_t n, std::int64_t channels, std::int64_t image, std::int64_t c, T* mean,
                   T* var_sum) {
    const std::int64_t count = n * image;
    auto rows = [&](std::int64_t b, const T** r) {
        for (int k = 0; k < K; ++k) r[k] = x + (b * channels + c + k) * image;
    };
    const T* r[K];
    double s[K] = {};
    for (std::int64_t b = 0; b < n; ++b) {
        rows(b, r);
        for (std::int64_t i = 0; i < image; ++i)
            for (int k = 0; k < K; ++k) s[k] += static_cast<double>(r[k][i]);
    }
    T m[K];
    for (int k = 0; k < K; ++k) m[k] = static_cast<T>(s[k] / static_cast<double>(count));
    double q[K] = {};
    const bool fused_last = sizeof(T) == 8 && image % 2 == 1;
    const std::int64_t plain = fused_last ? image - 1 : image;
    for (std::int64_t b = 0; b < n; ++b) {
        rows(b, r);
        for (std::int64_t i = 0; i < plain; ++i)
            for (int k = 0; k < K; ++k) {
                const T d = r[k][i] - m[k];
                q[k] += static_cast<double>(d * d);
            }
        if (fused_last)
            for (int k = 0; k < K; ++k) {
                const double d = static_cast<double>(r[k][plain] - m[k]);
                q[k] = std::fma(d, d, q[k]);
            }
    }
    for (int k = 0; k < K; ++k) {
        mean[k] = m[k];
        var_sum[k] = static_cast<T>(q[k]);
    }
}

template <typename T>
void forward_impl(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                  const Tensor& save_mean, const Tensor& save_invstd) {
    const std::int64_t n = x.size(0), channels = x.size(1);
    const std::int64_t image = n * channels == 0 ? 1 : x.numel() / (n * channels), count = n * image;
    const T* px = data_or_null<T>(x);
    const T* pw = data_or_null<T>(w);
    const T* pb = data_or_null<T>(b);
    T* rm = data_or_null<T>(running_mean);
    T* rv = data_or_null<T>(running_var);
    T* py = out.impl()->data<T>();
    T* pm = save_mean.impl()->data<T>();
    T* pi = save_invstd.impl()->data<T>();
    if (training && image == 1) {
        // PyTorch's channels-last kernel: column sums down the rows, in the dtype, across a chunk of
        // channels at a time.
        parallel_for(0, channels, grain_for(2 * n), [&](std::int64_t c0, std::int64_t c1) {
            const std::int64_t width = c1 - c0;
            std::vector<T> s(static_cast<std::size_t>(width), T(0)), q(s), d(s);
            for (std::int64_t r = 0; r < n; ++r) {
                const T* xr = px + r * channels + c0;
                for (std::int64_t j = 0; j < width; ++j) s[j] = s[j] + xr[j];
            }
            for (std::int64_t j = 0; j < width; ++j)
                pm[c0 + j] = static_cast<T>(static_cast<double>(s[j]) / static_cast<double>(count));
            for (std::int64_t r = 0; r < n; ++r) {
                const T* xr = px + r * channels + c0;
                for (std::int64_t j = 0; j < width; ++j) d[j] = xr[j] - pm[c0 + j];
                vmla(d.data(), d.data(), q.data(), q.data(), width);
            }
            for (std::int64_t j = 0; j < width; ++j) {
                pi[c0 + j] = inv_std<T>(static_cast<double>(q[j] / static_cast<T>(count)), eps);
                update_running(rm, rv, c0 + j, pm[c0 + j], q[j], count, momentum);
            }
        });
    }
    parallel_for(0, channels, grain_for(2 * count), [&](std::int64_t c0, std::int64_t c1) {
        std::vector<T> alpha(static_cast<std::size_t>(c1 - c0)), beta(alpha);
        if (training && image > 1) {
            constexpr int kSide = 8;
            std::vector<T> var_sum(static_cast<std::size_t>(c1 - c0));
            std::int64_t c = c0;
            for (; c + kSide <= c1; c += kSide)
                image_moments<kSide>(px, n, channels, image, c, &pm[c], &var_sum[c - c0]);
            for (; c < c1; ++c) image_moments<1>(px, n, channels, image, c, &pm[c], &var_sum[c - c0]);
            for (c = c0; c < c1; ++c) {
                pi[c] = inv_std<T>(static_cast<double>(var_sum[c - c0] / static_cast<T>(count)), eps);
                update_running(rm, rv, c, pm[c], var_sum[c - c0], count, momentum);
            }
        }
        for (std::int64_t c = c0; c < c1; ++c) {
            if (!training) {
                pm[c] = rm[c];
                pi[c] = T(1) / std::sqrt(rv[c] + static_cast<T>(eps));
            }
            // PyTorch's linear and constant terms: y = x·alpha + beta, beta = bias - mean·alpha fused.
            alpha[c - c0] = pi[c] * (pw ? pw[c] : T(1));
            beta[c - c0] = std::fma(-pm[c], alpha[c - c0], pb ? pb[c] : T(0));
        }
        for (std::int64_t r = 0; r < n; ++r) {
            if (image == 1) {
                const std::int64_t at = r * channels + c0;
                vmla(px + at, alpha.data(), beta.data(), py + at, c1 - c0);
                continue;
            }
            for (std::int64_t c = c0; c < c1; ++c) {
                const std::int64_t at = (r * channels + c) * image;
                norm_apply(px + at, alpha[c - c0], beta[c - c0], nullptr, nullptr, py + at, image, false, 0);
            }
        }
    });
}

template <typename T>
void backward_impl(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& invstd,
                   bool training, double eps, const Tensor& dx, const Tensor& dw, const Tensor& db) {
    const std::int64_t n = x.size(0), channels = x.size(1);
    const std::int64_t image = n * channels == 0 ? 1 : x.numel() / (n * channels), count = n * image;
    const T* pg = data_or_null<T>(g);
    const T* px = data_or_null<T>(x);
    const T* pw = data_or_null<T>(w);
    const T* pm = mean.impl()->data<T>();
    const T* pi = invstd.impl()->data<T>();
    T* pdx = data_or_null<T>(dx);
    T* pdw = data_or_null<T>(dw);
    T* pdb = data_or_null<T>(db);
    // In evaluation `invstd` holds the running variance: PyTorch's backward takes its 1 / sqrt(var + eps)
    // in double (its forward, in the dtype).
    auto inv = [&](std::int64_t c) {
        return training ? pi[c] : static_cast<T>(1.0 / std::sqrt(static_cast<double>(pi[c]) + eps));
    };
    if (image == 1) {
        // PyTorch's channels-last kernel: Σg and Σ(x - mean)·g down the rows in the dtype (fused), then
        // dx in registers across the channels: for float64 its compiler fuses the subtraction of the
        // product in whole 4-lane registers only, not in the channels left over.
        const std::int64_t whole = sizeof(T) == 8 ? channels - channels % 4 : channels;
        parallel_for(0, channels, grain_for(3 * n), [&](std::int64_t c0, std::int64_t c1) {
            const std::int64_t width = c1 - c0, fused = std::clamp<std::int64_t>(whole - c0, 0, width);
            std::vector<T> s(static_cast<std::size_t>(width), T(0)), d(s), centred(s), gc(s), k(s), gm(s), is(s), wc(s);
            for (std::int64_t r = 0; r < n; ++r) {
                const T* gr = pg + r * channels + c0;
                const T* xr = px + r * channels + c0;
                for (std::int64_t j = 0; j < width; ++j) {
                    s[j] = s[j] + gr[j];
                    centred[j] = xr[j] - pm[c0 + j];
                }
                vmla(centred.data(), gr, d.data(), d.data(), width);
            }
            for (std::int64_t j = 0; j < width; ++j) {
                is[j] = inv(c0 + j);
                wc[j] = pw ? pw[c0 + j] : T(1);
                k[j] = d[j] * is[j] * is[j] / static_cast<T>(count);
                gm[j] = s[j] / static_cast<T>(count);
                if (pdw) pdw[c0 + j] = d[j] * is[j];
                if (pdb) pdb[c0 + j] = s[j];
            }
            if (!pdx) return;
            for (std::int64_t r = 0; r < n; ++r) {
                const T* gr = pg + r * channels + c0;
                const T* xr = px + r * channels + c0;
                T* dr = pdx + r * channels + c0;
                if (!training) {
                    for (std::int64_t j = 0; j < width; ++j) dr[j] = gr[j] * is[j] * wc[j];
                    continue;
                }
                for (std::int64_t j = 0; j < width; ++j) {
                    centred[j] = -(xr[j] - pm[c0 + j]);
                    gc[j] = gr[j] - gm[j];
                }
                vmla(centred.data(), k.data(), gc.data(), dr, fused);
                for (std::int64_t j = fused; j < width; ++j) dr[j] = gc[j] + centred[j] * k[j];
                for (std::int64_t j = 0; j < width; ++j) dr[j] = dr[j] * is[j] * wc[j];
            }
        });
        return;
    }
    parallel_for(0, channels, grain_for(3 * count), [&](std::int64_t c0, std::int64_t c1) {
        std::vector<T> centred(static_cast<std::size_t>(image));
        for (std::int64_t c = c0; c < c1; ++c) {
            const T m = pm[c], i = inv(c), wc = pw ? pw[c] : T(1);
            double sum = 0, dotp = 0;
            for (std::int64_t r = 0; r < n; ++r) {
                const std::int64_t at = (r * channels + c) * image;
                for (std::int64_t j = 0; j < image; ++j) centred[j] = px[at + j] - m;
                sum += static_cast<double>(lanes_sum(pg + at, image));
                dotp += static_cast<double>(lanes_dot(centred.data(), pg + at, image));
            }
            if (pdw) pdw[c] = static_cast<T>(dotp * static_cast<double>(i));
            if (pdb) pdb[c] = static_cast<T>(sum);
            if (!pdx) continue;
            const T k = static_cast<T>(dotp) * i * i / static_cast<T>(count);
            const T gm = static_cast<T>(sum / static_cast<double>(count));
            for (std::int64_t r = 0; r < n; ++r) {
                const std::int64_t at = (r * channels + c) * image;
                if (training) {
                    batch_norm_row_dx(pg + at, px + at, m, k, gm, i, wc, pdx + at, image);
                } else {
                    for (std::int64_t j = 0; j < image; ++j) pdx[at + j] = pg[at + j] * i * wc;
                }
            }
        }
    });
}

}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd) {
    detail::dispatch_float(x.dtype(), "batch_norm", [&](auto tag) {
        forward_impl<decltype(tag)>(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                                    save_invstd);
    });
}

void batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& invstd, bool training, double eps, const Tensor& dx, const Tensor& dweight,
                         const Tensor& dbias) {
    detail::dispatch_float(x.dtype(), "batch_norm", [&](auto tag) {
        backward_impl<decltype(tag)>(grad, x, weight, mean, invstd, training, eps, dx, dweight, dbias);
    });
}

}  // namespace xgrad::kernels::cpu
