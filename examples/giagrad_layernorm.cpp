// giagrad's nn.LayerNorm API page (notebook 001) run with xgrad: its NLP and image examples.
//
// `>>>` lines are the page's own example code (giagrad's Python). The page prints no values, so
// this program prints what the examples demonstrate, from a fixed seed (123): the shapes, and
// that every normalised group ends up with mean ≈ 0 and standard deviation ≈ 1. It exits with
// status 1 if any check fails.
//
//   y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta
// E and Var are taken over the last `dimensions` axes of the input, Var with ddof = 0 (divide by
// n); gamma (ones) and beta (zeros) have the shape input.shape[-dimensions:].
#include <xgrad/xgrad.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

using xgrad::Tensor;
namespace nn = xgrad::nn;

bool all_ok = true;

// Prints a check and remembers failures.
void check(const char* what, bool ok) {
    std::cout << what << ": " << (ok ? "True" : "False") << "\n";
    all_ok = all_ok && ok;
}

// The statistics of `y` over its last `dimensions` axes: each group's mean should be ≈ 0 and its
// population standard deviation ≈ 1 (a little below: eps is added to the variance).
void print_statistics(const Tensor& y, std::int64_t dimensions) {
    xgrad::NoGradGuard no_grad;
    std::vector<std::int64_t> axes;
    for (std::int64_t i = 0; i < dimensions; ++i) axes.push_back(-(i + 1));
    xgrad::Dims dims(axes);
    Tensor mean = y.mean(dims), std = y.std(dims, /*unbiased=*/false);
    std::cout << "per-group statistics over the last " << dimensions << " axes (" << mean.numel() << " groups of "
              << y.numel() / mean.numel() << " values):\n";
    Tensor max_mean = mean.abs().max(), max_std_dev = (std - 1.0).abs().max();
    std::cout << "  max |mean|    = " << max_mean << "\n";
    std::cout << "  max |std - 1| = " << max_std_dev << "\n";
    check("  max |mean| < 1e-6 and max |std - 1| < 1e-3",
          max_mean.item<double>() < 1e-6 && max_std_dev.item<double>() < 1e-3);
}

// The formula above written out with primitive ops, to compare with the module.
Tensor layer_norm_by_hand(const Tensor& x, std::int64_t dimensions, double eps = 1e-5) {
    std::vector<std::int64_t> axes;
    for (std::int64_t i = 0; i < dimensions; ++i) axes.push_back(-(i + 1));
    xgrad::Dims dims(axes);
    Tensor mean = x.mean(dims, /*keepdim=*/true);
    Tensor var = x.var(dims, /*unbiased=*/false, /*keepdim=*/true);  // ddof = 0
    return (x - mean) / (var + eps).sqrt();
}

bool close(const Tensor& a, const Tensor& b) {
    return (a - b).abs().max().item<double>() < 1e-5;
}

int main() {
    xgrad::set_printoptions({.sci_mode = false});
    xgrad::manual_seed(123);

    // ---- NLP Example: normalise each word's embedding --------------------------------------
    std::cout << ">>> batch, sentence_length, embedding_dim = 20, 5, 10\n";
    const std::int64_t batch = 20, sentence_length = 5, embedding_dim = 10;
    std::cout << ">>> embedding = Tensor.empty(batch, sentence_length, embedding_dim).uniform()\n";
    Tensor embedding = xgrad::empty({batch, sentence_length, embedding_dim});
    xgrad::uniform_(embedding);  // uniform in [0, 1)
    std::cout << ">>> layer_norm = nn.LayerNorm(dimensions=1)\n";
    nn::LayerNorm layer_norm(1);
    // Until it sees an input, the layer knows only how many axes it normalises.
    std::cout << layer_norm << "\n";
    std::cout << ">>> # Activate module\n>>> layer_norm(embedding)\n";
    Tensor out = layer_norm(embedding);
    std::cout << "output shape: " << out.shape() << "\n";
    // The first input fixes the normalised shape, and gamma and beta take it.
    std::cout << layer_norm << "\n";
    std::cout << "gamma (weight): " << layer_norm.weight.shape() << ", beta (bias): " << layer_norm.bias.shape()
              << "\n";
    print_statistics(out, 1);
    check("equal to (x - mean) / sqrt(var + eps) with var over the last axis, ddof = 0",
          close(out, layer_norm_by_hand(embedding, 1)));
    // Statistics come from the input in evaluation mode too: no running averages.
    layer_norm.eval();
    check("the same output in evaluation mode", close(layer_norm(embedding), out));
    std::cout << "\n";

    // The same embeddings normalised per sentence: dimensions=2 covers (sentence_length, embedding_dim).
    std::cout << ">>> layer_norm = nn.LayerNorm(dimensions=2)\n>>> layer_norm(embedding)\n";
    nn::LayerNorm sentence_norm(2);
    Tensor out2 = sentence_norm(embedding);
    std::cout << "output shape: " << out2.shape() << "\n";
    std::cout << sentence_norm << "\n";
    std::cout << "gamma (weight): " << sentence_norm.weight.shape() << ", beta (bias): " << sentence_norm.bias.shape()
              << "\n";
    print_statistics(out2, 2);
    check("equal to the formula over the last two axes", close(out2, layer_norm_by_hand(embedding, 2)));
    std::cout << "\n";

    // ---- Image Example: normalise each image over its channels and pixels --------------------
    std::cout << ">>> N, C, H, W = 20, 5, 10, 10\n";
    const std::int64_t N = 20, C = 5, H = 10, W = 10;
    std::cout << ">>> input = torch.randn(N, C, H, W)\n";
    Tensor input = xgrad::randn({N, C, H, W});
    // Normalise over the last three dimensions (i.e. the channel and spatial dimensions).
    std::cout << ">>> layer_norm = nn.LayerNorm(dimensions=3)\n";
    nn::LayerNorm image_norm(3);
    std::cout << ">>> output = layer_norm(input)\n";
    Tensor output = image_norm(input);
    std::cout << "output shape: " << output.shape() << "\n";
    std::cout << image_norm << "\n";
    std::cout << "gamma (weight): " << image_norm.weight.shape() << ", beta (bias): " << image_norm.bias.shape()
              << "\n";
    print_statistics(output, 3);
    check("equal to the formula over the last three axes", close(output, layer_norm_by_hand(input, 3)));
    // PyTorch's form names the sizes instead of counting axes; the two agree.
    nn::LayerNorm torch_form(xgrad::Shape{C, H, W});
    check("the same as PyTorch's form LayerNorm({5, 10, 10})", close(torch_form(input), output));

    // Without elementwise_affine there is nothing to learn.
    nn::LayerNorm plain(3, 1e-5, /*elementwise_affine=*/false);
    std::cout << plain << " has " << plain.parameters().size() << " parameters\n";
    check("the same output without gamma and beta (they start at 1 and 0)", close(plain(input), output));
    return all_ok ? 0 : 1;
}
