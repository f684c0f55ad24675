// Which kernel table serves a device.
#include "detail/tensor_impl.hpp"
#include "kernels/cpu/cpu.hpp"
#ifdef XGRAD_WITH_CUDA
#include "kernels/cuda/cuda.hpp"
#endif

namespace xgrad::kernels {

const Backend& backend(Device device) {
    if (device == kCPU) return cpu::backend();
#ifdef XGRAD_WITH_CUDA
    if (device == kCUDA) return cuda::backend();
#endif
    detail::fail("kernels", "xgrad was built without support for device " + to_string(device));
}

}  // namespace xgrad::kernels
