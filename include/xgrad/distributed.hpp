// Data-parallel training across processes: the job (rank, world size), collectives on tensors, and
// the sampler that shards a data set (PyTorch's torch.distributed and DistributedSampler).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xgrad/tensor.hpp"

/// Training across processes started by `mpirun` (PyTorch's `torch.distributed`).
///
/// Built with MPI (meson's `mpi` feature, on when Open MPI is found), the collectives go through
/// MPI_COMM_WORLD. CUDA tensors go through NCCL on the GPU where the build has it and each rank has a
/// GPU of its own, else through host memory and MPI (docs/distributed.md). Without MPI, or in a program not
/// started by `mpirun`, init() gives a world of one: rank 0 of 1, where every collective leaves its
/// tensors as they are (all_gather and reduce_scatter copy). The same program therefore compiles and
/// runs either way.
///
/// ```cpp
/// namespace dist = xgrad::distributed;
/// dist::init();
/// xgrad::Tensor t = xgrad::full({3}, dist::rank() + 1.0);
/// dist::all_reduce(t, dist::ReduceOp::kSum);   // every rank: 1 + 2 + ... + world_size
/// dist::finalize();
/// ```
namespace xgrad::distributed {

/// How all_reduce and reduce_scatter combine the ranks' values (PyTorch's `ReduceOp`).
enum class ReduceOp {
    kSum,  ///< The sum over ranks.
    kAvg,  ///< The mean over ranks (floating-point tensors only).
    kMax,  ///< The element-wise maximum.
    kMin,  ///< The element-wise minimum.
};

/// True when xgrad was built with MPI (else every job is a world of one).
bool is_available();
/// Joins the job `mpirun` started (MPI_Init), or makes a world of one when there is none; safe to
/// call twice. From here on, an uncaught exception on any rank prints the rank and the error and
/// ends the whole job (MPI_Abort) instead of leaving the other ranks waiting. In a job of several
/// ranks, xgrad's kernels then use one thread per rank unless `OMP_NUM_THREADS` is set (as torchrun).
void init();
/// True between init() and finalize().
bool is_initialized();
/// This process's rank in [0, world_size()); 0 before init().
int rank();
/// The number of processes in the job; 1 before init().
int world_size();
/// Waits until every rank has reached it.
void barrier();
/// Leaves the job (MPI_Finalize); no collective may follow. Also run at exit if init() ran.
void finalize();
/// Prints `message` with this rank and ends every process of the job with status 1 (MPI_Abort).
[[noreturn]] void abort(const std::string& message);

/// Reduces `tensor` over all ranks in place: afterwards every rank holds the result.
/// float32, float64 and int64 tensors; kAvg needs a floating-point one.
void all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::kSum);
/// Copies rank `root`'s `tensor` into every rank's `tensor` (same shape and dtype on every rank).
void broadcast(Tensor& tensor, int root = 0);
/// Fills `outputs[r]` with rank r's `input`: `outputs` holds world_size() tensors of input's shape
/// and dtype (PyTorch's `all_gather(tensor_list, tensor)`).
void all_gather(std::vector<Tensor>& outputs, const Tensor& input);
/// Writes every rank's `input`, in rank order, into `output`, whose first dimension is world_size()
/// times input's (PyTorch's `all_gather_into_tensor`).
void all_gather_into_tensor(Tensor& output, const Tensor& input);
/// Reduces `inputs[r]` over all ranks into rank r's `output`: `inputs` holds world_size() tensors of
/// output's shape and dtype (PyTorch's `reduce_scatter(output, input_list, op)`).
void reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::kSum);
/// Reduces `input` over all ranks and gives rank r the r-th block of its first dimension, whose size
/// is world_size() times output's (PyTorch's `reduce_scatter_tensor`).
void reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::kSum);

/// Each rank's share of a data set's indices for an epoch, the same as PyTorch's
/// `torch.utils.data.DistributedSampler` for the same seed and epoch: the indices (a permutation from
/// a generator seeded with seed + epoch when shuffling) padded by repeating them from the start to a
/// multiple of the world size (or cut to one, with `drop_last`), then every world_size-th from rank.
///
/// ```cpp
/// dist::DistributedSampler sampler(/*size=*/1000, /*shuffle=*/true, /*seed=*/0);
/// for (int epoch = 0; epoch < 3; ++epoch) {
///     sampler.set_epoch(epoch);
///     for (std::int64_t i : sampler.indices()) { /* this rank's samples */ }
/// }
/// ```
class DistributedSampler {
public:
    /// A sampler of `size` samples for this rank of the job (or for `rank` of `num_replicas` when
    /// those are given, >= 0).
    explicit DistributedSampler(std::int64_t size, bool shuffle = true, std::uint64_t seed = 0, bool drop_last = false,
                                int num_replicas = -1, int rank = -1);
    /// Chooses the epoch, which reseeds the shuffle (call it before each epoch, as in PyTorch).
    void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
    /// This rank's indices for the current epoch; num_samples() of them.
    std::vector<std::int64_t> indices() const;
    /// How many indices each rank gets per epoch.
    std::int64_t num_samples() const { return num_samples_; }

private:
    std::int64_t size_, num_samples_, total_size_, epoch_ = 0;
    bool shuffle_;  // drop_last is spent in the constructor: it only sets num_samples_ and total_size_
    std::uint64_t seed_;
    int num_replicas_, rank_;
};

}  // namespace xgrad::distributed
