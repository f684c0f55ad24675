// torch.cuda's queries: answered by the CUDA runtime when xgrad is built with CUDA, else "nothing here".
#include "xgrad/cuda.hpp"

#ifdef XGRAD_WITH_CUDA
#include "kernels/cuda/runtime.hpp"
#endif

namespace xgrad::cuda {

#ifdef XGRAD_WITH_CUDA

namespace rt = kernels::cuda;

bool is_available() {
    return rt::device_count() > 0;
}
int device_count() {
    return rt::device_count();
}
void synchronize(int device) {
    rt::synchronize(device);
}
std::size_t memory_allocated(int device) {
    return rt::memory_allocated(device);
}
std::size_t max_memory_allocated(int device) {
    return rt::max_memory_allocated(device);
}
std::size_t memory_reserved(int device) {
    return rt::memory_reserved(device);
}
void reset_peak_memory_stats(int device) {
    rt::reset_peak_memory_stats(device);
}
void empty_cache() {
    rt::empty_cache();
}

#else

bool is_available() {
    return false;
}
int device_count() {
    return 0;
}
void synchronize(int) {}
std::size_t memory_allocated(int) {
    return 0;
}
std::size_t max_memory_allocated(int) {
    return 0;
}
std::size_t memory_reserved(int) {
    return 0;
}
void reset_peak_memory_stats(int) {}
void empty_cache() {}

#endif

}  // namespace xgrad::cuda
