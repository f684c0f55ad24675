// The formula of each comparison and logical op (kernels::CompareOp), written once for the CPU loop
// and the CUDA threads, so that both devices give the same bools.
#pragma once

#include "kernels/ops.hpp"
#include "kernels/scalar_ops.hpp"

namespace xgrad::kernels::scalar {

/// `op(x, y)` for one pair of elements. IEEE comparisons: every test with a NaN is false but kNe.
template <typename T>
XGRAD_HD inline bool compare(CompareOp op, T x, T y) {
    constexpr bool kFloating = !std::is_integral_v<T>;
    switch (op) {
        case CompareOp::kEq:
            return x == y;
        case CompareOp::kNe:
            return x != y;
        case CompareOp::kLt:
            return x < y;
        case CompareOp::kLe:
            return x <= y;
        case CompareOp::kGt:
            return x > y;
        case CompareOp::kGe:
            return x >= y;
        case CompareOp::kLogicalAnd:  // & and |, not && and ||: no branch on the first operand
            return (x != T(0)) & (y != T(0));
        case CompareOp::kLogicalOr:
            return (x != T(0)) | (y != T(0));
        case CompareOp::kLogicalXor:
            return (x != T(0)) != (y != T(0));
        case CompareOp::kIsNan:
            return x != x;
        case CompareOp::kIsInf:
            if constexpr (kFloating) return x - x != x - x && x == x;  // ±inf: inf - inf is NaN
            return false;
        case CompareOp::kIsPosInf:
            if constexpr (kFloating) return x - x != x - x && x > T(0);
            return false;
        case CompareOp::kIsNegInf:
            if constexpr (kFloating) return x - x != x - x && x < T(0);
            return false;
        case CompareOp::kIsFinite:
            return x - x == x - x;  // NaN for NaN and ±inf, 0 otherwise (always true for integers)
    }
    return false;
}

}  // namespace xgrad::kernels::scalar
