// Vectorised elementwise maths on contiguous arrays, with the instruction set picked at run time.
//
// Internal to libxgrad (no xtensor, no xsimd here). Every function reads n elements of its inputs and
// writes n elements of y; y may be the same array as an input (in place), but must not overlap it
// otherwise. The caller splits large arrays across threads.
//
// Numbers: on AVX2 and AVX-512 machines these are PyTorch 1.13's, bit for bit (tests/test_vec_math.cpp):
// exp, log, tanh, erf and pow follow SLEEF 3.5's u10 algorithms (as PyTorch's AVX2 kernels), sigmoid and
// the gelu forms PyTorch's formulas on top of them, float32 gelu (exact form) oneDNN's, as PyTorch hands
// it to oneDNN. Machines without AVX2+FMA run the same algorithms without fused multiply-adds: see
// vec_math_impl.hpp for how far that moves the results.
#pragma once

#include <cstdint>

namespace xgrad::kernels::cpu {

/// y = exp(x).
void vexp(const float* x, float* y, std::int64_t n);
/// y = exp(x).
void vexp(const double* x, double* y, std::int64_t n);
/// y = log(x) (natural); -inf at 0, nan below.
void vlog(const float* x, float* y, std::int64_t n);
/// y = log(x) (natural); -inf at 0, nan below.
void vlog(const double* x, double* y, std::int64_t n);
/// y = tanh(x).
void vtanh(const float* x, float* y, std::int64_t n);
/// y = tanh(x).
void vtanh(const double* x, double* y, std::int64_t n);
/// y = 1 / (1 + exp(-x)), as PyTorch's vectorised sigmoid computes it.
void vsigmoid(const float* x, float* y, std::int64_t n);
/// y = 1 / (1 + exp(-x)), as PyTorch's vectorised sigmoid computes it.
void vsigmoid(const double* x, double* y, std::int64_t n);
/// y = erf(x).
void verf(const float* x, float* y, std::int64_t n);
/// y = erf(x).
void verf(const double* x, double* y, std::int64_t n);
/// y = x * 0.5 * (1 + erf(x / sqrt(2))), gelu's exact form, with oneDNN's erf (Abramowitz-Stegun 7.1.26).
void vgelu(const float* x, float* y, std::int64_t n);
/// y = x * 0.5 * (1 + erf(x / sqrt(2))), gelu's exact form.
void vgelu(const double* x, double* y, std::int64_t n);
/// y = x * 0.5 * (1 + erf(x / sqrt(2))) by PyTorch's own vectorised formula (SLEEF's erf), which it
/// runs for float32 tensors it does not hand to oneDNN (not contiguous, or of one element).
void vgelu_erf(const float* x, float* y, std::int64_t n);
/// As vgelu for double (the same formula).
void vgelu_erf(const double* x, double* y, std::int64_t n);
/// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), gelu's tanh form.
void vgelu_tanh(const float* x, float* y, std::int64_t n);
/// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), gelu's tanh form.
void vgelu_tanh(const double* x, double* y, std::int64_t n);
/// dx = g * (Phi(x) + x phi(x)): gelu's backward (exact form), with oneDNN's erf and exp.
void vgelu_backward(const float* g, const float* x, float* dx, std::int64_t n);
/// dx = g * (Phi(x) + x phi(x)) by PyTorch's own vectorised formula (as vgelu_erf).
void vgelu_erf_backward(const float* g, const float* x, float* dx, std::int64_t n);
/// As vgelu_backward for double (the same formula).
void vgelu_erf_backward(const double* g, const double* x, double* dx, std::int64_t n);
/// dx = g * (Phi(x) + x phi(x)): gelu's backward (exact form) for upstream gradient g.
void vgelu_backward(const double* g, const double* x, double* dx, std::int64_t n);
/// dx = g * d/dx gelu_tanh(x): the tanh form's backward, PyTorch's formula.
void vgelu_tanh_backward(const float* g, const float* x, float* dx, std::int64_t n);
/// dx = g * d/dx gelu_tanh(x): the tanh form's backward, PyTorch's formula.
void vgelu_tanh_backward(const double* g, const double* x, double* dx, std::int64_t n);
/// One tap of max pooling for `count` windows side by side, as PyTorch 1.13's CPU kernel updates a
/// window: for each j, the value v = x[j·stride] at position at + j·stride replaces the window's
/// maximum m[j] and its position best[j] where v > m[j] or v is NaN (so the first maximum wins, and
/// the last NaN). Positions in 32 bits for float (the caller keeps a plane under 2^31 elements).
void max_pool_taps(const float* x, std::int64_t stride, std::int64_t count, std::int64_t at, float* m,
                   std::int32_t* best);
/// As the float overload, positions in 64 bits.
void max_pool_taps(const double* x, std::int64_t stride, std::int64_t count, std::int64_t at, double* m,
                   std::int64_t* best);
/// The ELU family (elu, celu, selu) as PyTorch 1.13's vectorised kernel computes it: y = x·pos where
/// x > 0, else (exp(x·input_scale) - 1)·neg, exp SLEEF's.
void velu(const float* x, float* y, std::int64_t n, float pos, float neg, float input_scale);
/// As the float overload.
void velu(const double* x, double* y, std::int64_t n, double pos, double neg, double input_scale);
/// The ELU family's backward from the input x, as PyTorch 1.13's vectorised kernel: dx = g·pos where
/// x > 0, else ((g·input_scale)·neg)·exp(x·input_scale).
void velu_backward(const float* g, const float* x, float* dx, std::int64_t n, float pos, float neg, float input_scale);
/// As the float overload.
void velu_backward(const double* g, const double* x, double* dx, std::int64_t n, double pos, double neg,
                   double input_scale);
/// y = x / (1 + exp(-x)): silu, as PyTorch's vectorised kernel computes it.
void vsilu(const float* x, float* y, std::int64_t n);
/// y = x / (1 + exp(-x)): silu, as PyTorch's vectorised kernel computes it.
void vsilu(const double* x, double* y, std::int64_t n);
/// dx = g s (1 + x (1 - s)) with s = 1 / (1 + exp(-x)): silu's backward, PyTorch's formula.
void vsilu_backward(const float* g, const float* x, float* dx, std::int64_t n);
/// dx = g s (1 + x (1 - s)) with s = 1 / (1 + exp(-x)): silu's backward, PyTorch's formula.
void vsilu_backward(const double* g, const double* x, double* dx, std::int64_t n);
/// y = a s, s = 1 / (1 + exp(-b)): glu of the halves a and b, as PyTorch's vectorised glu kernel.
void vglu(const float* a, const float* b, float* y, std::int64_t n);
/// As the float overload.
void vglu(const double* a, const double* b, double* y, std::int64_t n);
/// glu's gradients with s = sigmoid(b) as PyTorch's vectorised sigmoid computes it: first half s g
/// (`second` false), second half (1 - s) s a (`second`; a the first half, passed as g), before its
/// product with the output's gradient.
void vglu_backward(const float* g, const float* b, float* dx, std::int64_t n, bool second);
/// As the float overload.
void vglu_backward(const double* g, const double* b, double* dx, std::int64_t n, bool second);
/// y = max(a, b) + log(1 + exp(-|a - b|)) (or, with `base2`, + log2(1 + pow(2, -|a - b|))), a where a
/// and b are the same infinity: PyTorch's vectorised logaddexp and logaddexp2, SLEEF's functions.
void vlogaddexp(const float* a, const float* b, float* y, std::int64_t n, bool base2);
/// As the float overload.
void vlogaddexp(const double* a, const double* b, double* y, std::int64_t n, bool base2);
/// y = x tanh(log1p(exp(x))): mish, as PyTorch's vectorised kernel computes it.
void vmish(const float* x, float* y, std::int64_t n);
/// y = x tanh(log1p(exp(x))): mish, as PyTorch's vectorised kernel computes it.
void vmish(const double* x, double* y, std::int64_t n);
/// dx = g (t + x s (1 - t t)), s = sigmoid(x), t = tanh(log1p(exp(x))): mish's backward, PyTorch's formula.
void vmish_backward(const float* g, const float* x, float* dx, std::int64_t n);
/// As the float overload.
void vmish_backward(const double* g, const double* x, double* dx, std::int64_t n);
/// y = min(x, 0) - log1p(exp(-|x|)): log_sigmoid, as PyTorch's vectorised kernel computes it.
void vlog_sigmoid(const float* x, float* y, std::int64_t n);
/// y = min(x, 0) - log1p(exp(-|x|)): log_sigmoid, as PyTorch's vectorised kernel computes it.
void vlog_sigmoid(const double* x, double* y, std::int64_t n);
/// log_sigmoid's backward from the input x, PyTorch's formula (with z = exp(-|x|)).
void vlog_sigmoid_backward(const float* g, const float* x, float* dx, std::int64_t n);
/// As the float overload.
void vlog_sigmoid_backward(const double* g, const double* x, double* dx, std::int64_t n);
/// y = sin(x): SLEEF's sin (PyTorch's bits) where |x| < 125 (float) or 15 (double), the C library's sin
/// elsewhere (within an ulp of PyTorch's).
void vsin(const float* x, float* y, std::int64_t n);
/// y = sin(x), as the float overload (|x| < 15 for SLEEF's).
void vsin(const double* x, double* y, std::int64_t n);
/// y = cos(x), as vsin.
void vcos(const float* x, float* y, std::int64_t n);
/// y = cos(x), as vsin.
void vcos(const double* x, double* y, std::int64_t n);
/// y = tan(x): SLEEF's tan (PyTorch's bits) where |x| < 125 (float) or 15 (double), the C library's tan
/// elsewhere (as vsin).
void vtan(const float* x, float* y, std::int64_t n);
/// y = tan(x), as the float overload.
void vtan(const double* x, double* y, std::int64_t n);
/// y = atan(x) (SLEEF's atan, u10).
void vatan(const float* x, float* y, std::int64_t n);
/// y = atan(x) (SLEEF's atan, u10).
void vatan(const double* x, double* y, std::int64_t n);
/// y = asin(x) (SLEEF's asin, u10).
void vasin(const float* x, float* y, std::int64_t n);
/// y = asin(x) (SLEEF's asin, u10).
void vasin(const double* x, double* y, std::int64_t n);
/// y = acos(x) (SLEEF's acos, u10).
void vacos(const float* x, float* y, std::int64_t n);
/// y = acos(x) (SLEEF's acos, u10).
void vacos(const double* x, double* y, std::int64_t n);
/// y = sinh(x) (SLEEF's sinh, u10).
void vsinh(const float* x, float* y, std::int64_t n);
/// y = sinh(x) (SLEEF's sinh, u10).
void vsinh(const double* x, double* y, std::int64_t n);
/// y = cosh(x) (SLEEF's cosh, u10).
void vcosh(const float* x, float* y, std::int64_t n);
/// y = cosh(x) (SLEEF's cosh, u10).
void vcosh(const double* x, double* y, std::int64_t n);
/// y = log2(x) (SLEEF's log2).
void vlog2(const float* x, float* y, std::int64_t n);
/// y = log2(x) (SLEEF's log2).
void vlog2(const double* x, double* y, std::int64_t n);
/// y = log10(x) (SLEEF's log10).
void vlog10(const float* x, float* y, std::int64_t n);
/// y = log10(x) (SLEEF's log10).
void vlog10(const double* x, double* y, std::int64_t n);
/// y = exp(x) - 1 (SLEEF's expm1).
void vexpm1(const float* x, float* y, std::int64_t n);
/// y = exp(x) - 1 (SLEEF's expm1).
void vexpm1(const double* x, double* y, std::int64_t n);
/// y = log(1 + x) (SLEEF's log1p).
void vlog1p(const float* x, float* y, std::int64_t n);
/// y = log(1 + x) (SLEEF's log1p).
void vlog1p(const double* x, double* y, std::int64_t n);
/// y = sqrt(x) (correctly rounded).
void vsqrt(const float* x, float* y, std::int64_t n);
/// y = sqrt(x) (correctly rounded).
void vsqrt(const double* x, double* y, std::int64_t n);
/// y = 1 / sqrt(x) (two correctly rounded operations, as PyTorch).
void vrsqrt(const float* x, float* y, std::int64_t n);
/// y = 1 / sqrt(x) (two correctly rounded operations, as PyTorch).
void vrsqrt(const double* x, double* y, std::int64_t n);
/// y = max(x, 0), written as PyTorch's relu (NaN stays NaN, -0 stays -0).
void vrelu(const float* x, float* y, std::int64_t n);
/// y = max(x, 0), written as PyTorch's relu (NaN stays NaN, -0 stays -0).
void vrelu(const double* x, double* y, std::int64_t n);

/// Outputs of at least this many bytes are written with non-temporal stores, which skip reading the
/// destination first and leave the caches to the inputs. Even an output the next operation reads at
/// once is faster so here (a chain of maps on 12 and 20 MiB took twice as long with the threshold at
/// 32 MiB, docs/performance.md). The maps that memory bandwidth limits stream: vrelu, vsqrt, vrsqrt,
/// vexp, vsigmoid and vsilu, deciding by the length of one call (one thread's share), and varith,
/// whose caller decides for the whole tensor. The other transcendental maps compute more than they
/// move: they stream on Intel CPUs only, where an ordinary store reads its line first
/// (vec_math_impl.hpp's stream_maps).
constexpr std::int64_t kStreamBytes = std::int64_t{8} << 20;

/// A row kernel's second pass, which finds its row in the cache, prefetches a row at least this far
/// on (the `ahead` of norm_apply, norm_backward and var_rows): the lines arrive while that pass works,
/// where the hardware's prefetchers stop at page boundaries. 12 KiB measured best here (4 rows of 768
/// floats; 2 and 8 rows were slower; 1 or 2 rows of 4096 floats for var_rows).
constexpr std::int64_t kAheadBytes = 12 * 1024;

/// Inputs of at least this many bytes are taken to come from beyond the level-2 cache: the
/// transcendental maps (and softmax's rows) prefetch them 4 KiB ahead.
constexpr std::int64_t kPrefetchBytes = std::int64_t{1} << 20;

/// The `ahead` for row r of `rows` contiguous rows of `width` T: the whole rows that span kAheadBytes,
/// while that row exists and the tensor is `large` (at least kStreamBytes: it comes from memory), else 0.
/// (Prefetching from 1 MiB on, as the maps do, did not make the 1024×1500 norms faster here.)
template <typename T>
std::int64_t rows_ahead(bool large, std::int64_t r, std::int64_t rows, std::int64_t width) {
    const std::int64_t row_bytes = width * static_cast<std::int64_t>(sizeof(T));
    if (!large || row_bytes <= 0) return 0;
    const std::int64_t k = (kAheadBytes + row_bytes - 1) / row_bytes;
    return r + k < rows ? k * width : 0;
}

/// The `ahead` for every row of groups of `together` contiguous rows that a kernel reads side by side,
/// row `last` the last one to prefetch with it: together - 1 rows further on than rows_ahead's, so that the
/// group's first row prefetches what its last row would alone and no prefetch falls in the group, whose
/// rows are being read already (var(-1) of 4096x4096 floats, a pair of rows each prefetching one row
/// on, ran at half its speed). 0 where that row does not exist.
template <typename T>
std::int64_t rows_ahead(bool large, std::int64_t last, std::int64_t rows, std::int64_t width, std::int64_t together) {
    const std::int64_t ahead = rows_ahead<T>(large, last, rows, width);
    if (ahead == 0 || together <= 1) return ahead;
    const std::int64_t k = ahead / width + together - 1;
    return last + k < rows ? k * width : 0;
}

/// The two-input maps of varith.
enum class Arith { kAdd, kSub, kMul, kDiv, kReluBackward, kTanhBackward, kSigmoidBackward, kMaximum, kMinimum };

/// y = a + b, a - b, a * b, a / b (each correctly rounded, as PyTorch), relu's backward (0 where
/// b <= 0, else a), tanh's backward from its result b (a * (1 - b * b), 1 - b * b one fused
/// multiply-add where the instruction set has FMA, as PyTorch's compiler fuses it) or sigmoid's
/// (a * (1 - b) * b, PyTorch's order), maximum(a, b) or minimum(a, b) (a where a is NaN, else b where b
/// is NaN, else a > b ? a : b, or a < b ? a : b: of two equal zeros, b),
/// with non-temporal stores when `stream`, which the caller then fences (stream_fence) before another
/// thread may read y: elementwise.cpp's binary() fences once per thread's share, after all of that
/// share's calls. Every other operation is rounded on its own, so they give the same bits on every
/// instruction set.
void varith(Arith op, const float* a, const float* b, float* y, std::int64_t n, bool stream);
/// As the float overload.
void varith(Arith op, const double* a, const double* b, double* y, std::int64_t n, bool stream);

/// Where varith_rows finds its two operands along a row: both run along it, or one of them is a single
/// value per row (a column broadcast across a row).
enum class RowOperands { kBoth, kLeftPerRow, kRightPerRow };
/// out[r·n + k] = a op b for r < rows and k < n, op one of kAdd, kSub, kMul and kDiv (each correctly
/// rounded, as varith), where a = x[r·x_row + k] and b = y[r·y_row + k], or x[r·x_row] for
/// kLeftPerRow and y[r·y_row] for kRightPerRow. One call for many short rows of a broadcast (a row
/// scale x * s with s of shape (n, 1), a channel scale (N, C, H, W) * (1, C, 1, 1), a bias row):
/// elementwise.cpp's binary() used to make a call per row, whose overhead outweighed rows this short.
/// Ordinary stores; the bits are varith's.
void varith_rows(Arith op, RowOperands layout, const float* x, std::int64_t x_row, const float* y, std::int64_t y_row,
                 float* out, std::int64_t n, std::int64_t rows);
/// As the float overload.
void varith_rows(Arith op, RowOperands layout, const double* x, std::int64_t x_row, const double* y, std::int64_t y_row,
                 double* out, std::int64_t n, std::int64_t rows);

/// The gradients of the piecewise activations that vgrad_map computes from the upstream gradient g,
/// the input x and scalars a, b (as kernels/scalar_ops.hpp's formulas).
enum class GradMap {
    kLeakyRelu,    ///< x > 0 ? g : g * a
    kHardtanh,     ///< a < x < b ? g : 0 (NaN gets 0)
    kHardsigmoid,  ///< -3 < x < 3 ? g * (1/6 rounded to float, as PyTorch) : 0
    kHardswish,    ///< x < -3 ? 0 : x >= 3 ? g : g * (x / 3 + 0.5) (NaN where x is NaN)
    kSoftplus,     ///< z = exp(x * a); x * a > b ? g : g * z / (z + 1) (a: beta, b: threshold; never streamed)
    kLogSoftmax,   ///< g - exp(x) * a, one fused multiply-add with FMA (x: log_softmax's output, a: Σg of its row)
    kSmoothL1,     ///< (|x| >= a ? (x > 0 ? 1 : -1) : x / a) * b * g (beta a, norm b)
    kHuber,        ///< (|x| >= a ? (x > 0 ? 1 : -1) * a : x) * b * g (delta a, norm b)
    kPow,          ///< g * (x * a): pow's gradient, x here x^(e-1) and a the exponent e
};
/// How many GradMap values there are.
constexpr int kGradMapCount = static_cast<int>(GradMap::kPow) + 1;
/// y = the gradient `op` of g and x, each element the scalar formula's operations (the same bits on
/// every instruction set); non-temporal stores when `stream`, fenced by the caller (as varith).
void vgrad_map(GradMap op, const float* g, const float* x, float a, float b, float* y, std::int64_t n, bool stream);
/// As the float overload.
void vgrad_map(GradMap op, const double* g, const double* x, double a, double b, double* y, std::int64_t n,
               bool stream);

/// The maps of one tensor x and scalars a, b that vscalar_map computes.
enum class ScalarMap {
    kNeg,          ///< -x
    kAbs,          ///< |x| (the sign bit cleared)
    kSquare,       ///< x * x
    kCube,         ///< (x * x) * x
    kReciprocal,   ///< 1 / x
    kAdd,          ///< x + a
    kSub,          ///< x - a
    kRsub,         ///< a - x
    kMul,          ///< x * a
    kDiv,          ///< x / a
    kRdiv,         ///< a / x
    kClamp,        ///< a where x < a, then b where b < that (NaN stays NaN; b wins when a > b)
    kFloor,        ///< floor(x)
    kCeil,         ///< ceil(x)
    kRound,        ///< x rounded to the nearest integer, half to even
    kTrunc,        ///< x rounded toward zero
    kSign,         ///< (0 < x) - (x < 0): NaN and -0 give +0
    kLeakyRelu,    ///< x > 0 ? x : x * a
    kHardsigmoid,  ///< min(max(x + 3, 0), 6) / 6 (NaN stays NaN)
    kHardswish,    ///< x * min(max(x + 3, 0), 6) / 6
    kSoftplus,     ///< x * a > b ? x : log1p(exp(x * a)) / a (a: beta, b: threshold; never streamed)
    kSmoothL1,     ///< z = |x|: z < a ? 0.5 * z * z / a : z - 0.5 * a (smooth_l1_loss, beta a)
    kHuber,        ///< z = |x|: z < a ? 0.5 * z * z : a * (z - 0.5 * a) (huber_loss, delta a)
};
/// y[i] = PyTorch 1.13's lerp of a[i], b[i] and weight w = w[i * w_step] (a step of 0: one weight
/// for every element): w < 0.5 ? a + w (b - a) : b - (b - a)(1 - w), each a fused multiply-add where
/// the instruction set has FMA (as PyTorch's AVX2 kernel, whose compiler fuses them), two roundings
/// elsewhere (as its default kernel). NaN weights take the second form.
void vlerp(const float* a, const float* b, const float* w, std::int64_t w_step, float* y, std::int64_t n);
/// As the float overload.
void vlerp(const double* a, const double* b, const double* w, std::int64_t w_step, double* y, std::int64_t n);
/// y[i] = a[i] * b[i] + c[i]: one fused multiply-add where the instruction set has FMA (as the loops
/// of PyTorch's AVX2 kernels, whose compiler fuses them), two roundings elsewhere. y may be a, b or c.
void vmla(const float* a, const float* b, const float* c, float* y, std::int64_t n);
/// As the float overload.
void vmla(const double* a, const double* b, const double* c, double* y, std::int64_t n);
/// Softmax (or log_softmax when `log`) of each of `rows` contiguous rows of n, x into y: PyTorch 1.13's
/// _vec_softmax_lastdim and _vec_log_softmax_lastdim, its bits with FMA (SLEEF's exp and log).
void vsoftmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t n, bool log);
/// As the float overload.
void vsoftmax_rows(const double* x, double* y, std::int64_t rows, std::int64_t n, bool log);
/// Their backward from the output o: dx = (g - Σ g·o) · o, or g - exp(o) · Σ g for log (one fused
/// multiply-add with FMA), each of `rows` rows of n; the sums in lanes_dot's and lanes_sum's orders.
void vsoftmax_backward_rows(const float* g, const float* o, float* dx, std::int64_t rows, std::int64_t n, bool log);
/// As the float overload.
void vsoftmax_backward_rows(const double* g, const double* o, double* dx, std::int64_t rows, std::int64_t n, bool log);
/// y[i] = c[i] ? a[i * a_step] : b[i * b_step] (a step of 0: one value for every element, a step
/// of 1: a run), as bits: a blend, without a branch on c.
void vselect(const bool* c, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step, float* y,
             std::int64_t n);
/// As the float overload.
void vselect(const bool* c, const double* a, std::int64_t a_step, const double* b, std::int64_t b_step, double* y,
             std::int64_t n);

/// The comparisons vcompare computes (IEEE: a NaN compares false, except under kNe).
enum class Compare { kEq, kNe, kLt, kLe, kGt, kGe };

/// y[i] = a[i * a_step] op b[i * b_step], as bools (steps of 0 or 1, as vselect's).
void vcompare(Compare op, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step, bool* y,
              std::int64_t n);
/// As the float overload.
void vcompare(Compare op, const double* a, std::int64_t a_step, const double* b, std::int64_t b_step, bool* y,
              std::int64_t n);

/// The index of the largest (max) or smallest element of x[0, n), n >= 1: of x's first NaN when it
/// has one (NaN propagates, as PyTorch), else of the first element equal to the extreme, so that of
/// +0 and -0 the first wins (as a scan keeping the first of equal elements).
std::int64_t row_extreme_index(const float* x, std::int64_t n, bool max);
/// As the float overload.
std::int64_t row_extreme_index(const double* x, std::int64_t n, bool max);

/// Number of ScalarMap values.
constexpr int kScalarMapCount = static_cast<int>(ScalarMap::kHuber) + 1;

/// y = op(x, a, b) element by element: each operation correctly rounded, so every instruction set
/// gives the same bits. Non-temporal stores when `stream`, fenced by the caller (as varith).
void vscalar_map(ScalarMap op, const float* x, float a, float b, float* y, std::int64_t n, bool stream);
/// As the float overload.
void vscalar_map(ScalarMap op, const double* x, double a, double b, double* y, std::int64_t n, bool stream);

/// y = x ** e, with PyTorch's special cases (2, 3, -2, 0.5, -0.5, -1) and C's pow edge cases; the
/// exponent is rounded to float first, as PyTorch's float32 kernel does.
void vpow(const float* x, double e, float* y, std::int64_t n);
/// y = x ** e, with PyTorch's special cases (2, 3, -2, 0.5, -0.5, -1) and C's pow edge cases.
void vpow(const double* x, double e, double* y, std::int64_t n);
/// y = x ** e element by element (PyTorch's pow of two tensors: SLEEF's pow, C's edge cases, no
/// special exponents).
void vpow(const float* x, const float* e, float* y, std::int64_t n);
/// y = x ** e element by element (PyTorch's pow of two tensors).
void vpow(const double* x, const double* e, double* y, std::int64_t n);
/// out = atan2(y, x) element by element: SLEEF's atan2 (PyTorch's vectorised atan2, its bits).
void vatan2(const float* y, const float* x, float* out, std::int64_t n);
/// out = atan2(y, x) element by element (PyTorch's vectorised atan2).
void vatan2(const double* y, const double* x, double* out, std::int64_t n);

// ---- LayerNorm / RMSNorm rows (kernels/cpu/norm.cpp) ----
// One row of n contiguous elements each; rows that stay in cache between the passes (a few thousand
// elements), so that each call reads its inputs from memory once.

/// mean = Σx / n and m2 = Σ(x - mean)² of a row, bit for bit as PyTorch 1.13's RowwiseMoments
/// computes them (its LayerNorm's moments, on its AVX2 build): Welford passes over chunks of 16 AVX2
/// registers, lane by lane, the chunks' moments merged in a cascade, the elements after the last
/// register in a scalar Welford pass that then takes in the lanes. Any n >= 0.
void norm_moments(const float* x, std::int64_t n, float* mean, float* m2);
/// As the float overload.
void norm_moments(const double* x, std::int64_t n, double* mean, double* m2);
/// norm_moments of the rows x[0] to x[rows - 1] (1 to 4 rows) into mean[r] and m2[r]: the rows'
/// chains of dependent operations run between each other's, so four rows take about the time of two
/// single calls.
void norm_moments_rows(const float* const* x, int rows, std::int64_t n, float* mean, float* m2);
/// As the float overload.
void norm_moments_rows(const double* const* x, int rows, std::int64_t n, double* mean, double* m2);
/// norm_moments_rows of `rows` (1 to 4) consecutive rows of n elements starting at x.
template <typename T>
void norm_moments_block(const T* x, int rows, std::int64_t n, T* mean, T* m2) {
    const T* at[4];
    for (int k = 0; k < rows; ++k) at[k] = x + k * n;
    norm_moments_rows(at, rows, n, mean, m2);
}
/// Σx[i] in the order of PyTorch 1.13's vec::reduce_all over its AVX2 registers (8 floats, 4 doubles),
/// which its softmax and log_softmax rows use: a register of sums starting from the first one, each
/// further whole register added lane by lane, the elements after them added to its first lanes, then
/// the lanes combined (floats as AVX2's shuffles pair them, (l0+l4 + l2+l6) + (l1+l5 + l3+l7); doubles
/// in order); a row shorter than a register is added in order. No multiply-adds: every instruction
/// set gives the same bits.
float lanes_sum(const float* x, std::int64_t n);
/// As the float overload.
double lanes_sum(const double* x, std::int64_t n);
/// Σa[i]·b[i] in the order of PyTorch 1.13's vec::map2_reduce_all over its AVX2 registers (softmax's
/// backward): lanes_sum's order, each product after the first register added to its lane in one fused
/// multiply-add where the instruction set has FMA (as GCC fuses PyTorch's), two roundings elsewhere.
float lanes_dot(const float* a, const float* b, std::int64_t n);
/// As the float overload.
double lanes_dot(const double* a, const double* b, std::int64_t n);
/// The p-norm of a row for a finite p other than 0 (kernels::Backend::norm_rows): Σ|x|^p in the dtype
/// in order, then its 1/p-th power (C's powf or pow); |x| for p = 1; x·x + s fused (where the
/// instruction set has FMA, as PyTorch's compiler fuses its reduction) and a square root for p = 2,
/// with `lanes` (float32) eight such sums of every eighth element first, then added in order, then
/// the rest four at a time with each square rounded, the last one to three fused (PyTorch's fast path
/// for the innermost dims, as its build computes it).
float norm_row(const float* x, std::int64_t n, float p, bool lanes);
/// As the float overload.
double norm_row(const double* x, std::int64_t n, double p, bool lanes);
/// Orders the non-temporal stores made so far by this thread before its later stores: norm_apply and
/// norm_backward leave it to their caller, which calls it once after its last row, before the
/// rows are handed to another thread (an sfence per row would wait for each row's lines).
void stream_fence();
/// The maps (the kernels of vunary, varith, vscalar_map and the like) fence their non-temporal stores
/// at the end of each call, unless a StreamFenceOnce lives on the calling thread: then its end fences
/// once for all of them. For a caller that makes many streamed calls, one per run of a strided or
/// broadcast operand: a fence per call waited for each run's lines (x + row on 16M floats, rows of
/// 4096: 1.15-1.45x the time).
class StreamFenceOnce {
public:
    StreamFenceOnce();
    /// Fences (stream_fence) when this one deferred the maps' fences.
    ~StreamFenceOnce();
    StreamFenceOnce(const StreamFenceOnce&) = delete;
    StreamFenceOnce& operator=(const StreamFenceOnce&) = delete;

private:
    bool outer_;  // the thread's first one, which fences at its end
};
/// Whether a StreamFenceOnce lives on this thread (the maps then leave their streamed stores unfenced).
bool stream_fence_deferred();
/// y = (x * scale + shift) * w + b; w and b may be null (then left out). With both, the last multiply
/// and add are one fused multiply-add where the instruction set has FMA, as in PyTorch's LayerNorm;
/// without b and with `plus_zero`, 0 is added last (PyTorch's scalar path, whose -0 becomes +0). With
/// `stream`, y is written with non-temporal stores (kStreamBytes), which the caller then fences
/// (stream_fence). With ahead > 0, x[ahead, ahead + n) exists (a later row) and is prefetched while y
/// is written: the hardware's prefetchers stop at page boundaries, and a row's second pass reads from
/// the cache.
void norm_apply(const float* x, float scale, float shift, const float* w, const float* b, float* y, std::int64_t n,
                bool stream, std::int64_t ahead, bool plus_zero = false);
/// As the float overload.
void norm_apply(const double* x, double scale, double shift, const double* w, const double* b, double* y,
                std::int64_t n, bool stream, std::int64_t ahead, bool plus_zero = false);
/// One row of LayerNorm's backward, bit for bit as PyTorch 1.13's CPU kernel (its AVX2 build, with the
/// multiply-adds its compiler fuses): acc_w += g * (rstd * x - rstd * mean) and acc_b += g (each when
/// not null); then, when dx is not null, ds = Σ g·x·w and db = Σ g·w (lanes_dot's order; without w,
/// Σ g·x and Σ g), b = (db·mean - ds)·rstd³/n, c = -b·mean - db·rstd/n, and dx = rstd·g·w + b·x + c.
/// w may be null. With `stream`, dx is written with non-temporal stores, which the caller then fences
/// (stream_fence); with ahead > 0, g and x are prefetched `ahead` elements on as dx is written
/// (norm_apply's `ahead`).
void layer_norm_row_backward(const float* g, const float* x, const float* w, float rstd, float mean, float* dx,
                             float* acc_w, float* acc_b, std::int64_t n, bool stream, std::int64_t ahead);
/// As the float overload.
void layer_norm_row_backward(const double* g, const double* x, const double* w, double rstd, double mean, double* dx,
                             double* acc_w, double* acc_b, std::int64_t n, bool stream, std::int64_t ahead);
/// layer_norm_row_backward for `rows` consecutive rows of n elements (g, x and dx advance by n a row;
/// rstd and mean by one), with the same bits as `rows` calls of it in order. Four rows with dx run side
/// by side: the chains of dependent sums of one row alone left the multiply-add unit waiting on its
/// latency. `ahead` as the row kernel's, for every row.
void layer_norm_rows_backward(const float* g, const float* x, const float* w, const float* rstd, const float* mean,
                              float* dx, float* acc_w, float* acc_b, std::int64_t n, std::int64_t rows, bool stream,
                              std::int64_t ahead);
/// As the float overload.
void layer_norm_rows_backward(const double* g, const double* x, const double* w, const double* rstd, const double* mean,
                              double* dx, double* acc_w, double* acc_b, std::int64_t n, std::int64_t rows, bool stream,
                              std::int64_t ahead);
/// RMSNorm's backward, the first pass over a row, as the autograd of PyTorch's composite
/// y = x * rstd * w computes it, each product rounded. With t = g * w (g without w) and q = t * x:
/// - when quad_sums is not null, the row's n / (128 / sizeof(T)) whole groups of 128 bytes go through
///   sum_cascade's cascade (its power for that many groups) as if q were stored there, and quad_sums
///   gets its 128 / sizeof(T) sums: the first step of PyTorch's sum of q over the row, which
///   sum_order.hpp's inner_sum_from_quads completes. q is never written to memory;
/// - g * (x * rstd) is added into acc for the elements before `cut` and into acc_rest for the others
///   (each when not null; both indexed by the element), for the weight gradient: in the same pass when
///   the groups all lie before `cut` (ColumnSums::cascaded gives such a cut), else in another.
/// w may be null.
void rms_norm_row_terms(const float* g, const float* x, const float* w, float rstd, float* quad_sums, float* acc,
                        float* acc_rest, std::int64_t cut, std::int64_t n);
/// As the float overload.
void rms_norm_row_terms(const double* g, const double* x, const double* w, double rstd, double* quad_sums, double* acc,
                        double* acc_rest, std::int64_t cut, std::int64_t n);
/// RMSNorm's backward, the second pass over a row: dx = t * rstd + dms * (x + x), t as in
/// rms_norm_row_terms and dms the gradient of the row's mean of squares. `stream` and `ahead` as
/// layer_norm_row_backward's.
void rms_norm_row_dx(const float* g, const float* x, const float* w, float rstd, float dms, float* dx, std::int64_t n,
                     bool stream, std::int64_t ahead);
/// As the float overload.
void rms_norm_row_dx(const double* g, const double* x, const double* w, double rstd, double dms, double* dx,
                     std::int64_t n, bool stream, std::int64_t ahead);

// ---- sums in PyTorch's order (kernels/cpu/sum_order.hpp) ----

/// sum_order.hpp's cascade_sum<Lanes<T, kLanes<T>>, 4>, vectorised, with the same bits: `rows` rows of
/// 128 bytes (four AVX2 registers) at x + i * stride are added lane by lane, the partial sums moving up
/// one of four levels every 2^power rows; out gets the 128 / sizeof(T) sums. With `square`, each
/// element's square (rounded to T, as x.pow(2)) is added instead of the element.
void sum_cascade(const float* x, std::int64_t rows, std::int64_t stride, int power, float* out, bool square = false);
/// As the float overload.
void sum_cascade(const double* x, std::int64_t rows, std::int64_t stride, int power, double* out, bool square = false);

/// `rows` contiguous rows of n elements at x (one after another) summed into out, each with
/// sum_order.hpp's inner_sum bits, on this thread. One loop over the rows, without a call per row:
/// x.sum(-1) of 16M floats in rows of 16 to 64 took 1.8-2.1x PyTorch's time, and in rows of 1000
/// 1.5x the time of rows of 4096, with inner_sum called per row. For rows shorter than
/// kSerialRowMax<T> (inner_sum splits longer ones between threads). With `square`, the sums of the
/// squares (each rounded), as inner_sum<T, true>.
void sum_rows_serial(const float* x, std::int64_t rows, std::int64_t n, float* out, bool square = false);
/// As the float overload.
void sum_rows_serial(const double* x, std::int64_t rows, std::int64_t n, double* out, bool square = false);
/// Rows shorter than this many T have no more than 8192 groups of four AVX2 registers, which
/// inner_sum never splits between threads.
template <typename T>
constexpr std::int64_t kSerialRowMax = 8192 * 128 / static_cast<std::int64_t>(sizeof(T));

/// Each of `rows` contiguous rows' mean and m2 = Σ (x - mean)², both computed in double from the row's
/// values (n >= 1): float rows in one pass of sums shifted by c, the mean of the first 32 elements
/// rounded to float (Σ (x - c), Σ (x - c)², then m2 = Σ (x - c)² - (Σ (x - c))² / n), double rows in two
/// passes; 32 accumulators, the same order on every instruction set, and a row's results do not depend
/// on the others (on AVX-512 two float rows run side by side). With ahead > 0, x[ahead, ahead + rows·n)
/// exists and is prefetched on the way (during the second pass of a double row; norm_apply's `ahead`).
void var_rows(const float* x, std::int64_t rows, std::int64_t n, double* mean, double* m2, std::int64_t ahead = 0);
/// As the float overload.
void var_rows(const double* x, std::int64_t rows, std::int64_t n, double* mean, double* m2, std::int64_t ahead = 0);

/// Σ (x - c)² over x[0, n) in double: lane k of 32 takes the elements i with i % 32 == k, in order, the
/// lanes are added in order, then the tail; each square is multiplied and added apart (no FMA), so every
/// instruction set gives the same bits.
double sq_dev_sum(const float* x, std::int64_t n, double c);
/// As the float overload.
double sq_dev_sum(const double* x, std::int64_t n, double c);

/// Each of `rows` rows of n elements (row r at x + r·n): its mean and m2 = Σ (x - mean)² by PyTorch
/// 1.13's WelfordOps::reduce in double, element by element from mean = m2 = 0: d = x - mean,
/// mean += d / k (k the count so far), m2 = fma(d, x - mean, m2) (the multiply-add its AVX2 build
/// fuses). The same bits on every instruction set; four rows at a time, so the core overlaps their
/// chains of divisions.
void welford_rows(const float* x, std::int64_t rows, std::int64_t n, double* mean, double* m2);
/// As the float overload.
void welford_rows(const double* x, std::int64_t rows, std::int64_t n, double* mean, double* m2);

/// True when the instruction set in use has small_gemm (it has FMA).
bool has_small_gemm();
/// c (n×m, contiguous, row-major) = a·b, or c += a·b when `accumulate`, where a(i, p) = a[i·ars + p·acs] and
/// b(p, j) = b[p·brs + j·bcs]: each sum in order over p with fused multiply-adds, from +0. Returns false,
/// computing nothing, where the instruction set in use has no FMA. For k < 8 these are the bits of
/// OpenBLAS's FMA kernels (see matmul.cpp), which PyTorch's products call.
bool small_gemm(const float* a, std::int64_t ars, std::int64_t acs, const float* b, std::int64_t brs, std::int64_t bcs,
                float* c, std::int64_t n, std::int64_t m, std::int64_t k, bool accumulate);
/// As the float overload.
bool small_gemm(const double* a, std::int64_t ars, std::int64_t acs, const double* b, std::int64_t brs,
                std::int64_t bcs, double* c, std::int64_t n, std::int64_t m, std::int64_t k, bool accumulate);

/// The per-step constants of one Adam update (adam_update), in the parameter's dtype.
template <typename T>
struct AdamCoefficients {
    T beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size;
};

/// Adam's update of n elements, in PyTorch 1.13's _single_tensor_adam order and dtype:
/// m = m * β1 + (1 - β1) * g; v = v * β2 + g * (1 - β2) * g; vmax = maximum(vmax, v) when vmax is not
/// null (amsgrad); p = p + m * -step_size / (sqrt(v or vmax) / bias_correction2_sqrt + eps).
void adam_update(float* p, const float* g, float* m, float* v, float* vmax, const AdamCoefficients<float>& c,
                 std::int64_t n);
/// As the float overload.
void adam_update(double* p, const double* g, double* m, double* v, double* vmax, const AdamCoefficients<double>& c,
                 std::int64_t n);

/// The per-step constants of one SGD update (sgd_update), in the parameter's dtype, and its flags.
template <typename T>
struct SgdCoefficients {
    T weight_decay, momentum, one_minus_dampening, neg_lr;
    bool maximize, decay, first, nesterov;
};

/// SGD's update of n elements (buf null without momentum), in PyTorch 1.13's _single_tensor_sgd order
/// and dtype (scalar_ops.hpp's sgd_element), each x.add(y, alpha=a) one fused multiply-add where the
/// instruction set has FMA, as PyTorch's AVX2 kernel computes it.
void sgd_update(float* p, const float* g, float* buf, const SgdCoefficients<float>& c, std::int64_t n);
/// As the float overload.
void sgd_update(double* p, const double* g, double* buf, const SgdCoefficients<double>& c, std::int64_t n);

/// Sums in the lanes of PyTorch's AVX2 register (8 floats, 4 doubles) over n elements, n a multiple of
/// the lanes: acc_ab[l] = a[i]·b[i] + acc_ab[l] (one fused multiply-add where the instruction set has
/// FMA, as GCC fuses PyTorch's ds_vec + dy_vec * x_vec) and acc_a[l] = acc_a[l] + a[i], for the
/// elements i of lane l = i mod the lanes, in order. GroupNorm's backward sums.
void lanes_fma_sums(const float* a, const float* b, std::int64_t n, float* acc_ab, float* acc_a);
/// As the float overload.
void lanes_fma_sums(const double* a, const double* b, std::int64_t n, double* acc_ab, double* acc_a);
/// One row of GroupNorm's input gradient, as PyTorch 1.13's CPU kernel (its AVX2 build, which fuses the
/// first product with the sum): dx = (c1·g + c2·x) + c3, c1·g + (c2·x) one fused multiply-add where the
/// instruction set has FMA.
void group_norm_row_dx(const float* g, const float* x, float c1, float c2, float c3, float* dx, std::int64_t n);
/// As the float overload.
void group_norm_row_dx(const double* g, const double* x, double c1, double c2, double c3, double* dx, std::int64_t n);

/// One row of BatchNorm's training backward, as PyTorch 1.13's CPU kernel computes it (its AVX2 build, the
/// subtraction of the product fused by its compiler): dx = ((g - grad_mean) - (x - mean)·k)·invstd·w,
/// the product and its subtraction one fused multiply-add where the instruction set has FMA.
void batch_norm_row_dx(const float* g, const float* x, float mean, float k, float grad_mean, float invstd, float w,
                       float* dx, std::int64_t n);
/// As the float overload.
void batch_norm_row_dx(const double* g, const double* x, double mean, double k, double grad_mean, double invstd,
                       double w, double* dx, std::int64_t n);

/// cdist's direct forward for p = 1 or p = 2 from one row to `count` rows of the other input, as PyTorch
/// 1.13's CPU kernel computes each pair: out[j] = Σ_f t(x[f] - yt[f·stride + j]) added in order over the
/// m features from 0 (then the square root for p = 2), with yt the other input transposed (features
/// `stride` apart) and t(d) = |d| for p = 1, d² for p = 2, the first `apart` squares rounded apart from
/// the sum and the rest fused with it (PyTorch's compiler's vectorised loop). Pairs go side by side in
/// the lanes; each pair's sum is in the same order as alone.
void cdist_forward_row(const float* x, const float* yt, std::int64_t stride, std::int64_t count, std::int64_t m, int p,
                       std::int64_t apart, float* out);
/// As the float overload.
void cdist_forward_row(const double* x, const double* yt, std::int64_t stride, std::int64_t count, std::int64_t m,
                       int p, std::int64_t apart, double* out);

/// One row of cdist's backward for p = 1 or p = 2, as PyTorch 1.13's CPU kernel (_cdist_backward,
/// vectorised over the features): res[f] = res[f] + t_j[f] for j = 0, …, rows - 1 in order, with x the
/// row (m features), y the `rows` rows of the other input (m apart), g and dist their gradients and
/// distances, and t_j = g_j·sign(x - y_j) for p = 1, (g_j·(x - y_j)) / dist_j for p = 2 (no term where
/// dist_j is 0). sign is +1, -1, +0 for ±0 and NaN for NaN.
void cdist_backward_row(const float* x, const float* y, const float* g, const float* dist, std::int64_t rows,
                        std::int64_t m, int p, float* res);
/// As the float overload.
void cdist_backward_row(const double* x, const double* y, const double* g, const double* dist, std::int64_t rows,
                        std::int64_t m, int p, double* res);

/// y[i] = y[i] + a * x[i]: PyTorch's y.add_(x, alpha=a), one fused multiply-add where the instruction
/// set has FMA (its AVX2 kernel's fmadd), two roundings elsewhere.
void axpy(float* y, const float* x, float a, std::int64_t n);
/// As the float overload.
void axpy(double* y, const double* x, double a, std::int64_t n);

/// The instruction sets vec_math has kernels for.
enum class SimdArch { kSse2, kAvx2, kAvx512 };

/// The name of the instruction set in use ("avx512bw", "fma3+avx2" or "sse2").
const char* simd_arch_name();
/// The instruction set in use: the best this CPU and OS support, unless set_simd_arch changed it.
SimdArch simd_arch();
/// Whether this CPU and OS can run `arch`'s kernels.
bool simd_arch_supported(SimdArch arch);
/// Makes later calls from every thread use `arch`'s kernels (tests, benchmarks); throws
/// std::invalid_argument when this CPU cannot run them.
void set_simd_arch(SimdArch arch);

}  // namespace xgrad::kernels::cpu
