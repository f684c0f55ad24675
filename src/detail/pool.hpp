// A per-thread pool of small blocks for the objects every op creates (tensor handles, storages,
// graph nodes): a training step of a small model makes and frees hundreds of them, and malloc/free
// were most of its time.
#pragma once

#include <cstddef>

namespace xgrad::detail {

/// True in AddressSanitizer builds: this pool then hands every block back to malloc (and the
/// large-block cache poisons the blocks it keeps), so a use after free is reported, not hidden.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

/// `bytes` of memory aligned for any object, from this thread's free list when it has a block.
void* pool_alloc(std::size_t bytes);
/// Returns a block from pool_alloc (on any thread) of the same `bytes`.
void pool_free(void* p, std::size_t bytes) noexcept;

/// A standard allocator over pool_alloc, for std::allocate_shared.
template <typename T>
struct PoolAllocator {
    using value_type = T;
    PoolAllocator() = default;
    template <typename U>
    PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT: allocators convert implicitly
    T* allocate(std::size_t n) { return static_cast<T*>(pool_alloc(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { pool_free(p, n * sizeof(T)); }
    template <typename U>
    bool operator==(const PoolAllocator<U>&) const noexcept {
        return true;
    }
};

}  // namespace xgrad::detail
