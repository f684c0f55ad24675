// Threads: how many CPU threads xgrad's kernels use, as torch.set_num_threads.
#pragma once

namespace xgrad {

/// Sets the number of CPU threads xgrad's kernels (and its BLAS) use; at least 1.
///
/// The default is the `OMP_NUM_THREADS` environment variable when set, else the number of CPUs this
/// process may run on. Work below a size threshold always runs on the calling thread. A parallel
/// region's chunks are claimed by whichever thread is free, the calling thread included, so a thread
/// that the system does not run (its core busy with another process) delays nothing; the results do
/// not depend on which thread ran a chunk. Idle threads spin for 30 microseconds after a parallel
/// region and then sleep, so they do not take CPU time from other processes. Calling it while another
/// thread runs xgrad kernels is not supported.
///
/// Matrix products run on OpenBLAS's threads, which wait differently (as they do under PyTorch,
/// which calls the same OpenBLAS): after each product on more than one thread, OpenBLAS's helper
/// threads call `sched_yield` in a loop for 2^28 time-stamp-counter cycles before they sleep, about
/// 0.13 s on a 2.1 GHz counter, and take a core from other processes meanwhile. Setting
/// `OPENBLAS_THREAD_TIMEOUT=4` in the environment before the program starts makes them sleep at once,
/// and each product then pays for waking them. For a small model, one thread is often faster
/// than two: see the \ref performance "Performance" page. Convolutions are the exception: each
/// image's products run on one OpenBLAS thread, the images split between xgrad's threads, so their
/// results do not depend on the number of threads.
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
