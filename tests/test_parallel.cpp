// Checks xgrad::set_num_threads: the setting itself, and that kernels split between threads give
// the same bits as on one thread (sums keep PyTorch's order; rows and elements are split, not sums).
#include <doctest/doctest.h>

#include "golden.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
namespace F = xgrad::nn::functional;

namespace {

/// Every kernel family on inputs large enough to be split between threads.
std::vector<std::vector<double>> run_all() {
    xgrad::manual_seed(7);
    Tensor x = xgrad::randn({300, 700}).requires_grad_(true);
    Tensor row = xgrad::randn({700});
    Tensor col = xgrad::randn({300, 1});
    Tensor w = xgrad::randn({700}).requires_grad_(true), b = xgrad::randn({700}).requires_grad_(true);
    Tensor y = (x * row + col).tanh() - x.transpose(0, 1).contiguous().transpose(0, 1).exp() * 0.01;
    Tensor ln = F::layer_norm(y, xgrad::Shape{700}, w, b, 1e-5);
    Tensor rms = F::rms_norm(y, xgrad::Shape{700}, w, 1e-6);
    Tensor loss = (ln * rms).sum() + y.var(-1, true, false).sum() + y.mean(0).sum();
    loss.backward();
    std::vector<std::vector<double>> out;
    for (const Tensor& t : {loss, ln, rms, x.grad(), w.grad(), b.grad()})
        out.push_back(t.to(xgrad::kFloat64).to_vector<double>());
    return out;
}

}  // namespace

TEST_CASE("set_num_threads and get_num_threads") {
    const int before = xgrad::get_num_threads();
    CHECK(before >= 1);
    xgrad::set_num_threads(3);
    CHECK(xgrad::get_num_threads() == 3);
    golden::check_throws([] { xgrad::set_num_threads(0); }, {"set_num_threads", "at least 1", "0"});
    CHECK(xgrad::get_num_threads() == 3);
    xgrad::set_num_threads(before);
}

TEST_CASE("results do not depend on the number of threads") {
    xgrad::set_num_threads(1);
    auto one = run_all();
    for (int threads : {2, 3}) {
        xgrad::set_num_threads(threads);
        auto many = run_all();
        REQUIRE(many.size() == one.size());
        for (std::size_t i = 0; i < one.size(); ++i) {
            CAPTURE(threads);
            CAPTURE(i);
            CHECK(many[i] == one[i]);
        }
    }
}

TEST_CASE("a parallel region runs each chunk once, whichever thread claims it") {
    // Many short regions in a row: a worker still finishing one region, or waking late, must neither
    // run a chunk twice nor take one of the next region's.
    constexpr std::int64_t kEnd = 1000;
    std::vector<std::atomic<int>> hits(kEnd);
    struct Ctx {
        std::vector<std::atomic<int>>* hits;
        std::atomic<int> calls{0};
    };
    auto body = [](void* ctx, std::int64_t lo, std::int64_t hi) {
        auto* c = static_cast<Ctx*>(ctx);
        c->calls.fetch_add(1);
        for (std::int64_t i = lo; i < hi; ++i) (*c->hits)[i].fetch_add(1);
    };
    for (int threads : {2, 3}) {
        xgrad::set_num_threads(threads);
        for (int rep = 0; rep < 3000; ++rep) {
            const int chunks = 1 + rep % threads;
            const std::int64_t begin = rep % 7, end = kEnd - rep % 5;
            for (auto& h : hits) h.store(0);
            Ctx ctx{&hits};
            xgrad::kernels::cpu::run_parallel(begin, end, chunks, body, &ctx);
            int wrong = 0;
            for (std::int64_t i = 0; i < kEnd; ++i) wrong += hits[i].load() != (i >= begin && i < end ? 1 : 0);
            CAPTURE(threads);
            CAPTURE(rep);
            REQUIRE(wrong == 0);
            REQUIRE(ctx.calls.load() == chunks);
        }
    }
}

TEST_CASE("an exception in a chunk reaches the region's caller, and the pool stays usable") {
    xgrad::set_num_threads(2);
    std::atomic<int> ran{0};
    auto throwing = [](void* ctx, std::int64_t lo, std::int64_t) {
        static_cast<std::atomic<int>*>(ctx)->fetch_add(1);
        if (lo > 0) throw std::runtime_error("chunk failed");
    };
    for (int rep = 0; rep < 200; ++rep) {
        ran.store(0);
        CHECK_THROWS_WITH(xgrad::kernels::cpu::run_parallel(0, 100, 2, throwing, &ran), "chunk failed");
        CHECK(ran.load() == 2);  // the other chunk ran to its end
    }
    Tensor x = xgrad::ones({1 << 17}) * 3.0;
    CHECK(x.sum().item<float>() == 393216.0f);
}

TEST_CASE("a forked child runs parallel kernels with its own threads") {
    xgrad::set_num_threads(2);
    Tensor warm = xgrad::ones({1 << 17}) * 2.0;  // the parent's pool exists now
    CHECK(warm.sum().item<float>() == 262144.0f);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        Tensor x = xgrad::ones({1 << 17}) * 3.0;  // large enough to be split between threads
        _exit(x.sum().item<float>() == 393216.0f ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
