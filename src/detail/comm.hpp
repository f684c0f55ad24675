// The transport under xgrad::distributed: MPI when built with it (distributed_mpi.cpp), else a world
// of one (distributed_local.cpp). Buffers are contiguous host memory; counts are elements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xgrad/shape.hpp"

namespace xgrad::detail::comm {

/// What the transport reduces with (kAvg is a kSum followed by a division, in distributed.cpp).
enum class Op { kSum, kMax, kMin };

/// True when this build has a real transport (MPI).
bool built_with_mpi();
/// True when a launcher (mpirun, srun with PMI) started this process as one rank of a job.
bool launched();
/// Joins the job; returns this process's rank and the world's size through the arguments.
void init(int& rank, int& world_size);
/// Leaves the job (MPI_Finalize); safe to call twice.
void finalize();
/// True once finalize() has run.
bool finalized();
/// Waits until every rank has called it.
void barrier();
/// Ends every rank of the job with exit status 1 after printing `message` (MPI_Abort).
[[noreturn]] void abort(const std::string& message);

/// In-place element-wise reduction of `count` elements over all ranks.
void allreduce(void* buf, std::int64_t count, DType dtype, Op op);
/// `root`'s `count` elements into every rank's `buf`.
void broadcast(void* buf, std::int64_t count, DType dtype, int root);
/// Every rank's `count` elements of `in`, in rank order, into `out` (world_size * count elements).
void allgather(const void* in, void* out, std::int64_t count, DType dtype);
/// `in` holds world_size blocks of `count` elements; block r reduced over all ranks goes to rank r's `out`.
void reduce_scatter(const void* in, void* out, std::int64_t count, DType dtype, Op op);

/// A collective under way; wait() before reading its buffer.
struct RequestState;
/// A non-blocking collective: a handle that wait() completes.
using Request = std::shared_ptr<RequestState>;
/// Starts an in-place all-reduce of `buf` (MPI_Iallreduce); the buffer must stay alive until wait().
Request iallreduce(void* buf, std::int64_t count, DType dtype, Op op);
/// Waits until `request` has completed.
void wait(const Request& request);

/// Collectives on CUDA memory, through NCCL (distributed_nccl.cpp; distributed_nccl_none.cpp in a build
/// without it). `device` is the CUDA device that holds the buffers on this rank; each rank has its own.
/// The calls are queued on a stream of NCCL's that the device's default stream (xgrad's kernels') orders
/// both ways: after the kernels that wrote the buffers, before the ones that read them. They return
/// without waiting for the GPU.
namespace nccl {

/// True when this build has NCCL.
bool built();
/// Whether NCCL serves this job on `device`, deciding it (and making the communicator) on the first call
/// for the device. Collective: every rank calls it at the same point (its first CUDA collective) and
/// every rank gets the same answer. False when two ranks share a GPU (NCCL refuses them) or any rank has
/// set XGRAD_DISTRIBUTED_NCCL=0; the collectives then stage through host memory and the transport above.
bool usable(int device, int rank, int world_size);
/// The collectives of the transport above, on device memory, for a device that usable() accepted.
void allreduce(void* buf, std::int64_t count, DType dtype, Op op, int device);
void broadcast(void* buf, std::int64_t count, DType dtype, int root, int device);
void allgather(const void* in, void* out, std::int64_t count, DType dtype, int device);
void reduce_scatter(const void* in, void* out, std::int64_t count, DType dtype, Op op, int device);
/// Destroys the communicators, before MPI_Finalize. `at_exit`: the process is ending and CUDA may be torn
/// down already, so they are left to the operating system instead.
void finalize(bool at_exit);

/// The text one rank contributes to usable()'s decision: "<host>|<PCI bus id>|<0 or 1>", at most
/// kIdentityBytes bytes. Plain C++ (tested on the host): two ranks share a GPU when the first two fields
/// are equal; the last is 0 where XGRAD_DISTRIBUTED_NCCL=0.
constexpr std::size_t kIdentityBytes = 160;
/// usable()'s verdict on every rank's identity: all GPUs distinct and NCCL allowed by every rank.
inline bool accepts(const std::vector<std::string>& identities) {
    for (std::size_t i = 0; i < identities.size(); ++i) {
        const std::string& id = identities[i];
        const auto bar = id.rfind('|');
        if (bar == std::string::npos || id.substr(bar + 1) != "1") return false;
        for (std::size_t j = 0; j < i; ++j)
            if (identities[j].substr(0, identities[j].rfind('|')) == id.substr(0, bar)) return false;
    }
    return true;
}

}  // namespace nccl

}  // namespace xgrad::detail::comm
