// The transport under xgrad::distributed: MPI when built with it (distributed_mpi.cpp), else a world
// of one (distributed_local.cpp). Buffers are contiguous host memory; counts are elements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

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

}  // namespace xgrad::detail::comm
