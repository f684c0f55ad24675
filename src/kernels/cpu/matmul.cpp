// CPU matrix products on OpenBLAS (CBLAS), each call made the way PyTorch 1.13's CPU kernels make it.
//
// Debian's PyTorch runs its float products on the same OpenBLAS (libblas.so.3 is OpenBLAS through
// Debian's alternatives), so the same call gives the same bits. What decides the bits, as measured
// with OpenBLAS 0.3.21: which operand plays BLAS's A (its kernels are not symmetric in A and B),
// the sizes, and how many threads share the work; not the transpose flags or leading dimensions,
// which only change how the operands are packed. So the operand roles follow PyTorch's
// addmm_impl_cpu_ and addmv_impl_cpu, and OpenBLAS's thread count follows OpenMP's, as it does in
// PyTorch's process (both read OMP_NUM_THREADS).
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "detail/dispatch.hpp"
#include "detail/tensor_impl.hpp"

namespace xgrad::kernels::cpu {

namespace {

std::atomic<int> g_blas_threads{0};  // what OpenBLAS was last told; 0: never

/// Gives OpenBLAS `n` threads, unless it was told so last.
void use_blas_threads(int n) {
    if (n != g_blas_threads.load(std::memory_order_relaxed)) set_blas_threads(n);
}

/// Gives OpenBLAS xgrad's thread count (xgrad::set_num_threads) when that changed since the last product.
void follow_thread_count() {
    use_blas_threads(num_threads());
}

/// A strided matrix view: element (i, j) is p[i·rs + j·cs].
template <typename T>
struct Mat {
    const T* p;
    std::int64_t rows, cols, rs, cs;
    const T& operator()(std::int64_t i, std::int64_t j) const { return p[i * rs + j * cs]; }
    Mat t() const { return {p, cols, rows, cs, rs}; }
};

template <typename T>
Mat<T> matrix(const Tensor& t) {  // the last two dims of t, at its storage offset
    const detail::TensorImpl& impl = *t.impl();
    const std::size_t d = impl.strides.size();
    const std::int64_t nd = static_cast<std::int64_t>(d);
    return {impl.data<T>(), impl.shape[nd - 2], impl.shape[nd - 1], impl.strides[d - 2], impl.strides[d - 1]};
}

bool fits_int(std::initializer_list<std::int64_t> v) {
    return std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x <= INT_MAX; });
}

// ---- BLAS, column-major, alpha = 1 ----------------------------------------------------------------
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
    cblas_sgemm(CblasColMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda, const double* b,
          int ldb, double beta, double* c, int ldc) {
    cblas_dgemm(CblasColMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}
void gemv(CBLAS_TRANSPOSE t, int m, int n, const float* a, int lda, const float* x, int incx, float* y) {
    cblas_sgemv(CblasColMajor, t, m, n, 1.0f, a, lda, x, incx, 0.0f, y, 1);
}
void gemv(CBLAS_TRANSPOSE t, int m, int n, const double* a, int lda, const double* x, int incx, double* y) {
    cblas_dgemv(CblasColMajor, t, m, n, 1.0, a, lda, x, incx, 0.0, y, 1);
}
float blas_dot(int n, const float* x, int incx, const float* y, int incy) {
    return cblas_sdot(n, x, incx, y, incy);
}
double blas_dot(int n, const double* x, int incx, const double* y, int incy) {
    return cblas_ddot(n, x, incx, y, incy);
}

// ---- gemm -----------------------------------------------------------------------------------------

/// c (n×m, contiguous) = a·b + beta·c, every sum in order over k, one multiply then one add per
/// term: PyTorch's bmm kernel for small matrices, and exact for int64.
template <typename T>
void loop_gemm(Mat<T> a, Mat<T> b, T* c, T beta) {
    const std::int64_t n = a.rows, k = a.cols, m = b.cols;
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < m; ++j) {
            T acc = 0;
            for (std::int64_t p = 0; p < k; ++p) acc += a(i, p) * b(p, j);
            T& r = c[i * m + j];
            r = beta == T(0) ? acc : r * beta + acc;
        }
}

/// One operand of a column-major BLAS product, as PyTorch casts it: read in place when it is
/// column-major (no transpose) or row-major (transposed); otherwise copied into `copy`, row-major
/// when `copy_row_major` (PyTorch copies the tensor it was given, in that tensor's orientation).
template <typename T>
struct Operand {
    const T* p;
    CBLAS_TRANSPOSE trans;
    std::int64_t ld;
};

template <typename T>
Operand<T> blas_operand(Mat<T> x, bool copy_row_major, std::vector<T>& copy) {
    if (x.rs == 1 && x.cs >= std::max<std::int64_t>(1, x.rows)) return {x.p, CblasNoTrans, x.cs};
    if (x.cs == 1 && x.rs >= std::max<std::int64_t>(1, x.cols)) return {x.p, CblasTrans, x.rs};
    copy.resize(static_cast<std::size_t>(x.rows * x.cols));
    // Written in order (a column-major copy column by column): with rows of 1024 floats, writing it row
    // by row put every store 4 KiB from the last, in one set of the level-1 cache (the backward of
    // matmul(x, w).sum() copies the expanded gradient so: 8 ms of a 33 ms step at 1024x1500x512).
    if (copy_row_major) {
        for (std::int64_t i = 0; i < x.rows; ++i)
            for (std::int64_t j = 0; j < x.cols; ++j) copy[static_cast<std::size_t>(i * x.cols + j)] = x(i, j);
    } else {
        for (std::int64_t j = 0; j < x.cols; ++j)
            for (std::int64_t i = 0; i < x.rows; ++i) copy[static_cast<std::size_t>(i + j * x.rows)] = x(i, j);
    }
    if (copy_row_major) return {copy.data(), CblasTrans, std::max<std::int64_t>(1, x.cols)};
    return {copy.data(), CblasNoTrans, std::max<std::int64_t>(1, x.rows)};
}

// ---- small products without the BLAS call ---------------------------------------------------------
//
// A BLAS call costs about a thousand instructions before it multiplies anything (argument checks, a
// buffer taken under a lock, packing), more than a product of a small model's layers takes. For such
// products xgrad sums itself, in the order OpenBLAS's kernels sum: measured with OpenBLAS 0.3.21, its
// Haswell, Zen, SkylakeX and Cooperlake kernels (float and double, every transpose, m and n up to 40)
// give each element of c as one fused multiply-add per term in order over k from +0, then
// alpha·that + beta·c, as long as k < 8 (from k = 8 the Haswell kernel splits its sums).
// tests/test_vec_math.cpp checks that against the BLAS the tests run with.

/// Largest k and largest n·m·k that take the small path.
constexpr std::int64_t kSmallK = 7, kSmallWork = 512;

/// True when OpenBLAS runs one of the kernels whose sums the small path reproduces.
bool blas_sums_in_order() {
    static const bool known = [] {
        std::string core = openblas_get_corename();
        for (char& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return core == "haswell" || core == "zen" || core == "skylakex" || core == "cooperlake";
    }();
    return known;
}

/// c (n×m, contiguous) = a·b + beta·c without BLAS, when the product is small, beta is 0 or 1, and the
/// bits are OpenBLAS's (see above); false when BLAS must do it.
template <typename T>
bool small_product(Mat<T> a, Mat<T> b, T* c, T beta) {
    const std::int64_t n = a.rows, k = a.cols, m = b.cols;
    if (k > kSmallK || n * m * k > kSmallWork || (beta != T(0) && beta != T(1)) || !blas_sums_in_order()) return false;
    return small_gemm(a.p, a.rs, a.cs, b.p, b.rs, b.cs, c, n, m, k, beta != T(0));
}

/// c (n×m, contiguous) = a (n×k) · b (k×m) + beta·c in one BLAS gemm, operands in PyTorch's roles.
/// BLAS is column-major: for a row-major c it computes cᵀ = bᵀ·aᵀ (b is BLAS's A); a single column
/// (m == 1) is column-major already, and then a is BLAS's A.
template <typename T>
void blas_gemm(Mat<T> a, Mat<T> b, T* c, T beta, bool one_thread = false) {
    if (small_product(a, b, c, beta)) return;
    const bool transpose_c = b.cols != 1;
    const Mat<T> x = transpose_c ? b.t() : a, y = transpose_c ? a.t() : b;  // c' (M×N) = x (M×K) · y (K×N)
    const std::int64_t M = x.rows, N = y.cols, K = x.cols;
    std::vector<T> copy_x, copy_y;
    const Operand<T> ox = blas_operand(x, !transpose_c, copy_x), oy = blas_operand(y, !transpose_c, copy_y);
    if (!fits_int({M, N, K, ox.ld, oy.ld})) return loop_gemm(a, b, c, beta);  // PyTorch's own loop, too
    if (!one_thread) follow_thread_count();  // else the caller told OpenBLAS to use one
    gemm(ox.trans, oy.trans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), ox.p,
         static_cast<int>(ox.ld), oy.p, static_cast<int>(oy.ld), beta, c, static_cast<int>(M));
}

template <typename T>
void matmul_impl(const Tensor& a, const Tensor& b, const Tensor& out, T beta, Transpose t, bool batch_parallel) {
    const Shape& shape = out.impl()->shape;
    const Mat<T> ma = t.a ? matrix<T>(a).t() : matrix<T>(a), mb = t.b ? matrix<T>(b).t() : matrix<T>(b);
    const std::int64_t nd = shape.size(), n = shape[nd - 2], m = shape[nd - 1], k = ma.cols;
    const std::int64_t numel = shape.numel();
    if (numel == 0) return;
    T* c = out.impl()->data<T>();
    if (k == 0) {  // empty sums
        for (std::int64_t i = 0; i < numel; ++i) c[i] = beta == T(0) ? T(0) : c[i] * beta;
        return;
    }
    if (batch_parallel) use_blas_threads(1);  // until the next product that follows xgrad's thread count
    if (nd == 2) {                            // mm and addmm: one product
        if constexpr (std::is_floating_point_v<T>)
            blas_gemm(ma, mb, c, beta, batch_parallel);
        else
            loop_gemm(ma, mb, c, beta);
        return;
    }
    // Batched from here. PyTorch's bmm sums small matrices (under 400 multiply-adds) in a plain loop; mm
    // (above) always calls BLAS.
    const bool loop = !std::is_floating_point_v<T> || n * k * m < 400;
    const auto& sa = a.strides();
    const auto& sb = b.strides();
    const std::int64_t nbatch = numel / (n * m);
    // The products [lo, hi) of the batch, in order.
    auto products = [&](std::int64_t lo, std::int64_t hi) {
        std::vector<std::int64_t> idx(static_cast<std::size_t>(nd - 2), 0);
        std::int64_t off_a = 0, off_b = 0;
        for (std::int64_t d = nd - 3, rest = lo; d >= 0; --d) {  // the batch index of lo
            const auto du = static_cast<std::size_t>(d);
            idx[du] = rest % out.size(d);
            rest /= out.size(d);
            off_a += sa[du] * idx[du];
            off_b += sb[du] * idx[du];
        }
        for (std::int64_t bi = lo; bi < hi; ++bi) {
            Mat<T> x = ma, y = mb;
            x.p += off_a;
            y.p += off_b;
            if (loop)
                loop_gemm(x, y, c + bi * n * m, beta);
            else if constexpr (std::is_floating_point_v<T>)
                blas_gemm(x, y, c + bi * n * m, beta, batch_parallel);
            for (std::int64_t d = nd - 3; d >= 0; --d) {  // odometer over the batch dims
                const auto du = static_cast<std::size_t>(d);
                off_a += sa[du];
                off_b += sb[du];
                if (++idx[du] < out.size(d)) break;
                off_a -= sa[du] * idx[du];
                off_b -= sb[du] * idx[du];
                idx[du] = 0;
            }
        }
    };
    if (!batch_parallel || loop) return products(0, nbatch);
    parallel_for(0, nbatch, 1, [&](std::int64_t lo, std::int64_t hi) { products(lo, hi); });
}

// ---- gemv and dot ---------------------------------------------------------------------------------

template <typename T>
void mv_impl(const Tensor& a, const Tensor& x, const Tensor& out) {
    const std::int64_t n = a.size(0), k = a.size(1);
    T* y = out.impl()->data<T>();
    const Mat<T> ma = matrix<T>(a);
    const T* px = x.impl()->data<T>();
    std::int64_t incx = x.strides()[0];
    auto loop = [&] {
        for (std::int64_t i = 0; i < n; ++i) {
            T acc = 0;
            for (std::int64_t p = 0; p < k; ++p) acc += ma(i, p) * px[p * incx];
            y[i] = acc;
        }
    };
    if constexpr (!std::is_floating_point_v<T>) {
        return loop();
    } else {
        if (n == 0 || k == 0) return loop();
        // PyTorch's addmv: a column-major matrix as it is, a row-major one transposed, anything else
        // copied row-major; then its gemv sets the leading dimension of a single column.
        std::vector<T> copy;
        CBLAS_TRANSPOSE trans = CblasTrans;
        std::int64_t M = k, N = n, lda = ma.rs;
        const T* pa = ma.p;
        if (ma.rs == 1 && (k == 1 || ma.cs >= std::max<std::int64_t>(1, n))) {
            trans = CblasNoTrans;
            M = n;
            N = k;
            lda = ma.cs;
        } else if (!(ma.cs == 1 && (n == 1 || ma.rs >= std::max<std::int64_t>(1, k)))) {
            copy.resize(static_cast<std::size_t>(n * k));
            for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t p = 0; p < k; ++p) copy[static_cast<std::size_t>(i * k + p)] = ma(i, p);
            pa = copy.data();
            lda = k;
        }
        if (N == 1) lda = M;
        std::vector<T> xcopy;
        if (incx <= 0) {  // a broadcast vector (PyTorch would take its own loop here)
            xcopy.assign(static_cast<std::size_t>(k), px[0]);
            px = xcopy.data();
            incx = 1;
        }
        if (!fits_int({M, N, lda, incx})) return loop();
        follow_thread_count();
        gemv(trans, static_cast<int>(M), static_cast<int>(N), pa, static_cast<int>(lda), px, static_cast<int>(incx), y);
    }
}

template <typename T>
void dot_impl(const Tensor& a, const Tensor& b, const Tensor& out) {
    const std::int64_t n = a.size(0);
    const T *pa = a.impl()->data<T>(), *pb = b.impl()->data<T>();
    std::int64_t inca = a.strides()[0], incb = b.strides()[0];
    if (n == 1) inca = incb = 1;  // as PyTorch's dot
    T* r = out.impl()->data<T>();
    if constexpr (std::is_floating_point_v<T>) {
        if (fits_int({n, inca, incb})) {
            follow_thread_count();
            *r = blas_dot(static_cast<int>(n), pa, static_cast<int>(inca), pb, static_cast<int>(incb));
            return;
        }
    }
    T acc = 0;
    for (std::int64_t i = 0; i < n; ++i) acc += pa[i * inca] * pb[i * incb];
    *r = acc;
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& out, double beta, Transpose t) {
    detail::dispatch(out.dtype(),
                     [&](auto tag) { matmul_impl(a, b, out, static_cast<decltype(tag)>(beta), t, false); });
}

void matmul_batch_parallel(const Tensor& a, const Tensor& b, const Tensor& out, double beta, Transpose t) {
    detail::dispatch(out.dtype(), [&](auto tag) { matmul_impl(a, b, out, static_cast<decltype(tag)>(beta), t, true); });
}

bool small_products_in_use() {
    return blas_sums_in_order() && has_small_gemm();
}

void mv(const Tensor& a, const Tensor& x, const Tensor& out) {
    detail::dispatch(out.dtype(), [&](auto tag) { mv_impl<decltype(tag)>(a, x, out); });
}

void dot(const Tensor& a, const Tensor& b, const Tensor& out) {
    detail::dispatch(out.dtype(), [&](auto tag) { dot_impl<decltype(tag)>(a, b, out); });
}

void set_blas_threads(int n) {
    openblas_set_num_threads(n);
    g_blas_threads.store(n, std::memory_order_relaxed);
}

}  // namespace xgrad::kernels::cpu
