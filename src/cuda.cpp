// Device queries for builds without the CUDA backend: no device is available.
#include "xgrad/cuda.hpp"

namespace xgrad::cuda {

bool is_available() {
    return false;
}

int device_count() {
    return 0;
}

}  // namespace xgrad::cuda
