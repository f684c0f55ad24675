// Tensor factories: nested braces, vectors, constants and ranges.
#include "xgrad/factory.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "detail/convert.hpp"
#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"

namespace xgrad {

using detail::fail;

namespace {

/// A new contiguous tensor for the factory `op`, which names itself when the shape or the device is invalid.
Tensor make(const char* op, const Shape& shape, const FactoryOptions& options) {
    detail::checked_numel(shape, op);  // the shape's errors before the device's
    return detail::make_empty(shape, options.dtype(), detail::resolve_device(options.device(), op), op);
}

/// Integer tensors take only values an int64 can hold: NaN, inf or 1e30 throw as in PyTorch.
void check_fits(double value, DType dtype, const char* op) {
    detail::check_scalar_fits(value, dtype, op);
}

/// Values are written on the host; a tensor for another device is then copied there.
Tensor finish(Tensor t, const FactoryOptions& options) {
    if (!options.device().is_cpu()) t = t.to(options.device());
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

/// A tensor of `shape` from row-major doubles, converted to the options' dtype.
Tensor from_doubles(const std::vector<double>& values, const Shape& shape, const FactoryOptions& options,
                    const char* op) {
    for (double v : values) check_fits(v, options.dtype(), op);
    Tensor out = detail::make_empty(shape, options.dtype(), kCPU, op);
    detail::dispatch_all(options.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = out.impl()->data<T>();
        for (std::size_t i = 0; i < values.size(); ++i) p[i] = detail::convert<T>(values[i]);
    });
    return finish(out, options);
}

/// Flattens nested lists, checking that they are rectangular and of one depth.
struct Flattener {
    std::vector<double> values;
    std::vector<std::int64_t> shape;
    std::int64_t rank = -1;  // fixed by the first number reached

    void walk(const NestedValues& v, std::int64_t depth) {
        if (!v.is_list()) {
            if (rank == -1) rank = depth;
            if (depth != rank) fail("tensor", "nested lists are not rectangular: lists of different depths");
            values.push_back(v.value());
            return;
        }
        if (rank != -1 && depth >= rank) fail("tensor", "nested lists are not rectangular: lists of different depths");
        if (static_cast<std::int64_t>(shape.size()) <= depth) shape.resize(static_cast<std::size_t>(depth + 1), -1);
        auto& size = shape[static_cast<std::size_t>(depth)];
        const auto n = static_cast<std::int64_t>(v.list().size());
        if (size == -1)
            size = n;
        else if (size != n)
            fail("tensor", "nested lists are not rectangular: expected " + std::to_string(size) +
                               " elements at depth " + std::to_string(depth) + ", got " + std::to_string(n));
        for (const auto& x : v.list()) walk(x, depth + 1);
    }
};

}  // namespace

Tensor tensor(const NestedValues& values, FactoryOptions options) {
    Flattener f;
    f.walk(values, 0);
    for (auto& d : f.shape)
        if (d == -1) d = 0;  // inner sizes of an empty list: torch.tensor([[]]) has shape (1, 0)
    // Numbers must sit at the innermost depth, so that `{{{}}, {1.0}}` cannot pass as a (2, 1, 0) shape.
    if ((f.rank != -1 && f.rank != static_cast<std::int64_t>(f.shape.size())) ||
        static_cast<std::int64_t>(f.values.size()) != Shape(f.shape).numel())
        fail("tensor", "nested lists are not rectangular: lists of different depths");
    return from_doubles(f.values, Shape(f.shape), options, "tensor");
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, FactoryOptions options) {
    if (static_cast<std::int64_t>(values.size()) != shape.numel())
        fail("from_vector", std::to_string(values.size()) + " values cannot fill a tensor of shape " +
                                to_string(shape) + " (" + std::to_string(shape.numel()) + " elements)");
    if constexpr (std::is_floating_point_v<T>)
        for (T v : values) check_fits(static_cast<double>(v), options.dtype(), "from_vector");
    Tensor out = make("from_vector", shape, options.device(kCPU));
    detail::dispatch_all(options.dtype(), [&](auto tag) {
        using D = decltype(tag);
        D* p = out.impl()->data<D>();
        for (std::size_t i = 0; i < values.size(); ++i) p[i] = detail::convert<D>(values[i]);
    });
    return finish(out, options);
}
template Tensor from_vector(const std::vector<float>&, const Shape&, FactoryOptions);
template Tensor from_vector(const std::vector<double>&, const Shape&, FactoryOptions);
template Tensor from_vector(const std::vector<std::int64_t>&, const Shape&, FactoryOptions);

Tensor empty(const Shape& shape, FactoryOptions options) {
    Tensor out = make("empty", shape, options);
    if (options.requires_grad()) out.requires_grad_(true);
    return out;
}

/// full, with `op` naming the factory the user called; filled by the device's kernel off the CPU.
static Tensor fill(const char* op, const Shape& shape, double value, const FactoryOptions& options) {
    Tensor out = make(op, shape, options);
    check_fits(value, options.dtype(), op);
    if (out.device().is_cpu()) {
        detail::dispatch_all(options.dtype(), [&](auto tag) {
            using T = decltype(tag);
            T* o = out.impl()->data<T>();
            const T v = detail::convert<T>(value);
            // Zeros of every dtype are all-zero bytes: memset writes them with the machine's widest
            // stores (std::fill, compiled for baseline x86-64, with 16-byte ones: one_hot of 1024x1500
            // classes 0.30 -> 0.17 ms, PyTorch 0.16).
            if (value == 0 && !std::signbit(value))
                std::memset(o, 0, static_cast<std::size_t>(shape.numel()) * sizeof(T));
            else
                std::fill(o, o + shape.numel(), v);
        });
    } else {
        kernels::fill(out, value);
    }
    if (options.requires_grad()) out.requires_grad_(true);
    return out;
}

Tensor full(const Shape& shape, double value, FactoryOptions options) {
    return fill("full", shape, value, options);
}
Tensor zeros(const Shape& shape, FactoryOptions options) {
    return fill("zeros", shape, 0.0, options);
}
Tensor ones(const Shape& shape, FactoryOptions options) {
    return fill("ones", shape, 1.0, options);
}

Tensor arange(double end, FactoryOptions options) {
    return arange(0.0, end, 1.0, options);
}

Tensor arange(double start, double end, double step, FactoryOptions options) {
    if (step == 0) fail("arange", "step must be nonzero");
    if (!std::isfinite(start) || !std::isfinite(end)) fail("arange", "start and end must be finite");
    if ((end - start) / step < 0)
        fail("arange", "upper bound and larger bound inconsistent with step sign (start " + std::to_string(start) +
                           ", end " + std::to_string(end) + ", step " + std::to_string(step) + ")");
    // The length as PyTorch computes it, checked before any conversion to an integer: a range of
    // 1e30 elements is an arange error, not a C++ length_error.
    const double length = std::ceil((end - start) / step);
    if (!(length < 0x1p63)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "the range [%g, %g) with step %g has too many elements (%g)", start, end, step,
                      length);
        fail("arange", buf);
    }
    check_fits(start, options.dtype(), "arange");
    check_fits(end, options.dtype(), "arange");
    const auto n = static_cast<std::int64_t>(length);
    Tensor out = detail::make_empty(Shape{n}, options.dtype(), kCPU, "arange");
    detail::dispatch_all(options.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = out.impl()->data<T>();
        for (std::int64_t i = 0; i < n; ++i) p[i] = detail::convert<T>(start + static_cast<double>(i) * step);
    });
    return finish(out, options);
}

/// Options with other's dtype and device, as PyTorch's *_like factories.
static FactoryOptions options_of(const Tensor& other) {
    return FactoryOptions(other.dtype()).device(other.device());
}

Tensor zeros_like(const Tensor& other) {
    return zeros(other.shape(), options_of(other));
}
Tensor zeros_like(const Tensor& other, FactoryOptions options) {
    return zeros(other.shape(), options);
}
Tensor ones_like(const Tensor& other) {
    return ones(other.shape(), options_of(other));
}
Tensor ones_like(const Tensor& other, FactoryOptions options) {
    return ones(other.shape(), options);
}
Tensor full_like(const Tensor& other, double value) {
    return full(other.shape(), value, options_of(other));
}
Tensor empty_like(const Tensor& other) {
    return empty(other.shape(), options_of(other));
}

}  // namespace xgrad
