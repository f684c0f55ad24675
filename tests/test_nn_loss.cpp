// Losses and softmaxes (nn/loss.hpp) against PyTorch's values, gradients and grad_fn names.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"
#include "xgrad/xgrad.hpp"

namespace {

namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
using xgrad::Tensor;

const std::string kFile = "loss.txt";

/// One `# case <key> fn=... k=v ...` line of loss.txt, plus the grad_fn name PyTorch recorded.
struct GoldenCase {
    std::string key;
    std::map<std::string, std::string> opts;
    std::string grad_fn;
};

std::vector<GoldenCase> golden_cases() {
    std::vector<GoldenCase> cases;
    std::map<std::string, std::string> names;
    std::ifstream in(golden::dir() + "/" + kFile);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string hash, tag, key;
        if (!(ls >> hash >> tag >> key) || hash != "#") continue;
        if (tag == "grad_fn") {
            ls >> names[key];
        } else if (tag == "case") {
            GoldenCase c{key, {}, ""};
            std::string kv;
            while (ls >> kv) c.opts[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
            cases.push_back(c);
        }
    }
    for (auto& c : cases) c.grad_fn = names[c.key];
    return cases;
}

bool has(const std::string& key, const std::string& what) {
    return golden::load(kFile).count(key + "." + what) > 0;
}
Tensor get(const std::string& key, const std::string& what) {
    return golden::get(kFile, key + "." + what).clone();
}

/// The loss a case names, with its options; `in` is {input, target} (target may be undefined).
Tensor run_case(const GoldenCase& c, const std::vector<Tensor>& in, const Tensor& weight, const Tensor& pos_weight) {
    const std::string& fn = c.opts.at("fn");
    auto opt = [&](const std::string& k, const std::string& dflt) {
        auto it = c.opts.find(k);
        return it == c.opts.end() ? dflt : it->second;
    };
    const F::LossReduction reduction(opt("reduction", "mean"));
    const std::int64_t ignore_index = std::stoll(opt("ignore_index", "-100"));
    if (fn == "mse_loss") return F::mse_loss(in[0], in[1], {.reduction = reduction});
    if (fn == "l1_loss") return F::l1_loss(in[0], in[1], {.reduction = reduction});
    if (fn == "nll_loss")
        return F::nll_loss(in[0], in[1], {.weight = weight, .ignore_index = ignore_index, .reduction = reduction});
    if (fn == "cross_entropy")
        return F::cross_entropy(in[0], in[1],
                                {.weight = weight,
                                 .ignore_index = ignore_index,
                                 .reduction = reduction,
                                 .label_smoothing = std::stod(opt("label_smoothing", "0.0"))});
    if (fn == "bce_with_logits")
        return F::binary_cross_entropy_with_logits(
            in[0], in[1], {.weight = weight, .reduction = reduction, .pos_weight = pos_weight});
    if (fn == "log_softmax") return F::log_softmax(in[0], std::stoll(opt("dim", "")));
    if (fn == "softmax") return F::softmax(in[0], std::stoll(opt("dim", "")));
    FAIL("unknown fn " << fn);
    return Tensor();
}

/// Tensor with printable grad_fn name in INFO messages.
std::string describe(const GoldenCase& c) {
    std::string s = c.key;
    for (const auto& [k, v] : c.opts) s += " " + k + "=" + v;
    return s;
}

}  // namespace

TEST_CASE("losses and softmaxes match PyTorch: values, grad_fn names and gradients") {
    const auto cases = golden_cases();
    REQUIRE(cases.size() == 174);  // gen_loss.py's count: a truncated golden file must not pass
    for (const GoldenCase& c : cases) {
        INFO(describe(c));
        const bool f32 = c.key.ends_with("float32");
        const double rtol = f32 ? 1e-5 : 1e-10, atol = f32 ? 1e-6 : 1e-12;
        Tensor input = get(c.key, "input").requires_grad_();
        Tensor target = has(c.key, "target") ? get(c.key, "target") : Tensor();
        if (has(c.key, "gtarget")) target.requires_grad_();
        Tensor weight = has(c.key, "weight") ? get(c.key, "weight") : Tensor();
        Tensor pos_weight = has(c.key, "pos_weight") ? get(c.key, "pos_weight") : Tensor();

        Tensor out = run_case(c, {input, target}, weight, pos_weight);
        golden::check_close(out, golden::get(kFile, c.key + ".out"), c.key + " out", rtol, atol);
        CHECK(out.grad_fn_name() == c.grad_fn);
        (out * golden::get(kFile, c.key + ".w")).sum().backward();
        golden::check_close(input.grad(), golden::get(kFile, c.key + ".ginput"), c.key + " ginput", rtol, atol);
        // Cross entropy's input gradient is PyTorch's bits, label smoothing included (whose reduced
        // loss's backward multiplies by 0.9 and smoothing / classes in double, as PyTorch's mul.Scalar).
        if (c.key.starts_with("ce.") && xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2)
            CHECK_MESSAGE(golden::bits_differ(input.grad(), golden::get(kFile, c.key + ".ginput")) == 0,
                          c.key << " ginput bits");
        if (has(c.key, "gtarget"))
            golden::check_close(target.grad(), golden::get(kFile, c.key + ".gtarget"), c.key + " gtarget", rtol, atol);

        if (!f32) {  // the backward against finite differences, for every differentiable argument
            std::vector<Tensor> args{get(c.key, "input").requires_grad_()};
            if (has(c.key, "gtarget")) args.push_back(get(c.key, "target").requires_grad_());
            golden::check_gradcheck(
                [&](const std::vector<Tensor>& a) {
                    return run_case(c, {a[0], a.size() > 1 ? a[1] : target}, weight, pos_weight);
                },
                args, c.key + " gradcheck");
        }
    }
}

TEST_CASE("softmax, log_softmax, cross_entropy and nll_loss give PyTorch's bits, forward and backward") {
    // PyTorch 1.13's kernels: the row sums in its AVX2 registers' order, softmax's multiply by the
    // reciprocal, the backward's fused multiply-adds, nll_loss's cascade of partial sums. Its exp and
    // log are SLEEF's, whose bits vec_math gives where the CPU has FMA.
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // SLEEF's results differ without FMA
    for (const std::string dt : {"float32", "float64"}) {
        auto get = [&](const std::string& key) { return golden::get("exact.txt", dt + "." + key); };
        CAPTURE(dt);
        for (const std::string size : {"3x5", "4x37", "1x300"}) {
            CAPTURE(size);
            for (bool log : {false, true}) {
                const std::string name = size + (log ? ".log_softmax" : ".softmax");
                Tensor x = get(size + ".x").detach().requires_grad_();
                Tensor y = log ? F::log_softmax(x, -1) : F::softmax(x, -1);
                y.backward(get(size + ".w"));
                CAPTURE(name);
                CHECK(golden::bits_differ(y, get(name)) == 0);
                CHECK(golden::bits_differ(x.grad(), get(name + ".grad")) == 0);
            }
        }
        const Tensor target = get("ce.target"), cw = get("ce.cw");
        const std::map<std::string, std::function<Tensor(const Tensor&)>> cases = {
            {"ce_mean", [&](const Tensor& z) { return F::cross_entropy(z, target); }},
            {"ce_sum", [&](const Tensor& z) { return F::cross_entropy(z, target, {.reduction = "sum"}); }},
            {"ce_weight", [&](const Tensor& z) { return F::cross_entropy(z, target, {.weight = cw}); }},
            {"ce_smooth", [&](const Tensor& z) { return F::cross_entropy(z, target, {.label_smoothing = 0.1}); }},
            {"nll_mean", [&](const Tensor& z) { return F::nll_loss(F::log_softmax(z, 1), target); }},
            {"ce_3d", [&](const Tensor& z) { return F::cross_entropy(z, get("ce.target3")); }},
        };
        for (const auto& c : cases) {
            Tensor z = get(c.first == "ce_3d" ? "ce.logits3" : "ce.logits").detach().requires_grad_();
            Tensor loss = c.second(z);
            loss.backward();
            CAPTURE(c.first);
            CHECK(golden::bits_differ(loss, get(c.first)) == 0);
            CHECK(golden::bits_differ(z.grad(), get(c.first + ".grad")) == 0);
        }
    }
}

TEST_CASE("softmax and log_softmax over a dim that is not last give PyTorch's bits, forward and backward") {
    // PyTorch 1.13's kernels for such a dim: lane by lane, sums in order along the dim, its vectorised
    // exp for whole AVX2 registers of the lanes and C's exp in their tail; the softmax divides by the sum.
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // SLEEF's results differ without FMA
    for (const std::string dt : {"float32", "float64"}) {
        CAPTURE(dt);
        for (const std::string key : {"dim1.2x13x11", "dim1.6x9x1", "dim0.20x6"}) {
            CAPTURE(key);
            auto get = [&](const std::string& what) { return golden::get("exact.txt", dt + "." + key + "." + what); };
            const std::int64_t dim = key[3] - '0';
            for (bool log : {false, true}) {
                CAPTURE(log);
                const std::string name = log ? "log_softmax" : "softmax";
                Tensor x = get("x").detach().requires_grad_();
                Tensor y = log ? F::log_softmax(x, dim) : F::softmax(x, dim);
                y.backward(get("w"));
                CHECK(golden::bits_differ(y, get(name)) == 0);
                CHECK(golden::bits_differ(x.grad(), get(name + ".grad")) == 0);
                // A strided input (the transpose of a contiguous copy) gives the same bits.
                Tensor xt = get("x").transpose(0, -1).contiguous().transpose(0, -1).detach().requires_grad_();
                Tensor yt = log ? F::log_softmax(xt, dim) : F::softmax(xt, dim);
                yt.backward(get("w"));
                CHECK(golden::bits_differ(yt, get(name)) == 0);
                CHECK(golden::bits_differ(xt.grad(), get(name + ".grad")) == 0);
            }
        }
    }
}

TEST_CASE("reductions are given as the enum or as PyTorch's strings") {
    Tensor x = xgrad::tensor({1.0, 2.0, 4.0}), y = xgrad::tensor({0.0, 0.0, 0.0});
    CHECK(F::mse_loss(x, y).item<double>() == doctest::Approx(7.0));
    CHECK(F::mse_loss(x, y, {.reduction = "sum"}).item<double>() == doctest::Approx(21.0));
    CHECK(F::mse_loss(x, y, {.reduction = F::Reduction::kSum}).item<double>() == doctest::Approx(21.0));
    CHECK(F::l1_loss(x, y, {.reduction = std::string("none")}).shape() == xgrad::Shape{3});
    CHECK(F::to_string(F::Reduction::kNone) == "none");
    CHECK_THROWS_WITH_AS(
        F::mse_loss(x, y, {.reduction = "avg"}),
        "reduction: \"avg\" is not a valid value for reduction (expected \"none\", \"mean\" or \"sum\")",
        std::invalid_argument);
}

TEST_CASE("cross_entropy with label smoothing is the mix of nll and the uniform target") {
    Tensor logits = xgrad::tensor({{2.0, -1.0, 0.5}, {0.1, 0.2, 3.0}}, xgrad::kFloat64);
    Tensor labels = xgrad::from_vector(std::vector<std::int64_t>{0, 2}, {2}, xgrad::kInt64);
    Tensor logp = F::log_softmax(logits, 1);
    double nll = F::nll_loss(logp, labels).item<double>();
    double uniform = -logp.mean().item<double>();  // the mean over samples of -Σ_c log p_c / C
    double eps = 0.2;
    CHECK(F::cross_entropy(logits, labels, {.reduction = F::Reduction::kMean, .label_smoothing = eps}).item<double>() ==
          doctest::Approx((1 - eps) * nll + eps * uniform).epsilon(1e-12));
}

TEST_CASE("stable for extreme logits") {
    Tensor logits = xgrad::tensor({{1e4, 0.0, -1e4}}).requires_grad_();
    Tensor labels = xgrad::from_vector(std::vector<std::int64_t>{2}, {1}, xgrad::kInt64);
    Tensor loss = F::cross_entropy(logits, labels);
    CHECK(loss.item<double>() == doctest::Approx(2e4));
    loss.backward();
    auto g = logits.grad().to_vector<double>();
    CHECK(g[0] == doctest::Approx(1.0));
    CHECK(g[2] == doctest::Approx(-1.0));
    Tensor s = F::softmax(logits.detach(), -1);
    CHECK(s.sum().item<double>() == doctest::Approx(1.0));
    Tensor b = F::binary_cross_entropy_with_logits(xgrad::tensor({-200.0, 200.0}), xgrad::tensor({1.0, 0.0}),
                                                   {.reduction = "none"});
    CHECK(b.to_vector<double>() == std::vector<double>{200.0, 200.0});
}

TEST_CASE("loss modules: called as loss(input, target), printed as PyTorch, weights are buffers") {
    xgrad::manual_seed(0);
    Tensor x = xgrad::randn({4, 3}).requires_grad_(), y = xgrad::randn({4, 3});
    Tensor labels = xgrad::from_vector(std::vector<std::int64_t>{0, 2, 1, 2}, {4}, xgrad::kInt64);
    Tensor w = xgrad::tensor({1.0, 2.0, 0.5});

    nn::MSELoss mse;
    CHECK(mse(x, y).item<float>() == F::mse_loss(x, y).item<float>());
    nn::MSELoss mse_sum({.reduction = "sum"});
    CHECK(mse_sum(x, y).item<float>() == F::mse_loss(x, y, {.reduction = "sum"}).item<float>());
    nn::L1Loss l1;
    CHECK(l1(x, y).grad_fn_name() == "MeanBackward0");
    nn::CrossEntropyLoss ce({.weight = w, .label_smoothing = 0.1});
    CHECK(ce(x, labels).item<float>() ==
          F::cross_entropy(x, labels, {.weight = w, .label_smoothing = 0.1}).item<float>());
    nn::NLLLoss nll({.ignore_index = 2});
    CHECK(nll(F::log_softmax(x, 1), labels).item<float>() ==
          F::nll_loss(F::log_softmax(x, 1), labels, {.ignore_index = 2}).item<float>());
    nn::BCEWithLogitsLoss bce({.pos_weight = w});
    CHECK(bce(x, y.sigmoid()).grad_fn_name() == "BinaryCrossEntropyWithLogitsBackward0");

    auto repr = [](const nn::Module& m) {
        std::ostringstream os;
        os << m;
        return os.str();
    };
    CHECK(repr(mse) == "MSELoss()");
    CHECK(repr(l1) == "L1Loss()");
    CHECK(repr(ce) == "CrossEntropyLoss()");
    CHECK(repr(nll) == "NLLLoss()");
    CHECK(repr(bce) == "BCEWithLogitsLoss()");

    // PyTorch's state dicts: CrossEntropyLoss(weight=w) has "weight"; without a weight, nothing.
    REQUIRE(ce.state_dict().size() == 1);
    CHECK(ce.state_dict()[0].first == "weight");
    CHECK(nll.state_dict().empty());
    REQUIRE(bce.state_dict().size() == 1);
    CHECK(bce.state_dict()[0].first == "pos_weight");
    CHECK(mse.parameters().empty());

    // A copy's buffer is its own options' weight.
    nn::CrossEntropyLoss copy = ce;
    copy.options.weight = xgrad::tensor({3.0, 3.0, 3.0});
    CHECK(copy.state_dict()[0].second.to_vector<float>() == std::vector<float>{3.0f, 3.0f, 3.0f});
    CHECK(ce.state_dict()[0].second.to_vector<float>() == std::vector<float>{1.0f, 2.0f, 0.5f});

    // Through the Module base, a loss refuses a single argument.
    nn::Module& base = mse;
    CHECK_THROWS_WITH_AS(base.forward(x), "MSELoss: a loss takes an input and a target: call loss(input, target)",
                         std::invalid_argument);
}

TEST_CASE("loss errors name the operation and the shapes") {
    Tensor x = xgrad::zeros({3, 4});
    Tensor idx = xgrad::from_vector(std::vector<std::int64_t>{0, 1, 2}, {3}, xgrad::kInt64);
    CHECK_THROWS_WITH_AS(F::mse_loss(x, xgrad::zeros({4})),
                         "mse_loss: target of shape (4,) must have the input's shape (3, 4)", std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::l1_loss(x, xgrad::zeros({3, 1})),
                         "l1_loss: target of shape (3, 1) must have the input's shape (3, 4)", std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::binary_cross_entropy_with_logits(x, xgrad::zeros({4, 3})),
                         "binary_cross_entropy_with_logits: target of shape (4, 3) must have the input's shape (3, 4)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::binary_cross_entropy_with_logits(x, xgrad::zeros({3, 4}), {.pos_weight = xgrad::ones({3})}),
                         "binary_cross_entropy_with_logits: pos_weight of shape (3,) does not broadcast to the input's "
                         "shape (3, 4)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(
        F::cross_entropy(x, xgrad::from_vector(std::vector<std::int64_t>{0, 4, 1}, {3}, xgrad::kInt64)),
        "cross_entropy: target 4 is out of bounds for 4 classes (input of shape (3, 4))", std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::nll_loss(x, xgrad::from_vector(std::vector<std::int64_t>{0, -1, 1}, {3}, xgrad::kInt64)),
                         "nll_loss: target -1 is out of bounds for 4 classes (input of shape (3, 4))",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::nll_loss(x, xgrad::zeros({3})),
                         "nll_loss: target must hold int64 class indices, got torch.float32 of shape (3,) for input of "
                         "shape (3, 4)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(
        F::cross_entropy(x, xgrad::zeros({3})),
        "cross_entropy: target must hold int64 class indices, got torch.float32 of shape (3,) for input "
        "of shape (3, 4)",
        std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::cross_entropy(x, xgrad::zeros({3, 4}, xgrad::kInt64)),
                         "cross_entropy: a target shaped like the input (3, 4) holds class probabilities and must be "
                         "floating-point, got torch.int64",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::cross_entropy(x, idx.slice(0, 0, 2)),
                         "cross_entropy: input of shape (3, 4) needs a target of shape (3,), got (2,)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::nll_loss(xgrad::zeros({2, 3, 5}), xgrad::zeros({2, 3}, xgrad::kInt64)),
                         "nll_loss: input of shape (2, 3, 5) needs a target of shape (2, 5), got (2, 3)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::cross_entropy(x, idx, {.weight = xgrad::ones({3})}),
                         "cross_entropy: weight of shape (3,) must hold one value per class, shape (4,)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::cross_entropy(x, idx, {.label_smoothing = 1.5}),
                         "cross_entropy: label_smoothing must be between 0.0 and 1.0, got 1.5", std::invalid_argument);
    CHECK_THROWS_WITH_AS(
        F::cross_entropy(xgrad::tensor(1.0), idx),
        "cross_entropy: input must have a class dimension: (C), (N, C) or (N, C, d1, ...), got shape ()",
        std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::log_softmax(x, 2), doctest::Contains("log_softmax"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::softmax(idx, 0), "softmax: needs a floating-point tensor, got torch.int64",
                         std::invalid_argument);
    // An ignored target may lie outside [0, C); the mean over no target is NaN, as PyTorch's.
    Tensor ignored = xgrad::full({3}, -100.0, xgrad::kInt64);
    CHECK(std::isnan(F::cross_entropy(x, ignored).item<double>()));
    CHECK(F::cross_entropy(x, ignored, {.reduction = "sum"}).item<double>() == 0.0);
}
