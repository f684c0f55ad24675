// The CPU thread pool behind parallel_for, and xgrad::set_num_threads.
//
// Why not OpenMP: libgomp's idle threads spin for a long time after each region (its wait policy is
// fixed when the library loads), and on a busy 2-core machine that spinning took the CPU the other
// thread needed, dropping a training run from 26 to 7 steps/s. Here a worker spins for a few
// microseconds (a training step's next op usually comes sooner) and then sleeps on a futex.
#include "kernels/cpu/parallel.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "xgrad/parallel.hpp"

namespace xgrad::kernels::cpu {

namespace {

thread_local bool t_in_region [[gnu::tls_model("initial-exec")]] = false;

/// How long a worker spins for the next region before it sleeps on a futex: timed, not counted (a pause
/// takes 16 ns on one machine of ours and 140 cycles on others). Longer spins cost more than they gain:
/// at 200 µs, the bench's MLP step at 2 threads ran at 190-200 steps/s against 230-270 at 30 µs, the
/// spinning worker taking the core that OpenBLAS's helper thread needed for the step's products.
constexpr std::chrono::steady_clock::duration kWorkerSpin = std::chrono::microseconds(30);

/// The least and the most a region's caller spins waiting for chunks another thread is running,
/// before it sleeps (see Pool::run).
constexpr std::chrono::steady_clock::duration kCallerSpinMin = std::chrono::microseconds(20);
constexpr std::chrono::steady_clock::duration kCallerSpinMax = std::chrono::milliseconds(1);

/// The most chunks a region is split into (a claim word's field; parallel_for asks for at most one per
/// thread).
constexpr int kMaxChunks = 0xffff;

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/// Sets t_in_region for a scope.
struct RegionScope {
    RegionScope() { t_in_region = true; }
    ~RegionScope() { t_in_region = false; }
    RegionScope(const RegionScope&) = delete;
    RegionScope& operator=(const RegionScope&) = delete;
};

class Pool {
public:
    explicit Pool(int threads) : threads_(threads) {
        for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~Pool() {
        stop_.store(true, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
        generation_.notify_all();
        for (auto& t : workers_) t.join();
    }
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    /// Runs the region; false (nothing run) when another thread is running one right now.
    ///
    /// The region's chunks are claimed, not assigned: the caller and the workers take the next unclaimed
    /// chunk until none is left. A worker that the system has not run yet (asleep, or its core busy with
    /// another process) then delays nothing: the caller runs its chunks too. Before, with chunk i fixed
    /// to thread i, an exp of 65536 floats at 2 threads took 79 µs a call in 20 of 36 runs on a 2-core
    /// virtual machine (the caller waiting for a worker that was woken from sleep, and then sleeping
    /// itself), against 7.4 µs on one thread; now 5 µs, or 9 µs where the worker is not running. A
    /// chunk's bounds depend on the chunk alone, so results do not depend on which thread ran it.
    bool run(std::int64_t begin, std::int64_t end, int chunks, void (*fn)(void*, std::int64_t, std::int64_t),
             void* ctx) {
        std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
        if (!lock.owns_lock()) return false;
        fn_ = fn;
        ctx_ = ctx;
        begin_ = begin;
        end_ = end;
        chunks = std::min(chunks, kMaxChunks);
        error_ = nullptr;
        done_.store(0, std::memory_order_relaxed);
        const std::uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
        claim_.store(claim_word(gen, chunks), std::memory_order_release);
        generation_.store(gen, std::memory_order_release);
        generation_.notify_all();
        const auto start = std::chrono::steady_clock::now();
        run_chunks(gen);
        // Waiting for chunks that other threads are running, the caller spins for as long as its own
        // share took (at least kCallerSpinMin, at most kCallerSpinMax): the others, of the same size,
        // started about when it did and are about to end, and sleeping would cost a wake-up (conv2d's
        // per-image products, 0.3 ms a chunk on 2 threads, ran 2.5 times slower waking each time).
        // Longer than that, the thread running a chunk is probably not running now, and the caller
        // sleeps so that the system can give it this core.
        const auto now = std::chrono::steady_clock::now();
        const auto spin_until =
            now + std::clamp<std::chrono::steady_clock::duration>(now - start, kCallerSpinMin, kCallerSpinMax);
        bool spinning = true;
        int finished;
        for (int spin = 0; (finished = done_.load(std::memory_order_acquire)) != chunks; ++spin) {
            if (spinning && spin % 64 == 63) spinning = std::chrono::steady_clock::now() < spin_until;
            if (spinning)
                pause();
            else
                done_.wait(finished, std::memory_order_acquire);
        }
        if (error_) std::rethrow_exception(error_);
        return true;
    }

    int threads() const { return threads_; }

private:
    /// Where chunk `chunk` of the current region's `chunks` starts.
    std::int64_t lo(int chunk, int chunks) const {
        if (chunk >= chunks) return end_;
        return begin_ + (end_ - begin_) * chunk / chunks;
    }

    /// The claim word of region `gen` before any chunk is claimed: the generation, the number of chunks
    /// and the next chunk to claim, in one word, so that a thread still looking at a region that has
    /// ended (and whose parameters the next region may be rewriting) can claim nothing.
    static std::uint64_t claim_word(std::uint32_t gen, int chunks) {
        return std::uint64_t{gen} << 32 | static_cast<std::uint64_t>(chunks) << 16;
    }

    /// The next unclaimed chunk of region `gen` and the region's number of chunks, or chunk -1 when
    /// that region has none left (or is over).
    std::pair<int, int> claim(std::uint32_t gen) {
        std::uint64_t word = claim_.load(std::memory_order_acquire);
        for (;;) {
            const int chunks = static_cast<int>(word >> 16 & 0xffff), next = static_cast<int>(word & 0xffff);
            if (static_cast<std::uint32_t>(word >> 32) != gen || next >= chunks) return {-1, 0};
            if (claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
                return {next, chunks};
        }
    }

    /// Runs chunks of region `gen` while there are unclaimed ones; the first exception is kept for the
    /// caller.
    void run_chunks(std::uint32_t gen) {
        for (;;) {
            const auto [c, chunks] = claim(gen);
            if (c < 0) return;
            try {
                RegionScope scope;
                fn_(ctx_, lo(c, chunks), lo(c + 1, chunks));
            } catch (...) {
                std::lock_guard<std::mutex> guard(error_mutex_);
                if (!error_) error_ = std::current_exception();
            }
            if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done_.notify_one();
        }
    }

    void work() {
        std::uint32_t seen = 0;
        for (;;) {
            std::uint32_t g;
            auto spin_until = std::chrono::steady_clock::now() + kWorkerSpin;
            bool spinning = true;
            for (int spin = 0; (g = generation_.load(std::memory_order_acquire)) == seen; ++spin) {
                if (spinning && spin % 64 == 63) spinning = std::chrono::steady_clock::now() < spin_until;
                if (spinning)
                    pause();
                else
                    generation_.wait(seen, std::memory_order_acquire);
            }
            seen = g;
            if (stop_.load(std::memory_order_relaxed)) return;
            run_chunks(g);
        }
    }

    const int threads_;
    std::vector<std::thread> workers_;
    std::mutex busy_;
    std::mutex error_mutex_;
    std::exception_ptr error_;
    void (*fn_)(void*, std::int64_t, std::int64_t) = nullptr;
    void* ctx_ = nullptr;
    std::int64_t begin_ = 0, end_ = 0;
    std::atomic<std::uint32_t> generation_{0};
    std::atomic<std::uint64_t> claim_{0};  // claim_word(): generation, chunks, next chunk to claim
    std::atomic<int> done_{0};             // chunks of the current region finished
    std::atomic<bool> stop_{false};
};

/// OMP_NUM_THREADS when set to a positive number, else the CPUs this process may run on.
int default_threads() {
    if (const char* env = std::getenv("OMP_NUM_THREADS")) {
        char* end = nullptr;
        long n = std::strtol(env, &end, 10);
        if (end != env && n > 0) return static_cast<int>(std::min(n, 1024L));
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int> g_threads{0};  // 0: not yet decided
std::mutex g_pool_mutex;
std::unique_ptr<Pool> g_pool;

/// A forked child has none of the parent's threads: it forgets the parent's pool (without joining
/// threads that do not exist there) and makes its own on first use.
void forget_pool_in_child() {
    new (&g_pool_mutex) std::mutex;
    (void)g_pool.release();
}

Pool& pool() {
    static const int registered = pthread_atfork(nullptr, nullptr, forget_pool_in_child);
    (void)registered;
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    if (!g_pool || g_pool->threads() != num_threads()) {
        g_pool.reset();
        g_pool = std::make_unique<Pool>(num_threads());
    }
    return *g_pool;
}

}  // namespace

int num_threads() {
    int n = g_threads.load(std::memory_order_relaxed);
    if (n == 0) {
        int expected = 0;
        g_threads.compare_exchange_strong(expected, default_threads());
        n = g_threads.load(std::memory_order_relaxed);
        set_blas_threads(n);
    }
    return n;
}

bool in_parallel_region() {
    return t_in_region;
}

void run_parallel(std::int64_t begin, std::int64_t end, int chunks, void (*fn)(void*, std::int64_t, std::int64_t),
                  void* ctx) {
    if (!pool().run(begin, end, chunks, fn, ctx)) fn(ctx, begin, end);  // another thread holds the pool
}

}  // namespace xgrad::kernels::cpu

namespace xgrad {

void set_num_threads(int n) {
    if (n < 1)
        throw std::invalid_argument("set_num_threads: the number of threads must be at least 1, got " +
                                    std::to_string(n));
    kernels::cpu::g_threads.store(n, std::memory_order_relaxed);
    kernels::cpu::set_blas_threads(n);
}

int get_num_threads() {
    return kernels::cpu::num_threads();
}

}  // namespace xgrad
