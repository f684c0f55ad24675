// Tests for nn/init.hpp: initialisers bit-identical to torch.nn.init (golden/nn_init.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "replay.hpp"

using xgrad::Tensor;
namespace init = xgrad::nn::init;

namespace {

/// Runs one command of nn_init.txt on xgrad, as gen_random.py ran it on PyTorch.
std::vector<Tensor> run(const std::vector<std::string>& w) {
    using replay::dtype, replay::number, replay::shape;
    const std::string& op = w[0];
    if (op == "randn") return {xgrad::randn(shape(w[2]), dtype(w[1]))};
    if (op == "rand") return {xgrad::rand(shape(w[2]), dtype(w[1]))};
    if (op == "linear") {  // nn.Linear(in, out).reset_parameters()
        std::int64_t in = std::stoll(w[1]), out = std::stoll(w[2]);
        Tensor weight = xgrad::empty({out, in}).requires_grad_();
        Tensor bias = xgrad::empty({out}).requires_grad_();
        init::kaiming_uniform_(weight, std::sqrt(5.0));
        auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
        double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
        init::uniform_(bias, -bound, bound);
        return {weight, bias};
    }
    Tensor t = xgrad::empty(shape(w[2]), dtype(w[1]));
    if (op == "kaiming_uniform_") return {init::kaiming_uniform_(t, number(w[3]), w[4], w[5])};
    if (op == "kaiming_normal_") return {init::kaiming_normal_(t, number(w[3]), w[4], w[5])};
    if (op == "xavier_uniform_") return {init::xavier_uniform_(t, number(w[3]))};
    if (op == "xavier_normal_") return {init::xavier_normal_(t, number(w[3]))};
    if (op == "uniform_") return {init::uniform_(t, number(w[3]), number(w[4]))};
    if (op == "normal_") return {init::normal_(t, number(w[3]), number(w[4]))};
    if (op == "constant_") return {init::constant_(t, number(w[3]))};
    if (op == "ones_") return {init::ones_(t)};
    if (op == "zeros_") return {init::zeros_(t)};
    throw std::runtime_error("unknown command " + op);
}

}  // namespace

TEST_CASE("nn::init is bit-identical to torch.nn.init (golden/nn_init.txt)") {
    auto lines = replay::read_script("nn_init.txt");
    REQUIRE(lines.size() > 100);
    for (const auto& line : lines) {
        INFO(line.text);
        if (line.words[0] == "seed") {
            xgrad::manual_seed(std::stoull(line.words[1]));
        } else if (line.words[0] == "gain") {
            std::optional<double> param;
            if (line.words[2] != "none") param = replay::number(line.words[2]);
            CHECK(replay::float_hex(init::calculate_gain(line.words[1], param)) == line.expected);
        } else {
            CHECK(replay::digest(run(line.words)) == line.expected);
        }
    }
}

TEST_CASE("nn.Linear(5, 6)'s initial parameters after seed 123 and randn(2, 5)") {
    xgrad::manual_seed(123);
    xgrad::randn({2, 5});
    Tensor w = xgrad::empty({6, 5}).requires_grad_();
    Tensor b = xgrad::empty({6}).requires_grad_();
    init::kaiming_uniform_(w, std::sqrt(5.0));
    init::uniform_(b, -1 / std::sqrt(5.0), 1 / std::sqrt(5.0));
    // The first "linear 5 6" line holds torch.nn.Linear(5, 6)'s weight and bias in that state.
    auto golden = replay::read_script("nn_init.txt");
    CHECK(replay::digest({w, b}) == golden[2].expected);
    CHECK(w.is_leaf());
    CHECK(w.requires_grad());
    CHECK(w.grad_fn_name().empty());
}

TEST_CASE("fans and gains") {
    auto [in, out] = init::calculate_fan_in_and_fan_out(xgrad::empty({16, 4, 5}));
    CHECK(in == 20);
    CHECK(out == 80);
    CHECK(init::calculate_gain("relu") == std::sqrt(2.0));
    CHECK(init::calculate_gain("tanh") == 5.0 / 3);
    Tensor none = xgrad::empty({0, 3});
    CHECK(init::kaiming_uniform_(none).numel() == 0);  // a no-op, as PyTorch
}

TEST_CASE("bad arguments throw std::invalid_argument naming the operation") {
    Tensor v = xgrad::empty({4});
    Tensor m = xgrad::empty({4, 3});
    CHECK_THROWS_WITH_AS(init::calculate_fan_in_and_fan_out(v), doctest::Contains("fewer than 2 dimensions"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(init::xavier_uniform_(v), doctest::Contains("fan"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(init::kaiming_normal_(m, 0.0, "fan_avg"), doctest::Contains("kaiming_normal_"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(init::calculate_gain("swish"), doctest::Contains("calculate_gain"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(init::normal_(m, 0.0, -1.0), doctest::Contains("normal_"), std::invalid_argument);
}
