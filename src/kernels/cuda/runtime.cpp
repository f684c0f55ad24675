// The CUDA runtime as xgrad uses it: device probing, the caching allocator, synchronous copies, and
// CUDA errors turned into exceptions that name the operation.
#include "kernels/cuda/runtime.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "xgrad/cuda.hpp"

namespace xgrad::kernels::cuda {

namespace {

/// The device count and, when it is 0, why; probed once (a machine without a driver answers
/// "CUDA driver version is insufficient ..." here, which is not an error for xgrad).
struct Probe {
    int count = 0;
    std::string reason;
};

const Probe& probe() {
    static const Probe p = [] {
        Probe r;
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
            cudaGetLastError();
            r.reason = cudaGetErrorString(e);
        } else if (n == 0) {
            r.reason = "no CUDA device is present";
        } else {
            r.count = n;
        }
        return r;
    }();
    return p;
}

/// The device this thread last made current (-1: not asked yet).
thread_local int current = -1;

std::string mib(std::size_t bytes) {
    return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)";
}

/// A request rounded to its block size: 512-byte steps up to 1 MiB, then quarter powers of two (at
/// most 25% more than asked), so that tensors of nearby sizes share cached blocks.
std::size_t block_size(std::size_t bytes) {
    constexpr std::size_t kSmall = std::size_t{1} << 20;
    if (bytes <= kSmall) return (bytes + 511) / 512 * 512;
    const std::size_t step = std::bit_floor(bytes) / 4;
    return (bytes + step - 1) / step * step;
}

/// Freed blocks, kept per device and block size for the next tensor of that size: in steady state
/// (a training loop) every allocation is a cache hit and cudaMalloc/cudaFree are never called.
/// Reusing a block at once is safe because each device has one stream: the kernels that used the
/// block run before any kernel of its next owner.
class Allocator {
public:
    void* allocate(std::size_t bytes, int device) {
        if (bytes == 0) return nullptr;
        const std::size_t size = block_size(bytes);
        std::lock_guard<std::mutex> lock(mutex_);
        Pool& pool = pools_[device];
        void* p = nullptr;
        auto it = pool.free.find(size);
        if (it != pool.free.end() && !it->second.empty()) {
            p = it->second.back();
            it->second.pop_back();
            pool.cached -= size;
        } else {
            p = device_malloc(bytes, size, device, pool);
        }
        pool.allocated += size;
        pool.peak = std::max(pool.peak, pool.allocated);
        return p;
    }

    void release(void* p, std::size_t bytes, int device) {
        if (p == nullptr) return;
        const std::size_t size = block_size(bytes);
        std::lock_guard<std::mutex> lock(mutex_);
        Pool& pool = pools_[device];
        pool.free[size].push_back(p);
        pool.cached += size;
        pool.allocated -= size;
    }

    void empty_cache() {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [device, pool] : pools_) free_cached(device, pool);
    }

    std::size_t allocated(int device) { return read(device, &Pool::allocated); }
    std::size_t peak(int device) { return read(device, &Pool::peak); }
    std::size_t reserved(int device) {
        std::lock_guard<std::mutex> lock(mutex_);
        const Pool& pool = pools_[device];
        return pool.allocated + pool.cached;
    }
    void reset_peak(int device) {
        std::lock_guard<std::mutex> lock(mutex_);
        Pool& pool = pools_[device];
        pool.peak = pool.allocated;
    }

private:
    struct Pool {
        std::map<std::size_t, std::vector<void*>> free;  // block size -> unused blocks
        std::size_t allocated = 0, cached = 0, peak = 0;
    };

    std::size_t read(int device, std::size_t Pool::*field) {
        std::lock_guard<std::mutex> lock(mutex_);
        return pools_[device].*field;
    }

    void free_cached(int device, Pool& pool) {
        if (pool.cached == 0) return;
        set_device(device);
        for (auto& [size, blocks] : pool.free)
            for (void* p : blocks) check(cudaFree(p), "empty_cache");
        pool.free.clear();
        pool.cached = 0;
    }

    /// cudaMalloc on a cache miss; when the device is full, the cache goes back to CUDA and the
    /// allocation is tried once more before OutOfMemoryError.
    void* device_malloc(std::size_t bytes, std::size_t size, int device, Pool& pool) {
        set_device(device);
        void* p = nullptr;
        cudaError_t e = cudaMalloc(&p, size);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            const std::size_t cached = pool.cached;
            free_cached(device, pool);
            e = cudaMalloc(&p, size);
            if (e == cudaErrorMemoryAllocation) {
                cudaGetLastError();
                std::size_t free_bytes = 0, total = 0;
                if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) cudaGetLastError();
                throw OutOfMemoryError("CUDA out of memory: tried to allocate " + mib(bytes) +
                                       " on cuda:" + std::to_string(device) + "; tensors hold " + mib(pool.allocated) +
                                       ", the cache held " + mib(cached) +
                                       " (returned to the device before "
                                       "retrying); the device has " +
                                       mib(free_bytes) + " free of " + mib(total));
            }
        }
        check(e, "cuda allocator");
        return p;
    }

    std::mutex mutex_;
    std::map<int, Pool> pools_;
};

/// Never destroyed: at exit CUDA may already be torn down, and the driver frees everything anyway.
Allocator& allocator() {
    static auto* a = new Allocator;
    return *a;
}

int resolve(int device) {
    return device < 0 ? current_device() : device;
}

}  // namespace

int device_count() {
    return probe().count;
}

std::string unavailable_reason() {
    return probe().reason;
}

int current_device() {
    if (current < 0) {
        int d = 0;
        if (probe().count > 0) check(cudaGetDevice(&d), "current_device");
        current = d;
    }
    return current;
}

void set_device(int device) {
    if (device == current) return;
    check(cudaSetDevice(device), "set_device");
    current = device;
}

void check_device(int device, const char* op) {
    const int n = device_count();
    if (n == 0)
        throw std::invalid_argument(std::string(op) + ": no CUDA device is available (" + unavailable_reason() + ")");
    if (device < 0 || device >= n)
        throw std::invalid_argument(std::string(op) + ": cuda:" + std::to_string(device) + " does not exist (" +
                                    std::to_string(n) + " CUDA device" + (n == 1 ? "" : "s") + ")");
}

void check(int status, const char* op) {
    if (status == cudaSuccess) return;
    cudaGetLastError();
    throw std::runtime_error(std::string(op) + ": CUDA error: " + cudaGetErrorString(static_cast<cudaError_t>(status)));
}

void check_launch(const char* op) {
    check(cudaGetLastError(), op);
}

void* allocate(std::size_t bytes, int device) {
    return allocator().allocate(bytes, device);
}

void release(void* data, std::size_t bytes, int device) {
    allocator().release(data, bytes, device);
}

void copy_to_device(void* dst, const void* src, std::size_t bytes, int device) {
    if (bytes == 0) return;
    set_device(device);
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to cuda");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, int device) {
    if (bytes == 0) return;
    set_device(device);
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy to cpu");
}

void copy_between_devices(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes) {
    if (bytes == 0) return;
    set_device(dst_device);
    check(cudaMemcpyPeer(dst, dst_device, src, src_device, bytes), "copy between cuda devices");
    check(cudaDeviceSynchronize(), "copy between cuda devices");
}

void synchronize(int device) {
    if (device_count() == 0) return;
    set_device(resolve(device));
    check(cudaDeviceSynchronize(), "synchronize");
}

std::size_t memory_allocated(int device) {
    return device_count() == 0 ? 0 : allocator().allocated(resolve(device));
}

std::size_t max_memory_allocated(int device) {
    return device_count() == 0 ? 0 : allocator().peak(resolve(device));
}

std::size_t memory_reserved(int device) {
    return device_count() == 0 ? 0 : allocator().reserved(resolve(device));
}

void reset_peak_memory_stats(int device) {
    if (device_count() > 0) allocator().reset_peak(resolve(device));
}

void empty_cache() {
    if (device_count() > 0) allocator().empty_cache();
}

}  // namespace xgrad::kernels::cuda
