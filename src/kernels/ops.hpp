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
    // ---- more maths and activations (issue 11); integer tensors take kSign and kPowInt only ----
    kErf,
    kSin,
    kCos,
    kTan,
    kAsin,
    kAcos,
    kAtan,
    kSinh,
    kCosh,
    kLog2,
    kLog10,
    kLog1p,
    kExpm1,
    kExp2,
    kSign,  // -1, 0 or 1 (NaN stays, -0 gives 0)
    kFloor,
    kCeil,
    kRound,  // half to even, as torch.round
    kTrunc,
    kPowInt,       // integer x ** a, a >= 0, wrapping as PyTorch's powi
    kSoftplus,     // beta a, threshold b
    kSilu,         // x * sigmoid(x)
    kMish,         // x * tanh(softplus(x))
    kLeakyRelu,    // x > 0 ? x : a x
    kElu,          // x > 0 ? x : a (exp(b x) - 1): ELU (b = 1) and CELU (a = alpha, b = 1 / alpha)
    kSelu,         // scale * elu(x, alpha) with SELU's constants
    kHardsigmoid,  // clamp(x + 3, 0, 6) / 6
    kHardswish,    // x * hardsigmoid(x)
    kLogSigmoid,   // min(x, 0) - log1p(exp(-|x|))
    kGeluErf,      // gelu's erf form by PyTorch's own formula (float32 that oneDNN does not take; kGelu else)
    kLogLibm,      // log by the C library, element by element (PyTorch's scalar loop of xlogy)
    kSmoothL1,     // z = |x|: z < a ? 0.5 z z / a : z - 0.5 a (smooth_l1_loss of x = input - target, beta a)
    kHuber,        // z = |x|: z < a ? 0.5 z z : a (z - 0.5 a) (huber_loss of x = input - target, delta a)
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
    kPowBackward,       // x * (y * a): pow's gradient g * (e x^(e-1)) with y = x^(e-1), a = e (PyTorch's order)
    kMaxShare,          // x == y ? 0.5 : x < y ? 0 : 1 (maximum's gradient share)
    kMinShare,          // x == y ? 0.5 : x > y ? 0 : 1
    kEqualOrBothNan,    // x == y || (x, y both NaN) ? 1 : 0
    // ---- more maths and activations (issue 11); backward ops take (g, x) ----
    kAtan2,             // atan2(x, y)
    kRemainder,         // x - y floor(x / y), sign of y (Python's %)
    kFmod,              // C's fmod, sign of x
    kDivTrunc,          // trunc(x / y)
    kDivFloor,          // floor(x / y), Python's //
    kSoftplusBackward,  // beta a, threshold b
    kSiluBackward,
    kMishBackward,
    kLeakyReluBackward,  // slope a
    kEluBackward,        // alpha a, input scale b
    kSeluBackward,
    kHardtanhBackward,  // a < x < b ? g : 0
    kHardsigmoidBackward,
    kHardswishBackward,
    kLogSigmoidBackward,
    kGeluErfBackward,    // kGeluBackward by PyTorch's own formula (as kGeluErf)
    kSmoothL1Backward,   // (|x| >= a ? sign(x) : x / a) * b * g: beta a, norm b (the vector formula)
    kHuberBackward,      // (|x| >= a ? sign(x) * a : x) * b * g: delta a, norm b (likewise)
    kGlu,                // x s, s = 1 / (1 + exp(-y)): glu of the halves x and y
    kGluBackwardFirst,   // s g, s = sigmoid(y): glu's gradient for its first half (g, y = the second half)
    kGluBackwardSecond,  // (1 - s) s x, s = sigmoid(y): for its second half, before the product with g
    kLogAddExp,          // max(x, y) + log(1 + exp(-|x - y|)); x where x and y are the same infinity
    kLogAddExp2,         // max(x, y) + log2(1 + pow(2, -|x - y|)); likewise
    // ---- integer bitwise ops (issue 11, the & | ^ operators); int64 only ----
    kBitAnd,
    kBitOr,
    kBitXor,
};

// ---- comparisons and logical ops (issue 11, the compare kernel) ----
/// Tests of two operands that give a bool: out = op(x, y). The unary tests read x only.
enum class CompareOp : std::uint8_t {
    kEq,  // IEEE: a NaN compares false, except under kNe
    kNe,
    kLt,
    kLe,
    kGt,
    kGe,
    kLogicalAnd,  // nonzero is true (NaN too)
    kLogicalOr,
    kLogicalXor,
    kIsNan,  // of x only
    kIsInf,
    kIsPosInf,
    kIsNegInf,
    kIsFinite,
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
    std::int64_t divisor = 0;       ///< avg pooling: PyTorch's divisor_override when non-zero.
};

/// Adam's coefficients for one step of one or more parameters (PyTorch 1.13's _single_tensor_adam).
struct AdamStep {
    double beta1 = 0, beta2 = 0, step_size = 0, bias_correction2_sqrt = 1, eps = 0;
};

/// SGD's hyper-parameters for one step (PyTorch 1.13's _single_tensor_sgd).
struct SgdStep {
    double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
    bool nesterov = false, maximize = false;
    /// The momentum buffer is new: it takes the step's d_p undampened (PyTorch's `torch.clone(d_p)`).
    bool first = false;
};

/// Which operands of a matrix product are read transposed (their last two dims swapped), as BLAS reads
/// an operand through a transpose flag: the product then needs no transposed view of it, whose
/// handle and reference counts cost a small model's step a few percent.
struct Transpose {
    bool a = false;
    bool b = false;
};

}  // namespace xgrad::kernels
