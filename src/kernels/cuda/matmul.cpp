// CUDA matrix products through cuBLAS: a row-major product C = A·B is cuBLAS's column-major
// Cᵀ = Bᵀ·Aᵀ, so operands are passed swapped and read in place (a transposed view is a
// transposed operand); batches are strided batches. TF32 stays off: float32 products are full
// float32 products, as on the CPU. cuBLAS is loaded on the first product (dlopen), not when a program
// starts: with it comes libcublasLt (540 MB), whose loading cost every program linked with xgrad's CUDA
// build half a second and 200 MB of memory at start-up, whether it used a GPU or not.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "kernels/cuda/cuda.hpp"
#include "xgrad/autograd.hpp"

namespace xgrad::kernels::cuda {

using detail::fail;

namespace {

/// The cuBLAS functions xgrad calls, from the library loaded at the first product.
struct Cublas {
    decltype(&cublasCreate_v2) create = nullptr;
    decltype(&cublasSetMathMode) set_math_mode = nullptr;
    decltype(&cublasSgemmStridedBatched) sgemm = nullptr;
    decltype(&cublasDgemmStridedBatched) dgemm = nullptr;
    decltype(&cublasGetStatusString) status_string = nullptr;
};

template <typename F>
void bind(void* library, F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(library, name));
    if (f == nullptr) fail("matmul", std::string("the cuBLAS library found has no ") + name);
}

/// cuBLAS of the toolkit xgrad was built with (its major version), found as the loader finds libraries,
/// else in that toolkit's directory. Throws naming the library and the loader's message when neither works.
const Cublas& cublas() {
    static std::mutex mutex;
    static std::optional<Cublas> loaded;
    std::lock_guard<std::mutex> lock(mutex);
    if (loaded) return *loaded;
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* why = dlerror();
        const std::string first = why != nullptr ? why : "not found";
        library = dlopen((std::string(XGRAD_CUDA_LIBDIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr)
            fail("matmul",
                 "cannot load cuBLAS (" + soname + ", also looked for in " + XGRAD_CUDA_LIBDIR + "): " + first);
    }
    Cublas c;
    bind(library, c.create, "cublasCreate_v2");
    bind(library, c.set_math_mode, "cublasSetMathMode");
    bind(library, c.sgemm, "cublasSgemmStridedBatched");
    bind(library, c.dgemm, "cublasDgemmStridedBatched");
    bind(library, c.status_string, "cublasGetStatusString");
    loaded = c;
    return *loaded;
}

void check_cublas(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        fail("matmul", std::string(what) + " failed: " + cublas().status_string(status));
}

/// One cuBLAS handle per device, created on first use and kept (like the allocator's cache).
cublasHandle_t handle(int device) {
    static std::mutex mutex;
    static std::map<int, cublasHandle_t> handles;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = handles.find(device);
    if (it != handles.end()) return it->second;
    cublasHandle_t h = nullptr;
    check_cublas(cublas().create(&h), "cublasCreate");
    check_cublas(cublas().set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // no TF32
    handles.emplace(device, h);
    return h;
}

/// A row-major (rows × cols) matrix as cuBLAS reads it: its transpose (cols × rows, column-major)
/// is the memory as it is when the rows are dense (op N), or the memory transposed when the
/// columns are (op T). `ld` is cuBLAS's leading dimension.
struct Operand {
    const void* data = nullptr;
    cublasOperation_t op = CUBLAS_OP_N;
    std::int64_t ld = 1;
    std::int64_t batch_stride = 0;
};

std::optional<Operand> transposed_view(std::int64_t rows, std::int64_t cols, std::int64_t s0, std::int64_t s1) {
    const std::int64_t r = std::max<std::int64_t>(rows, 1), c = std::max<std::int64_t>(cols, 1);
    if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= c)) return Operand{nullptr, CUBLAS_OP_N, rows == 1 ? c : s0, 0};
    if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= r)) return Operand{nullptr, CUBLAS_OP_T, cols == 1 ? r : s1, 0};
    return std::nullopt;
}

/// The stride between consecutive matrices of `t`'s batch (its dims before the last two), when
/// one stride describes them all (contiguous batches, or one broadcast batch).
std::optional<std::int64_t> uniform_batch_stride(const Tensor& t) {
    std::optional<std::int64_t> stride;
    std::int64_t inner = 1;
    for (std::int64_t d = t.dim() - 3; d >= 0; --d) {
        const std::int64_t size = t.size(d), st = t.strides()[static_cast<std::size_t>(d)];
        if (size == 1) continue;
        if (!stride)
            stride = st;
        else if (st != *stride * inner)
            return std::nullopt;
        inner *= size;
    }
    return stride.value_or(0);
}

/// How cuBLAS reads `t` (…, rows, cols); `t` becomes a contiguous copy when it cannot be read in place.
Operand operand(Tensor& t) {
    const std::int64_t nd = t.dim(), rows = t.size(-2), cols = t.size(-1);
    auto view = transposed_view(rows, cols, t.strides()[static_cast<std::size_t>(nd - 2)],
                                t.strides()[static_cast<std::size_t>(nd - 1)]);
    auto batch = uniform_batch_stride(t);
    if (!view || !batch) {
        t = t.contiguous();
        view = transposed_view(rows, cols, cols, 1);
        batch = rows * cols;
    }
    view->data = ptr(t);
    view->batch_stride = *batch;
    return *view;
}

int as_int(std::int64_t v, const Tensor& a, const Tensor& b) {
    if (v > std::numeric_limits<int>::max())
        fail("matmul", "shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                           " exceed cuBLAS's 32-bit sizes on CUDA");
    return static_cast<int>(v);
}

}  // namespace

std::string load_cublas() {
    return cublas().status_string(CUBLAS_STATUS_SUCCESS);
}

void matmul(const Tensor& x_in, const Tensor& y_in, const Tensor& out, double beta, Transpose t) {
    NoGradGuard no_grad;  // the views below, and the copies of operands cuBLAS cannot read, are not recorded
    // A launch costs more than a view: transposed operands are read through transposed views.
    const Tensor x = t.a ? x_in.transpose(-2, -1) : x_in, y = t.b ? y_in.transpose(-2, -1) : y_in;
    use_device(out, {&x, &y}, "matmul");
    if (x.dtype() == kInt64)
        fail("matmul",
             "int64 matrices cannot be multiplied on CUDA (cuBLAS multiplies floating-point matrices); "
             "convert them with .to(xgrad::kFloat64)");
    const std::int64_t n = x.size(-2), k = x.size(-1), m = y.size(-1);
    if (out.numel() == 0) return;
    if (k == 0) {  // empty sums: out = beta * out
        if (beta == 0.0)
            kernels::fill(out, 0.0);
        else
            kernels::unary(UnaryOp::kMul, out, out, beta);
        return;
    }
    const std::int64_t batches = out.numel() / (n * m);
    Tensor a = x, b = y;
    // Column-major Cᵀ (m × n) = Bᵀ (m × k) · Aᵀ (k × n): B's transposed view comes first.
    const Operand ob = operand(b), oa = operand(a);
    const int im = as_int(m, x, y), in = as_int(n, x, y), ik = as_int(k, x, y);
    const int lda = as_int(oa.ld, x, y), ldb = as_int(ob.ld, x, y), nb = as_int(batches, x, y);
    cublasHandle_t h = handle(out.device().index());
    if (out.dtype() == kFloat32) {
        const float alpha = 1.0f, f_beta = static_cast<float>(beta);
        check_cublas(cublas().sgemm(h, ob.op, oa.op, im, in, ik, &alpha, static_cast<const float*>(ob.data), ldb,
                                    ob.batch_stride, static_cast<const float*>(oa.data), lda, oa.batch_stride, &f_beta,
                                    static_cast<float*>(ptr(out)), im, n * m, nb),
                     "cublasSgemmStridedBatched");
    } else {
        const double alpha = 1.0;
        check_cublas(cublas().dgemm(h, ob.op, oa.op, im, in, ik, &alpha, static_cast<const double*>(ob.data), ldb,
                                    ob.batch_stride, static_cast<const double*>(oa.data), lda, oa.batch_stride, &beta,
                                    static_cast<double*>(ptr(out)), im, n * m, nb),
                     "cublasDgemmStridedBatched");
    }
}

void mv(const Tensor& a, const Tensor& x, const Tensor& out) {
    // (n, k) · (k, 1) -> (n, 1): the vector and the result as one-column matrices.
    const std::int64_t n = a.size(0), k = a.size(1);
    Tensor xv = detail::make_view(x, Shape{k, 1}, Strides{x.strides()[0], 1}, x.storage_offset());
    Tensor ov = detail::make_view(out, Shape{n, 1}, Strides{1, 1}, out.storage_offset());
    matmul(a, xv, ov, 0.0, {});
}

void dot(const Tensor& a, const Tensor& b, const Tensor& out) {
    // (1, k) · (k, 1) -> (1, 1).
    const std::int64_t k = a.size(0);
    Tensor av = detail::make_view(a, Shape{1, k}, Strides{k * a.strides()[0], a.strides()[0]}, a.storage_offset());
    Tensor bv = detail::make_view(b, Shape{k, 1}, Strides{b.strides()[0], 1}, b.storage_offset());
    Tensor ov = detail::make_view(out, Shape{1, 1}, Strides{1, 1}, out.storage_offset());
    matmul(av, bv, ov, 0.0, {});
}

}  // namespace xgrad::kernels::cuda
