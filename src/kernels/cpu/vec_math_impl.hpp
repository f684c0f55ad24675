// The bodies of the vec_math kernels on xsimd batches; included only by the vec_math_<arch>.cpp files.
//
// Everything here has internal linkage (an anonymous namespace): each arch's copy stays in its own
// object file, compiled with that arch's -m flags, so the linker can never hand an AVX copy of a
// helper to the SSE2 path. The only external symbol per arch is TableFor::operator()<Arch>.
//
// The numbers are PyTorch 1.13's on AVX2: its Vectorized<float/double> calls SLEEF 3.5's u10 functions for exp,
// log, tanh, erf and pow (Sleef_expf8_u10 ...). The algorithms below are SLEEF 3.5.1's (libm/sleefsimdsp.c,
// sleefsimddp.c, df.h, dd.h; Naoki Shibata and contributors, Boost licence) written again on xsimd: same constants,
// same operations in the same order, fused multiply-adds exactly where SLEEF's AVX2 build has them. So AVX2 and
// AVX-512 give SLEEF's, and so PyTorch's, results bit for bit. Without FMA (SSE2) the multiply-adds are unfused and
// the double-word products use Dekker's splitting, as SLEEF's own SSE2 build does: exp, log, tanh, erf and pow stay
// within 1 ulp of the FMA results, sigmoid within 4; the gelu forms differ more where their result nearly cancels.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>
#include <type_traits>
#include <utility>

#include <xsimd/xsimd.hpp>

#include "kernels/cpu/vec_math_table.hpp"
#include "kernels/scalar_ops.hpp"

namespace xgrad::kernels::cpu::detail {
namespace {

// ---- batches and fused multiply-add ---------------------------------------------------------------

/// The signed and unsigned integer batches of B's width (int32 lanes for float, int64 for double).
template <class B>
using IntBatch = xsimd::batch<std::conditional_t<sizeof(typename B::value_type) == 4, std::int32_t, std::int64_t>,
                              typename B::arch_type>;
template <class B>
using UIntBatch = xsimd::batch<std::conditional_t<sizeof(typename B::value_type) == 4, std::uint32_t, std::uint64_t>,
                               typename B::arch_type>;

/// Whether Arch has fused multiply-add (SLEEF's ENABLE_FMA_SP/DP builds).
template <class A>
constexpr bool kFma = std::is_same_v<A, xsimd::fma3<xsimd::avx2>> || std::is_base_of_v<xsimd::avx512f, A>;

template <class B>
constexpr bool kFmaOf = kFma<typename B::arch_type>;

/// x * y + z with one rounding; only for arches with FMA. (xsimd 8.1's avx512f has no fma of its own:
/// its generic x * y + z stays unfused under -ffp-contract=off, hence the intrinsics.)
template <class B>
B fused(const B& x, const B& y, const B& z) {
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>) {
        if constexpr (std::is_same_v<typename B::value_type, float>)
            return _mm512_fmadd_ps(x, y, z);
        else
            return _mm512_fmadd_pd(x, y, z);
    }
#endif
    return xsimd::fma(x, y, z);
}

/// x * y + z: fused where the arch has FMA, two roundings elsewhere (SLEEF's vmla).
template <class B>
B mla(const B& x, const B& y, const B& z) {
    if constexpr (kFmaOf<B>)
        return fused(x, y, z);
    else
        return x * y + z;
}

/// x with y's sign bit flipped into it (SLEEF's vmulsign).
template <class B>
B mulsign(const B& x, const B& y) {
    return x ^ xsimd::bitofsign(y);
}

/// A NaN with every bit set where `m`, else x (SLEEF's `vor(mask, x)`).
template <class B>
B or_nan(const typename B::batch_bool_type& m, const B& x) {
    return xsimd::select(m, xsimd::bitwise_cast<B>(IntBatch<B>(-1)), x);
}

template <class B>
B infinity() {
    return B(std::numeric_limits<typename B::value_type>::infinity());
}

template <class B>
B quiet_nan() {
    return B(std::numeric_limits<typename B::value_type>::quiet_NaN());
}

/// c1 x + c0, and Estrin's schemes on top of it (SLEEF's POLY macros).
template <class B, class T>
B poly2(const B& x, T c1, T c0) {
    return mla(x, B(c1), B(c0));
}
template <class B, class T>
B poly3(const B& x, const B& x2, T c2, T c1, T c0) {
    return mla(x2, B(c2), poly2(x, c1, c0));
}
template <class B, class T>
B poly4(const B& x, const B& x2, T c3, T c2, T c1, T c0) {
    return mla(x2, poly2(x, c3, c2), poly2(x, c1, c0));
}
template <class B, class T>
B poly6(const B& x, const B& x2, const B& x4, T c5, T c4, T c3, T c2, T c1, T c0) {
    return mla(x4, poly2(x, c5, c4), poly4(x, x2, c3, c2, c1, c0));
}
template <class B, class T>
B poly7(const B& x, const B& x2, const B& x4, T c6, T c5, T c4, T c3, T c2, T c1, T c0) {
    return mla(x4, poly3(x, x2, c6, c5, c4), poly4(x, x2, c3, c2, c1, c0));
}
template <class B, class T>
B poly8(const B& x, const B& x2, const B& x4, T c7, T c6, T c5, T c4, T c3, T c2, T c1, T c0) {
    return mla(x4, poly4(x, x2, c7, c6, c5, c4), poly4(x, x2, c3, c2, c1, c0));
}
template <class B, class T>
B poly9(const B& x, const B& x2, const B& x4, const B& x8, T c8, T c7, T c6, T c5, T c4, T c3, T c2, T c1, T c0) {
    return mla(x8, B(c8), poly8(x, x2, x4, c7, c6, c5, c4, c3, c2, c1, c0));
}
template <class B, class T>
B poly10(const B& x, const B& x2, const B& x4, const B& x8, T c9, T c8, T c7, T c6, T c5, T c4, T c3, T c2, T c1,
         T c0) {
    return mla(x8, poly2(x, c9, c8), poly8(x, x2, x4, c7, c6, c5, c4, c3, c2, c1, c0));
}

template <class B, class T>
B poly12(const B& x, const B& x2, const B& x4, const B& x8, T cb, T ca, T c9, T c8, T c7, T c6, T c5, T c4, T c3, T c2,
         T c1, T c0) {
    return mla(x8, poly4(x, x2, cb, ca, c9, c8), poly8(x, x2, x4, c7, c6, c5, c4, c3, c2, c1, c0));
}
template <class B, class T>
B poly16(const B& x, const B& x2, const B& x4, const B& x8, T cf, T ce, T cd, T cc, T cb, T ca, T c9, T c8, T c7, T c6,
         T c5, T c4, T c3, T c2, T c1, T c0) {
    return mla(x8, poly8(x, x2, x4, cf, ce, cd, cc, cb, ca, c9, c8), poly8(x, x2, x4, c7, c6, c5, c4, c3, c2, c1, c0));
}

/// Stores v at p with a non-temporal (streaming) store, which writes the line without reading it
/// first and keeps it out of the caches; p must be aligned to the batch's size.
template <class B>
void stream_store(const B& v, typename B::value_type* p) {
    using T = typename B::value_type;
    constexpr std::size_t bytes = sizeof(B);
    if constexpr (bytes == 64) {
#if defined(__AVX512F__)
        if constexpr (std::is_same_v<T, float>)
            _mm512_stream_ps(p, v);
        else
            _mm512_stream_pd(p, v);
#endif
    } else if constexpr (bytes == 32) {
#if defined(__AVX__)
        if constexpr (std::is_same_v<T, float>)
            _mm256_stream_ps(p, v);
        else
            _mm256_stream_pd(p, v);
#endif
    } else {
        static_assert(bytes == 16);
        if constexpr (std::is_same_v<T, float>)
            _mm_stream_ps(p, v);
        else
            _mm_stream_pd(p, v);
    }
}

/// Elements before y + i is aligned for stream_store (at most n).
template <class B>
std::int64_t until_aligned(const typename B::value_type* y, std::int64_t n) {
    using T = typename B::value_type;
    const auto mis = reinterpret_cast<std::uintptr_t>(y) % sizeof(B);
    if (mis % sizeof(T) != 0) return n;  // never aligned: no streaming
    return std::min<std::int64_t>(n, static_cast<std::int64_t>(mis == 0 ? 0 : (sizeof(B) - mis) / sizeof(T)));
}

// ---- double-word arithmetic (SLEEF's df.h / dd.h) -------------------------------------------------

/// The unevaluated sum x + y with |y| <= ulp(x) / 2: twice the working precision.
template <class B>
struct Two {
    B x, y;
};

template <class B>
Two<B> two(const B& x, const B& y) {
    return {x, y};
}

/// x with its low mantissa bits cleared, so that products of two such halves are exact (Dekker).
template <class B>
B upper(const B& d) {
    using U = UIntBatch<B>;
    if constexpr (sizeof(typename B::value_type) == 4)
        return d & xsimd::bitwise_cast<B>(U(0xfffff000u));
    else
        return d & xsimd::bitwise_cast<B>(U(0xfffffffff8000000ull));
}

template <class B>
Two<B> neg(const Two<B>& a) {
    return {-a.x, -a.y};
}
template <class B>
Two<B> scale(const Two<B>& a, const B& s) {
    return {a.x * s, a.y * s};
}
template <class B>
Two<B> normalize(const Two<B>& a) {
    B s = a.x + a.y;
    return {s, (a.x - s) + a.y};
}

// add: |first| >= |second| assumed; add2: any magnitudes (SLEEF's dfadd / dfadd2 families).
template <class B>
Two<B> add(const B& a, const B& b) {
    B s = a + b;
    return {s, (a - s) + b};
}
template <class B>
Two<B> add2(const B& a, const B& b) {
    B s = a + b;
    B v = s - a;
    return {s, (a - (s - v)) + (b - v)};
}
template <class B>
Two<B> add(const Two<B>& a, const B& b) {
    B s = a.x + b;
    return {s, ((a.x - s) + b) + a.y};
}
template <class B>
Two<B> add2(const Two<B>& a, const B& b) {
    B s = a.x + b;
    B v = s - a.x;
    return {s, ((a.x - (s - v)) + (b - v)) + a.y};
}
template <class B>
Two<B> add(const B& a, const Two<B>& b) {
    B s = a + b.x;
    return {s, ((a - s) + b.x) + b.y};
}
template <class B>
Two<B> add2(const B& a, const Two<B>& b) {
    B s = a + b.x;
    B v = s - a;
    return {s, ((a - (s - v)) + (b.x - v)) + b.y};
}
template <class B>
Two<B> add(const Two<B>& a, const Two<B>& b) {
    B s = a.x + b.x;
    return {s, (((a.x - s) + b.x) + a.y) + b.y};
}
template <class B>
Two<B> add2(const Two<B>& a, const Two<B>& b) {
    B s = a.x + b.x;
    B v = s - a.x;
    B t = (a.x - (s - v)) + (b.x - v);
    return {s, t + (a.y + b.y)};
}

template <class B>
Two<B> mul(const B& a, const B& b) {
    B s = a * b;
    if constexpr (kFmaOf<B>) {
        return {s, fused(a, b, -s)};
    } else {
        B ah = upper(a), al = a - ah, bh = upper(b), bl = b - bh;
        return {s, ((((ah * bh) + -s) + al * bh) + ah * bl) + al * bl};
    }
}
template <class B>
Two<B> mul(const Two<B>& a, const B& b) {
    B s = a.x * b;
    if constexpr (kFmaOf<B>) {
        return {s, fused(a.y, b, fused(a.x, b, -s))};
    } else {
        B ah = upper(a.x), al = a.x - ah, bh = upper(b), bl = b - bh;
        return {s, (((((ah * bh) + -s) + al * bh) + ah * bl) + al * bl) + a.y * b};
    }
}
template <class B>
Two<B> mul(const Two<B>& a, const Two<B>& b) {
    B s = a.x * b.x;
    if constexpr (kFmaOf<B>) {
        return {s, fused(a.x, b.y, fused(a.y, b.x, fused(a.x, b.x, -s)))};
    } else {
        B ah = upper(a.x), al = a.x - ah, bh = upper(b.x), bl = b.x - bh;
        return {s, ((((((ah * bh) + -s) + al * bh) + ah * bl) + al * bl) + a.x * b.y) + a.y * b.x};
    }
}
template <class B>
Two<B> sqr(const Two<B>& a) {
    B s = a.x * a.x;
    if constexpr (kFmaOf<B>) {
        return {s, fused(a.x + a.x, a.y, fused(a.x, a.x, -s))};
    } else {
        B ah = upper(a.x), al = a.x - ah;
        return {s, ((((ah * ah) + -s) + (ah + ah) * al) + al * al) + a.x * (a.y + a.y)};
    }
}
/// 1 / d.
template <class B>
Two<B> rec(const Two<B>& d) {
    B t = B(1) / d.x;
    if constexpr (kFmaOf<B>) {
        return {t, t * fused(-d.y, t, fused(-d.x, t, B(1)))};
    } else {
        B dh = upper(d.x), dl = d.x - dh, th = upper(t), tl = t - th;
        return {t, t * (((((B(1) - dh * th) - dh * tl) - dl * th) - dl * tl) - d.y * t)};
    }
}
/// n / d.
template <class B>
Two<B> div(const Two<B>& n, const Two<B>& d) {
    B t = B(1) / d.x;
    B s = n.x * t;
    if constexpr (kFmaOf<B>) {
        B u = fused(t, n.x, -s);
        B v = fused(-d.y, t, fused(-d.x, t, B(1)));
        return {s, fused(s, v, fused(n.y, t, u))};
    } else {
        B dh = upper(d.x), dl = d.x - dh, th = upper(t), tl = t - th, nh = upper(n.x), nl = n.x - nh;
        B w = (((B(1) - dh * th) - dh * tl) - dl * th) - dl * tl;
        B u = ((((nh * th - s) + nh * tl) + nl * th) + nl * tl) + s * w;
        return {s, t * (n.y - s * d.y) + u};
    }
}

/// 1 / d of a single word, as a double-word (SLEEF's dfrec_vf2_vf / ddrec_vd2_vd).
template <class B>
Two<B> rec(const B& d) {
    B t = B(1) / d;
    if constexpr (kFmaOf<B>) {
        return {t, t * fused(-d, t, B(1))};
    } else {
        B dh = upper(d), dl = d - dh, th = upper(t), tl = t - th;
        return {t, t * ((((B(1) - dh * th) - dh * tl) - dl * th) - dl * tl)};
    }
}
/// sqrt(d) as a double-word (SLEEF's dfsqrt_vf2_vf / ddsqrt_vd2_vd): one Newton step on the root.
template <class B>
Two<B> sqrt_two(const B& d) {
    const B t = xsimd::sqrt(d);
    return scale(mul(add2(d, mul(t, t)), rec(t)), B(typename B::value_type(0.5)));
}

// ---- exponent bits ------------------------------------------------------------------------------
// float keeps integers in int32 lanes, as SLEEF; double keeps them as exact doubles (SSE2 and AVX2
// have no 64-bit arithmetic shift), which gives the same bits wherever SLEEF's results are not masked.

constexpr float kRLn2f = 1.442695040888963407359924681001892137426645954152985934135449406931f;
constexpr float kL2Uf = 0.693145751953125f;  // ln 2, upper bits
constexpr float kL2Lf = 1.428606765330187045e-06f;
constexpr double kRLn2 = 1.442695040888963407359924681001892137426645954152985934135449406931;
constexpr double kL2U = .69314718055966295651160180568695068359375;
constexpr double kL2L = .28235290563031577122588448175013436025525412068e-12;

/// Round to nearest even, as an int32 (float) batch: x86's cvtps2dq (INT_MIN out of range).
template <class B>
IntBatch<B> rint_int(const B& x) {
    using A = typename B::arch_type;
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, A>) return _mm512_cvtps_epi32(x);
#endif
    // xsimd 8.1 has nearbyint_as_int (cvtps2dq) for SSE2 and AVX, not for avx512f
    if constexpr (std::is_base_of_v<xsimd::sse2, A> || std::is_base_of_v<xsimd::avx, A>)
        return xsimd::nearbyint_as_int(x);
    else
        return xsimd::to_int(xsimd::nearbyint(x));
}

/// 2^q for float.
template <class B>
B pow2i(const IntBatch<B>& q) {
    return xsimd::bitwise_cast<B>((q + 0x7f) << 23);
}

/// (e << 52) modulo 2^64 for an integral double |e| < 2^51.
template <class B>
UIntBatch<B> shl52(const B& e) {
    return xsimd::bitwise_cast<UIntBatch<B>>(e + B(0x1.8p52)) << 52;
}

/// 2^q for double (q integral).
template <class B>
B pow2i_d(const B& q) {
    return xsimd::bitwise_cast<B>(shl52(q + B(1023)));
}

/// d * 2^e, in two steps so that 2^e may underflow or overflow alone (SLEEF's vldexp2). The first step
/// is exact wherever the callers keep the result (|e| <= 150 and d near 1: the lanes outside are
/// replaced afterwards), so the result is d * 2^e rounded once: on AVX-512 one vscalefps gives the
/// same bits (checked over all 2^32 floats for exp, tanh, erf, sigmoid and gelu's tanh form) instead of
/// eight integer and floating operations.
template <class B>
B ldexp2(const B& d, const IntBatch<B>& e) {
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>)
        return _mm512_scalef_ps(d, _mm512_cvtepi32_ps(e));
#endif
    return d * pow2i<B>(e >> 1) * pow2i<B>(e - (e >> 1));
}
/// f(x) for xsimd's floor, ceil or trunc, with no undefined behaviour on SSE2: there xsimd 8.1 rounds
/// doubles through a scalar double-to-int64 conversion of every lane, undefined for inf, NaN and huge
/// values (UBSan reports it) even though its select then keeps x for them. Such lanes (already
/// integers, or inf or NaN) skip the conversion here; every result is the same as xsimd's (and
/// roundps/roundpd's on SSE4.1 and later, which need no detour).
template <class B, class F>
B rounded_defined(const B& x, F f) {
    using T = typename B::value_type;
    if constexpr (std::is_same_v<typename B::arch_type, xsimd::sse2>) {
        const auto small = xsimd::abs(x) < B(std::is_same_v<T, float> ? T(0x1p23) : T(0x1p52));  // false for NaN, inf
        return xsimd::select(small, f(xsimd::select(small, x, B(T(0)))), x);
    } else {
        return f(x);
    }
}
template <class B>
B floor_defined(const B& x) {
    return rounded_defined(x, [](const B& v) { return xsimd::floor(v); });
}
template <class B>
B ceil_defined(const B& x) {
    return rounded_defined(x, [](const B& v) { return xsimd::ceil(v); });
}
template <class B>
B trunc_defined(const B& x) {
    return rounded_defined(x, [](const B& v) { return xsimd::trunc(v); });
}

/// ldexp2 for double, e integral: on AVX-512 one vscalefpd (the same argument; sampled over 2^27
/// doubles for the same functions).
template <class B>
B ldexp2_d(const B& d, const B& e) {
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>) return _mm512_scalef_pd(d, e);
#endif
    B h = floor_defined(e * B(0.5));
    return d * pow2i_d(h) * pow2i_d(e - h);
}

/// d * 2^q by adding to the exponent field (no range checks: SLEEF's vldexp3).
template <class B>
B ldexp3(const B& d, const IntBatch<B>& q) {
    return xsimd::bitwise_cast<B>(xsimd::bitwise_cast<IntBatch<B>>(d) + (q << 23));
}
template <class B>
B ldexp3_d(const B& d, const B& q) {
    return xsimd::bitwise_cast<B>(xsimd::bitwise_cast<UIntBatch<B>>(d) + shl52(q));
}

/// The unbiased exponent field of a positive float (SLEEF's vilogb2k).
template <class B>
IntBatch<B> ilogb2k(const B& d) {
    return ((xsimd::bitwise_cast<IntBatch<B>>(d) >> 23) & 0xff) - 0x7f;
}
/// The unbiased exponent field of a positive double, as a double.
template <class B>
B ilogb2k_d(const B& d) {
    using U = UIntBatch<B>;
    U field = (xsimd::bitwise_cast<U>(d) >> 52) & U(0x7ff);
    return xsimd::bitwise_cast<B>(field | xsimd::bitwise_cast<U>(B(0x1p52))) - B(0x1p52 + 1023);
}

/// x * 2^q for any int q, in five steps (SLEEF's vldexp for float).
template <class B>
B ldexpk(B x, IntBatch<B> q) {
    using I = IntBatch<B>;
    I m = q >> 31;
    m = (((m + q) >> 6) - m) << 4;
    q = q - (m << 2);
    m = m + 0x7f;
    m = xsimd::select(m > I(0), m, I(0));
    m = xsimd::select(m > I(0xff), I(0xff), m);
    B u = xsimd::bitwise_cast<B>(m << 23);
    x = x * u * u * u * u;
    u = xsimd::bitwise_cast<B>((q + 0x7f) << 23);
    return x * u;
}

// ---- exp ----------------------------------------------------------------------------------------

/// SLEEF's xexpf (u10).
template <class B>
B exp_f(const B& d) {
    IntBatch<B> q = rint_int(d * B(kRLn2f));
    B qf = xsimd::to_float(q);
    B s = mla(qf, B(-kL2Uf), d);
    s = mla(qf, B(-kL2Lf), s);
    B u(0.000198527617612853646278381f);
    u = mla(u, s, B(0.00139304355252534151077271f));
    u = mla(u, s, B(0.00833336077630519866943359f));
    u = mla(u, s, B(0.0416664853692054748535156f));
    u = mla(u, s, B(0.166666671633720397949219f));
    u = mla(u, s, B(0.5f));
    u = B(1.0f) + mla(s * s, u, s);
    u = ldexp2(u, q);
    u = xsimd::select(d < B(-104.0f), B(0.0f), u);
    return xsimd::select(B(100.0f) < d, infinity<B>(), u);
}

/// SLEEF's xexp (u10); its FMA build uses other coefficients than its plain one.
template <class B>
B exp_d(const B& d) {
    B q = xsimd::nearbyint(d * B(kRLn2));
    B s = mla(q, B(-kL2U), d);
    s = mla(q, B(-kL2L), s);
    B s2 = s * s, s4 = s2 * s2, s8 = s4 * s4, u;
    if constexpr (kFmaOf<B>) {
        u = poly10(s, s2, s4, s8, +0.2081276378237164457e-8, +0.2511210703042288022e-7, +0.2755762628169491192e-6,
                   +0.2755723402025388239e-5, +0.2480158687479686264e-4, +0.1984126989855865850e-3,
                   +0.1388888888914497797e-2, +0.8333333333314938210e-2, +0.4166666666666602598e-1,
                   +0.1666666666666669072e+0);
        u = mla(u, s, B(0.5));
        u = mla(u, s, B(1.0));
        u = mla(u, s, B(1.0));
    } else {
        u = poly10(s, s2, s4, s8, 2.08860621107283687536341e-09, 2.51112930892876518610661e-08,
                   2.75573911234900471893338e-07, 2.75572362911928827629423e-06, 2.4801587159235472998791e-05,
                   0.000198412698960509205564975, 0.00138888888889774492207962, 0.00833333333331652721664984,
                   0.0416666666666665047591422, 0.166666666666666851703837);
        u = mla(u, s, B(0.5));
        u = B(1.0) + mla(s * s, u, s);
    }
    u = ldexp2_d(u, q);
    u = xsimd::select(d > B(709.78271114955742909217217426), infinity<B>(), u);
    return xsimd::select(d < B(-1000.0), B(0.0), u);
}

/// exp of a double-word argument, as a double-word (SLEEF's expk2f / expk2; tanh and erf use it).
template <class B>
Two<B> expk2(const Two<B>& d) {
    if constexpr (std::is_same_v<typename B::value_type, float>) {
        IntBatch<B> q = rint_int((d.x + d.y) * B(kRLn2f));
        B qf = xsimd::to_float(q);
        Two<B> s = add2(d, qf * B(-kL2Uf));
        s = add2(s, qf * B(-kL2Lf));
        B u(+0.1980960224e-3f);
        u = mla(u, s.x, B(+0.1394256484e-2f));
        u = mla(u, s.x, B(+0.8333456703e-2f));
        u = mla(u, s.x, B(+0.4166637361e-1f));
        Two<B> t = add2(mul(s, u), B(+0.166666659414234244790680580464e+0f));
        t = add2(mul(s, t), B(0.5f));
        t = add2(s, mul(sqr(s), t));
        t = add(B(1.0f), t);
        t = {ldexp2(t.x, q), ldexp2(t.y, q)};
        auto tiny = d.x < B(-104.0f);
        return {xsimd::select(tiny, B(0.0f), t.x), xsimd::select(tiny, B(0.0f), t.y)};
    } else {
        B q = xsimd::nearbyint((d.x + d.y) * B(kRLn2));
        Two<B> s = add2(d, q * B(-kL2U));
        s = add2(s, q * B(-kL2L));
        Two<B> s2 = sqr(s), s4 = sqr(s2);
        B s8 = s4.x * s4.x;
        B u = poly10(s.x, s2.x, s4.x, s8, +0.1602472219709932072e-9, +0.2092255183563157007e-8,
                     +0.2505230023782644465e-7, +0.2755724800902135303e-6, +0.2755731892386044373e-5,
                     +0.2480158735605815065e-4, +0.1984126984148071858e-3, +0.1388888888886763255e-2,
                     +0.8333333333333347095e-2, +0.4166666666666669905e-1);
        Two<B> t = add(B(0.5), mul(s, B(+0.1666666666666666574e+0)));
        t = add(B(1.0), mul(t, s));
        t = add(B(1.0), mul(t, s));
        t = add(t, mul(s4, u));
        t = {ldexp2_d(t.x, q), ldexp2_d(t.y, q)};
        auto tiny = d.x < B(-1000.0);
        return {xsimd::select(tiny, B(0.0), t.x), xsimd::select(tiny, B(0.0), t.y)};
    }
}

template <class B>
B exp_(const B& x) {
    if constexpr (std::is_same_v<typename B::value_type, float>)
        return exp_f(x);
    else
        return exp_d(x);
}

/// exp(-x), the sign flipped as PyTorch's Vectorized neg() flips it (0 - x would turn +0 into +0).
template <class B>
B exp_neg_(const B& x) {
    return exp_(mulsign(x, B(typename B::value_type(-1))));
}

/// 1 / (1 + exp(-x)): the sigmoid inside PyTorch's vectorised silu and mish gradients (its sigmoid kernel,
/// sigmoid_, adds in the other order and negates as 0 - x).
template <class B>
B sigmoid_neg_exp_(const B& x) {
    const B one(typename B::value_type(1));
    return one / (one + exp_neg_(x));
}

// ---- log ----------------------------------------------------------------------------------------

/// d = m * 2^e with m in [0.75, 1.5): m, and e as a floating-point number (subnormals scaled first).
template <class B>
Two<B> split_exponent(const B& d_in) {
    using T = typename B::value_type;
    auto o = d_in < B(std::numeric_limits<T>::min());
    B d = xsimd::select(o, d_in * B(T(0x1p64)), d_in);
    if constexpr (std::is_same_v<T, float>) {
        IntBatch<B> e = ilogb2k(d * B(1.0f / 0.75f));
        B m = ldexp3(d, -e);
        B ef = xsimd::to_float(e);
        return {m, xsimd::select(o, ef - B(64.0f), ef)};
    } else {
        B e = ilogb2k_d(d * B(1.0 / 0.75));
        B m = ldexp3_d(d, -e);
        return {m, xsimd::select(o, e - B(64.0), e)};
    }
}

/// log's special values: +inf at +inf, nan below 0 and at nan, -inf at 0.
template <class B>
B log_fixup(const B& d, B r) {
    r = xsimd::select(d == infinity<B>(), infinity<B>(), r);
    r = xsimd::select((d < B(0)) || xsimd::isnan(d), quiet_nan<B>(), r);
    return xsimd::select(d == B(0), -infinity<B>(), r);
}

/// The reduced argument of SLEEF's logarithms: d = m 2^e, x = (m - 1) / (m + 1) as a double-word, and
/// x² rounded.
template <class B>
struct LogArg {
    Two<B> x;
    B x2, e;
};
template <class B>
LogArg<B> log_arg(const B& d) {
    using T = typename B::value_type;
    auto [m, e] = split_exponent(d);
    const Two<B> x = div(add2(B(T(-1)), m), add2(B(T(1)), m));
    return {x, x.x * x.x, e};
}

/// SLEEF's xlogf_u1 / xlog_u1.
template <class B>
B log_(const B& d) {
    auto [x, x2, e] = log_arg(d);
    Two<B> s;
    B t;
    if constexpr (std::is_same_v<typename B::value_type, float>) {
        s = mul(two(B(0.69314718246459960938f), B(-1.904654323148236017e-09f)), e);
        t = B(+0.3027294874e+0f);
        t = mla(t, x2, B(+0.3996108174e+0f));
        t = mla(t, x2, B(+0.6666694880e+0f));
    } else {
        s = mul(two(B(0.693147180559945286226764), B(2.319046813846299558417771e-17)), e);
        B x4 = x2 * x2, x8 = x4 * x4;
        t = poly7(x2, x4, x8, 0.1532076988502701353e+0, 0.1525629051003428716e+0, 0.1818605932937785996e+0,
                  0.2222214519839380009e+0, 0.2857142932794299317e+0, 0.3999999999635251990e+0,
                  0.6666666666667333541e+0);
    }
    s = add(s, scale(x, B(2)));
    s = add(s, x2 * x.x * t);
    return log_fixup(d, s.x + s.y);
}

// ---- sin, cos -----------------------------------------------------------------------------------

/// a · b of two double-words, rounded to one (SLEEF's dfmul_vf_vf2_vf2 / ddmul_vd_vd2_vd2).
template <class B>
B mul1(const Two<B>& a, const Two<B>& b) {
    if constexpr (kFmaOf<B>) {
        return fused(a.x, b.x, fused(a.y, b.x, a.x * b.y));
    } else {
        const B ah = upper(a.x), al = a.x - ah, bh = upper(b.x), bl = b.x - bh;
        return ((((a.y * bh + ah * b.y) + al * bl) + ah * bl) + al * bh) + ah * bh;
    }
}

/// Where SLEEF's sin and cos reduce their argument by Cody and Waite's method in their first range:
/// |x| < 125 (float), 15 (double). Further out they need Payne and Hanek's reduction.
template <typename T>
constexpr T kTrigFast = std::is_same_v<T, float> ? T(125) : T(15);

/// sin(r) / r's factor for the reduced argument t as a double-word: SLEEF's u1 polynomial.
template <class B>
B sin_reduced(const Two<B>& t) {
    using T = typename B::value_type;
    const Two<B> s = sqr(t);
    B u;
    if constexpr (std::is_same_v<T, float>) {
        u = B(2.6083159809786593541503e-06f);
        u = mla(u, s.x, B(-0.0001981069071916863322258f));
        u = mla(u, s.x, B(0.00833307858556509017944336f));
    } else {
        const B s2 = s.x * s.x, s4 = s2 * s2;
        u = poly6(s.x, s2, s4, 2.72052416138529567917983e-15, -7.6429259411395447190023e-13,
                  1.60589370117277896211623e-10, -2.5052106814843123359368e-08, 2.75573192104428224777379e-06,
                  -0.000198412698412046454654947);
        u = mla(u, s.x, B(0.00833333333333318056201922));
    }
    const T c = std::is_same_v<T, float> ? T(-0.166666597127914428710938f) : T(-0.166666666666666657414808);
    const Two<B> x = add(B(T(1)), mul(add(B(c), u * s.x), s));
    return mul1(t, x);
}

/// SLEEF's xsinf_u1 / xsin_u1 (PyTorch's Sleef_sinf8_u10) in its first range; every lane of x must be
/// there (kTrigFast).
template <class B>
B sin_fast(const B& d) {
    using T = typename B::value_type;
    const B q = xsimd::nearbyint(d * B(T(0.318309886183790671537767526745028724)));
    Two<B> s;
    if constexpr (std::is_same_v<T, float>) {
        const B v = mla(q, B(-3.1414794921875f), d);
        s = add2(v, q * B(-0.00011315941810607910156f));
        s = add(s, q * B(-1.9841872589410058936e-09f));
    } else {
        const B v = mla(q, B(-3.141592653589793116), d);
        s = add(v, q * B(-1.2246467991473532072e-16));
    }
    B u = sin_reduced(s);
    const B half = q * B(T(0.5));
    u = xsimd::select(trunc_defined(half) != half, -u, u);  // odd q: the other half-turn
    return xsimd::select(d == B(T(0)), d, u);               // -0 stays -0
}

/// SLEEF's xcosf_u1 / xcos_u1 (PyTorch's Sleef_cosf8_u10) in its first range (as sin_fast).
template <class B>
B cos_fast(const B& d) {
    using T = typename B::value_type;
    // q: the odd multiple of pi / 2 nearest x
    const B q =
        mla(xsimd::nearbyint(mla(d, B(T(0.318309886183790671537767526745028724)), B(T(-0.5)))), B(T(2)), B(T(1)));
    Two<B> s;
    if constexpr (std::is_same_v<T, float>) {
        s = add2(d, q * B(-3.1414794921875f * 0.5f));
        s = add2(s, q * B(-0.00011315941810607910156f * 0.5f));
        s = add2(s, q * B(-1.9841872589410058936e-09f * 0.5f));
    } else {
        s = add2(d, q * B(-3.141592653589793116 * 0.5));
        s = add(s, q * B(-1.2246467991473532072e-16 * 0.5));
    }
    const B u = sin_reduced(s);
    const B quarter = floor_defined(q * B(T(0.25))) * B(T(4));
    return xsimd::select(q - quarter == B(T(1)), -u, u);  // q = 1 mod 4: the sign flips
}

/// r, SLEEF's result for d, where d's lanes are within SLEEF's first range; the C library's f in the
/// others, lane by lane, so that every instruction set gives the same bits. (PyTorch's SLEEF reduces a
/// whole vector by Payne and Hanek's method when one of its lanes is beyond that range: within an ulp.)
template <class B, class F>
B libm_beyond_first_range(const B& d, const B& r, F f) {
    using T = typename B::value_type;
    if (xsimd::all(xsimd::abs(d) < B(kTrigFast<T>))) return r;
    alignas(64) T x[B::size], y[B::size];
    d.store_aligned(x);
    r.store_aligned(y);
    for (std::size_t i = 0; i < B::size; ++i)
        if (!(std::fabs(x[i]) < kTrigFast<T>)) y[i] = f(x[i]);
    return B::load_aligned(y);
}

/// sin or cos of every lane (libm_beyond_first_range).
template <class B, bool kCos>
B sin_cos_(const B& d) {
    using T = typename B::value_type;
    return libm_beyond_first_range(d, kCos ? cos_fast(d) : sin_fast(d),
                                   [](T v) { return kCos ? std::cos(v) : std::sin(v); });
}

/// SLEEF's xtanf_u1 / xtan_u1 (PyTorch's Sleef_tanf8_u10) in its first range (as sin_fast).
template <class B>
B tan_fast(const B& d) {
    using T = typename B::value_type;
    const B q = xsimd::nearbyint(d * B(T(2 * 0.318309886183790671537767526745028724)));
    const B half = q * B(T(0.5));
    const auto odd = trunc_defined(half) != half;
    Two<B> x;
    if constexpr (std::is_same_v<T, float>) {
        Two<B> s = add2(mla(q, B(-3.1414794921875f * 0.5f), d), q * B(-0.00011315941810607910156f * 0.5f));
        s = add(s, q * B(-1.9841872589410058936e-09f * 0.5f));
        s = {xsimd::select(odd, -s.x, s.x), xsimd::select(odd, -s.y, s.y)};  // odd q: tan(r - pi/2) = -1 / tan(r)
        const Two<B> t = s;
        s = normalize(sqr(s));
        B u(0.00446636462584137916564941f);
        u = mla(u, s.x, B(-8.3920182078145444393158e-05f));
        u = mla(u, s.x, B(0.0109639242291450500488281f));
        u = mla(u, s.x, B(0.0212360303848981857299805f));
        u = mla(u, s.x, B(0.0540687143802642822265625f));
        x = add(B(0.133325666189193725585938f), u * s.x);
        x = add(B(1.0f), mul(add(B(0.33333361148834228515625f), mul(s, x)), s));
        x = mul(t, x);
        const Two<B> r = rec(x);
        x = {xsimd::select(odd, r.x, x.x), xsimd::select(odd, r.y, x.y)};
    } else {
        const Two<B> t =
            scale(add(mla(q, B(-3.141592653589793116 * 0.5), d), q * B(-1.2246467991473532072e-16 * 0.5)), B(0.5));
        const Two<B> s = sqr(t);
        const B s2 = s.x * s.x, s4 = s2 * s2;
        B u = poly8(s.x, s2, s4, +0.3245098826639276316e-3, +0.5619219738114323735e-3, +0.1460781502402784494e-2,
                    +0.3591611540792499519e-2, +0.8863268409563113126e-2, +0.2186948728185535498e-1,
                    +0.5396825399517272970e-1, +0.1333333333330500581e+0);
        u = mla(u, s.x, B(+0.3333333333333343695e+0));
        x = add(t, mul(mul(s, t), u));
        // tan(2t) = 2 tan t / (1 - tan² t), and its negative reciprocal for odd q
        const Two<B> y = add(B(-1.0), sqr(x));
        x = scale(x, B(-2.0));
        const Two<B> ny = neg(y);
        x = div(two(xsimd::select(odd, ny.x, x.x), xsimd::select(odd, ny.y, x.y)),
                two(xsimd::select(odd, x.x, y.x), xsimd::select(odd, x.y, y.y)));
    }
    return xsimd::select(d == B(T(0)), d, x.x + x.y);  // -0 stays -0
}

/// tan of every lane (libm_beyond_first_range).
template <class B>
B tan_(const B& d) {
    using T = typename B::value_type;
    return libm_beyond_first_range(d, tan_fast(d), [](T v) { return std::tan(v); });
}

// ---- atan, asin, acos ---------------------------------------------------------------------------

/// atan2(a, x) for a = |y| >= 0 as a double-word: SLEEF's atan2kf_u1 / atan2k_u1 with y and x
/// single words. Left of the y axis the angle is taken from -x and q starts at -2 (q quarter turns
/// are added at the end); beyond the diagonal (x < a), atan(-x / a) plus a quarter turn.
template <class B>
Two<B> atan2k(const B& a, B x) {
    using T = typename B::value_type;
    const auto left = x < B(T(0));
    B q = xsimd::select(left, B(T(-2)), B(T(0)));
    // x's sign flipped into both of its words (SLEEF xors the sign bit: the low word +0 becomes -0)
    const B x_low = xsimd::select(left, B(T(-0.0)), B(T(0)));
    x = xsimd::select(left, -x, x);
    const auto p = x < a;
    q = xsimd::select(p, q + B(T(1)), q);
    // s = -x / a beyond the diagonal (the double-word negated: both words), else a / x
    Two<B> s = div(two(xsimd::select(p, -x, a), xsimd::select(p, -x_low, B(T(0)))),
                   two(xsimd::select(p, a, x), xsimd::select(p, B(T(0)), x_low)));
    Two<B> t = normalize(sqr(s));
    if constexpr (std::is_same_v<T, float>) {
        B u(-0.00176397908944636583328247f);
        u = mla(u, t.x, B(0.0107900900766253471374512f));
        u = mla(u, t.x, B(-0.0309564601629972457885742f));
        u = mla(u, t.x, B(0.0577365085482597351074219f));
        u = mla(u, t.x, B(-0.0838950723409652709960938f));
        u = mla(u, t.x, B(0.109463557600975036621094f));
        u = mla(u, t.x, B(-0.142626821994781494140625f));
        u = mla(u, t.x, B(0.199983194470405578613281f));
        t = mul(t, add(B(-0.333332866430282592773438f), u * t.x));
        t = mul(s, add(B(1.0f), t));
        return add(mul(two(B(1.5707963705062866211f), B(-4.3711388286737928865e-08f)), q), t);
    } else {
        const B t2 = t.x * t.x, t4 = t2 * t2, t8 = t4 * t4;
        B u = poly16(t.x, t2, t4, t8, 1.06298484191448746607415e-05, -0.000125620649967286867384336,
                     0.00070557664296393412389774, -0.00251865614498713360352999, 0.00646262899036991172313504,
                     -0.0128281333663399031014274, 0.0208024799924145797902497, -0.0289002344784740315686289,
                     0.0359785005035104590853656, -0.041848579703592507506027, 0.0470843011653283988193763,
                     -0.0524914210588448421068719, 0.0587946590969581003860434, -0.0666620884778795497194182,
                     0.0769225330296203768654095, -0.0909090442773387574781907);
        u = mla(u, t.x, B(0.111111108376896236538123));
        u = mla(u, t.x, B(-0.142857142756268568062339));
        u = mla(u, t.x, B(0.199999999997977351284817));
        u = mla(u, t.x, B(-0.333333333333317605173818));
        t = add(s, mul(mul(s, t), u));
        return add(mul(two(B(1.570796326794896557998982), B(6.12323399573676603586882e-17)), q), t);
    }
}

/// atan(a) for a = |x| as a double-word: atan2k with x = 1 (atan(a) = pi/2 - atan(1/a) beyond 1).
template <class B>
Two<B> atan_abs(const B& a) {
    return atan2k(a, B(typename B::value_type(1)));
}

/// SLEEF's xatan2f_u1 / xatan2_u1 (PyTorch's Sleef_atan2f8_u10): the angle of (x, y), with C's
/// results for zeros, infinities (multiples of pi/4) and NaN.
template <class B>
B atan2_(B y, B x) {
    using T = typename B::value_type;
    constexpr bool kFloat = std::is_same_v<T, float>;
    const T pi = T(3.141592653589793238462643), half_pi = T(1.570796326794896619231322),
            quarter_pi = T(0.7853981633974483096156608);
    // Subnormal x (and y with it) scaled up, so that a / x does not overflow.
    const auto tiny = xsimd::abs(x) < B(kFloat ? T(2.9387372783541830947e-39f) : T(5.5626846462680083984e-309));
    const B up(kFloat ? T(16777216.0f) : T(9007199254740992.0));
    x = xsimd::select(tiny, x * up, x);
    y = xsimd::select(tiny, y * up, y);
    const Two<B> d = atan2k(xsimd::abs(y), x);
    B r = mulsign(d.x + d.y, x);
    // SLEEF's visinf2(d, m): for infinite d, m with d's sign bit set into it; else +0.
    const auto inf_sign = [](const B& v, const B& m) {
        return xsimd::select(xsimd::isinf(v), xsimd::bitwise_or(m, xsimd::bitwise_and(v, B(T(-0.0)))), B(T(0)));
    };
    r = xsimd::select(xsimd::isinf(x) || x == B(T(0)), B(half_pi) - inf_sign(x, mulsign(B(half_pi), x)), r);
    r = xsimd::select(xsimd::isinf(y), B(half_pi) - inf_sign(x, mulsign(B(quarter_pi), x)), r);
    // y = ±0: pi where x's sign bit is set (-0 too), else +0 (the sign comes from y below)
    r = xsimd::select(y == B(T(0)), xsimd::select(mulsign(B(T(1)), x) < B(T(0)), B(pi), B(T(0))), r);
    return or_nan(xsimd::isnan(x) || xsimd::isnan(y), mulsign(r, y));
}

/// SLEEF's xatanf_u1 / xatan_u1 (PyTorch's Sleef_atanf8_u10).
template <class B>
B atan_(const B& d) {
    using T = typename B::value_type;
    const Two<B> r2 = atan_abs(xsimd::abs(d));
    const B r = xsimd::select(xsimd::isinf(d), B(T(1.570796326794896557998982)), r2.x + r2.y);
    return mulsign(r, d);
}

/// The shared part of SLEEF's asin_u1 and acos_u1: x = |d| below 1/2, else sqrt((1 - |d|) / 2) as a
/// double-word; u = the polynomial's x³ term.
template <class B>
struct ArcArg {
    typename B::batch_bool_type small;
    Two<B> x;
    B u;
};
template <class B>
ArcArg<B> arc_arg(const B& d) {
    using T = typename B::value_type;
    const B a = xsimd::abs(d);
    const auto o = a < B(T(0.5));
    const B x2 = xsimd::select(o, d * d, (B(T(1)) - a) * B(T(0.5)));
    const Two<B> r = sqrt_two(x2);
    Two<B> x{xsimd::select(o, a, r.x), xsimd::select(o, B(T(0)), r.y)};
    const auto one = a == B(T(1));
    x = {xsimd::select(one, B(T(0)), x.x), xsimd::select(one, B(T(0)), x.y)};
    B u;
    if constexpr (std::is_same_v<T, float>) {
        u = B(+0.4197454825e-1f);
        u = mla(u, x2, B(+0.2424046025e-1f));
        u = mla(u, x2, B(+0.4547423869e-1f));
        u = mla(u, x2, B(+0.7495029271e-1f));
        u = mla(u, x2, B(+0.1666677296e+0f));
    } else {
        const B x4 = x2 * x2, x8 = x4 * x4;
        u = poly12(x2, x4, x8, x8 * x8, +0.3161587650653934628e-1, -0.1581918243329996643e-1, +0.1929045477267910674e-1,
                   +0.6606077476277170610e-2, +0.1215360525577377331e-1, +0.1388715184501609218e-1,
                   +0.1735956991223614604e-1, +0.2237176181932048341e-1, +0.3038195928038132237e-1,
                   +0.4464285681377102438e-1, +0.7500000000378581611e-1, +0.1666666666666497543e+0);
    }
    return {o, x, u * (x2 * x.x)};
}

/// pi as a double-word, times k.
template <class B>
Two<B> pi_times(double k) {
    using T = typename B::value_type;
    if constexpr (std::is_same_v<T, float>)
        return {B(T(3.1415927410125732422 * k)), B(T(-8.7422776573475857731e-08 * k))};
    else
        return {B(3.141592653589793116 * k), B(1.2246467991473532072e-16 * k)};
}

/// SLEEF's xasinf_u1 / xasin_u1 (PyTorch's Sleef_asinf8_u10).
template <class B>
B asin_(const B& d) {
    const auto [o, x, u] = arc_arg(d);
    const Two<B> y = add(add(pi_times<B>(0.25), neg(x)), -u);  // pi/4 - x - u
    const B r = xsimd::select(o, u + x.x, (y.x + y.y) * B(typename B::value_type(2)));
    return mulsign(r, d);
}

/// SLEEF's xacosf_u1 / xacos_u1 (PyTorch's Sleef_acosf8_u10).
template <class B>
B acos_(const B& d) {
    using T = typename B::value_type;
    const auto [o, x0, u] = arc_arg(d);
    Two<B> y = add(pi_times<B>(0.5), neg(add(mulsign(x0.x, d), mulsign(u, d))));
    const Two<B> x = scale(add(x0, u), B(T(2)));
    y = {xsimd::select(o, y.x, x.x), xsimd::select(o, y.y, x.y)};
    const auto flip = !o && d < B(T(0));
    const Two<B> z = add(pi_times<B>(1.0), neg(y));
    return xsimd::select(flip, z.x + z.y, y.x + y.y);
}

// ---- sinh, cosh --------------------------------------------------------------------------------

/// SLEEF's xsinhf / xsinh (u10; PyTorch's Sleef_sinhf8_u10) and xcoshf / xcosh: (e^|x| ∓ e^-|x|) / 2
/// in double-word arithmetic.
template <class B, bool kCosh>
B sinh_cosh_(const B& x) {
    using T = typename B::value_type;
    const B a = xsimd::abs(x);
    Two<B> d = expk2(two(a, B(T(0))));
    const Two<B> r = rec(d);
    d = kCosh ? add(d, r) : add(d, neg(r));
    B y = (d.x + d.y) * B(T(0.5));
    const T big = std::is_same_v<T, float> ? T(89) : T(710);
    y = xsimd::select((a > B(big)) || xsimd::isnan(y), infinity<B>(), y);
    if constexpr (!kCosh) y = mulsign(y, x);
    return or_nan(xsimd::isnan(x), y);
}

/// SLEEF's xlog2f / xlog2 (u10, PyTorch's Sleef_log2f8_u10): log_'s scheme with log2's constants.
template <class B>
B log2_(const B& d) {
    using T = typename B::value_type;
    const auto [x, x2, e] = log_arg(d);
    B t;
    Two<B> s;
    if constexpr (std::is_same_v<T, float>) {
        t = B(+0.4374550283e+0f);
        t = mla(t, x2, B(+0.5764790177e+0f));
        t = mla(t, x2, B(+0.9618012905120f));
        s = add2(e, mul(x, two(B(2.8853900432586669922f), B(3.2734474483568488616e-08f))));
    } else {
        const B x4 = x2 * x2, x8 = x4 * x4;
        t = poly7(x2, x4, x8, +0.2211941750456081490e+0, +0.2200768693152277689e+0, +0.2623708057488514656e+0,
                  +0.3205977477944495502e+0, +0.4121985945485324709e+0, +0.5770780162997058982e+0,
                  +0.96179669392608091449);
        s = add2(e, mul(x, two(B(2.885390081777926774), B(6.0561604995516736434e-18))));
    }
    s = add2(s, x2 * x.x * t);
    return log_fixup(d, s.x + s.y);
}

/// SLEEF's xlog10f / xlog10 (u10, PyTorch's Sleef_log10f8_u10).
template <class B>
B log10_(const B& d) {
    using T = typename B::value_type;
    const auto [x, x2, e] = log_arg(d);
    B t;
    Two<B> s;
    if constexpr (std::is_same_v<T, float>) {
        t = B(+0.1314289868e+0f);
        t = mla(t, x2, B(+0.1735493541e+0f));
        t = mla(t, x2, B(+0.2895309627e+0f));
        s = mul(two(B(0.30103001f), B(-1.432098889e-08f)), e);
        s = add(s, mul(x, two(B(0.868588984f), B(-2.170757285e-08f))));
    } else {
        const B x4 = x2 * x2, x8 = x4 * x4;
        t = poly7(x2, x4, x8, +0.6653725819576758460e-1, +0.6625722782820833712e-1, +0.7898105214313944078e-1,
                  +0.9650955035715275132e-1, +0.1240841409721444993e+0, +0.1737177927454605086e+0,
                  +0.2895296546021972617e+0);
        s = mul(two(B(0.30102999566398119802), B(-2.803728127785170339e-18)), e);
        s = add(s, mul(x, two(B(0.86858896380650363334), B(1.1430059694096389311e-17))));
    }
    s = add(s, x2 * x.x * t);
    return log_fixup(d, s.x + s.y);
}

/// SLEEF's xexpm1f / xexpm1 (u10, PyTorch's Sleef_expm1f8_u10): exp as a double-word, minus 1.
template <class B>
B expm1_(const B& a) {
    using T = typename B::value_type;
    const Two<B> d = add2(expk2(two(a, B(T(0)))), B(T(-1)));
    B x = d.x + d.y;
    if constexpr (std::is_same_v<T, float>) {
        x = xsimd::select(a > B(88.72283172607421875f), infinity<B>(), x);
        x = xsimd::select(a < B(-16.635532333438687426013570f), B(-1.0f), x);
    } else {
        x = xsimd::select(a > B(709.782712893383996732223), infinity<B>(), x);
        x = xsimd::select(a < B(-36.736800569677101399113302437), B(-1.0), x);
    }
    return xsimd::select(a == B(T(0)), a, x);  // -0 stays -0 (SLEEF's visnegzero; +0 gives +0 anyway)
}

/// SLEEF's xlog1pf / xlog1p (u10) in their form without AVX-512 (PyTorch's Sleef_log1pf8_u10 on AVX2):
/// log(1 + d) = e log 2 + log(m) with m = (1 + d) / 2^e computed from d, so that small d keeps its
/// precision.
template <class B>
B log1p_(const B& d) {
    using T = typename B::value_type;
    const B one(T(1)), sum = d + one;
    const auto o = sum < B(std::numeric_limits<T>::min());
    const B dp1 = xsimd::select(o, sum * B(T(0x1p64)), sum);  // (scaled up when subnormal, for its exponent)
    B m, t;
    Two<B> s;
    if constexpr (std::is_same_v<T, float>) {
        const IntBatch<B> e = ilogb2k(dp1 * B(1.0f / 0.75f));
        t = ldexp3(one, -e);
        m = mla(d, t, t - one);
        const B ef = xsimd::to_float(e);
        s = mul(two(B(0.69314718246459960938f), B(-1.904654323148236017e-09f)), xsimd::select(o, ef - B(64.0f), ef));
    } else {
        const B e = ilogb2k_d(dp1 * B(1.0 / 0.75));
        t = ldexp3_d(one, -e);
        m = mla(d, t, t - one);
        s = mul(two(B(0.693147180559945286226764), B(2.319046813846299558417771e-17)),
                xsimd::select(o, e - B(64.0), e));
    }
    const Two<B> x = div(two(m, B(T(0))), add(B(T(2)), m));
    const B x2 = x.x * x.x;
    if constexpr (std::is_same_v<T, float>) {
        t = B(+0.3027294874e+0f);
        t = mla(t, x2, B(+0.3996108174e+0f));
        t = mla(t, x2, B(+0.6666694880e+0f));
    } else {
        const B x4 = x2 * x2, x8 = x4 * x4;
        t = poly7(x2, x4, x8, 0.1532076988502701353e+0, 0.1525629051003428716e+0, 0.1818605932937785996e+0,
                  0.2222214519839380009e+0, 0.2857142932794299317e+0, 0.3999999999635251990e+0,
                  0.6666666666667333541e+0);
    }
    s = add(s, scale(x, B(T(2))));
    s = add(s, x2 * x.x * t);
    B r = s.x + s.y;
    if constexpr (std::is_same_v<T, float>) {
        r = xsimd::select(d > B(1e+38f), infinity<B>(), r);
        r = or_nan(B(-1.0f) > d, r);
    } else {
        r = xsimd::select(d > B(1e+307), infinity<B>(), r);
        r = xsimd::select(d < B(-1.0) || xsimd::isnan(d), quiet_nan<B>(), r);
    }
    r = xsimd::select(d == B(T(-1)), -infinity<B>(), r);
    return xsimd::select(d == B(T(0)), d, r);  // -0 stays -0 (SLEEF's visnegzero; +0 gives +0 anyway)
}

/// PyTorch's vectorised softplus: x where x * beta > threshold, else log1p(exp(x * beta)) / beta.
template <class B>
B softplus_(const B& x, const B& beta, const B& threshold) {
    const B xb = x * beta;
    return xsimd::select(xb > threshold, x, log1p_(exp_(xb)) / beta);
}

template <class B>
B tanh_(const B& x);

/// PyTorch's vectorised mish: x * tanh(log1p(exp(x))).
template <class B>
B mish_(const B& x) {
    return x * tanh_(log1p_(exp_(x)));
}

/// PyTorch's vectorised mish backward from the input x: s = 1 / (1 + exp(-x)), t = tanh(log1p(exp(x))),
/// g (t + x s (1 - t t)). GCC contracts both of PyTorch's multiply-adds there (1 - t t, and t + (x s) (...))
/// into fused ones in its AVX2 build, and the golden values need them: mla, fused where this arch has FMA.
template <class B>
B mish_backward_(const B& g, const B& x) {
    using T = typename B::value_type;
    const B one(T(1));
    const B s = sigmoid_neg_exp_(x);
    const B t = tanh_(log1p_(exp_(x)));
    return g * mla(x * s, mla(-t, t, one), t);
}

/// PyTorch's vectorised log_sigmoid: min(x, 0) - log1p(exp(-|x|)).
template <class B>
B log_sigmoid_(const B& x) {
    using T = typename B::value_type;
    const B zero(T(0));
    return xsimd::select(x < zero, x, zero) - log1p_(exp_(-xsimd::abs(x)));
}

/// PyTorch's vectorised log_sigmoid backward, from the input x and z = exp(-|x|):
/// (m - s z / (1 + z)) g with m = 1, s = 1 where x < 0, else m = 0, s = -1.
template <class B>
B log_sigmoid_backward_(const B& g, const B& x) {
    using T = typename B::value_type;
    const B zero(T(0)), one(T(1));
    const B z = exp_(-xsimd::abs(x));
    const auto negative = x < zero;
    const B m = xsimd::select(negative, one, zero), s = xsimd::select(negative, one, -one);
    return (m - s * (z / (one + z))) * g;
}

// ---- tanh, sigmoid ------------------------------------------------------------------------------

/// SLEEF's xtanhf / xtanh (u10): (e^2|x| - 1) / (e^2|x| + 1) in double-word arithmetic.
template <class B>
B tanh_(const B& x) {
    using T = typename B::value_type;
    B a = xsimd::abs(x);
    Two<B> d = expk2(two(a, B(0)));
    Two<B> e = rec(d);
    if constexpr (std::is_same_v<T, float>)  // SLEEF adds with dfadd here, but with ddadd2 for double
        d = div(add(d, neg(e)), add(d, e));
    else
        d = div(add2(d, neg(e)), add2(d, e));
    B y = d.x + d.y;
    const T saturate = std::is_same_v<T, float> ? T(8.664339742f) : T(18.714973875);
    y = xsimd::select((a > B(saturate)) || xsimd::isnan(y), B(1), y);
    y = mulsign(y, x);
    return or_nan(xsimd::isnan(x), y);
}

/// PyTorch's vectorised sigmoid: ((0 - x).exp() + 1).reciprocal().
template <class B>
B sigmoid_(const B& x) {
    return B(1) / (exp_(B(0) - x) + B(1));
}

// ---- erf ----------------------------------------------------------------------------------------

/// o0 ? c0 : o1 ? c1 : c2.
template <class B>
B pick3(const typename B::batch_bool_type& o0, const typename B::batch_bool_type& o1, typename B::value_type c0,
        typename B::value_type c1, typename B::value_type c2) {
    return xsimd::select(o0, B(c0), xsimd::select(o1, B(c1), B(c2)));
}

/// The double c as a float double-word (SLEEF's vcast_vf2_d).
template <class B>
Two<B> two_from(double c) {
    const auto hi = static_cast<float>(c);
    return {B(hi), B(static_cast<float>(c - hi))};
}

/// o0 ? c0 : o1 ? c1 : c2, as float double-words.
template <class B>
Two<B> pick3_two(const typename B::batch_bool_type& o0, const typename B::batch_bool_type& o1, double c0, double c1,
                 double c2) {
    Two<B> a = two_from<B>(c0), b = two_from<B>(c1), c = two_from<B>(c2);
    return {xsimd::select(o0, a.x, xsimd::select(o1, b.x, c.x)), xsimd::select(o0, a.y, xsimd::select(o1, b.y, c.y))};
}

/// SLEEF's xerff_u1: three polynomials (|x| < 1.1, < 2.4, < 4), then 1 - exp for the outer two.
template <class B>
B erf_f(const B& x) {
    B a = xsimd::abs(x);
    auto o0 = a < B(1.1f), o1 = a < B(2.4f), o2 = a < B(4.0f);
    B u = xsimd::select(o0, a * a, a);
    B t = pick3<B>(o0, o1, +0.7089292194e-4f, -0.1792667899e-4f, -0.9495757695e-5f);
    t = mla(t, u, pick3<B>(o0, o1, -0.7768311189e-3f, +0.3937633010e-3f, +0.2481465926e-3f));
    t = mla(t, u, pick3<B>(o0, o1, +0.5159463733e-2f, -0.3949181177e-2f, -0.2918176819e-2f));
    t = mla(t, u, pick3<B>(o0, o1, -0.2683781274e-1f, +0.2445474640e-1f, +0.2059706673e-1f));
    t = mla(t, u, pick3<B>(o0, o1, +0.1128318012e+0f, -0.1070996150e+0f, -0.9901899844e-1f));
    Two<B> d = mul(t, u);
    d = add2(d, pick3_two<B>(o0, o1, -0.376125876000657465175213237214e+0, -0.634588905908410389971210809210e+0,
                             -0.643598050547891613081201721633e+0));
    d = mul(d, u);
    d = add2(d, pick3_two<B>(o0, o1, +0.112837916021059138255978217023e+1, -0.112879855826694507209862753992e+1,
                             -0.112461487742845562801052956293e+1));
    d = mul(d, a);
    Two<B> outer = add(B(1.0f), neg(expk2(d)));
    d = {xsimd::select(o0, d.x, outer.x), xsimd::select(o0, d.y, outer.y)};
    B r = mulsign(xsimd::select(o2, d.x + d.y, B(1.0f)), x);
    return xsimd::select(xsimd::isnan(a), quiet_nan<B>(), r);
}

/// SLEEF's xerf_u1: three polynomials (|x| < 1, < 3.7, < 6), then 1 - exp for the outer two.
template <class B>
B erf_d(const B& x) {
    B a = xsimd::abs(x);
    auto o0 = a < B(1.0), o1 = a < B(3.7), o2 = a < B(6.0);
    B u = xsimd::select(o0, a * a, a);
    // One row per power, highest first: the coefficients for |x| < 1, < 3.7 and < 6.
    static constexpr double kC[21][3] = {
        {+0.6801072401395392157e-20, +0.2830954522087717660e-13, -0.5846750404269610493e-17},
        {-0.2161766247570056391e-18, -0.1509491946179481940e-11, +0.6076691048812607898e-15},
        {+0.4695919173301598752e-17, +0.3827857177807173152e-10, -0.3007518609604893831e-13},
        {-0.9049140419888010819e-16, -0.6139733921558987241e-09, +0.9427906260824646063e-12},
        {+0.1634018903557411517e-14, +0.6985387934608038824e-08, -0.2100110908269393629e-10},
        {-0.2783485786333455216e-13, -0.5988224513034371474e-07, +0.3534639523461223473e-09},
        {+0.4463221276786412722e-12, +0.4005716952355346640e-06, -0.4664967728285395926e-08},
        {-0.6711366622850138987e-11, -0.2132190104575784400e-05, +0.4943823283769000532e-07},
        {+0.9422759050232658346e-10, +0.9092461304042630325e-05, -0.4271203394761148254e-06},
        {-0.1229055530100228477e-08, -0.3079188080966205457e-04, +0.3034067677404915895e-05},
        {+0.1480719281585085023e-07, +0.7971413443082370762e-04, -0.1776295289066871135e-04},
        {-0.1636584469123402714e-06, -0.1387853215225442864e-03, +0.8524547630559505050e-04},
        {+0.1646211436588923363e-05, +0.6469678026257590965e-04, -0.3290582944961784398e-03},
        {-0.1492565035840624866e-04, +0.4996645280372945860e-03, +0.9696966068789101157e-03},
        {+0.1205533298178966496e-03, -0.1622802482842520535e-02, -0.1812527628046986137e-02},
        {-0.8548327023450851166e-03, +0.1615320557049377171e-03, -0.4725409828123619017e-03},
        {+0.5223977625442188799e-02, +0.1915262325574875607e-01, +0.2090315427924229266e-01},
        {-0.2686617064513125569e-01, -0.1027818298486033455e+00, -0.1052041921842776645e+00},
        {+0.1128379167095512753e+00, -0.6366172819842503827e+00, -0.6345351808766568347e+00},
        {-0.3761263890318375380e+00, -0.1128379590648910469e+01, -0.1129442929103524396e+01},
    };
    B t = pick3<B>(o0, o1, kC[0][0], kC[0][1], kC[0][2]);
    for (int i = 1; i < 20; ++i) t = mla(t, u, pick3<B>(o0, o1, kC[i][0], kC[i][1], kC[i][2]));
    Two<B> d = mul(t, u);
    d = add2(d,
             two(pick3<B>(o0, o1, 1.1283791670955125586, 3.4110644736196137587e-08, 0.00024963035690526438285),
                 pick3<B>(o0, o1, 1.5335459613165822674e-17, -2.4875650708323294246e-24, -5.4362665034856259795e-21)));
    Two<B> inner = mul(d, a), outer = add(B(1.0), neg(expk2(d)));
    d = {xsimd::select(o0, inner.x, outer.x), xsimd::select(o0, inner.y, outer.y)};
    B r = mulsign(xsimd::select(o2, d.x + d.y, B(1.0)), x);
    return xsimd::select(xsimd::isnan(a), quiet_nan<B>(), r);
}

template <class B>
B erf_(const B& x) {
    if constexpr (std::is_same_v<typename B::value_type, float>)
        return erf_f(x);
    else
        return erf_d(x);
}

// ---- gelu ---------------------------------------------------------------------------------------
// float64, and float32's tanh form: PyTorch's GeluKernelImpl / GeluBackwardKernelImpl
// (aten/src/ATen/native/cpu/Activation.cpp). GCC compiles its AVX2 file with contraction on, so some
// of its a * b + c became fused multiply-adds: those are the `mla`s below (found by comparing bits).
// float32's exact form: PyTorch 1.13 hands contiguous float32 tensors to oneDNN 2.6
// (eltwise_gelu_erf), whose JIT code uses Abramowitz and Stegun's erf 7.1.26 and its own exp; so
// do we, with oneDNN's constants and operation order.

constexpr double kSqrt1_2 = std::numbers::sqrt2 / 2;                                      // M_SQRT1_2
constexpr double kGeluBeta = std::numbers::sqrt2 * (2 * std::numbers::inv_sqrtpi) * 0.5;  // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;
constexpr double kPdfScale = (2 * std::numbers::inv_sqrtpi) * kSqrt1_2 * 0.5;  // 1 / sqrt(2 pi)

/// A float from its bits (oneDNN's tables are written so).
constexpr float f32_bits(std::uint32_t bits) {
    return std::bit_cast<float>(bits);
}

/// oneDNN 2.6's exp for float (jit_uni_eltwise_injector_f32::exp_compute_vector_fwd).
template <class B>
B exp_onednn(B x) {
    const B ln_flt_min(f32_bits(0xc2aeac50)), ln_flt_max(f32_bits(0x42b17218));
    auto underflow = x < ln_flt_min;
    x = xsimd::select(x < ln_flt_max, x, ln_flt_max);  // minps / maxps, NaN going to the bound
    x = xsimd::select(x > ln_flt_min, x, ln_flt_min);
    B n = xsimd::floor(x * B(f32_bits(0x3fb8aa3b)) + B(0.5f));                        // log2(e)
    B r = mla(-n, B(f32_bits(0x3f317218)), x);                                        // x - n ln 2
    B half_scale = xsimd::bitwise_cast<B>((xsimd::to_int(n - B(1.0f)) + 127) << 23);  // 2^(n-1)
    half_scale = xsimd::select(underflow, B(0.0f), half_scale);
    B p(f32_bits(0x3c07cfce));
    p = mla(p, r, B(f32_bits(0x3d2b9d0d)));
    p = mla(p, r, B(f32_bits(0x3e2aad40)));
    p = mla(p, r, B(f32_bits(0x3efffee3)));
    p = mla(p, r, B(f32_bits(0x3f7ffffb)));
    p = mla(p, r, B(1.0f));
    return p * half_scale * B(2.0f);
}

/// -exp(-x^2) t r(t) with t = 1 / (1 + p |x|): erf(|x|) - 1 as oneDNN's gelu_erf computes it.
template <class B>
B erf_onednn(const B& x, const B& minus_exp) {
    B t = B(1.0f) / mla(B(f32_bits(0x3ea7ba05)), xsimd::abs(x), B(1.0f));
    B r(f32_bits(0x3f87dc22));
    r = mla(r, t, B(f32_bits(0xbfba00e3)));
    r = mla(r, t, B(f32_bits(0x3fb5f0e3)));
    r = mla(r, t, B(f32_bits(0xbe91a98e)));
    r = mla(r, t, B(f32_bits(0x3e827906)));
    return mla(minus_exp * t, r, B(1.0f)) ^ xsimd::bitofsign(x);
}

/// PyTorch's own vectorised gelu (erf form): x 0.5 (1 + erf(x / sqrt(2))), SLEEF's erf. float64, and
/// float32 tensors that PyTorch does not hand to oneDNN (not contiguous, or of one element).
template <class B>
B gelu_erf_(const B& x) {
    using T = typename B::value_type;
    return x * B(T(0.5)) * (B(T(1)) + erf_(x * B(T(kSqrt1_2))));
}

template <class B>
B gelu_(const B& x) {
    if constexpr (std::is_same_v<typename B::value_type, float>) {
        B u = x * B(f32_bits(0x3f3504f3));  // x / sqrt(2)
        B erf = erf_onednn(u, -exp_onednn(-(u * u)));
        B half_x = x * B(0.5f);
        return mla(erf, half_x, half_x);
    } else {
        return gelu_erf_(x);
    }
}

/// beta (x + kappa x^3), the argument of gelu_tanh's tanh.
template <class B>
B gelu_inner(const B& x) {
    using T = typename B::value_type;
    return B(T(kGeluBeta)) * mla(B(T(kGeluKappa)), x * x * x, x);
}

template <class B>
B gelu_tanh_(const B& x) {
    using T = typename B::value_type;
    return B(T(0.5)) * x * (B(T(1)) + tanh_(gelu_inner(x)));
}

/// g * (Phi(x) + x phi(x)).
/// PyTorch's own vectorised gelu backward (as gelu_erf_): g (cdf + x pdf), one fused multiply-add.
template <class B>
B gelu_erf_backward_(const B& g, const B& x) {
    using T = typename B::value_type;
    B cdf = B(T(0.5)) * (B(T(1)) + erf_(x * B(T(kSqrt1_2))));
    B pdf = B(T(kPdfScale)) * exp_(x * x * B(T(-0.5)));
    return g * mla(x, pdf, cdf);
}

template <class B>
B gelu_backward_(const B& g, const B& x) {
    using T = typename B::value_type;
    if constexpr (std::is_same_v<T, float>) {
        B u = x * B(f32_bits(0x3f3504f3));  // x / sqrt(2)
        B e = exp_onednn(-(u * u));
        B x_pdf = u * B(f32_bits(0x3f106eba)) * e;  // x phi(x) = u exp(-u^2) / sqrt(pi)
        B erf = erf_onednn(u, -e);
        return mla(erf, B(0.5f), x_pdf + B(0.5f)) * g;
    } else {
        return gelu_erf_backward_(g, x);
    }
}

/// g * d/dx [0.5 x (1 + tanh(inner))] = g * (0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2)).
template <class B>
B gelu_tanh_backward_(const B& g, const B& x) {
    using T = typename B::value_type;
    B x_sq = x * x;
    B t = tanh_(gelu_inner(x));
    B left = B(T(0.5)) * x;
    B left_derivative = B(T(0.5)) * (B(T(1)) + t);
    B tanh_derivative = mla(-t, t, B(T(1)));
    B inner_derivative = B(T(kGeluBeta)) * mla(B(T(3)) * B(T(kGeluKappa)), x_sq, B(T(1)));
    return g * (left_derivative + left * tanh_derivative * inner_derivative);
}

// ---- pow ----------------------------------------------------------------------------------------

/// log|d| as a double-word (SLEEF's logkf / logk; pow uses it).
template <class B>
Two<B> logk(const B& d) {
    auto [m, e] = split_exponent(d);
    Two<B> x = div(add2(B(-1), m), add2(B(1), m));
    Two<B> x2 = sqr(x);
    if constexpr (std::is_same_v<typename B::value_type, float>) {
        B t(0.240320354700088500976562f);
        t = mla(t, x2.x, B(0.285112679004669189453125f));
        t = mla(t, x2.x, B(0.400007992982864379882812f));
        Two<B> c = two(B(0.66666662693023681640625f), B(3.69183861259614332084311e-09f));
        Two<B> s = mul(two(B(0.69314718246459960938f), B(-1.904654323148236017e-09f)), e);
        s = add(s, scale(x, B(2.0f)));
        return add(s, mul(mul(x2, x), add2(mul(x2, t), c)));
    } else {
        B x4 = x2.x * x2.x, x8 = x4 * x4, x16 = x8 * x8;
        B t =
            poly9(x2.x, x4, x8, x16, 0.116255524079935043668677, 0.103239680901072952701192, 0.117754809412463995466069,
                  0.13332981086846273921509, 0.153846227114512262845736, 0.181818180850050775676507,
                  0.222222222230083560345903, 0.285714285714249172087875, 0.400000000000000077715612);
        Two<B> c = two(B(0.666666666666666629659233), B(3.80554962542412056336616e-17));
        Two<B> s = mul(two(B(0.693147180559945286226764), B(2.319046813846299558417771e-17)), e);
        s = add(s, scale(x, B(2.0)));
        x = mul(x2, x);
        s = add(s, mul(x, c));
        x = mul(x2, x);
        return add(s, mul(x, t));
    }
}

/// exp of a double-word argument (SLEEF's expkf / expk; pow uses it).
template <class B>
B expk(const Two<B>& d) {
    if constexpr (std::is_same_v<typename B::value_type, float>) {
        IntBatch<B> q = rint_int((d.x + d.y) * B(kRLn2f));
        B qf = xsimd::to_float(q);
        Two<B> s = add2(d, qf * B(-kL2Uf));
        s = normalize(add2(s, qf * B(-kL2Lf)));
        B u(0.00136324646882712841033936f);
        u = mla(u, s.x, B(0.00836596917361021041870117f));
        u = mla(u, s.x, B(0.0416710823774337768554688f));
        u = mla(u, s.x, B(0.166665524244308471679688f));
        u = mla(u, s.x, B(0.499999850988388061523438f));
        Two<B> t = add(B(1.0f), add(s, mul(sqr(s), u)));
        u = ldexpk(t.x + t.y, q);
        return xsimd::select(d.x < B(-104.0f), B(0.0f), u);
    } else {
        B q = xsimd::nearbyint((d.x + d.y) * B(kRLn2));
        Two<B> s = add2(d, q * B(-kL2U));
        s = normalize(add2(s, q * B(-kL2L)));
        B s2 = s.x * s.x, s4 = s2 * s2, s8 = s4 * s4;
        B u = poly10(s.x, s2, s4, s8, 2.51069683420950419527139e-08, 2.76286166770270649116855e-07,
                     2.75572496725023574143864e-06, 2.48014973989819794114153e-05, 0.000198412698809069797676111,
                     0.0013888888939977128960529, 0.00833333333332371417601081, 0.0416666666665409524128449,
                     0.166666666666666740681535, 0.500000000000000999200722);
        Two<B> t = add(add(B(1.0), s), mul(sqr(s), u));
        u = ldexp2_d(t.x + t.y, q);
        return xsimd::select(d.x < B(-1000.0), B(0.0), u);
    }
}

/// SLEEF's xpowf / xpow, given whether each lane of y is an integer and an odd one.
template <class B>
B pow_core(const B& x, const B& y, const typename B::batch_bool_type& yisint,
           const typename B::batch_bool_type& yisodd) {
    using T = typename B::value_type;
    Two<B> d = mul(logk(xsimd::abs(x)), y);
    B r = expk(d);
    if constexpr (std::is_same_v<T, float>)
        r = xsimd::select(xsimd::isnan(r), infinity<B>(), r);
    else
        r = xsimd::select(d.x > B(709.78271114955742909217217426), infinity<B>(), r);
    r = r * xsimd::select(x > B(0), B(1), xsimd::select(yisint, xsimd::select(yisodd, B(-1), B(1)), quiet_nan<B>()));
    B efx = mulsign(xsimd::abs(x) - B(1), y);
    r = xsimd::select(xsimd::isinf(y), xsimd::select(efx < B(0), B(0), xsimd::select(efx == B(0), B(1), infinity<B>())),
                      r);
    B x_edge = xsimd::select(yisodd, mulsign(B(1), x), B(1)) *
               xsimd::select(xsimd::select(x == B(0), -y, y) < B(0), B(0), infinity<B>());
    r = xsimd::select(xsimd::isinf(x) || x == B(0), x_edge, r);
    r = or_nan(xsimd::isnan(x) || xsimd::isnan(y), r);
    return xsimd::select(y == B(0) || x == B(1), B(1), r);
}

/// Beyond this magnitude every T is an even integer (SLEEF's 1 << 24 for float, 2^53 for double).
template <typename T>
constexpr T kPowBig = std::is_same_v<T, float> ? T(0x1p24) : T(0x1p53);

/// SLEEF's xpowf / xpow for a scalar exponent y (its integer and odd tests then are scalar too).
template <class B>
B pow_(const B& x, typename B::value_type y_scalar) {
    using T = typename B::value_type;
    using M = typename B::batch_bool_type;
    const bool int_y = std::trunc(y_scalar) == y_scalar || std::fabs(y_scalar) > kPowBig<T>;
    const bool odd_y = int_y && std::fabs(y_scalar) < kPowBig<T> && std::fmod(y_scalar, T(2)) != T(0);
    return pow_core(x, B(y_scalar), M(int_y), M(odd_y));
}

/// SLEEF's xpowf / xpow for an exponent per lane (PyTorch's pow of two tensors): y is odd where y / 2
/// (exact) is not an integer.
template <class B>
B pow_tensor_(const B& x, const B& y) {
    using T = typename B::value_type;
    const auto big = xsimd::abs(y) > B(kPowBig<T>);
    const auto yisint = trunc_defined(y) == y || big;
    const B half = y * B(T(0.5));
    const auto yisodd = yisint && xsimd::abs(y) < B(kPowBig<T>) && trunc_defined(half) != half;
    return pow_core(x, y, yisint, yisodd);
}

/// PyTorch's vectorised silu: x / (1 + exp(-x)), each operation rounded on its own.
template <class B>
B silu_(const B& x) {
    return x / (B(typename B::value_type(1)) + exp_neg_(x));
}

/// PyTorch's vectorised silu backward from the input x: s = 1 / (1 + exp(-x)), g s (1 + x (1 - s)).
/// GCC contracts PyTorch's x * (1 - s) + 1 into a fused multiply-add (its AVX2 build has FMA), and
/// the golden values need it: mla, fused where this arch has FMA.
template <class B>
B silu_backward_(const B& g, const B& x) {
    using T = typename B::value_type;
    const B one(T(1));
    const B s = sigmoid_neg_exp_(x);
    return g * s * mla(x, one - s, one);
}

// ---- LayerNorm / RMSNorm rows ------------------------------------------------------------------
// A row is read from memory by the first pass; later passes find it in cache. Sums use several
// accumulators so that the adds' latency does not bound the loop; tails are scalar.

/// a * b + c for scalars, fused exactly where the batches' mla is.
template <class B>
typename B::value_type mla_s(typename B::value_type a, typename B::value_type b, typename B::value_type c) {
    if constexpr (kFmaOf<B>)
        return std::fma(a, b, c);
    else
        return a * b + c;
}

/// f(std::integral_constant<int, r>{}) for r = 0 .. N-1, unrolled.
template <int N, class F>
[[gnu::always_inline]] inline void each_of(F&& f) {
    [&]<int... r>(std::integer_sequence<int, r...>) {
        (f(std::integral_constant<int, r>{}), ...);
    }
    (std::make_integer_sequence<int, N>{});
}

// ---- PyTorch's AVX2 registers ---------------------------------------------------------------------
// PyTorch 1.13's LayerNorm kernels (its AVX2 build) keep moments and sums lane by lane in registers of
// 8 floats or 4 doubles. A Reg is one such register on this arch: one batch on AVX2, two on SSE2, and
// AVX2's batch on AVX-512 (whose file is also built with -mfma), so that every lane gets the same
// operations in the same order on every instruction set.

template <class B>
auto reg_batch() {
#if defined(__AVX512F__)
    if constexpr (sizeof(B) > 32)
        return xsimd::batch<typename B::value_type, xsimd::fma3<xsimd::avx2>>{};
    else
#endif
        return B{};
}

template <class B>
struct Reg {
    using T = typename B::value_type;
    using V = decltype(reg_batch<B>());
    static constexpr int kR = static_cast<int>(32 / sizeof(V));  ///< batches per register
    static constexpr std::int64_t kLanes = 32 / static_cast<std::int64_t>(sizeof(T));
    V v[kR];

    Reg() = default;
    explicit Reg(T s) {
        each_of<kR>([&](auto r) { v[r] = V(s); });
    }
    static Reg load(const T* p) {
        Reg o;
        each_of<kR>([&](auto r) { o.v[r] = V::load_unaligned(p + r * V::size); });
        return o;
    }
    void store(T* p) const {
        each_of<kR>([&](auto r) { v[r].store_unaligned(p + r * V::size); });
    }
    friend Reg operator+(Reg a, const Reg& b) {
        each_of<kR>([&](auto r) { a.v[r] = a.v[r] + b.v[r]; });
        return a;
    }
    friend Reg operator-(Reg a, const Reg& b) {
        each_of<kR>([&](auto r) { a.v[r] = a.v[r] - b.v[r]; });
        return a;
    }
    friend Reg operator*(Reg a, const Reg& b) {
        each_of<kR>([&](auto r) { a.v[r] = a.v[r] * b.v[r]; });
        return a;
    }
    /// a * b + c, fused exactly where mla is.
    friend Reg reg_mla(Reg a, const Reg& b, const Reg& c) {
        each_of<kR>([&](auto r) { a.v[r] = mla(a.v[r], b.v[r], c.v[r]); });
        return a;
    }
};

/// PyTorch's AddMoments (scalars) and AddMomentsVec (R a Reg): the moments (n, m1, m2) of a part take
/// in those of the next part, (add_n, add_m1, add_m2). Two roundings per multiply-add, as PyTorch's
/// build computes them.
template <class T, class R>
void add_moments(std::int64_t add_n, const R& add_m1, const R& add_m2, std::int64_t& n, R& m1, R& m2) {
    const std::int64_t total = n + add_n;
    const T c = total == 0 ? T(0) : static_cast<T>(add_n) / static_cast<T>(total);
    const R delta = add_m1 - m1;
    m1 = m1 + R(c) * delta;
    m2 = m2 + (add_m2 + delta * delta * R(c) * R(static_cast<T>(n)));
    n = total;
}

/// One of PyTorch's AVX2 registers for each of kRows rows, as the widest batches of this arch: on
/// AVX-512 two rows per batch (the first row's lanes in the lower half), on AVX2 one, on SSE2 half of
/// one. Rows go through norm_moments_ side by side: their chains of dependent operations interleave.
template <class B, int kRows>
struct RowSet {
    using T = typename B::value_type;
    static constexpr std::int64_t kLanes = 32 / static_cast<std::int64_t>(sizeof(T));
    static constexpr int kN = static_cast<int>(kRows * 32 / static_cast<int>(sizeof(B)));  // batches
    B v[kN];

    RowSet() = default;
    explicit RowSet(T s) {
        each_of<kN>([&](auto k) { v[k] = B(s); });
    }
    /// The registers at x[r] + at, for each row r.
    static RowSet load(const T* const* x, std::int64_t at) {
        RowSet o;
#if defined(__AVX512F__)
        if constexpr (sizeof(B) == 64) {
            each_of<kN>([&](auto k) {
                const T* p = x[2 * k] + at;
                const T* q = x[2 * k + 1] + at;
                if constexpr (sizeof(T) == 4)
                    o.v[k] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p)), _mm256_loadu_ps(q), 1);
                else
                    o.v[k] = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(p)), _mm256_loadu_pd(q), 1);
            });
            return o;
        } else
#endif
        {
            constexpr int kPer = kN / kRows;  // batches per row
            each_of<kN>([&](auto k) { o.v[k] = B::load_unaligned(x[k / kPer] + at + (k % kPer) * B::size); });
            return o;
        }
    }
    /// Row r's lanes to out[r].
    void store(T (*out)[kLanes]) const {
        alignas(64) T all[kRows * kLanes];
        each_of<kN>([&](auto k) { v[k].store_aligned(all + k * B::size); });
        for (int r = 0; r < kRows; ++r) std::copy(all + r * kLanes, all + (r + 1) * kLanes, out[r]);
    }
    friend RowSet operator+(RowSet a, const RowSet& b) {
        each_of<kN>([&](auto k) { a.v[k] = a.v[k] + b.v[k]; });
        return a;
    }
    friend RowSet operator-(RowSet a, const RowSet& b) {
        each_of<kN>([&](auto k) { a.v[k] = a.v[k] - b.v[k]; });
        return a;
    }
    friend RowSet operator*(RowSet a, const RowSet& b) {
        each_of<kN>([&](auto k) { a.v[k] = a.v[k] * b.v[k]; });
        return a;
    }
};

/// vec_math.hpp's norm_moments_rows: PyTorch 1.13's RowwiseMoments, bit for bit, for kRows rows of n
/// side by side (some may be the same row). A row's registers go in chunks of 16, each a
/// Welford pass per lane; the chunks' moments meet in a cascade (a stack of levels, a level taking in
/// the one below every other time); the elements after the last register get a scalar Welford pass,
/// which then takes in the lanes one by one. Each chunk's pass is a chain of dependent operations, so
/// up to kG chunks run side by side (the partial one, if any, last in the last group).
template <class B, int kRows>
[[gnu::flatten]] void norm_moments_rows_(const typename B::value_type* const* x, std::int64_t n,
                                         typename B::value_type* mean, typename B::value_type* m2) {
    using T = typename B::value_type;
    using RS = RowSet<B, kRows>;
    constexpr std::int64_t kL = RS::kLanes, kChunk = 16;
    constexpr int kG = std::max(1, (sizeof(B) == 64 ? 16 : 12) / (2 * RS::kN));  // accumulators in registers
    constexpr std::array<T, kChunk> kInv = [] {
        std::array<T, kChunk> a{};
        for (std::size_t j = 0; j < a.size(); ++j) a[j] = T(1) / static_cast<T>(j + 1);
        return a;
    }();
    const std::int64_t regs = n / kL, chunks = (regs + kChunk - 1) / kChunk;
    std::int64_t depth = 1;  // PyTorch's CeilLog2(chunks), at least 1
    while ((std::int64_t{1} << depth) < chunks) ++depth;
    constexpr int kMaxDepth = 64;
    std::int64_t sn[kMaxDepth];
    RS s1[kMaxDepth], s2[kMaxDepth];
    for (std::int64_t d = 0; d < depth; ++d) {
        sn[d] = 0;
        s1[d] = s2[d] = RS(T(0));
    }
    auto push = [&](std::int64_t i, std::int64_t count, const RS& a1, const RS& a2) {
        add_moments<T>(count, a1, a2, sn[0], s1[0], s2[0]);
        std::int64_t mask = i + 1;
        for (std::int64_t j = 1; j < depth && (mask & 1) == 0; ++j, mask >>= 1) {
            add_moments<T>(sn[j - 1], s1[j - 1], s2[j - 1], sn[j], s1[j], s2[j]);
            sn[j - 1] = 0;
            s1[j - 1] = s2[j - 1] = RS(T(0));
        }
    };
    // K chunks from chunk i0 on, the last of `last` registers (the others 16).
    auto group = [&]<int K>(std::int64_t i0, std::int64_t last, std::integral_constant<int, K>) {
        RS a1[K > 0 ? K : 1], a2[K > 0 ? K : 1];
        each_of<K>([&](auto k) { a1[k] = a2[k] = RS(T(0)); });
        const std::int64_t steps = K == 1 ? last : kChunk;
        for (std::int64_t j = 0; j < steps; ++j) {
            const RS c(kInv[static_cast<std::size_t>(j)]);
            each_of<K>([&](auto k) {
                if (k + 1 < K || j < last) {
                    const RS v = RS::load(x, ((i0 + k) * kChunk + j) * kL);
                    const RS d = v - a1[k];
                    a1[k] = a1[k] + d * c;
                    a2[k] = a2[k] + d * (v - a1[k]);
                }
            });
        }
        each_of<K>([&](auto k) { push(i0 + k, k + 1 < K ? kChunk : last, a1[k], a2[k]); });
    };
    auto group_of = [&](std::int64_t k, std::int64_t i0, std::int64_t last) {
        [&]<int... K>(std::integer_sequence<int, K...>) {
            ((k == K ? group(i0, last, std::integral_constant<int, K>{}) : void()), ...);
        }
        (std::make_integer_sequence<int, kG + 1>{});
    };
    const std::int64_t full = regs / kChunk, partial = regs - full * kChunk;
    // Groups of about the same size, at most kG chunks each, the partial chunk last in the last group.
    const std::int64_t groups = (chunks + kG - 1) / kG, size = groups > 0 ? (chunks + groups - 1) / groups : 0;
    std::int64_t i = 0;
    for (; chunks - i > size; i += size) group_of(size, i, kChunk);
    group_of(chunks - i, i, partial > 0 ? partial : kChunk);
    for (std::int64_t d = 1; d < depth; ++d) add_moments<T>(sn[d], s1[d], s2[d], sn[0], s1[0], s2[0]);
    T l1[kRows][kL], l2[kRows][kL];
    s1[0].store(l1);
    s2[0].store(l2);
    T m[kRows] = {}, q[kRows] = {};
    const std::int64_t tail = n - regs * kL;
    for (std::int64_t j = 0; j < tail; ++j)
        for (int r = 0; r < kRows; ++r) {
            const T v = x[r][regs * kL + j], d = v - m[r];
            m[r] += d / static_cast<T>(j + 1);
            q[r] += d * (v - m[r]);
        }
    // The lanes taken in one by one (add_moments, its counts, the same for every row, worked out once).
    T lane_c[kL], lane_n[kL];
    for (std::int64_t k = 0; k < kL; ++k) {
        const std::int64_t before = tail + k * regs, total = before + regs;
        lane_c[k] = total == 0 ? T(0) : static_cast<T>(regs) / static_cast<T>(total);
        lane_n[k] = static_cast<T>(before);
    }
    for (std::int64_t k = 0; k < kL; ++k)
        for (int r = 0; r < kRows; ++r) {
            const T delta = l1[r][k] - m[r];
            m[r] = m[r] + lane_c[k] * delta;
            q[r] = q[r] + (l2[r][k] + delta * delta * lane_c[k] * lane_n[k]);
        }
    for (int r = 0; r < kRows; ++r) {
        mean[r] = m[r];
        m2[r] = q[r];
    }
}

/// vec_math.hpp's norm_moments_rows: four rows at once on AVX-512, two at a time elsewhere (registers).
/// A last odd row goes alone, except on AVX-512, whose batches hold two rows: there it goes twice.
template <class B>
void norm_moments_n_(const typename B::value_type* const* x, int rows, std::int64_t n, typename B::value_type* mean,
                     typename B::value_type* m2) {
    using T = typename B::value_type;
    if constexpr (sizeof(B) == 64)
        if (rows == 4) return norm_moments_rows_<B, 4>(x, n, mean, m2);
    int r = 0;
    for (; r + 2 <= rows; r += 2) norm_moments_rows_<B, 2>(x + r, n, mean + r, m2 + r);
    if (r == rows) return;
    if constexpr (sizeof(B) == 64) {
        const T* twice[2] = {x[r], x[r]};
        T m[2], q[2];
        norm_moments_rows_<B, 2>(twice, n, m, q);
        mean[r] = m[0];
        m2[r] = q[0];
    } else {
        norm_moments_rows_<B, 1>(x + r, n, mean + r, m2 + r);
    }
}

/// Asks for the cache line at p, without waiting for it (a hint: it never faults).
inline void prefetch(const void* p) {
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

/// y = (x * scale + shift) * w + b, with the weight and bias each compiled in or out: with both, the
/// last multiply and add fused where mla is (PyTorch's vectorised path); without a bias, and with
/// kZero, + 0 at the end (PyTorch's scalar path adds a bias of 0, which turns -0 into +0). With
/// ahead > 0, the lines of x + ahead are prefetched as y is written (a later row, while this one is
/// in cache).
template <class B, bool kHasW, bool kHasB, bool kZero>
[[gnu::flatten]] void norm_apply_(const typename B::value_type* x, typename B::value_type scale,
                                  typename B::value_type shift, const typename B::value_type* w,
                                  const typename B::value_type* b, typename B::value_type* y, std::int64_t n,
                                  bool stream, std::int64_t ahead) {
    using T = typename B::value_type;
    const B sb(scale), hb(shift);
    auto at = [&](std::int64_t i) {
        if (ahead > 0) prefetch(x + ahead + i);
        B v = mla(B::load_unaligned(x + i), sb, hb);
        if constexpr (kHasW && kHasB) {
            v = mla(v, B::load_unaligned(w + i), B::load_unaligned(b + i));
        } else {
            if constexpr (kHasW) v = v * B::load_unaligned(w + i);
            if constexpr (kHasB) v = v + B::load_unaligned(b + i);
            if constexpr (kZero && !kHasB) v = v + B(T(0));
        }
        return v;
    };
    auto one = [&](std::int64_t i) {
        T v = mla_s<B>(x[i], scale, shift);
        if constexpr (kHasW && kHasB) {
            v = mla_s<B>(v, w[i], b[i]);
        } else {
            if constexpr (kHasW) v = v * w[i];
            if constexpr (kHasB) v = v + b[i];
            if constexpr (kZero && !kHasB) v = v + T(0);
        }
        y[i] = v;
    };
    // Aligned without a weight and a bias: their loads would straddle cache lines instead of x's.
    write_row<B, !kHasW && !kHasB>(y, n, at, one, stream);
}

/// Adam's update, element by element in PyTorch 1.13's _single_tensor_adam order (see adam_update in
/// vec_math.hpp). Every step is one IEEE operation (multiply, fused multiply-add where the arch has
/// FMA, add, sqrt, divide, max), correctly rounded in a vector lane as in a scalar: the lanes give the
/// scalar loop's bits.
template <class B, bool kAmsgrad>
[[gnu::flatten]] void adam_(typename B::value_type* p, const typename B::value_type* g, typename B::value_type* m,
                            typename B::value_type* v, typename B::value_type* vmax,
                            const AdamCoefficients<typename B::value_type>& c, std::int64_t n) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    const B b1(c.beta1), omb1(c.one_minus_beta1), b2(c.beta2), omb2(c.one_minus_beta2);
    const B bc2(c.bias_correction2_sqrt), eps(c.eps), neg_step(c.neg_step_size);
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW) {
        const B gi = B::load_unaligned(g + i);
        const B mi = mla(omb1, gi, B::load_unaligned(m + i) * b1);
        const B vi = mla(gi * omb2, gi, B::load_unaligned(v + i) * b2);
        mi.store_unaligned(m + i);
        vi.store_unaligned(v + i);
        B vd = vi;
        if constexpr (kAmsgrad) {
            const B old = B::load_unaligned(vmax + i);  // maximum, NaN propagating
            vd = xsimd::select(xsimd::isnan(old), old,
                               xsimd::select(xsimd::isnan(vi), vi, xsimd::select(old < vi, vi, old)));
            vd.store_unaligned(vmax + i);
        }
        const B denom = xsimd::sqrt(vd) / bc2 + eps;
        (B::load_unaligned(p + i) + mi * neg_step / denom).store_unaligned(p + i);
    }
    for (; i < n; ++i) {
        const T gi = g[i];
        const T mi = mla_s<B>(c.one_minus_beta1, gi, m[i] * c.beta1);
        const T vi = mla_s<B>(gi * c.one_minus_beta2, gi, v[i] * c.beta2);
        m[i] = mi;
        v[i] = vi;
        T vd = vi;
        if constexpr (kAmsgrad) {
            const T old = vmax[i];
            vd = old != old ? old : vi != vi ? vi : std::max(old, vi);
            vmax[i] = vd;
        }
        const T denom = std::sqrt(vd) / c.bias_correction2_sqrt + c.eps;
        p[i] = p[i] + mi * c.neg_step_size / denom;
    }
}

/// SGD's update of n elements (vec_math.hpp's sgd_update): scalar::sgd_element's steps on whole
/// registers (x.add(y, alpha=a) is mla(a, y, x): fused where the arch has FMA), then on the elements
/// left over. The options are tested per register (GCC did not vectorise the loop with them inside).
template <class B>
void sgd_(typename B::value_type* p, const typename B::value_type* g, typename B::value_type* buf,
          const SgdCoefficients<typename B::value_type>& c, std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    const B wd(c.weight_decay), m(c.momentum), keep(c.one_minus_dampening), neg_lr(c.neg_lr);
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW) {
        const B pv = B::load_unaligned(p + i);
        B d = B::load_unaligned(g + i);
        if (c.maximize) d = -d;
        if (c.decay) d = mla(wd, pv, d);
        if (buf) {
            const B b = c.first ? d : mla(keep, d, B::load_unaligned(buf + i) * m);
            b.store_unaligned(buf + i);
            d = c.nesterov ? mla(m, b, d) : b;
        }
        mla(neg_lr, d, pv).store_unaligned(p + i);
    }
    for (; i < n; ++i)
        scalar::sgd_element<kFmaOf<B>>(p[i], g[i], buf ? buf + i : nullptr, c.weight_decay, c.momentum,
                                       c.one_minus_dampening, c.neg_lr, c.maximize, c.decay, c.first, c.nesterov);
}

/// y = y + a * x (vec_math.hpp's axpy).
template <class B>
void axpy_(typename B::value_type* y, const typename B::value_type* x, typename B::value_type a, std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    const B av(a);
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW) mla(av, B::load_unaligned(x + i), B::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = mla_s<B>(a, x[i], y[i]);
}

/// The lanes of an AVX2 register of sums over n elements (a multiple of the lanes): acc_ab[l] =
/// a·b + acc_ab[l] and acc_a[l] += a, lane by lane (vec_math.hpp's lanes_fma_sums). The lanes are an
/// array whatever the batch width, so that an AVX-512 build sums as PyTorch's AVX2 kernel does; the
/// compiler turns the lane loops into one register's operations.
template <class B>
void lanes_fma_sums_(const typename B::value_type* a, const typename B::value_type* b, std::int64_t n,
                     typename B::value_type* acc_ab, typename B::value_type* acc_a) {
    using T = typename B::value_type;
    constexpr int kL = 32 / static_cast<int>(sizeof(T));
    T ab[kL], sa[kL];
    for (int l = 0; l < kL; ++l) {
        ab[l] = acc_ab[l];
        sa[l] = acc_a[l];
    }
    for (std::int64_t i = 0; i + kL <= n; i += kL)
        for (int l = 0; l < kL; ++l) {
            ab[l] = mla_s<B>(a[i + l], b[i + l], ab[l]);
            sa[l] = sa[l] + a[i + l];
        }
    for (int l = 0; l < kL; ++l) {
        acc_ab[l] = ab[l];
        acc_a[l] = sa[l];
    }
}

/// dx = (c1·g + c2·x) + c3, the first product fused with the sum (vec_math.hpp's group_norm_row_dx).
template <class B>
void group_norm_row_dx_(const typename B::value_type* g, const typename B::value_type* x, typename B::value_type c1,
                        typename B::value_type c2, typename B::value_type c3, typename B::value_type* dx,
                        std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    const B b1(c1), b2(c2), b3(c3);
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW)
        (mla(b1, B::load_unaligned(g + i), b2 * B::load_unaligned(x + i)) + b3).store_unaligned(dx + i);
    for (; i < n; ++i) dx[i] = mla_s<B>(c1, g[i], c2 * x[i]) + c3;
}

/// dx = ((g - grad_mean) - (x - mean)·k)·invstd·w, the subtraction of the product fused (vec_math.hpp's
/// batch_norm_row_dx).
template <class B>
void batch_norm_row_dx_(const typename B::value_type* g, const typename B::value_type* x, typename B::value_type mean,
                        typename B::value_type k, typename B::value_type grad_mean, typename B::value_type invstd,
                        typename B::value_type w, typename B::value_type* dx, std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    const B mb(mean), kb(k), gmb(grad_mean), ib(invstd), wb(w);
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW) {
        const B centred = B::load_unaligned(x + i) - mb;
        (mla(-centred, kb, B::load_unaligned(g + i) - gmb) * ib * wb).store_unaligned(dx + i);
    }
    for (; i < n; ++i) dx[i] = mla_s<B>(-(x[i] - mean), k, g[i] - grad_mean) * invstd * w;
}

/// vec_math.hpp's max_pool_taps: the windows in the lanes, the positions in integer lanes of T's width
/// carried through the same selects as the values (a select moves bits unchanged).
template <class B>
void max_pool_taps_(const typename B::value_type* x, std::int64_t stride, std::int64_t count, std::int64_t at,
                    typename B::value_type* m, typename IntBatch<B>::value_type* best) {
    using T = typename B::value_type;
    using I = IntBatch<B>;
    using Idx = typename I::value_type;
    constexpr std::int64_t kW = B::size;
    alignas(64) Idx offsets[kW];
    for (std::int64_t l = 0; l < kW; ++l) offsets[l] = static_cast<Idx>(l * stride);
    const I lanes = I::load_aligned(offsets);
    std::int64_t j = 0;
    for (; j + kW <= count; j += kW) {
        const B v = stride == 1 ? B::load_unaligned(x + j) : B::gather(x + j * stride, lanes);
        const B old = B::load_unaligned(m + j);
        const auto take = (v > old) | xsimd::isnan(v);  // not v != v: AVX compares NaN ordered
        xsimd::select(take, v, old).store_unaligned(m + j);
        const B was = xsimd::bitwise_cast<B>(I::load_unaligned(best + j));
        const B now = xsimd::bitwise_cast<B>(I(static_cast<Idx>(at + j * stride)) + lanes);
        xsimd::bitwise_cast<I>(xsimd::select(take, now, was)).store_unaligned(best + j);
    }
    for (; j < count; ++j) {
        const T v = x[j * stride];
        if (v > m[j] || v != v) {
            m[j] = v;
            best[j] = static_cast<Idx>(at + j * stride);
        }
    }
}

/// vec_math.hpp's cdist_forward_row for p = kP (1 or 2): four registers of pairs side by side (their
/// chains of adds overlap), then one register, then the pairs left over one at a time. Where the arch
/// has no FMA, the fused squares are fused lane by lane (C's fma), so that the bits stay PyTorch's.
template <class B, int kP>
void cdist_forward_row_(const typename B::value_type* x, const typename B::value_type* yt, std::int64_t stride,
                        std::int64_t count, std::int64_t m, std::int64_t apart, typename B::value_type* out) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    const std::int64_t plain = kP == 2 ? std::min(apart, m) : m;
    auto fused_square = [](const B& d, const B& agg) {
        if constexpr (kFmaOf<B>) {
            return mla(d, d, agg);
        } else {
            alignas(64) T a[kW], e[kW];
            agg.store_aligned(a);
            d.store_aligned(e);
            for (std::int64_t l = 0; l < kW; ++l) a[l] = std::fma(e[l], e[l], a[l]);
            return B::load_aligned(a);
        }
    };
    auto block = [&]<int kV>(std::int64_t j, std::integral_constant<int, kV>) {
        B agg[kV];
        each_of<kV>([&](auto v) { agg[v] = B(T(0)); });
        for (std::int64_t f = 0; f < plain; ++f) {
            const B xf(x[f]);
            const T* row = yt + f * stride + j;
            each_of<kV>([&](auto v) {
                const B d = xsimd::abs(xf - B::load_unaligned(row + v * kW));
                agg[v] = kP == 2 ? agg[v] + d * d : agg[v] + d;
            });
        }
        for (std::int64_t f = plain; f < m; ++f) {
            const B xf(x[f]);
            const T* row = yt + f * stride + j;
            each_of<kV>(
                [&](auto v) { agg[v] = fused_square(xsimd::abs(xf - B::load_unaligned(row + v * kW)), agg[v]); });
        }
        each_of<kV>([&](auto v) { (kP == 2 ? xsimd::sqrt(agg[v]) : agg[v]).store_unaligned(out + j + v * kW); });
    };
    std::int64_t j = 0;
    for (; j + 4 * kW <= count; j += 4 * kW) block(j, std::integral_constant<int, 4>{});
    for (; j + kW <= count; j += kW) block(j, std::integral_constant<int, 1>{});
    for (; j < count; ++j) {
        T agg = 0;
        for (std::int64_t f = 0; f < m; ++f) {
            const T d = std::abs(x[f] - yt[f * stride + j]);
            agg = kP == 1 ? agg + d : f < plain ? agg + d * d : std::fma(d, d, agg);
        }
        out[j] = kP == 2 ? std::sqrt(agg) : agg;
    }
}

/// vec_math.hpp's cdist_backward_row for p = kP (1 or 2): kV registers of features side by side (their
/// chains of adds down the rows overlap), then one register at a time, then the features left over.
template <class B, int kP>
void cdist_backward_row_(const typename B::value_type* x, const typename B::value_type* y,
                         const typename B::value_type* g, const typename B::value_type* dist, std::int64_t rows,
                         std::int64_t m, typename B::value_type* res) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    auto term = [](const auto& d, const auto& gj, T dj) {
        using V = std::decay_t<decltype(d)>;
        if constexpr (kP == 2) {
            return gj * d / V(dj);
        } else {
            const V one(T(1)), zero(T(0));
            const V s = xsimd::select(d > zero, one, zero) - xsimd::select(d < zero, one, zero);
            return gj * xsimd::select(d == d, s, d);
        }
    };
    auto block = [&]<int kV>(std::int64_t f, std::integral_constant<int, kV>) {
        B xv[kV], acc[kV];
        each_of<kV>([&](auto v) {
            xv[v] = B::load_unaligned(x + f + v * kW);
            acc[v] = B::load_unaligned(res + f + v * kW);
        });
        for (std::int64_t j = 0; j < rows; ++j) {
            if (kP == 2 && dist[j] == 0) continue;  // PyTorch's term is 0 there
            const B gj(g[j]);
            const T* yj = y + j * m + f;
            each_of<kV>([&](auto v) { acc[v] = acc[v] + term(xv[v] - B::load_unaligned(yj + v * kW), gj, dist[j]); });
        }
        each_of<kV>([&](auto v) { acc[v].store_unaligned(res + f + v * kW); });
    };
    std::int64_t f = 0;
    for (; f + 4 * kW <= m; f += 4 * kW) block(f, std::integral_constant<int, 4>{});
    for (; f + kW <= m; f += kW) block(f, std::integral_constant<int, 1>{});
    for (; f < m; ++f) {
        T acc = res[f];
        for (std::int64_t j = 0; j < rows; ++j) {
            if (kP == 2 && dist[j] == 0) continue;
            const T d = x[f] - y[j * m + f];
            if constexpr (kP == 2) {
                acc = acc + g[j] * d / dist[j];
            } else {
                const T s = static_cast<T>(d > 0) - static_cast<T>(d < 0);
                acc = acc + g[j] * (d == d ? s : d);
            }
        }
        res[f] = acc;
    }
}

/// The lanes of PyTorch's AVX2 register of sums combined as its vec_reduce_all does: floats by AVX2's
/// shuffles (lanes 4 apart, then 2, then 1), doubles in order (its generic path).
template <typename T>
T combine_lanes(const T* l) {
    if constexpr (sizeof(T) == 4) {
        const T s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
        return (s0 + s2) + (s1 + s3);
    } else {
        return ((l[0] + l[1]) + l[2]) + l[3];
    }
}

/// LayerNorm's backward, the second pass over a row, from its sums ds and db: b = (db·mean - ds)·rstd³/n,
/// c = -b·mean - db·rstd/n and dx = rstd·g·w + b·x + c (g and x prefetched `ahead` elements on).
template <class B, bool kHasW>
[[gnu::always_inline]] inline void layer_norm_row_dx_(const typename B::value_type* g, const typename B::value_type* x,
                                                      const typename B::value_type* w, typename B::value_type rstd,
                                                      typename B::value_type mean, typename B::value_type ds,
                                                      typename B::value_type db, typename B::value_type* dx,
                                                      std::int64_t n, bool stream, std::int64_t ahead) {
    using T = typename B::value_type;
    const T scale = T(1) / static_cast<T>(n);
    const T b = mla_s<B>(db, mean, -ds) * rstd * rstd * rstd * scale;
    const T c = mla_s<B>(-b, mean, -(db * rstd * scale));
    const B rb(rstd), bb(b), cb(c);
    auto dx_at = [&](std::int64_t j) {
        if (ahead > 0) {
            prefetch(g + ahead + j);
            prefetch(x + ahead + j);
        }
        B t = rb * B::load_unaligned(g + j);
        if constexpr (kHasW) t = t * B::load_unaligned(w + j);
        return mla(bb, B::load_unaligned(x + j), t) + cb;
    };
    auto dx_one = [&](std::int64_t j) {
        T t = rstd * g[j];
        if constexpr (kHasW) t = t * w[j];
        dx[j] = mla_s<B>(b, x[j], t) + c;
    };
    write_row<B, true>(dx, n, dx_at, dx_one, stream);  // three row streams (g, x, dx), one weight
}

/// vec_math.hpp's layer_norm_row_backward, the weight compiled in or out: PyTorch 1.13's
/// LayerNormBackwardKernelImplInternal for one row, with its build's fused multiply-adds. The first
/// pass reads g and x once for the weight and bias gradients and the two sums, in Regs (PyTorch's
/// lanes); the second finds them in cache and writes dx (and prefetches g and x `ahead` elements on).
template <class B, bool kHasW>
[[gnu::flatten]] void layer_norm_row_backward_(const typename B::value_type* g, const typename B::value_type* x,
                                               const typename B::value_type* w, typename B::value_type rstd,
                                               typename B::value_type mean, typename B::value_type* dx,
                                               typename B::value_type* acc_w, typename B::value_type* acc_b,
                                               std::int64_t n, bool stream, std::int64_t ahead) {
    using T = typename B::value_type;
    using R = Reg<B>;
    constexpr std::int64_t kL = R::kLanes;
    const T shift = -rstd * mean;
    const R ar(rstd), hr(shift);
    // dweight += g * (rstd * x - rstd * mean), dbias += g (PyTorch's map3 and map2).
    auto grads = [&](std::int64_t i, const R& gv, const R& xv) {
        if (acc_w) reg_mla(gv, reg_mla(ar, xv, hr), R::load(acc_w + i)).store(acc_w + i);
        if (acc_b) (R::load(acc_b + i) + gv).store(acc_b + i);
    };
    auto grads_one = [&](std::int64_t i) {
        if (acc_w) acc_w[i] = mla_s<B>(g[i], mla_s<B>(rstd, x[i], shift), acc_w[i]);
        if (acc_b) acc_b[i] = acc_b[i] + g[i];
    };
    std::int64_t i = 0;
    if (!dx) {
        for (; i + kL <= n; i += kL) grads(i, R::load(g + i), R::load(x + i));
        for (; i < n; ++i) grads_one(i);
        return;
    }
    // ds = Σ g·x·w and db = Σ g·w (without a weight: Σ g·x and Σ g), in vec::map3_reduce_all's and
    // map2_reduce_all's order: a register of the first terms, each later term added to its lane (fused
    // where mla is), the last partial register's terms to the first lanes, then the lanes combined; a
    // row shorter than a register in order.
    T ds = 0, db = 0;
    if (n < kL) {
        for (; i < n; ++i) {
            const T p = kHasW ? g[i] * x[i] * w[i] : g[i] * x[i], q = kHasW ? g[i] * w[i] : g[i];
            ds = i == 0 ? p : ds + p;
            db = i == 0 ? q : db + q;
            grads_one(i);
        }
    } else {
        R sd, sb;
        {
            const R gv = R::load(g), xv = R::load(x);
            if constexpr (kHasW) {
                const R wv = R::load(w);
                sd = gv * xv * wv;
                sb = gv * wv;
            } else {
                sd = gv * xv;
                sb = gv;
            }
            grads(0, gv, xv);
        }
        for (i = kL; i + kL <= n; i += kL) {
            const R gv = R::load(g + i), xv = R::load(x + i);
            if constexpr (kHasW) {
                const R wv = R::load(w + i);
                sd = reg_mla(gv * xv, wv, sd);
                sb = reg_mla(gv, wv, sb);
            } else {
                sd = reg_mla(gv, xv, sd);
                sb = sb + gv;
            }
            grads(i, gv, xv);
        }
        alignas(32) T ld[kL], lb[kL];
        sd.store(ld);
        sb.store(lb);
        for (std::int64_t k = 0; i < n; ++i, ++k) {
            if constexpr (kHasW) {
                ld[k] = mla_s<B>(g[i] * x[i], w[i], ld[k]);
                lb[k] = mla_s<B>(g[i], w[i], lb[k]);
            } else {
                ld[k] = mla_s<B>(g[i], x[i], ld[k]);
                lb[k] = lb[k] + g[i];
            }
            grads_one(i);
        }
        ds = combine_lanes(ld);
        db = combine_lanes(lb);
    }
    layer_norm_row_dx_<B, kHasW>(g, x, w, rstd, mean, ds, db, dx, n, stream, ahead);
}

/// layer_norm_row_backward_ for K consecutive rows of n elements (at g, x and dx + k * n), with dx and
/// at least a register of elements: their first passes run side by side, so that the rows' chains of
/// dependent sums interleave (one row's chain alone left the multiply-add unit waiting on its latency),
/// and acc_w and acc_b are read and written once for the K rows. Each element of acc_w and acc_b still
/// takes the rows' terms in row order, so the bits are those of K calls of the row kernel. `ahead` as the
/// row kernel's, for every row.
template <class B, bool kHasW, int K>
[[gnu::flatten]] void layer_norm_rows_backward_(const typename B::value_type* g, const typename B::value_type* x,
                                                const typename B::value_type* w, const typename B::value_type* rstd,
                                                const typename B::value_type* mean, typename B::value_type* dx,
                                                typename B::value_type* acc_w, typename B::value_type* acc_b,
                                                std::int64_t n, bool stream, std::int64_t ahead) {
    using T = typename B::value_type;
    using R = Reg<B>;
    constexpr std::int64_t kL = R::kLanes;
    T shift[K];
    R ar[K], hr[K], sd[K], sb[K], gv[K], xv[K];
    each_of<K>([&](auto k) {
        shift[k] = -rstd[k] * mean[k];
        ar[k] = R(rstd[k]);
        hr[k] = R(shift[k]);
    });
    auto grads = [&](std::int64_t i) {
        if (acc_w) {
            R a = R::load(acc_w + i);
            each_of<K>([&](auto k) { a = reg_mla(gv[k], reg_mla(ar[k], xv[k], hr[k]), a); });
            a.store(acc_w + i);
        }
        if (acc_b) {
            R a = R::load(acc_b + i);
            each_of<K>([&](auto k) { a = a + gv[k]; });
            a.store(acc_b + i);
        }
    };
    auto load = [&](std::int64_t i) {
        each_of<K>([&](auto k) {
            gv[k] = R::load(g + k * n + i);
            xv[k] = R::load(x + k * n + i);
        });
    };
    load(0);
    {
        [[maybe_unused]] R wv;
        if constexpr (kHasW) wv = R::load(w);
        each_of<K>([&](auto k) {
            if constexpr (kHasW) {
                sd[k] = gv[k] * xv[k] * wv;
                sb[k] = gv[k] * wv;
            } else {
                sd[k] = gv[k] * xv[k];
                sb[k] = gv[k];
            }
        });
        grads(0);
    }
    std::int64_t i = kL;
    for (; i + kL <= n; i += kL) {
        load(i);
        [[maybe_unused]] R wv;
        if constexpr (kHasW) wv = R::load(w + i);
        each_of<K>([&](auto k) {
            if constexpr (kHasW) {
                sd[k] = reg_mla(gv[k] * xv[k], wv, sd[k]);
                sb[k] = reg_mla(gv[k], wv, sb[k]);
            } else {
                sd[k] = reg_mla(gv[k], xv[k], sd[k]);
                sb[k] = sb[k] + gv[k];
            }
        });
        grads(i);
    }
    alignas(32) T ld[K][kL], lb[K][kL];
    each_of<K>([&](auto k) {
        sd[k].store(ld[k]);
        sb[k].store(lb[k]);
    });
    for (std::int64_t l = 0; i < n; ++i, ++l)
        for (int k = 0; k < K; ++k) {
            const T gi = g[k * n + i], xi = x[k * n + i];
            if constexpr (kHasW) {
                ld[k][l] = mla_s<B>(gi * xi, w[i], ld[k][l]);
                lb[k][l] = mla_s<B>(gi, w[i], lb[k][l]);
            } else {
                ld[k][l] = mla_s<B>(gi, xi, ld[k][l]);
                lb[k][l] = lb[k][l] + gi;
            }
            if (acc_w) acc_w[i] = mla_s<B>(gi, mla_s<B>(rstd[k], xi, shift[k]), acc_w[i]);
            if (acc_b) acc_b[i] = acc_b[i] + gi;
        }
    // dx row by row, as the row kernel's second pass.
    for (int k = 0; k < K; ++k)
        layer_norm_row_dx_<B, kHasW>(g + k * n, x + k * n, w, rstd[k], mean[k], combine_lanes(ld[k]),
                                     combine_lanes(lb[k]), dx + k * n, n, stream, ahead);
}

/// sum_order.hpp's cascade_sum<Lanes<T, kLanes<T>>, 4> over `rows` rows of 128 bytes (four AVX2
/// registers), lane for lane: value(i, r) gives batch r of row i, and every lane gets the same additions
/// in the same order, whatever the width of B, so the bits are the scalar cascade's on every instruction
/// set. out gets the 128 / sizeof(T) sums.
template <class B, class V>
[[gnu::always_inline]] inline void cascade_rows(std::int64_t rows, int power, typename B::value_type* out, V&& value) {
    using T = typename B::value_type;
    constexpr int kR = static_cast<int>(128 / sizeof(B));  // batches per row
    constexpr int kLevels = 4;
    B acc[kLevels][kR];
    for (auto& level : acc)
        for (auto& a : level) a = B(T(0));
    const std::int64_t step = std::int64_t{1} << power, mask = step - 1;
    auto add_row = [&](std::int64_t i) {
        for (int r = 0; r < kR; ++r) acc[0][r] += value(i, r);
    };
    std::int64_t i = 0;
    while (i + step <= rows) {
        for (std::int64_t j = 0; j < step; ++j, ++i) add_row(i);
        for (int l = 1; l < kLevels; ++l) {
            for (int r = 0; r < kR; ++r) {
                acc[l][r] += acc[l - 1][r];
                acc[l - 1][r] = B(T(0));
            }
            if ((i & (mask << (l * power))) != 0) break;
        }
    }
    for (; i < rows; ++i) add_row(i);
    for (int l = 1; l < kLevels; ++l)
        for (int r = 0; r < kR; ++r) acc[0][r] += acc[l][r];
    for (int r = 0; r < kR; ++r) acc[0][r].store_unaligned(out + r * B::size);
}

/// The cascade's level step for `rows` rows: sum_order.hpp's max(4, ceil_log2(rows) / 4), written again
/// here because this file's code is compiled once per instruction set with internal linkage, and
/// sum_order.hpp's inline functions must not be (the linker could hand an AVX copy to the SSE2 path).
inline int cascade_power(std::int64_t rows) {
    int log = 0;
    while ((std::int64_t{1} << log) < rows) ++log;
    return std::max(4, log / 4);
}

/// acc += g * (x * rstd) over n elements, each product rounded as PyTorch's separate kernels round it
/// (nothing when acc is null).
template <class B>
[[gnu::always_inline]] inline void rms_weight_terms(const typename B::value_type* g, const typename B::value_type* x,
                                                    typename B::value_type rstd, typename B::value_type* acc,
                                                    std::int64_t n) {
    if (!acc) return;
    constexpr std::int64_t kW = B::size;
    const B rb(rstd);
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW) {
        const B gv = B::load_unaligned(g + i), xv = B::load_unaligned(x + i);
        (B::load_unaligned(acc + i) + gv * (xv * rb)).store_unaligned(acc + i);
    }
    for (; i < n; ++i) acc[i] = acc[i] + g[i] * (x[i] * rstd);
}

/// vec_math.hpp's rms_norm_row_terms, the weight compiled in or out. With quad_sums, one pass over the
/// row's whole 128-byte groups computes q = (g * w) * x into the cascade and, when the groups all lie
/// before `cut` (as ColumnSums' rows have them), the weight terms together; the other elements take the
/// weight terms alone.
template <class B, bool kHasW>
[[gnu::flatten]] void rms_norm_row_terms_(const typename B::value_type* g, const typename B::value_type* x,
                                          const typename B::value_type* w, typename B::value_type rstd,
                                          typename B::value_type* quad_sums, typename B::value_type* acc,
                                          typename B::value_type* acc_rest, std::int64_t cut, std::int64_t n) {
    using T = typename B::value_type;
    constexpr std::int64_t kQuad = 128 / sizeof(T);
    std::int64_t done = 0;  // elements whose weight terms are in
    if (quad_sums) {
        const std::int64_t quads = n / kQuad;
        const bool fused = quads * kQuad <= cut;
        T* a = fused ? acc : nullptr;
        const B rb(rstd);
        cascade_rows<B>(quads, cascade_power(quads), quad_sums, [&](std::int64_t i, int r) {
            const std::int64_t j = i * kQuad + r * static_cast<std::int64_t>(B::size);
            const B gv = B::load_unaligned(g + j), xv = B::load_unaligned(x + j);
            if (a) (B::load_unaligned(a + j) + gv * (xv * rb)).store_unaligned(a + j);
            B t = gv;
            if constexpr (kHasW) t = gv * B::load_unaligned(w + j);
            return t * xv;
        });
        if (fused) done = quads * kQuad;
    }
    const std::int64_t split = std::max(cut, done);
    rms_weight_terms<B>(g + done, x + done, rstd, acc ? acc + done : acc, split - done);
    rms_weight_terms<B>(g + split, x + split, rstd, acc_rest ? acc_rest + split : acc_rest, n - split);
}

/// vec_math.hpp's rms_norm_row_dx, the weight compiled in or out: dx = t * rstd + dms * (x + x), t as
/// in rms_norm_row_terms_ (the row is in cache from that pass; g and x are prefetched `ahead` elements
/// on, with ahead > 0).
template <class B, bool kHasW>
[[gnu::flatten]] void rms_norm_row_dx_(const typename B::value_type* g, const typename B::value_type* x,
                                       const typename B::value_type* w, typename B::value_type rstd,
                                       typename B::value_type dms, typename B::value_type* dx, std::int64_t n,
                                       bool stream, std::int64_t ahead) {
    using T = typename B::value_type;
    const B rb(rstd), mb(dms);
    auto dx_at = [&](std::int64_t j) {
        if (ahead > 0) {
            prefetch(g + ahead + j);
            prefetch(x + ahead + j);
        }
        B t = B::load_unaligned(g + j);
        if constexpr (kHasW) t = t * B::load_unaligned(w + j);
        const B xv = B::load_unaligned(x + j);
        return t * rb + mb * (xv + xv);
    };
    auto dx_one = [&](std::int64_t j) {
        const T t = kHasW ? g[j] * w[j] : g[j];
        dx[j] = t * rstd + dms * (x[j] + x[j]);
    };
    write_row<B, true>(dx, n, dx_at, dx_one, stream);  // three row streams (g, x, dx), one weight
}

// ---- short rows of a broadcast ----------------------------------------------------------------

/// vec_math.hpp's varith_rows for one op (0 to 3: +, -, *, /) and operand layout: the rows one after
/// another in one loop, a per-row value broadcast once per row, the last elements of a row one by one
/// (each the same IEEE operation as in a lane).
template <class B, int kOp, RowOperands kLayout>
[[gnu::flatten]] void arith_rows_(const typename B::value_type* x, std::int64_t x_row, const typename B::value_type* y,
                                  std::int64_t y_row, typename B::value_type* out, std::int64_t n, std::int64_t rows) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    auto op = [](const auto& u, const auto& v) {
        if constexpr (kOp == 0)
            return u + v;
        else if constexpr (kOp == 1)
            return u - v;
        else if constexpr (kOp == 2)
            return u * v;
        else
            return u / v;
    };
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * x_row;
        const T* yr = y + r * y_row;
        T* o = out + r * n;
        std::int64_t i = 0;
        if constexpr (kLayout == RowOperands::kLeftPerRow) {
            const T a = xr[0];
            const B av(a);
            for (; i + kW <= n; i += kW) op(av, B::load_unaligned(yr + i)).store_unaligned(o + i);
            for (; i < n; ++i) o[i] = op(a, yr[i]);
        } else if constexpr (kLayout == RowOperands::kRightPerRow) {
            const T b = yr[0];
            const B bv(b);
            for (; i + kW <= n; i += kW) op(B::load_unaligned(xr + i), bv).store_unaligned(o + i);
            for (; i < n; ++i) o[i] = op(xr[i], b);
        } else {
            for (; i + kW <= n; i += kW)
                op(B::load_unaligned(xr + i), B::load_unaligned(yr + i)).store_unaligned(o + i);
            for (; i < n; ++i) o[i] = op(xr[i], yr[i]);
        }
    }
}

// ---- sums in PyTorch's order --------------------------------------------------------------------

/// cascade_rows over `rows` rows of 128 bytes at x + i * stride. With kSquare, each element's square
/// (rounded, no fused multiply-add) is added instead.
template <class B, bool kSquare>
[[gnu::flatten]] void sum_cascade_rows_(const typename B::value_type* x, std::int64_t rows, std::int64_t stride,
                                        int power, typename B::value_type* out) {
    cascade_rows<B>(rows, power, out, [&](std::int64_t i, int r) {
        const B v = B::load_unaligned(x + i * stride + r * static_cast<std::int64_t>(B::size));
        return kSquare ? v * v : v;
    });
}

/// B, or for a batch wider than an AVX2 register the AVX2 batch of its type: for a cascade whose sums are
/// read back as 32-byte vectors. With 64-byte stores, rows of 1024 floats summed 9 % slower on an AMD EPYC
/// (family 26) than with the AVX2 kernels, as if each half's load waited for the store to reach the cache
/// rather than being forwarded from it; with 32-byte stores they run level.
template <class B>
struct AtMostAvx2 {
    using type = B;
};
template <class T>
struct AtMostAvx2<xsimd::batch<T, xsimd::avx512bw>> {
    using type = xsimd::batch<T, xsimd::avx2>;
};

/// sum_order.hpp's inner_sum of a row of n elements, written again here (this file's code is compiled
/// once per instruction set, with internal linkage) so that a loop over many rows runs without a call
/// per row: the groups of four AVX2 registers through cascade_rows when there are 16 and more, the
/// other registers on GCC's generic 32-byte vectors (one AVX2 register's lanes, which each instruction
/// set's copy maps onto its own registers), the same additions in the same order, so the same bits.
/// Serial: inner_sum splits a row of 8192 groups and more between threads (with the same bits).
/// With kSquare, the squares (each rounded), as inner_sum<T, true>.
/// (Plain arrays of lanes went through the stack, and a row of 32 floats waited on its stores.)
template <class B, bool kSquare>
[[gnu::always_inline]] inline typename B::value_type row_sum(const typename B::value_type* x, std::int64_t n) {
    using T = typename B::value_type;
    constexpr int W = static_cast<int>(32 / sizeof(T));  // lanes of an AVX2 register
    using V [[gnu::vector_size(32)]] = T;
    // Into a reference, not returned: a 32-byte vector returned without AVX (the SSE2 copy) changes the
    // ABI, which GCC warns about even where it inlines.
    const auto load = [](V& v, const T* p) {
        std::memcpy(&v, p, sizeof v);
        if constexpr (kSquare) v = v * v;
    };
    const auto at = [x](std::int64_t i) { return kSquare ? x[i] * x[i] : x[i]; };
    if (n < W) {  // interleaved_sum: four running sums over groups of four, the rest into the first
        T p[4] = {T(0), T(0), T(0), T(0)};
        const std::int64_t quads = n / 4;
        for (std::int64_t i = 0; i < quads; ++i)
            for (int k = 0; k < 4; ++k) p[k] += at(i * 4 + k);
        for (std::int64_t i = quads * 4; i < n; ++i) p[0] += at(i);
        return ((p[0] + p[1]) + p[2]) + p[3];
    }
    const std::int64_t vectors = n / W, quads = vectors / 4;
    V a0, v;
    std::int64_t i = 1;
    if (quads > 0) {  // groups of four registers, then the registers combined in order
        V a1, a2, a3;
        if (quads >= 16) {  // the cascade, from +0
            using BC = typename AtMostAvx2<B>::type;
            alignas(64) T part[4 * W];
            cascade_rows<BC>(quads, cascade_power(quads), part, [&](std::int64_t q, int r) {
                const BC b = BC::load_unaligned(x + q * 4 * W + r * static_cast<std::int64_t>(BC::size));
                return kSquare ? b * b : b;
            });
            // The sums as they are (load would square them).
            std::memcpy(&a0, part, sizeof a0);
            std::memcpy(&a1, part + W, sizeof a1);
            std::memcpy(&a2, part + 2 * W, sizeof a2);
            std::memcpy(&a3, part + 3 * W, sizeof a3);
        } else {  // from the first group (the same bits as from +0: inner_sum's comment)
            load(a0, x);
            load(a1, x + W);
            load(a2, x + 2 * W);
            load(a3, x + 3 * W);
            for (std::int64_t q = 1; q < quads; ++q) {
                load(v, x + q * 4 * W);
                a0 += v;
                load(v, x + q * 4 * W + W);
                a1 += v;
                load(v, x + q * 4 * W + 2 * W);
                a2 += v;
                load(v, x + q * 4 * W + 3 * W);
                a3 += v;
            }
        }
        for (i = quads * 4; i < vectors; ++i) {
            load(v, x + i * W);
            a0 += v;
        }
        a0 += a1;
        a0 += a2;
        a0 += a3;
    } else {  // one register, from the first
        load(a0, x);
        for (; i < vectors; ++i) {
            load(v, x + i * W);
            a0 += v;
        }
    }
    T total = 0;
    for (std::int64_t k = vectors * W; k < n; ++k) total += at(k);
    for (int k = 0; k < W; ++k) total += a0[k];
    return total;
}

/// vec_math.hpp's sum_rows_serial.
template <class B>
[[gnu::flatten]] void sum_rows_serial_(const typename B::value_type* x, std::int64_t rows, std::int64_t n,
                                       typename B::value_type* out, bool square) {
    if (square) {
        for (std::int64_t r = 0; r < rows; ++r) out[r] = row_sum<B, true>(x + r * n, n);
    } else {
        for (std::int64_t r = 0; r < rows; ++r) out[r] = row_sum<B, false>(x + r * n, n);
    }
}

/// vec_math.hpp's sum_cascade.
template <class B>
void sum_cascade_(const typename B::value_type* x, std::int64_t rows, std::int64_t stride, int power,
                  typename B::value_type* out, bool square) {
    if (square) {
        sum_cascade_rows_<B, true>(x, rows, stride, power, out);
    } else {
        sum_cascade_rows_<B, false>(x, rows, stride, power, out);
    }
}

// ---- variance rows ---------------------------------------------------------------------------------

/// Accumulators of the variance sums: 32 doubles, whatever the width of the batches, so that every
/// instruction set adds in the same order and gives the same bits.
constexpr int kVarLanes = 32;

/// One Bd batch of elements at p as doubles (floats are converted).
template <class Bd, class T>
Bd load_double(const T* p) {
    if constexpr (std::is_same_v<T, double>) {
        return Bd::load_unaligned(p);
    } else if constexpr (sizeof(Bd) == 64) {
#if defined(__AVX512F__)
        return _mm512_cvtps_pd(_mm256_loadu_ps(p));
#endif
    } else if constexpr (sizeof(Bd) == 32) {
#if defined(__AVX__)
        return _mm256_cvtps_pd(_mm_loadu_ps(p));
#endif
    } else {
        static_assert(sizeof(Bd) == 16);
        return _mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p))));
    }
}

/// Σ f(double(x[i])) over a row in double: lane k of the accumulators gets the elements i with
/// i % kVarLanes == k, in order; then the lanes are added in order, then the tail. With ahead > 0,
/// the lines of x + ahead are prefetched on the way (norm_apply's `ahead`).
template <class A, class T, class V, class S>
[[gnu::flatten]] double var_sum(const T* x, std::int64_t n, V vec, S one, std::int64_t ahead = 0) {
    using Bd = xsimd::batch<double, A>;
    constexpr int kR = kVarLanes / static_cast<int>(Bd::size);
    constexpr int kLineElems = 64 / static_cast<int>(sizeof(T));
    static_assert(kVarLanes % kLineElems == 0);
    // The accumulators are indexed by constants only (each_of), so that GCC keeps them in registers: a
    // loop over r left three of four on the stack, a store-to-load round trip in every add's chain.
    Bd acc[kR];
    each_of<kR>([&](auto r) { acc[r] = Bd(0.0); });
    std::int64_t i = 0;
    for (; i + kVarLanes <= n; i += kVarLanes) {
        if (ahead > 0)
            for (int l = 0; l < kVarLanes; l += kLineElems) prefetch(x + ahead + i + l);
        each_of<kR>([&](auto r) { acc[r] += vec(load_double<Bd>(x + i + r * static_cast<int>(Bd::size))); });
    }
    alignas(64) double lanes[kVarLanes];
    each_of<kR>([&](auto r) { acc[r].store_aligned(lanes + r * static_cast<int>(Bd::size)); });
    double s = 0;
    for (double v : lanes) s += v;
    for (; i < n; ++i) s += one(static_cast<double>(x[i]));
    return s;
}

/// A float row's mean and Σ (x - mean)² in one pass: the shifted sums s1 = Σ (x - c) and
/// s2 = Σ (x - c)² in double, c the mean of the first (up to kVarLanes) elements rounded to float, lane
/// k of each getting the elements i with i % kVarLanes == k, in order, the lanes added in order, then
/// the tail; then mean = c + s1 / n and m2 = s2 - s1² / n. The difference of two floats is exact in
/// double, and c lies among the row's first values, so the cancellation in m2 costs double ulps
/// (relatively, about (mean - c)² / variance of them), far below a float's: the variance rounds to the
/// two-pass result (and PyTorch's Welford in double) while the row is read once, not twice (measured:
/// var(-1) of 4096x4096 floats 1.14x faster from DRAM, 1.44x from the caches, one thread). The squares
/// are multiplied and added apart (no FMA), so every instruction set gives the same bits.
///
/// K rows n elements apart at once, each with its own sums, so that one row's chains of dependent adds
/// (c, the lanes' totals) run beside another's: each row gets exactly the arithmetic it gets alone.
template <class A, int K>
[[gnu::flatten]] void var_rows_shifted(const float* x, std::int64_t n, double* mean, double* m2, std::int64_t ahead) {
    using Bd = xsimd::batch<double, A>;
    constexpr int kR = kVarLanes / static_cast<int>(Bd::size);
    constexpr int kLineElems = 16;
    const std::int64_t head = std::min<std::int64_t>(n, kVarLanes);
    double c[K];
    each_of<K>([&](auto k) {
        c[k] = 0;
        for (std::int64_t i = 0; i < head; ++i) c[k] += static_cast<double>(x[k * n + i]);
        c[k] = static_cast<double>(static_cast<float>(c[k] / static_cast<double>(head)));
    });
    Bd cb[K], s1[K][kR], s2[K][kR];
    each_of<K>([&](auto k) {
        cb[k] = Bd(c[k]);
        each_of<kR>([&](auto r) {
            s1[k][r] = Bd(0.0);
            s2[k][r] = Bd(0.0);
        });
    });
    std::int64_t i = 0;
    for (; i + kVarLanes <= n; i += kVarLanes) {
        // A plain loop: in a lambda (each_of) GCC 12 found the prefetch without effect and dropped it.
        if (ahead > 0)
            for (int k = 0; k < K; ++k)
                for (int l = 0; l < kVarLanes; l += kLineElems) prefetch(x + k * n + ahead + i + l);
        each_of<K>([&](auto k) {
            each_of<kR>([&](auto r) {
                const Bd d = load_double<Bd>(x + k * n + i + r * static_cast<int>(Bd::size)) - cb[k];
                s1[k][r] += d;
                s2[k][r] += d * d;
            });
        });
    }
    alignas(64) double l1[K][kVarLanes], l2[K][kVarLanes];
    each_of<K>([&](auto k) {
        each_of<kR>([&](auto r) {
            s1[k][r].store_aligned(l1[k] + r * static_cast<int>(Bd::size));
            s2[k][r].store_aligned(l2[k] + r * static_cast<int>(Bd::size));
        });
    });
    double t1[K], t2[K];
    each_of<K>([&](auto k) { t1[k] = t2[k] = 0; });
    for (int l = 0; l < kVarLanes; ++l)
        each_of<K>([&](auto k) {
            t1[k] += l1[k][l];
            t2[k] += l2[k][l];
        });
    for (; i < n; ++i)
        each_of<K>([&](auto k) {
            const double d = static_cast<double>(x[k * n + i]) - c[k];
            t1[k] += d;
            t2[k] += d * d;
        });
    const double nd = static_cast<double>(n);
    each_of<K>([&](auto k) {
        mean[k] = c[k] + t1[k] / nd;
        const double centred = t2[k] - t1[k] * t1[k] / nd;
        m2[k] = centred < 0 ? 0.0 : centred;  // rounding can leave a tiny negative; NaN (from inf or NaN) stays
    });
}

/// Rows whose sums var_rows_shifted runs side by side: two where the registers hold both rows'
/// accumulators (32 of AVX-512's), else one (AVX2's 16 registers hold one row's already).
template <class A>
constexpr int kVarRowsTogether = sizeof(xsimd::batch<double, A>) == 64 ? 2 : 1;

/// vec_math.hpp's var_rows: each row's mean and Σ (x - mean)², both in double: float rows in one pass
/// (var_rows_shifted, kVarRowsTogether at a time), double rows in two (the second finds the row in
/// cache and prefetches x + ahead when ahead > 0), since a double's difference from c is not exact.
template <class B>
void var_rows_(const typename B::value_type* x, std::int64_t rows, std::int64_t n, double* mean, double* m2,
               std::int64_t ahead) {
    using A = typename B::arch_type;
    using Bd = xsimd::batch<double, A>;
    if constexpr (std::is_same_v<typename B::value_type, float>) {
        constexpr int K = kVarRowsTogether<A>;
        std::int64_t r = 0;
        for (; r + K <= rows; r += K) var_rows_shifted<A, K>(x + r * n, n, mean + r, m2 + r, ahead);
        for (; r < rows; ++r) var_rows_shifted<A, 1>(x + r * n, n, mean + r, m2 + r, ahead);
    } else {
        for (std::int64_t r = 0; r < rows; ++r) {
            const double* row = x + r * n;
            const double m = var_sum<A>(
                                 row, n, [](const Bd& v) { return v; }, [](double v) { return v; }) /
                             static_cast<double>(n);
            const Bd mb(m);
            mean[r] = m;
            m2[r] = var_sum<A>(
                row, n,
                [mb](const Bd& v) {
                    const Bd d = v - mb;
                    return d * d;
                },
                [m](double v) { return (v - m) * (v - m); }, ahead);
        }
    }
}

/// vec_math.hpp's sq_dev_sum: var_sum's lanes over (x - c)², each square apart (no FMA).
template <class B>
double sq_dev_sum_(const typename B::value_type* x, std::int64_t n, double c) {
    using A = typename B::arch_type;
    using Bd = xsimd::batch<double, A>;
    const Bd cb(c);
    return var_sum<A>(
        x, n,
        [cb](const Bd& v) {
            const Bd d = v - cb;
            return d * d;
        },
        [c](double v) { return (v - c) * (v - c); });
}

/// vec_math.hpp's welford_rows: kChains rows side by side (independent chains), then the rest one by one.
template <class T>
void welford_rows_(const T* x, std::int64_t rows, std::int64_t n, double* mean, double* m2) {
    constexpr std::int64_t kChains = 4;
    auto run = [&]<std::int64_t C>(std::int64_t r0, std::integral_constant<std::int64_t, C>) {
        double m[C] = {}, q[C] = {};
        for (std::int64_t i = 0; i < n; ++i) {
            const double count = static_cast<double>(i + 1);
            for (std::int64_t c = 0; c < C; ++c) {
                const double v = static_cast<double>(x[(r0 + c) * n + i]);
                const double d = v - m[c];
                m[c] = m[c] + d / count;
                q[c] = std::fma(d, v - m[c], q[c]);
            }
        }
        for (std::int64_t c = 0; c < C; ++c) {
            mean[r0 + c] = m[c];
            m2[r0 + c] = q[c];
        }
    };
    std::int64_t r = 0;
    for (; r + kChains <= rows; r += kChains) run(r, std::integral_constant<std::int64_t, kChains>{});
    for (; r < rows; ++r) run(r, std::integral_constant<std::int64_t, 1>{});
}

// ---- loops and the table -----------------------------------------------------------------------

/// Writes y[0, n): `at(i)` is the batch at i, `one(i)` writes y[i] alone (the scalar ends). With
/// `stream`, the batches from the first aligned position on go out as non-temporal stores, and the
/// caller fences them (stream_fence) before another thread may read y: a row kernel writes many rows
/// between two fences, since each fence waits for every line in flight. Without `stream`, kAlign
/// moves the batches onto y's alignment (below).
template <class B, bool kAlign, class V, class S>
void write_row(typename B::value_type* y, std::int64_t n, V& at, S& one, bool stream) {
    constexpr std::int64_t kW = B::size;
    std::int64_t i = 0;
    if (stream) {
        for (const std::int64_t head = until_aligned<B>(y, n); i < head; ++i) one(i);
        for (; i + kW <= n; i += kW) stream_store(at(i), y + i);
    } else {
        // With kAlign, a row that starts off the vector alignment (most rows of width 1500 floats) is
        // written as one batch at its start, then batches from its first aligned element on (the
        // elements between are written twice, with the same values: a row kernel's second pass is
        // elementwise). Then neither the stores nor the loads in `at` of inputs at the row's offset
        // straddle two cache lines, but the loads of a weight or bias (one row, aligned at 0) do. The
        // caller says where that pays (measured here at 1024x1500: the LayerNorm backward 1.14x faster
        // aligned; the RMSNorm forward with a weight 5 % slower).
        if (kAlign && n >= 4 * kW) {
            const std::int64_t head = until_aligned<B>(y, n);
            if (head > 0 && head < kW) {
                at(0).store_unaligned(y);
                i = head;
            }
        }
        for (; i + kW <= n; i += kW) at(i).store_unaligned(y + i);
    }
    for (; i < n; ++i) one(i);
}

/// y[i] = f(x[i]) for fewer than a batch of elements, through a zero-padded batch: every element gets
/// the same arithmetic whatever its position.
template <class B, class F>
void padded1(const typename B::value_type* x, typename B::value_type* y, std::int64_t n, F& f) {
    using T = typename B::value_type;
    if (n <= 0) return;
    alignas(64) T buf[B::size] = {};
    const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
    std::memcpy(buf, x, bytes);
    f(B::load_unaligned(buf)).store_unaligned(buf);
    std::memcpy(y, buf, bytes);
}

/// out[i] = f(a[i], b[i]) for fewer than a batch of elements, as padded1.
template <class B, class F>
void padded2(const typename B::value_type* a, const typename B::value_type* b, typename B::value_type* out,
             std::int64_t n, F& f) {
    using T = typename B::value_type;
    if (n <= 0) return;
    alignas(64) T pa[B::size] = {}, pb[B::size] = {};
    const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
    std::memcpy(pa, a, bytes);
    std::memcpy(pb, b, bytes);
    f(B::load_unaligned(pa), B::load_unaligned(pb)).store_unaligned(pa);
    std::memcpy(out, pa, bytes);
}

/// Stores v at p: non-temporal when `stream` (p then aligned for it), else an ordinary store.
template <class B>
void store_batch(const B& v, typename B::value_type* p, bool stream) {
    if (stream)
        stream_store(v, p);
    else
        v.store_unaligned(p);
}

/// How far ahead of the loads map1 and map2 prefetch their inputs, in bytes (64 lines).
constexpr std::uintptr_t kPrefetchAhead = 4096;

/// Prefetches the `bytes` that start kPrefetchAhead bytes after p into the level-1 cache, a line (64
/// bytes) at a time. The addresses may lie past the end of p's array: a prefetch never faults.
inline void prefetch_ahead(const void* p, std::size_t bytes) {
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p) + kPrefetchAhead;
    for (std::size_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(at + b), _MM_HINT_T0);
}

/// y[i] = f(x[i]) a batch at a time, the ends through padded batches. With `stream`, the batches
/// are written with non-temporal stores (outputs larger than the caches: kStreamBytes). `flatten`
/// inlines all of f: GCC would otherwise call tanh_ or expk2 once per batch, passing and returning
/// vectors through memory (30% slower). Four batches go through f at a time: f is one long chain of
/// dependent operations (tanh's is about 150), and the out-of-order core cannot look far enough ahead
/// to overlap one batch's chain with the next. Four independent chains in one loop body, interleaved
/// by GCC's first scheduling pass (src/meson.build gives the vec_math files -fschedule-insns), run
/// tanh 1.47x, gelu 1.13x and exp 1.08x faster on 64K floats in the caches here (AVX-512). Inputs of
/// kPrefetchBytes and more are prefetched 4 KiB ahead: while the core is busy with f, the hardware
/// prefetcher alone fetches too little (exp on 16M floats, an Intel Xeon of family 6 model 207,
/// non-temporal stores, alternating runs: 10-11 GB/s -> 12-13 GB/s; gelu 7.0-7.9 -> 7.9-9.5).
/// Every lane's operations are the same, so the bits are too.
template <class B, class F>
[[gnu::flatten]] void map1(const typename B::value_type* x, typename B::value_type* y, std::int64_t n, F f,
                           bool stream) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    const bool prefetch = n * static_cast<std::int64_t>(sizeof(T)) >= kPrefetchBytes;
    std::int64_t i = 0;
    if (stream) {
        i = until_aligned<B>(y, n);
        padded1<B>(x, y, i, f);
    }
    for (; i + 4 * kW <= n; i += 4 * kW) {
        if (prefetch) prefetch_ahead(x + i, 4 * sizeof(B));
        const B a = f(B::load_unaligned(x + i)), b = f(B::load_unaligned(x + i + kW));
        const B c = f(B::load_unaligned(x + i + 2 * kW)), d = f(B::load_unaligned(x + i + 3 * kW));
        store_batch(a, y + i, stream);
        store_batch(b, y + i + kW, stream);
        store_batch(c, y + i + 2 * kW, stream);
        store_batch(d, y + i + 3 * kW, stream);
    }
    for (; i + kW <= n; i += kW) store_batch(f(B::load_unaligned(x + i)), y + i, stream);
    // The streamed lines are visible to other threads before the caller signals them (or at the end of
    // the caller's StreamFenceOnce).
    if (stream && !stream_fence_deferred()) _mm_sfence();
    padded1<B>(x + i, y + i, n - i, f);
}

/// map1 with ordinary stores, or non-temporal ones for large outputs where stream_maps() says so: for
/// the maps that compute more than they move (tanh, gelu, log...).
template <class B, class F>
void map1(const typename B::value_type* x, typename B::value_type* y, std::int64_t n, F f);

/// Whether the compute-heavy maps' large outputs (kStreamBytes and more) go out with non-temporal
/// stores: on Intel CPUs, where an ordinary store first reads its line from memory and a map then
/// moves three lines per two it uses (exp on 16M floats, an Intel Xeon of family 6 model 207,
/// alternating runs: 12-20 GB/s with ordinary stores, 12-30 with non-temporal ones; with the
/// prefetch and four batches at a time, 8-10 against 12-13); not on AMD's, where ordinary stores
/// measured faster for them (an EPYC of family 26, 16M floats, 1 thread, alternating runs: tanh 11.6
/// GB/s against 8-11, log 19 against 18; exp, sigmoid and silu, which memory bounds, always stream).
/// (Zen 4, exp on 64 MiB before four batches at a time when streaming: 37 GB/s against 32.)
inline bool stream_maps() {
    static const bool intel = [] {
        __builtin_cpu_init();
        return __builtin_cpu_is("intel") != 0;
    }();
    return intel;
}

template <class B, class F>
void map1(const typename B::value_type* x, typename B::value_type* y, std::int64_t n, F f) {
    map1<B>(x, y, n, f, n * static_cast<std::int64_t>(sizeof(typename B::value_type)) >= kStreamBytes && stream_maps());
}

/// map1 for the cheap maps (relu, sqrt, and exp, sigmoid and silu, whose arithmetic runs faster than
/// memory here), which memory bandwidth limits: non-temporal stores when the output is at least
/// kStreamBytes long, on every CPU (relu on 64 MiB here: 39 GB/s -> 49 GB/s; on an EPYC of family 26,
/// 16M floats, 1 thread, alternating runs: exp 32 -> 51 GB/s, sigmoid 33 -> 47).
template <class B, class F>
void map1_streaming(const typename B::value_type* x, typename B::value_type* y, std::int64_t n, F f) {
    map1<B>(x, y, n, f, n * static_cast<std::int64_t>(sizeof(typename B::value_type)) >= kStreamBytes);
}

/// out[i] = f(a[i], b[i]), as map1 (four batches at a time too: the gelu backward 1.06x; both inputs
/// prefetched when large).
template <class B, class F>
[[gnu::flatten]] void map2(const typename B::value_type* a, const typename B::value_type* b,
                           typename B::value_type* out, std::int64_t n, F f, bool stream) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    const bool prefetch = n * static_cast<std::int64_t>(sizeof(T)) >= kPrefetchBytes;
    std::int64_t i = 0;
    if (stream) {
        i = until_aligned<B>(out, n);
        padded2<B>(a, b, out, i, f);
    }
    for (; i + 4 * kW <= n; i += 4 * kW) {
        if (prefetch) {
            prefetch_ahead(a + i, 4 * sizeof(B));
            prefetch_ahead(b + i, 4 * sizeof(B));
        }
        const B r0 = f(B::load_unaligned(a + i), B::load_unaligned(b + i));
        const B r1 = f(B::load_unaligned(a + i + kW), B::load_unaligned(b + i + kW));
        const B r2 = f(B::load_unaligned(a + i + 2 * kW), B::load_unaligned(b + i + 2 * kW));
        const B r3 = f(B::load_unaligned(a + i + 3 * kW), B::load_unaligned(b + i + 3 * kW));
        store_batch(r0, out + i, stream);
        store_batch(r1, out + i + kW, stream);
        store_batch(r2, out + i + 2 * kW, stream);
        store_batch(r3, out + i + 3 * kW, stream);
    }
    for (; i + kW <= n; i += kW) store_batch(f(B::load_unaligned(a + i), B::load_unaligned(b + i)), out + i, stream);
    if (stream && !stream_fence_deferred()) _mm_sfence();
    padded2<B>(a + i, b + i, out + i, n - i, f);
}

/// map2 with the stores map1 chooses.
template <class B, class F>
void map2(const typename B::value_type* a, const typename B::value_type* b, typename B::value_type* out, std::int64_t n,
          F f) {
    map2<B>(a, b, out, n, f,
            n * static_cast<std::int64_t>(sizeof(typename B::value_type)) >= kStreamBytes && stream_maps());
}

#if defined(__FMA__) || defined(__AVX512F__)
/// c (n×m, row-major) = a·b (+ c when accumulating), a(i, p) = a[i·ars + p·acs], b(p, j) = b[p·brs + j·bcs]:
/// each element one fused multiply-add per term, in order over p from +0, then added to c. That is what
/// OpenBLAS's Haswell, Zen, SkylakeX and Cooperlake kernels compute for k < 8 (matmul.cpp's small path).
template <typename T>
void small_gemm_(const T* a, std::int64_t ars, std::int64_t acs, const T* b, std::int64_t brs, std::int64_t bcs, T* c,
                 std::int64_t n, std::int64_t m, std::int64_t k, bool accumulate) {
    const auto put = [accumulate](T& r, T acc) { r = accumulate ? r + acc : acc; };
    for (std::int64_t i = 0; i < n; ++i) {
        const T* ai = a + i * ars;
        T* ci = c + i * m;
        std::int64_t j = 0;
        for (; j + 4 <= m; j += 4) {  // four independent sums in flight, so the FMAs' latency overlaps
            T s0 = T(0), s1 = T(0), s2 = T(0), s3 = T(0);
            const T* bj = b + j * bcs;
            for (std::int64_t p = 0; p < k; ++p) {
                const T x = ai[p * acs];
                const T* bp = bj + p * brs;
                s0 = std::fma(x, bp[0], s0);
                s1 = std::fma(x, bp[bcs], s1);
                s2 = std::fma(x, bp[2 * bcs], s2);
                s3 = std::fma(x, bp[3 * bcs], s3);
            }
            put(ci[j], s0);
            put(ci[j + 1], s1);
            put(ci[j + 2], s2);
            put(ci[j + 3], s3);
        }
        for (; j < m; ++j) {
            T s = T(0);
            for (std::int64_t p = 0; p < k; ++p) s = std::fma(ai[p * acs], b[p * brs + j * bcs], s);
            put(ci[j], s);
        }
    }
}
#endif

/// The lanes of a batch of B where the bools at c are true (a bool is one byte, 0 or 1). On AVX-512
/// a byte test gives the mask register directly; on AVX2 the bytes are widened to the lanes' width;
/// elsewhere they are gathered through a small array.
template <class B>
typename B::batch_bool_type lanes_of(const bool* c) {
    using T = typename B::value_type;
    constexpr std::size_t kW = B::size;
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>) {
        const __m128i bytes = kW == 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(c))
                                       : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(c));
        const auto bits = _mm_test_epi8_mask(bytes, bytes);
        if constexpr (kW == 16)
            return typename B::batch_bool_type(static_cast<__mmask16>(bits));
        else
            return typename B::batch_bool_type(static_cast<__mmask8>(bits));
    }
#endif
#if defined(__AVX2__)
    if constexpr (std::is_same_v<typename B::arch_type, xsimd::fma3<xsimd::avx2>>) {
        if constexpr (kW == 8) {
            const __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)));
            return typename B::batch_bool_type(_mm256_castsi256_ps(_mm256_cmpgt_epi32(wide, _mm256_setzero_si256())));
        } else {
            std::int32_t four;
            std::memcpy(&four, c, 4);
            const __m256i wide = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(four));
            return typename B::batch_bool_type(_mm256_castsi256_pd(_mm256_cmpgt_epi64(wide, _mm256_setzero_si256())));
        }
    }
#endif
    alignas(64) T ones[kW];
    for (std::size_t l = 0; l < kW; ++l) ones[l] = c[l] ? T(1) : T(0);
    return B::load_aligned(ones) != B(T(0));
}

/// u where u is NaN, else v where v is NaN, else m (maximum's and minimum's NaN propagation).
template <class B>
B nan_first(const B& u, const B& v, const B& m) {
    return xsimd::select(xsimd::isnan(u), u, xsimd::select(xsimd::isnan(v), v, m));
}

/// PyTorch 1.13's vectorised logaddexp (kBase2 false) or logaddexp2: maximum(a, b) + log(1 + exp(d)) or
/// + log2(1 + pow(2, d)) with d = -|a - b| (the sign flipped, as its neg()), SLEEF's functions; a where
/// a and b are the same infinity.
template <class B, bool kBase2>
B log_add_exp_(const B& a, const B& b) {
    using T = typename B::value_type;
    const B one(T(1));
    const B d = mulsign(xsimd::abs(a - b), B(T(-1)));
    const B t = kBase2 ? log2_(one + pow_tensor_(B(T(2)), d)) : log_(one + exp_(d));
    return xsimd::select((a == b) && (xsimd::abs(a) == infinity<B>()), a, nan_first(a, b, xsimd::max(a, b)) + t);
}

/// Calls run(a_run, b_run) with std::true_type for an operand read as a run (step 1) and
/// std::false_type for one read as a single value (step 0): a loop of its own for each combination.
template <class F>
void by_steps(std::int64_t a_step, std::int64_t b_step, F&& run) {
    if (a_step == 1 && b_step == 1)
        run(std::true_type{}, std::true_type{});
    else if (a_step == 1)
        run(std::true_type{}, std::false_type{});
    else if (b_step == 1)
        run(std::false_type{}, std::true_type{});
    else
        run(std::false_type{}, std::false_type{});
}

/// vec_math.hpp's lanes_sum (kProducts false) and lanes_dot (true): PyTorch's AVX2 lanes, here an
/// array the compiler keeps in registers.
template <class B, bool kProducts>
[[gnu::flatten]] typename B::value_type lanes_reduce_(const typename B::value_type* a, const typename B::value_type* b,
                                                      std::int64_t n) {
    using T = typename B::value_type;
    constexpr std::int64_t kL = 32 / static_cast<std::int64_t>(sizeof(T));
    auto term = [&](std::int64_t i) { return kProducts ? a[i] * b[i] : a[i]; };
    auto add = [&](std::int64_t i, T acc) { return kProducts ? mla_s<B>(a[i], b[i], acc) : acc + a[i]; };
    if (n < kL) {  // PyTorch's vec_reduce_all over the `n` lanes of one partly loaded register, in order
        T s = n > 0 ? term(0) : T(0);
        for (std::int64_t i = 1; i < n; ++i) s += term(i);
        return s;
    }
    T acc[kL];
    for (std::int64_t k = 0; k < kL; ++k) acc[k] = term(k);
    std::int64_t d = kL;
    for (; d + kL <= n; d += kL)
        for (std::int64_t k = 0; k < kL; ++k) acc[k] = add(d + k, acc[k]);
    for (std::int64_t k = 0; d + k < n; ++k) acc[k] = add(d + k, acc[k]);
    return combine_lanes(acc);
}

/// vec_math.hpp's norm_row: PyTorch 1.13's NormOneOps, NormTwoOps and NormOps (binary_kernel_reduce,
/// along the row), and for `lanes` its float fast path over the innermost dims (norm_two_reduce_step).
template <class B>
typename B::value_type norm_row_(const typename B::value_type* x, std::int64_t n, typename B::value_type p,
                                 bool lanes) {
    using T = typename B::value_type;
    T s = 0;
    std::int64_t i = 0;
    if (p == T(2)) {
        if (lanes) {
            T acc[8] = {};
            for (; i + 8 <= n; i += 8)
                for (int k = 0; k < 8; ++k) acc[k] = mla_s<B>(x[i + k], x[i + k], acc[k]);
            s = acc[0];
            for (int k = 1; k < 8; ++k) s += acc[k];
            // The rest as PyTorch's build computes its scalar loop: four at a time with each square
            // rounded (the loop its compiler unrolled), the last one to three fused.
            for (; i + 4 <= n; i += 4)
                for (int k = 0; k < 4; ++k) s += x[i + k] * x[i + k];
        }
        for (; i < n; ++i) s = mla_s<B>(x[i], x[i], s);
        return std::sqrt(s);
    }
    if (p == T(1)) {
        for (; i < n; ++i) s += std::abs(x[i]);
        return s;
    }
    for (; i < n; ++i) s += std::pow(std::abs(x[i]), p);
    return std::pow(s, T(1) / p);
}

/// vec_math.hpp's vlerp.
template <class B>
[[gnu::flatten]] void lerp_(const typename B::value_type* a, const typename B::value_type* b,
                            const typename B::value_type* w, std::int64_t w_step, typename B::value_type* y,
                            std::int64_t n) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    const B half(T(0.5)), one(T(1));
    auto at = [&](std::int64_t i, const B& wv) {
        const B av = B::load_unaligned(a + i), bv = B::load_unaligned(b + i), d = bv - av;
        return xsimd::select(wv < half, mla(wv, d, av), mla(-d, one - wv, bv));
    };
    std::int64_t i = 0;
    if (w_step == 0) {
        const B wv(w[0]);
        for (; i + kW <= n; i += kW) at(i, wv).store_unaligned(y + i);
    } else {
        for (; i + kW <= n; i += kW) at(i, B::load_unaligned(w + i)).store_unaligned(y + i);
    }
    for (; i < n; ++i) {
        const T wi = w[i * w_step], d = b[i] - a[i];
        y[i] = wi < T(0.5) ? mla_s<B>(wi, d, a[i]) : mla_s<B>(-d, T(1) - wi, b[i]);
    }
}

/// vec_math.hpp's vmla.
template <class B>
void mla_(const typename B::value_type* a, const typename B::value_type* b, const typename B::value_type* c,
          typename B::value_type* y, std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    std::int64_t i = 0;
    for (; i + kW <= n; i += kW)
        mla(B::load_unaligned(a + i), B::load_unaligned(b + i), B::load_unaligned(c + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = mla_s<B>(a[i], b[i], c[i]);
}

/// vec_math.hpp's vselect.
template <class B>
void select_(const bool* c, const typename B::value_type* a, std::int64_t a_step, const typename B::value_type* b,
             std::int64_t b_step, typename B::value_type* y, std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    std::int64_t i = 0;
    auto run = [&](auto a_run, auto b_run) {
        const B a0(a[0]), b0(b[0]);
        for (; i + kW <= n; i += kW) {
            const B av = a_run ? B::load_unaligned(a + i) : a0, bv = b_run ? B::load_unaligned(b + i) : b0;
            xsimd::select(lanes_of<B>(c + i), av, bv).store_unaligned(y + i);
        }
    };
    by_steps(a_step, b_step, run);
    for (; i < n; ++i) y[i] = c[i] ? a[i * a_step] : b[i * b_step];
}

/// Lane l's bit of a batch_bool at bit l (x86's movemask; AVX-512's mask register as it is).
template <class B>
std::uint32_t bits_of(const typename B::batch_bool_type& m) {
    using T = typename B::value_type;
    using A = typename B::arch_type;
    if constexpr (std::is_base_of_v<xsimd::avx512f, A>) {
        return static_cast<std::uint32_t>(static_cast<typename B::batch_bool_type::register_type>(m));
    } else if constexpr (std::is_base_of_v<xsimd::avx, A>) {
#if defined(__AVX__)
        if constexpr (std::is_same_v<T, float>)
            return static_cast<std::uint32_t>(_mm256_movemask_ps(m));
        else
            return static_cast<std::uint32_t>(_mm256_movemask_pd(m));
#endif
    } else {
        if constexpr (std::is_same_v<T, float>)
            return static_cast<std::uint32_t>(_mm_movemask_ps(m));
        else
            return static_cast<std::uint32_t>(_mm_movemask_pd(m));
    }
}

/// kSpread[b]: the eight bits of b as eight bytes of 0 or 1 (a bool each), bit 0 first in memory.
constexpr auto kSpread = [] {
    std::array<std::uint64_t, 256> t{};
    for (std::uint64_t b = 0; b < 256; ++b)
        for (int k = 0; k < 8; ++k) t[b] |= ((b >> k) & 1u) << (8 * k);
    return t;
}();

/// Writes the lanes of m as kW bools at y.
template <class B>
void store_bools(const typename B::batch_bool_type& m, bool* y) {
    constexpr std::size_t kW = B::size;
    const std::uint32_t bits = bits_of<B>(m);
    if constexpr (kW >= 8) {
        for (std::size_t k = 0; k < kW / 8; ++k) std::memcpy(y + 8 * k, &kSpread[(bits >> (8 * k)) & 0xffu], 8);
    } else {
        std::memcpy(y, &kSpread[bits], kW);
    }
}

/// vec_math.hpp's vcompare for one op: Op compares two batches and, for the tail, two values.
template <class B, class Op>
void compare_(const typename B::value_type* a, std::int64_t a_step, const typename B::value_type* b,
              std::int64_t b_step, bool* y, std::int64_t n) {
    constexpr std::int64_t kW = B::size;
    const Op op;
    std::int64_t i = 0;
    auto run = [&](auto a_run, auto b_run) {
        const B a0(a[0]), b0(b[0]);
        for (; i + kW <= n; i += kW)
            store_bools<B>(op(a_run ? B::load_unaligned(a + i) : a0, b_run ? B::load_unaligned(b + i) : b0), y + i);
    };
    by_steps(a_step, b_step, run);
    for (; i < n; ++i) y[i] = op(a[i * a_step], b[i * b_step]);
}

/// Not-equal as "not ==", true for NaN: xsimd 8.1's AVX and AVX-512 != is an ordered compare
/// (false for NaN), its SSE2 one is not.
struct NotEqual {
    template <class U>
    auto operator()(const U& u, const U& v) const {
        return !(u == v);
    }
};

/// VecMathKernels::compare, in Compare's order.
template <class B>
void set_compares(void (*table[6])(const typename B::value_type*, std::int64_t, const typename B::value_type*,
                                   std::int64_t, bool*, std::int64_t)) {
    table[static_cast<int>(Compare::kEq)] = compare_<B, std::equal_to<>>;
    table[static_cast<int>(Compare::kNe)] = compare_<B, NotEqual>;
    table[static_cast<int>(Compare::kLt)] = compare_<B, std::less<>>;
    table[static_cast<int>(Compare::kLe)] = compare_<B, std::less_equal<>>;
    table[static_cast<int>(Compare::kGt)] = compare_<B, std::greater<>>;
    table[static_cast<int>(Compare::kGe)] = compare_<B, std::greater_equal<>>;
}

/// vec_math.hpp's row_extreme_index: one pass with four accumulators of max (or min) and of NaN
/// lanes, then one to the first element equal to the extreme (or the first NaN), a batch at a time.
template <class B, bool kMax>
std::int64_t row_extreme_index_(const typename B::value_type* x, std::int64_t n) {
    using T = typename B::value_type;
    constexpr std::int64_t kW = B::size;
    auto pick = [](const auto& a, const auto& b) {
        if constexpr (kMax)
            return xsimd::max(a, b);
        else
            return xsimd::min(a, b);
    };
    auto pick_one = [](T a, T b) { return kMax ? std::max(a, b) : std::min(a, b); };
    std::int64_t i = 0;
    T best = x[0];
    bool nan = false;
    if (n >= kW) {
        B a0 = B::load_unaligned(x), a1 = a0, a2 = a0, a3 = a0;
        auto unordered = xsimd::isnan(a0);
        for (i = kW; i + 4 * kW <= n; i += 4 * kW) {
            const B v0 = B::load_unaligned(x + i), v1 = B::load_unaligned(x + i + kW);
            const B v2 = B::load_unaligned(x + i + 2 * kW), v3 = B::load_unaligned(x + i + 3 * kW);
            unordered = unordered || xsimd::isnan(v0) || xsimd::isnan(v1) || xsimd::isnan(v2) || xsimd::isnan(v3);
            a0 = pick(a0, v0);
            a1 = pick(a1, v1);
            a2 = pick(a2, v2);
            a3 = pick(a3, v3);
        }
        for (; i + kW <= n; i += kW) {
            const B v = B::load_unaligned(x + i);
            unordered = unordered || xsimd::isnan(v);
            a0 = pick(a0, v);
        }
        nan = xsimd::any(unordered);
        alignas(64) T lanes[kW];
        pick(pick(a0, a1), pick(a2, a3)).store_aligned(lanes);
        best = lanes[0];
        for (std::int64_t l = 1; l < kW; ++l) best = pick_one(best, lanes[l]);
    }
    for (; i < n; ++i) {
        nan = nan || x[i] != x[i];
        best = pick_one(best, x[i]);
    }
    // The first NaN, or the first element equal to the extreme (of +0 and -0, the first).
    const B target(best);
    for (i = 0; i + kW <= n; i += kW) {
        const B v = B::load_unaligned(x + i);
        const auto hit = nan ? xsimd::isnan(v) : v == target;
        if (xsimd::any(hit))
            for (std::int64_t j = i;; ++j)
                if (nan ? x[j] != x[j] : x[j] == best) return j;
    }
    for (; i < n; ++i)
        if (nan ? x[i] != x[i] : x[i] == best) return i;
    return 0;  // not reached: the extreme is one of the elements
}

/// vec_math.hpp's softmax_rows: per row, PyTorch 1.13's _vec_softmax_lastdim (exp(x - max), its sum in
/// reduce_all's order, a multiply by the sum's reciprocal) or _vec_log_softmax_lastdim ((x - max) - log
/// of that sum), the steps softmax.cpp called one by one before: five calls a row cost more than the
/// arithmetic of rows of a few dozen (attention's). Every element gets the same operations as then.
template <class B>
[[gnu::flatten]] void softmax_rows_(const typename B::value_type* x, typename B::value_type* y, std::int64_t rows,
                                    std::int64_t n, bool log) {
    using T = typename B::value_type;
    if (n <= 0) return;
    constexpr std::int64_t kW = B::size;
    const auto row_bytes = static_cast<std::size_t>(n) * sizeof(T);
    const bool prefetch = rows * n * static_cast<std::int64_t>(sizeof(T)) >= kPrefetchBytes;
    for (std::int64_t r = 0; r < rows; ++r, x += n, y += n) {
        if (prefetch) prefetch_ahead(x, row_bytes);
        // The row's max, NaN if it holds one (PyTorch's vec::maximum propagates it). Of +0 and -0 either
        // may come out: x - max and so exp(x - max) are the same for both.
        T mx = x[0];
        bool nan = false;
        std::int64_t i = 0;
        if (n >= kW) {
            B a = B::load_unaligned(x);
            auto unordered = xsimd::isnan(a);
            for (i = kW; i + kW <= n; i += kW) {
                const B v = B::load_unaligned(x + i);
                unordered = unordered || xsimd::isnan(v);
                a = xsimd::max(a, v);
            }
            nan = xsimd::any(unordered);
            alignas(64) T lanes[kW];
            a.store_aligned(lanes);
            mx = lanes[0];
            for (std::int64_t l = 1; l < kW; ++l) mx = std::max(mx, lanes[l]);
        }
        for (; i < n; ++i) {
            nan = nan || std::isnan(x[i]);
            mx = std::max(mx, x[i]);
        }
        const B m(nan ? std::numeric_limits<T>::quiet_NaN() : mx);
        map1<B>(x, y, n, [m](const B& v) { return exp_(v - m); });
        const T s = lanes_reduce_<B, false>(y, nullptr, n);
        if (log) {
            alignas(64) T buf[B::size] = {s};
            log_(B::load_aligned(buf)).store_aligned(buf);
            map1<B>(x, y, n, [m, ls = B(buf[0])](const B& v) { return (v - m) - ls; });
        } else {
            map1<B>(y, y, n, [r = B(T(1) / s)](const B& v) { return v * r; });
        }
    }
}

/// vec_math.hpp's softmax_backward_rows: per row, (g - Σ g·out) · out, or g - exp(out) Σ g in one fused
/// multiply-add (where the instruction set has FMA), the sums in lanes_dot's and lanes_sum's orders.
template <class B>
[[gnu::flatten]] void softmax_backward_rows_(const typename B::value_type* g, const typename B::value_type* o,
                                             typename B::value_type* dx, std::int64_t rows, std::int64_t n, bool log) {
    const auto row_bytes = static_cast<std::size_t>(n) * sizeof(typename B::value_type);
    const bool prefetch = rows * n * static_cast<std::int64_t>(sizeof(typename B::value_type)) >= kPrefetchBytes;
    for (std::int64_t r = 0; r < rows; ++r, g += n, o += n, dx += n) {
        if (prefetch) {
            prefetch_ahead(g, row_bytes);
            prefetch_ahead(o, row_bytes);
        }
        if (log) {
            const B s(lanes_reduce_<B, false>(g, nullptr, n));
            map2<B>(
                g, o, dx, n, [s](const B& u, const B& v) { return mla(-exp_(v), s, u); }, false);
        } else {
            const B s(lanes_reduce_<B, true>(g, o, n));
            map2<B>(
                g, o, dx, n, [s](const B& u, const B& v) { return (u - s) * v; }, false);
        }
    }
}

/// min(max(x + 3, 0), 6) as hardsigmoid and hardswish compute it: NaN stays NaN.
template <class B>
B hard_clamp(const B& x) {
    using T = typename B::value_type;
    const B lo = xsimd::select(x + B(T(3)) < B(T(0)), B(T(0)), x + B(T(3)));
    return xsimd::select(B(T(6)) < lo, B(T(6)), lo);
}

/// VecMathKernels::scalar_map: vec_math.hpp's ScalarMap, each a cheap map that memory bandwidth limits
/// (non-temporal stores when the caller asks), except softplus, which computes more than it moves and
/// never streams.
template <class B>
void set_scalar_maps(void (*table[kScalarMapCount])(const typename B::value_type*, typename B::value_type,
                                                    typename B::value_type, typename B::value_type*, std::int64_t,
                                                    bool)) {
    using T = typename B::value_type;
    auto at = [&](ScalarMap op) -> auto& {
        return table[static_cast<int>(op)];
    };
    at(ScalarMap::kNeg) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        // the sign bit flipped, as PyTorch (xsimd 8.1 negates avx512 batches as 0 - x: +0 for +0, NaN unflipped)
        map1<B>(
            x, y, n, [](const B& v) { return v ^ B(T(-0.0)); }, stream);
    };
    at(ScalarMap::kAbs) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return xsimd::abs(v); }, stream);
    };
    at(ScalarMap::kSquare) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return v * v; }, stream);
    };
    at(ScalarMap::kCube) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return v * v * v; }, stream);
    };
    at(ScalarMap::kReciprocal) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return B(T(1)) / v; }, stream);
    };
    at(ScalarMap::kAdd) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return v + ab; }, stream);
    };
    at(ScalarMap::kSub) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return v - ab; }, stream);
    };
    at(ScalarMap::kRsub) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return ab - v; }, stream);
    };
    at(ScalarMap::kMul) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return v * ab; }, stream);
    };
    at(ScalarMap::kDiv) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return v / ab; }, stream);
    };
    at(ScalarMap::kRdiv) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return ab / v; }, stream);
    };
    at(ScalarMap::kClamp) = [](const T* x, T a, T b, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n,
            [ab = B(a), bb = B(b)](const B& v) {
                const B low = xsimd::select(v < ab, ab, v);
                return xsimd::select(bb < low, bb, low);
            },
            stream);
    };
    // The rounding maps are exact: every instruction set gives C's floor, ceil, nearbyint and trunc.
    // xsimd 8.1's SSE2 floor, ceil and trunc lose the sign of a zero result (-0.3 -> +0 for ceil); the
    // result of each has x's sign, so it is put back.
    at(ScalarMap::kFloor) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return floor_defined(v) | xsimd::bitofsign(v); }, stream);
    };
    at(ScalarMap::kCeil) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return ceil_defined(v) | xsimd::bitofsign(v); }, stream);
    };
    at(ScalarMap::kRound) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return xsimd::nearbyint(v); }, stream);
    };
    at(ScalarMap::kTrunc) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return trunc_defined(v) | xsimd::bitofsign(v); }, stream);
    };
    at(ScalarMap::kSign) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n,
            [](const B& v) {
                const B zero(T(0)), one(T(1));
                return xsimd::select(zero < v, one, zero) - xsimd::select(v < zero, one, zero);
            },
            stream);
    };
    at(ScalarMap::kLeakyRelu) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [ab = B(a)](const B& v) { return xsimd::select(v > B(T(0)), v, v * ab); }, stream);
    };
    at(ScalarMap::kSoftplus) = [](const T* x, T a, T b, T* y, std::int64_t n, bool) {
        map1<B>(x, y, n, [ab = B(a), bb = B(b)](const B& v) { return softplus_(v, ab, bb); });
    };
    at(ScalarMap::kHardsigmoid) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return hard_clamp(v) / B(T(6)); }, stream);
    };
    at(ScalarMap::kHardswish) = [](const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n, [](const B& v) { return v * hard_clamp(v) / B(T(6)); }, stream);
    };
    // PyTorch's loss kernels: both branches for every lane, then a blend on z < a (NaN takes the second).
    at(ScalarMap::kSmoothL1) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n,
            [ab = B(a), half = B(T(0.5) * a)](const B& v) {
                const B z = xsimd::abs(v);
                return xsimd::select(z < ab, B(T(0.5)) * z * z / ab, z - half);
            },
            stream);
    };
    at(ScalarMap::kHuber) = [](const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map1<B>(
            x, y, n,
            [ab = B(a), half = B(T(0.5) * a)](const B& v) {
                const B z = xsimd::abs(v);
                return xsimd::select(z < ab, B(T(0.5)) * z * z, ab * (z - half));
            },
            stream);
    };
}

/// vec_math.hpp's GradMap kernels, each the scalar formula's operations lane by lane.
template <class B>
void set_grad_maps(void (*table[kGradMapCount])(const typename B::value_type*, const typename B::value_type*,
                                                typename B::value_type, typename B::value_type, typename B::value_type*,
                                                std::int64_t, bool)) {
    using T = typename B::value_type;
    table[static_cast<int>(GradMap::kLeakyRelu)] = [](const T* g, const T* x, T a, T, T* y, std::int64_t n,
                                                      bool stream) {
        map2<B>(
            g, x, y, n, [ab = B(a)](const B& u, const B& v) { return xsimd::select(v > B(T(0)), u, u * ab); }, stream);
    };
    table[static_cast<int>(GradMap::kHardtanh)] = [](const T* g, const T* x, T a, T b, T* y, std::int64_t n,
                                                     bool stream) {
        map2<B>(
            g, x, y, n,
            [ab = B(a), bb = B(b)](const B& u, const B& v) { return xsimd::select(v > ab && v < bb, u, B(T(0))); },
            stream);
    };
    table[static_cast<int>(GradMap::kHardsigmoid)] = [](const T* g, const T* x, T, T, T* y, std::int64_t n,
                                                        bool stream) {
        map2<B>(
            g, x, y, n,
            [](const B& u, const B& v) {
                // PyTorch's grad * (1/6 as a float), for doubles too
                return xsimd::select(v > B(T(-3)) && v < B(T(3)), u * B(T(1.0f / 6.0f)), B(T(0)));
            },
            stream);
    };
    table[static_cast<int>(GradMap::kSoftplus)] = [](const T* g, const T* x, T a, T b, T* y, std::int64_t n, bool) {
        // PyTorch's: z = exp(x * beta), g where x * beta > threshold, else g * z / (z + 1)
        map2<B>(g, x, y, n, [ab = B(a), bb = B(b)](const B& u, const B& v) {
            const B z = exp_(v * ab);
            return xsimd::select(v * ab > bb, u, u * z / (z + B(T(1))));
        });
    };
    table[static_cast<int>(GradMap::kLogSoftmax)] = [](const T* g, const T* x, T a, T, T* y, std::int64_t n, bool) {
        // PyTorch's x - exp(y) * sum, which GCC fuses in its AVX2 build
        map2<B>(g, x, y, n, [ab = B(a)](const B& u, const B& v) { return mla(-exp_(v), ab, u); });
    };
    table[static_cast<int>(GradMap::kHardswish)] = [](const T* g, const T* x, T, T, T* y, std::int64_t n, bool stream) {
        map2<B>(
            g, x, y, n,
            [](const B& u, const B& v) {
                return xsimd::select(v < B(T(-3)), B(T(0)),
                                     xsimd::select(v >= B(T(3)), u, u * (v / B(T(3)) + B(T(0.5)))));
            },
            stream);
    };
    // The vector formulas of PyTorch's smooth_l1 and huber backward kernels: the clamped slope, times the
    // norm, times g.
    table[static_cast<int>(GradMap::kSmoothL1)] = [](const T* g, const T* x, T a, T b, T* y, std::int64_t n,
                                                     bool stream) {
        map2<B>(
            g, x, y, n,
            [ab = B(a), bb = B(b)](const B& u, const B& v) {
                const B sign = xsimd::select(v > B(T(0)), B(T(1)), B(T(-1)));
                return xsimd::select(xsimd::abs(v) >= ab, sign, v / ab) * bb * u;
            },
            stream);
    };
    table[static_cast<int>(GradMap::kHuber)] = [](const T* g, const T* x, T a, T b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            g, x, y, n,
            [ab = B(a), bb = B(b)](const B& u, const B& v) {
                const B edge = xsimd::select(v > B(T(0)), B(T(1)), B(T(-1))) * ab;  // -0 for a = 0
                return xsimd::select(xsimd::abs(v) >= ab, edge, v) * bb * u;
            },
            stream);
    };
    table[static_cast<int>(GradMap::kPow)] = [](const T* g, const T* x, T a, T, T* y, std::int64_t n, bool stream) {
        map2<B>(
            g, x, y, n, [ab = B(a)](const B& u, const B& v) { return u * (v * ab); }, stream);
    };
}

template <class T, class A>
VecMathKernels<T> kernels_for() {
    using B = xsimd::batch<T, A>;
    VecMathKernels<T> k{};
    k.unary[kExp] = [](const T* x, T* y, std::int64_t n) {
        map1_streaming<B>(x, y, n, [](const B& v) { return exp_(v); });
    };
    k.unary[kLog] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return log_(v); }); };
    k.unary[kTanh] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return tanh_(v); }); };
    k.unary[kSigmoid] = [](const T* x, T* y, std::int64_t n) {
        map1_streaming<B>(x, y, n, [](const B& v) { return sigmoid_(v); });
    };
    k.unary[kErf] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return erf_(v); }); };
    k.unary[kGelu] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return gelu_(v); }); };
    k.unary[kGeluErf] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return gelu_erf_(v); });
    };
    k.unary[kSilu] = [](const T* x, T* y, std::int64_t n) {
        map1_streaming<B>(x, y, n, [](const B& v) { return silu_(v); });
    };
    k.unary[kLog1p] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return log1p_(v); }); };
    k.unary[kSin] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return sin_cos_<B, false>(v); });
    };
    k.unary[kCos] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return sin_cos_<B, true>(v); });
    };
    k.unary[kTan] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return tan_(v); }); };
    k.unary[kAtan] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return atan_(v); }); };
    k.atan2 = [](const T* y, const T* x, T* out, std::int64_t n) {
        map2<B>(y, x, out, n, [](const B& u, const B& v) { return atan2_(u, v); });
    };
    k.unary[kAsin] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return asin_(v); }); };
    k.unary[kAcos] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return acos_(v); }); };
    k.unary[kSinh] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return sinh_cosh_<B, false>(v); });
    };
    k.unary[kCosh] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return sinh_cosh_<B, true>(v); });
    };
    k.unary[kLog2] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return log2_(v); }); };
    k.unary[kLog10] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return log10_(v); }); };
    k.unary[kExpm1] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return expm1_(v); }); };
    k.unary[kMish] = [](const T* x, T* y, std::int64_t n) { map1<B>(x, y, n, [](const B& v) { return mish_(v); }); };
    k.unary[kLogSigmoid] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return log_sigmoid_(v); });
    };
    k.backward[kMishBackward] = [](const T* g, const T* x, T* dx, std::int64_t n) {
        map2<B>(g, x, dx, n, [](const B& gv, const B& xv) { return mish_backward_(gv, xv); });
    };
    k.backward[kLogSigmoidBackward] = [](const T* g, const T* x, T* dx, std::int64_t n) {
        map2<B>(g, x, dx, n, [](const B& gv, const B& xv) { return log_sigmoid_backward_(gv, xv); });
    };
    k.unary[kGeluTanh] = [](const T* x, T* y, std::int64_t n) {
        map1<B>(x, y, n, [](const B& v) { return gelu_tanh_(v); });
    };
    k.unary[kSqrt] = [](const T* x, T* y, std::int64_t n) {
        map1_streaming<B>(x, y, n, [](const B& v) { return xsimd::sqrt(v); });
    };
    k.unary[kRsqrt] = [](const T* x, T* y, std::int64_t n) {
        map1_streaming<B>(x, y, n, [](const B& v) { return B(T(1)) / xsimd::sqrt(v); });
    };
    k.unary[kRelu] = [](const T* x, T* y, std::int64_t n) {
        // where, not max: NaN stays NaN and -0 stays -0, as PyTorch's relu
        map1_streaming<B>(x, y, n, [](const B& v) { return xsimd::select(v < B(T(0)), B(T(0)), v); });
    };
    each_of<4>([&](auto o) {
        k.arith_rows[o][0] = arith_rows_<B, o, RowOperands::kBoth>;
        k.arith_rows[o][1] = arith_rows_<B, o, RowOperands::kLeftPerRow>;
        k.arith_rows[o][2] = arith_rows_<B, o, RowOperands::kRightPerRow>;
    });
    k.arith[kArithAdd] = [](const T* a, const T* b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            a, b, y, n, [](const B& u, const B& v) { return u + v; }, stream);
    };
    k.arith[kArithSub] = [](const T* a, const T* b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            a, b, y, n, [](const B& u, const B& v) { return u - v; }, stream);
    };
    k.arith[kArithMul] = [](const T* a, const T* b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            a, b, y, n, [](const B& u, const B& v) { return u * v; }, stream);
    };
    k.arith[kArithDiv] = [](const T* a, const T* b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            a, b, y, n, [](const B& u, const B& v) { return u / v; }, stream);
    };
    k.arith[kArithReluBackward] = [](const T* g, const T* r, T* y, std::int64_t n, bool stream) {
        // PyTorch's threshold_backward: 0 where the result is <= 0, else g (also where it is NaN)
        map2<B>(
            g, r, y, n, [](const B& u, const B& v) { return xsimd::select(v <= B(T(0)), B(T(0)), u); }, stream);
    };
    k.arith[kArithTanhBackward] = [](const T* g, const T* t, T* y, std::int64_t n, bool stream) {
        map2<B>(
            g, t, y, n, [](const B& u, const B& v) { return u * mla(-v, v, B(T(1))); }, stream);
    };
    k.arith[kArithSigmoidBackward] = [](const T* g, const T* s, T* y, std::int64_t n, bool stream) {
        map2<B>(
            g, s, y, n, [](const B& u, const B& v) { return u * (B(T(1)) - v) * v; }, stream);
    };
    // xsimd's max and min are x86's maxps/minps (a > b ? a : b), NaN taken first from a, then from b,
    // as the scalar formula of vec_math.hpp's varith
    k.arith[kArithMaximum] = [](const T* a, const T* b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            a, b, y, n, [](const B& u, const B& v) { return nan_first(u, v, xsimd::max(u, v)); }, stream);
    };
    k.arith[kArithMinimum] = [](const T* a, const T* b, T* y, std::int64_t n, bool stream) {
        map2<B>(
            a, b, y, n, [](const B& u, const B& v) { return nan_first(u, v, xsimd::min(u, v)); }, stream);
    };
    k.row_extreme_index = [](const T* x, std::int64_t n, bool max) {
        return max ? row_extreme_index_<B, true>(x, n) : row_extreme_index_<B, false>(x, n);
    };
    k.lerp = lerp_<B>;
    k.mla = mla_<B>;
    k.softmax_rows = softmax_rows_<B>;
    k.softmax_backward_rows = softmax_backward_rows_<B>;
    k.lanes_sum = [](const T* x, std::int64_t n) { return lanes_reduce_<B, false>(x, nullptr, n); };
    k.lanes_dot = lanes_reduce_<B, true>;
    k.norm_row = norm_row_<B>;
    k.select = select_<B>;
    set_compares<B>(k.compare);
    set_scalar_maps<B>(k.scalar_map);
    set_grad_maps<B>(k.grad_map);
    k.backward[kGeluBackward] = [](const T* g, const T* x, T* dx, std::int64_t n) {
        map2<B>(g, x, dx, n, [](const B& gv, const B& xv) { return gelu_backward_(gv, xv); });
    };
    k.backward[kGeluErfBackward] = [](const T* g, const T* x, T* dx, std::int64_t n) {
        map2<B>(g, x, dx, n, [](const B& gv, const B& xv) { return gelu_erf_backward_(gv, xv); });
    };
    k.backward[kGeluTanhBackward] = [](const T* g, const T* x, T* dx, std::int64_t n) {
        map2<B>(g, x, dx, n, [](const B& gv, const B& xv) { return gelu_tanh_backward_(gv, xv); });
    };
    k.backward[kSiluBackward] = [](const T* g, const T* x, T* dx, std::int64_t n) {
        map2<B>(g, x, dx, n, [](const B& gv, const B& xv) { return silu_backward_(gv, xv); });
    };
    // glu: PyTorch's glu kernel a * (1 / (1 + exp(-b))); its backward takes s from its sigmoid kernel.
    k.backward[kGlu] = [](const T* a, const T* b, T* y, std::int64_t n) {
        map2<B>(a, b, y, n, [](const B& av, const B& bv) { return av * sigmoid_neg_exp_(bv); });
    };
    k.backward[kGluBackwardFirst] = [](const T* g, const T* b, T* dx, std::int64_t n) {
        map2<B>(g, b, dx, n, [](const B& gv, const B& bv) { return sigmoid_(bv) * gv; });
    };
    k.backward[kGluBackwardSecond] = [](const T* a, const T* b, T* dx, std::int64_t n) {
        map2<B>(a, b, dx, n, [](const B& av, const B& bv) {
            const B s = sigmoid_(bv);
            return (B(typename B::value_type(1)) - s) * s * av;
        });
    };
    k.backward[kLogAddExp] = [](const T* a, const T* b, T* y, std::int64_t n) {
        map2<B>(a, b, y, n, [](const B& av, const B& bv) { return log_add_exp_<B, false>(av, bv); });
    };
    k.backward[kLogAddExp2] = [](const T* a, const T* b, T* y, std::int64_t n) {
        map2<B>(a, b, y, n, [](const B& av, const B& bv) { return log_add_exp_<B, true>(av, bv); });
    };
    // PyTorch's elu kernels: blends of x·pos and the exp formula (computed for every lane, as where
    // any lane is not positive PyTorch computes it for the whole register).
    k.max_pool_taps = max_pool_taps_<B>;
    k.elu = [](const T* x, T* y, std::int64_t n, T pos, T neg, T ipt) {
        map1<B>(x, y, n, [=](const B& v) {
            return xsimd::select(v > B(T(0)), v * B(pos), (exp_(v * B(ipt)) - B(T(1))) * B(neg));
        });
    };
    k.elu_backward = [](const T* g, const T* x, T* dx, std::int64_t n, T pos, T neg, T ipt) {
        map2<B>(g, x, dx, n, [=](const B& gv, const B& xv) {
            return xsimd::select(xv > B(T(0)), gv * B(pos), gv * B(ipt) * B(neg) * exp_(xv * B(ipt)));
        });
    };
    k.pow = [](const T* x, T e, T* y, std::int64_t n) { map1<B>(x, y, n, [e](const B& v) { return pow_(v, e); }); };
    k.pow_tensor = [](const T* x, const T* e, T* y, std::int64_t n) {
        map2<B>(x, e, y, n, [](const B& u, const B& v) { return pow_tensor_(u, v); });
    };
    k.norm_moments_rows = norm_moments_n_<B>;
    k.sum_cascade = sum_cascade_<B>;
    k.sum_rows_serial = sum_rows_serial_<B>;
    k.var_rows = var_rows_<B>;
    k.sq_dev_sum = sq_dev_sum_<B>;
    k.welford_rows = welford_rows_<T>;
#if defined(__FMA__) || defined(__AVX512F__)
    k.small_gemm = small_gemm_<T>;
#else
    k.small_gemm = nullptr;  // without FMA, OpenBLAS's own kernels sum differently: matmul.cpp calls them
#endif
    k.norm_apply = [](const T* x, T scale, T shift, const T* w, const T* b, T* y, std::int64_t n, bool stream,
                      std::int64_t ahead, bool plus_zero) {
        if (w && b)
            norm_apply_<B, true, true, false>(x, scale, shift, w, b, y, n, stream, ahead);
        else if (b)
            norm_apply_<B, false, true, false>(x, scale, shift, w, b, y, n, stream, ahead);
        else if (w && plus_zero)
            norm_apply_<B, true, false, true>(x, scale, shift, w, b, y, n, stream, ahead);
        else if (w)
            norm_apply_<B, true, false, false>(x, scale, shift, w, b, y, n, stream, ahead);
        else if (plus_zero)
            norm_apply_<B, false, false, true>(x, scale, shift, w, b, y, n, stream, ahead);
        else
            norm_apply_<B, false, false, false>(x, scale, shift, w, b, y, n, stream, ahead);
    };
    k.layer_norm_row_backward = [](const T* g, const T* x, const T* w, T rstd, T mean, T* dx, T* acc_w, T* acc_b,
                                   std::int64_t n, bool stream, std::int64_t ahead) {
        if (w)
            layer_norm_row_backward_<B, true>(g, x, w, rstd, mean, dx, acc_w, acc_b, n, stream, ahead);
        else
            layer_norm_row_backward_<B, false>(g, x, w, rstd, mean, dx, acc_w, acc_b, n, stream, ahead);
    };
    k.layer_norm_rows_backward = [](const T* g, const T* x, const T* w, const T* rstd, const T* mean, T* dx, T* acc_w,
                                    T* acc_b, std::int64_t n, std::int64_t rows, bool stream, std::int64_t ahead) {
        constexpr int kRows = 4;
        if (rows == kRows && dx && n >= Reg<B>::kLanes) {
            if (w)
                layer_norm_rows_backward_<B, true, kRows>(g, x, w, rstd, mean, dx, acc_w, acc_b, n, stream, ahead);
            else
                layer_norm_rows_backward_<B, false, kRows>(g, x, w, rstd, mean, dx, acc_w, acc_b, n, stream, ahead);
            return;
        }
        for (std::int64_t r = 0; r < rows; ++r) {
            if (w)
                layer_norm_row_backward_<B, true>(g + r * n, x + r * n, w, rstd[r], mean[r], dx ? dx + r * n : nullptr,
                                                  acc_w, acc_b, n, stream, ahead);
            else
                layer_norm_row_backward_<B, false>(g + r * n, x + r * n, w, rstd[r], mean[r], dx ? dx + r * n : nullptr,
                                                   acc_w, acc_b, n, stream, ahead);
        }
    };
    k.rms_norm_row_terms = [](const T* g, const T* x, const T* w, T rstd, T* quad_sums, T* acc, T* acc_rest,
                              std::int64_t cut, std::int64_t n) {
        if (w)
            rms_norm_row_terms_<B, true>(g, x, w, rstd, quad_sums, acc, acc_rest, cut, n);
        else
            rms_norm_row_terms_<B, false>(g, x, w, rstd, quad_sums, acc, acc_rest, cut, n);
    };
    k.rms_norm_row_dx = [](const T* g, const T* x, const T* w, T rstd, T dms, T* dx, std::int64_t n, bool stream,
                           std::int64_t ahead) {
        if (w)
            rms_norm_row_dx_<B, true>(g, x, w, rstd, dms, dx, n, stream, ahead);
        else
            rms_norm_row_dx_<B, false>(g, x, w, rstd, dms, dx, n, stream, ahead);
    };
    k.batch_norm_row_dx = batch_norm_row_dx_<B>;
    k.cdist_forward_row = [](const T* x, const T* yt, std::int64_t stride, std::int64_t count, std::int64_t m, int p,
                             std::int64_t apart, T* out) {
        if (p == 2)
            cdist_forward_row_<B, 2>(x, yt, stride, count, m, apart, out);
        else
            cdist_forward_row_<B, 1>(x, yt, stride, count, m, apart, out);
    };
    k.cdist_backward_row = [](const T* x, const T* y, const T* g, const T* dist, std::int64_t rows, std::int64_t m,
                              int p, T* res) {
        if (p == 2)
            cdist_backward_row_<B, 2>(x, y, g, dist, rows, m, res);
        else
            cdist_backward_row_<B, 1>(x, y, g, dist, rows, m, res);
    };
    k.lanes_fma_sums = lanes_fma_sums_<B>;
    k.group_norm_row_dx = group_norm_row_dx_<B>;
    k.sgd = sgd_<B>;
    k.axpy = axpy_<B>;
    k.adam = [](T* p, const T* g, T* m, T* v, T* vmax, const AdamCoefficients<T>& c, std::int64_t n) {
        if (vmax)
            adam_<B, true>(p, g, m, v, vmax, c, n);
        else
            adam_<B, false>(p, g, m, v, vmax, c, n);
    };
    return k;
}

}  // namespace

template <class Arch>
const VecMathTable* TableFor::operator()(Arch) const noexcept {
    static const VecMathTable table{Arch::name(), kernels_for<float, Arch>(), kernels_for<double, Arch>()};
    return &table;
}

}  // namespace xgrad::kernels::cpu::detail
