// xgrad::distributed: the job's state, argument checks and host staging around the transport
// (detail/comm.hpp), and DistributedSampler.
#include "xgrad/distributed.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "detail/comm.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/parallel.hpp"
#include "xgrad/random.hpp"

namespace xgrad::distributed {

namespace comm = detail::comm;
using detail::fail;

namespace {

struct World {
    bool initialized = false;
    bool mpi = false;  // the transport is MPI (a launched job), not the world of one
    int rank = 0;
    int size = 1;
};
World world;

std::string who() {
    return "xgrad::distributed: rank " + std::to_string(world.rank) + " of " + std::to_string(world.size);
}

// An uncaught exception on one rank would leave the others blocked in their next collective: end the
// whole job instead, saying which rank failed and why.
[[noreturn]] void abort_on_uncaught() {
    std::string what = "unknown exception";
    if (auto e = std::current_exception()) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            what = ex.what();
        } catch (...) {
        }
    } else {
        what = "std::terminate called without an exception";
    }
    comm::abort(who() + ": uncaught exception: " + what + "; aborting the job (MPI_Abort)");
}

comm::Op transport_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::kMax:
            return comm::Op::kMax;
        case ReduceOp::kMin:
            return comm::Op::kMin;
        default:
            return comm::Op::kSum;
    }
}

std::string describe(const Tensor& t) {
    return "shape " + to_string(t.shape()) + " and dtype " + to_string(t.dtype()).substr(6);
}

// Where a collective's buffers are: on the tensors' CUDA device when NCCL serves it there (`device`),
// else in host memory, for the MPI transport (or the world of one).
struct Route {
    int device = -1;
    bool nccl() const { return device >= 0; }
};

// NCCL when every tensor is on one CUDA device, the job has several ranks and NCCL serves that device.
// Collective (comm::nccl::usable decides on every rank at once), so it comes after the argument checks.
Route route(std::initializer_list<const Tensor*> tensors) {
    const Device d = (*tensors.begin())->device();
    if (!world.mpi || world.size == 1 || !d.is_cuda()) return {};
    for (const Tensor* t : tensors)
        if (t->device() != d) return {};
    return comm::nccl::usable(d.index(), world.rank, world.size) ? Route{d.index()} : Route{};
}

// A contiguous tensor with `t`'s values where the route has its buffers: `t` itself when it is one (the
// collective then works in place), else a copy that put_back() writes into `t`.
Tensor staged(const Tensor& t, Route route) {
    return t.is_cuda() && !route.nccl() ? t.cpu() : t.contiguous();
}

void put_back(Tensor& t, const Tensor& buffer) {
    if (buffer.impl() == t.impl()) {
        detail::bump_version(t);
        return;
    }
    NoGradGuard no_grad;
    t.copy_(buffer.to(t.device()));
}

void* data(const Tensor& buffer) {
    return static_cast<char*>(buffer.impl()->storage->data) +
           buffer.impl()->offset * static_cast<std::int64_t>(element_size(buffer.dtype()));
}

// all_gather and reduce_scatter in a world of one (no job, or no MPI) copy their one block.
void gather_blocks(const Tensor& in, const Tensor& out, Route route) {
    if (route.nccl())
        comm::nccl::allgather(data(in), data(out), in.numel(), in.dtype(), route.device);
    else if (world.mpi)
        comm::allgather(data(in), data(out), in.numel(), in.dtype());
    else if (in.numel() > 0)
        std::memcpy(data(out), data(in), static_cast<std::size_t>(in.numel()) * element_size(in.dtype()));
}

void scatter_blocks(const Tensor& in, const Tensor& out, ReduceOp op, Route route) {
    if (route.nccl())
        comm::nccl::reduce_scatter(data(in), data(out), out.numel(), out.dtype(), transport_op(op), route.device);
    else if (world.mpi)
        comm::reduce_scatter(data(in), data(out), out.numel(), out.dtype(), transport_op(op));
    else if (out.numel() > 0)
        std::memcpy(data(out), data(in), static_cast<std::size_t>(out.numel()) * element_size(out.dtype()));
}

void check_avg(const Tensor& t, ReduceOp op, const char* name) {
    if (t.dtype() == kBool)
        fail(name,
             "cannot reduce bool tensors (shape " + to_string(t.shape()) + "); convert them with .to(xgrad::kUInt8)");
    if (op == ReduceOp::kAvg && !t.is_floating_point())
        fail(name, "ReduceOp::kAvg needs a floating-point tensor, got " + to_string(t.dtype()));
}

void finish_avg(Tensor& host, ReduceOp op) {
    if (op != ReduceOp::kAvg || world.size == 1) return;
    NoGradGuard no_grad;
    host.div_(static_cast<double>(world.size));
}

}  // namespace

bool is_available() {
    return comm::built_with_mpi();
}

void init() {
    if (world.initialized) return;
    if (comm::built_with_mpi() && comm::launched()) {
        comm::init(world.rank, world.size);
        world.mpi = true;
        std::set_terminate(abort_on_uncaught);
        // Ranks share the machine's cores: one kernel thread each unless OMP_NUM_THREADS says otherwise
        // (torchrun's default). Measured here: 2 ranks with 2 threads each ran 6 times slower.
        if (world.size > 1 && !std::getenv("OMP_NUM_THREADS")) set_num_threads(1);
        static bool registered = false;
        // At exit CUDA may be torn down before this runs: NCCL's communicators are left to the OS.
        if (!registered)
            std::atexit([] {
                comm::nccl::finalize(/*at_exit=*/true);
                finalize();
            });
        registered = true;
    } else {
        world.rank = 0;
        world.size = 1;
    }
    world.initialized = true;
}

bool is_initialized() {
    return world.initialized;
}
int rank() {
    return world.rank;
}
int world_size() {
    return world.size;
}

void barrier() {
    if (world.mpi) comm::barrier();
}

void finalize() {
    if (world.mpi && !comm::finalized()) {
        comm::nccl::finalize(/*at_exit=*/false);
        comm::finalize();
    }
    world.initialized = false;
}

void abort(const std::string& message) {
    if (world.mpi) comm::abort(who() + ": " + message + "; aborting the job (MPI_Abort)");
    std::fprintf(stderr, "%s: %s\n", who().c_str(), message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
}

void all_reduce(Tensor& tensor, ReduceOp op) {
    detail::check_defined(tensor, "all_reduce");
    check_avg(tensor, op, "all_reduce");
    if (world.size == 1) return;
    const Route r = route({&tensor});
    Tensor buffer = staged(tensor, r);
    if (r.nccl())
        comm::nccl::allreduce(data(buffer), buffer.numel(), buffer.dtype(), transport_op(op), r.device);
    else
        comm::allreduce(data(buffer), buffer.numel(), buffer.dtype(), transport_op(op));
    finish_avg(buffer, op);
    put_back(tensor, buffer);
}

void broadcast(Tensor& tensor, int root) {
    detail::check_defined(tensor, "broadcast");
    if (root < 0 || root >= world.size)
        fail("broadcast",
             "root " + std::to_string(root) + " is not a rank of a world of " + std::to_string(world.size));
    if (world.size == 1) return;
    const Route r = route({&tensor});
    Tensor buffer = staged(tensor, r);
    if (r.nccl())
        comm::nccl::broadcast(data(buffer), buffer.numel(), buffer.dtype(), root, r.device);
    else
        comm::broadcast(data(buffer), buffer.numel(), buffer.dtype(), root);
    put_back(tensor, buffer);
}

void all_gather(std::vector<Tensor>& outputs, const Tensor& input) {
    detail::check_defined(input, "all_gather");
    if (static_cast<int>(outputs.size()) != world.size)
        fail("all_gather", "expected " + std::to_string(world.size) + " output tensors (one per rank), got " +
                               std::to_string(outputs.size()));
    for (std::size_t r = 0; r < outputs.size(); ++r) {
        detail::check_defined(outputs[r], "all_gather");
        if (outputs[r].shape() != input.shape() || outputs[r].dtype() != input.dtype())
            fail("all_gather", "output " + std::to_string(r) + " has " + describe(outputs[r]) + " but the input has " +
                                   describe(input));
    }
    const Route route_ = route({&input});
    Tensor in = staged(input, route_);
    Tensor all = detail::make_empty(Shape{world.size * in.numel()}, in.dtype(), in.device(), "all_gather");
    gather_blocks(in, all, route_);
    NoGradGuard no_grad;
    for (int r = 0; r < world.size; ++r)
        outputs[r].copy_(all.narrow(0, r * in.numel(), in.numel()).view(input.shape()).to(outputs[r].device()));
}

void all_gather_into_tensor(Tensor& output, const Tensor& input) {
    detail::check_defined(input, "all_gather_into_tensor");
    detail::check_defined(output, "all_gather_into_tensor");
    if (output.dtype() != input.dtype() || output.numel() != world.size * input.numel())
        fail("all_gather_into_tensor", "the output has " + describe(output) + " but needs " +
                                           std::to_string(world.size) + " times the input's elements (input has " +
                                           describe(input) + ")");
    const Route r = route({&input, &output});
    Tensor in = staged(input, r);
    Tensor out = staged(output, r);
    gather_blocks(in, out, r);
    put_back(output, out);
}

void reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) {
    detail::check_defined(output, "reduce_scatter");
    check_avg(output, op, "reduce_scatter");
    if (static_cast<int>(inputs.size()) != world.size)
        fail("reduce_scatter", "expected " + std::to_string(world.size) + " input tensors (one per rank), got " +
                                   std::to_string(inputs.size()));
    for (std::size_t r = 0; r < inputs.size(); ++r) {
        detail::check_defined(inputs[r], "reduce_scatter");
        if (inputs[r].shape() != output.shape() || inputs[r].dtype() != output.dtype())
            fail("reduce_scatter", "input " + std::to_string(r) + " has " + describe(inputs[r]) +
                                       " but the output has " + describe(output));
    }
    const Route route_ = route({&output});
    Tensor out = staged(output, route_);
    Tensor all = detail::make_empty(Shape{world.size * out.numel()}, out.dtype(), out.device(), "reduce_scatter");
    {
        NoGradGuard no_grad;
        for (int r = 0; r < world.size; ++r)
            all.narrow(0, r * out.numel(), out.numel()).copy_(inputs[r].reshape({-1}).to(all.device()));
    }
    scatter_blocks(all, out, op, route_);
    finish_avg(out, op);
    put_back(output, out);
}

void reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op) {
    detail::check_defined(input, "reduce_scatter_tensor");
    detail::check_defined(output, "reduce_scatter_tensor");
    check_avg(output, op, "reduce_scatter_tensor");
    if (output.dtype() != input.dtype() || input.numel() != world.size * output.numel())
        fail("reduce_scatter_tensor", "the input has " + describe(input) + " but needs " + std::to_string(world.size) +
                                          " times the output's elements (output has " + describe(output) + ")");
    const Route r = route({&input, &output});
    Tensor in = staged(input, r);
    Tensor out = staged(output, r);
    scatter_blocks(in, out, op, r);
    finish_avg(out, op);
    put_back(output, out);
}

// ---- DistributedSampler (torch/utils/data/distributed.py) ----------------------------------------

DistributedSampler::DistributedSampler(std::int64_t size, bool shuffle, std::uint64_t seed, bool drop_last,
                                       int num_replicas, int rank)
    : size_(size), shuffle_(shuffle), seed_(seed) {
    num_replicas_ = num_replicas >= 0 ? num_replicas : world.size;
    rank_ = rank >= 0 ? rank : (num_replicas >= 0 ? 0 : world.rank);
    if (size < 0) fail("DistributedSampler", "size must be non-negative, got " + std::to_string(size));
    if (num_replicas_ < 1)
        fail("DistributedSampler", "num_replicas must be positive, got " + std::to_string(num_replicas_));
    if (rank_ >= num_replicas_)
        fail("DistributedSampler", "Invalid rank " + std::to_string(rank_) + ", rank should be in the interval [0, " +
                                       std::to_string(num_replicas_ - 1) + "]");
    const std::int64_t r = num_replicas_;
    // Dropping the tail leaves the largest multiple of the world size; else pad up to the next one.
    num_samples_ = drop_last && size % r != 0 ? (size - r + r - 1) / r : (size + r - 1) / r;
    if (num_samples_ < 0) num_samples_ = 0;
    total_size_ = num_samples_ * r;
}

std::vector<std::int64_t> DistributedSampler::indices() const {
    std::vector<std::int64_t> all;
    if (shuffle_) {
        Generator gen(seed_ + static_cast<std::uint64_t>(epoch_));
        all = randperm(size_, kInt64, &gen).to_vector<std::int64_t>();
    } else {
        all.resize(static_cast<std::size_t>(size_));
        for (std::int64_t i = 0; i < size_; ++i) all[static_cast<std::size_t>(i)] = i;
    }
    const auto n = static_cast<std::int64_t>(all.size());
    if (total_size_ > n) {  // pad by repeating from the start, as often as needed
        for (std::int64_t i = n; i < total_size_; ++i) all.push_back(all[static_cast<std::size_t>(i % n)]);
    } else {
        all.resize(static_cast<std::size_t>(total_size_));
    }
    std::vector<std::int64_t> mine;
    mine.reserve(static_cast<std::size_t>(num_samples_));
    for (std::int64_t i = rank_; i < total_size_; i += num_replicas_) mine.push_back(all[static_cast<std::size_t>(i)]);
    return mine;
}

}  // namespace xgrad::distributed
