// Threads: how many CPU threads xgrad's kernels use, as torch.set_num_threads.
#pragma once

namespace xgrad {

/// Sets the number of CPU threads xgrad's kernels (and its BLAS) use; at least 1.
///
/// The default is the `OMP_NUM_THREADS` environment variable when set, else the number of CPUs this
/// process may run on. Work below a size threshold always runs on the calling thread. Idle threads
/// spin for a few microseconds after a parallel region and then sleep, so they do not take CPU time
/// from other processes. Calling it while another thread runs xgrad kernels is not supported.
///
/// Thread safety, as in PyTorch: separate tensors, models and graphs may be used in separate
/// threads at once (they share this thread pool, which several threads may enter together), and
/// every random function locks its Generator; one tensor, module or optimizer must not be used
/// from two threads at once.
/// @code
/// xgrad::set_num_threads(1);   // reproducible single-thread timings
/// @endcode
void set_num_threads(int n);

/// The number of CPU threads xgrad's kernels use.
int get_num_threads();

}  // namespace xgrad
