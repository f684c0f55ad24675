// CUDA LayerNorm and RMSNorm, forward and backward, fused (llm.c's layout): one block per row for
// the row statistics and dx; the weight and bias gradients as per-block partial column sums over
// chunks of rows, then one small reduction over the chunks. The formulas are the CPU kernels'
// (cpu/norm.cpp); row sums accumulate in double.
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

/// out[c] = Σ over chunks of part[chunk][c], one thread per column.
template <typename T>
__global__ void sum_chunks_kernel(const double* part, T* out, i64 chunks, i64 width) {
    for (i64 c = blockIdx.x * i64{blockDim.x} + threadIdx.x; c < width; c += i64{gridDim.x} * blockDim.x) {
        double s = 0;
        for (i64 k = 0; k < chunks; ++k) s += part[k * width + c];
        out[c] = static_cast<T>(s);
    }
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
    if (dw) sum_chunks_kernel<T><<<blocks_for(width), kThreads>>>(part_w.as<double>(), dw, chunks, width);
    if (db) sum_chunks_kernel<T><<<blocks_for(width), kThreads>>>(part_b.as<double>(), db, chunks, width);
    check_launch("norm backward kernel");
}

}  // namespace

void layer_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, double eps, void* out,
                        void* mean, void* rstd, std::int64_t rows, std::int64_t width) {
    if (rows == 0) return;
    dispatch_float(t, "layer_norm", [&](auto tag) {
        using T = decltype(tag);
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
        if (dx && rows > 0) {
            norm_backward_dx_kernel<T, false><<<row_blocks(rows), row_threads(width)>>>(
                g, px, static_cast<const T*>(weight), nullptr, rs, static_cast<T*>(dx), rows, width);
            check_launch("rms_norm backward kernel");
        }
        if (dweight) weight_grads<T, false>(g, px, nullptr, rs, static_cast<T*>(dweight), nullptr, rows, width, device);
    });
}

}  // namespace xgrad::kernels::cuda
