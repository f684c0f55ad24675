// Collectives on CUDA memory through NCCL (built with the CUDA backend where the toolkit has NCCL). The
// job itself (ranks, start-up, host collectives) stays MPI's: rank 0's ncclUniqueId reaches the others
// through the host transport, and each rank's communicator lives on the CUDA device its tensors are on.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail/comm.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/cuda/runtime.hpp"

namespace xgrad::detail::comm::nccl {

namespace {

ncclDataType_t nccl_type(DType dtype) {
    switch (dtype) {
        case kFloat32:
            return ncclFloat32;
        case kFloat64:
            return ncclFloat64;
        case kInt64:
            return ncclInt64;
        case kInt32:
            return ncclInt32;
        case kUInt8:
        case kBool:  // moved as bytes; the reducing collectives refuse bool
            return ncclUint8;
    }
    return ncclUint8;
}

ncclRedOp_t nccl_op(Op op) {
    switch (op) {
        case Op::kSum:
            return ncclSum;
        case Op::kMax:
            return ncclMax;
        case Op::kMin:
            return ncclMin;
    }
    return ncclSum;
}

void check(ncclResult_t result, const char* call, ncclComm_t comm = nullptr) {
    if (result == ncclSuccess) return;
    std::string message = std::string(call) + ": NCCL error: " + ncclGetErrorString(result);
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') message += " (" + std::string(last) + ")";
    throw std::runtime_error(message);
}

// xgrad queues every kernel of a device on the legacy default stream (docs/cuda.md). The collectives go
// on a stream of their own made without cudaStreamNonBlocking, which the legacy stream orders both ways:
// a collective starts after the kernels queued before it (those that wrote its buffer) and the kernels
// queued after it wait for it. Not on the default stream itself: NCCL has had bugs there (old versions,
// and 2.29's copy-engine collectives).
struct Channel {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
};

std::map<int, bool> verdicts;     // device -> usable()'s answer, decided once per device
std::map<int, Channel> channels;  // device -> this rank's communicator and stream there

const Channel& channel(int device, const char* call) {
    auto it = channels.find(device);
    if (it == channels.end())
        fail(call, "no NCCL communicator on cuda:" + std::to_string(device) + " (usable() decides first)");
    kernels::cuda::set_device(device);
    return it->second;
}

std::string identity(int device) {
    char bus[64] = {};
    kernels::cuda::check(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "distributed (NCCL)");
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    const char* env = std::getenv("XGRAD_DISTRIBUTED_NCCL");
    const bool allowed = env == nullptr || std::strcmp(env, "0") != 0;
    std::string id = std::string(host) + "|" + bus + "|" + (allowed ? "1" : "0");
    if (id.size() >= kIdentityBytes) id = id.substr(id.size() - (kIdentityBytes - 1));  // keeps the bus id
    return id;
}

}  // namespace

bool built() {
    return true;
}

bool usable(int device, int rank, int world_size) {
    if (auto it = verdicts.find(device); it != verdicts.end()) return it->second;
    kernels::cuda::set_device(device);
    std::string mine = identity(device);
    std::vector<std::string> all;
    if (world_size > 1) {
        mine.resize(kIdentityBytes, '\0');
        std::vector<char> gathered(static_cast<std::size_t>(world_size) * kIdentityBytes);
        comm::allgather(mine.data(), gathered.data(), static_cast<std::int64_t>(kIdentityBytes), kUInt8);
        for (int r = 0; r < world_size; ++r) all.emplace_back(&gathered[static_cast<std::size_t>(r) * kIdentityBytes]);
    } else {
        all.push_back(mine);
    }
    const bool ok = accepts(all);
    if (ok) {
        ncclUniqueId id;
        std::memset(&id, 0, sizeof id);
        if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
        if (world_size > 1) comm::broadcast(&id, static_cast<std::int64_t>(sizeof id), kUInt8, 0);
        Channel c;
        kernels::cuda::check(cudaStreamCreate(&c.stream), "distributed (NCCL)");
        check(ncclCommInitRank(&c.comm, world_size, id, rank), "ncclCommInitRank");
        channels[device] = c;
    }
    verdicts[device] = ok;
    return ok;
}

void allreduce(void* buf, std::int64_t count, DType dtype, Op op, int device) {
    if (count == 0) return;  // every rank has the same count, so every rank skips
    const Channel& c = channel(device, "ncclAllReduce");
    check(ncclAllReduce(buf, buf, static_cast<std::size_t>(count), nccl_type(dtype), nccl_op(op), c.comm, c.stream),
          "ncclAllReduce", c.comm);
}

void broadcast(void* buf, std::int64_t count, DType dtype, int root, int device) {
    if (count == 0) return;  // every rank has the same count, so every rank skips
    const Channel& c = channel(device, "ncclBroadcast");
    check(ncclBroadcast(buf, buf, static_cast<std::size_t>(count), nccl_type(dtype), root, c.comm, c.stream),
          "ncclBroadcast", c.comm);
}

void allgather(const void* in, void* out, std::int64_t count, DType dtype, int device) {
    if (count == 0) return;  // every rank has the same count, so every rank skips
    const Channel& c = channel(device, "ncclAllGather");
    check(ncclAllGather(in, out, static_cast<std::size_t>(count), nccl_type(dtype), c.comm, c.stream), "ncclAllGather",
          c.comm);
}

void reduce_scatter(const void* in, void* out, std::int64_t count, DType dtype, Op op, int device) {
    if (count == 0) return;  // every rank has the same count, so every rank skips
    const Channel& c = channel(device, "ncclReduceScatter");
    check(ncclReduceScatter(in, out, static_cast<std::size_t>(count), nccl_type(dtype), nccl_op(op), c.comm, c.stream),
          "ncclReduceScatter", c.comm);
}

void finalize(bool at_exit) {
    if (!at_exit)
        for (auto& [device, c] : channels) {
            kernels::cuda::set_device(device);
            ncclCommDestroy(c.comm);  // the job is ending: an error here has no one left to tell
            cudaStreamDestroy(c.stream);
        }
    channels.clear();
    verdicts.clear();
}

}  // namespace xgrad::detail::comm::nccl
