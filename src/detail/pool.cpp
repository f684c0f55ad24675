// The per-thread small-block pool's slow paths (see pool.hpp).
#include "detail/pool.hpp"

#include "detail/tensor_impl.hpp"  // out_of_memory

#include <cstdlib>
#include <new>

namespace xgrad::detail {

namespace pool {

Lists* make_lists() {
    this_thread = new Lists;
    return this_thread;
}

void* allocate(std::size_t bytes) {
    // A pooled class gets a block of its whole class size, so that any request of the class can reuse it.
    const bool pooled = !kAddressSanitizer && bytes > 0 && bytes <= kMaxBytes;
    if (pooled && !this_thread) make_lists();
    const std::size_t size = pooled ? (class_of(bytes) + 1) * kGranule : bytes == 0 ? 1 : bytes;
    void* p = std::malloc(size);
    if (!p) out_of_memory("autograd", bytes);
    return p;
}

}  // namespace pool

void pool_free_slow(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    if (kAddressSanitizer || bytes == 0 || bytes > pool::kMaxBytes) {
        std::free(p);
        return;
    }
    pool::Lists* l = pool::this_thread ? pool::this_thread : pool::make_lists();
    if (!pool::keep(*l, p, pool::class_of(bytes))) std::free(p);
}

}  // namespace xgrad::detail
