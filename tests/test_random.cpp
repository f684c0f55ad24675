// Tests for random.hpp: every value bit-identical to PyTorch's CPU generator (golden/random.txt).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "replay.hpp"

using xgrad::Tensor;

namespace {

/// Runs one command of random.txt on xgrad, as gen_random.py ran it on PyTorch.
std::vector<Tensor> run(const std::vector<std::string>& w) {
    using replay::dtype, replay::number, replay::shape;
    const std::string& op = w[0];
    if (op == "randn") return {xgrad::randn(shape(w[2]), dtype(w[1]))};
    if (op == "rand") return {xgrad::rand(shape(w[2]), dtype(w[1]))};
    if (op == "normal_" || op == "uniform_") {
        Tensor t = xgrad::empty(shape(w[2]), dtype(w[1]));
        if (op == "normal_") return {xgrad::normal_(t, number(w[3]), number(w[4]))};
        return {xgrad::uniform_(t, number(w[3]), number(w[4]))};
    }
    if (op == "normal_t" || op == "uniform_t") {  // a transposed view of a fresh (cols, rows) tensor
        auto s = shape(w[2]);
        Tensor t = xgrad::empty({s[1], s[0]}, dtype(w[1])).t();
        if (op == "normal_t") return {xgrad::normal_(t, number(w[3]), number(w[4]))};
        return {xgrad::uniform_(t, number(w[3]), number(w[4]))};
    }
    if (op == "randn_like_t" || op == "rand_like_t") {
        auto s = shape(w[2]);
        Tensor x = xgrad::empty({s[1], s[0]}, dtype(w[1])).t();
        return {op == "randn_like_t" ? xgrad::randn_like(x) : xgrad::rand_like(x)};
    }
    if (op == "randn_like") return {xgrad::randn_like(xgrad::empty(shape(w[2]), dtype(w[1])))};
    if (op == "bernoulli_t") {
        auto s = shape(w[2]);
        return {xgrad::bernoulli(xgrad::rand({s[1], s[0]}, dtype(w[1])).t())};
    }
    if (op == "bernoulli_p_t") {
        auto s = shape(w[2]);
        return {xgrad::bernoulli(xgrad::empty({s[1], s[0]}, dtype(w[1])).t(), number(w[3]))};
    }
    if (op == "randint") return {xgrad::randint(std::stoll(w[3]), std::stoll(w[4]), {std::stoll(w[2])}, dtype(w[1]))};
    if (op == "randperm") return {xgrad::randperm(std::stoll(w[2]), dtype(w[1]))};
    if (op == "bernoulli") {
        Tensor p = xgrad::rand({std::stoll(w[2])}, dtype(w[1]));
        return {xgrad::bernoulli(p)};
    }
    if (op == "bernoulli_") {
        Tensor t = xgrad::empty({std::stoll(w[2])}, dtype(w[1]));
        return {xgrad::bernoulli_(t, number(w[3]))};
    }
    if (op == "dropout_mask") {  // F.dropout keeps an element where bernoulli_(1 - p) drew a 1
        Tensor t = xgrad::empty({std::stoll(w[2])}, dtype(w[1]));
        return {xgrad::bernoulli_(t, 1.0 - number(w[3]))};
    }
    if (op == "exponential_") {
        Tensor t = xgrad::empty({std::stoll(w[2])}, dtype(w[1]));
        return {xgrad::exponential_(t, number(w[3]))};
    }
    if (op == "exponential_t") {
        auto s = shape(w[2]);
        Tensor t = xgrad::empty({s[1], s[0]}, dtype(w[1])).t();
        return {xgrad::exponential_(t, number(w[3]))};
    }
    if (op == "multinomial" || op == "multinomial_t") {
        auto s = shape(w[2]);
        Tensor p = op == "multinomial" ? xgrad::rand(s, dtype(w[1])) : xgrad::rand({s[1], s[0]}, dtype(w[1])).t();
        return {xgrad::multinomial(p, std::stoll(w[3]), w[4] == "1")};
    }
    if (op == "multinomial_sparse") {
        const std::int64_t n = std::stoll(w[2]), step = std::stoll(w[3]);
        std::vector<double> weights;
        for (std::int64_t i = 0; i < n; ++i) weights.push_back(i % step == 1 ? static_cast<double>(i + 1) : 0.0);
        Tensor p = xgrad::from_vector(weights, {n}).to(dtype(w[1]));
        return {xgrad::multinomial(p, std::stoll(w[4]), w[5] == "1")};
    }
    if (op == "multinomial_softmax") {
        Tensor logits = xgrad::randn(shape(w[2]), dtype(w[1])) * 2.0;
        return {xgrad::multinomial(xgrad::nn::functional::softmax(logits, -1), std::stoll(w[3]), w[4] == "1")};
    }
    if (op == "gen_randn" || op == "gen_rand") {
        xgrad::Generator gen(std::stoull(w[3]));
        if (op == "gen_randn") return {xgrad::randn(shape(w[2]), dtype(w[1]), &gen)};
        return {xgrad::rand(shape(w[2]), dtype(w[1]), &gen)};
    }
    throw std::runtime_error("unknown command " + op);
}

}  // namespace

TEST_CASE("random values are bit-identical to PyTorch's (golden/random.txt)") {
    auto lines = replay::read_script("random.txt");
    REQUIRE(lines.size() > 300);
    int compared = 0;
    for (const auto& line : lines) {
        if (line.words[0] == "seed") {
            xgrad::manual_seed(std::stoull(line.words[1]));
            continue;
        }
        INFO(line.text);
        CHECK(replay::digest(run(line.words)) == line.expected);
        ++compared;
    }
    CHECK(compared > 300);
}

TEST_CASE("the README example draws PyTorch's randn(2, 5)") {
    xgrad::manual_seed(123);
    auto x = xgrad::randn({2, 5}).to_vector<float>();
    CHECK(x[0] == -0x1.c891bep-4f);  // torch.randn(2, 5)[0, 0] after torch.manual_seed(123)
    CHECK(x[9] == doctest::Approx(-0.1085).epsilon(1e-3));
}

TEST_CASE("the Mersenne Twister draws std::mt19937's stream, and its state reads as std::mt19937's") {
    for (std::uint32_t seed :
         {0u, 1u, 5489u, 0xffffffffu, static_cast<std::uint32_t>(xgrad::Generator::kDefaultSeed)}) {
        std::mt19937 want(seed);
        xgrad::detail::Mt19937 got(seed);
        CHECK(got == xgrad::detail::Mt19937(seed));
        bool same = true;
        for (int i = 0; i < 5 * 624 + 17 && same; ++i) same = got() == want();
        INFO("seed " << seed);
        CHECK(same);
        CHECK_FALSE(got == xgrad::detail::Mt19937(seed));
        // std::mt19937 writes its words and then its position: set() reads them the same way
        std::stringstream text;
        text << want;
        std::uint32_t words[624];
        for (auto& w : words) text >> w;
        int position = 0;
        text >> position;
        CHECK(position == got.position());
        xgrad::detail::Mt19937 restored;
        restored.set(words, position);
        CHECK(restored == got);
        for (int i = 0; i < 1000 && same; ++i) same = restored() == want();
        CHECK(same);
    }
}

TEST_CASE("generators: seeds, copies and the cached normal") {
    xgrad::Generator a(7);
    CHECK(a.initial_seed() == 7);
    xgrad::Generator b = a;  // copies the state
    auto x = xgrad::randn({3}, {}, &a).to_vector<float>();
    auto y = xgrad::randn({3}, {}, &b).to_vector<float>();
    CHECK(x == y);
    CHECK(a.next_double_normal_sample().has_value());  // 3 normals from 2 pairs: one is cached
    a.manual_seed(7);
    CHECK_FALSE(a.next_double_normal_sample().has_value());
    CHECK(xgrad::randn({3}, {}, &a).to_vector<float>() == x);

    xgrad::Generator c;
    CHECK(c.initial_seed() == xgrad::Generator::kDefaultSeed);
    CHECK(&xgrad::manual_seed(3) == &xgrad::default_generator());
    CHECK(xgrad::initial_seed() == 3);
    // Only the low 32 bits of the seed reach the Mersenne Twister, as in PyTorch.
    xgrad::manual_seed(5);
    auto r1 = xgrad::rand({4}).to_vector<float>();
    xgrad::manual_seed((1ULL << 32) + 5);
    CHECK(xgrad::rand({4}).to_vector<float>() == r1);
    CHECK(xgrad::initial_seed() == (1ULL << 32) + 5);
}

TEST_CASE("factories: dtypes, options and _like variants") {
    xgrad::manual_seed(1);
    Tensor r = xgrad::rand({2, 3}, xgrad::TensorOptions{.dtype = xgrad::kFloat64, .requires_grad = true});
    CHECK(r.dtype() == xgrad::kFloat64);
    CHECK(r.shape() == xgrad::Shape{2, 3});
    CHECK(r.requires_grad());
    CHECK(r.is_leaf());
    CHECK(xgrad::randint(5, {4}).dtype() == xgrad::kInt64);
    CHECK(xgrad::randperm(4).dtype() == xgrad::kInt64);

    xgrad::manual_seed(2);
    Tensor like = xgrad::randn_like(r);
    xgrad::manual_seed(2);
    CHECK(like.to_vector<double>() == xgrad::randn({2, 3}, xgrad::kFloat64).to_vector<double>());
    CHECK(xgrad::rand_like(like).dtype() == xgrad::kFloat64);

    xgrad::manual_seed(3);
    auto n = xgrad::normal(2.0, 0.5, {20}).to_vector<float>();
    xgrad::manual_seed(3);
    Tensor e = xgrad::empty({20});
    CHECK(xgrad::normal_(e, 2.0, 0.5).to_vector<float>() == n);

    for (auto v : xgrad::randint(-3, 3, {200}).to_vector<std::int64_t>()) {
        CHECK(v >= -3);
        CHECK(v < 3);
    }
    auto p = xgrad::randperm(50).to_vector<std::int64_t>();
    std::sort(p.begin(), p.end());
    for (std::int64_t i = 0; i < 50; ++i) CHECK(p[static_cast<std::size_t>(i)] == i);
    Tensor ones = xgrad::bernoulli(xgrad::ones({10}), 1.0);
    CHECK(ones.to_vector<float>() == std::vector<float>(10, 1.0f));
}

TEST_CASE("in-place fills respect autograd like PyTorch") {
    Tensor w = xgrad::zeros({3}).requires_grad_();
    CHECK_THROWS_WITH_AS(xgrad::uniform_(w), doctest::Contains("uniform_"), std::invalid_argument);
    CHECK_THROWS_AS(xgrad::normal_(w), std::invalid_argument);
    {
        xgrad::NoGradGuard no_grad;
        xgrad::uniform_(w, 2.0, 3.0);
    }
    for (float v : w.to_vector<float>()) CHECK(v >= 2.0f);
    CHECK(w.is_leaf());
    CHECK(w.requires_grad());
}

TEST_CASE("bad arguments throw std::invalid_argument naming the operation") {
    Tensor f = xgrad::empty({3});
    Tensor i = xgrad::empty({3}, xgrad::kInt64);
    CHECK_THROWS_WITH_AS(xgrad::rand({2, -1}), doctest::Contains("rand"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::randn({-2}), doctest::Contains("randn"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::rand({2}, xgrad::kInt64), doctest::Contains("rand"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::randint(3, 3, {2}), doctest::Contains("randint"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::randint(0, {2}), doctest::Contains("randint"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::randperm(-1), doctest::Contains("randperm"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::uniform_(f, 1.0, 0.0), doctest::Contains("uniform_"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::uniform_(i), doctest::Contains("uniform_"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::normal_(f, 0.0, -1.0), doctest::Contains("normal_"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::bernoulli_(f, 1.5), doctest::Contains("bernoulli_"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::bernoulli(xgrad::full({2}, 2.0)), doctest::Contains("bernoulli"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::rand_like(Tensor()), doctest::Contains("rand_like"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::exponential_(f, -1.0), doctest::Contains("exponential_"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::exponential_(i), doctest::Contains("exponential_"), std::invalid_argument);
}

TEST_CASE("multinomial refuses what PyTorch refuses, before drawing anything") {
    using doctest::Contains;
    const Tensor p = xgrad::tensor({0.1, 0.2, 0.7});
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    auto throws = [](const Tensor& probs, std::int64_t n, bool replacement, const char* says) {
        xgrad::manual_seed(4);
        const auto before = xgrad::get_rng_state();
        CHECK_THROWS_WITH_AS(xgrad::multinomial(probs, n, replacement), Contains(says), std::invalid_argument);
        CHECK(xgrad::get_rng_state() == before);  // nothing drawn
    };
    throws(p, 0, false, "n_sample <= 0");
    throws(p, 4, false, "without replacement (4 > 3)");
    throws(xgrad::zeros({2, 2, 2}), 1, false, "1 or 2 dim");
    throws(xgrad::zeros({}), 1, true, "1 or 2 dim");
    throws(xgrad::tensor({1.0, 2.0}).to(xgrad::kInt64), 1, true, "floating-point");
    for (double bad : {-0.5, nan, inf}) {
        throws(xgrad::tensor({0.5, bad}), 1, false, "`inf`, `nan` or element < 0");
        // With replacement, PyTorch's kernel reports NaN as "< 0" too (its first check is v >= 0).
        throws(xgrad::tensor({0.5, bad}), 2, true, bad == inf ? "infinity or NaN" : "entry < 0");
    }
    throws(xgrad::tensor({{0.5, 0.5}, {0.0, 0.0}}), 1, false, "sum of probabilities <= 0) in row 1");
    throws(xgrad::tensor({{0.5, 0.5}, {0.0, 0.0}}), 3, true, "sum of probabilities <= 0) in row 1");
    throws(Tensor(), 1, false, "multinomial");
    // Empty results are fine, as in PyTorch.
    CHECK(xgrad::multinomial(xgrad::zeros({0, 3}), 2).shape() == xgrad::Shape{0, 2});
}

TEST_CASE("multinomial: shapes, frequencies and zero weights") {
    xgrad::manual_seed(8);
    const Tensor p = xgrad::tensor({0.1, 0.0, 0.2, 0.7});
    const Tensor draws = xgrad::multinomial(p, 20000, true);
    CHECK(draws.dtype() == xgrad::kInt64);
    CHECK(draws.shape() == xgrad::Shape{20000});
    std::vector<int> count(4);
    for (auto d : draws.to_vector<std::int64_t>()) ++count[static_cast<std::size_t>(d)];
    CHECK(count[1] == 0);  // a zero weight is never drawn with replacement
    CHECK(count[0] / 20000.0 == doctest::Approx(0.1).epsilon(0.1));
    CHECK(count[2] / 20000.0 == doctest::Approx(0.2).epsilon(0.05));
    CHECK(count[3] / 20000.0 == doctest::Approx(0.7).epsilon(0.02));
    // Without replacement every category comes out once, the zero weight last.
    auto all = xgrad::multinomial(p, 4).to_vector<std::int64_t>();
    CHECK(all.back() == 1);
    std::sort(all.begin(), all.end());
    CHECK(all == std::vector<std::int64_t>{0, 1, 2, 3});
    // One row per distribution; an explicit generator leaves the default one alone.
    xgrad::Generator gen(3);
    const auto state = xgrad::get_rng_state();
    CHECK(xgrad::multinomial(xgrad::ones({5, 9}), 2, false, &gen).shape() == xgrad::Shape{5, 2});
    CHECK(xgrad::get_rng_state() == state);
}
