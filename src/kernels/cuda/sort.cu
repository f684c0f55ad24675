// CUDA sorting over rows: each element becomes an unsigned key that orders as sort_rows must
// (sort_key.hpp), CUB's stable radix sort orders the (key, index) pairs of every row (one device-wide
// sort for a single row, CUB's segmented sort for many), and a gather writes the first k values and
// indices of each row. O(width · log) work per row, with scratch memory from the caching allocator;
// ties stay in index order. Then the gradients' scatter, one thread per element.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <climits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sort_key.hpp"

namespace xgrad::kernels::cuda {

namespace {

/// keys[e] = sort_key(in[e]), pos[e] = e's index in its row; offsets[r] = r * width for r <= rows.
template <typename T>
__global__ void sort_keys_kernel(const T* in, typename SortKey<T>::type* keys, i64* pos, i64* offsets, i64 rows,
                                 i64 width, bool descending) {
    const i64 n = rows * width, stride = i64{gridDim.x} * blockDim.x;
    for (i64 e = blockIdx.x * i64{blockDim.x} + threadIdx.x; e < n; e += stride) {
        keys[e] = sort_key(in[e], descending);
        pos[e] = e % width;
    }
    for (i64 r = blockIdx.x * i64{blockDim.x} + threadIdx.x; r <= rows; r += stride) offsets[r] = r * width;
}

/// The first k of each sorted row: values from the input, indices as sorted.
template <typename T>
__global__ void gather_sorted_kernel(const T* in, const i64* sorted_pos, T* values, i64* indices, i64 rows, i64 width,
                                     i64 k) {
    const i64 n = rows * k;
    for (i64 e = blockIdx.x * i64{blockDim.x} + threadIdx.x; e < n; e += i64{gridDim.x} * blockDim.x) {
        const i64 r = e / k, j = e % k;
        const i64 i = sorted_pos[r * width + j];
        values[e] = in[r * width + i];
        indices[e] = i;
    }
}

/// Sorts the (key, position) pairs of `rows` rows of `width` stably by key, in the buffers' two
/// halves (CUB's DoubleBuffer: no copy of the input, little scratch); returns where the sorted
/// positions are.
template <typename K>
const i64* sort_pairs(K* keys, i64* pos, const i64* offsets, i64 rows, i64 width) {
    const i64 n = rows * width;
#if CUB_VERSION < 300000
    // CUB before CCCL 3 counts items and segments in int.
    if (n > INT_MAX) throw std::invalid_argument("sort: CUDA rows of more than 2^31 - 1 elements in all");
#endif
    cub::DoubleBuffer<K> k(keys, keys + n);
    cub::DoubleBuffer<i64> p(pos, pos + n);
    std::size_t bytes = 0;
    auto run = [&](void* scratch) {
        return rows == 1
                   ? cub::DeviceRadixSort::SortPairs(scratch, bytes, k, p, n)
                   : cub::DeviceSegmentedSort::StableSortPairs(scratch, bytes, k, p, n, rows, offsets, offsets + 1);
    };
    check(run(nullptr), "sort");
    Scratch scratch(bytes, current_device());
    check(run(scratch.as<void>()), "sort");
    return p.Current();
}

/// dx[r, idx[r, j]] += g[r, j], one thread per (r, j): the indices of a row are distinct (a sort's or a
/// top-k's, or one per row), so no two threads add to the same element.
template <typename T>
__global__ void scatter_kernel(const T* g, const i64* idx, T* dx, i64 rows, i64 width, i64 k) {
    const i64 n = rows * k;
    for (i64 e = blockIdx.x * i64{blockDim.x} + threadIdx.x; e < n; e += i64{gridDim.x} * blockDim.x)
        dx[e / k * width + idx[e]] += g[e];
}

}  // namespace

void sort_rows(Scalar t, const void* in, void* values, void* indices, std::int64_t rows, std::int64_t width,
               std::int64_t k, bool descending) {
    if (rows == 0 || width == 0 || k == 0) return;
    dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        using K = typename SortKey<T>::type;
        const i64 n = rows * width;
        const int device = current_device();
        Scratch keys(2 * n * sizeof(K), device), pos(2 * n * sizeof(i64), device),
            offsets((rows + 1) * sizeof(i64), device);
        K* k_in = keys.as<K>();
        i64* p_in = pos.as<i64>();
        sort_keys_kernel<T><<<blocks_for(std::max(n, rows + 1)), kThreads>>>(
            static_cast<const T*>(in), k_in, p_in, offsets.as<i64>(), rows, width, descending);
        check_launch("sort kernel");
        const i64* sorted = sort_pairs(k_in, p_in, offsets.as<i64>(), rows, width);
        gather_sorted_kernel<T><<<blocks_for(rows * k), kThreads>>>(
            static_cast<const T*>(in), sorted, static_cast<T*>(values), static_cast<i64*>(indices), rows, width, k);
        check_launch("sort kernel");
    });
}

void scatter_rows(Scalar t, const void* grad, const void* indices, void* dx, std::int64_t rows, std::int64_t width,
                  std::int64_t k) {
    if (rows == 0 || k == 0) return;
    dispatch_float(t, "scatter", [&](auto tag) {
        using T = decltype(tag);
        scatter_kernel<T><<<blocks_for(rows * k), kThreads>>>(
            static_cast<const T*>(grad), static_cast<const i64*>(indices), static_cast<T*>(dx), rows, width, k);
    });
    check_launch("sort backward kernel");
}

}  // namespace xgrad::kernels::cuda
