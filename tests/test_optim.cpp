// Optimizers and schedulers (optim.hpp) against 50-step PyTorch training runs and lr sequences.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"
#include "xgrad/xgrad.hpp"

namespace {

namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;
using golden::Opts;
using xgrad::Tensor;

const std::string kFile = "optim.txt";

std::vector<std::pair<std::string, Opts>> golden_lines(const std::string& tag) {
    return golden::tagged_lines(kFile, tag);
}

using golden::opt_flag;
using golden::opt_num;

/// The optimizer a golden line describes, with PyTorch's defaults for what it leaves out.
std::unique_ptr<optim::Optimizer> make_optimizer(const std::vector<Tensor>& params, const Opts& o) {
    const std::string& kind = o.at("opt");
    if (kind == "sgd")
        return std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = opt_num(o, "lr", 1e-3),
                                                                      .momentum = opt_num(o, "momentum", 0.0),
                                                                      .dampening = opt_num(o, "dampening", 0.0),
                                                                      .weight_decay = opt_num(o, "weight_decay", 0.0),
                                                                      .nesterov = opt_flag(o, "nesterov"),
                                                                      .maximize = opt_flag(o, "maximize")});
    const std::array<double, 2> betas{opt_num(o, "beta1", 0.9), opt_num(o, "beta2", 0.999)};
    if (kind == "adam")
        return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = opt_num(o, "lr", 1e-3),
                                                                        .betas = betas,
                                                                        .eps = opt_num(o, "eps", 1e-8),
                                                                        .weight_decay = opt_num(o, "weight_decay", 0.0),
                                                                        .amsgrad = opt_flag(o, "amsgrad"),
                                                                        .maximize = opt_flag(o, "maximize")});
    REQUIRE(kind == "adamw");
    return std::make_unique<optim::AdamW>(params, optim::AdamWOptions{.lr = opt_num(o, "lr", 1e-3),
                                                                      .betas = betas,
                                                                      .eps = opt_num(o, "eps", 1e-8),
                                                                      .weight_decay = opt_num(o, "weight_decay", 1e-2),
                                                                      .amsgrad = opt_flag(o, "amsgrad"),
                                                                      .maximize = opt_flag(o, "maximize")});
}

std::unique_ptr<optim::LRScheduler> make_scheduler(optim::Optimizer& opt, const Opts& o) {
    if (!o.count("sched")) return nullptr;
    if (o.at("sched") == "step")
        return std::make_unique<optim::StepLR>(opt, std::stoll(o.at("step_size")), opt_num(o, "gamma", 0.1));
    return std::make_unique<optim::CosineAnnealingLR>(opt, std::stoll(o.at("t_max")), opt_num(o, "eta_min", 0.0));
}

std::string describe(const std::string& key, const Opts& o) {
    std::string s = key;
    for (const auto& [k, v] : o) s += " " + k + "=" + v;
    return s;
}

Tensor golden_leaf(const std::string& name) {
    return golden::get(kFile, name).clone().requires_grad_();
}

}  // namespace

TEST_CASE("SGD, Adam and AdamW updates are PyTorch's bits where the CPU has FMA, contiguous or not") {
    // PyTorch's AVX2 kernels fuse the updates' x.add(y, alpha=a) and addcmul into multiply-adds, and so
    // do xgrad's kernels; without FMA both round the products first (the goldens come from an AVX2 CPU).
    const bool fma = xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2;
    CHECK(golden::check_updates(kFile, make_optimizer, fma) == 16);  // gen_optim.py's 8 updates in two dtypes
}

TEST_CASE("50 optimizer steps match PyTorch's parameters (SGD, Adam, AdamW, with schedulers)") {
    const auto runs = golden_lines("run");
    REQUIRE(runs.size() == 22);  // gen_optim.py's 11 runs in two dtypes
    const Tensor labels = golden::get(kFile, "data.labels");
    for (const auto& run : runs) {
        const auto& key = run.first;  // not structured bindings: clang 14 cannot capture those (INFO)
        const auto& o = run.second;
        INFO(describe(key, o));
        const std::string dt = key.substr(key.rfind('.') + 1);
        const bool f32 = dt == "float32";
        // float32: the 1e-5 relative; float64 shows the update is PyTorch's to rounding.
        const double rtol = f32 ? 1e-5 : 1e-11, atol = f32 ? 1e-7 : 1e-14;
        const Tensor x = golden::get(kFile, "data." + dt + ".x"), y = golden::get(kFile, "data." + dt + ".y");
        Tensor W = golden_leaf(key + ".W0"), b = golden_leaf(key + ".b0");
        auto opt = make_optimizer({W, b}, o);
        auto sched = make_scheduler(*opt, o);
        std::vector<double> losses, lrs;
        for (int step = 0; step < 50; ++step) {
            opt->zero_grad();
            Tensor out = F::linear(x, W, b);
            Tensor loss = o.at("loss") == "mse" ? F::mse_loss(out, y) : F::cross_entropy(out, labels);
            loss.backward();
            lrs.push_back(opt->lr());
            opt->step();
            if (sched) sched->step();
            losses.push_back(loss.item<double>());
        }
        golden::check_close(W, golden::get(kFile, key + ".W"), key + " W", rtol, atol);
        golden::check_close(b, golden::get(kFile, key + ".b"), key + " b", rtol, atol);
        golden::check_close(xgrad::from_vector(losses, {50}, xgrad::kFloat64), golden::get(kFile, key + ".loss"),
                            key + " losses", rtol, atol);
        golden::check_close(xgrad::from_vector(lrs, {50}, xgrad::kFloat64), golden::get(kFile, key + ".lr"),
                            key + " lr", 1e-12, 0.0);
        CHECK(W.is_leaf());
        CHECK(W.requires_grad());
    }
}

TEST_CASE("StepLR and CosineAnnealingLR give PyTorch's learning rates for 30 steps") {
    const auto schedules = golden_lines("schedule");
    REQUIRE(schedules.size() == 4);
    for (const auto& schedule : schedules) {
        const auto& key = schedule.first;  // not structured bindings: clang 14 cannot capture those (INFO)
        const auto& o = schedule.second;
        INFO(describe(key, o));
        Tensor p = xgrad::zeros({1}).requires_grad_();
        optim::SGD opt({p}, {.lr = opt_num(o, "lr", 0.0)});
        auto sched = make_scheduler(opt, o);
        REQUIRE(sched);
        std::vector<double> lrs{sched->get_last_lr().at(0)};
        CHECK(sched->last_epoch() == 0);
        for (int i = 0; i < 30; ++i) {
            opt.step();
            sched->step();
            lrs.push_back(sched->get_last_lr().at(0));
            CHECK(opt.lr() == lrs.back());
        }
        CHECK(sched->last_epoch() == 30);
        golden::check_close(xgrad::from_vector(lrs, {31}, xgrad::kFloat64), golden::get(kFile, key + ".lr"), key, 1e-12,
                            0.0);
    }
}

TEST_CASE("SGD's first momentum buffer is the gradient; zero_grad sets grads to undefined") {
    Tensor w = xgrad::tensor({1.0, 2.0}).requires_grad_();
    optim::SGD sgd({w}, {.lr = 0.1, .momentum = 0.9});
    (w * w).sum().backward();  // grad = 2w = (2, 4)
    sgd.step();
    CHECK(sgd.state(0).momentum_buffer.to_vector<float>() == std::vector<float>{2.0f, 4.0f});
    CHECK(w.to_vector<float>() == std::vector<float>{1.0f - 0.1f * 2.0f, 2.0f - 0.1f * 4.0f});
    sgd.zero_grad();
    CHECK_FALSE(w.grad().defined());
    // A step without gradients changes nothing.
    auto before = w.to_vector<float>();
    sgd.step();
    CHECK(w.to_vector<float>() == before);
    CHECK(sgd.parameters().size() == 1);
    CHECK(sgd.options().momentum == 0.9);
}

TEST_CASE("step skips parameters without a gradient and creates their state lazily") {
    Tensor a = xgrad::tensor({1.0, 2.0}).requires_grad_();
    Tensor b = xgrad::tensor({3.0}).requires_grad_();
    optim::Adam adam({a, b}, {.lr = 0.1});
    (a * a).sum().backward();
    adam.step();
    CHECK(adam.state(0).step == 1);
    CHECK(adam.state(1).step == 0);
    CHECK_FALSE(adam.state(1).exp_avg.defined());
    CHECK(b.item<float>() == 3.0f);
    // Adam's first step moves each element by lr (times sign), up to eps.
    CHECK(a.to_vector<float>()[0] == doctest::Approx(0.9).epsilon(1e-6));
}

TEST_CASE("optimizers train a lazily shaped LayerNorm like an eagerly shaped one") {
    xgrad::manual_seed(7);
    Tensor x = xgrad::randn({4, 6}), y = xgrad::randn({4, 6});
    nn::LayerNorm lazy(1);
    nn::LayerNorm eager(xgrad::Shape{6});
    optim::AdamW opt_lazy(lazy.parameters(), {.lr = 0.05});
    optim::AdamW opt_eager(eager.parameters(), {.lr = 0.05});
    for (int step = 0; step < 5; ++step) {
        for (auto [m, opt] : {std::pair<nn::Module*, optim::Optimizer*>{&lazy, &opt_lazy}, {&eager, &opt_eager}}) {
            opt->zero_grad();
            F::mse_loss((*m)(x), y).backward();
            opt->step();
        }
    }
    golden::check_close(lazy.weight, eager.weight.detach(), "weight", 1e-6, 1e-7);
    golden::check_close(lazy.bias, eager.bias.detach(), "bias", 1e-6, 1e-7);
    CHECK(lazy.weight.to_vector<float>() != std::vector<float>(6, 1.0f));  // it did train
}

TEST_CASE("an optimizer built from a module trains it: the quickstart loop") {
    xgrad::manual_seed(123);
    nn::Linear layer(5, 6);
    Tensor x = xgrad::randn({8, 5}), target = xgrad::randn({8, 6});
    optim::Adam opt(layer.parameters(), {.lr = 1e-2});
    optim::StepLR sched(opt, 50, 0.5);
    double first = 0, last = 0;
    for (int step = 0; step < 100; ++step) {
        opt.zero_grad();
        Tensor loss = F::mse_loss(layer(x), target);
        loss.backward();
        opt.step();
        sched.step();
        (step == 0 ? first : last) = loss.item<double>();
    }
    CHECK(last < 0.8 * first);
    CHECK(opt.lr() == doctest::Approx(2.5e-3));
}

TEST_CASE("bad options throw and name the optimizer") {
    Tensor p = xgrad::zeros({2}).requires_grad_();
    CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = -0.1}), "SGD: invalid learning rate: -0.1", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = 0.1, .momentum = -1}), "SGD: invalid momentum value: -1.0",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = 0.1, .weight_decay = -1e-3}), "SGD: invalid weight_decay value: -0.001",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = 0.1, .nesterov = true}),
                         "SGD: Nesterov momentum requires a momentum and zero dampening", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::SGD({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}),
                         "SGD: Nesterov momentum requires a momentum and zero dampening", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::Adam({p}, {.betas = {1.0, 0.999}}),
                         "Adam: invalid beta parameter at index 0: 1.0 (must be in [0, 1))", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::Adam({p}, {.betas = {0.9, -0.5}}),
                         "Adam: invalid beta parameter at index 1: -0.5 (must be in [0, 1))", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::AdamW({p}, {.eps = -1e-8}), "AdamW: invalid epsilon value: -1e-08",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::AdamW({p}, {.lr = -1.0}), "AdamW: invalid learning rate: -1.0", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::Adam({}, {}), "Adam: got an empty parameter list", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::SGD({p * 2.0}),
                         "SGD: can't optimize a non-leaf tensor (parameter 0 has grad_fn MulBackward0)",
                         std::invalid_argument);
    optim::SGD sgd({p}, {.lr = 0.1});
    CHECK_THROWS_WITH_AS(sgd.set_lr(-1), "SGD: invalid learning rate: -1.0", std::invalid_argument);
    sgd.set_lr(0.5);
    CHECK(sgd.lr() == 0.5);
    CHECK_THROWS_WITH_AS(optim::StepLR(sgd, 0), "StepLR: step_size must be at least 1, got 0", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::CosineAnnealingLR(sgd, 0), "CosineAnnealingLR: T_max must be at least 1, got 0",
                         std::invalid_argument);
    // Defaults are PyTorch's.
    CHECK(optim::AdamWOptions{}.weight_decay == 1e-2);
    CHECK(optim::AdamOptions{}.weight_decay == 0.0);
    CHECK(optim::AdamOptions{}.betas == std::array<double, 2>{0.9, 0.999});
    CHECK(optim::AdamOptions{}.eps == 1e-8);
}

TEST_CASE("SGD's fused kernel gives the composite update's bits (every option, float32 and float64, 6 steps)") {
    // A contiguous parameter takes kernels::sgd_step; the same values held by a transposed
    // (non-contiguous) leaf take the composite path, PyTorch's _single_tensor_sgd as tensor ops.
    struct Case {
        double momentum, dampening, weight_decay;
        bool nesterov, maximize;
    };
    const std::vector<Case> cases{{0.0, 0.0, 0.0, false, false}, {0.0, 0.0, 0.01, false, true},
                                  {0.9, 0.0, 0.0, false, false}, {0.9, 0.1, 0.01, false, false},
                                  {0.9, 0.0, 0.01, true, false}, {0.5, 0.3, 0.0, false, true}};
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        for (const Case& c : cases) {
            INFO("momentum " << c.momentum << ", dampening " << c.dampening << ", weight_decay " << c.weight_decay
                             << ", nesterov " << c.nesterov << ", maximize " << c.maximize << ", " << dtype);
            xgrad::manual_seed(3);
            const Tensor init = xgrad::randn({4, 3}, dtype);
            Tensor fused = init.clone().requires_grad_();
            Tensor composite = init.t().contiguous().t().detach().requires_grad_();
            REQUIRE(fused.is_contiguous());
            REQUIRE_FALSE(composite.is_contiguous());
            const optim::SGDOptions o{.lr = 0.07,
                                      .momentum = c.momentum,
                                      .dampening = c.dampening,
                                      .weight_decay = c.weight_decay,
                                      .nesterov = c.nesterov,
                                      .maximize = c.maximize};
            optim::SGD sgd_fused({fused}, o), sgd_composite({composite}, o);
            for (int step = 0; step < 6; ++step) {
                const Tensor g = xgrad::randn({4, 3}, dtype);
                fused.mutable_grad() = g.clone();
                composite.mutable_grad() = g.clone();
                sgd_fused.step();
                sgd_composite.step();
                CHECK(fused.to_vector<double>() == composite.to_vector<double>());
                if (c.momentum != 0.0)
                    CHECK(sgd_fused.state(0).momentum_buffer.to_vector<double>() ==
                          sgd_composite.state(0).momentum_buffer.to_vector<double>());
            }
            CHECK(fused.to_vector<double>() != init.to_vector<double>());  // the steps did move it
        }
    }
}

namespace {

/// Two sets of leaves holding `init`'s values: one for an optimizer over all of them, one for an
/// optimizer each.
std::pair<std::vector<Tensor>, std::vector<Tensor>> twin_leaves(const std::vector<Tensor>& init) {
    std::vector<Tensor> together, alone;
    for (const Tensor& t : init) {
        together.push_back(t.detach().clone().requires_grad_());
        alone.push_back(t.detach().clone().requires_grad_());
    }
    return {together, alone};
}

/// An optimizer of type Opt with options `o` for each of `params`, parameter `other` with rate `other_lr`.
template <class Opt, class Options>
std::vector<std::unique_ptr<optim::Optimizer>> one_each(const std::vector<Tensor>& params, const Options& o,
                                                        std::size_t other, double other_lr) {
    std::vector<std::unique_ptr<optim::Optimizer>> own;
    for (std::size_t i = 0; i < params.size(); ++i) {
        Options oi = o;
        if (i == other) oi.lr = other_lr;
        own.push_back(std::make_unique<Opt>(std::vector<Tensor>{params[i]}, oi));
    }
    return own;
}

/// Three steps with the same random gradients: `opt` over the `together` parameters, and one optimizer
/// each (`own[i]`) over copies of them (`alone`); after each, the two must hold the same values.
void step_together_and_alone(optim::Optimizer& opt, const std::vector<std::unique_ptr<optim::Optimizer>>& own,
                             std::vector<Tensor>& together, std::vector<Tensor>& alone) {
    for (int step = 0; step < 3; ++step) {
        for (std::size_t i = 0; i < together.size(); ++i) {
            Tensor g = xgrad::randn(together[i].shape(), together[i].dtype());
            together[i].mutable_grad() = g;
            alone[i].mutable_grad() = g.clone();
            own[i]->step();
        }
        opt.step();
        for (std::size_t i = 0; i < together.size(); ++i) {
            CAPTURE(i);
            CHECK(together[i].to(xgrad::kFloat64).to_vector<double>() ==
                  alone[i].to(xgrad::kFloat64).to_vector<double>());
        }
    }
}

}  // namespace

TEST_CASE("Adam's updates, run together at the end of step(), equal each parameter's own optimizer") {
    // Parameters of two dtypes, a second group with another lr, amsgrad in one optimizer, and a
    // non-contiguous leaf (the composite path): the deferred, batched updates must give exactly what an
    // optimizer per parameter gives.
    for (bool amsgrad : {false, true}) {
        CAPTURE(amsgrad);
        xgrad::manual_seed(5);
        std::vector<Tensor> init = {xgrad::randn({3, 4}), xgrad::randn({5}, xgrad::kFloat64), xgrad::randn({2}),
                                    xgrad::randn({4, 3}).t()};
        auto [together, alone] = twin_leaves(init);
        together[3] = init[3].detach().requires_grad_();  // a non-contiguous leaf
        alone[3] = init[3].detach().clone().t().contiguous().t().requires_grad_();
        REQUIRE_FALSE(together[3].is_contiguous());
        const optim::AdamOptions o{.lr = 0.01, .weight_decay = 0.1, .amsgrad = amsgrad};
        optim::Adam opt({together[0], together[1], together[3]}, o);
        opt.add_param_group({together[2]}, {{"lr", 0.2}});
        const auto own = one_each<optim::Adam>(alone, o, 2, 0.2);
        step_together_and_alone(opt, own, together, alone);
    }
}

TEST_CASE("a step that throws at one parameter has updated the ones before it") {
    Tensor a = xgrad::ones({3}).requires_grad_(), b = xgrad::ones({2}).requires_grad_();
    Tensor ref = xgrad::ones({3}).requires_grad_();
    optim::Adam opt({a, b}, {.lr = 0.5});
    optim::Adam ref_opt({ref}, {.lr = 0.5});
    a.mutable_grad() = xgrad::full({3}, 2.0);
    ref.mutable_grad() = xgrad::full({3}, 2.0);
    b.mutable_grad() = xgrad::ones({5});  // the wrong shape
    golden::check_throws([&] { opt.step(); }, {"Adam", "does not match parameter 1"});
    ref_opt.step();
    CHECK(a.to_vector<float>() == ref.to_vector<float>());
    CHECK(a.to_vector<float>() != std::vector<float>{1, 1, 1});
    CHECK(b.to_vector<float>() == std::vector<float>{1, 1});
}

TEST_CASE("SGD's updates, run together at the end of step(), equal each parameter's own optimizer") {
    for (double momentum : {0.0, 0.9}) {
        CAPTURE(momentum);
        xgrad::manual_seed(6);
        std::vector<Tensor> init = {xgrad::randn({3, 4}), xgrad::randn({5}, xgrad::kFloat64), xgrad::randn({2})};
        auto [together, alone] = twin_leaves(init);
        const optim::SGDOptions o{.lr = 0.05, .momentum = momentum, .weight_decay = 0.01, .nesterov = momentum > 0};
        optim::SGD opt({together[0], together[1]}, o);
        opt.add_param_group({together[2]}, {{"lr", 0.3}});
        const auto own = one_each<optim::SGD>(alone, o, 2, 0.3);
        step_together_and_alone(opt, own, together, alone);
    }
}
