// CPU comparisons and logical ops: runs of the innermost dim read in place through their strides
// (broadcast operands have stride 0), large outputs split between threads.
#include <type_traits>

#include "detail/dispatch.hpp"
#include "kernels/compare_op.hpp"
#include "kernels/cpu/cpu.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

static_assert(static_cast<int>(CompareOp::kEq) == static_cast<int>(Compare::kEq) &&
              static_cast<int>(CompareOp::kNe) == static_cast<int>(Compare::kNe) &&
              static_cast<int>(CompareOp::kLt) == static_cast<int>(Compare::kLt) &&
              static_cast<int>(CompareOp::kLe) == static_cast<int>(Compare::kLe) &&
              static_cast<int>(CompareOp::kGt) == static_cast<int>(Compare::kGt) &&
              static_cast<int>(CompareOp::kGe) == static_cast<int>(Compare::kGe));

namespace {

/// Calls f(std::integral_constant<CompareOp, op>{}): the op fixed for the loop that f runs.
template <typename F>
void with_op(CompareOp op, F&& f) {
    using C = CompareOp;
    switch (op) {
        case C::kEq:
            return f(std::integral_constant<C, C::kEq>{});
        case C::kNe:
            return f(std::integral_constant<C, C::kNe>{});
        case C::kLt:
            return f(std::integral_constant<C, C::kLt>{});
        case C::kLe:
            return f(std::integral_constant<C, C::kLe>{});
        case C::kGt:
            return f(std::integral_constant<C, C::kGt>{});
        case C::kGe:
            return f(std::integral_constant<C, C::kGe>{});
        case C::kLogicalAnd:
            return f(std::integral_constant<C, C::kLogicalAnd>{});
        case C::kLogicalOr:
            return f(std::integral_constant<C, C::kLogicalOr>{});
        case C::kLogicalXor:
            return f(std::integral_constant<C, C::kLogicalXor>{});
        case C::kIsNan:
            return f(std::integral_constant<C, C::kIsNan>{});
        case C::kIsInf:
            return f(std::integral_constant<C, C::kIsInf>{});
        case C::kIsPosInf:
            return f(std::integral_constant<C, C::kIsPosInf>{});
        case C::kIsNegInf:
            return f(std::integral_constant<C, C::kIsNegInf>{});
        case C::kIsFinite:
            return f(std::integral_constant<C, C::kIsFinite>{});
    }
}

}  // namespace

void compare(CompareOp op, const Tensor& x, const Tensor& y, const Tensor& out) {
    const std::int64_t n = out.numel();
    if (n == 0) return;
    bool* po = out.impl()->data<bool>();
    detail::dispatch_all(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* px = static_cast<const T*>(x.impl()->storage->data);
        const T* py = static_cast<const T*>(y.impl()->storage->data);
        const StridedGeometry<2> geo(out.shape(), {&x, &y});
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
            std::int64_t i = lo;
            geo.for_runs(lo, hi, [&](std::int64_t count, const auto& off, const auto& st) {
                const T* a = px + off[0];
                const T* b = py + off[1];
                // The relational ops on runs or single values (x > 0): vec_math, a batch at a time.
                if constexpr (std::is_floating_point_v<T>) {
                    if (op <= CompareOp::kGe && (st[0] == 0 || st[0] == 1) && (st[1] == 0 || st[1] == 1)) {
                        vcompare(static_cast<Compare>(op), a, st[0], b, st[1], po + i, count);
                        i += count;
                        return;
                    }
                }
                // The others with the op fixed per run (no switch per element, and branch-free formulas:
                // logical_and of random masks was 45 times PyTorch's time with them), contiguous runs
                // apart so that the compiler vectorises them.
                bool* o = po + i;
                with_op(op, [&](auto k) {
                    constexpr CompareOp kOp = decltype(k)::value;
                    if (st[0] == 1 && st[1] == 1) {
                        for (std::int64_t j = 0; j < count; ++j) o[j] = scalar::compare(kOp, a[j], b[j]);
                    } else if (st[0] == 1 && st[1] == 0) {  // against one value (x == 0, logical_not)
                        const T v = b[0];
                        for (std::int64_t j = 0; j < count; ++j) o[j] = scalar::compare(kOp, a[j], v);
                    } else {
                        for (std::int64_t j = 0; j < count; ++j)
                            o[j] = scalar::compare(kOp, a[j * st[0]], b[j * st[1]]);
                    }
                });
                i += count;
            });
        });
    });
}

}  // namespace xgrad::kernels::cpu
