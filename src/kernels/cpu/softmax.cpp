// CPU softmax and log_softmax over the last dim of contiguous rows, forward and backward, in PyTorch
// 1.13's arithmetic (its _vec_softmax_lastdim, _vec_log_softmax_lastdim and their backward): the row's
// max, exp(x - max), a sum in its vec::reduce_all order (vec_math's lanes_sum), then a multiply by the
// sum's reciprocal (softmax) or a subtraction of its log (log_softmax); and nll_loss, which picks each
// target's log-probability (cross_entropy's second half).
//
// Over another dim (softmax_inner), PyTorch 1.13's _vec_softmax, _vec_log_softmax and
// _vec_softmax_backward at one thread: the rows of `inner` elements that lie along the dim are
// combined lane by lane, every sum in order along the dim.
#include <cmath>
#include <vector>

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/sum_order.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

namespace {

std::int64_t rows_per_chunk(std::int64_t width) {
    return std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(width, 1));
}

/// The lanes of PyTorch 1.13's AVX2 vectors (8 floats, 4 doubles). Its kernels over a dim that is not
/// last run the lanes of a row of `inner` elements up to the last multiple of this through its
/// vectorised exp and the rest, the tail, through C's std::exp (glibc's here as there).
template <typename T>
constexpr std::int64_t kTorchLanes = 32 / static_cast<std::int64_t>(sizeof(T));

/// Splits the lanes of a kernel over the middle dim of (outer, dim, inner) into blocks of one outer
/// index: body(o, j0, n, vector) for lanes j0 .. j0 + n, all before the row's tail (`vector`, blocks
/// of up to 512 lanes) or all in it (fewer than kTorchLanes). On the pool's threads; lanes are
/// independent, so the split changes no bit.
template <typename T, typename F>
void for_lane_blocks(std::int64_t outer, std::int64_t dim, std::int64_t inner, F&& body) {
    constexpr std::int64_t kBlock = 512;
    const std::int64_t head = inner / kTorchLanes<T> * kTorchLanes<T>;
    const std::int64_t blocks = (head + kBlock - 1) / kBlock + (head < inner ? 1 : 0);
    const std::int64_t grain =
        std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(dim * std::min(inner, kBlock), 1));
    parallel_for(0, outer * blocks, grain, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i) {
            const std::int64_t o = i / blocks, j0 = (i % blocks) * kBlock;
            if (j0 < head)
                body(o, j0, std::min(kBlock, head - j0), true);
            else
                body(o, head, inner - head, false);
        }
    });
}

/// max(a, b) as varith's kMaximum: a NaN wins (the first), of two equal values b.
template <typename T>
T nan_max(T a, T b) {
    return std::isnan(a) ? a : std::isnan(b) ? b : a > b ? a : b;
}

}  // namespace

void softmax_rows(const Tensor& x, const Tensor& out, bool log) {
    const std::int64_t width = x.dim() == 0 ? 1 : x.size(-1), rows = width == 0 ? 0 : x.numel() / width;
    detail::dispatch_float(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.impl()->data<T>();
        T* po = out.impl()->data<T>();
        parallel_for(0, rows, rows_per_chunk(width), [&](std::int64_t lo, std::int64_t hi) {
            vsoftmax_rows(px + lo * width, po + lo * width, hi - lo, width, log);
        });
    });
}

void softmax_inner(const Tensor& x, const Tensor& out, std::int64_t dim, std::int64_t inner, bool log) {
    const std::int64_t outer = dim * inner == 0 ? 0 : x.numel() / (dim * inner);
    detail::dispatch_float(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.impl()->data<T>();
        T* po = out.impl()->data<T>();
        for_lane_blocks<T>(outer, dim, inner, [&](std::int64_t o, std::int64_t j0, std::int64_t n, bool vector) {
            const T* xo = px + o * dim * inner + j0;  // lane k of row d: xo[d * inner + k]
            T* yo = po + o * dim * inner + j0;
            std::vector<T> buf(static_cast<std::size_t>(3 * n));
            T *m = buf.data(), *s = m + n, *e = s + n;
            if (vector) {
                // Row by row: the lanes' max (a NaN wins, as vec::maximum), exp(x - max) and its sum in
                // order along the dim.
                std::copy(xo, xo + n, m);
                for (std::int64_t d = 1; d < dim; ++d) varith(Arith::kMaximum, m, xo + d * inner, m, n, false);
                std::fill(s, s + n, T(0));
                for (std::int64_t d = 0; d < dim; ++d) {
                    T* ed = log ? e : yo + d * inner;  // softmax keeps exp(x - max) in y for the division
                    varith(Arith::kSub, xo + d * inner, m, ed, n, false);
                    vexp(ed, ed, n);
                    varith(Arith::kAdd, s, ed, s, n, false);
                }
            } else {
                // The tail, lane by lane (a few lanes: calls row by row would cost more than they do).
                for (std::int64_t k = 0; k < n; ++k) {
                    T mk = xo[k], sk = 0;
                    for (std::int64_t d = 1; d < dim; ++d) mk = nan_max(mk, xo[d * inner + k]);
                    for (std::int64_t d = 0; d < dim; ++d) {
                        const T ek = std::exp(xo[d * inner + k] - mk);
                        if (!log) yo[d * inner + k] = ek;
                        sk += ek;
                    }
                    m[k] = mk;
                    s[k] = sk;
                }
                if (log) vlog(s, s, n);  // every lane through the vectorised log (PyTorch maps it over the sums)
                for (std::int64_t k = 0; k < n; ++k)
                    for (std::int64_t d = 0; d < dim; ++d) {
                        T& y = yo[d * inner + k];
                        y = log ? (xo[d * inner + k] - m[k]) - s[k] : y / s[k];
                    }
                return;
            }
            if (log) {
                vlog(s, s, n);  // every lane through the vectorised log (PyTorch maps it over the sums)
                for (std::int64_t d = 0; d < dim; ++d) {
                    varith(Arith::kSub, xo + d * inner, m, yo + d * inner, n, false);  // (x - max) - log(sum)
                    varith(Arith::kSub, yo + d * inner, s, yo + d * inner, n, false);
                }
            } else {
                for (std::int64_t d = 0; d < dim; ++d) varith(Arith::kDiv, yo + d * inner, s, yo + d * inner, n, false);
            }
        });
    });
}

void softmax_backward_inner(const Tensor& grad, const Tensor& out, const Tensor& dx, std::int64_t dim,
                            std::int64_t inner, bool log) {
    const std::int64_t outer = dim * inner == 0 ? 0 : out.numel() / (dim * inner);
    // a * b + c as vmla: fused where the instruction set has FMA, as PyTorch's compiler fuses its loops.
    const bool fused = simd_arch() != SimdArch::kSse2;
    detail::dispatch_float(out.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
        using T = decltype(tag);
        const T* pg = grad.impl()->data<T>();
        const T* po = out.impl()->data<T>();
        T* pd = dx.impl()->data<T>();
        auto mla = [fused](T a, T b, T c) { return fused ? std::fma(a, b, c) : a * b + c; };
        for_lane_blocks<T>(outer, dim, inner, [&](std::int64_t o, std::int64_t j0, std::int64_t n, bool vector) {
            const std::int64_t base = o * dim * inner + j0;  // lane k of row d: base + d * inner + k
            if (!vector) {                                   // the tail, lane by lane
                for (std::int64_t k = 0; k < n; ++k) {
                    T sk = 0;
                    for (std::int64_t d = 0; d < dim; ++d) {
                        const std::int64_t at = base + d * inner + k;
                        sk = log ? sk + pg[at] : mla(pg[at], po[at], sk);
                    }
                    for (std::int64_t d = 0; d < dim; ++d) {
                        const std::int64_t at = base + d * inner + k;
                        pd[at] = log ? mla(-std::exp(po[at]), sk, pg[at]) : po[at] * (pg[at] - sk);
                    }
                }
                return;
            }
            std::vector<T> s(static_cast<std::size_t>(n), T(0));
            for (std::int64_t d = 0; d < dim; ++d) {
                const std::int64_t at = base + d * inner;
                if (log)
                    varith(Arith::kAdd, s.data(), pg + at, s.data(), n, false);  // Σ g
                else
                    vmla(pg + at, po + at, s.data(), s.data(), n);  // Σ g · out, fused
            }
            for (std::int64_t d = 0; d < dim; ++d) {
                const std::int64_t at = base + d * inner;
                if (log) {  // g - exp(out) · Σ g, one fused multiply-add
                    vexp(po + at, pd + at, n);
                    vscalar_map(ScalarMap::kNeg, pd + at, T(0), T(0), pd + at, n, false);
                    vmla(pd + at, s.data(), pg + at, pd + at, n);
                } else {  // out · (g - Σ g · out)
                    varith(Arith::kSub, pg + at, s.data(), pd + at, n, false);
                    varith(Arith::kMul, po + at, pd + at, pd + at, n, false);
                }
            }
        });
    });
}

void softmax_backward_rows(const Tensor& grad, const Tensor& out, const Tensor& dx, bool log) {
    const std::int64_t width = out.dim() == 0 ? 1 : out.size(-1), rows = width == 0 ? 0 : out.numel() / width;
    detail::dispatch_float(out.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
        using T = decltype(tag);
        const T* pg = grad.impl()->data<T>();
        const T* po = out.impl()->data<T>();
        T* pd = dx.impl()->data<T>();
        parallel_for(0, rows, rows_per_chunk(width), [&](std::int64_t lo, std::int64_t hi) {
            vsoftmax_backward_rows(pg + lo * width, po + lo * width, pd + lo * width, hi - lo, width, log);
        });
    });
}

std::int64_t nll_loss_forward(const Tensor& x, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                              bool reduce, bool mean, const Tensor& out, const Tensor& total_weight) {
    const std::int64_t n = x.size(0), c = x.size(1), l = x.size(2);
    const std::int64_t* pt = target.impl()->data<std::int64_t>();
    for (std::int64_t i = 0; i < n * l; ++i)
        if (pt[i] != ignore_index && (pt[i] < 0 || pt[i] >= c)) return i;
    detail::dispatch_float(x.dtype(), "nll_loss", [&](auto tag) {
        using T = decltype(tag);
        const T* px = x.impl()->data<T>();
        const T* pw = weight.defined() ? weight.impl()->data<T>() : nullptr;
        T* po = out.impl()->data<T>();
        // Element i's target in the (n, c, l) input, and its class weight (in float64).
        auto at = [&](std::int64_t i) { return ((i / l) * c + pt[i]) * l + i % l; };
        auto w = [&](std::int64_t i) { return pw ? static_cast<double>(pw[pt[i]]) : 1.0; };
        if (!reduce) {
            for (std::int64_t i = 0; i < n * l; ++i)
                po[i] = pt[i] == ignore_index ? T(0) : static_cast<T>(-w(i) * static_cast<double>(px[at(i)]));
            return;
        }
        // PyTorch 1.13's nll_loss_out_frame (and nll_loss2d's), so its bits: the losses and the weights
        // summed in T through a cascade of 8 levels, the first passing its sum up after every 2^p
        // elements (p = max(4, ceil(log2(count)) / 8)), each higher one after 2^p of the one below;
        // then the levels added in order, and the mean divided by the total weight.
        constexpr int kLevels = 8;
        const std::int64_t count = n * l;
        const std::int64_t power = std::max<std::int64_t>(4, ceil_log2(count) / kLevels);
        const std::int64_t mask = (std::int64_t{1} << power) - 1;
        T loss[kLevels] = {}, weights[kLevels] = {};
        std::int64_t ignored = 0;
        for (std::int64_t i = 0; i < count; ++i) {
            if (pt[i] == ignore_index) {
                ++ignored;
                continue;
            }
            if (pw) {
                loss[0] -= px[at(i)] * pw[pt[i]];
                weights[0] += pw[pt[i]];
            } else {
                loss[0] -= px[at(i)];
            }
            for (int j = 0; j + 1 < kLevels && (i & (mask << (j * power))) == 0; ++j) {
                loss[j + 1] += loss[j];
                weights[j + 1] += weights[j];
                loss[j] = weights[j] = T(0);
            }
        }
        T sum = 0, total = pw ? T(0) : static_cast<T>(count - ignored);
        for (int j = 0; j < kLevels; ++j) {
            sum += loss[j];
            if (pw) total += weights[j];
        }
        po[0] = mean ? sum / total : sum;  // 0/0 = NaN, as PyTorch
        *total_weight.impl()->data<double>() = static_cast<double>(total);
    });
    return -1;
}

void nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                       bool reduce, bool mean, const Tensor& total_weight, const Tensor& dx) {
    const std::int64_t n = dx.size(0), c = dx.size(1), l = dx.size(2);
    const std::int64_t* pt = target.impl()->data<std::int64_t>();
    detail::dispatch_float(dx.dtype(), "nll_loss", [&](auto tag) {
        using T = decltype(tag);
        const T* pg = grad.impl()->data<T>();
        const T* pw = weight.defined() ? weight.impl()->data<T>() : nullptr;
        T* pd = dx.impl()->data<T>();
        // d loss_i / d x[n, t_i, l] = -weight[t_i]; the mean divides by the total weight.
        const T scale = !reduce ? T(0) : mean ? pg[0] / static_cast<T>(*total_weight.impl()->data<double>()) : pg[0];
        for (std::int64_t i = 0; i < n * l; ++i) {
            if (pt[i] == ignore_index) continue;
            const T w = pw ? pw[pt[i]] : T(1);
            pd[((i / l) * c + pt[i]) * l + i % l] = -w * (reduce ? scale : pg[i]);
        }
    });
}

}  // namespace xgrad::kernels::cpu
