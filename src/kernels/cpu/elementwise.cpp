// CPU elementwise kernels: contiguous blocks computed as xtensor/xsimd expressions, transcendental
// functions by vec_math (runtime-dispatched SIMD, PyTorch's bits on AVX2/AVX-512); strided and
// broadcast operands read in place (runs of the innermost dim, gathered into a small buffer only
// when a run is not contiguous); large outputs split between threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "detail/kernels.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"
#include "kernels/scalar_ops.hpp"

namespace xgrad::kernels::cpu {

using detail::flat;

namespace {

/// Elements gathered per block when a run is strided.
constexpr std::int64_t kBlock = 1024;

[[noreturn]] void unsupported(const char* kind, int op, DType dtype) {
    detail::fail("kernels",
                 std::string(kind) + " op " + std::to_string(op) + " is not defined for " + to_string(dtype));
}

// ---- contiguous blocks ------------------------------------------------------------------------------

/// The unary maps that vec_math computes (this CPU's vectors, PyTorch's bits on AVX2/AVX-512); false for
/// the others. Tried before unary_block builds its xtensor views, which cost more than a small map.
template <typename T>
bool vec_unary(UnaryOp op, const T* px, T* py, std::int64_t n, double a) {
    switch (op) {
        case UnaryOp::kSqrt:
            vsqrt(px, py, n);
            return true;
        case UnaryOp::kRsqrt:
            vrsqrt(px, py, n);
            return true;
        case UnaryOp::kExp:
            vexp(px, py, n);
            return true;
        case UnaryOp::kLog:
            vlog(px, py, n);
            return true;
        case UnaryOp::kTanh:
            vtanh(px, py, n);
            return true;
        case UnaryOp::kSigmoid:
            vsigmoid(px, py, n);
            return true;
        case UnaryOp::kRelu:
            vrelu(px, py, n);
            return true;
        case UnaryOp::kGelu:
            vgelu(px, py, n);
            return true;
        case UnaryOp::kGeluTanh:
            vgelu_tanh(px, py, n);
            return true;
        case UnaryOp::kGeluErf:
            vgelu_erf(px, py, n);
            return true;
        case UnaryOp::kSilu:  // x / (1 + exp(-x)), as PyTorch's vectorised silu
            vsilu(px, py, n);
            return true;
        case UnaryOp::kLog1p:
            vlog1p(px, py, n);
            return true;
        case UnaryOp::kLog2:
            vlog2(px, py, n);
            return true;
        case UnaryOp::kSin:
            vsin(px, py, n);
            return true;
        case UnaryOp::kCos:
            vcos(px, py, n);
            return true;
        case UnaryOp::kLog10:
            vlog10(px, py, n);
            return true;
        case UnaryOp::kTan:
            vtan(px, py, n);
            return true;
        case UnaryOp::kAtan:
            vatan(px, py, n);
            return true;
        case UnaryOp::kAsin:
            vasin(px, py, n);
            return true;
        case UnaryOp::kAcos:
            vacos(px, py, n);
            return true;
        case UnaryOp::kSinh:
            vsinh(px, py, n);
            return true;
        case UnaryOp::kCosh:
            vcosh(px, py, n);
            return true;
        case UnaryOp::kExpm1:
            vexpm1(px, py, n);
            return true;
        case UnaryOp::kMish:
            vmish(px, py, n);
            return true;
        case UnaryOp::kLogSigmoid:
            vlog_sigmoid(px, py, n);
            return true;
        case UnaryOp::kPow:
            vpow(px, a, py, n);  // PyTorch's special exponents and C's edge cases
            return true;
        case UnaryOp::kErf:
            verf(px, py, n);
            return true;
        default:
            return false;
    }
}

/// The unary maps of x and scalars that vec_math computes (vscalar_map), if op is one.
std::optional<ScalarMap> scalar_map_of(UnaryOp op) {
    switch (op) {
        case UnaryOp::kNeg:
            return ScalarMap::kNeg;
        case UnaryOp::kAbs:
            return ScalarMap::kAbs;
        case UnaryOp::kSquare:
            return ScalarMap::kSquare;
        case UnaryOp::kCube:
            return ScalarMap::kCube;
        case UnaryOp::kReciprocal:
            return ScalarMap::kReciprocal;
        case UnaryOp::kAdd:
            return ScalarMap::kAdd;
        case UnaryOp::kSub:
            return ScalarMap::kSub;
        case UnaryOp::kRsub:
            return ScalarMap::kRsub;
        case UnaryOp::kMul:
            return ScalarMap::kMul;
        case UnaryOp::kDiv:
            return ScalarMap::kDiv;
        case UnaryOp::kClamp:
            // min(max(x, a), b) as PyTorch: a max below min gives max everywhere; NaN stays, and so
            // does -0 against a bound of 0 (both comparisons false, as the CUDA kernel's).
            return ScalarMap::kClamp;
        case UnaryOp::kFloor:
            return ScalarMap::kFloor;
        case UnaryOp::kCeil:
            return ScalarMap::kCeil;
        case UnaryOp::kRound:
            return ScalarMap::kRound;
        case UnaryOp::kTrunc:
            return ScalarMap::kTrunc;
        case UnaryOp::kSign:
            return ScalarMap::kSign;
        case UnaryOp::kLeakyRelu:
            return ScalarMap::kLeakyRelu;
        case UnaryOp::kHardsigmoid:
            return ScalarMap::kHardsigmoid;
        case UnaryOp::kHardswish:
            return ScalarMap::kHardswish;
        case UnaryOp::kSoftplus:
            return ScalarMap::kSoftplus;
        case UnaryOp::kSmoothL1:
            return ScalarMap::kSmoothL1;
        case UnaryOp::kHuber:
            return ScalarMap::kHuber;
        default:
            return std::nullopt;
    }
}

// ---- PyTorch's scalar tails ----------------------------------------------------------------------
// PyTorch 1.13 computes many elementwise ops with cpu_kernel_vec: along a run of its loop whose
// operands are contiguous (or one repeated element), two AVX2 registers at a time (16 floats, 8
// doubles) with its vector formula, then the last run % 16 floats (run % 8 doubles) with its scalar
// formula; along any other run, every element with the scalar formula. For the ops below the two
// formulas differ now and then in the last bit: the vector ones call SLEEF, the scalar ones the C
// library (std::exp, std::tanh, ... of the same glibc xgrad calls). xgrad splits its runs the same
// way, so that such a tail, and a tensor of fewer than 16 floats, gets PyTorch's bits too. PyTorch's
// VML ops (exp, log, tanh, sin, erf, ...) vectorise whole runs, tails included, and need no tail.

// gelu's constants as PyTorch's kernels write them (M_SQRT1_2, M_SQRT2 * M_2_SQRTPI * 0.5, 0.044715,
// M_2_SQRTPI * M_SQRT1_2 * 0.5).
constexpr double kSqrt1_2 = std::numbers::sqrt2 / 2;
constexpr double kGeluBeta = std::numbers::sqrt2 * (2 * std::numbers::inv_sqrtpi) * 0.5;
constexpr double kGeluKappa = 0.044715;
constexpr double kPdfScale = (2 * std::numbers::inv_sqrtpi) * kSqrt1_2 * 0.5;

/// The elements that PyTorch's vectorised loop takes per step: two AVX2 registers.
template <typename T>
constexpr std::int64_t kTailLanes = 64 / static_cast<std::int64_t>(sizeof(T));

/// Whether op has a scalar formula of its own in PyTorch's CPU kernel (see above); `a` is pow's exponent.
template <typename T>
bool has_scalar_tail(UnaryOp op, double a) {
    if constexpr (!std::is_floating_point_v<T>) {
        return false;
    } else {
        switch (op) {
            case UnaryOp::kSigmoid:
            case UnaryOp::kSilu:
            case UnaryOp::kMish:
            case UnaryOp::kSoftplus:
            case UnaryOp::kGeluTanh:
            case UnaryOp::kSinh:
            case UnaryOp::kCosh:
            case UnaryOp::kElu:  // elu and celu
            case UnaryOp::kSelu:
                return true;
            case UnaryOp::kGelu:  // float32 goes to oneDNN's kernel, which has no scalar tail
                return std::is_same_v<T, double>;
            case UnaryOp::kGeluErf:
                return true;
            case UnaryOp::kPow:  // not the exponents PyTorch computes with the same products both ways
                return a != 0.0 && a != 1.0 && a != 2.0 && a != 3.0 && a != -2.0 && a != -1.0 && a != 0.5 && a != -0.5;
            default:
                return false;
        }
    }
}

/// op's scalar formula in PyTorch's CPU kernel (its AVX2 build, whose compiler fuses gelu_tanh's
/// x + kappa x^3 into one multiply-add, as in the vector formula).
template <typename T>
T tail_value(UnaryOp op, T x, double a, double b) {
    switch (op) {
        case UnaryOp::kSigmoid:
            return T(1) / (T(1) + std::exp(-x));
        case UnaryOp::kGeluTanh: {
            const T beta = static_cast<T>(kGeluBeta);
            const T inner = beta * std::fma(static_cast<T>(kGeluKappa), x * x * x, x);
            return T(0.5) * x * (T(1) + std::tanh(inner));
        }
        case UnaryOp::kGelu:
        case UnaryOp::kGeluErf:
            return x * T(0.5) * (T(1) + std::erf(x * static_cast<T>(kSqrt1_2)));
        case UnaryOp::kPow:  // std::pow(base, double(exponent)): in double for float32 too
            return static_cast<T>(std::pow(static_cast<double>(x), a));
        default:
            return scalar::float_unary<T>(op, x, static_cast<T>(a), static_cast<T>(b));
    }
}

/// Whether the binary op has a scalar formula of its own in PyTorch's CPU kernel (as has_scalar_tail).
template <typename T>
bool has_scalar_tail(BinaryOp op) {
    if constexpr (!std::is_floating_point_v<T>) {
        return false;
    } else {
        switch (op) {
            case BinaryOp::kSiluBackward:
            case BinaryOp::kGlu:
            case BinaryOp::kGluBackwardFirst:
            case BinaryOp::kGluBackwardSecond:
            case BinaryOp::kMishBackward:
            case BinaryOp::kSoftplusBackward:
            case BinaryOp::kGeluTanhBackward:
            case BinaryOp::kAtan2:
            case BinaryOp::kPow:
            case BinaryOp::kLogAddExp:
            case BinaryOp::kLogAddExp2:
            case BinaryOp::kEluBackward:  // elu and celu
            case BinaryOp::kSeluBackward:
            case BinaryOp::kHardtanhBackward:   // where x is NaN (relu6 too)
            case BinaryOp::kHardswishBackward:  // where x is NaN, and at 3
                return true;
            case BinaryOp::kGeluBackward:  // float32 goes to oneDNN's kernel
                return std::is_same_v<T, double>;
            case BinaryOp::kGeluErfBackward:
                return true;
            default:
                return false;
        }
    }
}

/// has_scalar_tail in a tensor's dtype (false for integer dtypes).
template <typename Op, typename... A>
bool scalar_runs_in(DType dtype, Op op, A... a) {
    return dtype == kFloat32 ? has_scalar_tail<float>(op, a...)
                             : dtype == kFloat64 && has_scalar_tail<double>(op, a...);
}

/// The binary op's scalar formula in PyTorch's CPU kernel, with the multiply-adds its AVX2 build fuses
/// (the same as in its vector formulas, vec_math_impl.hpp).
template <typename T>
T tail_value(BinaryOp op, T g, T x, double a, double b) {
    switch (op) {
        case BinaryOp::kSiluBackward: {
            const T s = T(1) / (T(1) + std::exp(-x));
            return g * s * std::fma(x, T(1) - s, T(1));
        }
        case BinaryOp::kMishBackward: {
            const T s = T(1) / (T(1) + std::exp(-x));
            const T t = std::tanh(std::log1p(std::exp(x)));
            return g * std::fma(x * s, std::fma(-t, t, T(1)), t);
        }
        case BinaryOp::kGeluTanhBackward: {
            const T beta = static_cast<T>(kGeluBeta);
            const T kappa = static_cast<T>(kGeluKappa);
            const T x_sq = x * x;
            const T t = std::tanh(beta * std::fma(kappa, x * x * x, x));
            const T left = T(0.5) * x;
            const T left_derivative = T(0.5) * (T(1) + t);
            const T tanh_derivative = std::fma(-t, t, T(1));
            const T inner_derivative = beta * std::fma(T(3) * kappa, x_sq, T(1));
            return g * (left_derivative + left * tanh_derivative * inner_derivative);
        }
        case BinaryOp::kGeluBackward:
        case BinaryOp::kGeluErfBackward: {
            const T cdf = T(0.5) * (T(1) + std::erf(x * static_cast<T>(kSqrt1_2)));
            const T pdf = static_cast<T>(kPdfScale) * std::exp(x * x * T(-0.5));
            return g * (cdf + x * pdf);
        }
        case BinaryOp::kPow:
            return std::pow(g, x);
        default:
            return scalar::float_binary<T>(op, g, x, static_cast<T>(a), static_cast<T>(b));
    }
}

/// One contiguous block of a unary op. Only the cheap maps (scalar_map_of) take `stream`: the
/// transcendental ones compute more than they move and store as vec_math.hpp's kStreamBytes says.
template <typename T>
void unary_block(UnaryOp op, const T* px, T* py, std::int64_t n, double a, double b, bool stream) {
    const auto un = static_cast<std::size_t>(n);
    if constexpr (std::is_integral_v<T>) {
        for (std::int64_t i = 0; i < n; ++i) {
            const T v = px[i];
            switch (op) {
                case UnaryOp::kNeg:
                    py[i] = -v;
                    break;
                case UnaryOp::kAbs:
                    py[i] = v < 0 ? -v : v;
                    break;
                case UnaryOp::kAdd:
                    py[i] = v + static_cast<T>(a);
                    break;
                case UnaryOp::kSub:
                    py[i] = v - static_cast<T>(a);
                    break;
                case UnaryOp::kRsub:
                    py[i] = static_cast<T>(a) - v;
                    break;
                case UnaryOp::kMul:
                    py[i] = v * static_cast<T>(a);
                    break;
                case UnaryOp::kClamp:
                    py[i] = std::min(std::max(v, static_cast<T>(a)), static_cast<T>(b));
                    break;
                case UnaryOp::kSign:
                case UnaryOp::kPowInt:
                    py[i] = scalar::int_unary(op, v, static_cast<T>(a));
                    break;
                default:
                    unsupported("unary", static_cast<int>(op), kInt64);
            }
        }
        return;
    } else {
        if (vec_unary(op, px, py, n, a)) return;
        if (const auto map = scalar_map_of(op)) {
            vscalar_map(*map, px, static_cast<T>(a), static_cast<T>(b), py, n, stream);
            return;
        }
        const auto x = flat(px, un);
        auto y = flat(py, un);
        switch (op) {
            // The ELU family (PyTorch's vectorised kernel: x·pos, or (exp(x·input_scale) - 1)·neg).
            case UnaryOp::kElu:
                velu(px, py, n, T(1), static_cast<T>(a), static_cast<T>(b));
                break;
            case UnaryOp::kSelu:
                velu(px, py, n, T(scalar::kSeluScale), T(scalar::kSeluAlpha * scalar::kSeluScale), T(1));
                break;
            default:  // the rarer maps: one scalar formula per element (kernels/scalar_ops.hpp)
                for (std::int64_t i = 0; i < n; ++i)
                    py[i] = scalar::float_unary<T>(op, px[i], static_cast<T>(a), static_cast<T>(b));
                break;
        }
    }
}

/// vec_math's varith kernel of op, if it has one: + - * / (correctly rounded), relu's, tanh's and
/// sigmoid's gradients from the result (threshold_backward: 0 where the result is <= 0, else g, NaN
/// included; g * (1 - t * t); g * s * (1 - s)), maximum and minimum (NaN propagates, as PyTorch's).
[[gnu::always_inline]] inline std::optional<Arith> arith_of(BinaryOp op) {
    switch (op) {
        case BinaryOp::kAdd:
            return Arith::kAdd;
        case BinaryOp::kSub:
            return Arith::kSub;
        case BinaryOp::kMul:
            return Arith::kMul;
        case BinaryOp::kDiv:
            return Arith::kDiv;
        case BinaryOp::kReluBackward:
            return Arith::kReluBackward;
        case BinaryOp::kTanhBackward:
            return Arith::kTanhBackward;
        case BinaryOp::kSigmoidBackward:
            return Arith::kSigmoidBackward;
        case BinaryOp::kMaximum:
            return Arith::kMaximum;
        case BinaryOp::kMinimum:
            return Arith::kMinimum;
        default:
            return std::nullopt;
    }
}

/// The binary maps that vec_math computes (non-temporal stores for large outputs where `stream`);
/// false for the others. Tried before binary_block builds its xtensor views, as vec_unary.
template <typename T>
bool vec_binary(BinaryOp op, const T* px, const T* pq, T* po, std::int64_t n, T a, T b, bool stream) {
    if (const auto arith = arith_of(op)) {
        varith(*arith, px, pq, po, n, stream);
        return true;
    }
    switch (op) {
        case BinaryOp::kLeakyReluBackward:
            vgrad_map(GradMap::kLeakyRelu, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kHardtanhBackward:
            vgrad_map(GradMap::kHardtanh, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kHardsigmoidBackward:
            vgrad_map(GradMap::kHardsigmoid, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kHardswishBackward:
            vgrad_map(GradMap::kHardswish, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kSoftplusBackward:
            vgrad_map(GradMap::kSoftplus, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kSmoothL1Backward:
            vgrad_map(GradMap::kSmoothL1, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kHuberBackward:
            vgrad_map(GradMap::kHuber, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kPowBackward:
            vgrad_map(GradMap::kPow, px, pq, a, b, po, n, stream);
            return true;
        case BinaryOp::kMishBackward:
            vmish_backward(px, pq, po, n);
            return true;
        case BinaryOp::kLogSigmoidBackward:
            vlog_sigmoid_backward(px, pq, po, n);
            return true;
        case BinaryOp::kGeluBackward:
            vgelu_backward(px, pq, po, n);
            return true;
        case BinaryOp::kGeluErfBackward:
            vgelu_erf_backward(px, pq, po, n);
            return true;
        case BinaryOp::kGeluTanhBackward:
            vgelu_tanh_backward(px, pq, po, n);
            return true;
        case BinaryOp::kSiluBackward:  // s = 1 / (1 + exp(-q)); p s (1 + q (1 - s))
            vsilu_backward(px, pq, po, n);
            return true;
        case BinaryOp::kGlu:
            vglu(px, pq, po, n);
            return true;
        case BinaryOp::kGluBackwardFirst:
        case BinaryOp::kGluBackwardSecond:
            vglu_backward(px, pq, po, n, op == BinaryOp::kGluBackwardSecond);
            return true;
        case BinaryOp::kPow:  // SLEEF's pow, as PyTorch's vectorised pow of two tensors
            vpow(px, pq, po, n);
            return true;
        case BinaryOp::kAtan2:  // SLEEF's atan2, as PyTorch's vectorised atan2
            vatan2(px, pq, po, n);
            return true;
        case BinaryOp::kLogAddExp:
        case BinaryOp::kLogAddExp2:
            vlogaddexp(px, pq, po, n, op == BinaryOp::kLogAddExp2);
            return true;
        default:
            return false;
    }
}

/// fmod (or, with kRemainder, Python's remainder: fmod moved to the divisor's sign) of float32
/// elements, without the C library's bit-by-bit loop. For |x / y| < 2^24 the double quotient
/// truncates to the right k, and x - k·y is exact in double (k·y has at most 48 significant bits, and
/// the result is a float): the result is fmod's, which is exact and so unique, and so PyTorch's
/// (SLEEF's fmodf) bits. Other elements (larger quotients, y zero or infinite, inf and NaN) go to
/// std::fmod. Four floats at a time through SSE2's doubles (baseline x86-64).
/// 1024x1500 floats, one thread: fmod 26.7 -> 1.7 ms, remainder 36.8 -> 2.2 ms (PyTorch 1.13: 1.4, 1.7 ms).
template <bool kRemainder>
void fmod_floats(const float* x, const float* y, float* out, std::int64_t n) {
    constexpr BinaryOp kOp = kRemainder ? BinaryOp::kRemainder : BinaryOp::kFmod;
    std::int64_t i = 0;
#if defined(__SSE2__)
    const __m128d limit = _mm_set1_pd(0x1p24), inf = _mm_set1_pd(HUGE_VAL), abs_d = _mm_set1_pd(-0.0);
    const __m128 sign = _mm_set1_ps(-0.0f), zero = _mm_setzero_ps();
    // fmod of two lanes of doubles, zero where the fast path does not hold (`ok` false there)
    auto half = [&](__m128d xd, __m128d yd, __m128d& ok) {
        const __m128d q = _mm_div_pd(xd, yd);
        ok = _mm_and_pd(_mm_cmplt_pd(_mm_andnot_pd(abs_d, q), limit), _mm_cmplt_pd(_mm_andnot_pd(abs_d, yd), inf));
        const __m128d k = _mm_and_pd(ok, _mm_cvtepi32_pd(_mm_cvttpd_epi32(q)));  // trunc(q), exact below 2^31
        return _mm_sub_pd(xd, _mm_mul_pd(k, yd));
    };
    for (; i + 4 <= n; i += 4) {
        const __m128 xf = _mm_loadu_ps(x + i), yf = _mm_loadu_ps(y + i);
        __m128d ok_lo, ok_hi;
        const __m128d lo = half(_mm_cvtps_pd(xf), _mm_cvtps_pd(yf), ok_lo);
        const __m128d hi = half(_mm_cvtps_pd(_mm_movehl_ps(xf, xf)), _mm_cvtps_pd(_mm_movehl_ps(yf, yf)), ok_hi);
        __m128 r = _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
        r = _mm_or_ps(_mm_andnot_ps(sign, r), _mm_and_ps(sign, xf));  // fmod has x's sign, zeros included
        if constexpr (kRemainder) {
            const __m128 moved =
                _mm_and_ps(_mm_cmpneq_ps(r, zero), _mm_xor_ps(_mm_cmplt_ps(yf, zero), _mm_cmplt_ps(r, zero)));
            r = _mm_or_ps(_mm_andnot_ps(moved, r), _mm_and_ps(moved, _mm_add_ps(r, yf)));
        }
        const int fast = _mm_movemask_pd(ok_lo) | (_mm_movemask_pd(ok_hi) << 2);
        if (fast == 0xF) {
            _mm_storeu_ps(out + i, r);
        } else {
            float lanes[4];
            _mm_storeu_ps(lanes, r);
            for (int k = 0; k < 4; ++k)
                if (!(fast >> k & 1)) lanes[k] = scalar::float_binary<float>(kOp, x[i + k], y[i + k], 0.0f, 0.0f);
            std::copy(lanes, lanes + 4, out + i);
        }
    }
#endif
    for (; i < n; ++i) out[i] = scalar::float_binary<float>(kOp, x[i], y[i], 0.0f, 0.0f);
}

template <typename T>
void binary_block(BinaryOp op, const T* px, const T* pq, T* po, std::int64_t n, double a, double b, bool stream) {
    const auto un = static_cast<std::size_t>(n);
    if constexpr (std::is_integral_v<T>) {
        // The op chosen once, outside the loop, so that the common ones vectorise (int64 add with the
        // switch inside the loop was 2.9 times PyTorch's time).
        auto each = [&](auto f) {
            for (std::int64_t i = 0; i < n; ++i) po[i] = f(px[i], pq[i]);
        };
        switch (op) {
            case BinaryOp::kAdd:
                each([](T x, T y) { return x + y; });
                break;
            case BinaryOp::kSub:
                each([](T x, T y) { return x - y; });
                break;
            case BinaryOp::kMul:
                each([](T x, T y) { return x * y; });
                break;
            case BinaryOp::kMaximum:
                each([](T x, T y) { return std::max(x, y); });
                break;
            case BinaryOp::kMinimum:
                each([](T x, T y) { return std::min(x, y); });
                break;
            case BinaryOp::kPow:
            case BinaryOp::kRemainder:
            case BinaryOp::kFmod:
            case BinaryOp::kDivTrunc:
            case BinaryOp::kDivFloor:
            case BinaryOp::kBitAnd:
            case BinaryOp::kBitOr:
            case BinaryOp::kBitXor:
                each([op](T x, T y) { return scalar::int_binary(op, x, y); });
                break;
            default:
                unsupported("binary", static_cast<int>(op), kInt64);
        }
        return;
    } else {
        if (vec_binary(op, px, pq, po, n, static_cast<T>(a), static_cast<T>(b), stream)) return;
        if constexpr (std::is_same_v<T, float>) {
            if (op == BinaryOp::kFmod) return fmod_floats<false>(px, pq, po, n);
            if (op == BinaryOp::kRemainder) return fmod_floats<true>(px, pq, po, n);
        }
        const auto x = flat(px, un);
        const auto y = flat(pq, un);
        auto o = flat(po, un);
        switch (op) {
            case BinaryOp::kAbsBackward:
                xt::noalias(o) = x * xt::sign(y);
                break;
            case BinaryOp::kClampBackward:
                xt::noalias(o) = xt::where(y >= static_cast<T>(a) && y <= static_cast<T>(b), x, T(0));
                break;
            case BinaryOp::kStdBackward:
                xt::noalias(o) = xt::where(xt::equal(y, T(0)), T(0), x / (y * static_cast<T>(a)));
                break;
            case BinaryOp::kPowBaseGrad:
                xt::noalias(o) = xt::where(xt::equal(y, T(0)), T(0), x);
                break;
            case BinaryOp::kPowLogBase:
                // vec_math's log (PyTorch's, SLEEF's), 0 where x is 0 (log -inf) and y >= 0
                vlog(px, po, n);
                for (std::int64_t i = 0; i < n; ++i)
                    if (po[i] == -std::numeric_limits<T>::infinity() && pq[i] >= T(0)) po[i] = T(0);
                break;
            case BinaryOp::kMaxShare:
                xt::noalias(o) = xt::where(xt::equal(x, y), T(0.5), xt::where(x < y, T(0), T(1)));
                break;
            case BinaryOp::kMinShare:
                xt::noalias(o) = xt::where(xt::equal(x, y), T(0.5), xt::where(x > y, T(0), T(1)));
                break;
            case BinaryOp::kEqualOrBothNan:
                xt::noalias(o) = xt::where(xt::equal(x, y) || (xt::not_equal(x, x) && xt::not_equal(y, y)), T(1), T(0));
                break;
            // The backward ops of the ELU family with vec_math's exp; x is g, y the input.
            case BinaryOp::kEluBackward:
                velu_backward(px, pq, po, n, T(1), static_cast<T>(a), static_cast<T>(b));
                break;
            case BinaryOp::kSeluBackward:
                velu_backward(px, pq, po, n, T(scalar::kSeluScale), T(scalar::kSeluAlpha * scalar::kSeluScale), T(1));
                break;
            default:  // the rarer maps: one scalar formula per element (kernels/scalar_ops.hpp)
                for (std::int64_t i = 0; i < n; ++i)
                    po[i] = scalar::float_binary<T>(op, px[i], pq[i], static_cast<T>(a), static_cast<T>(b));
                break;
        }
    }
}

/// A pointer to `count` contiguous elements of run data: the run itself when its stride is 1, else
/// the elements gathered into `buf`.
template <typename T>
const T* contiguous_run(const T* base, std::int64_t off, std::int64_t stride, std::int64_t count, T* buf) {
    if (stride == 1) return base + off;
    if (stride == 0) {
        std::fill(buf, buf + count, base[off]);
    } else {
        for (std::int64_t i = 0; i < count; ++i) buf[i] = base[off + i * stride];
    }
    return buf;
}

template <typename T>
const T* base_of(const Tensor& t) {
    return static_cast<const T*>(t.impl()->storage->data);
}

}  // namespace

// ---- kernels -------------------------------------------------------------------------------------------

namespace {

/// A contiguous copy of `t`, made tile by tile (copy.cpp), where `t` has the output's shape and its last
/// two dims are a transposed matrix (as x.t() is); undefined otherwise, so that the common case copies
/// no handle. The strided walk below gathers such an operand element by element, one cache line
/// each, along rows kilobytes apart: (x.t() * y.t()).sum() forward and backward of 1024x1500 floats
/// took 5.7 ms, and 3.1-3.5 ms through the copies. (Since then such a result takes its operands'
/// transposed layout, as in PyTorch, and maps.hpp hands this kernel the operands in that order; the
/// copy remains for a transposed operand of a contiguous result, as in c * x.t().) Not for an op with a
/// scalar formula of its own (`scalar_runs`): PyTorch computes a strided run with it, and a copy would
/// hand the run to the vector formula (pow(2, x.t()) differed from PyTorch in about 2 % of elements).
/// `n` is shape's element count (t's too, where t has that shape; another t is never copied).
Tensor untransposed(const Tensor& t, const Shape& shape, std::int64_t n, bool scalar_runs) {
    if (scalar_runs || n < kGrain || t.is_contiguous() || !transposed_matrix(t) || t.shape() != shape) return Tensor();
    Tensor c = detail::make_empty(shape, t.dtype(), t.device());
    copy(t, c);
    return c;
}

}  // namespace

void unary(UnaryOp op, const Tensor& x_in, const Tensor& out, double a, double b) {
    const std::int64_t n = out.numel();
    const bool scalar_runs = scalar_runs_in(out.dtype(), op, a);
    const Tensor xc = untransposed(x_in, out.shape(), n, scalar_runs);
    const Tensor& x = xc.defined() ? xc : x_in;
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* po = out.impl()->data<T>();
        // Non-temporal stores for a large output of a cheap map (unary_block), decided for the whole
        // tensor and fenced once per thread's share, as binary() does.
        // (vec_math's softplus computes more than it moves and ignores the flag.)
        const bool stream = std::is_floating_point_v<T> && scalar_map_of(op).has_value() &&
                            n * static_cast<std::int64_t>(sizeof(T)) >= kStreamBytes;
        const bool tail = has_scalar_tail<T>(op, a);
        if (x.is_contiguous()) {
            const T* px = x.impl()->data<T>();
            // One run: PyTorch's scalar formula from vec_end on.
            const std::int64_t vec_end = tail ? n - n % kTailLanes<T> : n;
            parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                const std::int64_t mid = std::clamp(vec_end, lo, hi);
                unary_block<T>(op, px + lo, po + lo, mid - lo, a, b, stream);
                for (std::int64_t i = mid; i < hi; ++i) po[i] = tail_value<T>(op, px[i], a, b);
                if (stream) stream_fence();
            });
            return;
        }
        const StridedGeometry<1> geo(out.shape(), {&x});
        const T* px = base_of<T>(x);
        const std::int64_t run = geo.sizes.back();
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
            std::optional<StreamFenceOnce> fence_once;  // a fence per run would wait for each run's lines
            if (stream) fence_once.emplace();
            T buf[kBlock];
            std::int64_t i = lo;
            geo.for_runs(lo, hi, [&](std::int64_t count_in, const auto& off, const auto& st) {
                // The run's scalar tail (all of it where PyTorch's loop cannot vectorise the run), placed
                // within the whole run: a thread's share may start or end inside one.
                std::int64_t count = count_in;
                if (tail) {
                    const std::int64_t vec_end = st[0] == 0 || st[0] == 1 ? run - run % kTailLanes<T> : 0;
                    count = std::clamp(vec_end - i % run, std::int64_t{0}, count_in);
                    for (std::int64_t j = count; j < count_in; ++j)
                        po[i + j] = tail_value<T>(op, px[off[0] + j * st[0]], a, b);
                }
                const std::int64_t block = st[0] == 1 ? count : kBlock;
                for (std::int64_t j = 0; j < count; j += block) {
                    const std::int64_t c = std::min(block, count - j);
                    unary_block<T>(op, contiguous_run(px, off[0] + j * st[0], st[0], c, buf), po + i + j, c, a, b,
                                   stream);
                }
                i += count_in;
            });
        });
    });
}

namespace {

/// Whether every element of t is the same one: each dim has size 1 or stride 0 (a broadcast scalar).
bool one_element(const Tensor& t) {
    const Shape& shape = t.impl()->shape;
    const Strides& strides = t.impl()->strides;
    for (std::int64_t d = 0; d < shape.size(); ++d)
        if (shape[d] != 1 && strides[static_cast<std::size_t>(d)] != 0) return false;
    return true;
}

/// The scalar map computing `x op y` when one side is a single element: x * s as x * a, s - x as
/// a - x. The two sides of + and * swap (their results are the same). None for the other ops.
std::optional<ScalarMap> scalar_operand_map(BinaryOp op, bool scalar_on_right) {
    switch (op) {
        case BinaryOp::kAdd:
            return ScalarMap::kAdd;
        case BinaryOp::kMul:
            return ScalarMap::kMul;
        case BinaryOp::kSub:
            return scalar_on_right ? ScalarMap::kSub : ScalarMap::kRsub;
        case BinaryOp::kDiv:
            return scalar_on_right ? ScalarMap::kDiv : ScalarMap::kRdiv;
        default:
            return std::nullopt;
    }
}

/// How a binary op's two operands lie along the innermost dim of their geometry, for varith_rows: both
/// contiguous, or one of them contiguous and the other one value (stride 0); none otherwise.
std::optional<RowOperands> row_operands(const StridedGeometry<2>& geo) {
    const std::int64_t sx = geo.strides[0].back(), sy = geo.strides[1].back();
    if (sx == 1 && sy == 1) return RowOperands::kBoth;
    if (sx == 0 && sy == 1) return RowOperands::kLeftPerRow;
    if (sx == 1 && sy == 0) return RowOperands::kRightPerRow;
    return std::nullopt;
}

/// Runs at least this long along which an operand is one value map with that scalar (binary()).
constexpr std::int64_t kScalarRun = 256;

/// For a view whose leading dims have stride 0 and whose other dims are contiguous (a block broadcast
/// along the leading dims, as broadcast_view makes): the block's length; 0 for any other view.
std::int64_t repeated_block(const Tensor& t) {
    const Shape& shape = t.impl()->shape;
    const Strides& strides = t.impl()->strides;
    std::int64_t d = shape.size() - 1, block = 1;
    for (; d >= 0 && (shape[d] == 1 || strides[static_cast<std::size_t>(d)] == block); --d) block *= shape[d];
    if (block <= 1) return 0;
    for (; d >= 0; --d)
        if (strides[static_cast<std::size_t>(d)] != 0 && shape[d] != 1) return 0;
    return block;
}

}  // namespace

void binary(BinaryOp op, const Tensor& x_in, const Tensor& y_in, const Tensor& out, double a, double b) {
    const std::int64_t n = out.numel();
    const bool scalar_runs = scalar_runs_in(out.dtype(), op);
    const Tensor xc = untransposed(x_in, out.shape(), n, scalar_runs),
                 yc = untransposed(y_in, out.shape(), n, scalar_runs);
    const Tensor &x = xc.defined() ? xc : x_in, &y = yc.defined() ? yc : y_in;
    detail::dispatch(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* po = out.impl()->data<T>();
        const bool stream = n * static_cast<std::int64_t>(sizeof(T)) >= kStreamBytes;
        const bool x_whole = x.is_contiguous() && x.shape() == out.shape();
        const bool y_whole = y.is_contiguous() && y.shape() == out.shape();
        const bool tail = has_scalar_tail<T>(op);
        if (x_whole && y_whole) {
            const T* px = x.impl()->data<T>();
            const T* py = y.impl()->data<T>();
            const std::int64_t vec_end = tail ? n - n % kTailLanes<T> : n;  // then PyTorch's scalar formula
            parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                const std::int64_t mid = std::clamp(vec_end, lo, hi);
                binary_block<T>(op, px + lo, py + lo, po + lo, mid - lo, a, b, stream);
                for (std::int64_t i = mid; i < hi; ++i) po[i] = tail_value<T>(op, px[i], py[i], a, b);
                if (stream) stream_fence();
            });
            return;
        }
        // One operand whole and the other a single element (a 0-d tensor broadcast to the output's
        // shape): its value as a scalar, so that x * s runs as fast as x * 2.0.
        if constexpr (std::is_floating_point_v<T>) {
            if ((x_whole && one_element(y)) || (y_whole && one_element(x))) {
                if (const auto map = scalar_operand_map(op, x_whole)) {
                    const T* pv = (x_whole ? x : y).impl()->data<T>();
                    const T s = *(x_whole ? y : x).impl()->data<T>();
                    parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                        vscalar_map(*map, pv + lo, s, T(0), po + lo, hi - lo, stream);
                        if (stream) stream_fence();
                    });
                    return;
                }
            }
        }
        // A small op where one operand is whole and the other a contiguous block repeated along the
        // leading dims (a bias row): row by row, without the general strided walk.
        if (n <= kGrain && !tail) {
            const std::int64_t rx = x_whole ? 0 : repeated_block(x), ry = y_whole ? 0 : repeated_block(y);
            if ((x_whole && ry > 0) || (y_whole && rx > 0)) {
                const T* px = x.impl()->data<T>();
                const T* py = y.impl()->data<T>();
                const std::int64_t row = x_whole ? ry : rx;
                for (std::int64_t i = 0; i < n; i += row)
                    binary_block<T>(op, x_whole ? px + i : px, y_whole ? py + i : py, po + i, row, a, b, stream);
                return;
            }
        }
        const StridedGeometry<2> geo(out.shape(), {&x, &y});
        const std::int64_t run = geo.sizes.back();  // the innermost run, as PyTorch's iterator merges it
        const T* px = base_of<T>(x);
        const T* py = base_of<T>(y);
        // Short runs of +, -, * or / along which each operand runs or is one value (a row or channel
        // scale, a bias row, kron): many runs to a call (varith_rows), where a call per run cost more
        // than the arithmetic. (64, 64, 7, 7) * (1, 64, 1, 1) at one thread: 111 -> 21 us (PyTorch 21).
        if constexpr (std::is_floating_point_v<T>) {
            const auto layout = row_operands(geo);
            const auto arith = arith_of(op);
            if (layout && arith && *arith <= Arith::kDiv && geo.sizes.back() < kScalarRun) {
                parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
                    std::int64_t i = lo;
                    geo.for_blocks(
                        lo, hi,
                        [&](std::int64_t count, std::int64_t rows, const auto& off, const auto&, const auto& row) {
                            varith_rows(*arith, *layout, px + off[0], row[0], py + off[1], row[1], po + i, count, rows);
                            i += count * rows;
                        });
                });
                return;
            }
        }
        // An operand that is one value along a run (a column broadcast across rows, either side of
        // outer()) makes the run a map with a scalar, as x * 2.0: z * c for a 1000x1 c 0.205 -> about
        // 0.1 ms, outer() of 1000 and 1000 0.175 -> about 0.05 ms (PyTorch 1.13: 0.076 and 0.042).
        std::optional<ScalarMap> scalar_right, scalar_left;
        if constexpr (std::is_floating_point_v<T>) {
            scalar_right = scalar_operand_map(op, true);
            scalar_left = scalar_operand_map(op, false);
        }
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
            std::optional<StreamFenceOnce> fence_once;  // a fence per run would wait for each run's lines
            if (stream) fence_once.emplace();
            T bx[kBlock], by[kBlock];
            std::int64_t i = lo;
            geo.for_runs(lo, hi, [&](std::int64_t count_in, const auto& off, const auto& st) {
                // The run's scalar tail (all of it where PyTorch's loop cannot vectorise the run: an
                // operand neither contiguous nor one value along it).
                std::int64_t count = count_in;
                if (tail) {  // as in unary(): the tail placed within the whole run
                    const bool vectorised = (st[0] == 0 || st[0] == 1) && (st[1] == 0 || st[1] == 1);
                    const std::int64_t vec_end = vectorised ? run - run % kTailLanes<T> : 0;
                    count = std::clamp(vec_end - i % run, std::int64_t{0}, count_in);
                    for (std::int64_t j = count; j < count_in; ++j)
                        po[i + j] = tail_value<T>(op, px[off[0] + j * st[0]], py[off[1] + j * st[1]], a, b);
                }
                if constexpr (std::is_floating_point_v<T>) {
                    // (short runs stay below: a call per run of 64 made kron() of 32x64 and 16x64 6x slower)
                    const bool long_run = count >= kScalarRun;
                    if (long_run && st[0] == 1 && st[1] == 0 && scalar_right) {
                        vscalar_map(*scalar_right, px + off[0], py[off[1]], T(0), po + i, count, stream);
                        i += count_in;
                        return;
                    }
                    if (long_run && st[0] == 0 && st[1] == 1 && scalar_left) {
                        vscalar_map(*scalar_left, py + off[1], px[off[0]], T(0), po + i, count, stream);
                        i += count_in;
                        return;
                    }
                }
                const std::int64_t block = st[0] == 1 && st[1] == 1 ? count : kBlock;
                for (std::int64_t j = 0; j < count; j += block) {
                    const std::int64_t c = std::min(block, count - j);
                    binary_block<T>(op, contiguous_run(px, off[0] + j * st[0], st[0], c, bx),
                                    contiguous_run(py, off[1] + j * st[1], st[1], c, by), po + i + j, c, a, b, stream);
                }
                i += count_in;
            });
        });
    });
}

void lerp(const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& out) {
    const std::int64_t n = out.numel();
    if (n == 0) return;
    detail::dispatch_float(out.dtype(), "lerp", [&](auto tag) {
        using T = decltype(tag);
        T* po = out.impl()->data<T>();
        const StridedGeometry<3> geo(out.shape(), {&self, &end, &weight});
        const T* pa = base_of<T>(self);
        const T* pb = base_of<T>(end);
        const T* pw = base_of<T>(weight);
        // Runs of self and end (gathered when strided) and a run or one value of the weight (a scalar
        // weight is a 0-d tensor broadcast), vec_math's vlerp a block at a time.
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
            T ba[kBlock], bb[kBlock], bw[kBlock];
            std::int64_t i = lo;
            geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                const std::int64_t block = st[0] == 1 && st[1] == 1 && st[2] <= 1 ? count : kBlock;
                for (std::int64_t j = 0; j < count; j += block) {
                    const std::int64_t c = std::min(block, count - j);
                    const T* w = st[2] == 0 ? pw + off[2] : contiguous_run(pw, off[2] + j * st[2], st[2], c, bw);
                    vlerp(contiguous_run(pa, off[0] + j * st[0], st[0], c, ba),
                          contiguous_run(pb, off[1] + j * st[1], st[1], c, bb), w, st[2] == 0 ? 0 : 1, po + i + j, c);
                }
                i += count;
            });
        });
    });
}

}  // namespace xgrad::kernels::cpu
