// A character-level language model in the shape of a tiny GPT: Embedding → pre-norm blocks of causal
// self-attention and an MLP (RMSNorm, residuals) → RMSNorm → Linear to the vocabulary. Trained with
// AdamW on a few paragraphs written for this program, then it writes text one character at a time.
//
//   char_lm [--steps N] [--print-losses] [--sample N]
//
// tests/golden/gen_char_lm.py builds the same model in PyTorch 1.13 with the same seeds (the modules
// are constructed in the same order, so the initial weights are bit-identical) and the same batches;
// the test `char_lm_matches_torch` compares the first 50 losses with its curve.
#include <xgrad/xgrad.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;

namespace {

// Written for this example; any plain text works.
const char* const kText =
    "The lighthouse keeper walked up the spiral stairs every evening at the same hour. "
    "He carried a small lamp, a notebook and a flask of tea. At the top he cleaned the glass, "
    "wound the clockwork that turned the great lens, and wrote the weather in his notebook: "
    "wind from the west, light rain, a ship far out to the north.\n"
    "The keeper liked the quiet. The sea talked all night, the gulls argued at dawn, and the "
    "light went round and round. Some nights he counted the turns of the lens and lost count "
    "somewhere after a thousand. Some nights he read old letters from his sister, who lived in "
    "the city and asked him every winter to come home.\n"
    "In the spring a boat brought a young woman who wanted to learn the work. She asked about "
    "the lens, the clockwork, the oil and the weather, and she wrote everything down. By the "
    "summer she could climb the stairs faster than he could, and by the autumn she kept the "
    "light alone while he sat by the window and watched the ships go by.\n";

constexpr std::int64_t kContext = 32;  // characters the model sees (T)
constexpr std::int64_t kBatch = 16;    // sequences per step (B)
constexpr std::int64_t kEmbed = 48;    // model width (C)
constexpr std::int64_t kHeads = 4;
constexpr int kBlocks = 2;
constexpr double kLr = 3e-3;
constexpr std::uint64_t kModelSeed = 0;   // initial weights
constexpr std::uint64_t kDataSeed = 1;    // training batches
constexpr std::uint64_t kSampleSeed = 2;  // sampling

// An additive (t, t) mask: 0 on and below the diagonal, -inf above, so position i sees 0..i.
Tensor causal_mask(std::int64_t t) {
    return xgrad::full({t, t}, -std::numeric_limits<double>::infinity()).triu(1);
}

// [model]
// One pre-norm block: x + attn(norm1(x)), then x + mlp(norm2(x)).
struct Block : nn::Module {
    nn::RMSNorm norm1{xgrad::Shape{kEmbed}};
    nn::MultiheadAttention attn{kEmbed, kHeads, {.batch_first = true}};
    nn::RMSNorm norm2{xgrad::Shape{kEmbed}};
    nn::Linear fc1{kEmbed, 4 * kEmbed}, fc2{4 * kEmbed, kEmbed};

    Block() {
        register_module("norm1", norm1);
        register_module("attn", attn);
        register_module("norm2", norm2);
        register_module("fc1", fc1);
        register_module("fc2", fc2);
    }

    Tensor forward(const Tensor& x) override {  // x (B, T, C)
        Tensor h = norm1(x);
        Tensor y = x + attn.forward(h, h, h, causal_mask(x.shape()[1]), /*need_weights=*/false).first;
        return y + fc2(F::gelu(fc1(norm2(y))));
    }
};

struct CharLM : nn::Module {
    nn::Embedding tok, pos;  // (V, C) and (T, C)
    nn::ModuleList blocks;
    nn::RMSNorm norm{xgrad::Shape{kEmbed}};
    std::shared_ptr<nn::Linear> head;  // C → V

    // The weights are drawn in PyTorch's __init__ order: tok, pos, the blocks, head.
    explicit CharLM(std::int64_t vocab) : tok(vocab, kEmbed), pos(kContext, kEmbed) {
        for (int i = 0; i < kBlocks; ++i) blocks.push_back(Block());
        head = std::make_shared<nn::Linear>(kEmbed, vocab);
        register_module("tok", tok);
        register_module("pos", pos);
        register_module("blocks", blocks);
        register_module("norm", norm);
        register_module("head", head);
    }

    Tensor forward(const Tensor& idx) override {  // idx (B, T) int64 → logits (B, T, V)
        std::int64_t t = idx.shape()[1];
        Tensor x = tok(idx) + pos(xgrad::arange(static_cast<double>(t), xgrad::kInt64));
        for (const auto& block : blocks) x = (*block)(x);
        return (*head)(norm(x));
    }
};
// [model]

// [data]
// B random windows of the text: inputs text[i, i+T) and targets text[i+1, i+T+1).
std::pair<Tensor, Tensor> batch(const std::vector<std::int64_t>& data, xgrad::Generator& gen) {
    auto starts = xgrad::randint(static_cast<std::int64_t>(data.size()) - kContext, {kBatch}, xgrad::kInt64, &gen)
                      .to_vector<std::int64_t>();
    std::vector<std::int64_t> x, y;
    for (std::int64_t s : starts)
        for (std::int64_t j = 0; j < kContext; ++j) {
            x.push_back(data[s + j]);
            y.push_back(data[s + j + 1]);
        }
    return {xgrad::from_vector(x, {kBatch, kContext}, xgrad::kInt64),
            xgrad::from_vector(y, {kBatch, kContext}, xgrad::kInt64)};
}
// [data]

// Draws `n` characters after `prompt`: softmax of the last position's logits, then the inverse CDF
// at a uniform number from `gen`: a draw from the categorical distribution (xgrad has no multinomial).
std::string sample(CharLM& model, const std::string& vocab, const std::string& prompt, int n, xgrad::Generator& gen) {
    xgrad::NoGradGuard no_grad;
    model.eval();
    std::vector<std::int64_t> ids;
    for (char c : prompt) ids.push_back(static_cast<std::int64_t>(vocab.find(c)));
    std::string out = prompt;
    for (int i = 0; i < n; ++i) {
        std::int64_t t = std::min<std::int64_t>(kContext, static_cast<std::int64_t>(ids.size()));
        std::vector<std::int64_t> window(ids.end() - t, ids.end());
        auto logits = model(xgrad::from_vector(window, {1, t}, xgrad::kInt64)).to_vector<double>();
        auto v = static_cast<std::int64_t>(vocab.size());
        const double* last = logits.data() + (t - 1) * v;
        double top = *std::max_element(last, last + v), total = 0;
        std::vector<double> p(last, last + v);
        for (double& e : p) total += e = std::exp(e - top);
        double u = xgrad::rand({1}, xgrad::kFloat64, &gen).item<double>() * total;
        std::int64_t next = 0;
        for (double acc = p[0]; acc <= u && next + 1 < v;) acc += p[++next];
        ids.push_back(next);
        out += vocab[static_cast<std::size_t>(next)];
    }
    model.train();
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 300, sample_chars = 300;
    bool print_losses = false;
    CLI::App app("Trains a small character-level language model on built-in text, then samples from it.", "char_lm");
    app.add_option("--steps", steps, "Training steps")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--sample", sample_chars, "Characters to sample after training")->capture_default_str();
    app.add_flag("--print-losses", print_losses, "Print only the loss of every step (%.9g), for the tests");
    CLI11_PARSE(app, argc, argv);

    // The vocabulary: the text's distinct characters, sorted (as sorted(set(text)) in Python).
    std::string text = kText, vocab;
    for (char c : text)
        if (vocab.find(c) == std::string::npos) vocab += c;
    std::sort(vocab.begin(), vocab.end());
    std::vector<std::int64_t> data;
    for (char c : text) data.push_back(static_cast<std::int64_t>(vocab.find(c)));

    xgrad::manual_seed(kModelSeed);
    auto v = static_cast<std::int64_t>(vocab.size());
    CharLM model(v);
    optim::AdamW opt(model.parameters(), {.lr = kLr});
    xgrad::Generator data_gen(kDataSeed);
    if (!print_losses) {
        std::int64_t n = 0;
        for (const auto& p : model.parameters()) n += p.numel();
        std::printf("%zu characters of text, vocabulary of %lld, %lld parameters\n", text.size(),
                    static_cast<long long>(v), static_cast<long long>(n));
    }

    // [train]
    auto start = std::chrono::steady_clock::now();
    for (int step = 1; step <= steps; ++step) {
        auto [x, y] = batch(data, data_gen);
        Tensor logits = model(x);  // (B, T, V)
        Tensor loss = F::cross_entropy(logits.view({kBatch * kContext, v}), y.view({kBatch * kContext}));
        opt.zero_grad();
        loss.backward();
        opt.step();
        if (print_losses)
            std::printf("%.9g\n", loss.item<double>());
        else if (step == 1 || step % 50 == 0)
            std::printf("step %4d  loss %.4f\n", step, loss.item<double>());
    }
    // [train]
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (print_losses) return 0;
    std::printf("%.2f ms per step (%d threads)\n\n", 1e3 * seconds / steps, xgrad::get_num_threads());
    xgrad::Generator sample_gen(kSampleSeed);
    std::printf("%s\n", sample(model, vocab, "The ", sample_chars, sample_gen).c_str());
}
