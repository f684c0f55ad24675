// Dtype dispatch: calls a generic lambda with a value of the C++ type a tensor's dtype stands for.
// Free of xtensor, so kernels that do not need it compile fast.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "detail/tensor_impl.hpp"

namespace xgrad::detail {

/// Calls `f(T{})` with T the C++ type of `dtype`.
template <typename F>
decltype(auto) dispatch(DType dtype, F&& f) {
    switch (dtype) {
        case DType::kFloat32:
            return f(float{});
        case DType::kFloat64:
            return f(double{});
        case DType::kInt64:
            return f(std::int64_t{});
    }
    throw std::logic_error("dispatch: unknown dtype");
}

/// Like dispatch, but only for floating-point dtypes; throws naming `op` for int64.
template <typename F>
decltype(auto) dispatch_float(DType dtype, const char* op, F&& f) {
    switch (dtype) {
        case DType::kFloat32:
            return f(float{});
        case DType::kFloat64:
            return f(double{});
        default:
            fail(op, "needs a floating-point tensor, got " + to_string(dtype));
    }
}

}  // namespace xgrad::detail
