// ModuleList, ModuleDict, the BCE / smooth L1 / Huber / KL losses, normalize, scaled dot-product
// attention and MultiheadAttention against PyTorch 1.13 (tests/golden/gen_nn_more.py).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
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

const std::string kFile = "nn_more.txt";

Tensor get(const std::string& name) {
    return golden::get(kFile, name).clone();
}
bool has(const std::string& name) {
    return golden::load(kFile).count(name) > 0;
}

/// The `# <tag> <key> rest-of-line` comments of nn_more.txt, by tag and key.
const std::map<std::string, std::map<std::string, std::string>>& notes() {
    static const auto all = [] {
        std::map<std::string, std::map<std::string, std::string>> out;
        std::ifstream in(golden::dir() + "/" + kFile);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream ls(line);
            std::string hash, tag, key;
            if (!(ls >> hash >> tag >> key) || hash != "#") continue;
            std::string rest;
            std::getline(ls, rest);
            if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
            out[tag][key] = rest;
        }
        return out;
    }();
    return all;
}
std::string note(const std::string& tag, const std::string& key) {
    auto& t = notes().at(tag);
    auto it = t.find(key);
    REQUIRE_MESSAGE(it != t.end(), "no # " << tag << " " << key);
    return it->second;
}
/// PyTorch's repr with its newlines back.
std::string repr_of(const std::string& key) {
    std::string s = note("repr", key), out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
            out += '\n';
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}
/// PyTorch's sentence without its full stop (xgrad adds the value after it).
std::string without_period(std::string s) {
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}
using golden::printed;
std::string names_of(const nn::Module& m) {
    std::string s;
    for (auto& [n, p] : m.named_parameters()) s += (s.empty() ? "" : " ") + n;
    return s;
}
/// Parameter names, repr and every state_dict value (exactly) as PyTorch's.
void check_module(const nn::Module& m, const std::string& key) {
    INFO(key);
    CHECK(names_of(m) == note("names", key));
    CHECK(printed(m) == repr_of(key));
    for (auto& [n, t] : m.state_dict()) golden::check_close(t, get(key + "." + n), key + "." + n, 0.0, 0.0);
}

}  // namespace

// ---- containers ----------------------------------------------------------------------------------------

TEST_CASE("ModuleList registers its modules as 0, 1, ... with PyTorch's initial weights and repr") {
    xgrad::manual_seed(0);
    nn::ModuleList list(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
    check_module(list, "modulelist");
    CHECK(list.size() == 3);
    CHECK(printed(list[-1]) == "Linear(in_features=4, out_features=2, bias=True)");
    CHECK(printed(nn::ModuleList()) == repr_of("modulelist_empty"));
    CHECK(golden::invalid_argument_of([&] { (void)list[3]; }) == "ModuleList: index 3 is out of range for 3 modules");
    CHECK(golden::invalid_argument_of([&] { list.push_back(std::shared_ptr<nn::Module>()); }) ==
          "ModuleList::push_back: the module is null");

    // push_back and extend keep numbering; the state dict follows; to() converts the children.
    list.push_back(nn::Linear(2, 2));
    list.extend({std::make_shared<nn::Identity>(), std::make_shared<nn::Linear>(2, 1, false)});
    CHECK(names_of(list) == "0.weight 0.bias 2.weight 2.bias 3.weight 3.bias 5.weight");
    CHECK(list.state_dict().size() == 7);
    list.to(xgrad::kFloat64);
    CHECK(list[0].parameters()[0].dtype() == xgrad::kFloat64);
    int count = 0;
    for (auto& m : list) count += m != nullptr;
    CHECK(count == 6);

    // As a member of a model: parameters named layers.<i>.weight, a forward over the list.
    struct Tower : nn::Module {
        nn::ModuleList layers;
        Tower() {
            for (int i = 0; i < 2; ++i) layers.push_back(nn::Linear(3, 3));
            register_module("layers", layers);
        }
        Tensor forward(const Tensor& x) override {
            Tensor h = x;
            for (auto& layer : layers) h = (*layer)(h);
            return h;
        }
    } tower;
    CHECK(names_of(tower) == "layers.0.weight layers.0.bias layers.1.weight layers.1.bias");
    Tensor x = xgrad::randn({2, 3});
    auto& l0 = dynamic_cast<nn::Linear&>(tower.layers[0]);
    auto& l1 = dynamic_cast<nn::Linear&>(tower.layers[1]);
    golden::check_close(tower(x), l1(l0(x)), "Tower forward", 0.0, 0.0);
    CHECK(golden::invalid_argument_of([&] { tower.layers.forward(x); }) ==
          "forward: module ModuleList does not define forward()");
}

TEST_CASE("ModuleDict registers its modules by key, in insertion order, with PyTorch's initial weights") {
    xgrad::manual_seed(0);
    nn::ModuleDict dict({{"enc", std::make_shared<nn::Linear>(3, 4)},
                         {"act", std::make_shared<nn::ReLU>()},
                         {"dec", std::make_shared<nn::Linear>(4, 2)}});
    check_module(dict, "moduledict");
    CHECK(dict.size() == 3);
    CHECK(dict.contains("act"));
    CHECK(!dict.contains("x"));
    CHECK(dict.keys() == std::vector<std::string>{"enc", "act", "dec"});
    CHECK(printed(dict["dec"]) == "Linear(in_features=4, out_features=2, bias=True)");
    CHECK(dict.ptr("enc").get() == &dict["enc"]);
    dict.insert("extra", nn::Linear(2, 2, false));
    CHECK(names_of(dict) == "enc.weight enc.bias dec.weight dec.bias extra.weight");
    CHECK(golden::invalid_argument_of([&] { (void)dict["nope"]; }) == "ModuleDict: no module under key 'nope'");
    CHECK(golden::invalid_argument_of([&] { dict.insert("enc", nn::ReLU()); }) ==
          "ModuleDict::insert: key 'enc' already exists; xgrad does not replace a registered module");
    CHECK(golden::invalid_argument_of([&] { dict.insert("a.b", nn::ReLU()); }) ==
          "register_module: the name 'a.b' must be non-empty and contain no '.'");
    CHECK(dict.size() == 4);  // the failed inserts left nothing behind
    auto sd = dict.state_dict();
    dict.load_state_dict(sd);
    int n = 0;
    for (auto& [key, m] : dict) n += key.size() > 0 && m != nullptr;
    CHECK(n == 4);
}

// ---- losses ----------------------------------------------------------------------------------------------

namespace {

struct LossCase {
    std::string key;
    std::map<std::string, std::string> opts;
};

std::vector<LossCase> loss_cases() {
    std::vector<LossCase> out;
    for (auto& [key, rest] : notes().at("case")) {
        LossCase c{key, {}};
        std::istringstream ls(rest);
        std::string kv;
        while (ls >> kv) c.opts[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
        out.push_back(c);
    }
    return out;
}

Tensor run_loss(const LossCase& c, const Tensor& x, const Tensor& t) {
    auto opt = [&](const std::string& k, const std::string& dflt) {
        auto it = c.opts.find(k);
        return it == c.opts.end() ? dflt : it->second;
    };
    const std::string fn = c.opts.at("fn"), red = opt("reduction", "mean");
    const Tensor weight = has(c.key + ".weight") ? get(c.key + ".weight") : Tensor();
    if (fn == "bce") return F::binary_cross_entropy(x, t, {.weight = weight, .reduction = red});
    if (fn == "smooth_l1") return F::smooth_l1_loss(x, t, {.reduction = red, .beta = std::stod(opt("beta", "1.0"))});
    if (fn == "huber") return F::huber_loss(x, t, {.reduction = red, .delta = std::stod(opt("delta", "1.0"))});
    if (fn == "kl_div") return F::kl_div(x, t, {.reduction = red, .log_target = opt("log_target", "False") == "True"});
    FAIL("unknown fn " << fn);
    return Tensor();
}

}  // namespace

TEST_CASE("binary_cross_entropy, smooth_l1_loss, huber_loss and kl_div match PyTorch: values, grad_fn, gradients") {
    auto cases = loss_cases();
    CHECK(cases.size() == 58);
    for (const auto& c : cases) {
        INFO(c.key);
        const bool f32 = c.key.find("float32") != std::string::npos;
        const double rtol = f32 ? 2e-5 : 1e-12, atol = f32 ? 1e-6 : 1e-14;
        Tensor x = get(c.key + ".input").requires_grad_(true), t = get(c.key + ".target").requires_grad_(true);
        Tensor out = run_loss(c, x, t);
        golden::check_close(out, get(c.key + ".out"), c.key + " out", rtol, atol);
        const std::string fn = golden::grad_fn_name(kFile, c.key);
        if (c.opts.at("fn") != "kl_div") CHECK(out.grad_fn_name() == fn);  // kl_div is a composite in both
        (out * get(c.key + ".w")).sum().backward();
        golden::check_close(x.grad(), get(c.key + ".ginput"), c.key + " ginput", rtol, atol);
        golden::check_close(t.grad(), get(c.key + ".gtarget"), c.key + " gtarget", rtol, atol);
        if (xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2) {
            // PyTorch's bits (its AVX2 kernels': SLEEF's log in bce, the C library's in kl_div's xlogy;
            // smooth_l1's and huber's vector formula over blocks of 16 floats, 8 doubles, scalar on the rest).
            CHECK(golden::bits_differ(out, get(c.key + ".out")) == 0);
            CHECK(golden::bits_differ(x.grad(), get(c.key + ".ginput")) == 0);
            CHECK(golden::bits_differ(t.grad(), get(c.key + ".gtarget")) == 0);
        }
        if (!f32 && c.key.find("extreme") == std::string::npos && c.key.find("beta0") == std::string::npos) {
            golden::check_gradcheck(
                [&](const std::vector<Tensor>& in) { return run_loss(c, in[0], in[1]); },
                {get(c.key + ".input").requires_grad_(true), get(c.key + ".target").requires_grad_(true)}, c.key);
        }
    }
}

TEST_CASE("the new loss modules: called as loss(input, target), printed as PyTorch, options kept") {
    Tensor x = get("bce.weight.sum.float64.input"), t = get("bce.weight.sum.float64.target");
    Tensor w = get("bce.weight.sum.float64.weight");
    nn::BCELoss bce({.weight = w, .reduction = "sum"});
    golden::check_close(bce(x, t), get("bce.weight.sum.float64.out"), "BCELoss", 1e-12, 1e-14);
    CHECK(printed(bce) == "BCELoss()");
    CHECK(bce.state_dict().size() == 1);  // weight is a buffer
    CHECK(bce.parameters().empty());

    Tensor a = get("smooth_l1.beta.float64.input"), b = get("smooth_l1.beta.float64.target");
    nn::SmoothL1Loss sl1({.beta = 0.5});
    golden::check_close(sl1(a, b), get("smooth_l1.beta.float64.out"), "SmoothL1Loss", 1e-12, 1e-14);
    CHECK(printed(sl1) == "SmoothL1Loss()");
    Tensor c = get("huber.delta.float64.input"), d = get("huber.delta.float64.target");
    nn::HuberLoss huber({.delta = 2.5});
    golden::check_close(huber(c, d), get("huber.delta.float64.out"), "HuberLoss", 1e-12, 1e-14);
    CHECK(printed(huber) == "HuberLoss()");
    Tensor p = get("kl_div.batchmean.float64.input"), q = get("kl_div.batchmean.float64.target");
    nn::KLDivLoss kl({.reduction = "batchmean"});
    golden::check_close(kl(p, q), get("kl_div.batchmean.float64.out"), "KLDivLoss", 1e-12, 1e-14);
    CHECK(printed(kl) == "KLDivLoss()");
    CHECK(golden::invalid_argument_of([] {
              nn::KLDivLoss bad({.reduction = "avg"});
          }).find(note("error", "kl_div_reduction")) != std::string::npos);
}

TEST_CASE("the new losses' errors carry PyTorch's wording") {
    Tensor x = xgrad::rand({2, 3}), t = xgrad::rand({2, 3});
    CHECK(golden::invalid_argument_of([&] {
              F::binary_cross_entropy(x * 2.0 + 0.5, t);
          }).find(note("error", "bce_range")) != std::string::npos);
    CHECK(golden::invalid_argument_of([&] {
              F::binary_cross_entropy(xgrad::full({2}, std::nan("")), xgrad::zeros({2}));
          }).find("all elements of input should be between 0 and 1") != std::string::npos);
    CHECK(golden::invalid_argument_of([&] { F::smooth_l1_loss(x, t, {.beta = -1.0}); }) ==
          "smooth_l1_loss: " + without_period(note("error", "smooth_l1_beta")) + " (got -1.0)");
    CHECK(golden::invalid_argument_of([&] { F::huber_loss(x, t, {.delta = 0.0}); }) ==
          "huber_loss: " + without_period(note("error", "huber_delta")) + " (got 0.0)");
    CHECK(golden::invalid_argument_of([&] {
              F::kl_div(x, t, {.reduction = "avg"});
          }).find(note("error", "kl_div_reduction")) != std::string::npos);
    CHECK(golden::invalid_argument_of([&] {
              F::huber_loss(x, xgrad::rand({3, 2}));
          }) == "huber_loss: target of shape (3, 2) must have the input's shape (2, 3)");
    CHECK(golden::invalid_argument_of([&] { F::binary_cross_entropy(x, t, {.weight = xgrad::ones({4})}); }) ==
          "binary_cross_entropy: weight of shape (4,) does not broadcast to the input's shape (2, 3)");
    CHECK(golden::invalid_argument_of([&] {
              F::smooth_l1_loss(xgrad::zeros({2}, xgrad::kInt64), xgrad::zeros({2}, xgrad::kInt64));
          }) == "smooth_l1_loss: input and target must be floating-point, got torch.int64 and torch.int64");
}

// ---- normalize -------------------------------------------------------------------------------------------

TEST_CASE("normalize matches PyTorch, with a zero gradient for a zero row") {
    struct Case {
        std::string key;
        double p;
        std::int64_t dim;
    };
    for (const Case& c : {Case{"normalize.p2", 2.0, 1}, Case{"normalize.p1", 1.0, 0}, Case{"normalize.p3", 3.0, -1}}) {
        for (std::string dt : {"float32", "float64"}) {
            const std::string k = c.key + "." + dt;
            INFO(k);
            const double rtol = dt == "float32" ? 1e-5 : 1e-12, atol = dt == "float32" ? 1e-6 : 1e-14;
            Tensor x = get(k + ".input").requires_grad_(true);
            Tensor out = F::normalize(x, c.p, c.dim);
            golden::check_close(out, get(k + ".out"), k + " out", rtol, atol);
            (out * get(k + ".w")).sum().backward();
            golden::check_close(x.grad(), get(k + ".ginput"), k + " ginput", rtol, atol);
            if (dt == "float64" && c.key != "normalize.p2")  // gradcheck away from the zero row's kink
                golden::check_gradcheck([&](const std::vector<Tensor>& in) { return F::normalize(in[0], c.p, c.dim); },
                                        {get(k + ".input").requires_grad_(true)}, k);
        }
    }
    // p < 1 and p = ±inf are PyTorch's too now: test_nn_gaps checks them.
    CHECK(golden::invalid_argument_of([] {
              F::normalize(xgrad::ones({2, 2}), 2.0, 2);
          }).find("normalize") != std::string::npos);
}

// ---- scaled dot-product attention ------------------------------------------------------------------------

TEST_CASE("scaled_dot_product_attention matches PyTorch 1.13's _scaled_dot_product_attention: plain, masked, causal") {
    for (std::string key : {"sdpa.plain", "sdpa.mask", "sdpa.causal"}) {
        for (std::string dt : {"float32", "float64"}) {
            const std::string k = key + "." + dt;
            INFO(k);
            const double rtol = dt == "float32" ? 1e-5 : 1e-12, atol = dt == "float32" ? 1e-6 : 1e-14;
            Tensor q = get(k + ".q").requires_grad_(true), kk = get(k + ".k").requires_grad_(true);
            Tensor v = get(k + ".v").requires_grad_(true);
            Tensor mask = has(k + ".mask") ? get(k + ".mask") : Tensor();
            const bool causal = key == "sdpa.causal";
            Tensor out = F::scaled_dot_product_attention(q, kk, v, mask, 0.0, causal);
            golden::check_close(out, get(k + ".out"), k + " out", rtol, atol);
            (out * get(k + ".w")).sum().backward();
            golden::check_close(q.grad(), get(k + ".gq"), k + " gq", rtol, atol);
            golden::check_close(kk.grad(), get(k + ".gk"), k + " gk", rtol, atol);
            golden::check_close(v.grad(), get(k + ".gv"), k + " gv", rtol, atol);
            if (dt == "float64")
                golden::check_gradcheck(
                    [&](const std::vector<Tensor>& in) {
                        return F::scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, causal);
                    },
                    {get(k + ".q").requires_grad_(true), get(k + ".k").requires_grad_(true),
                     get(k + ".v").requires_grad_(true)},
                    k);
        }
    }
    // A row whose keys are all masked is NaN, as PyTorch.
    Tensor q = get("sdpa.allmasked.out");  // only its shape and NaN pattern matter below
    Tensor qq = xgrad::randn({1, 2, 3}, xgrad::kFloat64);
    Tensor m = xgrad::from_vector(std::vector<double>{0.0, 0.0, -INFINITY, -INFINITY}, {2, 2}, xgrad::kFloat64);
    auto vals = F::scaled_dot_product_attention(qq, qq, qq, m).to_vector<double>();
    auto want = q.to_vector<double>();
    for (std::size_t i = 0; i < vals.size(); ++i) CHECK(std::isnan(vals[i]) == std::isnan(want[i]));
}

TEST_CASE("scaled_dot_product_attention: dropout draws from the generator; bad input throws") {
    Tensor q = xgrad::randn({2, 3, 4}), k = xgrad::randn({2, 5, 4}), v = xgrad::randn({2, 5, 6});
    xgrad::Generator g1(7), g2(7);
    Tensor a = F::scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, &g1);
    Tensor b = F::scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, &g2);
    golden::check_close(a, b, "same seed, same dropout", 0.0, 0.0);
    // Dropout of the weights as F::dropout draws it, with the same generator state.
    xgrad::Generator g3(7);
    Tensor w = F::softmax((q / 2.0).matmul(k.transpose(-2, -1)), -1);
    golden::check_close(a, F::dropout(w, 0.5, true, &g3).matmul(v), "dropout on the weights", 1e-6, 1e-7);

    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(q, xgrad::randn({2, 5, 3}), v);
          }) ==
          "scaled_dot_product_attention: query of shape (2, 3, 4) and key of shape (2, 5, 3) must have the same "
          "embedding size (last dimension)");
    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(q, k, xgrad::randn({2, 4, 6}));
          }) ==
          "scaled_dot_product_attention: key of shape (2, 5, 4) and value of shape (2, 4, 6) must have the same "
          "sequence length (dimension -2)");
    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(q, k, v, xgrad::zeros({3, 5}), 0.0, true);
          }) == "scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(q, k, v, xgrad::zeros({4, 5}));
          }) ==
          "scaled_dot_product_attention: shapes (4, 5) and (2, 3, 5) cannot be broadcast together (4 != 3 at "
          "dimension 1)");
    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(q, k, v, xgrad::zeros({2, 2, 3, 5}));
          }) ==
          "scaled_dot_product_attention: attn_mask of shape (2, 2, 3, 5) does not broadcast to the attention scores' "
          "shape (2, 3, 5)");
    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(q, k, v, xgrad::zeros({3, 5}, xgrad::kInt64));
          }) == "scaled_dot_product_attention: attn_mask must be an additive floating-point mask, got torch.int64");
    CHECK(golden::invalid_argument_of([&] {
              F::scaled_dot_product_attention(xgrad::randn({4}), k, v);
          }).find("at least 2 dimensions") != std::string::npos);
}

// ---- MultiheadAttention ----------------------------------------------------------------------------------

TEST_CASE("MultiheadAttention: PyTorch's parameters, names, repr and initial values bit for bit") {
    xgrad::manual_seed(0);
    nn::MultiheadAttention mha(8, 2);
    check_module(mha, "mha.init");
    xgrad::manual_seed(0);
    nn::MultiheadAttention nobias(6, 3, {.bias = false});
    check_module(nobias, "mha.init_nobias");
    // The generator ends where PyTorch's does: in a Sequential the redraw keeps argument order.
    xgrad::manual_seed(0);
    nn::Sequential seq(nn::MultiheadAttention(8, 2), nn::Linear(8, 2));
    golden::check_close(seq[0].state_dict()[0].second, get("mha.init.in_proj_weight"), "in Sequential", 0.0, 0.0);
    CHECK(golden::invalid_argument_of([] { nn::MultiheadAttention bad(6, 4); }).find(note("error", "mha_divisible")) !=
          std::string::npos);
}

TEST_CASE("MultiheadAttention forward and backward match PyTorch") {
    struct Case {
        std::string key;
        std::int64_t e, h;
        nn::MultiheadAttentionOptions opts;
    };
    for (const Case& c :
         {Case{"mha.self", 8, 2, {}}, Case{"mha.cross_mask", 8, 4, {}},
          Case{"mha.batch_first", 6, 2, {.batch_first = true}}, Case{"mha.nobias_unbatched", 6, 3, {.bias = false}}}) {
        INFO(c.key);
        xgrad::manual_seed(0);
        nn::MultiheadAttention mha(c.e, c.h, c.opts);
        mha.to(xgrad::kFloat64);
        check_module(mha, c.key);
        Tensor q = get(c.key + ".query").requires_grad_(true);
        const bool cross = has(c.key + ".key");
        Tensor k = cross ? get(c.key + ".key").requires_grad_(true) : q;
        Tensor v = cross ? get(c.key + ".value").requires_grad_(true) : q;
        Tensor mask = has(c.key + ".mask") ? get(c.key + ".mask") : Tensor();
        auto [out, weights] = mha.forward(q, k, v, mask);
        golden::check_close(out, get(c.key + ".out"), c.key + " out", 1e-10, 1e-12);
        golden::check_close(weights, get(c.key + ".weights"), c.key + " weights", 1e-10, 1e-12);
        ((out * get(c.key + ".w")).sum() + (weights * get(c.key + ".w2")).sum()).backward();
        golden::check_close(q.grad(), get(c.key + ".gquery"), c.key + " gquery", 1e-10, 1e-12);
        if (cross) {
            golden::check_close(k.grad(), get(c.key + ".gkey"), c.key + " gkey", 1e-10, 1e-12);
            golden::check_close(v.grad(), get(c.key + ".gvalue"), c.key + " gvalue", 1e-10, 1e-12);
        }
        for (auto& [n, p] : mha.named_parameters())
            golden::check_close(p.grad(), get(c.key + ".grad." + n), c.key + " grad " + n, 1e-10, 1e-12);
    }
}

TEST_CASE("MultiheadAttention: gradcheck, per-head weights, self-attention forward, errors") {
    xgrad::manual_seed(1);
    nn::MultiheadAttention mha(4, 2);
    mha.to(xgrad::kFloat64);
    Tensor x = xgrad::randn({3, 2, 4}, xgrad::kFloat64).requires_grad_(true);
    Tensor y = xgrad::randn({5, 2, 4}, xgrad::kFloat64).requires_grad_(true);
    golden::check_gradcheck([&](const std::vector<Tensor>& in) { return mha.forward(in[0], in[1], in[1]).first; },
                            {x, y}, "cross-attention output");
    golden::check_gradcheck([&](const std::vector<Tensor>& in) { return mha.forward(in[0], in[0], in[0]).second; }, {x},
                            "self-attention weights");
    auto [out, per_head] = mha.forward(x, y, y, Tensor(), true, false);
    CHECK(xgrad::to_string(per_head.shape()) == "(2, 2, 3, 5)");
    auto [out2, avg] = mha.forward(x, y, y);
    golden::check_close(avg, per_head.mean({1}), "average of the heads", 1e-12, 1e-14);
    golden::check_close(mha(x), mha.forward(x, x, x, Tensor(), false).first, "forward(x)", 0.0, 0.0);
    CHECK(!mha.forward(x, x, x, Tensor(), false).second.defined());

    Tensor x4 = xgrad::randn({3, 1, 4});
    nn::MultiheadAttention m4(4, 2);
    CHECK(golden::invalid_argument_of([&] { m4.forward(xgrad::randn({4}), xgrad::randn({4}), xgrad::randn({4})); }) ==
          "MultiheadAttention: " + note("error", "mha_query_dim"));
    CHECK(golden::invalid_argument_of([&] {
              m4.forward(x4, x4, x4, xgrad::zeros({2, 3}));
          }) == "MultiheadAttention: The shape of the 2D attn_mask is (2, 3), but should be (3, 3).");
    CHECK(golden::invalid_argument_of([&] {
              m4.forward(xgrad::randn({3, 1, 5}), x4, x4);
          }) == "MultiheadAttention: was expecting embedding dimension of 4, but got 5 (query of shape (3, 1, 5))");
    CHECK(golden::invalid_argument_of([&] {
              m4.forward(x4, x4, xgrad::randn({2, 1, 4}));
          }) == "MultiheadAttention: key shape (3, 1, 4) does not match value shape (2, 1, 4)");
    CHECK(golden::invalid_argument_of([&] {
              m4.forward(x4, xgrad::randn({3, 4}), xgrad::randn({3, 4}));
          }) ==
          "MultiheadAttention: For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D "
          "tensors respectively");
}

TEST_CASE("on CUDA: attention, MultiheadAttention, the new losses and normalize give the CPU's results") {
    if (!xgrad::cuda::is_available()) {
        MESSAGE("no CUDA device: skipped");
        return;
    }
    auto on_both = [](const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& cpu_in) {
        std::vector<Tensor> a, b;
        for (const auto& t : cpu_in) {
            a.push_back(t.clone().requires_grad_(t.is_floating_point()));
            b.push_back(t.cuda().requires_grad_(t.is_floating_point()));
        }
        Tensor ya = fn(a), yb = fn(b);
        CHECK(yb.is_cuda());
        golden::check_close(yb.cpu(), ya, what + " forward", 1e-10, 1e-12);
        Tensor w = xgrad::randn(ya.shape(), xgrad::kFloat64);
        (ya * w).sum().backward();
        (yb * w.cuda()).sum().backward();
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].requires_grad()) golden::check_close(b[i].grad().cpu(), a[i].grad(), what + " grad", 1e-10, 1e-12);
    };
    const auto f64 = xgrad::kFloat64;
    Tensor q = xgrad::randn({2, 4, 3}, f64), k = xgrad::randn({2, 4, 3}, f64), v = xgrad::randn({2, 4, 5}, f64);
    on_both("sdpa causal",
            [](auto& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.0, true); },
            {q, k, v});
    Tensor p = xgrad::rand({3, 4}, f64) * 0.9 + 0.05, t = xgrad::rand({3, 4}, f64);
    on_both("bce", [](auto& in) { return F::binary_cross_entropy(in[0], in[1]); }, {p, t});
    on_both("smooth_l1", [](auto& in) { return F::smooth_l1_loss(in[0], in[1], {.beta = 0.5}); }, {q * 2.0, k});
    on_both("huber", [](auto& in) { return F::huber_loss(in[0], in[1], {.reduction = "none"}); }, {q * 2.0, k});
    on_both("kl_div", [](auto& in) { return F::kl_div(in[0], in[1], {.reduction = "batchmean"}); },
            {F::log_softmax(q, -1), F::softmax(k, -1)});
    on_both("normalize", [](auto& in) { return F::normalize(in[0]); }, {q});
    xgrad::manual_seed(3);
    nn::MultiheadAttention cpu(6, 2), gpu(6, 2);
    cpu.to(f64);
    gpu.to(f64);
    gpu.load_state_dict(cpu.state_dict());
    gpu.to(xgrad::kCUDA);
    Tensor x = xgrad::randn({3, 2, 6}, f64);
    auto [ya, wa] = cpu.forward(x, x, x);
    auto [yb, wb] = gpu.forward(x.cuda(), x.cuda(), x.cuda());
    golden::check_close(yb.cpu(), ya, "MultiheadAttention on CUDA", 1e-10, 1e-12);
    golden::check_close(wb.cpu(), wa, "MultiheadAttention weights on CUDA", 1e-10, 1e-12);
}
