// The scalar formulas of the rarer elementwise ops (trigonometry, rounding, integer division, the
// activations beyond ReLU/GELU), written once for both devices: the CPU kernels loop over them and the
// CUDA kernels call them per thread, so that results differ only where the devices' libm do.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/ops.hpp"

#ifdef __CUDACC__
#define XGRAD_HD __host__ __device__
#else
#define XGRAD_HD
#endif

namespace xgrad::kernels::scalar {

/// a * b + c with one rounding (a fused multiply-add), on either device.
template <typename T>
XGRAD_HD inline T fused_mla(T a, T b, T c) {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<T, float>)
        return fmaf(a, b, c);
    else
        return ::fma(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

/// One element of PyTorch 1.13's _single_tensor_sgd, in its order and its dtype (the CPU and CUDA
/// sgd_step kernels share it):
///   d_p = grad (or -grad when maximize); d_p = d_p.add(param, alpha=weight_decay)
///   buf = clone(d_p) on the first step, else buf.mul_(momentum).add_(d_p, alpha=1-dampening)
///   d_p = d_p.add(buf, alpha=momentum) when nesterov, else buf; param.add_(d_p, alpha=-lr)
/// x.add(y, alpha=a) is x + a·y: one fused multiply-add with kFused (PyTorch's AVX2 and AVX-512 CPU
/// kernels, fmadd(y, a, x), and its CUDA kernels), the product rounded first without (its default CPU
/// kernel). `buf` is null without momentum.
template <bool kFused, typename T>
XGRAD_HD inline void sgd_element(T& p, T g, T* buf, T wd, T m, T one_minus_damp, T neg_lr, bool maximize, bool decay,
                                 bool first, bool nesterov) {
    auto add = [](T x, T a, T y) { return kFused ? fused_mla(a, y, x) : x + a * y; };  // x.add(y, alpha=a)
    T d = maximize ? -g : g;
    if (decay) d = add(d, wd, p);
    if (buf) {
        T b = d;
        if (!first) b = add(*buf * m, one_minus_damp, d);
        *buf = b;
        d = nesterov ? add(d, m, b) : b;
    }
    p = add(p, neg_lr, d);
}

// SELU's constants, as PyTorch writes them.
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;

/// Integer `a * b`, wrapping on overflow as PyTorch's int64 arithmetic does (no undefined behaviour).
template <typename T>
XGRAD_HD inline T wrap_mul(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

/// Integer `a ** b` by squaring, as PyTorch's powi: a negative exponent gives 1, ±1 or 0.
template <typename T>
XGRAD_HD inline T int_pow(T a, T b) {
    if (b < 0) return a == 1 ? T(1) : a == -1 ? (b % 2 == 0 ? T(1) : T(-1)) : T(0);
    T result = 1;
    while (b) {
        if (b & 1) result = wrap_mul(result, a);
        b /= 2;
        a = wrap_mul(a, a);
    }
    return result;
}

/// Integer ops of the issue-11 block: sign and powers (unary), the divisions and pow (binary). The
/// tensor side refuses a zero divisor; x / -1 never traps (INT64_MIN / -1 wraps to itself).
template <typename T>
XGRAD_HD inline T int_unary(UnaryOp op, T x, T a) {
    switch (op) {
        case UnaryOp::kSign:
            return T(T(0) < x) - T(x < T(0));
        case UnaryOp::kPowInt:
            return int_pow(x, a);
        default:
            return 0;  // refused on the tensor side
    }
}

template <typename T>
XGRAD_HD inline T int_binary(BinaryOp op, T x, T y) {
    using U = std::make_unsigned_t<T>;
    if (op == BinaryOp::kPow) return int_pow(x, y);
    if (op == BinaryOp::kBitAnd) return x & y;
    if (op == BinaryOp::kBitOr) return x | y;
    if (op == BinaryOp::kBitXor) return x ^ y;
    if (y == 0) return 0;  // a division by zero, refused on the tensor side
    switch (op) {
        case BinaryOp::kRemainder: {
            if (y == -1) return 0;
            const T r = x % y;
            return r != 0 && ((r < 0) != (y < 0)) ? T(r + y) : r;
        }
        case BinaryOp::kFmod:
            return y == -1 ? T(0) : T(x % y);
        case BinaryOp::kDivTrunc:
            return y == -1 ? T(U(0) - U(x)) : T(x / y);
        case BinaryOp::kDivFloor: {
            if (y == -1) return T(U(0) - U(x));
            const T q = x / y;
            return (x % y != 0) && ((x < 0) != (y < 0)) ? T(q - 1) : q;
        }
        default:
            return 0;  // refused on the tensor side
    }
}

/// Floating unary ops of the issue-11 block, as PyTorch 1.13's CPU kernels write them.
template <typename T>
XGRAD_HD inline T float_unary(UnaryOp op, T x, T a, T b) {
    switch (op) {
        case UnaryOp::kErf:
            return std::erf(x);
        case UnaryOp::kSin:
            return std::sin(x);
        case UnaryOp::kCos:
            return std::cos(x);
        case UnaryOp::kTan:
            return std::tan(x);
        case UnaryOp::kAsin:
            return std::asin(x);
        case UnaryOp::kAcos:
            return std::acos(x);
        case UnaryOp::kAtan:
            return std::atan(x);
        case UnaryOp::kSinh:
            return std::sinh(x);
        case UnaryOp::kCosh:
            return std::cosh(x);
        case UnaryOp::kLog2:
            return std::log2(x);
        case UnaryOp::kLog10:
            return std::log10(x);
        case UnaryOp::kLog1p:
            return std::log1p(x);
        case UnaryOp::kLogLibm:
            return std::log(x);
        case UnaryOp::kExpm1:
            return std::expm1(x);
        case UnaryOp::kExp2:
            return std::exp2(x);
        case UnaryOp::kSign:  // NaN and -0 give 0, as PyTorch's (0 < x) - (x < 0)
            return T(T(0) < x) - T(x < T(0));
        case UnaryOp::kFloor:
            return std::floor(x);
        case UnaryOp::kCeil:
            return std::ceil(x);
        case UnaryOp::kRound:
            return std::nearbyint(x);  // half to even
        case UnaryOp::kTrunc:
            return std::trunc(x);
        case UnaryOp::kSoftplus:
            return x * a > b ? x : std::log1p(std::exp(x * a)) / a;
        case UnaryOp::kSilu:
            return x / (T(1) + std::exp(-x));
        case UnaryOp::kMish:
            return x * std::tanh(std::log1p(std::exp(x)));
        case UnaryOp::kLeakyRelu:
            return x > T(0) ? x : x * a;
        // exp - 1, not expm1, as PyTorch 1.13 (elu(-0.) is +0.).
        case UnaryOp::kElu:
            return x > T(0) ? x : (std::exp(x * b) - T(1)) * a;
        case UnaryOp::kSelu:
            return x > T(0) ? x * T(kSeluScale) : (std::exp(x) - T(1)) * T(kSeluAlpha * kSeluScale);
        case UnaryOp::kHardsigmoid: {
            const T lo = x + T(3) < T(0) ? T(0) : x + T(3);  // NaN stays NaN
            return (T(6) < lo ? T(6) : lo) / T(6);
        }
        case UnaryOp::kHardswish: {
            const T lo = x + T(3) < T(0) ? T(0) : x + T(3);
            return x * (T(6) < lo ? T(6) : lo) / T(6);
        }
        case UnaryOp::kLogSigmoid:
            return (x < T(0) ? x : T(0)) - std::log1p(std::exp(-std::abs(x)));
        // The elementwise losses of x = input - target, as PyTorch 1.13's kernels, in T throughout.
        case UnaryOp::kSmoothL1: {
            const T z = std::abs(x);
            return z < a ? T(0.5) * z * z / a : z - T(0.5) * a;
        }
        case UnaryOp::kHuber: {
            const T z = std::abs(x);
            return z < a ? T(0.5) * z * z : a * (z - T(0.5) * a);
        }
        default:
            return x;  // not an op of this block
    }
}

/// Floating binary ops of the issue-11 block; the backward ones take (g, x) and give dx.
template <typename T>
XGRAD_HD inline T float_binary(BinaryOp op, T g, T x, T a, T b) {
    switch (op) {
        case BinaryOp::kAtan2:
            return std::atan2(g, x);
        case BinaryOp::kRemainder: {  // (g, x) are (dividend, divisor) here
            T mod = std::fmod(g, x);
            if (mod != T(0) && ((x < T(0)) != (mod < T(0)))) mod += x;
            return mod;
        }
        case BinaryOp::kFmod:
            return std::fmod(g, x);
        case BinaryOp::kDivTrunc:
            return std::trunc(g / x);
        case BinaryOp::kDivFloor: {  // PyTorch's div_floor_floating: Python's // on floats
            if (x == T(0)) return g / x;
            const T mod = std::fmod(g, x);
            T div = (g - mod) / x;
            if (mod != T(0) && ((x < T(0)) != (mod < T(0)))) div -= T(1);
            if (div == T(0)) return std::copysign(T(0), g / x);
            T floordiv = std::floor(div);
            if (div - floordiv > T(0.5)) floordiv += T(1);
            return floordiv;
        }
        case BinaryOp::kSoftplusBackward: {
            const T z = std::exp(x * a);
            return x * a > b ? g : g * z / (z + T(1));
        }
        case BinaryOp::kSiluBackward: {
            const T s = T(1) / (T(1) + std::exp(-x));
            return g * s * (T(1) + x * (T(1) - s));
        }
        case BinaryOp::kMishBackward: {
            const T s = T(1) / (T(1) + std::exp(-x));
            const T t = std::tanh(std::log1p(std::exp(x)));
            return g * (t + x * s * (T(1) - t * t));
        }
        case BinaryOp::kLeakyReluBackward:
            return x > T(0) ? g : g * a;
        case BinaryOp::kPowBackward:  // (g, x) here: the gradient and x^(e-1); a = e
            return g * (x * a);
        // The ELU family's, hardtanh's and hardswish's gradients as PyTorch's scalar formulas (its CPU
        // kernels' scalar tails and strided runs, and its CUDA kernels) write them; its CPU vector
        // formulas (vec_math) differ where x is NaN (these give g times the positive slope, or g) and, for
        // hardswish, at x = 3 (g * 1.5 here, g there).
        case BinaryOp::kEluBackward:
            return x <= T(0) ? g * b * a * std::exp(x * b) : g;
        case BinaryOp::kSeluBackward:
            return x <= T(0) ? g * T(kSeluAlpha * kSeluScale) * std::exp(x) : g * T(kSeluScale);
        case BinaryOp::kHardtanhBackward:
            return x <= a || x >= b ? T(0) : g;
        case BinaryOp::kHardsigmoidBackward:
            return x > T(-3) && x < T(3) ? g * T(1.0f / 6.0f) : T(0);  // PyTorch's float 1/6
        // The vector formulas of PyTorch's smooth_l1 and huber backward kernels (sign(x): 1 where x > 0,
        // else -1), then norm b, then g, in T.
        case BinaryOp::kSmoothL1Backward:
            return (std::abs(x) >= a ? (x > T(0) ? T(1) : T(-1)) : x / a) * b * g;
        case BinaryOp::kGlu:  // (g, x) here are glu's halves (a, b)
            return g * (T(1) / (T(1) + std::exp(-x)));
        case BinaryOp::kGluBackwardFirst:
            return T(1) / (T(1) + std::exp(-x)) * g;
        case BinaryOp::kGluBackwardSecond: {  // (g, x) here: the first half and the second
            const T s = T(1) / (T(1) + std::exp(-x));
            return (T(1) - s) * s * g;
        }
        case BinaryOp::kHuberBackward:
            return (std::abs(x) >= a ? (x > T(0) ? T(1) : T(-1)) * a : x) * b * g;
        // PyTorch 1.13's scalar formulas (its CPU kernels' tails and strided runs), base e and base 2;
        // (g, x) here are the two operands. Equal operands whose difference is NaN are the same
        // infinity, which is the result (std::isinf is not a device function); std::max(g, x) keeps g
        // unless g < x.
        case BinaryOp::kLogAddExp:
        case BinaryOp::kLogAddExp2: {
            const T diff = g - x;
            if (g == x && diff != diff) return g;
            const T m = g < x ? x : g, d = -std::abs(diff);
            return op == BinaryOp::kLogAddExp ? m + std::log(T(1) + std::exp(d))
                                              : m + std::log2(T(1) + std::pow(T(2), d));
        }
        case BinaryOp::kHardswishBackward:
            return x < T(-3) ? T(0) : x <= T(3) ? g * (x / T(3) + T(0.5)) : g;
        case BinaryOp::kLogSigmoidBackward: {
            const bool negative = x < T(0);
            const T z = std::exp(-std::abs(x));
            return g * ((negative ? T(1) : T(0)) - (negative ? T(1) : T(-1)) * (z / (T(1) + z)));
        }
        default:
            return g;  // not an op of this block
    }
}

}  // namespace xgrad::kernels::scalar
