// Shapes, element types, devices and tensor options: the vocabulary every other header uses.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace xgrad {

/// Element type of a tensor. float32 is the default, as in PyTorch.
///
/// Only the floating types take part in autograd. Arithmetic on bool, uint8 and int32 tensors gives
/// PyTorch's dtypes and values (it is carried out in int64 and converted back, so uint8 and int32
/// wrap around as PyTorch's do).
enum class DType { kFloat32, kFloat64, kInt64, kBool, kInt32, kUInt8 };
inline constexpr DType kFloat32 = DType::kFloat32;  ///< 32-bit float (`torch.float32`).
inline constexpr DType kFloat = DType::kFloat32;    ///< Alias of kFloat32, as libtorch spells it.
inline constexpr DType kFloat64 = DType::kFloat64;  ///< 64-bit float (`torch.float64`).
inline constexpr DType kDouble = DType::kFloat64;   ///< Alias of kFloat64, as libtorch spells it.
inline constexpr DType kInt64 = DType::kInt64;      ///< 64-bit integer (`torch.int64`), for indices.
inline constexpr DType kLong = DType::kInt64;       ///< Alias of kInt64, as libtorch spells it.
inline constexpr DType kBool = DType::kBool;        ///< Boolean (`torch.bool`): what comparisons return, masks.
inline constexpr DType kInt32 = DType::kInt32;      ///< 32-bit integer (`torch.int32`).
inline constexpr DType kInt = DType::kInt32;        ///< Alias of kInt32, as libtorch spells it.
inline constexpr DType kUInt8 = DType::kUInt8;      ///< 8-bit unsigned integer (`torch.uint8`), e.g. image bytes.
inline constexpr DType kByte = DType::kUInt8;       ///< Alias of kUInt8, as libtorch spells it.

/// Size in bytes of one element of `dtype`.
std::size_t element_size(DType dtype);
/// True for kFloat32 and kFloat64.
bool is_floating_point(DType dtype);
/// The dtype PyTorch's `torch.promote_types` gives: the larger of the two in the order
/// bool < uint8 < int32 < int64 < float32 < float64.
DType promote_types(DType a, DType b);
/// PyTorch's name of `dtype`: "torch.float32", "torch.float64", "torch.int64", "torch.bool",
/// "torch.int32", "torch.uint8".
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

namespace detail {

/// A list of int64 values kept inline up to six (the shapes and strides of nearly every tensor),
/// on the heap beyond: creating a tensor then costs no allocation for its geometry. Its data pointer
/// always points at the values (the inline array or the heap block), so that reading one is a load,
/// not a choice between the two.
class DimVector {
public:
    static constexpr std::size_t kInline = 6;  ///< Values held without a heap allocation.

    DimVector() = default;
    /// From a braced list.
    DimVector(std::initializer_list<std::int64_t> values) { assign(values.begin(), values.size()); }
    /// From a vector (implicit, so code written for vectors keeps working).
    DimVector(const std::vector<std::int64_t>& values) { assign(values.data(), values.size()); }  // NOLINT
    /// The values in [first, last).
    DimVector(const std::int64_t* first, const std::int64_t* last) {
        assign(first, static_cast<std::size_t>(last - first));
    }
    /// `n` copies of `value`.
    DimVector(std::size_t n, std::int64_t value) { resize(n, value); }
    /// Copies.
    DimVector(const DimVector& other) {
        if (other.on_heap())
            assign(other.data_, other.size_);
        else
            copy_inline(other);
    }
    /// Moves; the source is left empty.
    DimVector(DimVector&& other) noexcept { take(other); }
    /// Copies.
    DimVector& operator=(const DimVector& other) {
        if (this != &other) {
            size_ = 0;
            if (other.on_heap() || on_heap())
                assign(other.data_, other.size_);
            else
                copy_inline(other);
        }
        return *this;
    }
    /// Moves; the source is left empty.
    DimVector& operator=(DimVector&& other) noexcept {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }
    ~DimVector() { release(); }

    /// Number of values.
    std::size_t size() const { return size_; }
    /// True when there are none.
    bool empty() const { return size_ == 0; }
    /// The values, contiguous.
    std::int64_t* data() { return data_; }
    /// The values, contiguous.
    const std::int64_t* data() const { return data_; }
    /// Value `i`.
    std::int64_t& operator[](std::size_t i) { return data()[i]; }
    /// Value `i`.
    const std::int64_t& operator[](std::size_t i) const { return data()[i]; }
    /// First value.
    const std::int64_t* begin() const { return data(); }
    /// Past the last value.
    const std::int64_t* end() const { return data() + size_; }
    /// First value.
    std::int64_t* begin() { return data(); }
    /// Past the last value.
    std::int64_t* end() { return data() + size_; }
    /// Last value.
    std::int64_t back() const { return data()[size_ - 1]; }
    /// Last value.
    std::int64_t& back() { return data()[size_ - 1]; }
    /// Appends a value.
    void push_back(std::int64_t v) {
        reserve(size_ + 1);
        data()[size_++] = v;
    }
    /// Removes the last value.
    void pop_back() { --size_; }
    /// Makes the size `n`: values beyond the old size are `value`, as std::vector::resize.
    void resize(std::size_t n, std::int64_t value = 0) {
        const std::size_t old = size_;
        resize_for_overwrite(n);
        for (std::size_t i = old; i < n; ++i) data_[i] = value;
    }
    /// Makes the size `n` without writing the values beyond the old size: the caller writes them
    /// (make_empty's strides, where filling them first cost a memset call per tensor).
    void resize_for_overwrite(std::size_t n) {
        reserve(n);
        size_ = n;
    }
    /// The values as a vector.
    operator std::vector<std::int64_t>() const { return {begin(), end()}; }  // NOLINT: implicit on purpose
    /// Equal when the same values in the same order.
    friend bool operator==(const DimVector& a, const DimVector& b) {
        if (a.size_ != b.size_) return false;
        for (std::size_t i = 0; i < a.size_; ++i)
            if (a[i] != b[i]) return false;
        return true;
    }
    /// Equal to a vector of the same values.
    friend bool operator==(const DimVector& a, const std::vector<std::int64_t>& b) { return a == DimVector(b); }

private:
    void reserve(std::size_t n) {
        if (n <= capacity_) return;
        std::size_t cap = capacity_ * 2 > n ? capacity_ * 2 : n;
        auto* p = new std::int64_t[cap];
        for (std::size_t i = 0; i < size_; ++i) p[i] = data_[i];
        if (on_heap()) delete[] data_;
        data_ = p;
        capacity_ = cap;
    }
    void assign(const std::int64_t* values, std::size_t n) {
        reserve(n);
        for (std::size_t i = 0; i < n; ++i) data()[i] = values[i];
        size_ = n;
    }
    void take(DimVector& other) {
        size_ = other.size_;
        if (other.on_heap()) {
            data_ = other.data_;
            capacity_ = other.capacity_;
            other.data_ = other.inline_;
            other.capacity_ = kInline;
        } else {
            copy_inline(other);
        }
        other.size_ = 0;
    }
    // One 8-byte move per value: the source was usually just written value by value, and a 16-byte
    // load over two 8-byte stores misses store forwarding (a stall of about 15 cycles, measured in
    // make_empty). The empty asm keeps the compiler from merging the moves into vector ones.
    void copy_inline(const DimVector& other) {
        for (std::size_t i = 0; i < other.size_; ++i) {
            std::int64_t v = other.inline_[i];
            asm("" : "+r"(v));
            inline_[i] = v;
        }
        size_ = other.size_;
    }
    void release() {
        if (on_heap()) delete[] data_;
        data_ = inline_;
        capacity_ = kInline;
        size_ = 0;
    }
    bool on_heap() const { return data_ != inline_; }

    std::int64_t inline_[kInline];
    std::int64_t* data_ = inline_;  // inline_, or a heap block of capacity_ values
    std::size_t size_ = 0, capacity_ = kInline;
};

}  // namespace detail

/// The strides of a tensor, in elements (PyTorch's `t.stride()`): a short list of int64.
using Strides = detail::DimVector;

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
    explicit Shape(const std::vector<std::int64_t>& dims) : dims_(dims) {}
    /// From the sizes in [first, last) (shapes built from other shapes, without a vector in between).
    Shape(const std::int64_t* first, const std::int64_t* last) : dims_(first, last) {}

    /// Number of dimensions.
    std::int64_t size() const { return static_cast<std::int64_t>(dims_.size()); }
    /// True for the shape of a 0-d tensor.
    bool empty() const { return dims_.empty(); }
    /// Size of dimension `i` (no wrapping; use Tensor::size for negative dims).
    std::int64_t operator[](std::int64_t i) const { return dims_[static_cast<std::size_t>(i)]; }
    /// Mutable size of dimension `i`.
    std::int64_t& operator[](std::int64_t i) { return dims_[static_cast<std::size_t>(i)]; }
    /// Product of the sizes (1 for a 0-d shape); throws std::invalid_argument when it overflows int64.
    std::int64_t numel() const {
        std::int64_t n = 1;
        for (std::int64_t d : dims_)
            if (__builtin_mul_overflow(n, d, &n)) numel_overflows();
        return n;
    }
    /// The sizes as a vector (a copy).
    std::vector<std::int64_t> vec() const { return dims_; }
    /// Iterators over the sizes.
    auto begin() const { return dims_.begin(); }
    /// Iterators over the sizes.
    auto end() const { return dims_.end(); }
    /// Appends a dimension.
    void push_back(std::int64_t d) { dims_.push_back(d); }
    /// Equal when every size is equal.
    friend bool operator==(const Shape&, const Shape&) = default;

private:
    [[noreturn]] void numel_overflows() const;
    // Inline for up to DimVector::kInline dims: making a tensor's shape allocates nothing.
    detail::DimVector dims_;
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

/// How to create a tensor, as PyTorch's keyword arguments: dtype, device and requires_grad, given
/// as designated initialisers (in this order; any may be left out). Every factory takes one, or a
/// bare dtype or device in its place (FactoryOptions).
///
/// ```cpp
/// auto w = xgrad::zeros({3}, xgrad::TensorOptions{.dtype = xgrad::kFloat64, .requires_grad = true});
/// auto g = xgrad::randn({2, 3}, xgrad::TensorOptions{.device = xgrad::kCUDA});
/// auto d = xgrad::ones({2}, xgrad::kFloat64);   // a bare dtype
/// ```
struct TensorOptions {
    DType dtype = kFloat32;      ///< The element type (float32 unless given).
    Device device = kCPU;        ///< The device (the CPU unless given).
    bool requires_grad = false;  ///< Whether the new tensor is a leaf that requires grad.
};

/// What a factory takes as its options: a TensorOptions, or a bare DType, Device or device type,
/// which sets that alone. Its setters chain as libtorch's TensorOptions do.
///
/// ```cpp
/// auto a = xgrad::zeros({3}, xgrad::kFloat64);                                 // a dtype
/// auto b = xgrad::zeros({3}, xgrad::kCUDA);                                    // a device
/// auto c = xgrad::zeros({3}, xgrad::FactoryOptions(xgrad::kFloat64).requires_grad(true));  // chained
/// ```
class FactoryOptions {
public:
    /// float32, CPU, no grad.
    FactoryOptions() = default;
    /// The options given (`TensorOptions{.dtype = ..., .device = ...}`).
    FactoryOptions(const TensorOptions& options)  // NOLINT: implicit, so that factories take either
        : dtype_(options.dtype), device_(options.device), requires_grad_(options.requires_grad) {}
    /// Options with this dtype.
    FactoryOptions(DType dtype) : dtype_(dtype) {}  // NOLINT: implicit, as libtorch
    /// Options on this device.
    FactoryOptions(Device device) : device_(device) {}  // NOLINT: implicit, as libtorch
    /// Options on this kind of device (`xgrad::kCUDA`).
    FactoryOptions(DeviceType type) : device_(type) {}  // NOLINT: implicit, as libtorch
    /// Sets the element type.
    FactoryOptions dtype(DType d) const {
        auto o = *this;
        o.dtype_ = d;
        return o;
    }
    /// Sets the device.
    FactoryOptions device(Device d) const {
        auto o = *this;
        o.device_ = d;
        return o;
    }
    /// Makes the new tensor a leaf that requires grad.
    FactoryOptions requires_grad(bool r) const {
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
