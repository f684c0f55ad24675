// Creating tensors: from values, filled with a constant, or ranges.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "xgrad/shape.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

/// Values for `tensor()`: a number, or a braced list of NestedValues, nested to any depth.
///
/// Braces always make a list and bare numbers a scalar, so `{{0.5}, {-1.0}}` is a 2×1 matrix.
class NestedValues {
public:
    /// A scalar.
    NestedValues(double value) : value_(value) {}  // NOLINT: implicit, so that `{1.0, 2.0}` works
    /// A list of scalars or of lists.
    NestedValues(std::initializer_list<NestedValues> list) : list_(list), is_list_(true) {}
    /// True for a list, false for a scalar.
    bool is_list() const { return is_list_; }
    /// The scalar (when not a list).
    double value() const { return value_; }
    /// The elements (when a list).
    const std::vector<NestedValues>& list() const { return list_; }

private:
    double value_ = 0.0;
    std::vector<NestedValues> list_;
    bool is_list_ = false;
};

/// A tensor from a number (0-d) or nested braces, as `torch.tensor`: float32 unless options say otherwise.
///
/// ```cpp
/// auto c = xgrad::tensor({{0.2, 0.1, 0.3}, {0.5, 0.1, 0.1}});   // shape (2, 3), float32
/// auto s = xgrad::tensor(3.0, xgrad::kFloat64);                 // 0-d
/// ```
/// Throws when the lists are not rectangular.
Tensor tensor(const NestedValues& values, FactoryOptions options = {});

/// A tensor of `shape` holding a copy of `values` (row-major), converted to the options' dtype.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, FactoryOptions options = {});

/// A tensor whose values are unspecified (fast to create; fill it before reading).
Tensor empty(const Shape& shape, FactoryOptions options = {});
/// A tensor of zeros.
Tensor zeros(const Shape& shape, FactoryOptions options = {});
/// A tensor of ones.
Tensor ones(const Shape& shape, FactoryOptions options = {});
/// A tensor filled with `value`.
Tensor full(const Shape& shape, double value, FactoryOptions options = {});
/// `[0, 1, ..., end-1]`; float32 unless options say otherwise.
Tensor arange(double end, FactoryOptions options = {});
/// `[start, start+step, ...]` below `end`, as torch.arange.
Tensor arange(double start, double end, double step = 1.0, FactoryOptions options = {});
/// zeros with other's shape, dtype and device.
Tensor zeros_like(const Tensor& other);
/// zeros with other's shape and the given options.
Tensor zeros_like(const Tensor& other, FactoryOptions options);
/// ones with other's shape, dtype and device.
Tensor ones_like(const Tensor& other);
/// ones with other's shape and the given options.
Tensor ones_like(const Tensor& other, FactoryOptions options);
/// full with other's shape, dtype and device.
Tensor full_like(const Tensor& other, double value);
/// empty with other's shape, dtype and device.
Tensor empty_like(const Tensor& other);

// ---- matrices and ranges (src/shape_ops.cpp) -----------------------------------------------------------
/// The n × n identity matrix, as `torch.eye(n)`.
Tensor eye(std::int64_t n, FactoryOptions options = {});
/// The n × m matrix with ones on its main diagonal, as `torch.eye(n, m)`.
Tensor eye(std::int64_t n, std::int64_t m, FactoryOptions options = {});
/// `steps` evenly spaced values from `start` to `end` inclusive, as `torch.linspace` (its formula:
/// the first half counted from start, the second from end).
Tensor linspace(double start, double end, std::int64_t steps, FactoryOptions options = {});

}  // namespace xgrad
