// Tests for nn::Module and the basic layers: registration, copies, printing, state dicts, init.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "golden.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;

namespace {

std::map<std::string, std::string> reprs() {
    return golden::reprs("nn_repr.txt");
}

/// A user's model, written as the docs show.
struct Net : nn::Module {
    nn::Linear fc1{5, 6};
    nn::ReLU act;
    nn::LayerNorm norm{Shape{6}};
    nn::Linear fc2{6, 1};
    Net() {
        register_module("fc1", fc1);
        register_module("act", act);
        register_module("norm", norm);
        register_module("fc2", fc2);
    }
    Tensor forward(const Tensor& x) override { return fc2(norm(act(fc1(x)))); }
};

/// A module that tries to register something that is not its member.
struct Bad : nn::Module {
    explicit Bad(Tensor& outside) { register_parameter("w", outside); }
};

std::vector<std::string> names(const nn::NamedTensors& named) {
    std::vector<std::string> out;
    for (const auto& [n, t] : named) out.push_back(n);
    return out;
}

}  // namespace

TEST_CASE("Linear draws its weight and bias exactly as torch.nn.Linear") {
    xgrad::manual_seed(123);
    Tensor x = xgrad::randn({2, 5});
    nn::Sequential layer(nn::Linear(5, 6), nn::ReLU());
    auto& fc = dynamic_cast<nn::Linear&>(layer[0]);
    golden::check_close(x, golden::get("nn.txt", "linear.x"), "randn(2, 5)", 0, 0);
    golden::check_close(fc.weight, golden::get("nn.txt", "linear.weight"), "weight", 0, 0);
    golden::check_close(fc.bias, golden::get("nn.txt", "linear.bias"), "bias", 0, 0);
    Tensor out = layer(x);
    golden::check_close(out, golden::get("nn.txt", "linear.out"), "Linear + ReLU");
    CHECK(out.grad_fn_name() == "ReluBackward0");
    nn::Linear second(6, 3, false);  // continues the same stream
    golden::check_close(second.weight, golden::get("nn.txt", "linear2.weight"), "second weight", 0, 0);
    CHECK_FALSE(second.bias.defined());
    CHECK(fc.weight.requires_grad());
    CHECK(fc.weight.is_leaf());
}

TEST_CASE("modules print exactly as PyTorch prints them") {
    auto expected = reprs();
    CHECK(golden::printed(nn::Sequential(nn::Linear(5, 6), nn::ReLU())) == expected["sequential"]);
    CHECK(golden::printed(nn::Linear(3, 2, false)) == expected["linear_nobias"]);
    CHECK(golden::printed(nn::LayerNorm(Shape{5, 10})) == expected["layernorm"]);
    CHECK(golden::printed(nn::LayerNorm(Shape{10}, 1e-6, false)) == expected["layernorm1"]);
    CHECK(golden::printed(nn::GELU()) == expected["gelu"]);
    CHECK(golden::printed(nn::Dropout(0.25)) == expected["dropout"]);
    CHECK(golden::printed(nn::Sequential(nn::Linear(4, 8), nn::Sequential(nn::Tanh(), nn::Dropout()), nn::Sigmoid(),
                                         nn::Identity())) == expected["nested"]);
    CHECK(golden::printed(Net()) == expected["net"]);
}

TEST_CASE("named_parameters uses PyTorch's dotted names and order") {
    Net net;
    std::string joined;
    for (auto& [name, p] : net.named_parameters()) joined += (joined.empty() ? "" : "\n") + name;
    CHECK(joined == reprs()["net.names"]);
    nn::Sequential seq(nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 1));
    CHECK(names(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    CHECK(seq.parameters().size() == 4);
    CHECK(names(seq.named_parameters(false)).empty());
    std::vector<std::string> modules;
    for (auto& [name, m] : net.named_modules()) modules.push_back(name);
    CHECK(modules == std::vector<std::string>{"", "fc1", "act", "norm", "fc2"});
    CHECK(net.children().size() == 4);
}

TEST_CASE("copying or moving a module keeps its registrations on its own members") {
    Net a;
    Net b = a;  // a copy shares parameter storage, but registrations point at b's members
    CHECK(b.named_parameters()[0].second.impl() == a.fc1.weight.impl());
    b.fc1.weight = xgrad::zeros({6, 5}).requires_grad_();  // replace b's member only
    CHECK(b.named_parameters()[0].second.impl() == b.fc1.weight.impl());
    CHECK(a.named_parameters()[0].second.impl() == a.fc1.weight.impl());
    CHECK(a.named_parameters()[0].second.sum().item<double>() != 0.0);

    Net c = std::move(b);
    CHECK(c.named_parameters()[0].second.impl() == c.fc1.weight.impl());
    CHECK(c.named_parameters()[0].second.sum().item<double>() == 0.0);

    std::vector<Net> nets(2);
    nets.emplace_back();  // reallocation moves every element
    for (auto& n : nets) {
        auto params = n.named_parameters();
        REQUIRE(params.size() == 6);
        CHECK(params[0].second.impl() == n.fc1.weight.impl());
        CHECK(params[5].second.impl() == n.fc2.bias.impl());
        CHECK(n(xgrad::ones({2, 5})).shape() == Shape{2, 1});
    }
}

TEST_CASE("registration errors are clear") {
    Tensor outside = xgrad::zeros({2});
    CHECK_THROWS_WITH_AS(Bad{outside}, doctest::Contains("register_parameter: 'w' is not a data member"),
                         std::invalid_argument);
    struct Twice : nn::Module {
        Tensor w = xgrad::zeros({1});
        Twice() {
            register_parameter("w", w);
            register_parameter("w", w);
        }
    };
    CHECK_THROWS_WITH_AS(Twice{}, doctest::Contains("already registered"), std::invalid_argument);
    struct Dotted : nn::Module {
        Tensor w = xgrad::zeros({1});
        Dotted() { register_parameter("a.b", w); }
    };
    CHECK_THROWS_WITH_AS(Dotted{}, doctest::Contains("contain no '.'"), std::invalid_argument);
    struct NoForward : nn::Module {};
    NoForward nf;
    CHECK_THROWS_WITH_AS(nf(xgrad::ones({1})), "forward: module NoForward does not define forward()",
                         std::invalid_argument);
}

TEST_CASE("Sequential: push_back, indexing, iteration and errors") {
    nn::Sequential seq;
    seq.push_back(nn::Linear(3, 4));
    seq.push_back(std::make_shared<nn::Tanh>());
    CHECK(seq.size() == 2);
    CHECK(seq[-1].name() == "Tanh");
    CHECK_THROWS_WITH_AS(seq[2], "Sequential: index 2 is out of range for 2 modules", std::invalid_argument);
    int count = 0;
    for (const auto& m : seq) count += m != nullptr;
    CHECK(count == 2);
    Tensor y = seq(xgrad::ones({2, 3}));
    CHECK(y.shape() == Shape{2, 4});
    CHECK(y.grad_fn_name() == "TanhBackward0");
}

TEST_CASE("train/eval, zero_grad and dtype conversion in place") {
    Net net;
    CHECK(net.is_training());
    net.eval();
    CHECK_FALSE(net.fc1.is_training());
    net.train();
    CHECK(net.norm.is_training());

    Tensor loss = net(xgrad::ones({3, 5})).sum();
    loss.backward();
    CHECK(net.fc1.weight.grad().defined());
    net.zero_grad();
    for (auto& p : net.parameters()) CHECK_FALSE(p.grad().defined());

    std::vector<Tensor> held = net.parameters();  // as an optimizer holds them
    net.to(xgrad::kFloat64);
    for (auto& p : held) CHECK(p.dtype() == xgrad::kFloat64);
    CHECK(net(xgrad::ones({1, 5}, xgrad::kFloat64)).dtype() == xgrad::kFloat64);
    CHECK_THROWS_WITH_AS(net.to(xgrad::kInt64), doctest::Contains("must stay floating point"), std::invalid_argument);
}

TEST_CASE("state_dict and load_state_dict validate before writing") {
    xgrad::manual_seed(1);
    Net a;
    xgrad::manual_seed(2);
    Net b;
    CHECK(names(a.state_dict()) == names(a.named_parameters()));
    b.load_state_dict(a.state_dict());
    for (std::size_t i = 0; i < a.parameters().size(); ++i)
        golden::check_close(b.parameters()[i], a.parameters()[i], "loaded", 0, 0);
    CHECK(b.fc1.weight.impl() != a.fc1.weight.impl());  // values copied, storage not shared

    nn::NamedTensors state = a.state_dict();
    Tensor before = b.fc2.bias.clone();
    state.back().second = xgrad::zeros({3});  // fc2.bias with the wrong shape
    CHECK_THROWS_WITH_AS(
        b.load_state_dict(state),
        "load_state_dict: size mismatch for fc2.bias: the file has shape (3,), the module has shape (1,)",
        std::invalid_argument);
    state = a.state_dict();
    state.erase(state.begin());
    state.emplace_back("extra", xgrad::zeros({1}));
    state[0].second = xgrad::full({6}, 42.0);  // fc1.bias would change if anything were written
    CHECK_THROWS_WITH_AS(b.load_state_dict(state), doctest::Contains("missing key(s): \"fc1.weight\"."),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(b.load_state_dict(state), doctest::Contains("unexpected key(s): \"extra\"."),
                         std::invalid_argument);
    CHECK(b.fc1.bias.max().item<double>() < 42.0);
    b.load_state_dict(state, /*strict=*/false);  // loads what matches, ignores the rest
    CHECK(b.fc1.bias.min().item<double>() == 42.0);
    golden::check_close(b.fc2.bias, a.fc2.bias, "fc2.bias after non-strict load", 0, 0);
    (void)before;

    state = a.state_dict();
    state[0].second = state[0].second.to(xgrad::kFloat64);
    CHECK_THROWS_WITH_AS(b.load_state_dict(state), doctest::Contains("dtype mismatch for fc1.weight"),
                         std::invalid_argument);
}

TEST_CASE("Dropout draws PyTorch's mask and is the identity in eval mode") {
    xgrad::manual_seed(7);
    golden::check_close(F::dropout(xgrad::ones({4, 5}), 0.3), golden::get("nn.txt", "dropout.p03"), "p=0.3", 0, 0);
    nn::Dropout drop(0.5);
    golden::check_close(drop(xgrad::ones({3, 7}, xgrad::kFloat64)), golden::get("nn.txt", "dropout.p05.f64"), "p=0.5",
                        0, 0);
    golden::check_close(xgrad::rand({3}), golden::get("nn.txt", "dropout.after"), "stream after dropout", 0, 0);
    drop.eval();
    Tensor x = xgrad::randn({2, 3});
    CHECK(drop(x).impl() == x.impl());
    CHECK_THROWS_WITH_AS(nn::Dropout(1.5), doctest::Contains("Dropout: probability has to be between 0 and 1"),
                         std::invalid_argument);
    Tensor xg = xgrad::ones({2, 2}).requires_grad_();
    Tensor y = F::dropout(xg, 1.0);
    CHECK(y.sum().item<double>() == 0.0);
}

TEST_CASE("F::linear matches the composite and checks shapes") {
    xgrad::manual_seed(3);
    Tensor x = xgrad::randn({2, 3, 4}, xgrad::kFloat64).requires_grad_();
    Tensor w = xgrad::randn({5, 4}, xgrad::kFloat64).requires_grad_();
    Tensor b = xgrad::randn({5}, xgrad::kFloat64).requires_grad_();
    golden::check_close(F::linear(x, w, b), xgrad::matmul(x, w.t()) + b, "3-D linear", 1e-12, 1e-12);
    CHECK(F::linear(x.select(0, 0), w, b).grad_fn_name() == "AddmmBackward0");
    golden::check_gradcheck([](const auto& in) { return F::linear(in[0], in[1], in[2]); }, {x, w, b}, "linear 3-D");
    golden::check_gradcheck([](const auto& in) { return F::linear(in[0], in[1]); }, {x.select(1, 0), w},
                            "linear 2-D without bias");
    golden::check_gradcheck([](const auto& in) { return F::linear(in[0], in[1], in[2]); },
                            {x.select(0, 0).select(0, 0), w, b}, "linear 1-D");
    CHECK_THROWS_WITH_AS(
        F::linear(xgrad::ones({2, 3}), xgrad::ones({5, 4})),
        "linear: input of shape (2, 3) does not match weight of shape (5, 4) (last dimension must be 4)",
        std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::linear(xgrad::ones({2, 4}), xgrad::ones({5, 4}), xgrad::ones({4})),
                         "linear: bias of shape (4,) does not match weight of shape (5, 4)", std::invalid_argument);
}

TEST_CASE("activation modules apply their functions") {
    Tensor x = xgrad::tensor({-1.5, 0.0, 2.0});
    golden::check_close(nn::GELU()(x), x.gelu(), "GELU", 0, 0);
    golden::check_close(nn::GELU("tanh")(x), x.gelu("tanh"), "GELU tanh", 0, 0);
    golden::check_close(nn::Tanh()(x), x.tanh(), "Tanh", 0, 0);
    golden::check_close(nn::Sigmoid()(x), x.sigmoid(), "Sigmoid", 0, 0);
    golden::check_close(nn::ReLU()(x), xgrad::tensor({0.0, 0.0, 2.0}), "ReLU", 0, 0);
    CHECK(nn::Identity()(x).impl() == x.impl());
    CHECK_THROWS_WITH_AS(nn::GELU("fast"), doctest::Contains("approximate must be"), std::invalid_argument);
}

TEST_CASE("python_float_repr writes floats as Python's repr") {
    CHECK(nn::python_float_repr(1e-5) == "1e-05");
    CHECK(nn::python_float_repr(1e-6) == "1e-06");
    CHECK(nn::python_float_repr(0.5) == "0.5");
    CHECK(nn::python_float_repr(0.25) == "0.25");
    CHECK(nn::python_float_repr(1.0) == "1.0");
    CHECK(nn::python_float_repr(100.0) == "100.0");
    CHECK(nn::python_float_repr(0.0001) == "0.0001");
    CHECK(nn::python_float_repr(1.5e16) == "1.5e+16");
    CHECK(nn::python_float_repr(-0.1) == "-0.1");
    CHECK(nn::python_float_repr(1.1920928955078125e-07) == "1.1920928955078125e-07");
}

TEST_CASE("Sequential draws several Linears left to right, as PyTorch, whatever C++'s argument order") {
    // GCC builds these arguments right to left; the constructor redraws them in argument order.
    xgrad::manual_seed(0);
    nn::Sequential seq(nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 2));
    for (auto& [name, t] : seq.state_dict()) golden::check_close(t, golden::get("nn.txt", "seq3." + name), name, 0, 0);
    golden::check_close(xgrad::rand({2}), golden::get("nn.txt", "seq3.after"), "generator state after", 0, 0);
    // Braces (left to right by the language) give the same.
    xgrad::manual_seed(0);
    nn::Sequential braced{nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 2)};
    for (auto& [name, t] : braced.state_dict())
        golden::check_close(t, golden::get("nn.txt", "seq3." + name), name, 0, 0);
    // Something drawn between the constructions: nothing is redrawn (the stream cannot be rewound).
    xgrad::manual_seed(0);
    nn::Linear first(5, 6);
    Tensor noise = xgrad::rand({1});
    nn::Linear second(6, 2);
    Tensor w = second.weight.clone();
    nn::Sequential kept(std::move(second), std::move(first));
    golden::check_close(dynamic_cast<nn::Linear&>(kept[0]).weight, w, "not redrawn", 0, 0);
}
