// Notebook 004 ("Layer Normalization & Residual Connections") reproduced with xgrad.
//
// Each `>>>` line is the notebook's Python statement; the lines after it are what it printed.
// Part 1 normalises a fixed 2×1×3 tensor over its last two axes: every output is checked against
// the notebook. Part 2 feeds a (5, 3, 8) batch from an unseeded torch.randn to the notebook's
// class; we seed it (123), so only its shapes and its statistics can match the notebook's.
#include <xgrad/xgrad.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using xgrad::Shape;
using xgrad::Tensor;
namespace nn = xgrad::nn;

// Python's repr() of a str: in quotes, with newlines and backslashes escaped.
std::string python_repr(const std::string& s) {
    // Python uses single quotes unless the text holds a single quote and no double quote.
    const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
    std::string out(1, q);
    for (char c : s) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\\' || c == q)
            out += std::string("\\") + c;
        else
            out += c;
    }
    return out + q;
}

// How IPython displays a pair: on one line when it fits in 79 characters, else broken after the comma.
std::string ipython_pair(const std::string& a, const std::string& b) {
    if (a.size() + b.size() + 4 <= 79) return "(" + a + ", " + b + ")";
    return "(" + a + ",\n " + b + ")";
}

std::string str(const Shape& s) {
    std::ostringstream os;
    os << s;
    return os.str();
}

// The last `n` sizes of a shape, as Python's `size[-n:]`.
Shape last(const Shape& s, std::int64_t n) {
    return Shape(std::vector<std::int64_t>(s.end() - n, s.end()));
}

// Python's `[-(i + 1) for i in range(n)]`: the last n axes, innermost first.
std::vector<std::int64_t> last_dims(std::int64_t n) {
    std::vector<std::int64_t> dims;
    for (std::int64_t i = 0; i < n; ++i) dims.push_back(-(i + 1));
    return dims;
}

// The notebook's class: normalise over the trailing axes of `parameters_shape`, then apply the
// learnable gamma (ones) and beta (zeros) of that shape, printing each step.
// (The notebook's forward reads the global `inputs` instead of its argument; it is always called
// with `inputs`, so using the argument changes nothing.)
struct LayerNormalization : nn::Module {
    Shape parameters_shape;
    double eps;
    Tensor gamma, beta;

    explicit LayerNormalization(Shape parameters_shape, double eps = 1e-5)
        : parameters_shape(parameters_shape),
          eps(eps),
          gamma(xgrad::ones(parameters_shape).requires_grad_()),
          beta(xgrad::zeros(parameters_shape).requires_grad_()) {
        register_parameter("gamma", gamma);
        register_parameter("beta", beta);
    }

    Tensor forward(const Tensor& inputs) override {
        xgrad::Dims dims(last_dims(parameters_shape.size()));  // the axes to normalise
        Tensor mean = inputs.mean(dims, /*keepdim=*/true);     // mean over (dims)
        std::cout << "...     print(f\"Mean \\n ({mean.size()}): \\n {mean}\")\n"
                  << "Mean \n (" << mean.shape() << "): \n " << mean << "\n";
        Tensor var = (inputs - mean).pow(2).mean(dims, /*keepdim=*/true);  // population variance
        Tensor std = (var + eps).sqrt();                                   // eps keeps it above 0
        std::cout << "...     print(f\"Standard Deviation \\n ({std.size()}): \\n {std}\")\n"
                  << "Standard Deviation \n (" << std.shape() << "): \n " << std << "\n";
        Tensor y = (inputs - mean) / std;  // the normalisation
        std::cout << "...     print(f\"y \\n ({y.size()}) = \\n {y}\")\n"
                  << "y \n (" << y.shape() << ") = \n " << y << "\n";
        Tensor out = gamma * y + beta;  // the learnable part
        std::cout << "...     print(f\"out \\n ({out.size()}) = \\n {out}\")\n"
                  << "out \n (" << out.shape() << ") = \n " << out << "\n";
        return out;
    }
};

int main() {
    // ---- Part 1: a fixed input of B=1 sentence, S=2 words, E=3 embedding values --------------
    Tensor inputs = xgrad::tensor({{{0.2, 0.1, 0.3}, {0.5, 0.1, 0.1}}});
    const std::int64_t B = inputs.size(0), S = inputs.size(1), E = inputs.size(2);
    inputs = inputs.reshape({S, B, E});  // (S, B, E): words first, as in a transformer
    std::cout << ">>> inputs.size()\n" << inputs.shape() << "\n\n";

    // gamma and beta cover the last two axes (B, E); they start at ones and zeros and are learned.
    Shape parameter_shape = last(inputs.shape(), 2);
    Tensor gamma = xgrad::ones(parameter_shape).requires_grad_();
    Tensor beta = xgrad::zeros(parameter_shape).requires_grad_();
    std::cout << ">>> gamma.size(), beta.size()\n" << ipython_pair(str(gamma.shape()), str(beta.shape())) << "\n\n";

    // The axes to normalise over: the last len(parameter_shape) of them.
    std::vector<std::int64_t> dims = last_dims(parameter_shape.size());
    std::cout << ">>> dims\n[";
    for (std::size_t i = 0; i < dims.size(); ++i) std::cout << (i ? ", " : "") << dims[i];
    std::cout << "]\n\n";

    // Mean over the batch and embedding axes: one per word.
    Tensor mean = inputs.mean(xgrad::Dims(dims), /*keepdim=*/true);
    std::cout << ">>> print(f\"The size of this mean matrix is : {mean.size()}\")\n"
              << "The size of this mean matrix is : " << mean.shape() << "\n";
    std::cout << ">>> print(f\"The mean is : {mean}\")\n"
              << "The mean is : " << mean << "\n\n";

    // The standard deviation, with a small epsilon so that it can never be 0 (it divides).
    Tensor var = (inputs - mean).pow(2).mean(xgrad::Dims(dims), /*keepdim=*/true);
    const double epsilon = 1e-5;
    Tensor std = (var + epsilon).sqrt();
    std::cout << ">>> (f\"The Standard Deviation is : {std}\")\n"
              << python_repr("The Standard Deviation is : " + xgrad::to_string(std)) << "\n\n";

    // y = (x - mean) / std, then the learnable scale and shift.
    Tensor y = (inputs - mean) / std;
    std::cout << ">>> y\n" << y << "\n\n";
    Tensor out = gamma * y + beta;
    std::cout << ">>> out\n" << out << "\n\n";

    // xgrad's built-in layer in PyTorch's form, nn.LayerNorm(parameter_shape), agrees.
    nn::LayerNorm builtin(parameter_shape);
    bool same = (builtin(inputs) - out).abs().max().item<double>() < 1e-6;
    std::cout << "xgrad: " << builtin << " gives the same out (max |difference| < 1e-6): " << (same ? "True" : "False")
              << "\n\n";

    // ---- Part 2: the class on a batch of 3 sentences of 5 words, 8 embedding values each -----
    const std::int64_t batch_size = 3, sentence_length = 5, embedding_dim = 8;
    // The notebook draws these unseeded; we seed so that this program always prints the same.
    xgrad::manual_seed(123);
    inputs = xgrad::randn({sentence_length, batch_size, embedding_dim});
    std::cout << ">>> print(f\"input \\n ({inputs.size()}) = \\n {inputs}\")\n"
              << "input \n (" << inputs.shape() << ") = \n " << inputs << "\n\n";

    // Normalise over the embedding axis only: parameters_shape = inputs.size()[-1:].
    LayerNormalization layer_norm(last(inputs.shape(), 1));
    std::cout << ">>> out = layer_norm.forward(inputs)\n";
    out = layer_norm.forward(inputs);
    std::cout << "\n";

    // Over one sentence position (3 × 8 values) the mean is ≈ 0. The std is not 1 but
    // sqrt(24/23) ≈ 1.0215 whatever the data: each row of 8 has population variance ≈ 1, and
    // std() divides by n - 1 = 23. So the notebook's 1.0215 is reproduced; its mean is noise.
    std::cout << ">>> out[0].mean(), out[0].std()\n"
              << ipython_pair(xgrad::to_string(out[0].mean()), xgrad::to_string(out[0].std())) << "\n\n";

    // What the notebook demonstrates, checked on all 15 normalised rows: mean ≈ 0 and
    // population std ≈ 1 (slightly below: eps is added to the variance).
    Tensor row_mean = out.mean(-1), row_std = out.std(-1, /*unbiased=*/false);
    double max_mean = row_mean.abs().max().item<double>();
    double max_std_dev = (row_std - 1.0).abs().max().item<double>();
    bool ok = max_mean < 1e-6 && max_std_dev < 1e-4;
    std::cout << "over the " << row_mean.numel() << " rows of " << embedding_dim
              << ": max |mean| < 1e-6: " << (max_mean < 1e-6 ? "True" : "False")
              << ", max |std - 1| < 1e-4: " << (max_std_dev < 1e-4 ? "True" : "False") << "\n";

    // xgrad's built-in nn::LayerNorm(1) (giagrad's form: the last axis) gives the same numbers.
    nn::LayerNorm ln(1);
    bool same2 = (ln(inputs) - out).abs().max().item<double>() < 1e-5;
    std::cout << "xgrad: " << ln << " gives the same out (max |difference| < 1e-5): " << (same2 ? "True" : "False")
              << "\n";
    return ok && same && same2 ? 0 : 1;
}
