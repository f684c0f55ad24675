// Checks the autograd engine (accumulation, retained graphs, errors, NoGradGuard, memory) and gradcheck itself.
#include <doctest/doctest.h>

#include <pthread.h>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/detail/tensor_impl.hpp"  // detail::record, to build an op with a wrong backward
#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;

namespace {

const char* kFile = "autograd.txt";

Tensor leaf(const std::string& name) {
    return golden::get(kFile, name).clone().requires_grad_();
}

using golden::check_throws;

/// `a * b` whose backward is right for `a` but wrong for element 1 of `b` (3x its gradient there).
Tensor mul_wrong_grad(const Tensor& a, const Tensor& b) {
    Tensor out;
    {
        xgrad::NoGradGuard no_grad;
        out = a * b;
    }
    if (xgrad::detail::needs_grad({&a, &b}))
        xgrad::detail::record(out, "MulWrongBackward", {&a, &b},
                              [a = a.detach(), b = b.detach()](const Tensor& g, const xgrad::detail::NeedsGrad&) {
                                  Tensor mask = xgrad::tensor({1.0, 3.0, 1.0}, xgrad::kFloat64);
                                  return std::vector<Tensor>{g * b, g * a * mask};
                              });
    return out;
}

}  // namespace

TEST_CASE("gradients of graphs that reuse tensors match PyTorch") {
    for (const char* dt : {"float32", "float64"}) {
        const std::string k = std::string(".") + dt;
        const double rtol = std::string(dt) == "float32" ? 1e-5 : 1e-12;
        SUBCASE("one tensor used several times: x * x * x + exp(x) * x") {
            Tensor x = leaf("reuse" + k + ".in0");
            auto f = [](const std::vector<Tensor>& in) { return in[0] * in[0] * in[0] + in[0].exp() * in[0]; };
            Tensor out = f({x});
            golden::check_close(out, golden::get(kFile, "reuse" + k + ".out"), "reuse value", rtol);
            out.backward(golden::get(kFile, "reuse" + k + ".w"));
            golden::check_close(x.grad(), golden::get(kFile, "reuse" + k + ".g0"), "reuse grad", rtol);
            golden::check_gradcheck(f, {x}, "reuse");
        }
        SUBCASE("a diamond: tanh, identity views and two matmuls all reach x") {
            Tensor x = leaf("diamond" + k + ".in0");
            auto f = [](const std::vector<Tensor>& in) {
                Tensor h = in[0].tanh();
                return (h * in[0].t().t() + xgrad::matmul(xgrad::matmul(h, h.t()), in[0])).sum();
            };
            Tensor out = f({x});
            golden::check_close(out, golden::get(kFile, "diamond" + k + ".out"), "diamond value", rtol);
            out.backward();
            golden::check_close(x.grad(), golden::get(kFile, "diamond" + k + ".g0"), "diamond grad", rtol, 1e-5);
            golden::check_gradcheck(f, {x}, "diamond");
        }
        SUBCASE("a layer with a broadcast bias") {
            Tensor x = leaf("mlp" + k + ".in0"), w = leaf("mlp" + k + ".in1"), b = leaf("mlp" + k + ".in2");
            auto f = [](const std::vector<Tensor>& in) { return (xgrad::matmul(in[0], in[1]) + in[2]).tanh(); };
            Tensor out = f({x, w, b});
            golden::check_close(out, golden::get(kFile, "mlp" + k + ".out"), "mlp value", rtol);
            out.backward(golden::get(kFile, "mlp" + k + ".w"));
            golden::check_close(x.grad(), golden::get(kFile, "mlp" + k + ".g0"), "mlp grad x", rtol);
            golden::check_close(w.grad(), golden::get(kFile, "mlp" + k + ".g1"), "mlp grad w", rtol);
            golden::check_close(b.grad(), golden::get(kFile, "mlp" + k + ".g2"), "mlp grad b", rtol);
            golden::check_gradcheck(f, {x, w, b}, "mlp");
        }
        SUBCASE("two backward calls accumulate into grad (+=)") {
            Tensor x = leaf("accumulate" + k + ".in0");
            (x * x).sum().backward();
            Tensor first = x.grad();
            golden::check_close(first, (x * 2.0).detach(), "first grad", rtol);
            x.exp().sum().backward();
            golden::check_close(x.grad(), golden::get(kFile, "accumulate" + k + ".g0"), "accumulated grad", rtol);
        }
    }
}

TEST_CASE("add and sub pass the gradient on to either side, broadcast on the left or the right") {
    Tensor m = xgrad::randn({3, 4}).requires_grad_(), r = xgrad::randn({4}).requires_grad_();
    Tensor g = xgrad::randn({3, 4});
    const Tensor g0 = g.clone(), rows = g.sum(xgrad::Dims{0});  // rows: a broadcast operand's gradient
    for (int order = 0; order < 4; ++order) {
        INFO("order ", order);
        m.mutable_grad() = Tensor();
        r.mutable_grad() = Tensor();
        Tensor out = order == 0 ? m + r : order == 1 ? r + m : order == 2 ? m - r : r - m;
        out.backward(g);
        const double sm = order == 3 ? -1.0 : 1.0, sr = order == 2 ? -1.0 : 1.0;
        CHECK(xgrad::equal(m.grad(), g * sm));
        CHECK(xgrad::equal(r.grad(), rows * sr));
        // The gradients are the leaves' own: editing one leaves the seed and the other as they were.
        xgrad::NoGradGuard no_grad;
        m.mutable_grad().fill_(5.0);
        CHECK(xgrad::equal(r.grad(), rows * sr));
        CHECK(xgrad::equal(g, g0));
    }
    // Only one side needing a gradient, the seed a fresh tensor (the engine's only handle).
    Tensor c = xgrad::randn({3, 4});
    Tensor a = xgrad::randn({3, 4}).requires_grad_();
    ((a + c) * 2.0).sum().backward();
    CHECK(xgrad::equal(a.grad(), xgrad::full({3, 4}, 2.0)));
    Tensor b = xgrad::randn({4}).requires_grad_();
    ((c - b) * 2.0).sum().backward();
    CHECK(xgrad::equal(b.grad(), xgrad::full({4}, -6.0)));
}

TEST_CASE("the first gradient is a copy, not an alias of the seed") {
    Tensor x = xgrad::zeros({3}).requires_grad_();
    Tensor seed = xgrad::ones({3});
    x.backward(seed);  // backward on a leaf: its grad is the seed
    CHECK(x.grad().to_vector<float>() == std::vector<float>{1, 1, 1});
    x.backward(seed);
    CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 2, 2});
    CHECK(seed.to_vector<float>() == std::vector<float>{1, 1, 1});
    Tensor y = xgrad::ones({2}).requires_grad_();
    y.clone().backward(seed.slice(0, 0, 2));  // CloneBackward0 passes the seed itself on
    {
        xgrad::NoGradGuard no_grad;
        y.mutable_grad().fill_(7.0);
    }
    CHECK(seed.to_vector<float>() == std::vector<float>{1, 1, 1});
    // grad() is a reference to the slot (as PyTorch's): it shows later accumulation, and on a
    // non-const handle it takes in-place updates as libtorch's does.
    const Tensor& gx = x.grad();
    x.backward(seed);
    CHECK(gx.to_vector<float>() == std::vector<float>{3, 3, 3});
    {
        xgrad::NoGradGuard no_grad;
        x.grad().zero_();
    }
    CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("retain_graph") {
    Tensor x = xgrad::tensor({1.0, 2.0}).requires_grad_();
    Tensor y = (x * x).sum();
    SUBCASE("true allows a second backward") {
        y.backward(Tensor(), /*retain_graph=*/true);
        y.backward();
        CHECK(x.grad().to_vector<float>() == std::vector<float>{4, 8});
        check_throws([&] { y.backward(); }, {"backward", "second time", "retain_graph"});
    }
    SUBCASE("without it a second backward throws a clear error") {
        y.backward();
        check_throws([&] { y.backward(); }, {"backward", "second time", "retain_graph"});
        CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 4});  // unchanged by the failed call
    }
    SUBCASE("a shared subgraph is freed by the first backward through it") {
        Tensor h = x * 3.0;
        Tensor a = h.sum(), b = (h * h).sum();
        a.backward();
        check_throws([&] { b.backward(); }, {"backward", "second time"});
    }
}

TEST_CASE("backward's gradient argument") {
    Tensor x = xgrad::ones({2, 3}).requires_grad_();
    Tensor y = x * 2.0;
    check_throws([&] { y.backward(); }, {"backward", "one-element", "(2, 3)"});
    check_throws([&] { y.backward(xgrad::ones({3, 2})); }, {"backward", "(3, 2)", "(2, 3)"});
    check_throws([&] { y.backward(xgrad::ones({6})); }, {"backward", "(6,)", "(2, 3)"});
    check_throws([&] { xgrad::ones({2}).backward(xgrad::ones({2})); }, {"backward", "does not require grad"});
    y.backward(xgrad::full({2, 3}, 0.5));
    CHECK(x.grad().to_vector<float>() == std::vector<float>(6, 1.0f));
    // A one-element output of any shape needs no gradient argument.
    Tensor z = xgrad::ones({1, 1}).requires_grad_();
    (z * 3.0).backward();
    CHECK(z.grad().item<float>() == 3.0f);
    // A gradient of another dtype is cast to the output's first, as PyTorch's engine does (PyTorch 1.13
    // gives these values); pow's fused gradient kernel reads g and x as one dtype.
    Tensor p = xgrad::from_vector(std::vector<float>{1.5f, -2.0f, 3.0f}, {3}).requires_grad_();
    p.pow(3.0).backward(xgrad::full({3}, 1.0 / 3.0, xgrad::kFloat64));
    CHECK(p.grad().dtype() == xgrad::kFloat32);
    CHECK(p.grad().to_vector<float>() == std::vector<float>{2.25f, 4.0f, 9.0f});
}

TEST_CASE("leaves, grad_fn and grad") {
    Tensor x = xgrad::ones({2}).requires_grad_();
    Tensor c = xgrad::ones({2});
    CHECK(x.is_leaf());
    CHECK(c.is_leaf());
    CHECK(x.grad_fn_name().empty());
    CHECK_FALSE(x.grad().defined());  // undefined before any backward
    Tensor y = x * c;
    CHECK_FALSE(y.is_leaf());
    CHECK(y.requires_grad());
    CHECK(y.grad_fn_name() == "MulBackward0");
    Tensor k = c * 2.0;  // no input requires grad: a leaf without history
    CHECK(k.is_leaf());
    CHECK_FALSE(k.requires_grad());
    y.sum().backward();
    CHECK_FALSE(c.grad().defined());
    CHECK_FALSE(y.grad().defined());  // non-leaves keep no grad, as PyTorch (without retain_grad)
    CHECK(x.grad().defined());
    check_throws([&] { y.requires_grad_(false); }, {"requires_grad_", "leaf"});
    check_throws([&] { y.requires_grad_(); }, {"requires_grad_", "leaf"});
    check_throws([&] { xgrad::ones({2}, xgrad::kInt64).requires_grad_(); },
                 {"requires_grad_", "only Tensors of floating point dtype can require gradients"});
    x.requires_grad_(false);
    CHECK_FALSE((x * 2.0).requires_grad());
}

TEST_CASE("detach stops gradients and shares storage") {
    Tensor x = xgrad::tensor({1.0, 2.0, 3.0}).requires_grad_();
    Tensor d = x.detach();
    CHECK(d.is_leaf());
    CHECK_FALSE(d.requires_grad());
    CHECK(d.impl()->storage == x.impl()->storage);
    Tensor y = (x * d).sum();  // only the first factor carries a gradient
    y.backward();
    CHECK(x.grad().to_vector<float>() == std::vector<float>{1, 2, 3});
    d.fill_(0.0);  // d is an ordinary leaf: writes are allowed and visible through x
    CHECK(x.to_vector<float>() == std::vector<float>{0, 0, 0});
    Tensor h = (x * 2.0).detach();
    CHECK(h.is_leaf());
    CHECK(h.grad_fn_name().empty());
}

TEST_CASE("NoGradGuard") {
    Tensor x = xgrad::ones({2}).requires_grad_();
    CHECK(xgrad::is_grad_enabled());
    {
        xgrad::NoGradGuard outer;
        CHECK_FALSE(xgrad::is_grad_enabled());
        Tensor y = x * 2.0;
        CHECK_FALSE(y.requires_grad());
        CHECK(y.is_leaf());
        CHECK(y.grad_fn_name().empty());
        CHECK_FALSE(x.t().requires_grad());
        CHECK_FALSE(xgrad::matmul(x, x).requires_grad());
        {
            xgrad::NoGradGuard inner;
            CHECK_FALSE(xgrad::is_grad_enabled());
        }
        CHECK_FALSE(xgrad::is_grad_enabled());  // the inner guard restores "off", not "on"
        xgrad::set_grad_enabled(true);
        CHECK((x * 2.0).requires_grad());
        xgrad::set_grad_enabled(false);
    }
    CHECK(xgrad::is_grad_enabled());
    CHECK((x * 2.0).grad_fn_name() == "MulBackward0");
    xgrad::set_grad_enabled(false);
    { xgrad::NoGradGuard guard; }
    CHECK_FALSE(xgrad::is_grad_enabled());  // restores the state it found
    xgrad::set_grad_enabled(true);
}

TEST_CASE("in-place updates of a leaf that requires grad need NoGradGuard") {
    Tensor w = xgrad::ones({3}).requires_grad_();
    check_throws([&] { w.add_(1.0); }, {"add_", "leaf", "NoGradGuard"});
    check_throws([&] { w.sub_(xgrad::ones({3})); }, {"leaf"});
    check_throws([&] { w.mul_(2.0); }, {"mul_", "leaf"});
    check_throws([&] { w.zero_(); }, {"leaf"});
    check_throws([&] { w.copy_(xgrad::zeros({3})); }, {"copy_", "leaf"});
    check_throws([&] { w *= 2.0; }, {"leaf"});
    check_throws([&] { (w * 2.0).fill_(0.0); }, {"fill_", "recorded operation"});
    CHECK(w.to_vector<float>() == std::vector<float>{1, 1, 1});
    (w * w).sum().backward();
    {
        xgrad::NoGradGuard no_grad;
        w.sub_(w.grad() * 0.25);  // an SGD step
        w += 1.0;
    }
    CHECK(w.to_vector<float>() == std::vector<float>{1.5f, 1.5f, 1.5f});
    CHECK(w.is_leaf());
    CHECK(w.requires_grad());
    w.mutable_grad() = Tensor();  // as zero_grad(set_to_none=True)
    (w * 2.0).sum().backward();
    CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 2, 2});
}

TEST_CASE("gradcheck passes on correct backward functions") {
    Tensor a = xgrad::tensor({0.5, -1.0, 2.0}, xgrad::kFloat64).requires_grad_();
    Tensor b = xgrad::tensor({1.5, 0.25, -3.0}, xgrad::kFloat64).requires_grad_();
    auto r = xgrad::autograd::gradcheck([](const auto& in) { return in[0] * in[1]; }, {a, b});
    CHECK(r.ok);
    CHECK(static_cast<bool>(r));
    CHECK(r.input == -1);
    // float32 inputs are checked in float64; a non-differentiable input (no requires_grad) is left alone.
    Tensor f = xgrad::tensor({{0.5, -1.0}, {2.0, 3.0}}).requires_grad_();
    Tensor c = xgrad::tensor({2.0, 1.0});
    CHECK(xgrad::autograd::gradcheck([](const auto& in) { return xgrad::matmul(in[0], in[1]); }, {f, c}).ok);
    CHECK_FALSE(f.grad().defined());  // the caller's tensors are untouched
    // An integer input stays an integer.
    Tensor i = xgrad::tensor({2.0}, xgrad::kInt64);
    CHECK(xgrad::autograd::gradcheck(
              [](const auto& in) {
                  REQUIRE(in[1].dtype() == xgrad::kInt64);
                  return in[0] * static_cast<double>(in[1].template item<std::int64_t>());
              },
              {a, i})
              .ok);
}

TEST_CASE("gradcheck fails on a wrong backward and says where") {
    SUBCASE("an op whose recorded backward is wrong for one element") {
        Tensor a = xgrad::tensor({0.5, -1.0, 2.0}, xgrad::kFloat64).requires_grad_();
        Tensor b = xgrad::tensor({1.5, 0.25, -3.0}, xgrad::kFloat64).requires_grad_();
        auto r = xgrad::autograd::gradcheck([](const auto& in) { return mul_wrong_grad(in[0], in[1]); }, {a, b});
        INFO(r.message);
        CHECK_FALSE(r.ok);
        CHECK_FALSE(static_cast<bool>(r));
        CHECK(r.input == 1);
        CHECK(r.element == 1);
        CHECK(r.output == 1);
        CHECK(r.analytic == doctest::Approx(-3.0));  // 3 * a[1]
        CHECK(r.numeric == doctest::Approx(-1.0).epsilon(1e-6));
        CHECK(r.message.find("input 1") != std::string::npos);
        CHECK(r.message.find("element 1") != std::string::npos);
        // Only b's gradient is wrong: with b constant the check passes.
        CHECK(xgrad::autograd::gradcheck([&](const auto& in) { return mul_wrong_grad(in[0], b.detach()); }, {a}).ok);
    }
    SUBCASE("a value that depends on x through a detached path") {
        Tensor x = xgrad::tensor({{1.0, 2.0}, {-0.5, 0.25}}, xgrad::kFloat64).requires_grad_();
        auto r = xgrad::autograd::gradcheck([](const auto& in) { return in[0].detach() * in[0]; }, {x});
        CHECK_FALSE(r.ok);
        CHECK(r.input == 0);
        CHECK(r.element == 0);
        CHECK(r.analytic == doctest::Approx(1.0));
        CHECK(r.numeric == doctest::Approx(2.0).epsilon(1e-6));
    }
    SUBCASE("a function that does not record at all") {
        Tensor x = xgrad::tensor({1.0, 2.0}, xgrad::kFloat64).requires_grad_();
        auto r = xgrad::autograd::gradcheck([](const auto& in) { return in[0].detach() * 3.0; }, {x});
        CHECK_FALSE(r.ok);
        CHECK(r.analytic == 0.0);
        CHECK(r.numeric == doctest::Approx(3.0));
    }
}

TEST_CASE("graphs hold no reference cycles: everything is freed with the last handle") {
    std::weak_ptr<xgrad::detail::TensorImpl> inter;
    std::weak_ptr<xgrad::detail::Node> node, root;
    std::weak_ptr<xgrad::detail::Storage> storage;
    Tensor x = xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();
    auto build = [&] {
        Tensor h = xgrad::matmul(x, x.t()).tanh().exp();  // saves its output
        Tensor v = h.slice(1, 0, 1).expand({2, 2});
        inter = h.impl();
        node = h.impl()->grad_fn;
        storage = h.impl()->storage;
        Tensor loss = (v * h).sum();
        root = loss.impl()->grad_fn;
        return loss;
    };
    SUBCASE("without backward") {
        {
            Tensor loss = build();
            CHECK_FALSE(node.expired());
            CHECK_FALSE(storage.expired());  // saved by the graph for backward
        }
        CHECK(inter.expired());
        CHECK(node.expired());
        CHECK(root.expired());
        CHECK(storage.expired());
    }
    SUBCASE("after backward") {
        {
            Tensor loss = build();
            loss.backward();
            CHECK_FALSE(root.expired());
        }
        CHECK(inter.expired());
        CHECK(node.expired());
        CHECK(root.expired());
        CHECK(storage.expired());
        CHECK(x.grad().defined());
    }
    SUBCASE("after backward with retain_graph") {
        {
            Tensor loss = build();
            loss.backward(Tensor(), true);
        }
        CHECK(node.expired());
        CHECK(root.expired());
        CHECK(storage.expired());
    }
}

/// Runs `f` on a thread with a 512 KiB stack, the default for secondary threads on macOS: recursion
/// proportional to the graph's depth shows up here even where the main thread's 8 MiB would hide it.
void run_on_small_stack(std::function<void()> f) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    pthread_t thread;
    auto body = [](void* p) -> void* {
        (*static_cast<std::function<void()>*>(p))();
        return nullptr;
    };
    REQUIRE(pthread_create(&thread, &attr, body, &f) == 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
}

TEST_CASE("a chain of 10^5 ops: backward and freeing the graph do not overflow the stack") {
    Tensor x = leaf("deep.float32.in0");
    std::weak_ptr<xgrad::detail::Node> first, last;
    Tensor y_value, x_grad;
    run_on_small_stack([&] {
        {
            Tensor y = x;
            for (int i = 0; i < 100000; ++i) {
                y = y * 1.0001;
                if (i == 0) first = y.impl()->grad_fn;
            }
            y_value = y.detach();
            y.sum().backward();
        }
        // And a deep graph dropped without any backward.
        Tensor y = x;
        for (int i = 0; i < 100000; ++i) y = y * 1.0001;
        last = y.impl()->grad_fn;
    });
    CHECK(first.expired());
    CHECK(last.expired());
    golden::check_close(y_value, golden::get(kFile, "deep.float32.out"), "deep value", 1e-4);
    golden::check_close(x.grad(), golden::get(kFile, "deep.float32.g0"), "deep grad", 1e-4);
}

TEST_CASE("transpose's backward, in place on a gradient nobody else holds and as a view on a shared one") {
    // A product's weight gradient comes back transposed and is swapped back in place (one handle).
    Tensor x = xgrad::randn({4, 2}), c = xgrad::randn({4, 3});
    Tensor w = xgrad::randn({3, 2}).requires_grad_();
    (xgrad::matmul(x, w.t()) * c).sum().backward();
    CHECK(w.grad().shape() == xgrad::Shape{3, 2});
    CHECK(w.grad().is_contiguous());
    CHECK(xgrad::equal(w.grad(), xgrad::matmul(c.t(), x)));  // the same BLAS call: the same bits
    // One gradient handle reaches two transposes: the first makes a view, the second swaps in place
    // once the first has let go; neither may see the other's change.
    Tensor g = xgrad::randn({2, 3});
    Tensor w1 = xgrad::randn({3, 2}).requires_grad_(), w2 = xgrad::randn({3, 2}).requires_grad_();
    ((w1.t() + w2.t()) * g).sum().backward();  // the product's fresh gradient, passed on twice
    CHECK(w1.grad().shape() == xgrad::Shape{3, 2});
    CHECK(w2.grad().shape() == xgrad::Shape{3, 2});
    CHECK(xgrad::equal(w1.grad(), g.t()));
    CHECK(xgrad::equal(w2.grad(), g.t()));
    // Both come back transposed (a view, and a gradient swapped in place that nothing else holds):
    // each row-major leaf's grad is a row-major copy, as PyTorch's (strides (2, 1)), never the
    // transposed tensor itself.
    CHECK(w1.grad().strides() == xgrad::Strides{2, 1});
    CHECK(w2.grad().strides() == xgrad::Strides{2, 1});
    // The caller's own gradient reaches the transpose directly: it is left as it was.
    Tensor w3 = xgrad::randn({3, 2}).requires_grad_();
    w3.t().backward(g);
    CHECK(g.shape() == xgrad::Shape{2, 3});
    CHECK(g.strides() == xgrad::Strides{3, 1});
    CHECK(xgrad::equal(w3.grad(), g.t()));
    // transpose(d0, d1) of a 3-D tensor, negative dims
    Tensor v = xgrad::randn({2, 3, 4}).requires_grad_();
    Tensor gv = xgrad::randn({4, 3, 2});
    (v.transpose(-1, 0) * 1.0).backward(gv);
    CHECK(v.grad().shape() == xgrad::Shape{2, 3, 4});
    CHECK(xgrad::equal(v.grad(), gv.transpose(0, 2)));
}

TEST_CASE("version counters: views and detach share one, in-place ops bump it, unsaved inputs may change") {
    Tensor x = xgrad::randn({2, 3});
    Tensor w = xgrad::randn({2, 3}).requires_grad_();
    // add saves neither input: editing one afterwards is fine, as in PyTorch.
    Tensor y = (w + x).sum();
    x.mul_(2.0);
    y.backward();
    CHECK(w.grad().to_vector<float>() == std::vector<float>(6, 1.0f));
    // A view's edit is an edit of its base; so is a NoGradGuard edit of a parameter after the forward.
    Tensor z = (w * x).sum();
    x.select(0, 1).fill_(0.0);
    CHECK_THROWS_WITH_AS(z.backward(),
                         doctest::Contains("[float32 [2, 3]], saved by MulBackward0, is at version 2; "
                                           "expected version 1 instead"),
                         std::invalid_argument);
    // retain_graph then an optimizer-style update: the second backward refuses to use stale values.
    w.mutable_grad() = Tensor();
    Tensor loss = (w * w).sum();
    loss.backward({}, /*retain_graph=*/true);
    {
        xgrad::NoGradGuard no_grad;
        w.sub_(w.grad() * 0.1);
    }
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("saved by MulBackward0, is at version 1"),
                         std::invalid_argument);
}
