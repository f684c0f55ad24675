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
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "xgrad/parallel.hpp"

namespace xgrad::kernels::cpu {

namespace {

thread_local bool t_in_region [[gnu::tls_model("initial-exec")]] = false;

/// Spin iterations before a waiting thread sleeps (about 40 microseconds here).
constexpr int kSpins = 2000;

/// The longest a region's caller spins waiting for the other chunks beyond kSpins (see Pool::run).
constexpr std::chrono::steady_clock::duration kCallerSpinMax = std::chrono::milliseconds(1);

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
        for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
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
    bool run(std::int64_t begin, std::int64_t end, int chunks, void (*fn)(void*, std::int64_t, std::int64_t),
             void* ctx) {
        std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
        if (!lock.owns_lock()) return false;
        fn_ = fn;
        ctx_ = ctx;
        begin_ = begin;
        end_ = end;
        chunks_ = chunks;
        error_ = nullptr;
        remaining_.store(threads_ - 1, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
        generation_.notify_all();
        std::exception_ptr mine;
        const auto start = std::chrono::steady_clock::now();
        try {
            RegionScope scope;
            fn(ctx, lo(0), lo(1));
        } catch (...) {
            mine = std::current_exception();
        }
        // Waiting for the other chunks, the caller spins for kSpins, and on for as long as its own chunk
        // took (at most kCallerSpinMax): the others, of the same size, are then most likely running and
        // about to end, and waking from a futex costs tens to hundreds of microseconds on a virtual
        // machine (conv2d's per-image products, 0.3 ms a chunk on 2 threads, ran 2.5 times slower waking
        // each time). Longer than that, another chunk's thread is probably not running, and the caller
        // sleeps so that the system can give it this core.
        const auto now = std::chrono::steady_clock::now();
        const auto spin_until = now + std::min<std::chrono::steady_clock::duration>(now - start, kCallerSpinMax);
        bool spinning = true;
        int left;
        for (int spin = 0; (left = remaining_.load(std::memory_order_acquire)) != 0; ++spin) {
            if (spinning && spin >= kSpins && spin % 256 == 0) spinning = std::chrono::steady_clock::now() < spin_until;
            if (spinning)
                pause();
            else
                remaining_.wait(left, std::memory_order_acquire);
        }
        if (mine) std::rethrow_exception(mine);
        if (error_) std::rethrow_exception(error_);
        return true;
    }

    int threads() const { return threads_; }

private:
    std::int64_t lo(int chunk) const {
        if (chunk >= chunks_) return end_;
        return begin_ + (end_ - begin_) * chunk / chunks_;
    }

    void work(int index) {
        std::uint32_t seen = 0;
        for (;;) {
            std::uint32_t g;
            for (int spin = 0; (g = generation_.load(std::memory_order_acquire)) == seen;) {
                if (spin < kSpins) {
                    ++spin;
                    pause();
                } else {
                    generation_.wait(seen, std::memory_order_acquire);
                }
            }
            seen = g;
            if (stop_.load(std::memory_order_relaxed)) return;
            if (index < chunks_) {
                try {
                    RegionScope scope;
                    fn_(ctx_, lo(index), lo(index + 1));
                } catch (...) {
                    std::lock_guard<std::mutex> guard(error_mutex_);
                    if (!error_) error_ = std::current_exception();
                }
            }
            if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
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
    int chunks_ = 0;
    std::atomic<std::uint32_t> generation_{0};
    std::atomic<int> remaining_{0};
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
