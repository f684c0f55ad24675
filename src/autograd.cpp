// The reverse-mode engine: recording nodes, walking them in topological order, and gradcheck.
#include "xgrad/autograd.hpp"

#include <atomic>
#include <cmath>
#include <new>
#include <sstream>

#include "detail/maps.hpp"
#include "detail/pool.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"

namespace xgrad {

namespace {
// The thread-locals read on every op are initial-exec (as detail/pool.hpp's): from the shared library,
// the default model calls __tls_get_addr on each access, 2.6 % of a tiny training step's instructions.
// The large deletion queue below stays general-dynamic, so that the library still fits the static TLS
// space glibc keeps for dlopen.
thread_local bool grad_enabled [[gnu::tls_model("initial-exec")]] = true;
}  // namespace

bool is_grad_enabled() {
    return grad_enabled;
}
void set_grad_enabled(bool enabled) {
    grad_enabled = enabled;
}

NoGradGuard::NoGradGuard() : previous_(grad_enabled) {
    grad_enabled = false;
}
NoGradGuard::~NoGradGuard() {
    grad_enabled = previous_;
}

namespace detail {

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
    if (!grad_enabled) return false;
    for (const Tensor* t : inputs)
        if (t->requires_grad()) return true;
    return false;
}

static Edge edge_to(const Tensor& t) {
    if (!t.requires_grad()) return {};
    if (t.impl()->grad_fn) return {t.impl()->grad_fn, nullptr};
    return {nullptr, t.impl()};
}

/// Deletes a node without recursing down the graph. Deleting a node drops its edges, which may delete
/// the next node, and so on: down a chain of 10^5 ops, nested destructors would overflow the stack.
/// Nodes freed while one is being deleted are queued and deleted by the outermost call instead.
static void delete_node(Node* node) {
    // The queue is per thread: a fixed array first, trivially destructible so that it stays valid
    // while static destructors run after thread-local ones, then a list owned by the outermost call
    // for deeper graphs. Freeing a training step's graph then allocates nothing.
    constexpr int kInline = 64;
    thread_local Node* inline_queue[kInline];
    thread_local int inline_count [[gnu::tls_model("initial-exec")]] = 0;
    thread_local std::vector<Node*>* spill [[gnu::tls_model("initial-exec")]] = nullptr;
    if (spill) {  // inside the outermost call
        if (inline_count < kInline)
            inline_queue[inline_count++] = node;
        else
            spill->push_back(node);
        return;
    }
    std::vector<Node*> overflow;
    spill = &overflow;
    inline_queue[inline_count++] = node;
    for (;;) {
        Node* n = nullptr;
        if (!overflow.empty()) {
            n = overflow.back();
            overflow.pop_back();
        } else if (inline_count > 0) {
            n = inline_queue[--inline_count];
        } else {
            break;
        }
        n->~Node();
        pool_free(n, sizeof(Node));
    }
    spill = nullptr;
}

// A tensor that requires grad already (a leaf, or the output of an earlier op) is kept as it is, as
// PyTorch's SavedVariable keeps an input: its graph lies upstream of the saving node, so holding it
// makes no cycle, and backward functions run under NoGradGuard, so nothing they compute records.
// Any other tensor may be the saving op's own output, about to get this node as its grad_fn: that
// one is kept detached, or the node would own itself.
Saved::Saved(const Tensor& t)
    : tensor_(!t.defined() || t.requires_grad() ? t : t.detach()),
      version_(t.defined() ? t.impl()->storage->version.load(std::memory_order_relaxed) : 0) {}

const char*& current_backward_node() {
    thread_local const char* name [[gnu::tls_model("initial-exec")]] = nullptr;
    return name;
}

void Saved::modified() const {
    std::string shape;
    for (std::int64_t i = 0; i < tensor_.dim(); ++i) shape += (i ? ", " : "") + std::to_string(tensor_.size(i));
    std::string dtype = to_string(tensor_.dtype()).substr(6);  // "torch.float32" -> "float32"
    const char* node = current_backward_node();
    fail("backward",
         "one of the variables needed for gradient computation has been modified by an inplace "
         "operation: [" +
             dtype + " [" + shape + "]]" + (node ? std::string(", saved by ") + node : "") + ", is at version " +
             std::to_string(tensor_.impl()->storage->version.load(std::memory_order_relaxed)) + "; expected version " +
             std::to_string(version_) + " instead");
}

static void attach(Tensor& out, const char* name, decltype(Node::next)&& next, BackwardFn&& backward) {
    std::shared_ptr<Node> node(new (pool_alloc(sizeof(Node))) Node, delete_node, PoolAllocator<Node>());
    node->name = name;
    for (const Edge& e : next) node->needs.push_back(e.defined());
    node->next = std::move(next);
    node->backward = std::move(backward);
    out.impl()->grad_fn = std::move(node);
    out.impl()->requires_grad = true;
}

void record(Tensor& out, const char* name, std::initializer_list<const Tensor*> inputs, BackwardFn backward) {
    decltype(Node::next) next;
    next.reserve(inputs.size());
    for (const Tensor* t : inputs) next.push_back(edge_to(*t));
    attach(out, name, std::move(next), std::move(backward));
}

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward) {
    decltype(Node::next) next;
    next.reserve(inputs.size());
    for (const Tensor& t : inputs) next.push_back(edge_to(t));
    attach(out, name, std::move(next), std::move(backward));
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
    const Shape& from = grad.shape();
    if (from == shape) return grad;
    const std::int64_t lead = from.size() - shape.size();
    bool inner = false;  // some size-1 dim of `shape` is summed (kept as 1), not only the leading dims
    for (std::int64_t i = lead; i < from.size(); ++i) inner = inner || (shape[i - lead] == 1 && from[i] != 1);
    if (lead == 0 && !inner) return grad.reshape(shape);
    if (!inner && grad.is_floating_point() && grad.is_contiguous() && !needs_grad({&grad})) {
        // Only leading dims summed (a bias gradient), as the backward pass asks: the rows sum()'s plan
        // would make (the same kernel, so the same bits) without its checks, dims list and views.
        std::int64_t width = 1;
        for (std::int64_t i = 0; i < lead; ++i) width *= from[i];
        Tensor r = make_empty(shape, grad.dtype(), grad.device(), "sum");
        kernels::sum_rows({grad, shape.numel(), width, /*outer=*/!shape.empty()}, r, /*mean=*/false);
        return r;
    }
    std::vector<std::int64_t> dims;
    for (std::int64_t i = 0; i < from.size(); ++i)
        if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) dims.push_back(i);
    // Only leading dims summed: the sum without keepdim has `shape` already.
    Tensor r = grad.sum(Dims(std::move(dims)), /*keepdim=*/inner);
    return r.shape() == shape ? r : r.reshape(shape);
}

std::atomic<std::int64_t> hooked_leaves{0};

namespace {
thread_local int backward_depth [[gnu::tls_model("initial-exec")]] = 0;
thread_local std::vector<std::function<void(bool)>> backward_callbacks;
}  // namespace

void queue_backward_callback(std::function<void(bool completed)> fn) {
    backward_callbacks.push_back(std::move(fn));
}

/// Whether `g` has the layout PyTorch's AccumulateGrad wants for `leaf`'s grad (obeys_layout_contract):
/// a dense leaf's strides along its dims of size > 1 (no stride 0 along the others), else row-major.
static bool obeys_layout(const Tensor& g, const TensorImpl& leaf, bool dense_leaf) {
    if (!dense_leaf) return g.is_contiguous();
    for (std::size_t d = 0; d < leaf.strides.size(); ++d) {
        const std::int64_t s = g.strides()[d];
        if (leaf.shape[static_cast<std::int64_t>(d)] != 1 ? s != leaf.strides[d] : s == 0) return false;
    }
    return true;
}

/// Whether `t` has the strides make_empty gives its shape (row-major, no stride 0; none of its sizes 0).
static bool fresh_strides(const TensorImpl& t) {
    std::int64_t expected = 1;
    for (auto d = static_cast<std::int64_t>(t.shape.size()) - 1; d >= 0; --d) {
        if (expected == 0 || t.strides[static_cast<std::size_t>(d)] != expected) return false;
        expected *= t.shape[d];
    }
    return expected != 0;
}

/// Adds `g` into a leaf's grad, as PyTorch's AccumulateGrad: the first gradient becomes the leaf's
/// grad without a copy when nothing else can see it (no other handle or view of its storage) and it
/// has the layout the leaf's grad takes, and is copied into that layout otherwise (it may alias
/// another tensor): a dense leaf's strides (a channels-last or transposed leaf gets a gradient laid
/// out as itself, clone_obey_contract), else row-major. Later ones accumulate in place.
static void accumulate(TensorImpl& leaf, Tensor g) {
    if (g.dtype() != leaf.dtype) g = g.to(leaf.dtype);
    if (leaf.grad.defined()) {
        leaf.grad.add_(g);
        return;
    }
    const bool exclusive = g.impl().use_count() == 1 && g.impl()->storage.use_count() == 1 && !g.requires_grad();
    // The common case first: a leaf with a new tensor's strides, and a gradient with the same ones,
    // which obeys the layout (dense_layout and obeys_layout would say so, after a sort of the dims).
    if (exclusive && g.shape() == leaf.shape && g.strides() == leaf.strides && fresh_strides(leaf)) {
        leaf.grad = std::move(g);
        return;
    }
    const bool dense_leaf = detail::dense_layout(leaf.shape, leaf.strides);
    if (exclusive && g.shape() == leaf.shape && obeys_layout(g, leaf, dense_leaf)) {
        leaf.grad = std::move(g);
        return;
    }
    const Tensor src = g.shape() == leaf.shape ? g : g.expand(leaf.shape);
    bool row_major = true;  // the leaf's strides row-major along its dims of size > 1
    std::int64_t expected = 1;
    for (auto d = static_cast<std::int64_t>(leaf.shape.size()) - 1; d >= 0; --d) {
        if (leaf.shape[d] == 1) continue;
        row_major = row_major && leaf.strides[static_cast<std::size_t>(d)] == expected;
        expected *= leaf.shape[d];
    }
    if (!dense_leaf || row_major) {
        leaf.grad = detail::contiguous_clone(src);
        return;
    }
    Tensor out = detail::OrderedOutput(leaf.shape, leaf.strides, leaf.dtype, leaf.device, "grad").result;
    out.copy_(src);  // recorded where g requires grad (create_graph), as PyTorch's copy into the new grad
    leaf.grad = std::move(out);
}

/// accumulate(), then the leaf's hook once its last gradient of this walk is in.
static void accumulate_and_hook(TensorImpl& leaf, Tensor g) {
    accumulate(leaf, std::move(g));
    if (leaf.post_accumulate_hook && --leaf.post_accumulate_hook->remaining <= 0) {
        leaf.post_accumulate_hook->remaining = 0;
        leaf.post_accumulate_hook->fn();
    }
}

}  // namespace detail

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
    using namespace detail;
    check_defined(*this, "backward");
    if (!requires_grad())
        fail("backward", "the tensor does not require grad and has no grad_fn (did an input call requires_grad_()?)");
    Tensor seed = gradient;
    if (!seed.defined()) {
        if (numel() != 1)
            fail("backward", "grad can be implicitly created only for one-element outputs, but the output has shape " +
                                 to_string(shape()) + "; pass a gradient");
        seed = ones_like(*this);
    } else if (seed.shape() != shape()) {
        fail("backward",
             "the gradient has shape " + to_string(seed.shape()) + " but the output has shape " + to_string(shape()));
    } else if (seed.device() != device()) {
        fail("backward", "the gradient is on " + to_string(seed.device()) + " but the output is on " +
                             to_string(device()) + "; move the gradient with .to()");
    } else if (seed.dtype() != dtype()) {
        seed = seed.to(dtype());  // as PyTorch's engine casts a gradient to the dtype of what it is for
    }

    NoGradGuard no_grad;  // backward computes plain tensors (no higher-order graphs)
    // The outermost backward on this thread runs the queued callbacks when it ends (DDP waits for
    // its all-reduces there), with false when the walk threw.
    struct Callbacks {
        Callbacks() { ++backward_depth; }
        ~Callbacks() {
            if (--backward_depth == 0) run(false);  // still queued: an exception is unwinding
        }
        static void run(bool completed) {
            auto fns = std::move(backward_callbacks);
            backward_callbacks.clear();
            for (auto& fn : fns) fn(completed);
        }
    } callbacks;
    if (!impl_->grad_fn) {
        accumulate_and_hook(*impl_, seed);
        if (backward_depth == 1) Callbacks::run(true);
        return;
    }

    // Topological order by an iterative depth-first search (deep graphs must not overflow the stack).
    // Nodes are marked visited with this pass's epoch, and hold their pending gradient themselves:
    // no hash maps, which are most of the engine's cost on small graphs.
    static std::atomic<std::uint64_t> epochs{0};
    const std::uint64_t epoch = ++epochs;
    // The walk's two lists borrow this thread's spare ones (their capacity stays from one backward to
    // the next, so a training step allocates nothing here); a nested backward finds none and allocates.
    thread_local std::vector<Node*> spare_order;
    thread_local std::vector<std::pair<Node*, std::size_t>> spare_stack;
    struct Borrowed {
        std::vector<Node*> order = std::move(spare_order);
        std::vector<std::pair<Node*, std::size_t>> stack = std::move(spare_stack);
        ~Borrowed() {
            order.clear();
            stack.clear();
            spare_order = std::move(order);
            spare_stack = std::move(stack);
        }
    } lists;
    std::vector<Node*>& order = lists.order;
    auto& stack = lists.stack;
    order.clear();
    stack.assign(1, {impl_->grad_fn.get(), 0});
    impl_->grad_fn->visit_epoch = epoch;
    while (!stack.empty()) {
        auto& [node, i] = stack.back();
        if (i < node->next.size()) {
            Node* child = node->next[i++].fn.get();
            if (child && child->visit_epoch != epoch) {
                child->visit_epoch = epoch;
                stack.emplace_back(child, 0);
            }
        } else {
            order.push_back(node);
            stack.pop_back();
        }
    }

    // Pending gradients must not outlive this pass, even when a backward function throws.
    struct ClearPending {
        std::vector<Node*>& nodes;
        ~ClearPending() {
            for (Node* n : nodes) n->pending = Tensor();
        }
    } clear_pending{order};

    // Hooked leaves learn how many gradients this walk will bring them (zeroed again when it ends).
    std::vector<PostAccumulateHook*> hooks;
    if (hooked_leaves.load(std::memory_order_relaxed) > 0)
        for (Node* node : order)
            for (const Edge& e : node->next)
                if (e.leaf && e.leaf->post_accumulate_hook) {
                    if (e.leaf->post_accumulate_hook->remaining++ == 0)
                        hooks.push_back(e.leaf->post_accumulate_hook.get());
                }
    struct ClearHooks {
        std::vector<PostAccumulateHook*>& hooks;
        ~ClearHooks() {
            for (PostAccumulateHook* h : hooks) h->remaining = 0;
        }
    } clear_hooks{hooks};

    impl_->grad_fn->pending = std::move(seed);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Node* node = *it;
        if (node->released)
            fail("backward", std::string("trying to backward through the graph a second time (") + node->name +
                                 " was freed); pass retain_graph=true to the first backward if you need to");
        if (!node->pending.defined()) continue;
        Tensor g = std::move(node->pending);
        node->pending = Tensor();
        struct NodeScope {  // names the node in Saved's error; restored for a nested backward
            const char* saved = current_backward_node();
            explicit NodeScope(const char* name) { current_backward_node() = name; }
            ~NodeScope() { current_backward_node() = saved; }
        };
        GradList grads = [&] {
            NodeScope scope(node->name);
            return node->backward(g, node->needs);
        }();
        g = Tensor();  // a gradient passed through unchanged is then owned by `grads` alone
        for (std::size_t k = 0; k < node->next.size() && k < grads.size(); ++k) {
            const Edge& e = node->next[k];
            if (!e.defined() || !grads[k].defined()) continue;
            if (e.fn) {
                Tensor& slot = e.fn->pending;
                slot = slot.defined() ? slot + grads[k] : std::move(grads[k]);
            } else {
                accumulate_and_hook(*e.leaf, std::move(grads[k]));
            }
        }
        if (!retain_graph) {
            node->backward = nullptr;  // frees the saved tensors
            node->released = true;
        }
    }
    if (backward_depth == 1) Callbacks::run(true);
}

namespace autograd {

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
    // Float64 leaves, so that finite differences are meaningful.
    std::vector<Tensor> xs;
    std::vector<bool> check;
    for (const Tensor& t : inputs) {
        bool differentiable = t.defined() && t.is_floating_point() && t.requires_grad();
        // Floating inputs become independent float64 copies; integer ones (indices) stay integers.
        Tensor x = !t.defined() ? t : t.is_floating_point() ? t.detach().to(kFloat64).clone().detach() : t.detach();
        if (differentiable) x.requires_grad_(true);
        xs.push_back(x);
        check.push_back(differentiable);
    }
    Tensor y0 = fn(xs);
    if (!y0.defined() || y0.dtype() != kFloat64)
        detail::fail("gradcheck", "the function must return a float64 tensor for float64 inputs");
    const std::int64_t n_out = y0.numel();

    // Analytic Jacobian, one output element at a time: row o holds d y[o] / d x[i][*].
    std::vector<std::vector<std::vector<double>>> analytic(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (check[i])
            analytic[i].assign(static_cast<std::size_t>(n_out),
                               std::vector<double>(static_cast<std::size_t>(xs[i].numel()), 0.0));
    for (std::int64_t o = 0; o < n_out; ++o) {
        for (auto& x : xs)
            if (x.defined()) x.mutable_grad() = Tensor();
        Tensor y = fn(xs);
        if (!y.requires_grad()) break;  // nothing depends on the inputs: analytic Jacobian is zero
        Tensor seed = zeros(y.shape(), kFloat64);
        seed.data_ptr<double>()[o] = 1.0;
        y.backward(seed.to(y.device()));
        for (std::size_t i = 0; i < xs.size(); ++i) {
            if (!check[i] || !xs[i].grad().defined()) continue;
            analytic[i][static_cast<std::size_t>(o)] = xs[i].grad().to_vector<double>();
        }
    }

    // Numeric Jacobian by central differences, one input element at a time.
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (!check[i]) continue;
        // A device input is perturbed in a host copy, copied back before each evaluation.
        const bool on_host = xs[i].device().is_cpu();
        Tensor host = on_host ? xs[i] : xs[i].to(kCPU);
        double* p = host.data_ptr<double>();
        auto set = [&](std::int64_t e, double v) {
            p[e] = v;
            if (!on_host) xs[i].copy_(host);
        };
        for (std::int64_t e = 0; e < xs[i].numel(); ++e) {
            const double orig = p[e];
            set(e, orig + eps);
            std::vector<double> plus = fn(xs).to_vector<double>();
            set(e, orig - eps);
            std::vector<double> minus = fn(xs).to_vector<double>();
            set(e, orig);
            for (std::int64_t o = 0; o < n_out; ++o) {
                auto ou = static_cast<std::size_t>(o);
                double numeric = (plus[ou] - minus[ou]) / (2 * eps);
                double a = analytic[i][ou][static_cast<std::size_t>(e)];
                if (!(std::abs(a - numeric) <= atol + rtol * std::abs(numeric))) {
                    std::ostringstream msg;
                    msg.precision(10);
                    msg << "gradcheck: Jacobian mismatch for input " << i << ", element " << e << ", output " << o
                        << ": analytic " << a << " vs numeric " << numeric;
                    return {false, static_cast<std::int64_t>(i), e, o, a, numeric, msg.str()};
                }
            }
        }
    }
    return {};
}

}  // namespace autograd
}  // namespace xgrad
