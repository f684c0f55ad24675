// Internal representation of tensors and graph nodes, and the helpers every operation shares.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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
    // Small tensors keep their data here, in the same allocation as the Storage itself: a graph of
    // tiny tensors (a training step of a small model) then costs one allocation less per tensor.
    static constexpr std::size_t kInlineBytes = 128;
    alignas(16) unsigned char inline_data[kInlineBytes];

    Storage(std::size_t nbytes, Device device);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
};

struct Node;

/// What a Tensor handle points to: a strided view of a storage plus its autograd state.
struct TensorImpl {
    std::shared_ptr<Storage> storage;
    Shape shape;
    std::vector<std::int64_t> strides;
    std::int64_t offset = 0;
    DType dtype = kFloat32;
    bool requires_grad = false;
    std::shared_ptr<Node> grad_fn;  // null for leaves
    Tensor grad;                    // accumulated gradient of a leaf

    template <typename T>
    T* data() const {
        return static_cast<T*>(storage->data) + offset;
    }
    bool is_contiguous() const;
};

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

/// Maps the gradient of a node's output to the gradients of its inputs (undefined where not needed).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad, const NeedsGrad& needs)>;

/// One recorded operation: its PyTorch name, where its input gradients go, and how to compute them.
struct Node {
    const char* name = "";
    std::vector<Edge> next;
    NeedsGrad needs;
    BackwardFn backward;
    bool released = false;  // backward ran without retain_graph; the saved tensors are gone
    // Scratch space of the engine during one backward pass.
    std::uint64_t visit_epoch = 0;
    Tensor pending;  // gradient accumulated for this node's output so far
};

// ---- construction -------------------------------------------------------------------------------
std::vector<std::int64_t> contiguous_strides(const Shape& shape);
/// A new contiguous tensor with uninitialised storage.
Tensor make_empty(const Shape& shape, DType dtype, Device device = kCPU);
/// A new view of `base`'s storage with the given geometry (no autograd record).
Tensor make_view(const Tensor& base, Shape shape, std::vector<std::int64_t> strides, std::int64_t offset);

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

// ---- checks -------------------------------------------------------------------------------------
/// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim, const char* op);
/// The broadcast of two shapes; throws naming `op` and both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Throws unless `t` is defined; names `op`.
void check_defined(const Tensor& t, const char* op);
/// Throws std::invalid_argument with "op: message".
[[noreturn]] void fail(const char* op, const std::string& message);
/// `device` with its index filled in (the current GPU for a bare kCUDA); throws naming `op` when
/// xgrad was built without CUDA, no GPU is present, or the index names no GPU.
Device resolve_device(Device device, const char* op);
/// Throws naming `op` and both devices (PyTorch's words) unless `a` and `b` live on one device.
void check_same_device(const Tensor& a, const Tensor& b, const char* op);

/// The dtype two operands promote to (float64 > float32 > int64), as PyTorch's type promotion.
DType promote(DType a, DType b);

}  // namespace xgrad::detail
