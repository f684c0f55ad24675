// Whether a CUDA device can be used: the guard scripts put around `.to(xgrad::kCUDA)`.
#pragma once

namespace xgrad::cuda {

/// True when xgrad was built with its CUDA backend and a GPU is present.
///
/// This build has no CUDA backend, so it is false, and `to(xgrad::kCUDA)` throws. Scripts written as
/// `if (xgrad::cuda::is_available()) model.to(xgrad::kCUDA);` run on the CPU unchanged.
bool is_available();

/// Number of usable CUDA devices (0 without the CUDA backend).
int device_count();

}  // namespace xgrad::cuda
