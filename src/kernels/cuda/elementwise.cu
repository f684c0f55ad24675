// CUDA elementwise kernels: one thread per output element (grid-stride), operands read in place
// through their strides; the formulas are the CPU kernels' (cpu/elementwise.cpp), operation for
// operation, so that results differ only where CUDA's exp, log, tanh, erf and pow do.
#include <numbers>

#include "kernels/cuda/common.cuh"
#include "kernels/scalar_ops.hpp"

namespace xgrad::kernels::cuda {

namespace {

// GELU's constants, computed as the CPU kernels compute them.
constexpr double kBeta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;
constexpr double kInvSqrt2 = 1.0 / std::numbers::sqrt2;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;  // 1 / sqrt(2 pi)

template <typename T>
__device__ T unary_op(UnaryOp op, T x, T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case UnaryOp::kNeg:
                return -x;
            case UnaryOp::kAbs:
                return x < 0 ? -x : x;
            case UnaryOp::kAdd:
                return x + a;
            case UnaryOp::kSub:
                return x - a;
            case UnaryOp::kRsub:
                return a - x;
            case UnaryOp::kMul:
                return x * a;
            case UnaryOp::kClamp: {
                const T lo = x < a ? a : x;
                return b < lo ? b : lo;
            }
            default:
                return scalar::int_unary(op, x, a);  // kSign, kPowInt; the rest refused on the tensor side
        }
    } else {
        switch (op) {
            case UnaryOp::kNeg:
                return -x;
            case UnaryOp::kAbs:
                return m_abs(x);
            case UnaryOp::kSqrt:
                return m_sqrt(x);
            case UnaryOp::kRsqrt:
                return T(1) / m_sqrt(x);
            case UnaryOp::kExp:
                return m_exp(x);
            case UnaryOp::kLog:
                return m_log(x);
            case UnaryOp::kTanh:
                return m_tanh(x);
            case UnaryOp::kSigmoid:
                return T(1) / (T(1) + m_exp(-x));
            case UnaryOp::kRelu:
                return x < T(0) ? T(0) : x;  // NaN stays NaN
            case UnaryOp::kGelu:
            case UnaryOp::kGeluErf:
                return x * T(0.5) * (T(1) + m_erf(x * T(kInvSqrt2)));
            case UnaryOp::kGeluTanh:
                return T(0.5) * x * (T(1) + m_tanh(T(kBeta) * (x + T(kKappa) * x * x * x)));
            case UnaryOp::kSquare:
                return x * x;
            case UnaryOp::kCube:
                return x * x * x;
            case UnaryOp::kReciprocal:
                return T(1) / x;
            case UnaryOp::kPow:
                return a < T(0) && x == T(0) ? m_inf<T>() : m_pow(x, a);
            case UnaryOp::kAdd:
                return x + a;
            case UnaryOp::kSub:
                return x - a;
            case UnaryOp::kRsub:
                return a - x;
            case UnaryOp::kMul:
                return x * a;
            case UnaryOp::kDiv:
                return x / a;
            case UnaryOp::kClamp: {
                if (is_nan(x)) return x;
                const T lo = x < a ? a : x;
                return b < lo ? b : lo;  // min(max(x, a), b): a max below min gives max everywhere
            }
            case UnaryOp::kErf:
                return m_erf(x);
            default:
                return scalar::float_unary(op, x, a, b);  // the CPU's formulas (kernels/scalar_ops.hpp)
        }
    }
}

template <typename T>
__device__ T binary_op(BinaryOp op, T x, T y, T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case BinaryOp::kAdd:
                return x + y;
            case BinaryOp::kSub:
                return x - y;
            case BinaryOp::kMul:
                return x * y;
            case BinaryOp::kMaximum:
                return x < y ? y : x;
            case BinaryOp::kMinimum:
                return y < x ? y : x;
            default:
                return scalar::int_binary(op, x, y);  // pow and the divisions; the rest refused on the tensor side
        }
    } else {
        switch (op) {
            case BinaryOp::kAdd:
                return x + y;
            case BinaryOp::kSub:
                return x - y;
            case BinaryOp::kMul:
                return x * y;
            case BinaryOp::kDiv:
                return x / y;
            case BinaryOp::kPow:
                return y == T(0) ? T(1) : x == T(0) ? (y < T(0) ? m_inf<T>() : T(0)) : m_pow(x, y);
            case BinaryOp::kMaximum:
                return nan_max(x, y);
            case BinaryOp::kMinimum:
                return nan_min(x, y);
            case BinaryOp::kAbsBackward:
                return x * (y > T(0) ? T(1) : y < T(0) ? T(-1) : T(0));
            case BinaryOp::kTanhBackward:
                return x * fma(-y, y, T(1));  // PyTorch's x * (1 - y * y), fused as its compiler does
            case BinaryOp::kSigmoidBackward:
                return x * (T(1) - y) * y;  // PyTorch's order
            case BinaryOp::kReluBackward:
                return y <= T(0) ? T(0) : x;
            case BinaryOp::kGeluBackward:
            case BinaryOp::kGeluErfBackward:
                return x * (T(0.5) * (T(1) + m_erf(y * T(kInvSqrt2))) + y * T(kInvSqrt2Pi) * m_exp(T(-0.5) * y * y));
            case BinaryOp::kGeluTanhBackward: {
                const T t = m_tanh(T(kBeta) * (y + T(kKappa) * y * y * y));
                return x *
                       (T(0.5) * (T(1) + t) + T(0.5) * y * (T(1) - t * t) * T(kBeta) * (T(1) + T(3 * kKappa) * y * y));
            }
            case BinaryOp::kClampBackward:
                return y >= a && y <= b ? x : T(0);
            case BinaryOp::kStdBackward:
                return y == T(0) ? T(0) : x / (y * a);
            case BinaryOp::kPowBaseGrad:
                return y == T(0) ? T(0) : x;
            case BinaryOp::kPowLogBase:
                return x == T(0) && y >= T(0) ? T(0) : m_log(x);
            case BinaryOp::kMaxShare:
                return x == y ? T(0.5) : x < y ? T(0) : T(1);
            case BinaryOp::kMinShare:
                return x == y ? T(0.5) : x > y ? T(0) : T(1);
            case BinaryOp::kEqualOrBothNan:
                return x == y || (is_nan(x) && is_nan(y)) ? T(1) : T(0);
            default:
                return scalar::float_binary(op, x, y, a, b);  // the CPU's formulas (kernels/scalar_ops.hpp)
        }
    }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* out, Walk<1> walk, T a, T b) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[1];
        walk_offsets(walk, i, off);
        out[i] = unary_op(op, x[off[0]], a, b);
    }
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* x, const T* y, T* out, Walk<2> walk, T a, T b) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[2];
        walk_offsets(walk, i, off);
        out[i] = binary_op(op, x[off[0]], y[off[1]], a, b);
    }
}

/// PyTorch's lerp, each form one fused multiply-add (as PyTorch's CUDA kernel, which nvcc fuses).
template <typename T>
__global__ void lerp_kernel(const T* self, const T* end, const T* weight, T* out, Walk<3> walk) {
    for (i64 i = blockIdx.x * i64{blockDim.x} + threadIdx.x; i < walk.numel; i += i64{gridDim.x} * blockDim.x) {
        i64 off[3];
        walk_offsets(walk, i, off);
        const T a = self[off[0]], b = end[off[1]], w = weight[off[2]], d = b - a;
        out[i] = w < T(0.5) ? fma(w, d, a) : fma(-d, T(1) - w, b);
    }
}

}  // namespace

void lerp(Scalar t, const void* self, const void* end, const void* weight, void* out, const Walk<3>& walk) {
    if (walk.numel == 0) return;
    dispatch_float(t, "lerp", [&](auto tag) {
        using T = decltype(tag);
        lerp_kernel<T><<<blocks_for(walk.numel), kThreads>>>(static_cast<const T*>(self), static_cast<const T*>(end),
                                                             static_cast<const T*>(weight), static_cast<T*>(out), walk);
    });
    check_launch("lerp kernel");
}

void unary(UnaryOp op, Scalar t, const void* x, void* out, const Walk<1>& walk, double a, double b) {
    if (walk.numel == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        unary_kernel<T><<<blocks_for(walk.numel), kThreads>>>(op, static_cast<const T*>(x), static_cast<T*>(out), walk,
                                                              static_cast<T>(a), static_cast<T>(b));
    });
    check_launch("unary kernel");
}

void binary(BinaryOp op, Scalar t, const void* x, const void* y, void* out, const Walk<2>& walk, double a, double b) {
    if (walk.numel == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        binary_kernel<T><<<blocks_for(walk.numel), kThreads>>>(op, static_cast<const T*>(x), static_cast<const T*>(y),
                                                               static_cast<T*>(out), walk, static_cast<T>(a),
                                                               static_cast<T>(b));
    });
    check_launch("binary kernel");
}

}  // namespace xgrad::kernels::cuda
