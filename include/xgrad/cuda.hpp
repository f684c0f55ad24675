// CUDA devices as PyTorch's `torch.cuda` shows them: availability, synchronisation and memory.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "xgrad/tensor.hpp"  // OutOfMemoryError

namespace xgrad {

/// CUDA devices. Without the CUDA backend (or without a GPU) nothing is available: the queries
/// return 0 or false and the other calls do nothing, so scripts written as
/// `if (xgrad::cuda::is_available()) model.to(xgrad::kCUDA);` run on the CPU unchanged.
///
/// Every device has one stream, its default (legacy) stream: kernels, cuBLAS calls and copies run in
/// the order they are issued, and copies to the host (`.cpu()`, `item()`, `to_vector()`, printing)
/// wait for the work before them. Memory comes from a caching allocator: a freed tensor's block is
/// kept for the next tensor of the same rounded size, so a training loop stops calling cudaMalloc
/// after its first step.
namespace cuda {

/// True when xgrad was built with its CUDA backend and a GPU is present.
bool is_available();

/// Number of usable CUDA devices (0 without the CUDA backend or without a GPU).
int device_count();

/// Waits until every kernel and copy queued on `device` (-1: the current device) has finished.
void synchronize(int device = -1);

/// Bytes held by tensors on `device` (-1: the current device), counted in the allocator's rounded
/// block sizes, as `torch.cuda.memory_allocated`.
std::size_t memory_allocated(int device = -1);

/// The largest memory_allocated() seen on `device` since the start (or the last reset).
std::size_t max_memory_allocated(int device = -1);

/// Bytes the allocator holds from `device`: in use plus cached (`torch.cuda.memory_reserved`).
std::size_t memory_reserved(int device = -1);

/// Makes max_memory_allocated() start again from the current memory_allocated().
void reset_peak_memory_stats(int device = -1);

/// Returns the cached (unused) blocks of every device to CUDA, as `torch.cuda.empty_cache`.
void empty_cache();

}  // namespace cuda

}  // namespace xgrad
