// A per-thread pool of small blocks for the objects every op creates (tensor handles, storages,
// graph nodes): a training step of a small model makes and frees hundreds of them, and malloc/free
// were most of its time. The common case (a block of a size seen before, on this thread) is inline.
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

namespace pool {

inline constexpr std::size_t kGranule = 16;       // size classes are multiples of 16 bytes
inline constexpr std::size_t kMaxBytes = 512;     // larger blocks go to malloc directly
inline constexpr std::size_t kMaxKept = 1 << 12;  // blocks kept per class and thread at most
inline constexpr std::size_t kClasses = kMaxBytes / kGranule;

struct FreeBlock {
    FreeBlock* next;
};

/// One thread's free lists. Deliberately never destroyed: tensors in static storage may be freed
/// after thread-local destructors have run, and then still find their pool here.
struct Lists {
    FreeBlock* head[kClasses] = {};
    std::size_t count[kClasses] = {};
};

/// This thread's lists, null until its first pooled block (a plain pointer: no guard or
/// initialisation call on each access; initial-exec: no call to find it in the shared library).
inline thread_local Lists* this_thread [[gnu::tls_model("initial-exec")]] = nullptr;

/// Makes this thread's lists.
Lists* make_lists();
/// malloc for what the lists do not serve (too large, a class with no free block, ASan builds);
/// throws OutOfMemoryError when malloc fails.
void* allocate(std::size_t bytes);

constexpr std::size_t class_of(std::size_t bytes) {
    return (bytes + kGranule - 1) / kGranule - 1;
}

/// Puts block `p` of class `c` on list `l`, unless that list is full (then false: free it).
inline bool keep(Lists& l, void* p, std::size_t c) noexcept {
    if (l.count[c] >= kMaxKept) [[unlikely]]
        return false;
    auto* b = static_cast<FreeBlock*>(p);
    b->next = l.head[c];
    l.head[c] = b;
    ++l.count[c];
    return true;
}

}  // namespace pool

/// `bytes` of memory aligned for any object, from this thread's free list when it has a block.
inline void* pool_alloc(std::size_t bytes) {
    if (kAddressSanitizer || bytes == 0 || bytes > pool::kMaxBytes) return pool::allocate(bytes);
    pool::Lists* l = pool::this_thread;
    const std::size_t c = pool::class_of(bytes);
    if (l) [[likely]]
        if (pool::FreeBlock* b = l->head[c]) {
            l->head[c] = b->next;
            --l->count[c];
            return b;
        }
    return pool::allocate(bytes);
}

/// pool_free's out-of-line part: frees what its inline part does not keep (and makes this thread's
/// lists on its first free).
void pool_free_slow(void* p, std::size_t bytes) noexcept;

/// Returns a block from pool_alloc (on any thread) of the same `bytes`.
inline void pool_free(void* p, std::size_t bytes) noexcept {
    pool::Lists* l = pool::this_thread;
    if (kAddressSanitizer || !p || bytes == 0 || bytes > pool::kMaxBytes || !l ||
        !pool::keep(*l, p, pool::class_of(bytes))) [[unlikely]]
        pool_free_slow(p, bytes);
}

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
