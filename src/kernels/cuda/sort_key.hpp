// The CUDA sort's keys: each element becomes an unsigned integer whose plain ascending order is the
// order sort_rows gives (NaN above every number, -0 equal to +0, descending as the keys' complement),
// so that a stable radix sort of (key, index) pairs sorts the row with ties in index order. Plain
// C++ for the host as well, so that a CPU test checks the order against the CPU kernel's.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define XGRAD_HOST_DEVICE __host__ __device__
#else
#define XGRAD_HOST_DEVICE
#endif

namespace xgrad::kernels::cuda {

/// The unsigned key type of an element type: as wide as the element.
template <typename T>
struct SortKey;
template <>
struct SortKey<float> {
    using type = std::uint32_t;
};
template <>
struct SortKey<double> {
    using type = std::uint64_t;
};
template <>
struct SortKey<std::int64_t> {
    using type = std::uint64_t;
};

/// The key of `v`: keys compare as the values do in sort_rows' order (ascending, or descending when
/// `descending`), and equal values (every NaN alike, -0 and +0) get equal keys.
template <typename T>
XGRAD_HOST_DEVICE inline typename SortKey<T>::type sort_key(T v, bool descending) {
    using U = typename SortKey<T>::type;
    constexpr U kSign = U{1} << (8 * sizeof(U) - 1);
    U u;
    if constexpr (std::is_floating_point_v<T>) {
        // Floating point: one NaN for all (the positive quiet NaN, above +inf once mapped), +0 for
        // -0; then the sign-magnitude bits in unsigned order: negatives reversed below the positives.
        constexpr auto kQuietNaN = static_cast<U>(sizeof(U) == 4 ? 0x7fc00000ull : 0x7ff8000000000000ull);
        if (v != v) {
            u = kQuietNaN;
        } else {
            if (v == 0) v = 0;
            std::memcpy(&u, &v, sizeof u);
        }
        u = (u & kSign) != 0 ? ~u : u | kSign;
    } else {
        u = static_cast<U>(v) ^ kSign;  // int64: offset binary
    }
    return descending ? ~u : u;
}

}  // namespace xgrad::kernels::cuda

#undef XGRAD_HOST_DEVICE
