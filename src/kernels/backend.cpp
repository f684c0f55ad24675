// Which kernel table serves a device.
#include "detail/tensor_impl.hpp"
#include "kernels/cpu/cpu.hpp"

namespace xgrad::kernels {

const Backend& backend(Device device) {
    if (device == kCPU) return cpu::backend();
    detail::fail("kernels", "xgrad was built without support for device " + to_string(device));
}

}  // namespace xgrad::kernels
