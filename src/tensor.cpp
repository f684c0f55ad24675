// Tensor metadata, storage, conversions, copies and the in-place updates optimizers use.
#include "xgrad/tensor.hpp"

#include <cmath>
#if defined(__has_include) && __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>  // poisoning macros; no-ops outside AddressSanitizer builds
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>

#include "detail/convert.hpp"
#include "detail/kernels.hpp"
#include "detail/maps.hpp"
#include "detail/pool.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/ops.hpp"
#ifdef XGRAD_WITH_CUDA
#include "kernels/cuda/runtime.hpp"
#endif

namespace xgrad {

// ---- vocabulary ---------------------------------------------------------------------------------

std::size_t element_size(DType dtype) {
    switch (dtype) {
        case DType::kFloat64:
        case DType::kInt64:
            return 8;
        case DType::kFloat32:
        case DType::kInt32:
            return 4;
        case DType::kBool:
        case DType::kUInt8:
            return 1;
    }
    return 8;
}

bool is_floating_point(DType dtype) {
    return dtype == kFloat32 || dtype == kFloat64;
}

namespace {
/// Rank in PyTorch's promotion order (a total order for xgrad's dtypes).
int promotion_rank(DType t) {
    switch (t) {
        case DType::kBool:
            return 0;
        case DType::kUInt8:
            return 1;
        case DType::kInt32:
            return 2;
        case DType::kInt64:
            return 3;
        case DType::kFloat32:
            return 4;
        case DType::kFloat64:
            return 5;
    }
    return 5;
}
}  // namespace

DType promote_types(DType a, DType b) {
    return promotion_rank(a) >= promotion_rank(b) ? a : b;
}

std::string to_string(DType dtype) {
    switch (dtype) {
        case DType::kFloat32:
            return "torch.float32";
        case DType::kFloat64:
            return "torch.float64";
        case DType::kInt64:
            return "torch.int64";
        case DType::kBool:
            return "torch.bool";
        case DType::kInt32:
            return "torch.int32";
        case DType::kUInt8:
            return "torch.uint8";
    }
    return "?";
}

std::ostream& operator<<(std::ostream& os, DType dtype) {
    return os << to_string(dtype);
}

std::string to_string(Device device) {
    if (device.is_cpu()) return "cpu";
    return device.has_index() ? "cuda:" + std::to_string(device.index()) : "cuda";
}

std::ostream& operator<<(std::ostream& os, Device device) {
    return os << to_string(device);
}

// Tensors only ever hold shapes that passed detail::checked_numel; Shape::numel's check guards shapes
// built by hand, so that no product of sizes can wrap around silently.
void Shape::numel_overflows() const {
    throw std::invalid_argument("numel: the number of elements of shape " + to_string(*this) + " overflows int64");
}

std::string to_string(const Shape& shape) {
    std::ostringstream os;
    os << "(";
    for (std::int64_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
    if (shape.size() == 1) os << ",";
    os << ")";
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
    os << "torch.Size([";
    for (std::int64_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
    return os << "])";
}

namespace detail {

// ---- storage and construction ---------------------------------------------------------------------

namespace {

/// Recently freed large blocks, by size, for reuse. A training step allocates and frees the same
/// large shapes every iteration; handing those back to the system (glibc trims the heap or unmaps)
/// makes every iteration page-fault its memory in again, which costs more than the arithmetic. The
/// cache holds at most kMaxCached bytes; a block that does not fit evicts the longest-kept blocks (of
/// any size) first, so that a program whose sizes change (a sweep over batch sizes, evaluation after
/// training) caches its current sizes rather than its first ones: before, a full cache freed every
/// new block, and fwd+bwd of a 16384x768 LayerNorm after smaller ones ran 3x slower, page faulting.
class BlockCache {
public:
    static constexpr std::size_t kMinBytes = 1 << 16;      // smaller blocks: malloc is fast enough
    static constexpr std::size_t kMaxCached = 256u << 20;  // bytes kept in the cache at most

    void* take(std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = blocks_.find(bytes);
        if (it == blocks_.end() || it->second.empty()) return nullptr;
        const auto entry = it->second.back();  // the most recently kept block of this size
        it->second.pop_back();
        if (it->second.empty()) blocks_.erase(it);  // sizes seen once do not pile up in the map
        void* p = entry->p;
        kept_.erase(entry);
        cached_ -= bytes;
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
        return p;
    }
    /// Keeps `p` for reuse, evicting older blocks to make room; false when `p` alone is larger than the
    /// cache (the caller frees it).
    bool give(void* p, std::size_t bytes) {
        if (bytes > kMaxCached) return false;
        std::vector<Entry> evicted;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            while (cached_ + bytes > kMaxCached) {
                const Entry oldest = kept_.front();
                const auto same = blocks_.find(oldest.bytes);
                same->second.erase(same->second.begin());  // the oldest of its size comes first there
                if (same->second.empty()) blocks_.erase(same);
                kept_.pop_front();
                cached_ -= oldest.bytes;
                evicted.push_back(oldest);
            }
            // Under AddressSanitizer a cached block is poisoned: a use after free stays a reported error.
            ASAN_POISON_MEMORY_REGION(p, bytes);
            blocks_[bytes].push_back(kept_.insert(kept_.end(), Entry{bytes, p}));
            cached_ += bytes;
        }
        for (const Entry& e : evicted) {  // returned to the system outside the lock
            ASAN_UNPOISON_MEMORY_REGION(e.p, e.bytes);
            std::free(e.p);
        }
        return true;
    }
    /// Bytes kept now, and blocks kept of `bytes` (tests).
    std::pair<std::size_t, std::size_t> held(std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = blocks_.find(bytes);
        return {cached_, it == blocks_.end() ? 0 : it->second.size()};
    }

private:
    struct Entry {
        std::size_t bytes;
        void* p;
    };
    std::mutex mutex_;
    std::list<Entry> kept_;                                                  // every kept block, the longest-kept first
    std::map<std::size_t, std::vector<std::list<Entry>::iterator>> blocks_;  // by size, oldest first
    std::size_t cached_ = 0;
};

/// Never destroyed: a Tensor in static storage is freed after every static destructor of this file
/// may have run, and must still find the cache (the blocks it holds stay reachable, not leaked).
BlockCache& block_cache() {
    static BlockCache* cache = new BlockCache;
    return *cache;
}

}  // namespace

std::pair<std::size_t, std::size_t> cpu_block_cache_held(std::size_t nbytes) {
    return block_cache().held((nbytes + 63) / 64 * 64);
}

namespace {

/// "1.50 GiB": bytes as PyTorch's allocator messages write them.
std::string format_bytes(std::size_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return buf;
}

}  // namespace

[[noreturn]] void out_of_memory(const char* op, std::size_t bytes) {
    throw OutOfMemoryError(std::string(op) + ": out of memory: tried to allocate " + format_bytes(bytes) + " (" +
                           std::to_string(bytes) + " bytes) on the CPU");
}

Storage::Storage(std::size_t bytes, Device dev, const char* op)
    : nbytes(bytes), device(dev.is_cpu() ? dev : resolve_device(dev, op)) {
    if (device.is_cuda()) {
#ifdef XGRAD_WITH_CUDA
        data = kernels::cuda::allocate(bytes, device.index());
#endif
        return;
    }
    // Small tensors keep their data inline. Others use plain malloc up to 4 KiB (16-byte aligned:
    // glibc's per-thread cache makes that several times cheaper than an aligned allocation, which
    // matters for the many tiny tensors of a graph), then 64-byte aligned blocks for the vector
    // units, reused through the block cache.
    constexpr std::size_t kSmall = 4096;
    if (bytes <= kInlineBytes) {
        data = inline_data;
    } else if (bytes <= kSmall) {
        data = std::malloc(bytes);
    } else {
        const std::size_t padded = (bytes + 63) / 64 * 64;
        data = padded >= BlockCache::kMinBytes ? block_cache().take(padded) : nullptr;
        if (!data) data = std::aligned_alloc(64, padded);
    }
    if (!data) out_of_memory(op, bytes);
}

Storage::~Storage() {
    if (device.is_cuda()) {
#ifdef XGRAD_WITH_CUDA
        kernels::cuda::release(data, nbytes, device.index());
#endif
        return;
    }
    if (data == inline_data) return;
    const std::size_t padded = (nbytes + 63) / 64 * 64;
    if (nbytes > 4096 && padded >= BlockCache::kMinBytes && block_cache().give(data, padded)) return;
    std::free(data);
}

Strides contiguous_strides(const Shape& shape) {
    Strides strides(static_cast<std::size_t>(shape.size()), 0);
    std::int64_t s = 1;
    for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
        strides[static_cast<std::size_t>(d)] = s;
        s *= shape[d];
    }
    return strides;
}

std::int64_t checked_numel(const Shape& shape, const char* op) {
    std::int64_t n = 1;
    bool overflow = false, empty = false;
    for (auto d : shape) {
        if (d < 0) fail(op, "negative dimension " + std::to_string(d) + " in shape " + to_string(shape));
        empty = empty || d == 0;
        overflow = __builtin_mul_overflow(n, d, &n) || overflow;
    }
    // A zero anywhere makes an empty tensor, however large the other sizes are (as PyTorch).
    if (empty) return 0;
    if (overflow) fail(op, "the shape " + to_string(shape) + " has too many elements: their number overflows int64");
    return n;
}

std::size_t checked_nbytes(const Shape& shape, DType dtype, const char* op) {
    const std::int64_t n = checked_numel(shape, op);
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(n, static_cast<std::int64_t>(element_size(dtype)), &bytes))
        fail(op, "the shape " + to_string(shape) + " of " + to_string(dtype) +
                     " is too large: its size in bytes overflows int64");
    return static_cast<std::size_t>(bytes);
}

Tensor make_empty(const Shape& shape, DType dtype, Device device, const char* op) {
    // One pass computes the strides and the element count (every op makes a tensor here); any size
    // that is negative, zero or overflows goes to checked_nbytes, which throws or handles it.
    auto impl = std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>());
    impl->shape = shape;
    impl->strides.resize_for_overwrite(static_cast<std::size_t>(shape.size()));  // written below
    std::int64_t n = 1;
    bool plain = true;
    for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
        const std::int64_t size = shape[d];
        impl->strides[static_cast<std::size_t>(d)] = n;
        plain = plain && size > 0 && !__builtin_mul_overflow(n, size, &n);
    }
    std::int64_t nbytes = 0;
    if (!plain || __builtin_mul_overflow(n, static_cast<std::int64_t>(element_size(dtype)), &nbytes)) {
        nbytes = static_cast<std::int64_t>(checked_nbytes(shape, dtype, op));  // throws, or an empty tensor
        impl->strides = contiguous_strides(shape);
    }
    impl->storage =
        std::allocate_shared<Storage>(PoolAllocator<Storage>(), static_cast<std::size_t>(nbytes), device, op);
    impl->dtype = dtype;
    impl->device = impl->storage->device;
    return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Shape& shape, const Strides& strides, std::int64_t offset) {
    auto impl = std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>());
    impl->storage = base.impl()->storage;
    impl->shape = shape;
    impl->strides = strides;
    impl->offset = offset;
    impl->dtype = base.dtype();
    impl->device = base.impl()->device;
    return Tensor(std::move(impl));
}

// ---- checks ---------------------------------------------------------------------------------------

void fail(const char* op, const std::string& message) {
    throw std::invalid_argument(std::string(op) + ": " + message);
}

Device resolve_device(Device device, const char* op) {
    if (device.is_cpu()) return device;
#ifdef XGRAD_WITH_CUDA
    if (kernels::cuda::device_count() == 0)
        fail(op, "cannot use " + to_string(device) + ": no CUDA device is available (" +
                     kernels::cuda::unavailable_reason() + ")");
    const int index = device.has_index() ? device.index() : kernels::cuda::current_device();
    kernels::cuda::check_device(index, op);
    return Device(kCUDA, index);
#else
    fail(op, "cannot use " + to_string(device) + ": xgrad was built without CUDA support");
#endif
}

void devices_differ(const Tensor& a, const Tensor& b, const char* op) {
    fail(op, "expected all tensors to be on the same device, but found at least two devices, " + to_string(a.device()) +
                 " and " + to_string(b.device()));
}

void dtypes_differ(const Tensor& a, const Tensor& b, const char* op) {
    fail(op, "internal error: an elementwise kernel got operands of two dtypes, " + to_string(a.dtype()) + " and " +
                 to_string(b.dtype()));
}

void check_defined(const Tensor& t, const char* op) {
    if (!t.defined()) fail(op, "the tensor is undefined");
}

void dim_out_of_range(std::int64_t dim, std::int64_t ndim, const char* op) {
    const std::int64_t n = ndim == 0 ? 1 : ndim;
    fail(op, "dimension " + std::to_string(dim) + " is out of range for a tensor of " + std::to_string(ndim) +
                 " dimensions (expected to be in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "])");
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    std::int64_t n = std::max(a.size(), b.size());
    Shape result;
    for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
        std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
        if (da != db && da != 1 && db != 1)
            fail(op, "shapes " + to_string(a) + " and " + to_string(b) + " cannot be broadcast together (" +
                         std::to_string(da) + " != " + std::to_string(db) + " at dimension " + std::to_string(i) + ")");
        result.push_back(da == 1 ? db : da);
    }
    checked_numel(result, op);
    return result;
}

DType promote(DType a, DType b) {
    return promote_types(a, b);
}

void not_implemented_for(const Tensor& t, const char* op, const std::string& kernel, bool device_suffix) {
    const char* suffix = !device_suffix ? "" : t.device().is_cpu() ? "_cpu" : "_cuda";
    fail(op, "\"" + kernel + suffix + "\" not implemented for '" + scalar_type_name(t.dtype()) + "'");
}

void refuse_bool(const Tensor& t, const char* op, const char* kernel, bool device_suffix) {
    if (t.defined() && t.dtype() == kBool) not_implemented_for(t, op, kernel, device_suffix);
}

std::string scalar_type_name(DType dtype) {
    switch (dtype) {
        case kFloat32:
            return "Float";
        case kFloat64:
            return "Double";
        case kInt64:
            return "Long";
        case kInt32:
            return "Int";
        case kUInt8:
            return "Byte";
        case kBool:
            return "Bool";
    }
    return to_string(dtype);
}

void check_scalar_fits(double value, DType dtype, const char* op) {
    // c10's checked_convert: unsigned types also take negative values down to -max (they wrap).
    const char* name = nullptr;
    bool ok = true;
    switch (dtype) {
        case DType::kInt64:
            ok = fits_int64(value);
            name = "int64_t";
            break;
        case DType::kInt32:
            ok = value >= -0x1p31 && value <= 0x1p31 - 1;
            name = "int";
            break;
        case DType::kUInt8:
            ok = value >= -255.0 && value <= 255.0;
            name = "uint8_t";
            break;
        default:
            return;
    }
    if (!ok) fail(op, std::string("value cannot be converted to type ") + name + " without overflow");
}

namespace {
/// PyTorch's categories: bool < integer < floating.
int category(DType t) {
    return t == kBool ? 0 : is_floating_point(t) ? 2 : 1;
}
}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
    check_defined(a, "result_type");
    check_defined(b, "result_type");
    const bool za = a.dim() == 0, zb = b.dim() == 0;
    if (za == zb) return promote_types(a.dtype(), b.dtype());
    // A zero-dim tensor takes part only when it is of a higher category than the dimensioned one.
    const DType dimensioned = za ? b.dtype() : a.dtype();
    const DType zero_dim = za ? a.dtype() : b.dtype();
    return category(zero_dim) > category(dimensioned) ? zero_dim : dimensioned;
}

DType result_type(std::initializer_list<const Tensor*> operands) {
    std::optional<DType> dimensioned, zero_dim;
    for (const Tensor* t : operands) {
        if (!t->defined()) continue;
        auto& slot = t->dim() == 0 ? zero_dim : dimensioned;
        slot = slot ? promote_types(*slot, t->dtype()) : t->dtype();
    }
    if (!dimensioned || !zero_dim) return dimensioned ? *dimensioned : zero_dim.value();
    return category(*zero_dim) > category(*dimensioned) ? promote_types(*dimensioned, *zero_dim) : *dimensioned;
}

/// Whether `a` is another tensor over `b`'s storage (a view that may overlap it), not `b` itself: an
/// in-place update of b must read such an a whole before writing.
bool other_view_of(const Tensor& a, const Tensor& b) {
    return a.impl()->storage == b.impl()->storage && a.impl() != b.impl();
}

/// In-place updates must not silently corrupt a graph: PyTorch refuses them on leaves that require
/// grad (outside no_grad) and tracks versions for the rest; xgrad refuses both cases.
void check_inplace(const Tensor& t, const char* op) {
    check_defined(t, op);
    if (!is_grad_enabled()) return;
    if (t.is_leaf() && t.requires_grad())
        fail(op, "a leaf tensor that requires grad cannot be modified in place outside NoGradGuard");
    if (!t.is_leaf()) fail(op, "a tensor produced by a recorded operation cannot be modified in place");
}

void check_inplace_operand(const Tensor& operand, const char* op) {
    if (is_grad_enabled() && operand.defined() && operand.requires_grad())
        fail(op,
             "the operand requires grad, but in-place updates are not recorded by autograd, so its gradient would "
             "be lost; use the out-of-place operation (y = x * 2 instead of y.copy_(x * 2)), or detach() the "
             "operand");
}

void check_no_internal_overlap(const Tensor& t, const char* op) {
    if (t.is_contiguous()) return;
    for (std::int64_t d = 0; d < t.dim(); ++d)
        if (t.size(d) > 1 && t.strides()[static_cast<std::size_t>(d)] == 0)
            fail(op,
                 "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation. (The tensor of shape " +
                     to_string(t.shape()) + " has stride 0 along dimension " + std::to_string(d) + ".)");
}

void check_result_fits(DType result, const Tensor& self, const char* op) {
    const DType out = self.dtype();
    if ((is_floating_point(result) && !is_floating_point(out)) || (out == kBool && result != kBool))
        fail(op, "result type " + scalar_type_name(result) + " can't be cast to the desired output type " +
                     scalar_type_name(out));
}

}  // namespace detail

DType result_type(const Tensor& a, const Tensor& b) {
    return detail::result_type(a, b);
}

using detail::fail;

// ---- metadata -------------------------------------------------------------------------------------

void Tensor::undefined(const char* op) {
    detail::check_defined(Tensor(), op);  // throws, in check_defined's words
    __builtin_unreachable();
}
std::int64_t Tensor::size_out_of_range(std::int64_t d) const {
    // wrap_dim lets a 0-d tensor take dim 0 or -1 (reductions need that); a size has to exist.
    if (dim() == 0) fail("size", "dimension " + std::to_string(d) + " was given but the tensor has no dimensions");
    detail::dim_out_of_range(d, dim(), "size");
}

namespace {

/// The name libtorch's "cannot be converted to type ..." messages give T.
template <typename T>
const char* type_name() {
    if constexpr (std::is_same_v<T, bool>)
        return "bool";
    else if constexpr (std::is_same_v<T, float>)
        return "float";
    else if constexpr (std::is_same_v<T, double>)
        return "double";
    else if constexpr (std::is_same_v<T, long double>)
        return "long double";
    else if constexpr (std::is_same_v<T, std::int64_t>)
        return "int64_t";
    else if constexpr (std::is_same_v<T, int>)
        return "int";
    else if constexpr (std::is_same_v<T, unsigned>)
        return "unsigned int";
    else if constexpr (std::is_same_v<T, short>)
        return "short";
    else if constexpr (std::is_same_v<T, unsigned short>)
        return "unsigned short";
    else if constexpr (std::is_same_v<T, std::uint64_t>)
        return "uint64_t";
    else if constexpr (std::is_signed_v<T>)
        return sizeof(T) == 1 ? "signed char" : "long long";
    else
        return sizeof(T) == 1 ? "unsigned char" : "unsigned long long";
}

/// `v` as T, throwing as libtorch's checked_convert when T cannot hold it.
template <typename T, typename S>
T checked_convert(S v) {
    bool ok = true;
    if constexpr (std::is_same_v<T, bool>) {
        return v != 0;
    } else if constexpr (std::is_floating_point_v<T>) {
        // Overflow is a finite value beyond T's range; inf and NaN convert.
        ok = !(std::isfinite(static_cast<long double>(v)) &&
               std::fabs(static_cast<long double>(v)) > static_cast<long double>(std::numeric_limits<T>::max()));
    } else if constexpr (std::is_floating_point_v<S>) {
        // Whole-number range check in long double, which holds every integer bound exactly.
        const long double x = v;
        ok = std::isfinite(x) && std::trunc(x) >= static_cast<long double>(std::numeric_limits<T>::min()) &&
             std::trunc(x) <= static_cast<long double>(std::numeric_limits<T>::max());
    } else {
        const long double x = static_cast<long double>(v);  // exact for every 64-bit integer
        ok = x >= static_cast<long double>(std::numeric_limits<T>::min()) &&
             x <= static_cast<long double>(std::numeric_limits<T>::max());
    }
    if (!ok) fail("item", std::string("value cannot be converted to type ") + type_name<T>() + " without overflow");
    return static_cast<T>(v);
}

}  // namespace

template <typename T>
std::vector<T> Tensor::to_vector_as() const {
    detail::check_defined(*this, "to_vector");
    if (!device().is_cpu()) return detach().to(kCPU).to_vector<T>();  // the copy waits for the device
    std::vector<T> out(static_cast<std::size_t>(numel()));
    detail::dispatch_all(dtype(), [&](auto tag) {
        using S = decltype(tag);
        const S* p = static_cast<const S*>(impl_->storage->data);
        detail::for_each_offset(impl_->shape, impl_->strides, impl_->offset, [&](std::int64_t i, std::int64_t off) {
            out[static_cast<std::size_t>(i)] = detail::convert<T>(p[off]);
        });
    });
    return out;
}

template <typename T>
T Tensor::item_as() const {
    detail::check_defined(*this, "item");
    if (numel() != 1)
        fail("item", "a tensor with " + std::to_string(numel()) + " elements cannot be converted to a scalar (shape " +
                         to_string(shape()) + ")");
    if (dtype() == kBool) return checked_convert<T>(to_vector_as<bool>()[0]);
    if (!is_floating_point()) return checked_convert<T>(to_vector_as<std::int64_t>()[0]);
    return checked_convert<T>(to_vector_as<double>()[0]);
}

template <typename T>
T* Tensor::data_ptr() const {
    detail::check_defined(*this, "data_ptr");
    DType want = std::is_same_v<T, float>          ? kFloat32
                 : std::is_same_v<T, double>       ? kFloat64
                 : std::is_same_v<T, bool>         ? kBool
                 : std::is_same_v<T, std::int32_t> ? kInt32
                 : std::is_same_v<T, std::uint8_t> ? kUInt8
                                                   : kInt64;
    if (dtype() != want) fail("data_ptr", "the tensor holds " + to_string(dtype()) + ", not " + to_string(want));
    if (!is_contiguous()) fail("data_ptr", "the tensor of shape " + to_string(shape()) + " is not contiguous");
#ifdef XGRAD_WITH_CUDA
    if (device().is_cuda()) kernels::cuda::synchronize(device().index());
#endif
    return impl_->data<T>();
}

// Every arithmetic type (int64_t, size_t ... are among them).
#define XGRAD_INSTANTIATE(T)               \
    template T Tensor::item_as<T>() const; \
    template std::vector<T> Tensor::to_vector_as<T>() const;
// clang-format off
XGRAD_INSTANTIATE(bool) XGRAD_INSTANTIATE(char) XGRAD_INSTANTIATE(signed char) XGRAD_INSTANTIATE(unsigned char)
XGRAD_INSTANTIATE(wchar_t) XGRAD_INSTANTIATE(char8_t) XGRAD_INSTANTIATE(char16_t) XGRAD_INSTANTIATE(char32_t)
XGRAD_INSTANTIATE(short) XGRAD_INSTANTIATE(unsigned short) XGRAD_INSTANTIATE(int) XGRAD_INSTANTIATE(unsigned)
XGRAD_INSTANTIATE(long) XGRAD_INSTANTIATE(unsigned long) XGRAD_INSTANTIATE(long long)
XGRAD_INSTANTIATE(unsigned long long) XGRAD_INSTANTIATE(float) XGRAD_INSTANTIATE(double)
XGRAD_INSTANTIATE(long double)
// clang-format on
#undef XGRAD_INSTANTIATE
                    template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template std::int64_t* Tensor::data_ptr<std::int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;
template std::int32_t* Tensor::data_ptr<std::int32_t>() const;
template std::uint8_t* Tensor::data_ptr<std::uint8_t>() const;

// ---- autograd state -------------------------------------------------------------------------------

Tensor& Tensor::requires_grad_(bool requires_grad) {
    detail::check_defined(*this, "requires_grad_");
    if (!is_leaf())
        fail("requires_grad_", "only leaf tensors can change requires_grad (use detach() for a non-leaf tensor)");
    if (requires_grad && !is_floating_point())
        fail("requires_grad_",
             "only Tensors of floating point dtype can require gradients (got " + to_string(dtype()) + ")");
    impl_->requires_grad = requires_grad;
    return *this;
}

const Tensor& Tensor::grad() const {
    detail::check_defined(*this, "grad");
    return impl_->grad;
}

Tensor& Tensor::grad() {
    detail::check_defined(*this, "grad");
    return impl_->grad;
}

Tensor& Tensor::mutable_grad() {
    detail::check_defined(*this, "mutable_grad");
    return impl_->grad;
}

bool Tensor::is_leaf() const {
    return !defined() || impl_->grad_fn == nullptr;
}

std::string Tensor::grad_fn_name() const {
    return defined() && impl_->grad_fn ? impl_->grad_fn->name : "";
}

Tensor Tensor::detach() const {
    detail::check_defined(*this, "detach");
    return detail::make_view(*this, impl_->shape, impl_->strides, impl_->offset);
}

// ---- copies and conversions -----------------------------------------------------------------------

/// Copies `src` (any strides, any dtype) into `dst` of the same shape (any strides).
static void strided_copy(const Tensor& src, const Tensor& dst) {
    kernels::copy(src, dst);
}

Tensor detail::empty_preserving(const Tensor& src, DType dtype, const char* op) {
    if (const Strides st =
            detail::row_major(src) || src.numel() == 0 ? Strides() : detail::output_strides(src.shape(), {&src});
        !st.empty())
        return detail::OrderedOutput(src.shape(), st, dtype, src.device(), op).result;
    return detail::make_empty(src.shape(), dtype, src.device(), op);
}

/// The copy of clone() and contiguous() into `out`, recorded as PyTorch records both (CloneBackward0).
static Tensor cloned(const Tensor& src, Tensor out) {
    strided_copy(src, out);
    if (detail::needs_grad({&src}))
        detail::record(out, "CloneBackward0", {&src},
                       [](const Tensor& g, const detail::NeedsGrad&) { return std::vector<Tensor>{g}; });
    return out;
}

Tensor detail::contiguous_clone(const Tensor& t) {
    return cloned(t, detail::make_empty(t.shape(), t.dtype(), t.device(), "clone"));
}

Tensor Tensor::contiguous() const {
    detail::check_defined(*this, "contiguous");
    return is_contiguous() ? *this : detail::contiguous_clone(*this);
}

Tensor Tensor::clone() const {
    detail::check_defined(*this, "clone");
    return cloned(*this, detail::empty_preserving(*this, dtype(), "clone"));
}

Tensor Tensor::to(DType target) const {
    detail::check_defined(*this, "to");
    if (target == dtype()) return *this;
    Tensor out = detail::empty_preserving(*this, target, "to");
    strided_copy(*this, out);
    if (detail::needs_grad({this}) && xgrad::is_floating_point(target)) {
        DType source = dtype();
        detail::record(out, "ToCopyBackward0", {this}, [source](const Tensor& g, const detail::NeedsGrad&) {
            return std::vector<Tensor>{g.to(source)};
        });
    }
    return out;
}

Tensor Tensor::to(Device target) const {
    detail::check_defined(*this, "to");
    target = detail::resolve_device(target, "to");
    if (target == device()) return *this;
    Tensor out = detail::make_empty(shape(), dtype(), target, "to");
    strided_copy(*this, out);
    if (detail::needs_grad({this})) {
        const Device source = device();
        detail::record(out, "ToCopyBackward0", {this}, [source](const Tensor& g, const detail::NeedsGrad&) {
            return std::vector<Tensor>{g.to(source)};
        });
    }
    return out;
}

// ---- in-place updates -----------------------------------------------------------------------------

Tensor& Tensor::copy_(const Tensor& src) {
    detail::check_inplace(*this, "copy_");
    detail::check_defined(src, "copy_");
    detail::check_inplace_operand(src, "copy_");
    detail::check_no_internal_overlap(*this, "copy_");
    if (src.shape() != shape() &&
        (src.dim() > dim() || detail::broadcast_shapes(src.shape(), shape(), "copy_") != shape()))
        fail("copy_", "the source of shape " + to_string(src.shape()) + " cannot be broadcast to the tensor of shape " +
                          to_string(shape()));
    Tensor from = src.shape() == shape() ? src : src.expand(shape());
    if (detail::other_view_of(src, *this)) {
        // The source may overlap the destination (`x[1:].copy_(x[:-1])`): read it all before writing.
        NoGradGuard no_grad;
        from = from.clone();
    }
    strided_copy(from, *this);
    detail::bump_version(*this);
    return *this;
}

Tensor& Tensor::fill_(double value) {
    detail::check_inplace(*this, "fill_");
    detail::check_scalar_fits(value, dtype(), "fill_");
    kernels::fill(*this, value);
    detail::bump_version(*this);
    return *this;
}

Tensor& Tensor::zero_() {
    return fill_(0.0);
}

/// Runs `compute` (an out-of-place op) without recording and writes its result into `self`.
template <typename F>
static Tensor& assign_inplace(Tensor& self, const char* op, F&& compute) {
    detail::check_inplace(self, op);
    detail::check_no_internal_overlap(self, op);
    Tensor result;
    {
        NoGradGuard no_grad;
        result = compute();
    }
    if (result.shape() != self.shape())
        fail(op, "the result of shape " + to_string(result.shape()) + " does not fit the tensor of shape " +
                     to_string(self.shape()));
    detail::check_result_fits(result.dtype(), self, op);
    return self.copy_(result);
}

/// Whether `t` broadcasts to `shape` without `shape` changing (an in-place operand).
static bool broadcasts_to(const Tensor& t, const Shape& shape) {
    if (t.dim() > static_cast<std::int64_t>(shape.size())) return false;
    for (std::int64_t i = 1; i <= t.dim(); ++i) {
        const std::int64_t n = t.size(-i);
        if (n != 1 && n != shape[shape.size() - static_cast<std::size_t>(i)]) return false;
    }
    return true;
}

/// Whether an in-place map of `self` (and `other`, when given) can write straight into self, as the
/// out-of-place op's kernel with self as its output (the same bits, without a result to copy back):
/// self dense and floating; other of its dtype and device, broadcasting to its shape, and not another
/// view of its storage, which the writes could change before it is read (self itself is fine: each
/// element is read before it is written).
static bool maps_into_self(const Tensor& self, const Tensor* other) {
    if (!self.defined() || !self.is_floating_point() || !self.is_contiguous()) return false;
    if (!other) return true;
    if (!other->defined() || other->dtype() != self.dtype() || other->device() != self.device()) return false;
    return !detail::other_view_of(*other, self) && broadcasts_to(*other, self.shape());
}

/// self = op(self, other) in place (maps_into_self holds).
static Tensor& binary_into_self(Tensor& self, const Tensor& other, kernels::BinaryOp op, const char* name) {
    detail::check_inplace(self, name);
    Tensor view;  // only for an operand that broadcasts
    kernels::binary(op, self,
                    other.shape() == self.shape() ? other : (view = detail::broadcast_view(other, self.shape())), self,
                    0, 0);
    detail::bump_version(self);
    return self;
}

/// self = op(self, s) in place (maps_into_self holds).
static Tensor& unary_into_self(Tensor& self, double s, kernels::UnaryOp op, const char* name) {
    detail::check_inplace(self, name);
    kernels::unary(op, self, self, s, 0);
    detail::bump_version(self);
    return self;
}

/// The run of PyTorch's TensorIterator along which `other` (of self_p's shape, self_p contiguous) is one
/// value: the innermost dims where its stride is 0, merged (dims of size 1 skipped); 1 where its
/// innermost dim of size > 1 has a stride (it runs along the run, or there is none).
static std::int64_t constant_run(const Tensor& other) {
    std::int64_t run = 1;
    for (auto d = other.dim() - 1; d >= 0; --d) {
        if (other.size(d) == 1) continue;
        if (other.strides()[static_cast<std::size_t>(d)] != 0) break;
        run *= other.size(d);
    }
    return run;
}

/// PyTorch 1.13's add kernel (self + alpha * other, fused where the CPU has FMA) with an operand that is
/// one value along each run of `run` elements: the last run % 16 floats (8 doubles) of a run go through
/// its compiled scalar loop, which after the first of them rounds alpha * other apart from the sum in
/// whole groups of 4 floats (2 doubles), the rest fused (measured against libtorch 1.13, every length
/// from 1 to 40). The values of those elements (self's as it is now, src the operand expanded to self's
/// row-major order) and their positions, to be written over the fused kernel's.
template <typename T>
std::vector<std::pair<std::int64_t, T>> unfused_elements(const T* self, const T* src, std::int64_t n, std::int64_t run,
                                                         double alpha) {
    std::vector<std::pair<std::int64_t, T>> out;
    constexpr std::int64_t block = 64 / sizeof(T), group = 16 / sizeof(T);
    const std::int64_t tail = run % block, apart = tail > 0 ? (tail - 1) / group * group : 0;
    if (apart == 0) return out;
    const T a = static_cast<T>(alpha);
    for (std::int64_t start = 0; start + run <= n; start += run)
        for (std::int64_t i = start + run - tail + 1, end = i + apart; i < end; ++i) {
            const T product = a * src[i];
            out.emplace_back(i, self[i] + product);
        }
    return out;
}

namespace {

/// add_(other, alpha) and sub_(other) (alpha -1), named `op` in errors.
Tensor& add_scaled(Tensor& self, const Tensor& other, double alpha, const char* op) {
    // alpha 1 and -1 (sub_) with an operand broadcasting to self: the add or sub kernel into self
    // (a - b is a + (-1) b exactly), reading the operand in place.
    if (std::abs(alpha) == 1.0 && maps_into_self(self, &other) && other.shape() != self.shape())
        return binary_into_self(self, other, alpha > 0 ? kernels::BinaryOp::kAdd : kernels::BinaryOp::kSub, op);
    // Otherwise, an operand of self's dtype and device broadcasting to self (of its shape: optimizers):
    // the axpy kernel, self + alpha * other with one rounding where the CPU has FMA, as PyTorch's add_
    // (its kernel's fused multiply-add), over self in its memory order (a dense self's dims permuted so
    // that it is contiguous, as PyTorch's iterator orders them); the operand goes through a contiguous
    // copy in that order, a broadcast one expanded. Where the operand is one value along PyTorch's run
    // (a 0-d tensor, a broadcast column), the elements its compiled scalar loop rounds apart are
    // rounded so (unfused_elements). A self neither contiguous nor dense goes through a contiguous copy.
    if (self.defined() && other.defined() && self.dtype() == other.dtype() && self.device() == other.device() &&
        self.is_floating_point() && broadcasts_to(other, self.shape())) {
        detail::check_inplace(self, op);
        NoGradGuard no_grad;
        Tensor expanded;  // a view only where other broadcasts (no handle copied for an operand of self's shape)
        const Tensor& wide = other.shape() == self.shape() ? other : (expanded = other.expand(self.shape()));
        const bool overlap = detail::other_view_of(other, self);
        if (self.is_contiguous() && wide.is_contiguous() && !overlap) {  // the optimizers' update: one pass
            kernels::axpy(self, wide, alpha);
            detail::bump_version(self);
            return self;
        }
        detail::check_no_internal_overlap(self, op);  // a contiguous self has none
        Tensor self_p = self, other_p = wide;
        if (!self.is_contiguous() && detail::dense_layout(self.shape(), self.strides())) {
            const std::vector<int> slowest = detail::slowest_first(self.strides());
            const Dims order(std::vector<std::int64_t>(slowest.begin(), slowest.end()));
            self_p = self.permute(order);
            other_p = wide.permute(order);
        }
        // Another view of this storage is read whole first (the kernel would see its own writes).
        const Tensor src = overlap ? detail::contiguous_clone(other_p) : other_p.contiguous();
        if (self_p.is_contiguous()) {
            const std::int64_t run = self.device().is_cpu() ? constant_run(other_p) : 1;
            detail::dispatch_float(self.dtype(), op, [&](auto tag) {
                using T = decltype(tag);
                T* p = self_p.impl()->data<T>();
                const auto apart = run > 1 ? unfused_elements(p, src.impl()->data<T>(), self.numel(), run, alpha)
                                           : std::vector<std::pair<std::int64_t, T>>();
                kernels::axpy(self_p, src, alpha);
                for (const auto& [i, v] : apart) p[i] = v;
            });
            detail::bump_version(self);
            return self;
        }
        Tensor dst = self.contiguous();
        kernels::axpy(dst, wide.contiguous(), alpha);
        return self.copy_(dst);
    }
    return assign_inplace(self, op, [&] {
        if (alpha == 1.0) return self.add(other);
        return alpha == -1.0 ? self.sub(other) : self.add(other.mul(alpha));
    });
}

}  // namespace

Tensor& Tensor::add_(const Tensor& other, double alpha) {
    detail::check_inplace_operand(other, "add_");
    return add_scaled(*this, other, alpha, "add_");
}
Tensor& Tensor::add_(double other) {
    if (maps_into_self(*this, nullptr)) return unary_into_self(*this, other, kernels::UnaryOp::kAdd, "add_");
    return assign_inplace(*this, "add_", [&] { return add(other); });
}
Tensor& Tensor::sub_(const Tensor& other) {
    detail::check_inplace_operand(other, "sub_");
    return add_scaled(*this, other, -1.0, "sub_");
}
Tensor& Tensor::mul_(const Tensor& other) {
    detail::check_inplace_operand(other, "mul_");
    if (maps_into_self(*this, &other)) return binary_into_self(*this, other, kernels::BinaryOp::kMul, "mul_");
    return assign_inplace(*this, "mul_", [&] { return mul(other); });
}
Tensor& Tensor::mul_(double other) {
    if (maps_into_self(*this, nullptr)) return unary_into_self(*this, other, kernels::UnaryOp::kMul, "mul_");
    return assign_inplace(*this, "mul_", [&] { return mul(other); });
}
Tensor& Tensor::div_(const Tensor& other) {
    detail::check_inplace_operand(other, "div_");
    if (maps_into_self(*this, &other)) return binary_into_self(*this, other, kernels::BinaryOp::kDiv, "div_");
    return assign_inplace(*this, "div_", [&] { return div(other); });
}
Tensor& Tensor::div_(double other) {
    if (maps_into_self(*this, nullptr)) return unary_into_self(*this, other, kernels::UnaryOp::kDiv, "div_");
    return assign_inplace(*this, "div_", [&] { return div(other); });
}

Tensor& operator+=(Tensor& a, const Tensor& b) {
    return a.add_(b);
}
Tensor& operator+=(Tensor& a, double b) {
    return a.add_(b);
}
Tensor& operator-=(Tensor& a, const Tensor& b) {
    return a.sub_(b);
}
Tensor& operator*=(Tensor& a, const Tensor& b) {
    return a.mul_(b);
}
Tensor& operator*=(Tensor& a, double b) {
    return a.mul_(b);
}
Tensor& operator/=(Tensor& a, const Tensor& b) {
    return a.div_(b);
}
Tensor& operator/=(Tensor& a, double b) {
    return a.div_(b);
}

}  // namespace xgrad
