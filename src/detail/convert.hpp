// Value conversions between dtypes with the results PyTorch gives on x86-64, defined for every input.
#pragma once

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#define XGRAD_HOST_DEVICE __host__ __device__
#else
#define XGRAD_HOST_DEVICE
#endif

namespace xgrad::detail {

/// `v` as a D. A floating value that an integer type cannot hold (NaN, ±inf, out of range) is
/// undefined behaviour for static_cast; xgrad gives what x86-64's truncating conversion (cvttsd2si)
/// and so PyTorch's CPU casts give: the "integer indefinite" value, the type's minimum.
template <typename D, typename S>
XGRAD_HOST_DEVICE inline D convert(S v) {
    if constexpr (std::is_integral_v<D> && std::is_signed_v<D> && std::is_floating_point_v<S>) {
        // Spelled without std::numeric_limits so that CUDA device code can use it too.
        constexpr D kMax = static_cast<D>(static_cast<std::make_unsigned_t<D>>(~std::make_unsigned_t<D>{0}) >> 1);
        constexpr D kMin = -kMax - 1;
        constexpr S lo = static_cast<S>(kMin);  // -2^(bits-1): exact in float and double
        constexpr S hi = -lo;                   // 2^(bits-1) itself is out of range
        return v >= lo && v < hi ? static_cast<D>(v) : kMin;
    } else if constexpr (std::is_same_v<D, bool>) {
        return v != 0;
    } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) {
        // Unsigned: through int64 and then modulo 2^bits, as c10's casts to uint8 do.
        return static_cast<D>(convert<std::int64_t>(v));
    } else {
        return static_cast<D>(v);
    }
}

/// True when the scalar `v` converts to an int64 without overflow (PyTorch's check on scalar
/// arguments of integer tensors: factories, fill_).
inline bool fits_int64(double v) {
    return v >= -0x1p63 && v < 0x1p63;
}

}  // namespace xgrad::detail
