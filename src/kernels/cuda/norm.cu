// CUDA LayerNorm and RMSNorm, forward and backward, fused. The formulas are the CPU kernels'
// (cpu/norm.cpp); row sums accumulate in double (on the fast path, each thread's few values in T first).
//
// The fast path (rows of 8 to 8192 float32 or 4 to 4096 float64 elements, a whole number of 16-byte
// vectors, 16-byte aligned): a group of 32 to 512 threads per row holds the row in registers, read
// with 16-byte loads, so x is read from memory once in the forward pass and x and dy once in the
// backward pass, which also computes dweight and dbias: each thread adds up g * xhat and g of its
// own columns over the rows its group visits, the groups of a block add theirs, and one small kernel
// adds the blocks' partial sums (llm.c's layout; no second pass over x and dy). The grid is one wave
// of resident blocks, each loading its next row while it reduces and writes the current one; where x
// and y exceed L2, the forward streams them (evict-first loads and stores, the row after next asked
// of L2, the weights read per row so that more blocks fit). LayerNorm's mean and variance take two
// passes over the registers, as on the CPU. Other rows take the general kernels: one block per row, a
// second kernel for the column sums.
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

/// Rows narrower than one AVX2 register take the CPU's scalar path (Welford, then a fused
/// multiply-add per element); here every thread of the block computes those few moments itself.
template <typename T>
constexpr i64 kNarrow = 32 / static_cast<i64>(sizeof(T));

// ---- forward ------------------------------------------------------------------------------------------

template <typename T>
__global__ void layer_norm_forward_kernel(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd, i64 rows,
                                          i64 width) {
    __shared__ double shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * width;
        T* yr = y + r * width;
        const bool narrow = width < kNarrow<T>;
        T m = 0, rs;
        if (narrow) {
            T m2 = 0;
            for (i64 j = 0; j < width; ++j) {
                const T d = xr[j] - m;
                m += d / static_cast<T>(j + 1);
                m2 += d * (xr[j] - m);
            }
            rs = T(1) / m_sqrt(m2 / static_cast<T>(width) + eps);
        } else {
            double s = 0;
            for (i64 j = threadIdx.x; j < width; j += blockDim.x) s += static_cast<double>(xr[j]);
            m = static_cast<T>(block_reduce(s, Sum{}, 0.0, shared)) / static_cast<T>(width);
            double q = 0;
            for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
                const T d = xr[j] - m;
                q += static_cast<double>(d) * static_cast<double>(d);
            }
            const T var = static_cast<T>(block_reduce(q, Sum{}, 0.0, shared)) / static_cast<T>(width);
            rs = T(1) / m_sqrt(var + eps);
        }
        // (x - mean) * rstd, written as the CPU writes it: x * rstd + (-rstd * mean).
        const T shift = -rs * m;
        if (threadIdx.x == 0) {
            mean[r] = m;
            rstd[r] = rs;
        }
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
            T v = narrow ? m_fma(xr[j], rs, shift) : xr[j] * rs + shift;
            if (w) v = v * w[j];
            if (b) v = v + b[j];
            yr[j] = v;
        }
    }
}

template <typename T>
__global__ void rms_norm_forward_kernel(const T* x, const T* w, T eps, T* y, T* rstd, i64 rows, i64 width) {
    __shared__ double shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * width;
        T* yr = y + r * width;
        // As PyTorch's composite: x * rsqrt(mean(x²) + eps), then * weight.
        double s = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
            const T sq = xr[j] * xr[j];
            s += static_cast<double>(sq);
        }
        const T ms = static_cast<T>(block_reduce(s, Sum{}, 0.0, shared)) / static_cast<T>(width);
        const T rs = T(1) / m_sqrt(ms + eps);
        if (threadIdx.x == 0) rstd[r] = rs;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) yr[j] = w ? (xr[j] * rs) * w[j] : xr[j] * rs;
    }
}

// ---- backward: dx, one block per row ------------------------------------------------------------------

/// LayerNorm (kLayer): dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat));
/// RMSNorm: dx = rstd (dxhat - xhat mean(dxhat xhat)); with xhat the normalised x, dxhat = g * w.
template <typename T, bool kLayer>
__global__ void norm_backward_dx_kernel(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx,
                                        i64 rows, i64 width) {
    __shared__ double shared[32];
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * width;
        const T* gr = g + r * width;
        const T rs = rstd[r];
        const T shift = kLayer ? -rs * mean[r] : T(0);
        auto xhat = [&](i64 j) { return kLayer ? xr[j] * rs + shift : xr[j] * rs; };
        auto dxhat = [&](i64 j) { return w ? gr[j] * w[j] : gr[j]; };
        double sd = 0, sdx = 0;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
            const T d = dxhat(j);
            const T dx_x = d * xhat(j);
            sd += static_cast<double>(d);
            sdx += static_cast<double>(dx_x);
        }
        const T n = static_cast<T>(width);
        const T mean_d = kLayer ? static_cast<T>(block_reduce(sd, Sum{}, 0.0, shared)) / n : T(0);
        const T mean_dx = static_cast<T>(block_reduce(sdx, Sum{}, 0.0, shared)) / n;
        T* dr = dx + r * width;
        for (i64 j = threadIdx.x; j < width; j += blockDim.x)
            dr[j] = kLayer ? rs * (dxhat(j) - mean_d - xhat(j) * mean_dx) : rs * (dxhat(j) - xhat(j) * mean_dx);
    }
}

// ---- backward: dweight and dbias as column sums over rows ---------------------------------------------

/// Rows per chunk of the partial column sums (at least; more when there would be more than
/// kMaxChunks chunks, which bounds the partial sums' memory and the grid's y size), and the threads
/// down a column within a block.
constexpr i64 kChunkRows = 64;
constexpr i64 kMaxChunks = 256;
constexpr int kColumnThreads = 8;

/// Block (column tile bx, chunk by): partial sums over the chunk's rows of g * xhat (and of g) for
/// 32 columns, into part_w[by][c] (part_b[by][c]).
template <typename T, bool kLayer>
__global__ void norm_backward_partial_kernel(const T* g, const T* x, const T* mean, const T* rstd, double* part_w,
                                             double* part_b, i64 rows, i64 width, i64 chunk_rows) {
    __shared__ double shared_w[kColumnThreads][33], shared_b[kColumnThreads][33];
    const i64 c = blockIdx.x * i64{32} + threadIdx.x;
    const i64 r0 = blockIdx.y * chunk_rows, r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
    double sw = 0, sb = 0;
    if (c < width) {
        for (i64 r = r0 + threadIdx.y; r < r1; r += kColumnThreads) {
            const T rs = rstd[r];
            const T xhat = kLayer ? x[r * width + c] * rs + (-rs * mean[r]) : x[r * width + c] * rs;
            const T gv = g[r * width + c];
            const T gx = gv * xhat;
            sw += static_cast<double>(gx);
            sb += static_cast<double>(gv);
        }
    }
    shared_w[threadIdx.y][threadIdx.x] = sw;
    shared_b[threadIdx.y][threadIdx.x] = sb;
    __syncthreads();
    if (threadIdx.y == 0 && c < width) {
        for (int k = 1; k < kColumnThreads; ++k) {
            sw += shared_w[k][threadIdx.x];
            sb += shared_b[k][threadIdx.x];
        }
        if (part_w) part_w[blockIdx.y * width + c] = sw;
        if (part_b) part_b[blockIdx.y * width + c] = sb;
    }
}

/// Threads down the chunks of a column in the sums of the partial sums (a power of two).
constexpr int kPartialRows = 32;

/// Block (column tile bx, by): the column sums over `chunks` rows of part_w into dw (by 0) or of
/// part_b into db (by 1), for 32 columns, in double: kPartialRows threads down each column (each adds
/// every kPartialRows-th row, four loads in flight), then a tree over those threads. A null input
/// leaves its output alone.
template <typename P, typename T>
__global__ void __launch_bounds__(32 * kPartialRows)
    sum_partials_kernel(const P* part_w, const P* part_b, T* dw, T* db, i64 width, i64 chunks) {
    const P* in = blockIdx.y == 0 ? part_w : part_b;
    T* out = blockIdx.y == 0 ? dw : db;
    if (in == nullptr) return;  // the whole block
    __shared__ double shared[kPartialRows][33];
    const i64 c = blockIdx.x * i64{32} + threadIdx.x;
    double s = 0;
    if (c < width) {
#pragma unroll 4
        for (i64 i = threadIdx.y; i < chunks; i += kPartialRows) s += static_cast<double>(in[i * width + c]);
    }
    shared[threadIdx.y][threadIdx.x] = s;
    for (int half = kPartialRows / 2; half > 0; half /= 2) {
        __syncthreads();
        if (static_cast<int>(threadIdx.y) < half)
            shared[threadIdx.y][threadIdx.x] += shared[threadIdx.y + half][threadIdx.x];
    }
    if (threadIdx.y == 0 && c < width) out[c] = static_cast<T>(shared[0][threadIdx.x]);
}

/// dw (db) = the column sums of part_w (part_b), `chunks` rows of `width`; either may be null. One
/// launch for both: measured on an H200, LayerNorm's forward and backward at 16384x768 went from 3049
/// to 3182 GB/s against two launches of sum_columns_kernel (16 threads down a column, no tree).
template <typename P, typename T>
void sum_partials(const P* part_w, const P* part_b, T* dw, T* db, i64 chunks, i64 width, const char* op) {
    if (!dw && !db) return;
    const dim3 grid(static_cast<unsigned>((width + 31) / 32), 2), block(32, kPartialRows);
    sum_partials_kernel<P, T><<<grid, block>>>(dw ? part_w : nullptr, db ? part_b : nullptr, dw, db, width, chunks);
    check_launch(op);
}

/// The weight (and bias) gradients: partial sums per chunk of rows, then the chunks added up.
template <typename T, bool kLayer>
void weight_grads(const T* g, const T* x, const T* mean, const T* rstd, T* dw, T* db, i64 rows, i64 width, int device) {
    if (width == 0) return;
    if (rows == 0) {  // no rows: the gradients are zero
        Walk<1> walk;
        walk.numel = width;
        walk.ndim = 1;
        walk.contiguous = true;
        walk.sizes[0] = width;
        if (dw) fill(std::is_same_v<T, float> ? Scalar::kFloat32 : Scalar::kFloat64, dw, walk, 0.0);
        if (db) fill(std::is_same_v<T, float> ? Scalar::kFloat32 : Scalar::kFloat64, db, walk, 0.0);
        return;
    }
    const i64 spread = (rows + kMaxChunks - 1) / kMaxChunks;
    const i64 chunk_rows = spread > kChunkRows ? spread : kChunkRows;
    const i64 chunks = (rows + chunk_rows - 1) / chunk_rows;
    const auto part_bytes = static_cast<std::size_t>(chunks * width) * sizeof(double);
    Scratch part_w(dw ? part_bytes : 0, device), part_b(db ? part_bytes : 0, device);
    const dim3 grid(static_cast<unsigned>((width + 31) / 32), static_cast<unsigned>(chunks));
    norm_backward_partial_kernel<T, kLayer><<<grid, dim3(32, kColumnThreads)>>>(
        g, x, mean, rstd, part_w.as<double>(), part_b.as<double>(), rows, width, chunk_rows);
    check_launch("norm backward kernel");
    sum_partials(part_w.as<double>(), part_b.as<double>(), dw, db, chunks, width, "norm backward kernel");
}

// ---- the fast path: rows in registers -------------------------------------------------------------------

/// 16-byte vectors: four floats or two doubles.
template <typename T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));
/// Vectors a thread holds per row, at most; threads per row group, at most.
constexpr int kMaxVecsPerThread = 4;
constexpr int kMaxGroup = 512;
/// Threads of a block when the group is smaller (several rows per block).
constexpr int kFastBlock = 256;

__device__ inline void load16(const float* p, float (&v)[4]) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}
__device__ inline void load16(const double* p, double (&v)[2]) {
    const double2 q = *reinterpret_cast<const double2*>(p);
    v[0] = q.x;
    v[1] = q.y;
}
__device__ inline void store16(float* p, const float (&v)[4]) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ inline void store16(double* p, const double (&v)[2]) {
    *reinterpret_cast<double2*>(p) = make_double2(v[0], v[1]);
}
/// The same for data read or written once (the forward's x and y): cached with eviction first
/// (__ldcs, __stcs), so that they do not push the weights and the rows still to come out of L2.
__device__ inline void load16_once(const float* p, float (&v)[4]) {
    const float4 q = __ldcs(reinterpret_cast<const float4*>(p));
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}
__device__ inline void load16_once(const double* p, double (&v)[2]) {
    const double2 q = __ldcs(reinterpret_cast<const double2*>(p));
    v[0] = q.x;
    v[1] = q.y;
}
__device__ inline void store16_once(float* p, const float (&v)[4]) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
}
__device__ inline void store16_once(double* p, const double (&v)[2]) {
    __stcs(reinterpret_cast<double2*>(p), make_double2(v[0], v[1]));
}

/// The sums of the N (one or two) values `v` over the thread's group of `group` threads (a power of
/// two from 32), to every thread of it. Every thread of the block calls it (it synchronises the block
/// when groups span warps); `shared` holds two values per warp of the block.
template <int N>
__device__ inline void group_sums(double (&v)[N], int group, double (*shared)[2]) {
    for (int o = 16; o > 0; o >>= 1)
        for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
    if (group == 32) return;
    const int warp = static_cast<int>(threadIdx.x) / 32, warps = group / 32;
    __syncthreads();  // the previous row's sums have been read
    if (threadIdx.x % 32 == 0)
        for (int i = 0; i < N; ++i) shared[warp][i] = v[i];
    __syncthreads();
    const int first = warp / warps * warps;
    for (int i = 0; i < N; ++i) {
        v[i] = 0;
        for (int k = 0; k < warps; ++k) v[i] += shared[first + k][i];
    }
}

/// Where a thread works: its group's first row in the block, its place in the group, and its columns
/// (vector k of the thread starts at element (k * group + lane) * kVec).
struct Place {
    int group, rows_per_block, slot, lane;
    i64 vecs;  // 16-byte vectors per row

    __device__ Place(int group_size, i64 width, int vec) : group(group_size) {
        rows_per_block = static_cast<int>(blockDim.x) / group;
        slot = static_cast<int>(threadIdx.x) / group;
        lane = static_cast<int>(threadIdx.x) % group;
        vecs = width / vec;
    }
    __device__ bool has(int k) const { return i64{k} * group + lane < vecs; }
    __device__ i64 column(int k, int vec) const { return (i64{k} * group + lane) * vec; }
};

/// Asks L2 for the thread's vectors of the row at `row` (prefetch.global.L2): more of x in flight
/// than the registers hold.
template <typename T, int K>
__device__ inline void prefetch_row(const T* row, const Place& at) {
    for (int k = 0; k < K; ++k)
        if (at.has(k)) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + at.column(k, kVec<T>)));
}

/// The forward kernel's launch bounds: resident blocks per multiprocessor, hence its register budget.
/// Streaming, blocks of 256 threads ask for three (80 registers each), which the weights read per row
/// allow; else one block of up to 512 threads (128 registers), with the weights held.
template <int kThreads, bool kStream>
constexpr int kForwardBlocksPerSm = (kStream && kThreads <= kFastBlock) ? 3 : 1;

/// The forward pass over rows held in registers: x is loaded once, a row ahead of its use. Two modes
/// (see forward_fast):
/// - cached (kStream false): the weights held in registers, ordinary loads and stores, so that x and
///   y stay in L2 for the ops around;
/// - streaming: x read and y written with eviction first (__ldcs, __stcs), the row after next asked
///   of L2 as well, and the weights read per row from L1, so that more blocks and so more rows are
///   in flight.
template <typename T, int K, bool kLayer, int kThreads, bool kStream>
__global__ void __launch_bounds__(kThreads, kForwardBlocksPerSm<kThreads, kStream>)
    norm_forward_fast_kernel(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd, i64 rows, i64 width,
                             int group) {
    constexpr int V = kVec<T>, KW = kStream ? 1 : K;
    __shared__ double shared[kThreads / 32][2];
    const Place at(group, width, V);
    T wv[KW][V], bv[KW][V];  // cached: this thread's columns of weight and bias, for every row
    if constexpr (!kStream) {
        for (int k = 0; k < K; ++k)
            for (int v = 0; v < V; ++v) {
                wv[k][v] = T(1);
                bv[k][v] = T(0);
            }
        for (int k = 0; k < K; ++k)
            if (at.has(k)) {
                if (w) load16(w + at.column(k, V), wv[k]);
                if (b) load16(b + at.column(k, V), bv[k]);
            }
    }
    const i64 step = i64{gridDim.x} * at.rows_per_block;
    // The thread's part of row r, zeros where it has none.
    auto load_row = [&](i64 r, T(&xv)[K][V]) {
        for (int k = 0; k < K; ++k) {
            if (r < rows && at.has(k)) {
                if constexpr (kStream)
                    load16_once(x + r * width + at.column(k, V), xv[k]);
                else
                    load16(x + r * width + at.column(k, V), xv[k]);
            } else {
                for (int v = 0; v < V; ++v) xv[k][v] = T(0);
            }
        }
    };
    T next[K][V];  // the next row, loaded while this one is reduced and written
    load_row(i64{blockIdx.x} * at.rows_per_block + at.slot, next);
    for (i64 first = i64{blockIdx.x} * at.rows_per_block; first < rows; first += step) {
        const i64 r = first + at.slot;
        const bool row = r < rows;
        T xv[K][V];
        for (int k = 0; k < K; ++k)
            for (int v = 0; v < V; ++v) xv[k][v] = next[k][v];
        load_row(r + step, next);
        if constexpr (kStream)
            if (r + 2 * step < rows) prefetch_row<T, K>(x + (r + 2 * step) * width, at);
        // Each thread adds up its few values in T, the group adds those sums in double. LayerNorm takes
        // a second pass over the registers for the variance, about the mean (as the CPU).
        T own = 0;
        for (int k = 0; k < K; ++k)
            for (int v = 0; v < V; ++v) own += kLayer ? xv[k][v] : xv[k][v] * xv[k][v];  // RMSNorm: mean(x²)
        double sum[1] = {static_cast<double>(own)};
        group_sums(sum, group, shared);
        T m = 0;
        if constexpr (kLayer) {
            m = static_cast<T>(sum[0]) / static_cast<T>(width);
            T own_q = 0;
            for (int k = 0; k < K; ++k)
                if (at.has(k))
                    for (int v = 0; v < V; ++v) {
                        const T d = xv[k][v] - m;
                        own_q += d * d;
                    }
            sum[0] = static_cast<double>(own_q);
            group_sums(sum, group, shared);
        }
        const T rs = T(1) / m_sqrt(static_cast<T>(sum[0]) / static_cast<T>(width) + eps);
        if (!row) continue;  // (after the group's last synchronisation of this row)
        if (at.lane == 0) {
            if constexpr (kLayer) mean[r] = m;
            rstd[r] = rs;
        }
        const T shift = -rs * m;
        for (int k = 0; k < K; ++k) {
            if (!at.has(k)) continue;
            const int kw = kStream ? 0 : k;  // where this vector's weights are
            if constexpr (kStream) {
                if (w) load16(w + at.column(k, V), wv[0]);
                if (kLayer && b) load16(b + at.column(k, V), bv[0]);
            }
            T out[V];
            for (int v = 0; v < V; ++v) {
                if constexpr (kLayer) {
                    // (x - mean) * rstd as the CPU writes it: x * rstd + (-rstd * mean).
                    T o = xv[k][v] * rs + shift;
                    if (w) o = o * wv[kw][v];
                    if (b) o = o + bv[kw][v];
                    out[v] = o;
                } else {
                    out[v] = w ? (xv[k][v] * rs) * wv[kw][v] : xv[k][v] * rs;
                }
            }
            if constexpr (kStream)
                store16_once(y + r * width + at.column(k, V), out);
            else
                store16(y + r * width + at.column(k, V), out);
        }
    }
}

/// dx of each row as norm_backward_dx_kernel computes it; with `part_w` (`part_b`), the block's sums
/// of g * xhat (of g) over its rows, per column, into part_w[blockIdx.x][column].
template <typename T, int K, bool kLayer, bool kPrefetch>
__global__ void __launch_bounds__(kMaxGroup)
    norm_backward_fast_kernel(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* part_w,
                              T* part_b, i64 rows, i64 width, int group) {
    constexpr int V = kVec<T>;
    __shared__ double shared[kMaxGroup / 32][2];
    // The groups' column sums, added group after group (in order: the result does not depend on timing).
    __shared__ T sum_w[kFastBlock / 2 * kMaxVecsPerThread * V], sum_b[kFastBlock / 2 * kMaxVecsPerThread * V];
    const Place at(group, width, V);
    T wv[K][V], acc_w[K][V], acc_b[K][V];
    for (int k = 0; k < K; ++k)
        for (int v = 0; v < V; ++v) {
            wv[k][v] = T(1);
            acc_w[k][v] = T(0);
            acc_b[k][v] = T(0);
        }
    if (w)
        for (int k = 0; k < K; ++k)
            if (at.has(k)) load16(w + at.column(k, V), wv[k]);
    const i64 step = i64{gridDim.x} * at.rows_per_block;
    auto load_rows = [&](i64 r, T(&xv)[K][V], T(&gv)[K][V]) {
        for (int k = 0; k < K; ++k) {
            if (r < rows && at.has(k)) {
                load16(x + r * width + at.column(k, V), xv[k]);
                load16(g + r * width + at.column(k, V), gv[k]);
            } else {
                for (int v = 0; v < V; ++v) xv[k][v] = gv[k][v] = T(0);
            }
        }
    };
    T next_x[K][V], next_g[K][V];
    if (kPrefetch) load_rows(i64{blockIdx.x} * at.rows_per_block + at.slot, next_x, next_g);
    for (i64 first = i64{blockIdx.x} * at.rows_per_block; first < rows; first += step) {
        const i64 r = first + at.slot;
        const bool row = r < rows;
        T xv[K][V], gv[K][V];
        if (kPrefetch) {
            for (int k = 0; k < K; ++k)
                for (int v = 0; v < V; ++v) {
                    xv[k][v] = next_x[k][v];
                    gv[k][v] = next_g[k][v];
                }
            load_rows(r + step, next_x, next_g);
        } else {
            load_rows(r, xv, gv);
        }
        const T rs = row ? rstd[r] : T(0);
        const T shift = kLayer && row ? -rs * mean[r] : T(0);
        // xhat in place of x; dxhat = g * w, computed again where it is used (registers are short).
        T own_d = 0, own_dx = 0;
        for (int k = 0; k < K; ++k)
            for (int v = 0; v < V; ++v) {
                xv[k][v] = kLayer ? xv[k][v] * rs + shift : xv[k][v] * rs;
                const T d = w ? gv[k][v] * wv[k][v] : gv[k][v];
                own_d += d;
                own_dx += d * xv[k][v];
            }
        double sums[2] = {static_cast<double>(own_d), static_cast<double>(own_dx)};
        group_sums(sums, group, shared);
        if (!row) continue;
        const T n = static_cast<T>(width);
        const T mean_d = kLayer ? static_cast<T>(sums[0]) / n : T(0);
        const T mean_dx = static_cast<T>(sums[1]) / n;
        for (int k = 0; k < K; ++k) {
            if (!at.has(k)) continue;
            if (dx) {
                T out[V];
                for (int v = 0; v < V; ++v) {
                    const T d = w ? gv[k][v] * wv[k][v] : gv[k][v];
                    out[v] = kLayer ? rs * (d - mean_d - xv[k][v] * mean_dx) : rs * (d - xv[k][v] * mean_dx);
                }
                store16(dx + r * width + at.column(k, V), out);
            }
            for (int v = 0; v < V; ++v) {
                const T gx = gv[k][v] * xv[k][v];
                acc_w[k][v] += gx;
                acc_b[k][v] += gv[k][v];
            }
        }
    }
    if (!part_w && !part_b) return;
    // The groups of the block add up their sums in order; the last writes the block's.
    for (int slot = 0; slot < at.rows_per_block; ++slot) {
        if (at.slot == slot) {
            for (int k = 0; k < K; ++k) {
                if (!at.has(k)) continue;
                for (int v = 0; v < V; ++v) {
                    const i64 c = at.column(k, V) + v;
                    const int i = (k * group + at.lane) * V + v;
                    const T tw = slot == 0 ? acc_w[k][v] : sum_w[i] + acc_w[k][v];
                    const T tb = slot == 0 ? acc_b[k][v] : sum_b[i] + acc_b[k][v];
                    if (slot + 1 < at.rows_per_block) {
                        sum_w[i] = tw;
                        sum_b[i] = tb;
                    } else {
                        if (part_w) part_w[i64{blockIdx.x} * width + c] = tw;
                        if (part_b) part_b[i64{blockIdx.x} * width + c] = tb;
                    }
                }
            }
        }
        __syncthreads();
    }
}

/// The threads per row group and the vectors per thread for rows of `width` elements of T, when the
/// fast path takes them (else {0, 0}): the smallest group (from a warp) whose threads hold at most
/// kMaxVecsPerThread vectors each.
template <typename T>
std::pair<int, int> fast_shape(i64 width, std::initializer_list<const void*> pointers) {
    constexpr int V = kVec<T>;
    if (width < kNarrow<T> || width % V != 0) return {0, 0};
    for (const void* p : pointers)
        if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return {0, 0};
    const i64 vecs = width / V;
    int group = 32;
    while (i64{group} * kMaxVecsPerThread < vecs && group < kMaxGroup) group *= 2;
    const i64 per_thread = (vecs + group - 1) / group;
    if (per_thread > kMaxVecsPerThread) return {0, 0};
    return {group, static_cast<int>(per_thread)};
}

/// Calls f(std::integral_constant<int, K>{}) for K in 1..kMaxVecsPerThread.
template <typename F>
void with_vecs(int k, F&& f) {
    switch (k) {
        case 1:
            f(std::integral_constant<int, 1>{});
            break;
        case 2:
            f(std::integral_constant<int, 2>{});
            break;
        case 3:
            f(std::integral_constant<int, 3>{});
            break;
        default:
            f(std::integral_constant<int, 4>{});
    }
}

/// Devices whose answers per_device keeps (further ones ask again each time).
constexpr int kCachedDevices = 64;

/// compute(device) for the current device, kept in cache[device] after the first call.
template <typename F>
int per_device(std::atomic<int> (&cache)[kCachedDevices], F compute) {
    int device = 0;
    check(cudaGetDevice(&device), "norm kernel");
    int value = device < kCachedDevices ? cache[device].load(std::memory_order_relaxed) : 0;
    if (value == 0) {
        value = compute(device);
        if (device < kCachedDevices) cache[device].store(value, std::memory_order_relaxed);
    }
    return value;
}

/// One wave of resident blocks of `kKernel` launched with `threads` threads, at most `wanted`. The
/// device's answer is kept per kernel, device and block size.
template <auto kKernel>
unsigned one_wave(int threads, i64 wanted) {
    constexpr int kSizes = 5;  // group sizes 32..512
    static std::atomic<int> cache[kSizes][kCachedDevices] = {};
    int size = 0;
    while ((32 << size) < threads && size + 1 < kSizes) ++size;
    const int wave = per_device(cache[size], [&](int device) {
        int sms = 0, per_sm = 0;
        check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "norm kernel");
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, threads, 0), "norm kernel");
        return sms * (per_sm > 0 ? per_sm : 1);
    });
    return static_cast<unsigned>(wanted < wave ? wanted : wave);
}

/// The L2 cache's size of the current device, in bytes.
std::int64_t l2_bytes() {
    static std::atomic<int> cache[kCachedDevices] = {};
    return per_device(cache, [](int device) {
        int bytes = 0;
        check(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device), "norm kernel");
        return bytes;
    });
}

template <typename T, bool kLayer>
bool forward_fast(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd, i64 rows, i64 width) {
    const auto [group, vecs] = fast_shape<T>(width, {x, w, b, y});
    if (group == 0) return false;
    const int threads = group > kFastBlock ? group : kFastBlock;
    const int rows_per_block = threads / group;
    // Streaming where x and y together cannot stay in L2. Measured on an H200 in float32, against the
    // cached kernel in the same run: 16384x768 LayerNorm 3121 -> 3397 GB/s, RMSNorm 3426 -> 3680;
    // 4096x4096 within 1.5 %; but 1024x1500 (12 MB, L2-resident between calls) 9-13 % slower.
    const bool stream = 2 * rows * width * static_cast<i64>(sizeof(T)) > l2_bytes();
    auto launch = [&](auto k, auto block, auto streaming) {
        constexpr auto kernel =
            norm_forward_fast_kernel<T, decltype(k)::value, kLayer, decltype(block)::value, decltype(streaming)::value>;
        const unsigned blocks = one_wave<kernel>(threads, (rows + rows_per_block - 1) / rows_per_block);
        kernel<<<blocks, threads>>>(x, w, b, eps, y, mean, rstd, rows, width, group);
    };
    with_vecs(vecs, [&](auto k) {
        if (!stream) return launch(k, std::integral_constant<int, kMaxGroup>{}, std::false_type{});
        // Groups of 512 threads hold rows of more than 1024 vectors: three or four each.
        if constexpr (decltype(k)::value >= 3)
            if (threads > kFastBlock) return launch(k, std::integral_constant<int, kMaxGroup>{}, std::true_type{});
        launch(k, std::integral_constant<int, kFastBlock>{}, std::true_type{});
    });
    check_launch(kLayer ? "layer_norm kernel" : "rms_norm kernel");
    return true;
}

template <typename T, bool kLayer>
bool backward_fast(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw, T* db, i64 rows,
                   i64 width, int device) {
    const auto [group, vecs] = fast_shape<T>(width, {g, x, w, dx});
    if (group == 0 || rows == 0) return false;
    const int threads = group > kFastBlock ? group : kFastBlock;
    const int rows_per_block = threads / group;
    const char* op = kLayer ? "layer_norm backward kernel" : "rms_norm backward kernel";
    with_vecs(vecs, [&](auto k) {
        // Loading the next row ahead pays where the registers allow it (it spills beyond 12 floats
        // or 4 doubles per thread and per operand): measured on an H200, 16384x768 LayerNorm forward
        // and backward went from 2906 to 3020 GB/s with it, and 4096x4096 (16 floats) from 2933 to 2453.
        constexpr int kVecs = decltype(k)::value;
        constexpr auto kernel = norm_backward_fast_kernel<T, kVecs, kLayer, (kVecs <= (sizeof(T) == 4 ? 3 : 2))>;
        const unsigned blocks = one_wave<kernel>(threads, (rows + rows_per_block - 1) / rows_per_block);
        const auto part_bytes = static_cast<std::size_t>(blocks * width) * sizeof(T);
        Scratch part_w(dw ? part_bytes : 0, device), part_b(db ? part_bytes : 0, device);
        kernel<<<blocks, threads>>>(g, x, w, mean, rstd, dx, part_w.as<T>(), part_b.as<T>(), rows, width, group);
        check_launch(op);
        sum_partials(part_w.as<T>(), part_b.as<T>(), dw, db, blocks, width, op);
    });
    return true;
}

}  // namespace

void layer_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, double eps, void* out,
                        void* mean, void* rstd, std::int64_t rows, std::int64_t width) {
    if (rows == 0) return;
    dispatch_float(t, "layer_norm", [&](auto tag) {
        using T = decltype(tag);
        if (forward_fast<T, true>(static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
                                  static_cast<T>(eps), static_cast<T*>(out), static_cast<T*>(mean),
                                  static_cast<T*>(rstd), rows, width))
            return;
        layer_norm_forward_kernel<T><<<row_blocks(rows), row_threads(width)>>>(
            static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T>(eps),
            static_cast<T*>(out), static_cast<T*>(mean), static_cast<T*>(rstd), rows, width);
    });
    check_launch("layer_norm kernel");
}

void layer_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* mean,
                         const void* rstd, void* dx, void* dweight, void* dbias, std::int64_t rows, std::int64_t width,
                         int device) {
    dispatch_float(t, "layer_norm", [&](auto tag) {
        using T = decltype(tag);
        const T* g = static_cast<const T*>(grad);
        const T* px = static_cast<const T*>(x);
        const T* m = static_cast<const T*>(mean);
        const T* rs = static_cast<const T*>(rstd);
        if (backward_fast<T, true>(g, px, static_cast<const T*>(weight), m, rs, static_cast<T*>(dx),
                                   static_cast<T*>(dweight), static_cast<T*>(dbias), rows, width, device))
            return;
        if (dx && rows > 0) {
            norm_backward_dx_kernel<T, true><<<row_blocks(rows), row_threads(width)>>>(
                g, px, static_cast<const T*>(weight), m, rs, static_cast<T*>(dx), rows, width);
            check_launch("layer_norm backward kernel");
        }
        if (dweight || dbias)
            weight_grads<T, true>(g, px, m, rs, static_cast<T*>(dweight), static_cast<T*>(dbias), rows, width, device);
    });
}

void rms_norm_forward(Scalar t, const void* x, const void* weight, double eps, void* out, void* rstd, std::int64_t rows,
                      std::int64_t width) {
    if (rows == 0) return;
    dispatch_float(t, "rms_norm", [&](auto tag) {
        using T = decltype(tag);
        if (forward_fast<T, false>(static_cast<const T*>(x), static_cast<const T*>(weight), nullptr,
                                   static_cast<T>(eps), static_cast<T*>(out), nullptr, static_cast<T*>(rstd), rows,
                                   width))
            return;
        rms_norm_forward_kernel<T><<<row_blocks(rows), row_threads(width)>>>(
            static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T>(eps), static_cast<T*>(out),
            static_cast<T*>(rstd), rows, width);
    });
    check_launch("rms_norm kernel");
}

void rms_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* rstd, void* dx,
                       void* dweight, std::int64_t rows, std::int64_t width, int device) {
    dispatch_float(t, "rms_norm", [&](auto tag) {
        using T = decltype(tag);
        const T* g = static_cast<const T*>(grad);
        const T* px = static_cast<const T*>(x);
        const T* rs = static_cast<const T*>(rstd);
        if (backward_fast<T, false>(g, px, static_cast<const T*>(weight), nullptr, rs, static_cast<T*>(dx),
                                    static_cast<T*>(dweight), nullptr, rows, width, device))
            return;
        if (dx && rows > 0) {
            norm_backward_dx_kernel<T, false><<<row_blocks(rows), row_threads(width)>>>(
                g, px, static_cast<const T*>(weight), nullptr, rs, static_cast<T*>(dx), rows, width);
            check_launch("rms_norm backward kernel");
        }
        if (dweight) weight_grads<T, false>(g, px, nullptr, rs, static_cast<T*>(dweight), nullptr, rows, width, device);
    });
}

}  // namespace xgrad::kernels::cuda
