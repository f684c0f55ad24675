// Internal representation of tensors and graph nodes, and the helpers every operation shares.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pool.hpp"  // relative: tests include this header by path
#include "xgrad/autograd.hpp"
#include "xgrad/shape.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad::detail {

/// A block of memory on one device. Tensors share it through shared_ptr; views point into it. CUDA
/// storage comes from the caching allocator (kernels/cuda/runtime.hpp); its device has an index.
struct Storage {
    void* data = nullptr;
    std::size_t nbytes = 0;
    Device device = kCPU;
    // PyTorch's version counter, shared by every view and detach() of the storage: each in-place
    // update bumps it, and a tensor saved for backward remembers the value it saw (Saved below).
    std::atomic<std::uint32_t> version{0};
    // Small tensors keep their data here, in the same allocation as the Storage itself: a graph of
    // tiny tensors (a training step of a small model) then costs one allocation less per tensor.
    static constexpr std::size_t kInlineBytes = 128;
    alignas(16) unsigned char inline_data[kInlineBytes];

    /// Allocates `nbytes` on `device`; throws OutOfMemoryError naming `op` when that fails.
    Storage(std::size_t nbytes, Device device, const char* op = "empty");
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
};

struct Node;

/// Runs after a leaf's grad has received its last gradient of a backward pass (PyTorch's
/// post-accumulate-grad hook; DistributedDataParallel starts a bucket's all-reduce from it).
/// backward() counts the graph's edges into each hooked leaf in `remaining` before its walk, so a
/// leaf used twice fires once, after both gradients are in; a leaf reached outside a walk fires at once.
struct PostAccumulateHook {
    std::function<void()> fn;
    std::int64_t remaining = 0;  // edges into the leaf that the current walk has still to deliver
};
/// How many leaves hold a hook (backward() counts edges only when some do).
extern std::atomic<std::int64_t> hooked_leaves;
/// Runs `fn` when the outermost backward() running on this thread has finished its walk, before it
/// returns (PyTorch's queue_callback); `fn(false)` instead when the walk throws. Valid inside a hook.
void queue_backward_callback(std::function<void(bool completed)> fn);

/// What a Tensor handle points to: a strided view of a storage plus its autograd state. Its fields are
/// TensorFields' (include/xgrad/tensor.hpp), where the handle's inline accessors read them.
struct TensorImpl : TensorFields {
    // User-provided, so that allocate_shared's value-initialisation does not zero the whole object
    // before the members initialise themselves (every op makes a few of these).
    TensorImpl() {}  // NOLINT(modernize-use-equals-default): `= default` would bring the zeroing back

    template <typename T>
    T* data() const {
        return static_cast<T*>(storage->data) + offset;
    }
};
/// Swaps dims `a` and `b` of `t`'s shape and strides in place: a transpose without a new view, for a
/// TensorImpl whose handle nobody else shares (or a view just made).
inline void swap_dims(TensorImpl& t, std::size_t a, std::size_t b) {
    std::swap(t.shape[static_cast<std::int64_t>(a)], t.shape[static_cast<std::int64_t>(b)]);
    std::swap(t.strides[a], t.strides[b]);
}
// Tensor::fields() reinterprets a TensorImpl* as its TensorFields base: only valid while TensorImpl
// adds no fields (standard layout makes the two pointer-interconvertible).
static_assert(std::is_standard_layout_v<TensorImpl>, "TensorImpl must add no fields to TensorFields");

/// Where the gradient for one input of a node goes: into another node, or into a leaf's grad.
struct Edge {
    std::shared_ptr<Node> fn;
    std::shared_ptr<TensorImpl> leaf;
    bool defined() const { return fn || leaf; }
};

/// Which inputs of a node need a gradient; backward functions skip the others.
struct NeedsGrad {
    std::vector<bool> flags;  // more than 64 inputs (cat of many tensors)
    std::uint64_t bits = 0;   // inputs 0..63
    void push_back(bool need) {
        if (flags.empty() && count < 64)
            bits |= std::uint64_t{need} << count;
        else {
            if (flags.empty())
                for (std::size_t i = 0; i < count; ++i) flags.push_back((bits >> i) & 1);
            flags.push_back(need);
        }
        ++count;
    }
    bool operator[](std::size_t i) const {
        if (i >= count) return false;
        return flags.empty() ? ((bits >> i) & 1) != 0 : flags[i];
    }
    std::size_t count = 0;
};

/// The gradients a backward function returns, one per input: a vector that keeps up to kInline of them
/// in place, so that a node with one to three inputs allocates nothing for them.
class GradList {
public:
    static constexpr std::size_t kInline = 3;

    GradList() = default;
    /// `n` undefined gradients.
    explicit GradList(std::size_t n) { resize(n); }
    /// One gradient per argument, each taken by value: `return Grads{a, b}` and `return {a, b}` move
    /// temporaries in (an initializer_list would copy every handle, two atomic count updates each).
    template <typename... Ts,
              typename = std::enable_if_t<(sizeof...(Ts) >= 1) && (std::is_convertible_v<Ts&&, Tensor> && ...)>>
    GradList(Ts&&... grads) {  // NOLINT: implicit, as `return {a, b}` needs
        reserve(sizeof...(Ts));
        (push_back(Tensor(std::forward<Ts>(grads))), ...);
    }
    GradList(std::vector<Tensor>&& grads) : heap_(std::move(grads)), size_(heap_.size()), on_heap_(true) {}  // NOLINT
    GradList(GradList&& other) noexcept { take(other); }
    GradList& operator=(GradList&& other) noexcept {
        if (this != &other) {
            clear();
            take(other);
        }
        return *this;
    }
    GradList(const GradList&) = delete;
    GradList& operator=(const GradList&) = delete;
    ~GradList() = default;

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Tensor* data() { return on_heap_ ? heap_.data() : inline_; }
    const Tensor* data() const { return on_heap_ ? heap_.data() : inline_; }
    Tensor& operator[](std::size_t i) { return data()[i]; }
    const Tensor& operator[](std::size_t i) const { return data()[i]; }
    Tensor* begin() { return data(); }
    Tensor* end() { return data() + size_; }
    const Tensor* begin() const { return data(); }
    const Tensor* end() const { return data() + size_; }
    Tensor& back() { return data()[size_ - 1]; }

    void push_back(Tensor g) {
        reserve(size_ + 1);
        data()[size_++] = std::move(g);
    }
    void resize(std::size_t n) {
        reserve(n);
        for (std::size_t i = n; i < size_; ++i) data()[i] = Tensor();
        size_ = n;
    }
    void reserve(std::size_t n) {
        if (on_heap_) {
            if (heap_.size() < n) heap_.resize(n);
            return;
        }
        if (n <= kInline) return;
        heap_.resize(n);
        for (std::size_t i = 0; i < size_; ++i) heap_[i] = std::move(inline_[i]);
        on_heap_ = true;
    }
    void clear() {
        for (Tensor& g : *this) g = Tensor();
        size_ = 0;
    }

private:
    void take(GradList& other) {
        if (other.on_heap_) {
            heap_ = std::move(other.heap_);
            on_heap_ = true;
        } else {
            heap_.clear();
            on_heap_ = false;
            for (std::size_t i = 0; i < other.size_; ++i) inline_[i] = std::move(other.inline_[i]);
        }
        size_ = other.size_;
        other.size_ = 0;
        other.on_heap_ = false;
        other.heap_.clear();
    }

    Tensor inline_[kInline];
    std::vector<Tensor> heap_;  // all of them once more than kInline (its size is the capacity)
    std::size_t size_ = 0;
    bool on_heap_ = false;
};

/// Maps the gradient of a node's output to the gradients of its inputs (undefined where not needed).
///
/// A move-only callable like std::function, but closures of up to kInline bytes (two saved tensors
/// and two shapes) live inside it: recording an op then allocates nothing for its closure. A closure
/// taking the gradient as `Tensor&` gets the engine's own handle, which it may change or take over
/// while no other handle shares it (the engine drops it after the call); most take `const Tensor&`.
class BackwardFn {
public:
    static constexpr std::size_t kInline = 176;

    BackwardFn() = default;
    BackwardFn(std::nullptr_t) {}  // NOLINT: as std::function
    template <typename F, typename D = std::decay_t<F>,
              typename = std::enable_if_t<!std::is_same_v<D, BackwardFn> && !std::is_same_v<D, std::nullptr_t>>>
    BackwardFn(F&& f) {  // NOLINT: implicit from any closure, as std::function
        if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                      std::is_nothrow_move_constructible_v<D>) {
            new (buf_) D(std::forward<F>(f));
            ops_ = &kInlineOps<D>;
        } else {
            D* p = new (pool_alloc(sizeof(D))) D(std::forward<F>(f));
            *reinterpret_cast<D**>(buf_) = p;
            ops_ = &kHeapOps<D>;
        }
    }
    BackwardFn(BackwardFn&& other) noexcept { take(other); }
    BackwardFn& operator=(BackwardFn&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    BackwardFn& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }
    BackwardFn(const BackwardFn&) = delete;
    BackwardFn& operator=(const BackwardFn&) = delete;
    ~BackwardFn() { reset(); }

    explicit operator bool() const { return ops_ != nullptr; }
    /// Calls the closure with the caller's own handle to the gradient, which the closure may change.
    GradList operator()(Tensor& grad, const NeedsGrad& needs) const {
        return ops_->call(const_cast<unsigned char*>(buf_), grad, needs);
    }
    /// Calls the closure with a gradient it must leave as it is: it gets a handle of its own.
    GradList operator()(const Tensor& grad, const NeedsGrad& needs) const {
        Tensor own = grad;
        return (*this)(own, needs);
    }

private:
    struct Ops {
        GradList (*call)(void*, Tensor&, const NeedsGrad&);
        void (*move)(void* from, void* to) noexcept;  // also destroys `from`
        void (*destroy)(void*) noexcept;
    };
    template <typename D>
    static constexpr Ops kInlineOps{
        [](void* b, Tensor& g, const NeedsGrad& n) -> GradList { return (*static_cast<D*>(b))(g, n); },
        [](void* from, void* to) noexcept {
            new (to) D(std::move(*static_cast<D*>(from)));
            static_cast<D*>(from)->~D();
        },
        [](void* b) noexcept { static_cast<D*>(b)->~D(); },
    };
    template <typename D>
    static constexpr Ops kHeapOps{
        [](void* b, Tensor& g, const NeedsGrad& n) -> GradList { return (**static_cast<D**>(b))(g, n); },
        [](void* from, void* to) noexcept { *static_cast<D**>(to) = *static_cast<D**>(from); },
        [](void* b) noexcept {
            D* p = *static_cast<D**>(b);
            p->~D();
            pool_free(p, sizeof(D));
        },
    };

    void take(BackwardFn& other) noexcept {
        if (!other.ops_) return;
        other.ops_->move(other.buf_, buf_);
        ops_ = other.ops_;
        other.ops_ = nullptr;
    }
    void reset() noexcept {
        if (ops_) ops_->destroy(buf_);
        ops_ = nullptr;
    }

    alignas(std::max_align_t) unsigned char buf_[kInline];
    const Ops* ops_ = nullptr;
};

/// One recorded operation: its PyTorch name, where its input gradients go, and how to compute them.
struct Node {
    const char* name = "";
    std::vector<Edge, PoolAllocator<Edge>> next;
    NeedsGrad needs;
    BackwardFn backward;
    bool released = false;  // backward ran without retain_graph; the saved tensors are gone
    // Scratch space of the engine during one backward pass.
    std::uint64_t visit_epoch = 0;
    Tensor pending;  // gradient accumulated for this node's output so far
};

/// A tensor an op keeps for its backward, with the version its storage had then (PyTorch's
/// SavedVariable). Reading it inside a backward function after an in-place update of that storage
/// (directly, through a view or detach(), or under NoGradGuard) throws PyTorch's error instead of
/// computing a wrong gradient.
class Saved {
public:
    Saved() = default;
    /// Saves a detached handle to `t` (undefined stays undefined) and its current version.
    Saved(const Tensor& t);  // NOLINT: implicit, so that `[x = save(t)]` reads as a Tensor capture
    /// The saved tensor; throws when its storage was modified in place since it was saved.
    const Tensor& get() const {
        if (tensor_.defined() && tensor_.impl()->storage->version.load(std::memory_order_relaxed) != version_)
            modified();
        return tensor_;
    }
    /// Reads as the saved tensor (checked) in expressions: `g * x`.
    operator const Tensor&() const { return get(); }  // NOLINT: implicit on purpose
    /// Member access to the saved tensor (checked): `x->shape()`.
    const Tensor* operator->() const { return &get(); }

private:
    [[noreturn]] void modified() const;
    Tensor tensor_;
    std::uint32_t version_ = 0;
};

/// Marks an in-place update of `t`'s storage (every view and saved handle of it sees the new version).
/// A load and a store, not an atomic increment (a locked instruction, which costs a small model's
/// optimizer step a few percent): two threads updating one storage in place at once may count one
/// update, but the version still differs from the one any saved handle saw before either began.
inline void bump_version(const Tensor& t) {
    std::atomic<std::uint32_t>& v = t.impl()->storage->version;
    v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// The name of the node whose backward function runs on this thread (for Saved's error), or null.
const char*& current_backward_node();

// ---- construction -------------------------------------------------------------------------------
Strides contiguous_strides(const Shape& shape);
/// The number of elements of `shape`; throws naming `op` and the shape for a negative size or a
/// product that overflows int64 (every shape a tensor gets passes through here).
std::int64_t checked_numel(const Shape& shape, const char* op);
/// The bytes `shape` of `dtype` needs; throws naming `op` when that overflows int64.
std::size_t checked_nbytes(const Shape& shape, DType dtype, const char* op);
/// Throws OutOfMemoryError: `op` could not get `bytes` from the system.
[[noreturn]] void out_of_memory(const char* op, std::size_t bytes);

/// The CPU block cache now: the bytes it keeps, and how many blocks it keeps that a Storage of `nbytes`
/// would take (tests).
std::pair<std::size_t, std::size_t> cpu_block_cache_held(std::size_t nbytes);
/// A new contiguous tensor with uninitialised storage; `op` names the caller in errors (a shape
/// that overflows, memory that cannot be had).
Tensor make_empty(const Shape& shape, DType dtype, Device device = kCPU, const char* op = "empty");
/// ‖x‖_p over `dims` (all when empty), recorded as `name` (NormBackward1 for Tensor::norm,
/// LinalgVectorNormBackward0 for linalg::vector_norm and F::normalize) with PyTorch's norm_backward;
/// `op` names the caller in errors. Floating-point tensors only (src/reduction.cpp).
Tensor vector_norm(const Tensor& x, double p, const Dims& dims, bool keepdim, const char* op, const char* name);
/// A new view of `base`'s storage with the given geometry (no autograd record). The shape comes
/// from an existing tensor or was checked by the caller (expand, view/reshape): no count here, as
/// detach() and every saved tensor pass through.
Tensor make_view(const Tensor& base, const Shape& shape, const Strides& strides, std::int64_t offset);

/// Makes every handle to `t` see `src`'s contents, shape and dtype (modules converting or
/// materialising parameters in place, so optimizers holding handles follow).
void replace_contents(const Tensor& t, const Tensor& src);

// ---- autograd -----------------------------------------------------------------------------------
/// True when grad mode is on and some input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
/// Marks `out` as the result of `name` applied to `inputs`, with `backward` computing their grads.
void record(Tensor& out, const char* name, std::initializer_list<const Tensor*> inputs, BackwardFn backward);
/// `record` for a list of inputs (cat, stack).
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward);
/// Sums a broadcast gradient back down to `shape`.
Tensor sum_to(const Tensor& grad, const Shape& shape);
/// sum_to for a gradient handle the caller is done with: returned as it is when it has `shape`
/// already, without a copy of the handle (two atomic count updates).
inline Tensor sum_to(Tensor&& grad, const Shape& shape) {
    if (grad.shape() == shape) return std::move(grad);
    return sum_to(static_cast<const Tensor&>(grad), shape);
}

// ---- checks -------------------------------------------------------------------------------------
/// Throws naming `op`: `dim` is out of range for `ndim` dimensions (wrap_dim's error).
[[noreturn]] void dim_out_of_range(std::int64_t dim, std::int64_t ndim, const char* op);
/// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
inline std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
    const std::int64_t n = ndim == 0 ? 1 : ndim;  // a 0-d tensor accepts dim 0 and -1, as PyTorch
    if (dim < -n || dim >= n) [[unlikely]]
        dim_out_of_range(dim, ndim, op);
    return dim < 0 ? dim + n : dim;
}
/// The broadcast of two shapes; throws naming `op` and both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Throws unless `t` is defined; names `op`.
void check_defined(const Tensor& t, const char* op);
/// Whether `a` is another tensor over `b`'s storage (a view that may overlap it), not `b` itself.
bool other_view_of(const Tensor& a, const Tensor& b);
/// Throws naming `op` unless `t` may be modified in place: not a leaf that requires grad, nor the
/// output of a recorded op, while grad mode is on (xgrad refuses both, see tensor.cpp).
void check_inplace(const Tensor& t, const char* op);
/// Throws naming `op` when an in-place update's tensor operand requires grad while grad mode is on:
/// the update is not recorded, so the operand's gradient would be lost without a word (PyTorch records
/// it).
void check_inplace_operand(const Tensor& operand, const char* op);
/// Throws naming `op` (PyTorch's words) when elements of `t` share memory: a dim of more than one
/// element with stride 0, as an expanded tensor has (PyTorch's has_internal_overlap, YES case). The
/// in-place maps, copies, random fills, masked_fill_ and index_put_ check it (PyTorch only warns for the
/// last two); fill_ and zero_ write one value everywhere and do not.
void check_no_internal_overlap(const Tensor& t, const char* op);
/// Throws naming `op` (PyTorch's words) unless a result of `result` dtype may be written into `self`
/// in place: never floating into integral or bool, nor integral into bool (c10::canCast).
void check_result_fits(DType result, const Tensor& self, const char* op);
/// Throws std::invalid_argument with "op: message".
[[noreturn]] void fail(const char* op, const std::string& message);
/// `device` with its index filled in (the current GPU for a bare kCUDA); throws naming `op` when
/// xgrad was built without CUDA, no GPU is present, or the index names no GPU.
Device resolve_device(Device device, const char* op);
/// check_same_device's error: names `op` and both devices, in PyTorch's words.
[[noreturn]] void devices_differ(const Tensor& a, const Tensor& b, const char* op);
/// Throws naming `op` and both devices (PyTorch's words) unless `a` and `b` live on one device.
/// Inline, with the error out of line: most ops check, and a call cost more than the comparison.
inline void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
    if (a.device() != b.device()) [[unlikely]]
        devices_differ(a, b, op);
}

/// check_same_dtype's error, out of line.
[[noreturn]] void dtypes_differ(const Tensor& a, const Tensor& b, const char* op);
/// The operands of an elementwise kernel share a dtype (it reads both as the output's): a mismatch is a
/// bug in the calling op, reported naming `op` instead of computed from misread memory.
inline void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
    if (a.dtype() != b.dtype()) [[unlikely]]
        dtypes_differ(a, b, op);
}

/// PyTorch's C++ name of a dtype in its messages: "Float", "Double", "Long", "Int", "Byte", "Bool".
std::string scalar_type_name(DType dtype);
/// Throws naming `op`, in PyTorch's words, where its kernel `kernel` was not built for t's dtype:
/// `"abs_cpu" not implemented for 'Bool'` (with `device_suffix`, "abs" gets t's device's "_cpu" or "_cuda";
/// without, the name is PyTorch's as it is, "GeluKernelImpl").
[[noreturn]] void not_implemented_for(const Tensor& t, const char* op, const std::string& kernel,
                                      bool device_suffix = true);
/// not_implemented_for where t is a bool tensor (the ops that PyTorch refuses for bool only).
void refuse_bool(const Tensor& t, const char* op, const char* kernel, bool device_suffix = true);
/// A new tensor of src's shape, `dtype` and device, laid out as PyTorch's memory_format=preserve_format
/// lays out a copy of src (empty_like): a dense src's own strides, any other src's dims in the same
/// order (infer_dense_strides, which is TensorIterator's order), row-major where that is the order.
Tensor empty_preserving(const Tensor& src, DType dtype, const char* op);
/// A row-major copy of t, recorded as clone() (which keeps t's layout, as PyTorch's preserve_format):
/// for the code that needs contiguous memory (contiguous(), gradients of leaves, BLAS outputs).
Tensor contiguous_clone(const Tensor& t);
/// Throws PyTorch's "value cannot be converted to type int64_t without overflow" (naming `op`) when
/// the scalar `value` does not fit an integer `dtype` (NaN and inf never do); bool and floating
/// types take any value.
void check_scalar_fits(double value, DType dtype, const char* op);
/// True for bool, uint8 and int32: dtypes that ops compute in int64 and convert back.
inline bool is_narrow(DType dtype) {
    return dtype == kBool || dtype == kInt32 || dtype == kUInt8;
}

/// The dtype two dtypes promote to, as torch.promote_types.
DType promote(DType a, DType b);
/// The dtype of an elementwise op's result on `a` and `b`, as torch.result_type: zero-dim tensors
/// count only when of a higher category (bool < integer < floating) than the dimensioned ones.
DType result_type(const Tensor& a, const Tensor& b);
/// result_type over several operands (undefined ones skipped, at least one defined), as PyTorch's
/// iterator computes it: dimensioned tensors promote among themselves, zero-dim ones among themselves,
/// and these count only when of a higher category.
DType result_type(std::initializer_list<const Tensor*> operands);

}  // namespace xgrad::detail
