// CPU threading for kernels: a small pool whose idle threads spin briefly and then sleep.
#pragma once

#include <algorithm>
#include <cstdint>

namespace xgrad::kernels::cpu {

/// Threads the pool runs a region on (the caller included).
int num_threads();

/// True on a pool thread, or on the caller while it runs a region (nested regions run serially).
bool in_parallel_region();

/// Runs `fn(ctx, lo, hi)` on `chunks` consecutive pieces of [begin, end), one per thread.
void run_parallel(std::int64_t begin, std::int64_t end, int chunks, void (*fn)(void*, std::int64_t, std::int64_t),
                  void* ctx);

/// Runs `body(lo, hi)` over [begin, end) split between threads, or in one call on this thread when
/// the range has fewer than 2 * `grain` items, one thread is set, or this is already a region.
template <typename F>
void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain, F&& body) {
    const std::int64_t n = end - begin;
    if (n <= 0) return;
    if (n < 2 * grain) {  // before asking the thread count: most calls of a small model's step end here
        body(begin, end);
        return;
    }
    const int threads = num_threads();
    if (threads == 1 || in_parallel_region()) {
        body(begin, end);
        return;
    }
    const int chunks = static_cast<int>(std::min<std::int64_t>(threads, n / grain));
    auto call = [](void* ctx, std::int64_t lo, std::int64_t hi) { (*static_cast<F*>(ctx))(lo, hi); };
    run_parallel(begin, end, chunks, call, &body);
}

/// Elements an elementwise kernel handles per thread at least (PyTorch's grain size).
constexpr std::int64_t kGrain = 32768;

/// Items per thread at least when each item is `per_item` elements of work: about kGrain elements.
inline std::int64_t grain_for(std::int64_t per_item) {
    return std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(per_item, 1));
}

}  // namespace xgrad::kernels::cpu
