// vec_math's run-time dispatch: picks the best instruction set once, then forwards each call to it.
//
// Compiled without -m flags (like the rest of libxgrad), so this file runs on every x86-64 CPU; the
// per-arch kernels live in vec_math_<arch>.cpp, each built by src/meson.build with its own flags.
#include "kernels/cpu/vec_math.hpp"

#include <immintrin.h>
#include <atomic>
#include <cassert>  // xsimd_arch.hpp uses assert without including it
#include <stdexcept>

#include <xsimd/config/xsimd_arch.hpp>

#include "kernels/cpu/vec_math_table.hpp"

namespace xgrad::kernels::cpu {
namespace detail {

extern template const VecMathTable* TableFor::operator()(xsimd::sse2) const noexcept;
extern template const VecMathTable* TableFor::operator()(xsimd::fma3<xsimd::avx2>) const noexcept;
extern template const VecMathTable* TableFor::operator()(xsimd::avx512bw) const noexcept;

}  // namespace detail

namespace {

using detail::VecMathTable;

// xsimd's CPUID test does not ask the OS whether it saves the AVX registers, nor looks for AVX-512VL
// (which the avx512 file is compiled with); GCC's __builtin_cpu_supports does both.
bool avx2_ok() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
bool avx512_ok() {
    return avx2_ok() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

/// The best table this machine can run: xsimd::dispatch over the arches the checks above allow.
const VecMathTable* detect() {
    using xsimd::arch_list;
    detail::TableFor table_for;
    if (avx512_ok())
        return xsimd::dispatch<arch_list<xsimd::avx512bw, xsimd::fma3<xsimd::avx2>, xsimd::sse2>>(table_for)();
    if (avx2_ok()) return xsimd::dispatch<arch_list<xsimd::fma3<xsimd::avx2>, xsimd::sse2>>(table_for)();
    return xsimd::dispatch<arch_list<xsimd::sse2>>(table_for)();
}

std::atomic<const VecMathTable*>& current_slot() {
    static std::atomic<const VecMathTable*> slot{detect()};
    return slot;
}

const VecMathTable& current() {
    return *current_slot().load(std::memory_order_relaxed);
}

static_assert(static_cast<int>(Arith::kAdd) == detail::kArithAdd &&
              static_cast<int>(Arith::kSub) == detail::kArithSub &&
              static_cast<int>(Arith::kMul) == detail::kArithMul &&
              static_cast<int>(Arith::kDiv) == detail::kArithDiv &&
              static_cast<int>(Arith::kReluBackward) == detail::kArithReluBackward &&
              static_cast<int>(Arith::kTanhBackward) == detail::kArithTanhBackward &&
              static_cast<int>(Arith::kSigmoidBackward) == detail::kArithSigmoidBackward &&
              static_cast<int>(Arith::kMaximum) == detail::kArithMaximum &&
              static_cast<int>(Arith::kMinimum) == detail::kArithMinimum);

template <typename T>
const detail::VecMathKernels<T>& kernels() {
    if constexpr (std::is_same_v<T, float>)
        return current().f32;
    else
        return current().f64;
}

template <typename T>
void unary(detail::Unary op, const T* x, T* y, std::int64_t n) {
    if (n > 0) kernels<T>().unary[op](x, y, n);
}

template <typename T>
void backward(detail::Backward op, const T* g, const T* x, T* dx, std::int64_t n) {
    if (n > 0) kernels<T>().backward[op](g, x, dx, n);
}

/// PyTorch's pow(tensor, scalar): exact special cases first (aten's Pow.cpp and PowKernel.cpp), then
/// SLEEF's pow; a float32 tensor's exponent is rounded to float for it.
template <typename T>
void pow_impl(const T* x, double e, T* y, std::int64_t n) {
    if (n <= 0) return;
    if (e == 0.0) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = T(1);
    } else if (e == 1.0) {
        if (y != x)
            for (std::int64_t i = 0; i < n; ++i) y[i] = x[i];
    } else if (e == 2.0) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
    } else if (e == 3.0) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i] * x[i];
    } else if (e == -2.0) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = T(1) / (x[i] * x[i]);
    } else if (e == -1.0) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = T(1) / x[i];
    } else if (e == 0.5) {
        unary(detail::kSqrt, x, y, n);
    } else if (e == -0.5) {
        unary(detail::kRsqrt, x, y, n);
    } else {
        kernels<T>().pow(x, static_cast<T>(e), y, n);
    }
}

}  // namespace

void vexp(const float* x, float* y, std::int64_t n) {
    unary(detail::kExp, x, y, n);
}
void vexp(const double* x, double* y, std::int64_t n) {
    unary(detail::kExp, x, y, n);
}
void vlog(const float* x, float* y, std::int64_t n) {
    unary(detail::kLog, x, y, n);
}
void vlog(const double* x, double* y, std::int64_t n) {
    unary(detail::kLog, x, y, n);
}
void vtanh(const float* x, float* y, std::int64_t n) {
    unary(detail::kTanh, x, y, n);
}
void vtanh(const double* x, double* y, std::int64_t n) {
    unary(detail::kTanh, x, y, n);
}
void vsigmoid(const float* x, float* y, std::int64_t n) {
    unary(detail::kSigmoid, x, y, n);
}
void vsigmoid(const double* x, double* y, std::int64_t n) {
    unary(detail::kSigmoid, x, y, n);
}
void verf(const float* x, float* y, std::int64_t n) {
    unary(detail::kErf, x, y, n);
}
void verf(const double* x, double* y, std::int64_t n) {
    unary(detail::kErf, x, y, n);
}
void vgelu(const float* x, float* y, std::int64_t n) {
    unary(detail::kGelu, x, y, n);
}
void vgelu(const double* x, double* y, std::int64_t n) {
    unary(detail::kGelu, x, y, n);
}
void vgelu_erf(const float* x, float* y, std::int64_t n) {
    unary(detail::kGeluErf, x, y, n);
}
void vgelu_erf(const double* x, double* y, std::int64_t n) {
    unary(detail::kGeluErf, x, y, n);
}
void vgelu_tanh(const float* x, float* y, std::int64_t n) {
    unary(detail::kGeluTanh, x, y, n);
}
void vgelu_tanh(const double* x, double* y, std::int64_t n) {
    unary(detail::kGeluTanh, x, y, n);
}
void vsqrt(const float* x, float* y, std::int64_t n) {
    unary(detail::kSqrt, x, y, n);
}
void vsqrt(const double* x, double* y, std::int64_t n) {
    unary(detail::kSqrt, x, y, n);
}
void vrsqrt(const float* x, float* y, std::int64_t n) {
    unary(detail::kRsqrt, x, y, n);
}
void vrsqrt(const double* x, double* y, std::int64_t n) {
    unary(detail::kRsqrt, x, y, n);
}
void vrelu(const float* x, float* y, std::int64_t n) {
    unary(detail::kRelu, x, y, n);
}
void vrelu(const double* x, double* y, std::int64_t n) {
    unary(detail::kRelu, x, y, n);
}
void varith(Arith op, const float* a, const float* b, float* y, std::int64_t n, bool stream) {
    if (n > 0) kernels<float>().arith[static_cast<int>(op)](a, b, y, n, stream);
}
void varith(Arith op, const double* a, const double* b, double* y, std::int64_t n, bool stream) {
    if (n > 0) kernels<double>().arith[static_cast<int>(op)](a, b, y, n, stream);
}
template <typename T>
void arith_rows(Arith op, RowOperands layout, const T* x, std::int64_t x_row, const T* y, std::int64_t y_row, T* out,
                std::int64_t n, std::int64_t rows) {
    const int o = static_cast<int>(op);
    if (o > static_cast<int>(Arith::kDiv)) throw std::logic_error("varith_rows: only +, -, * and /");
    if (n > 0 && rows > 0) kernels<T>().arith_rows[o][static_cast<int>(layout)](x, x_row, y, y_row, out, n, rows);
}
void varith_rows(Arith op, RowOperands layout, const float* x, std::int64_t x_row, const float* y, std::int64_t y_row,
                 float* out, std::int64_t n, std::int64_t rows) {
    arith_rows(op, layout, x, x_row, y, y_row, out, n, rows);
}
void varith_rows(Arith op, RowOperands layout, const double* x, std::int64_t x_row, const double* y, std::int64_t y_row,
                 double* out, std::int64_t n, std::int64_t rows) {
    arith_rows(op, layout, x, x_row, y, y_row, out, n, rows);
}
void vgrad_map(GradMap op, const float* g, const float* x, float a, float b, float* y, std::int64_t n, bool stream) {
    if (n > 0) kernels<float>().grad_map[static_cast<int>(op)](g, x, a, b, y, n, stream);
}
void vgrad_map(GradMap op, const double* g, const double* x, double a, double b, double* y, std::int64_t n,
               bool stream) {
    if (n > 0) kernels<double>().grad_map[static_cast<int>(op)](g, x, a, b, y, n, stream);
}
void vscalar_map(ScalarMap op, const float* x, float a, float b, float* y, std::int64_t n, bool stream) {
    if (n > 0) kernels<float>().scalar_map[static_cast<int>(op)](x, a, b, y, n, stream);
}
void vscalar_map(ScalarMap op, const double* x, double a, double b, double* y, std::int64_t n, bool stream) {
    if (n > 0) kernels<double>().scalar_map[static_cast<int>(op)](x, a, b, y, n, stream);
}
void vgelu_backward(const float* g, const float* x, float* dx, std::int64_t n) {
    backward(detail::kGeluBackward, g, x, dx, n);
}
void vgelu_backward(const double* g, const double* x, double* dx, std::int64_t n) {
    backward(detail::kGeluBackward, g, x, dx, n);
}
void vgelu_erf_backward(const float* g, const float* x, float* dx, std::int64_t n) {
    backward(detail::kGeluErfBackward, g, x, dx, n);
}
void vgelu_erf_backward(const double* g, const double* x, double* dx, std::int64_t n) {
    backward(detail::kGeluErfBackward, g, x, dx, n);
}
void vgelu_tanh_backward(const float* g, const float* x, float* dx, std::int64_t n) {
    backward(detail::kGeluTanhBackward, g, x, dx, n);
}
void vgelu_tanh_backward(const double* g, const double* x, double* dx, std::int64_t n) {
    backward(detail::kGeluTanhBackward, g, x, dx, n);
}
void vpow(const float* x, double e, float* y, std::int64_t n) {
    pow_impl(x, e, y, n);
}
void vpow(const double* x, double e, double* y, std::int64_t n) {
    pow_impl(x, e, y, n);
}
void vpow(const float* x, const float* e, float* y, std::int64_t n) {
    if (n > 0) kernels<float>().pow_tensor(x, e, y, n);
}
void vpow(const double* x, const double* e, double* y, std::int64_t n) {
    if (n > 0) kernels<double>().pow_tensor(x, e, y, n);
}
void vatan2(const float* y, const float* x, float* out, std::int64_t n) {
    if (n > 0) kernels<float>().atan2(y, x, out, n);
}
void vatan2(const double* y, const double* x, double* out, std::int64_t n) {
    if (n > 0) kernels<double>().atan2(y, x, out, n);
}
void vmish(const float* x, float* y, std::int64_t n) {
    unary(detail::kMish, x, y, n);
}
void vmish(const double* x, double* y, std::int64_t n) {
    unary(detail::kMish, x, y, n);
}
void vmish_backward(const float* g, const float* x, float* dx, std::int64_t n) {
    backward(detail::kMishBackward, g, x, dx, n);
}
void vmish_backward(const double* g, const double* x, double* dx, std::int64_t n) {
    backward(detail::kMishBackward, g, x, dx, n);
}
void vlog_sigmoid(const float* x, float* y, std::int64_t n) {
    unary(detail::kLogSigmoid, x, y, n);
}
void vlog_sigmoid(const double* x, double* y, std::int64_t n) {
    unary(detail::kLogSigmoid, x, y, n);
}
void vlog_sigmoid_backward(const float* g, const float* x, float* dx, std::int64_t n) {
    backward(detail::kLogSigmoidBackward, g, x, dx, n);
}
void vlog_sigmoid_backward(const double* g, const double* x, double* dx, std::int64_t n) {
    backward(detail::kLogSigmoidBackward, g, x, dx, n);
}
void vsin(const float* x, float* y, std::int64_t n) {
    unary(detail::kSin, x, y, n);
}
void vsin(const double* x, double* y, std::int64_t n) {
    unary(detail::kSin, x, y, n);
}
void vcos(const float* x, float* y, std::int64_t n) {
    unary(detail::kCos, x, y, n);
}
void vcos(const double* x, double* y, std::int64_t n) {
    unary(detail::kCos, x, y, n);
}
void vtan(const float* x, float* y, std::int64_t n) {
    unary(detail::kTan, x, y, n);
}
void vtan(const double* x, double* y, std::int64_t n) {
    unary(detail::kTan, x, y, n);
}
void vatan(const float* x, float* y, std::int64_t n) {
    unary(detail::kAtan, x, y, n);
}
void vatan(const double* x, double* y, std::int64_t n) {
    unary(detail::kAtan, x, y, n);
}
void vasin(const float* x, float* y, std::int64_t n) {
    unary(detail::kAsin, x, y, n);
}
void vasin(const double* x, double* y, std::int64_t n) {
    unary(detail::kAsin, x, y, n);
}
void vacos(const float* x, float* y, std::int64_t n) {
    unary(detail::kAcos, x, y, n);
}
void vacos(const double* x, double* y, std::int64_t n) {
    unary(detail::kAcos, x, y, n);
}
void vsinh(const float* x, float* y, std::int64_t n) {
    unary(detail::kSinh, x, y, n);
}
void vsinh(const double* x, double* y, std::int64_t n) {
    unary(detail::kSinh, x, y, n);
}
void vcosh(const float* x, float* y, std::int64_t n) {
    unary(detail::kCosh, x, y, n);
}
void vcosh(const double* x, double* y, std::int64_t n) {
    unary(detail::kCosh, x, y, n);
}
void vlog2(const float* x, float* y, std::int64_t n) {
    unary(detail::kLog2, x, y, n);
}
void vlog2(const double* x, double* y, std::int64_t n) {
    unary(detail::kLog2, x, y, n);
}
void vlog10(const float* x, float* y, std::int64_t n) {
    unary(detail::kLog10, x, y, n);
}
void vlog10(const double* x, double* y, std::int64_t n) {
    unary(detail::kLog10, x, y, n);
}
void vexpm1(const float* x, float* y, std::int64_t n) {
    unary(detail::kExpm1, x, y, n);
}
void vexpm1(const double* x, double* y, std::int64_t n) {
    unary(detail::kExpm1, x, y, n);
}
void vlog1p(const float* x, float* y, std::int64_t n) {
    unary(detail::kLog1p, x, y, n);
}
void vlog1p(const double* x, double* y, std::int64_t n) {
    unary(detail::kLog1p, x, y, n);
}
void max_pool_taps(const float* x, std::int64_t stride, std::int64_t count, std::int64_t at, float* m,
                   std::int32_t* best) {
    kernels<float>().max_pool_taps(x, stride, count, at, m, best);
}
void max_pool_taps(const double* x, std::int64_t stride, std::int64_t count, std::int64_t at, double* m,
                   std::int64_t* best) {
    kernels<double>().max_pool_taps(x, stride, count, at, m, best);
}
void velu(const float* x, float* y, std::int64_t n, float pos, float neg, float input_scale) {
    kernels<float>().elu(x, y, n, pos, neg, input_scale);
}
void velu(const double* x, double* y, std::int64_t n, double pos, double neg, double input_scale) {
    kernels<double>().elu(x, y, n, pos, neg, input_scale);
}
void velu_backward(const float* g, const float* x, float* dx, std::int64_t n, float pos, float neg, float input_scale) {
    kernels<float>().elu_backward(g, x, dx, n, pos, neg, input_scale);
}
void velu_backward(const double* g, const double* x, double* dx, std::int64_t n, double pos, double neg,
                   double input_scale) {
    kernels<double>().elu_backward(g, x, dx, n, pos, neg, input_scale);
}
void vsilu(const float* x, float* y, std::int64_t n) {
    unary(detail::kSilu, x, y, n);
}
void vsilu(const double* x, double* y, std::int64_t n) {
    unary(detail::kSilu, x, y, n);
}
void vglu(const float* a, const float* b, float* y, std::int64_t n) {
    backward(detail::kGlu, a, b, y, n);
}
void vglu(const double* a, const double* b, double* y, std::int64_t n) {
    backward(detail::kGlu, a, b, y, n);
}
void vglu_backward(const float* g, const float* b, float* dx, std::int64_t n, bool second) {
    backward(second ? detail::kGluBackwardSecond : detail::kGluBackwardFirst, g, b, dx, n);
}
void vglu_backward(const double* g, const double* b, double* dx, std::int64_t n, bool second) {
    backward(second ? detail::kGluBackwardSecond : detail::kGluBackwardFirst, g, b, dx, n);
}
void vlogaddexp(const float* a, const float* b, float* y, std::int64_t n, bool base2) {
    backward(base2 ? detail::kLogAddExp2 : detail::kLogAddExp, a, b, y, n);
}
void vlogaddexp(const double* a, const double* b, double* y, std::int64_t n, bool base2) {
    backward(base2 ? detail::kLogAddExp2 : detail::kLogAddExp, a, b, y, n);
}
void vsilu_backward(const float* g, const float* x, float* dx, std::int64_t n) {
    backward(detail::kSiluBackward, g, x, dx, n);
}
void vsilu_backward(const double* g, const double* x, double* dx, std::int64_t n) {
    backward(detail::kSiluBackward, g, x, dx, n);
}

void norm_moments_rows(const float* const* x, int rows, std::int64_t n, float* mean, float* m2) {
    kernels<float>().norm_moments_rows(x, rows, n, mean, m2);
}
void norm_moments_rows(const double* const* x, int rows, std::int64_t n, double* mean, double* m2) {
    kernels<double>().norm_moments_rows(x, rows, n, mean, m2);
}
void norm_moments(const float* x, std::int64_t n, float* mean, float* m2) {
    norm_moments_rows(&x, 1, n, mean, m2);
}
void norm_moments(const double* x, std::int64_t n, double* mean, double* m2) {
    norm_moments_rows(&x, 1, n, mean, m2);
}
void vlerp(const float* a, const float* b, const float* w, std::int64_t w_step, float* y, std::int64_t n) {
    if (n > 0) kernels<float>().lerp(a, b, w, w_step, y, n);
}
void vlerp(const double* a, const double* b, const double* w, std::int64_t w_step, double* y, std::int64_t n) {
    if (n > 0) kernels<double>().lerp(a, b, w, w_step, y, n);
}
void vmla(const float* a, const float* b, const float* c, float* y, std::int64_t n) {
    if (n > 0) kernels<float>().mla(a, b, c, y, n);
}
void vmla(const double* a, const double* b, const double* c, double* y, std::int64_t n) {
    if (n > 0) kernels<double>().mla(a, b, c, y, n);
}
void vsoftmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t n, bool log) {
    if (rows > 0 && n > 0) kernels<float>().softmax_rows(x, y, rows, n, log);
}
void vsoftmax_rows(const double* x, double* y, std::int64_t rows, std::int64_t n, bool log) {
    if (rows > 0 && n > 0) kernels<double>().softmax_rows(x, y, rows, n, log);
}
void vsoftmax_backward_rows(const float* g, const float* o, float* dx, std::int64_t rows, std::int64_t n, bool log) {
    if (rows > 0 && n > 0) kernels<float>().softmax_backward_rows(g, o, dx, rows, n, log);
}
void vsoftmax_backward_rows(const double* g, const double* o, double* dx, std::int64_t rows, std::int64_t n, bool log) {
    if (rows > 0 && n > 0) kernels<double>().softmax_backward_rows(g, o, dx, rows, n, log);
}
void vselect(const bool* c, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step, float* y,
             std::int64_t n) {
    if (n > 0) kernels<float>().select(c, a, a_step, b, b_step, y, n);
}
void vselect(const bool* c, const double* a, std::int64_t a_step, const double* b, std::int64_t b_step, double* y,
             std::int64_t n) {
    if (n > 0) kernels<double>().select(c, a, a_step, b, b_step, y, n);
}
void vcompare(Compare op, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step, bool* y,
              std::int64_t n) {
    if (n > 0) kernels<float>().compare[static_cast<int>(op)](a, a_step, b, b_step, y, n);
}
void vcompare(Compare op, const double* a, std::int64_t a_step, const double* b, std::int64_t b_step, bool* y,
              std::int64_t n) {
    if (n > 0) kernels<double>().compare[static_cast<int>(op)](a, a_step, b, b_step, y, n);
}
std::int64_t row_extreme_index(const float* x, std::int64_t n, bool max) {
    return kernels<float>().row_extreme_index(x, n, max);
}
std::int64_t row_extreme_index(const double* x, std::int64_t n, bool max) {
    return kernels<double>().row_extreme_index(x, n, max);
}
float lanes_sum(const float* x, std::int64_t n) {
    return kernels<float>().lanes_sum(x, n);
}
double lanes_sum(const double* x, std::int64_t n) {
    return kernels<double>().lanes_sum(x, n);
}
float lanes_dot(const float* a, const float* b, std::int64_t n) {
    return kernels<float>().lanes_dot(a, b, n);
}
double lanes_dot(const double* a, const double* b, std::int64_t n) {
    return kernels<double>().lanes_dot(a, b, n);
}
float norm_row(const float* x, std::int64_t n, float p, bool lanes) {
    return kernels<float>().norm_row(x, n, p, lanes);
}
double norm_row(const double* x, std::int64_t n, double p, bool lanes) {
    return kernels<double>().norm_row(x, n, p, lanes);
}
void stream_fence() {
    _mm_sfence();
}

namespace {
thread_local bool g_fence_deferred = false;
}  // namespace

StreamFenceOnce::StreamFenceOnce() : outer_(!g_fence_deferred) {
    g_fence_deferred = true;
}
StreamFenceOnce::~StreamFenceOnce() {
    if (!outer_) return;
    g_fence_deferred = false;
    _mm_sfence();
}
bool stream_fence_deferred() {
    return g_fence_deferred;
}
void norm_apply(const float* x, float scale, float shift, const float* w, const float* b, float* y, std::int64_t n,
                bool stream, std::int64_t ahead, bool plus_zero) {
    kernels<float>().norm_apply(x, scale, shift, w, b, y, n, stream, ahead, plus_zero);
}
void norm_apply(const double* x, double scale, double shift, const double* w, const double* b, double* y,
                std::int64_t n, bool stream, std::int64_t ahead, bool plus_zero) {
    kernels<double>().norm_apply(x, scale, shift, w, b, y, n, stream, ahead, plus_zero);
}
void sum_cascade(const float* x, std::int64_t rows, std::int64_t stride, int power, float* out, bool square) {
    kernels<float>().sum_cascade(x, rows, stride, power, out, square);
}
void sum_cascade(const double* x, std::int64_t rows, std::int64_t stride, int power, double* out, bool square) {
    kernels<double>().sum_cascade(x, rows, stride, power, out, square);
}
void sum_rows_serial(const float* x, std::int64_t rows, std::int64_t n, float* out, bool square) {
    kernels<float>().sum_rows_serial(x, rows, n, out, square);
}
void sum_rows_serial(const double* x, std::int64_t rows, std::int64_t n, double* out, bool square) {
    kernels<double>().sum_rows_serial(x, rows, n, out, square);
}
void var_rows(const float* x, std::int64_t rows, std::int64_t n, double* mean, double* m2, std::int64_t ahead) {
    kernels<float>().var_rows(x, rows, n, mean, m2, ahead);
}
void var_rows(const double* x, std::int64_t rows, std::int64_t n, double* mean, double* m2, std::int64_t ahead) {
    kernels<double>().var_rows(x, rows, n, mean, m2, ahead);
}
double sq_dev_sum(const float* x, std::int64_t n, double c) {
    return kernels<float>().sq_dev_sum(x, n, c);
}
double sq_dev_sum(const double* x, std::int64_t n, double c) {
    return kernels<double>().sq_dev_sum(x, n, c);
}
void welford_rows(const float* x, std::int64_t rows, std::int64_t n, double* mean, double* m2) {
    kernels<float>().welford_rows(x, rows, n, mean, m2);
}
void welford_rows(const double* x, std::int64_t rows, std::int64_t n, double* mean, double* m2) {
    kernels<double>().welford_rows(x, rows, n, mean, m2);
}
bool has_small_gemm() {
    return kernels<float>().small_gemm != nullptr;
}
bool small_gemm(const float* a, std::int64_t ars, std::int64_t acs, const float* b, std::int64_t brs, std::int64_t bcs,
                float* c, std::int64_t n, std::int64_t m, std::int64_t k, bool accumulate) {
    const auto f = kernels<float>().small_gemm;
    if (!f) return false;
    f(a, ars, acs, b, brs, bcs, c, n, m, k, accumulate);
    return true;
}
bool small_gemm(const double* a, std::int64_t ars, std::int64_t acs, const double* b, std::int64_t brs,
                std::int64_t bcs, double* c, std::int64_t n, std::int64_t m, std::int64_t k, bool accumulate) {
    const auto f = kernels<double>().small_gemm;
    if (!f) return false;
    f(a, ars, acs, b, brs, bcs, c, n, m, k, accumulate);
    return true;
}
void sgd_update(float* p, const float* g, float* buf, const SgdCoefficients<float>& c, std::int64_t n) {
    kernels<float>().sgd(p, g, buf, c, n);
}
void sgd_update(double* p, const double* g, double* buf, const SgdCoefficients<double>& c, std::int64_t n) {
    kernels<double>().sgd(p, g, buf, c, n);
}
void lanes_fma_sums(const float* a, const float* b, std::int64_t n, float* acc_ab, float* acc_a) {
    kernels<float>().lanes_fma_sums(a, b, n, acc_ab, acc_a);
}
void lanes_fma_sums(const double* a, const double* b, std::int64_t n, double* acc_ab, double* acc_a) {
    kernels<double>().lanes_fma_sums(a, b, n, acc_ab, acc_a);
}
void group_norm_row_dx(const float* g, const float* x, float c1, float c2, float c3, float* dx, std::int64_t n) {
    kernels<float>().group_norm_row_dx(g, x, c1, c2, c3, dx, n);
}
void group_norm_row_dx(const double* g, const double* x, double c1, double c2, double c3, double* dx, std::int64_t n) {
    kernels<double>().group_norm_row_dx(g, x, c1, c2, c3, dx, n);
}
void batch_norm_row_dx(const float* g, const float* x, float mean, float k, float grad_mean, float invstd, float w,
                       float* dx, std::int64_t n) {
    kernels<float>().batch_norm_row_dx(g, x, mean, k, grad_mean, invstd, w, dx, n);
}
void batch_norm_row_dx(const double* g, const double* x, double mean, double k, double grad_mean, double invstd,
                       double w, double* dx, std::int64_t n) {
    kernels<double>().batch_norm_row_dx(g, x, mean, k, grad_mean, invstd, w, dx, n);
}
void cdist_forward_row(const float* x, const float* yt, std::int64_t stride, std::int64_t count, std::int64_t m, int p,
                       std::int64_t apart, float* out) {
    kernels<float>().cdist_forward_row(x, yt, stride, count, m, p, apart, out);
}
void cdist_forward_row(const double* x, const double* yt, std::int64_t stride, std::int64_t count, std::int64_t m,
                       int p, std::int64_t apart, double* out) {
    kernels<double>().cdist_forward_row(x, yt, stride, count, m, p, apart, out);
}
void cdist_backward_row(const float* x, const float* y, const float* g, const float* dist, std::int64_t rows,
                        std::int64_t m, int p, float* res) {
    kernels<float>().cdist_backward_row(x, y, g, dist, rows, m, p, res);
}
void cdist_backward_row(const double* x, const double* y, const double* g, const double* dist, std::int64_t rows,
                        std::int64_t m, int p, double* res) {
    kernels<double>().cdist_backward_row(x, y, g, dist, rows, m, p, res);
}
void axpy(float* y, const float* x, float a, std::int64_t n) {
    kernels<float>().axpy(y, x, a, n);
}
void axpy(double* y, const double* x, double a, std::int64_t n) {
    kernels<double>().axpy(y, x, a, n);
}
void adam_update(float* p, const float* g, float* m, float* v, float* vmax, const AdamCoefficients<float>& c,
                 std::int64_t n) {
    if (n > 0) kernels<float>().adam(p, g, m, v, vmax, c, n);
}
void adam_update(double* p, const double* g, double* m, double* v, double* vmax, const AdamCoefficients<double>& c,
                 std::int64_t n) {
    if (n > 0) kernels<double>().adam(p, g, m, v, vmax, c, n);
}
void layer_norm_row_backward(const float* g, const float* x, const float* w, float rstd, float mean, float* dx,
                             float* acc_w, float* acc_b, std::int64_t n, bool stream, std::int64_t ahead) {
    kernels<float>().layer_norm_row_backward(g, x, w, rstd, mean, dx, acc_w, acc_b, n, stream, ahead);
}
void layer_norm_row_backward(const double* g, const double* x, const double* w, double rstd, double mean, double* dx,
                             double* acc_w, double* acc_b, std::int64_t n, bool stream, std::int64_t ahead) {
    kernels<double>().layer_norm_row_backward(g, x, w, rstd, mean, dx, acc_w, acc_b, n, stream, ahead);
}
void layer_norm_rows_backward(const float* g, const float* x, const float* w, const float* rstd, const float* mean,
                              float* dx, float* acc_w, float* acc_b, std::int64_t n, std::int64_t rows, bool stream,
                              std::int64_t ahead) {
    kernels<float>().layer_norm_rows_backward(g, x, w, rstd, mean, dx, acc_w, acc_b, n, rows, stream, ahead);
}
void layer_norm_rows_backward(const double* g, const double* x, const double* w, const double* rstd, const double* mean,
                              double* dx, double* acc_w, double* acc_b, std::int64_t n, std::int64_t rows, bool stream,
                              std::int64_t ahead) {
    kernels<double>().layer_norm_rows_backward(g, x, w, rstd, mean, dx, acc_w, acc_b, n, rows, stream, ahead);
}
void rms_norm_row_terms(const float* g, const float* x, const float* w, float rstd, float* quad_sums, float* acc,
                        float* acc_rest, std::int64_t cut, std::int64_t n) {
    kernels<float>().rms_norm_row_terms(g, x, w, rstd, quad_sums, acc, acc_rest, cut, n);
}
void rms_norm_row_terms(const double* g, const double* x, const double* w, double rstd, double* quad_sums, double* acc,
                        double* acc_rest, std::int64_t cut, std::int64_t n) {
    kernels<double>().rms_norm_row_terms(g, x, w, rstd, quad_sums, acc, acc_rest, cut, n);
}
void rms_norm_row_dx(const float* g, const float* x, const float* w, float rstd, float dms, float* dx, std::int64_t n,
                     bool stream, std::int64_t ahead) {
    kernels<float>().rms_norm_row_dx(g, x, w, rstd, dms, dx, n, stream, ahead);
}
void rms_norm_row_dx(const double* g, const double* x, const double* w, double rstd, double dms, double* dx,
                     std::int64_t n, bool stream, std::int64_t ahead) {
    kernels<double>().rms_norm_row_dx(g, x, w, rstd, dms, dx, n, stream, ahead);
}

const char* simd_arch_name() {
    return current().name;
}

SimdArch simd_arch() {
    const VecMathTable* t = &current();
    detail::TableFor table_for;
    if (t == table_for(xsimd::avx512bw{})) return SimdArch::kAvx512;
    if (t == table_for(xsimd::fma3<xsimd::avx2>{})) return SimdArch::kAvx2;
    return SimdArch::kSse2;
}

bool simd_arch_supported(SimdArch arch) {
    switch (arch) {
        case SimdArch::kSse2:
            return true;
        case SimdArch::kAvx2:
            return avx2_ok();
        case SimdArch::kAvx512:
            return avx512_ok();
    }
    return false;
}

void set_simd_arch(SimdArch arch) {
    if (!simd_arch_supported(arch))
        throw std::invalid_argument("set_simd_arch: this CPU cannot run that instruction set");
    detail::TableFor table_for;
    const VecMathTable* t = arch == SimdArch::kAvx512 ? table_for(xsimd::avx512bw{})
                            : arch == SimdArch::kAvx2 ? table_for(xsimd::fma3<xsimd::avx2>{})
                                                      : table_for(xsimd::sse2{});
    current_slot().store(t, std::memory_order_relaxed);
}

}  // namespace xgrad::kernels::cpu
