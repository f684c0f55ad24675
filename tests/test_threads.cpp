// Separate models trained in separate threads at once (modules built from the shared default
// generator, the kernels' thread pool shared too) give each thread the result it gets alone. The
// ThreadSanitizer run in .ci/run builds and runs this suite.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;

namespace {

/// Trains a small LayerNorm MLP for a few Adam steps on data from `seed`; returns the losses.
std::vector<float> train(std::uint64_t seed) {
    // Built from the default generator, which other threads draw from at the same time ...
    nn::Sequential model(nn::Linear(16, 64), nn::LayerNorm({64}), nn::ReLU(), nn::Linear(64, 4));
    // ... so the values come from this thread's own generator, to compare with a run alone.
    xgrad::Generator gen(seed);
    {
        xgrad::NoGradGuard no_grad;
        for (Tensor& p : model.parameters()) xgrad::uniform_(p, -0.2, 0.2, &gen);
    }
    const Tensor x = xgrad::randn({256, 16}, {}, &gen);  // large enough for the kernels to split rows
    const Tensor y = xgrad::randn({256, 4}, {}, &gen);
    xgrad::optim::Adam opt(model.parameters(), {.lr = 1e-2});
    std::vector<float> losses;
    for (int step = 0; step < 15; ++step) {
        opt.zero_grad();
        Tensor loss = F::mse_loss(model(x), y);
        loss.backward();
        opt.step();
        losses.push_back(loss.item<float>());
    }
    return losses;
}

}  // namespace

TEST_CASE("models trained in four threads at once match the same models trained alone") {
    xgrad::set_num_threads(2);
    std::vector<std::vector<float>> alone;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) alone.push_back(train(seed));
    std::vector<std::vector<float>> together(4);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < 4; ++i) threads.emplace_back([&, i] { together[i] = train(i + 1); });
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < 4; ++i) {
        INFO("thread " << i);
        CHECK(together[i] == alone[i]);
        CHECK(alone[i].back() < alone[i].front());  // it did train
    }
}
