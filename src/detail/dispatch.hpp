// Dtype dispatch: calls a generic lambda with a value of the C++ type a tensor's dtype stands for.
// Free of xtensor, so kernels that do not need it compile fast.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "detail/tensor_impl.hpp"

namespace xgrad::detail {

/// Throws for a dtype that a compute kernel was not built for (ops bring bool, uint8 and int32
/// operands to int64 or a floating type before they reach one).
[[noreturn]] inline void unsupported_dtype(DType dtype) {
    fail("xgrad", "this operation does not support " + to_string(dtype) + " tensors");
}

/// Calls `f(T{})` with T the C++ type of `dtype`, for the compute dtypes (float32, float64, int64).
template <typename F>
decltype(auto) dispatch(DType dtype, F&& f) {
    switch (dtype) {
        case DType::kFloat32:
            return f(float{});
        case DType::kFloat64:
            return f(double{});
        case DType::kInt64:
            return f(std::int64_t{});
        default:
            unsupported_dtype(dtype);
    }
}

/// Like dispatch, for every dtype (bool, uint8 and int32 too): copies, fills, printing, indexing.
template <typename F>
decltype(auto) dispatch_all(DType dtype, F&& f) {
    switch (dtype) {
        case DType::kFloat32:
            return f(float{});
        case DType::kFloat64:
            return f(double{});
        case DType::kInt64:
            return f(std::int64_t{});
        case DType::kBool:
            return f(bool{});
        case DType::kInt32:
            return f(std::int32_t{});
        case DType::kUInt8:
            return f(std::uint8_t{});
    }
    unsupported_dtype(dtype);
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
