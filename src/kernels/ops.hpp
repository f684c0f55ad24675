// The operations of the elementwise kernels, shared by every device's kernels (and by the CUDA
// sources, which include nothing else of xgrad's).
#pragma once

#include <cstdint>

namespace xgrad::kernels {

/// Elementwise maps of one operand; `a` and `b` are the op's scalar arguments where it has them.
enum class UnaryOp : std::uint8_t {
    kNeg,
    kAbs,
    kSqrt,
    kRsqrt,
    kExp,
    kLog,
    kTanh,
    kSigmoid,
    kRelu,
    kGelu,        // erf form
    kGeluTanh,    // tanh approximation
    kSquare,      // pow(x, 2)
    kCube,        // pow(x, 3)
    kReciprocal,  // pow(x, -1)
    kPow,         // pow(x, a), with x ** a = inf at x == 0 for a < 0
    kAdd,         // x + a
    kSub,         // x - a
    kRsub,        // a - x
    kMul,         // x * a
    kDiv,         // x / a
    kClamp,       // min(max(x, a), b), NaN kept
};

/// Elementwise maps of two operands (forward ops and the backward formulas that need both).
enum class BinaryOp : std::uint8_t {
    kAdd,
    kSub,
    kMul,
    kDiv,
    kPow,               // x ** y with C's x ** 0 == 1 and 0 ** y == inf for y < 0
    kMaximum,           // NaN propagates
    kMinimum,           // NaN propagates
    kAbsBackward,       // g * sign(x)
    kTanhBackward,      // g * (1 - o²), o = tanh(x)
    kSigmoidBackward,   // g * o * (1 - o), o = sigmoid(x)
    kReluBackward,      // o <= 0 ? 0 : g, o = relu(x)
    kGeluBackward,      // g * (Phi(x) + x phi(x))
    kGeluTanhBackward,  // g * d/dx gelu_tanh(x)
    kClampBackward,     // a <= x <= b ? g : 0
    kStdBackward,       // o == 0 ? 0 : g / (o * a)
    kPowBaseGrad,       // y == 0 ? 0 : x (masks b * a^(b-1) where the exponent is 0)
    kPowLogBase,        // x == 0 && y >= 0 ? 0 : log(x)
    kMaxShare,          // x == y ? 0.5 : x < y ? 0 : 1 (maximum's gradient share)
    kMinShare,          // x == y ? 0.5 : x > y ? 0 : 1
    kEqualOrBothNan,    // x == y || (x, y both NaN) ? 1 : 0
};

/// The geometry of a 2-D sliding window (convolution or pooling) over planes of height × width:
/// output (out_h, out_w), window `kernel_*` with `stride_*`, `pad_*` and `dilation_*`. `adaptive`:
/// adaptive pooling's windows, [⌊i·in/out⌋, ⌈(i+1)·in/out⌉), the other fields but out_* unused.
struct Window2d {
    std::int64_t channels = 1, height = 1, width = 1;
    std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    std::int64_t dilation_h = 1, dilation_w = 1, out_h = 1, out_w = 1;
    bool adaptive = false;
    bool count_include_pad = true;  ///< avg pooling: padded zeros count in the divisor.
};

}  // namespace xgrad::kernels
