// Notebook 003 (RCortez25, "Layer Normalization", Colab) reproduced with xgrad, output for output.
//
// Each `>>>` line is the notebook's Python statement; the lines after it are what it printed.
// Every printed value comes from torch.manual_seed(123), so all of them are checked against the
// notebook by the `notebook_layernorm_module` test.
#include <xgrad/xgrad.hpp>

#include <iostream>

using xgrad::Tensor;
namespace nn = xgrad::nn;

// The notebook's own layer: normalise each row over the last axis (population variance, eps
// inside the square root), then scale by gamma and shift by beta, one of each per feature.
struct LayerNormalization : nn::Module {
    double epsilon = 1e-5;  // keeps the division finite when a row is constant
    Tensor gamma, beta;

    explicit LayerNormalization(std::int64_t embedding_dimension)
        : gamma(xgrad::ones({embedding_dimension})), beta(xgrad::zeros({embedding_dimension})) {
        gamma.requires_grad_();  // nn.Parameter: a trainable leaf
        beta.requires_grad_();
        register_parameter("gamma", gamma);
        register_parameter("beta", beta);
    }

    Tensor forward(const Tensor& x) override {
        Tensor mean = x.mean(-1, /*keepdim=*/true);
        // The notebook calls it `std`, but it is the (biased) variance: the sqrt comes next.
        Tensor std = x.var(-1, /*unbiased=*/false, /*keepdim=*/true);
        Tensor normalized_x = (x - mean) / xgrad::sqrt(std + epsilon);
        return gamma * normalized_x + beta;
    }
};

int main() {
    // # Example: a batch of two samples with five features each.
    xgrad::manual_seed(123);
    Tensor batch_example = xgrad::randn({2, 5});
    std::cout << ">>> batch_example\n" << batch_example << "\n\n";

    // A Linear layer maps the 5 features of each sample to 6, then a ReLU.
    // The notebook's printed outputs are what PyTorch gives after this cell has run three times
    // since seeding: every run builds a new Linear, which draws a new weight and bias. The notebook
    // does not show the repeats (its cells have no execution counts), so we replay them: the first
    // two layers are built and thrown away, exactly as re-running the cell did.
    nn::Sequential layer;
    for (int run = 1; run <= 3; ++run) layer = nn::Sequential(nn::Linear(5, 6), nn::ReLU());
    Tensor outputs = layer(batch_example);
    std::cout << ">>> outputs\n" << outputs << "\n\n";

    // outputs.mean() and outputs.var() would reduce the whole tensor; we want one mean and one
    // variance per sample, i.e. per row.
    Tensor mean_batch = outputs.mean(1, /*keepdim=*/true);
    Tensor var_batch = outputs.var(1, /*unbiased=*/true, /*keepdim=*/true);
    std::cout << ">>> print(mean_batch)\n" << mean_batch << "\n";
    std::cout << ">>> print(var_batch)\n" << var_batch << "\n\n";

    // Without keepdim the reduced axis disappears: a flat vector instead of one value per row.
    Tensor mean_batch_ = outputs.mean(1);
    Tensor var_batch_ = outputs.var(1);
    std::cout << ">>> print(mean_batch_)\n" << mean_batch_ << "\n";
    std::cout << ">>> print(var_batch_)\n" << var_batch_ << "\n\n";

    // keepdim=True keeps the (2, 1) shape, so it broadcasts against the (2, 6) outputs.
    Tensor normalized_outputs = (outputs - mean_batch) / xgrad::sqrt(var_batch + 1e-5);
    std::cout << ">>> normalized_outputs\n" << normalized_outputs << "\n\n";

    // Each row now has mean 0 and variance (almost) 1; the unbiased var and the eps keep it a
    // little under 1.
    std::cout << ">>> print(f'Means:\\n {normalized_outputs.mean(dim=1, keepdim=True)}')\n"
              << "Means:\n " << normalized_outputs.mean(1, true) << "\n";
    std::cout << ">>> print(f'Variances:\\n {normalized_outputs.var(dim=1, keepdim=True)}')\n"
              << "Variances:\n " << normalized_outputs.var(1, true, true) << "\n\n";

    // Without scientific notation the tiny means read as zeros.
    xgrad::set_printoptions({.sci_mode = false});
    std::cout << ">>> torch.set_printoptions(sci_mode=False)\n";
    std::cout << ">>> print(f'Means:\\n {normalized_outputs.mean(dim=1, keepdim=True)}')\n"
              << "Means:\n " << normalized_outputs.mean(1, true) << "\n";
    std::cout << ">>> print(f'Variances:\\n {normalized_outputs.var(dim=1, keepdim=True)}')\n"
              << "Variances:\n " << normalized_outputs.var(1, true, true) << "\n\n";

    // # Creation of the layer: gamma and beta are learned during training.
    LayerNormalization oLayerNormalization(/*embedding_dimension=*/5);
    Tensor outputs_layerNormalization = oLayerNormalization(batch_example);
    std::cout << ">>> print(f'Outputs:\\n {outputs_layerNormalization}')\n"
              << "Outputs:\n " << outputs_layerNormalization << "\n\n";

    Tensor mean = outputs_layerNormalization.mean(1, true);
    Tensor var = outputs_layerNormalization.var(1, /*unbiased=*/false, /*keepdim=*/true);
    std::cout << ">>> print(f'Means:\\n {mean}')\n"
              << "Means:\n " << mean << "\n";
    std::cout << ">>> print(f'Variances:\\n {var}')\n"
              << "Variances:\n " << var << "\n\n";

    // xgrad's built-in layer does the same computation in one fused kernel.
    nn::LayerNorm builtin({5});
    double diff = (builtin(batch_example) - outputs_layerNormalization).abs().max().item<double>();
    std::cout << "xgrad: " << builtin
              << " gives the same outputs (max |difference| < 1e-6): " << (diff < 1e-6 ? "True" : "False") << "\n";
    return diff < 1e-6 ? 0 : 1;
}
