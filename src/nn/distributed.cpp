// DistributedDataParallel: gradients bucketed and all-reduced from the engine's post-accumulate
// hooks while backward runs, and waited for in a callback at the end of backward.
#include "xgrad/nn/distributed.hpp"

#include <algorithm>

#include "detail/comm.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"

namespace xgrad::nn {

namespace xd = xgrad::detail;
namespace dist = xgrad::distributed;

namespace detail {

/// Gradients of one dtype on one device, all-reduced together through one flat buffer: on the GPU where
/// NCCL serves the parameters' CUDA device, else on the host for MPI.
struct Bucket {
    std::vector<std::size_t> params;  // indices into Reducer::params, in the order backward fills them
    std::vector<std::int64_t> offsets;
    std::int64_t numel = 0;
    Device device = kCPU;  // the parameters' device when the buffer was placed
    int nccl_device = -1;  // the CUDA device NCCL reduces the buffer on; -1: MPI, on the host
    Tensor buffer;         // (numel)
    std::size_t ready = 0;
    bool launched = false;
    xd::comm::Request request;
};

/// The state the hooks share with the module: buckets, which gradients are in, what is under way.
struct Reducer {
    std::vector<std::string> names;
    std::vector<Tensor> params;
    std::vector<std::pair<std::size_t, std::size_t>> slot;  // param -> (bucket, position)
    std::vector<std::shared_ptr<xd::PostAccumulateHook>> hooks;
    std::vector<char> marked;  // param's gradient is final for this pass
    std::vector<Bucket> buckets;
    std::size_t next = 0;      // the next bucket to launch: every rank launches them in index order
    bool active = false;       // this backward pass has started reducing
    bool require_sync = true;  // set by forward: false under no_sync()
    int no_sync = 0;
    bool broken = false;  // a backward pass threw half way; the ranks are out of step

    void hook(std::size_t i, const std::shared_ptr<Reducer>& self) {
        if (!require_sync) return;
        if (broken)
            xd::fail(
                "DistributedDataParallel",
                "a previous backward pass threw on this rank while gradients were being all-reduced; the ranks are "
                "out of step and this model cannot be synchronised any more");
        if (!active) {
            active = true;
            std::weak_ptr<Reducer> weak = self;
            xd::queue_backward_callback([weak](bool completed) {
                if (auto r = weak.lock()) r->finish(completed);
            });
        }
        mark(i);
    }

    void mark(std::size_t i) {
        if (marked[i]) {
            if (buckets[slot[i].first].launched)
                xd::fail("DistributedDataParallel", "parameter " + names[i] +
                                                        " received a gradient after its bucket was all-reduced in "
                                                        "this backward pass");
            return;
        }
        marked[i] = 1;
        ++buckets[slot[i].first].ready;
        while (next < buckets.size() && buckets[next].ready == buckets[next].params.size()) launch(buckets[next++]);
    }

    /// Puts the bucket's buffer where its parameters are now, in their dtype (at construction, and again
    /// should the model move or change dtype): on their GPU when NCCL serves it, else on the host.
    /// Collective, like the launches.
    void place(Bucket& b) {
        const Tensor& first = params[b.params.front()];
        if (b.buffer.defined() && b.device == first.device() && b.buffer.dtype() == first.dtype()) return;
        b.device = first.device();
        const bool nccl =
            b.device.is_cuda() && xd::comm::nccl::usable(b.device.index(), dist::rank(), dist::world_size());
        b.nccl_device = nccl ? b.device.index() : -1;
        b.buffer = empty({b.numel}, TensorOptions{.dtype = first.dtype(), .device = nccl ? b.device : kCPU});
    }

    void launch(Bucket& b) {
        NoGradGuard no_grad;
        place(b);
        for (std::size_t k = 0; k < b.params.size(); ++k) {
            const Tensor& p = params[b.params[k]];
            Tensor flat = b.buffer.narrow(0, b.offsets[k], p.numel());
            const Tensor g = p.grad();
            if (g.defined())
                flat.copy_(g.reshape({-1}).to(flat.device()));  // without NCCL, CUDA grads go through the host
            else
                flat.zero_();  // no gradient on this rank: it contributes zeros
        }
        auto* data = static_cast<char*>(b.buffer.impl()->storage->data);
        if (b.nccl_device >= 0)  // queued on the GPU: the division in finish() is queued after it
            xd::comm::nccl::allreduce(data, b.numel, b.buffer.dtype(), xd::comm::Op::kSum, b.nccl_device);
        else
            b.request = xd::comm::iallreduce(data, b.numel, b.buffer.dtype(), xd::comm::Op::kSum);
        b.launched = true;
    }

    void finish(bool completed) {
        active = false;
        if (!completed) {
            broken = next > 0;  // the other ranks may be waiting for buckets this rank never launches
            reset();
            return;
        }
        // Buckets whose gradients did not all arrive (parameters unused by this loss) go now, in order.
        for (std::size_t i = 0; i < params.size(); ++i)
            if (!marked[i]) mark(i);
        NoGradGuard no_grad;
        const double world = dist::world_size();
        for (Bucket& b : buckets) {
            xd::comm::wait(b.request);
            b.buffer.div_(world);
            for (std::size_t k = 0; k < b.params.size(); ++k) {
                Tensor& p = params[b.params[k]];
                if (!p.grad().defined()) p.impl()->grad = zeros_like(p);
                Tensor g = p.grad();
                g.copy_(b.buffer.narrow(0, b.offsets[k], p.numel()).view(p.shape()).to(g.device()));
            }
        }
        reset();
    }

    void reset() {
        std::fill(marked.begin(), marked.end(), 0);
        for (Bucket& b : buckets) {
            b.ready = 0;
            b.launched = false;
            b.request.reset();
        }
        next = 0;
    }
};

}  // namespace detail

DistributedDataParallel::DistributedDataParallel(Module& module, DistributedDataParallelOptions options)
    : module_(module), options_(options), reducer_(std::make_shared<detail::Reducer>()) {
    for (auto& [name, m] : module.named_modules())
        if (m->has_uninitialized_parameters())
            xd::fail("DistributedDataParallel",
                     "Modules with uninitialized parameters can't be used with `DistributedDataParallel`. Run a dummy "
                     "forward pass to correctly initialize the modules");
    if (!(options.bucket_cap_mb > 0))
        xd::fail("DistributedDataParallel",
                 "bucket_cap_mb must be positive, got " + std::to_string(options.bucket_cap_mb));
    // Not owned: the user's model outlives the wrapper, and its parameters are named module.<name>.
    register_module("module", std::shared_ptr<Module>(std::shared_ptr<Module>(), &module));

    // Every rank starts from rank 0's state.
    for (auto& [name, t] : module.state_dict()) dist::broadcast(t, 0);

    detail::Reducer& r = *reducer_;
    for (auto& [name, p] : module.named_parameters())
        if (p.requires_grad()) {
            r.names.push_back(name);
            r.params.push_back(p);
        }
    r.marked.assign(r.params.size(), 0);
    r.slot.resize(r.params.size());
    if (dist::world_size() == 1) return;  // a world of one: the grads are already the mean

    // Buckets in reverse parameter order (the order backward produces gradients in), one open bucket
    // per dtype and device, closed once it holds the cap; the first closes at 1 MiB so that reducing
    // starts early (PyTorch's compute_bucket_assignment_by_size).
    const auto cap = static_cast<std::int64_t>(options.bucket_cap_mb * 1024 * 1024);
    std::vector<std::pair<std::pair<DType, Device>, std::size_t>> open;  // (dtype, device) -> bucket index
    std::vector<std::int64_t> bytes;
    for (std::size_t i = r.params.size(); i-- > 0;) {
        const Tensor& p = r.params[i];
        if (p.impl()->post_accumulate_hook)
            xd::fail("DistributedDataParallel", "parameter " + r.names[i] + " is already in a DistributedDataParallel");
        const std::pair<DType, Device> key{p.dtype(), p.device()};
        auto it = std::find_if(open.begin(), open.end(), [&](const auto& o) { return o.first == key; });
        if (it == open.end()) {
            r.buckets.emplace_back();
            bytes.push_back(0);
            open.emplace_back(key, r.buckets.size() - 1);
            it = open.end() - 1;
        }
        detail::Bucket& b = r.buckets[it->second];
        r.slot[i] = {it->second, b.params.size()};
        b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + r.params[b.params.back()].numel());
        b.params.push_back(i);
        bytes[it->second] += p.numel() * static_cast<std::int64_t>(element_size(p.dtype()));
        const std::int64_t limit = it->second == 0 ? std::min<std::int64_t>(cap, 1024 * 1024) : cap;
        if (bytes[it->second] >= limit) open.erase(it);
    }
    for (detail::Bucket& b : r.buckets) {
        b.numel = b.offsets.back() + r.params[b.params.back()].numel();
        r.place(b);
    }

    std::weak_ptr<detail::Reducer> weak = reducer_;
    for (std::size_t i = 0; i < r.params.size(); ++i) {
        auto hook = std::make_shared<xd::PostAccumulateHook>();
        hook->fn = [weak, i] {
            if (auto reducer = weak.lock()) reducer->hook(i, reducer);
        };
        r.params[i].impl()->post_accumulate_hook = hook;
        r.hooks.push_back(hook);
        ++xd::hooked_leaves;
    }
}

DistributedDataParallel::~DistributedDataParallel() {
    for (std::size_t i = 0; i < reducer_->hooks.size(); ++i) {
        auto& slot = reducer_->params[i].impl()->post_accumulate_hook;
        if (slot == reducer_->hooks[i]) slot.reset();
        --xd::hooked_leaves;
    }
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
    reducer_->require_sync = reducer_->no_sync == 0;
    if (options_.broadcast_buffers && dist::world_size() > 1)
        for (auto& [name, b] : module_.named_buffers()) dist::broadcast(b, 0);
    return module_.forward(input);
}

DistributedDataParallel::NoSync DistributedDataParallel::no_sync() {
    return NoSync(reducer_);
}

DistributedDataParallel::NoSync::NoSync(std::shared_ptr<detail::Reducer> reducer) : reducer_(std::move(reducer)) {
    ++reducer_->no_sync;
}

DistributedDataParallel::NoSync::~NoSync() {
    --reducer_->no_sync;
}

std::int64_t DistributedDataParallel::num_buckets() const {
    return static_cast<std::int64_t>(reducer_->buckets.size());
}

}  // namespace xgrad::nn
