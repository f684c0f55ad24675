// Shapes, element types, devices and tensor options: the vocabulary every other header uses.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace xgrad {

/// Element type of a tensor. float32 is the default, as in PyTorch.
enum class DType { kFloat32, kFloat64, kInt64 };
inline constexpr DType kFloat32 = DType::kFloat32;  ///< 32-bit float (`torch.float32`).
inline constexpr DType kFloat = DType::kFloat32;    ///< Alias of kFloat32, as libtorch spells it.
inline constexpr DType kFloat64 = DType::kFloat64;  ///< 64-bit float (`torch.float64`).
inline constexpr DType kDouble = DType::kFloat64;   ///< Alias of kFloat64, as libtorch spells it.
inline constexpr DType kInt64 = DType::kInt64;      ///< 64-bit integer (`torch.int64`), for indices.
inline constexpr DType kLong = DType::kInt64;       ///< Alias of kInt64, as libtorch spells it.

/// Size in bytes of one element of `dtype`.
std::size_t element_size(DType dtype);
/// True for kFloat32 and kFloat64.
bool is_floating_point(DType dtype);
/// PyTorch's name of `dtype`: "torch.float32", "torch.float64", "torch.int64".
std::string to_string(DType dtype);
/// Prints PyTorch's name of `dtype`, e.g. `torch.float32`.
std::ostream& operator<<(std::ostream& os, DType dtype);

/// The kind of a device.
enum class DeviceType : std::int8_t { kCPU, kCUDA };
inline constexpr DeviceType kCPU = DeviceType::kCPU;    ///< Host memory; always available.
inline constexpr DeviceType kCUDA = DeviceType::kCUDA;  ///< An NVIDIA GPU; needs a CUDA build.

/// Where a tensor's storage lives: a device type and, for CUDA, which GPU (`torch.device`).
///
/// A DeviceType converts to a Device, so `kCPU` and `kCUDA` stand wherever a Device is expected.
/// Comparing with a DeviceType compares the type only; two Devices compare type and index.
///
/// ```cpp
/// xgrad::Device d(xgrad::kCUDA, 1);          // cuda:1
/// bool gpu = t.device() == xgrad::kCUDA;     // true on any GPU
/// auto g = t.to(xgrad::kCUDA);               // the current GPU (cuda:0 unless told otherwise)
/// ```
class Device {
public:
    static constexpr DeviceType kCPU = DeviceType::kCPU;    ///< `Device::kCPU`, the enum's old spelling.
    static constexpr DeviceType kCUDA = DeviceType::kCUDA;  ///< `Device::kCUDA`, the enum's old spelling.
    /// A device of `type`; for CUDA, `index` picks the GPU and -1 means the current one. The CPU
    /// has no index (it is always -1).
    constexpr Device(DeviceType type, int index = -1)  // NOLINT: implicit, so that kCUDA is a Device
        : type_(type), index_(type == DeviceType::kCPU ? std::int16_t{-1} : static_cast<std::int16_t>(index)) {}
    /// The kind of device.
    constexpr DeviceType type() const { return type_; }
    /// The GPU's index, or -1 (the CPU, or "the current GPU").
    constexpr int index() const { return index_; }
    /// True when an index was given.
    constexpr bool has_index() const { return index_ >= 0; }
    /// True for the CPU.
    constexpr bool is_cpu() const { return type_ == DeviceType::kCPU; }
    /// True for a CUDA device.
    constexpr bool is_cuda() const { return type_ == DeviceType::kCUDA; }
    /// Same type and index.
    friend constexpr bool operator==(Device, Device) = default;
    /// Same type, whatever the index: `t.device() == xgrad::kCUDA`.
    friend constexpr bool operator==(Device d, DeviceType t) { return d.type_ == t; }

private:
    DeviceType type_;
    std::int16_t index_;
};

/// PyTorch's name of `device`: "cpu", "cuda" or "cuda:1".
std::string to_string(Device device);
/// Prints PyTorch's name of `device`, e.g. `cuda:0`.
std::ostream& operator<<(std::ostream& os, Device device);

/// The sizes of a tensor, one per dimension; prints as PyTorch's `torch.Size([2, 5])`.
///
/// ```cpp
/// xgrad::Shape s{2, 5};
/// std::cout << s;          // torch.Size([2, 5])
/// ```
class Shape {
public:
    /// The shape of a 0-d (scalar) tensor.
    Shape() = default;
    /// From a braced list: `Shape{2, 3}`.
    Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
    /// From any vector of sizes.
    explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

    /// Number of dimensions.
    std::int64_t size() const { return static_cast<std::int64_t>(dims_.size()); }
    /// True for the shape of a 0-d tensor.
    bool empty() const { return dims_.empty(); }
    /// Size of dimension `i` (no wrapping; use Tensor::size for negative dims).
    std::int64_t operator[](std::int64_t i) const { return dims_[static_cast<std::size_t>(i)]; }
    /// Mutable size of dimension `i`.
    std::int64_t& operator[](std::int64_t i) { return dims_[static_cast<std::size_t>(i)]; }
    /// Product of the sizes (1 for a 0-d shape).
    std::int64_t numel() const;
    /// The sizes as a vector.
    const std::vector<std::int64_t>& vec() const { return dims_; }
    /// Iterators over the sizes.
    auto begin() const { return dims_.begin(); }
    /// Iterators over the sizes.
    auto end() const { return dims_.end(); }
    /// Appends a dimension.
    void push_back(std::int64_t d) { dims_.push_back(d); }
    /// Equal when every size is equal.
    friend bool operator==(const Shape&, const Shape&) = default;

private:
    std::vector<std::int64_t> dims_;
};

/// The shape in parentheses, as error messages write it: `(2, 5)`.
std::string to_string(const Shape& shape);
/// Prints `torch.Size([2, 5])`, as Python prints `tensor.shape`.
std::ostream& operator<<(std::ostream& os, const Shape& shape);

/// One dimension or a list of them, for reductions: `x.sum(-1)` or `x.mean({-2, -1})`.
class Dims {
public:
    /// A single dimension (negative counts from the end).
    Dims(std::int64_t dim) : dims_{dim} {}  // NOLINT: implicit on purpose, as in `x.sum(-1)`
    /// A list of dimensions.
    Dims(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
    /// A list of dimensions from a vector.
    explicit Dims(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}
    /// The dimensions as given.
    const std::vector<std::int64_t>& vec() const { return dims_; }

private:
    std::vector<std::int64_t> dims_;
};

/// How to create a tensor: dtype, device and requires_grad, chained as in libtorch.
///
/// ```cpp
/// auto w = xgrad::zeros({3}, xgrad::TensorOptions().dtype(xgrad::kFloat64).requires_grad(true));
/// auto d = xgrad::ones({2}, xgrad::kFloat64);   // a dtype converts to options
/// auto g = xgrad::randn({2, 3}, xgrad::kCUDA);   // so does a device
/// ```
class TensorOptions {
public:
    /// float32, CPU, no grad.
    TensorOptions() = default;
    /// Options with this dtype.
    TensorOptions(DType dtype) : dtype_(dtype) {}  // NOLINT: implicit, as libtorch
    /// Options on this device.
    TensorOptions(Device device) : device_(device) {}  // NOLINT: implicit, as libtorch
    /// Options on this kind of device (`TensorOptions(xgrad::kCUDA)`).
    TensorOptions(DeviceType type) : device_(type) {}  // NOLINT: implicit, as libtorch
    /// Sets the element type.
    TensorOptions dtype(DType d) const {
        auto o = *this;
        o.dtype_ = d;
        return o;
    }
    /// Sets the device.
    TensorOptions device(Device d) const {
        auto o = *this;
        o.device_ = d;
        return o;
    }
    /// Makes the new tensor a leaf that requires grad.
    TensorOptions requires_grad(bool r) const {
        auto o = *this;
        o.requires_grad_ = r;
        return o;
    }
    /// The element type.
    DType dtype() const { return dtype_; }
    /// The device.
    Device device() const { return device_; }
    /// Whether the tensor requires grad.
    bool requires_grad() const { return requires_grad_; }

private:
    DType dtype_ = kFloat32;
    Device device_ = kCPU;
    bool requires_grad_ = false;
};

}  // namespace xgrad
