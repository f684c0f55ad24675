// The binary search of searchsorted and bucketize, shared by the CPU and CUDA kernels: PyTorch's lower
// and upper bounds written with negated comparisons, so that a NaN value goes after every element.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define XGRAD_SEARCH_HOST_DEVICE __host__ __device__
#else
#define XGRAD_SEARCH_HOST_DEVICE
#endif

namespace xgrad::kernels {

/// The first position p of row[0, m) with !(row[p] < value) (with `right`: !(row[p] <= value)),
/// found by bisection as PyTorch's searchsorted finds it (also for a row that is not sorted).
template <typename T>
XGRAD_SEARCH_HOST_DEVICE inline std::int64_t search_position(const T* row, std::int64_t m, T value, bool right) {
    std::int64_t lo = 0, hi = m;
    while (lo < hi) {
        const std::int64_t mid = lo + ((hi - lo) >> 1);
        const bool before = right ? !(row[mid] > value) : !(row[mid] >= value);
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

}  // namespace xgrad::kernels
