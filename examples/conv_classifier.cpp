// A small convolutional classifier on generated 16×16 images: a horizontal bar, a vertical bar or a
// filled square, drawn at a random place under Gaussian noise. Conv2d → ReLU → MaxPool2d → Conv2d →
// ReLU → AdaptiveAvgPool2d → Flatten → Linear, trained with Adam; prints the loss and the accuracy
// (argmax of the logits) on held-out images.
//
//   conv_classifier [--steps N] [--print-losses]
//
// tests/golden/gen_conv_classifier.py builds the same network in PyTorch 1.13 with the same seeds and
// the same images; the test `conv_classifier_matches_torch` compares the first 50 losses with its curve.
#include <xgrad/xgrad.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <utility>
#include <vector>

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;

namespace {

constexpr std::int64_t kSize = 16;    // images are kSize × kSize, one channel
constexpr std::int64_t kClasses = 3;  // horizontal bar, vertical bar, square
constexpr std::int64_t kBatch = 32;
constexpr std::int64_t kEvalSize = 300;
constexpr double kNoise = 0.5;  // standard deviation of the noise on pixels of 0 and 1
constexpr double kLr = 1e-2;
constexpr std::uint64_t kModelSeed = 0, kDataSeed = 1, kEvalSeed = 2;

// [data]
// n images (n, 1, 16, 16) and their labels (n): class c from randint(3), a place (a, b) from
// randint(12, (n, 2)), noise from randn. Class 0 lights rows a, a+1; class 1 columns a, a+1; class 2
// the 5 × 5 square at rows a.., columns b...
std::pair<Tensor, Tensor> images(std::int64_t n, xgrad::Generator& gen) {
    Tensor labels = xgrad::randint(kClasses, {n}, xgrad::kInt64, &gen);
    auto c = labels.to_vector<std::int64_t>();
    auto at = xgrad::randint(kSize - 4, {n, 2}, xgrad::kInt64, &gen).to_vector<std::int64_t>();
    Tensor noise = xgrad::randn({n, 1, kSize, kSize}, {}, &gen);
    std::vector<float> pixels(static_cast<std::size_t>(n * kSize * kSize), 0.0f);
    for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t a = at[2 * i], b = at[2 * i + 1];
        float* img = pixels.data() + i * kSize * kSize;
        for (std::int64_t r = 0; r < kSize; ++r)
            for (std::int64_t q = 0; q < kSize; ++q) {
                bool on = c[i] == 0   ? r == a || r == a + 1
                          : c[i] == 1 ? q == a || q == a + 1
                                      : r >= a && r < a + 5 && q >= b && q < b + 5;
                img[r * kSize + q] = on ? 1.0f : 0.0f;
            }
    }
    return {xgrad::from_vector(pixels, {n, 1, kSize, kSize}) + noise * kNoise, labels};
}
// [data]

// The fraction of `y` that the argmax of model(x) gets right.
double accuracy(nn::Module& model, const Tensor& x, const Tensor& y) {
    xgrad::NoGradGuard no_grad;
    auto predicted = model(x).argmax(1).to_vector<std::int64_t>();  // (n)
    auto labels = y.to_vector<std::int64_t>();
    std::size_t right = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) right += predicted[i] == labels[i];
    return static_cast<double>(right) / static_cast<double>(labels.size());
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 200;
    bool print_losses = false;
    CLI::App app("Trains a small conv net to tell bars from squares in generated images.", "conv_classifier");
    app.add_option("--steps", steps, "Training steps")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_flag("--print-losses", print_losses, "Print only the loss of every step (%.9g), for the tests");
    CLI11_PARSE(app, argc, argv);

    // [model]
    xgrad::manual_seed(kModelSeed);
    nn::Sequential model(nn::Conv2d(1, 8, 3, /*stride=*/1, /*padding=*/1), nn::ReLU(), nn::MaxPool2d(2),
                         nn::Conv2d(8, 16, 3, 1, 1), nn::ReLU(), nn::AdaptiveAvgPool2d(1), nn::Flatten(),
                         nn::Linear(16, kClasses));
    optim::Adam opt(model.parameters(), {.lr = kLr});
    // [model]
    xgrad::Generator eval_gen(kEvalSeed), data_gen(kDataSeed);
    auto [eval_x, eval_y] = images(kEvalSize, eval_gen);
    if (!print_losses) std::cout << model << "\n";

    // [train]
    double seconds = 0;  // training only: the held-out evaluations are not timed
    for (int step = 1; step <= steps; ++step) {
        auto start = std::chrono::steady_clock::now();
        auto [x, y] = images(kBatch, data_gen);
        Tensor loss = F::cross_entropy(model(x), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
        double l = loss.item<double>();
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (print_losses)
            std::printf("%.9g\n", l);
        else if (step == 1 || step % 25 == 0)
            std::printf("step %4d  loss %.4f  held-out accuracy %5.1f%%\n", step, l,
                        100 * accuracy(model, eval_x, eval_y));
    }
    // [train]
    if (!print_losses)
        std::printf("%.2f ms per training step (%d threads)\n", 1e3 * seconds / steps, xgrad::get_num_threads());
}
