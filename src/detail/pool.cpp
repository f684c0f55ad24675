// The per-thread small-block pool (see pool.hpp).
#include "detail/pool.hpp"

#include "detail/tensor_impl.hpp"  // out_of_memory

#include <cstdlib>
#include <new>

namespace xgrad::detail {

namespace {

constexpr std::size_t kGranule = 16;       // size classes are multiples of 16 bytes
constexpr std::size_t kMaxBytes = 512;     // larger blocks go to malloc directly
constexpr std::size_t kMaxKept = 1 << 12;  // blocks kept per class and thread at most
constexpr std::size_t kClasses = kMaxBytes / kGranule;

struct FreeBlock {
    FreeBlock* next;
};

/// One thread's free lists. Deliberately never destroyed: tensors in static storage may be freed
/// after thread-local destructors have run, and then still find their pool here.
struct Lists {
    FreeBlock* head[kClasses] = {};
    std::size_t count[kClasses] = {};
};

Lists& lists() {
    thread_local Lists* mine = nullptr;  // a plain pointer: no guard or init call on each access
    if (!mine) [[unlikely]]
        mine = new Lists;
    return *mine;
}

std::size_t class_of(std::size_t bytes) {
    return (bytes + kGranule - 1) / kGranule - 1;
}

constexpr bool kBypass = kAddressSanitizer;  // every block back to malloc, so ASan sees each use

}  // namespace

void* pool_alloc(std::size_t bytes) {
    if (kBypass || bytes == 0 || bytes > kMaxBytes) {
        void* p = std::malloc(bytes == 0 ? 1 : bytes);
        if (!p) out_of_memory("autograd", bytes);
        return p;
    }
    Lists& l = lists();
    const std::size_t c = class_of(bytes);
    if (FreeBlock* b = l.head[c]) {
        l.head[c] = b->next;
        --l.count[c];
        return b;
    }
    void* p = std::malloc((c + 1) * kGranule);
    if (!p) out_of_memory("autograd", bytes);
    return p;
}

void pool_free(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    if (kBypass || bytes == 0 || bytes > kMaxBytes) {
        std::free(p);
        return;
    }
    Lists& l = lists();
    const std::size_t c = class_of(bytes);
    if (l.count[c] >= kMaxKept) {
        std::free(p);
        return;
    }
    auto* b = static_cast<FreeBlock*>(p);
    b->next = l.head[c];
    l.head[c] = b;
    ++l.count[c];
}

}  // namespace xgrad::detail
