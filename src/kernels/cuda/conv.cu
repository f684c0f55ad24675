// CUDA im2col/col2im and 2-D max/average pooling, in the CPU kernels' arithmetic (cpu/conv.cpp).
// Every backward gathers (one thread per input element, adding the outputs that read it in the
// CPU's order) rather than scattering with atomics, so results do not depend on scheduling.
#include "kernels/cuda/common.cuh"

namespace xgrad::kernels::cuda {

namespace {

/// One window along an axis: [start, end) clipped to the input, and its length before clipping.
struct Span {
    i64 start, end, padded;
};

__device__ inline Span span(i64 o, i64 size, i64 out, i64 kernel, i64 stride, i64 pad, bool adaptive) {
    if (adaptive) {
        const i64 s = (o * size) / out, e = ((o + 1) * size + out - 1) / out;
        return {s, e, e - s};
    }
    const i64 s = o * stride - pad, e = min(s + kernel, size + pad);
    return {max(s, i64{0}), min(e, size), e - s};
}

__device__ inline i64 divisor_of(const Span& h, const Span& w, const Window2d& g) {
    if (g.divisor != 0 && !g.adaptive) return g.divisor;
    return g.count_include_pad || g.adaptive ? h.padded * w.padded : (h.end - h.start) * (w.end - w.start);
}

/// The outputs along an axis whose (non-adaptive) window can hold input index `i`: [lo, hi].
__device__ inline void covering(i64 i, i64 out, i64 kernel, i64 stride, i64 pad, i64 dilation, i64& lo, i64& hi) {
    const i64 reach = i + pad - dilation * (kernel - 1);  // o·stride ≥ reach
    lo = reach <= 0 ? 0 : (reach + stride - 1) / stride;
    hi = min((i + pad) / stride, out - 1);
}

template <typename T>
__global__ void im2col_kernel(const T* x, T* cols, Window2d g, i64 n) {
    const i64 length = g.out_h * g.out_w, rows = g.channels * g.kernel_h * g.kernel_w;
    const i64 total = n * rows * length;
    for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 ow = i % g.out_w, oh = (i / g.out_w) % g.out_h, r = (i / length) % rows, b = i / (length * rows);
        const i64 kw = r % g.kernel_w, kh = (r / g.kernel_w) % g.kernel_h, c = r / (g.kernel_w * g.kernel_h);
        const i64 ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h,
                  iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
        cols[i] = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width
                      ? x[((b * g.channels + c) * g.height + ih) * g.width + iw]
                      : T(0);
    }
}

/// dx element (b, c, ih, iw) = Σ over (kh, kw) in the CPU's order (rows ascending) of the columns
/// that read it.
template <typename T>
__global__ void col2im_kernel(const T* cols, T* dx, Window2d g, i64 n) {
    const i64 length = g.out_h * g.out_w, rows = g.channels * g.kernel_h * g.kernel_w;
    const i64 total = n * g.channels * g.height * g.width;
    for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 iw = i % g.width, ih = (i / g.width) % g.height, c = (i / (g.width * g.height)) % g.channels;
        const i64 b = i / (g.width * g.height * g.channels);
        T sum = 0;
        for (i64 kh = 0; kh < g.kernel_h; ++kh) {
            const i64 th = ih + g.pad_h - kh * g.dilation_h;
            if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.out_h) continue;
            for (i64 kw = 0; kw < g.kernel_w; ++kw) {
                const i64 tw = iw + g.pad_w - kw * g.dilation_w;
                if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
                const i64 r = (c * g.kernel_h + kh) * g.kernel_w + kw;
                sum += cols[(b * rows + r) * length + (th / g.stride_h) * g.out_w + tw / g.stride_w];
            }
        }
        dx[i] = sum;
    }
}

template <typename T>
__global__ void max_pool_kernel(const T* x, T* out, i64* indices, Window2d g, i64 total) {
    for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 ow = i % g.out_w, oh = (i / g.out_w) % g.out_h, p = i / (g.out_w * g.out_h);
        const T* xp = x + p * g.height * g.width;
        const i64 h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
        i64 best = -1;
        T m = -m_inf<T>();
        for (i64 kh = 0; kh < g.kernel_h; ++kh) {
            const i64 ih = h0 + kh * g.dilation_h;
            if (ih < 0 || ih >= g.height) continue;
            for (i64 kw = 0; kw < g.kernel_w; ++kw) {
                const i64 iw = w0 + kw * g.dilation_w;
                if (iw < 0 || iw >= g.width) continue;
                const T v = xp[ih * g.width + iw];
                if (best < 0 || v > m || is_nan(v)) {
                    best = ih * g.width + iw;
                    m = v;
                }
            }
        }
        out[i] = m;
        indices[i] = best;
    }
}

template <typename T>
__global__ void max_pool_backward_kernel(const T* grad, const i64* indices, T* dx, Window2d g, i64 total) {
    for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 iw = i % g.width, ih = (i / g.width) % g.height, p = i / (g.width * g.height);
        const i64 out_plane = g.out_h * g.out_w, self = ih * g.width + iw;
        i64 h_lo, h_hi, w_lo, w_hi;
        covering(ih, g.out_h, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, h_lo, h_hi);
        covering(iw, g.out_w, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, w_lo, w_hi);
        T sum = 0;
        for (i64 oh = h_lo; oh <= h_hi; ++oh)
            for (i64 ow = w_lo; ow <= w_hi; ++ow) {
                const i64 o = p * out_plane + oh * g.out_w + ow;
                if (indices[o] == self) sum += grad[o];
            }
        dx[i] = sum;
    }
}

template <typename T>
__global__ void avg_pool_kernel(const T* x, T* out, Window2d g, i64 total) {
    for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 ow = i % g.out_w, oh = (i / g.out_w) % g.out_h, p = i / (g.out_w * g.out_h);
        const T* xp = x + p * g.height * g.width;
        const Span sh = span(oh, g.height, g.out_h, g.kernel_h, g.stride_h, g.pad_h, g.adaptive);
        const Span sw = span(ow, g.width, g.out_w, g.kernel_w, g.stride_w, g.pad_w, g.adaptive);
        T sum = 0;
        for (i64 ih = sh.start; ih < sh.end; ++ih)
            for (i64 iw = sw.start; iw < sw.end; ++iw) sum += xp[ih * g.width + iw];
        out[i] = sum / static_cast<T>(divisor_of(sh, sw, g));
    }
}

template <typename T>
__global__ void avg_pool_backward_kernel(const T* grad, T* dx, Window2d g, i64 total) {
    for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 iw = i % g.width, ih = (i / g.width) % g.height, p = i / (g.width * g.height);
        i64 h_lo = 0, h_hi = g.out_h - 1, w_lo = 0, w_hi = g.out_w - 1;
        if (!g.adaptive) {
            covering(ih, g.out_h, g.kernel_h, g.stride_h, g.pad_h, 1, h_lo, h_hi);
            covering(iw, g.out_w, g.kernel_w, g.stride_w, g.pad_w, 1, w_lo, w_hi);
        }
        T sum = 0;
        for (i64 oh = h_lo; oh <= h_hi; ++oh) {
            const Span sh = span(oh, g.height, g.out_h, g.kernel_h, g.stride_h, g.pad_h, g.adaptive);
            if (ih < sh.start || ih >= sh.end) continue;
            for (i64 ow = w_lo; ow <= w_hi; ++ow) {
                const Span sw = span(ow, g.width, g.out_w, g.kernel_w, g.stride_w, g.pad_w, g.adaptive);
                if (iw < sw.start || iw >= sw.end) continue;
                sum += grad[(p * g.out_h + oh) * g.out_w + ow] / static_cast<T>(divisor_of(sh, sw, g));
            }
        }
        dx[i] = sum;
    }
}

}  // namespace

void im2col(Scalar t, const void* x, void* cols, const Window2d& g, std::int64_t n) {
    const i64 total = n * g.channels * g.kernel_h * g.kernel_w * g.out_h * g.out_w;
    if (total == 0) return;
    dispatch_float(t, "conv2d", [&](auto tag) {
        using T = decltype(tag);
        im2col_kernel<T><<<blocks_for(total), kThreads>>>(static_cast<const T*>(x), static_cast<T*>(cols), g, n);
    });
    check_launch("im2col kernel");
}

void col2im(Scalar t, const void* cols, void* dx, const Window2d& g, std::int64_t n) {
    const i64 total = n * g.channels * g.height * g.width;
    if (total == 0) return;
    dispatch_float(t, "conv2d", [&](auto tag) {
        using T = decltype(tag);
        col2im_kernel<T><<<blocks_for(total), kThreads>>>(static_cast<const T*>(cols), static_cast<T*>(dx), g, n);
    });
    check_launch("col2im kernel");
}

void max_pool2d(Scalar t, const void* x, void* out, void* indices, const Window2d& g, std::int64_t planes) {
    const i64 total = planes * g.out_h * g.out_w;
    if (total == 0) return;
    dispatch_float(t, "max_pool2d", [&](auto tag) {
        using T = decltype(tag);
        max_pool_kernel<T><<<blocks_for(total), kThreads>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                            static_cast<i64*>(indices), g, total);
    });
    check_launch("max_pool2d kernel");
}

void max_pool2d_backward(Scalar t, const void* grad, const void* indices, void* dx, const Window2d& g,
                         std::int64_t planes) {
    const i64 total = planes * g.height * g.width;
    if (total == 0) return;
    dispatch_float(t, "max_pool2d", [&](auto tag) {
        using T = decltype(tag);
        max_pool_backward_kernel<T><<<blocks_for(total), kThreads>>>(
            static_cast<const T*>(grad), static_cast<const i64*>(indices), static_cast<T*>(dx), g, total);
    });
    check_launch("max_pool2d backward kernel");
}

void avg_pool2d(Scalar t, const void* x, void* out, const Window2d& g, std::int64_t planes) {
    const i64 total = planes * g.out_h * g.out_w;
    if (total == 0) return;
    dispatch_float(t, "avg_pool2d", [&](auto tag) {
        using T = decltype(tag);
        avg_pool_kernel<T><<<blocks_for(total), kThreads>>>(static_cast<const T*>(x), static_cast<T*>(out), g, total);
    });
    check_launch("avg_pool2d kernel");
}

void avg_pool2d_backward(Scalar t, const void* grad, void* dx, const Window2d& g, std::int64_t planes) {
    const i64 total = planes * g.height * g.width;
    if (total == 0) return;
    dispatch_float(t, "avg_pool2d", [&](auto tag) {
        using T = decltype(tag);
        avg_pool_backward_kernel<T>
            <<<blocks_for(total), kThreads>>>(static_cast<const T*>(grad), static_cast<T*>(dx), g, total);
    });
    check_launch("avg_pool2d backward kernel");
}

}  // namespace xgrad::kernels::cuda
