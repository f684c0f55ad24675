// The CUDA runtime as xgrad uses it: devices, the caching allocator, copies, and CUDA errors turned
// into exceptions. Declarations only, free of CUDA's headers, so that any source may include it.
#pragma once

#include <cstddef>
#include <string>

namespace xgrad::kernels::cuda {

/// Number of CUDA devices; 0 when there is no driver or no GPU (never throws).
int device_count();
/// Why no device can be used ("" when one can): CUDA's message, or "no CUDA device is present".
std::string unavailable_reason();
/// The device new tensors go to when none is named (PyTorch's current device).
int current_device();
/// Makes `device` current for this thread's kernel launches (cheap when it already is).
void set_device(int device);
/// Throws unless `device` is a usable device index; `op` names the caller.
void check_device(int device, const char* op);

/// Throws std::runtime_error "op: CUDA error: <CUDA's message>" unless `status` (a cudaError_t) is
/// cudaSuccess. Clears CUDA's last error first, so that a later check does not see it again.
void check(int status, const char* op);
/// Checks that the kernel just launched by `op` was accepted (cudaGetLastError).
void check_launch(const char* op);

/// `bytes` of device memory on `device` from the caching allocator (nullptr for 0 bytes). Throws
/// xgrad::OutOfMemoryError when even an emptied cache leaves too little memory.
void* allocate(std::size_t bytes, int device);
/// Gives a block from allocate() back to the cache.
void release(void* data, std::size_t bytes, int device);

/// Device memory for a kernel's own temporaries, returned to the cache when it goes out of scope.
class Scratch {
public:
    Scratch(std::size_t bytes, int device) : bytes_(bytes), device_(device), data_(allocate(bytes, device)) {}
    ~Scratch() { release(data_, bytes_, device_); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    template <typename T>
    T* as() const {
        return static_cast<T*>(data_);
    }

private:
    std::size_t bytes_;
    int device_;
    void* data_;
};

/// Synchronous copies of `bytes` (they wait for the work queued before them on the default stream).
void copy_to_device(void* dst, const void* src, std::size_t bytes, int device);
void copy_to_host(void* dst, const void* src, std::size_t bytes, int device);
void copy_between_devices(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes);

/// Waits for `device` (-1: the current one).
void synchronize(int device);

/// Loads cuBLAS if no CUDA product has yet (matmul.cpp; it needs no GPU) and returns its name for
/// success ("success" in cuBLAS 13), fetched through it. Throws when the library cannot be loaded.
std::string load_cublas();

/// The allocator's counters for `device` (-1: the current one).
std::size_t memory_allocated(int device);
std::size_t max_memory_allocated(int device);
std::size_t memory_reserved(int device);
void reset_peak_memory_stats(int device);
/// Frees every cached block of every device.
void empty_cache();

}  // namespace xgrad::kernels::cuda
