// RMSprop, Adagrad, Adamax, Adadelta, parameter groups, state_dict and checkpoints, the new schedulers,
// gradient clipping, generator state and to_dot, against PyTorch's numbers (gen_optim_more.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
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

const std::string kFile = "optim_more.txt";

std::vector<std::pair<std::string, Opts>> golden_lines(const std::string& tag) {
    return golden::tagged_lines(kFile, tag);
}

using golden::opt_flag;
using golden::opt_num;

std::unique_ptr<optim::Optimizer> make_optimizer(const std::vector<Tensor>& params, const Opts& o) {
    const std::string& kind = o.at("opt");
    if (kind == "sgd")
        return std::make_unique<optim::SGD>(
            params, optim::SGDOptions{.lr = opt_num(o, "lr", 1e-3), .momentum = opt_num(o, "momentum", 0.0)});
    if (kind == "adam") return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = opt_num(o, "lr", 1e-3)});
    if (kind == "rmsprop")
        return std::make_unique<optim::RMSprop>(params,
                                                optim::RMSpropOptions{.lr = opt_num(o, "lr", 1e-2),
                                                                      .alpha = opt_num(o, "alpha", 0.99),
                                                                      .eps = opt_num(o, "eps", 1e-8),
                                                                      .weight_decay = opt_num(o, "weight_decay", 0),
                                                                      .momentum = opt_num(o, "momentum", 0),
                                                                      .centered = opt_flag(o, "centered"),
                                                                      .maximize = opt_flag(o, "maximize")});
    if (kind == "adagrad")
        return std::make_unique<optim::Adagrad>(
            params, optim::AdagradOptions{.lr = opt_num(o, "lr", 1e-2),
                                          .lr_decay = opt_num(o, "lr_decay", 0),
                                          .weight_decay = opt_num(o, "weight_decay", 0),
                                          .initial_accumulator_value = opt_num(o, "initial_accumulator_value", 0),
                                          .eps = opt_num(o, "eps", 1e-10),
                                          .maximize = opt_flag(o, "maximize")});
    if (kind == "adamax")
        return std::make_unique<optim::Adamax>(
            params, optim::AdamaxOptions{.lr = opt_num(o, "lr", 2e-3),
                                         .betas = {opt_num(o, "beta1", 0.9), opt_num(o, "beta2", 0.999)},
                                         .eps = opt_num(o, "eps", 1e-8),
                                         .weight_decay = opt_num(o, "weight_decay", 0),
                                         .maximize = opt_flag(o, "maximize")});
    REQUIRE(kind == "adadelta");
    return std::make_unique<optim::Adadelta>(params,
                                             optim::AdadeltaOptions{.lr = opt_num(o, "lr", 1.0),
                                                                    .rho = opt_num(o, "rho", 0.9),
                                                                    .eps = opt_num(o, "eps", 1e-6),
                                                                    .weight_decay = opt_num(o, "weight_decay", 0),
                                                                    .maximize = opt_flag(o, "maximize")});
}

/// The scheduler a golden line names; `keep` holds SequentialLR's parts.
std::unique_ptr<optim::LRScheduler> make_scheduler(optim::Optimizer& opt, const Opts& o,
                                                   std::vector<std::unique_ptr<optim::LRScheduler>>& keep) {
    if (!o.count("sched")) return nullptr;
    const std::string& s = o.at("sched");
    if (s == "lambda")
        return std::make_unique<optim::LambdaLR>(opt, [](std::int64_t e) { return std::pow(0.95, double(e)); });
    if (s == "linear")
        return std::make_unique<optim::LinearLR>(opt, opt_num(o, "start", 0), opt_num(o, "end", 0),
                                                 std::stoll(o.at("iters")));
    if (s == "onecycle")
        return std::make_unique<optim::OneCycleLR>(opt, opt_num(o, "max_lr", 0),
                                                   optim::OneCycleOptions{.total_steps = std::stoll(o.at("total")),
                                                                          .pct_start = opt_num(o, "pct", 0.3),
                                                                          .anneal_cos = o.count("anneal") == 0,
                                                                          .three_phase = opt_flag(o, "three")});
    REQUIRE(s == "sequential");
    keep.push_back(std::make_unique<optim::LinearLR>(opt, 0.1, 1.0, 5));
    keep.push_back(std::make_unique<optim::CosineAnnealingLR>(opt, 10, 0.001));
    keep.push_back(std::make_unique<optim::StepLR>(opt, 3, 0.5));
    return std::make_unique<optim::SequentialLR>(
        opt, std::vector<optim::LRScheduler*>{keep[0].get(), keep[1].get(), keep[2].get()},
        std::vector<std::int64_t>{5, 18});
}

std::string describe(const std::string& key, const Opts& o) {
    std::string s = key;
    for (const auto& [k, v] : o) s += " " + k + "=" + v;
    return s;
}

Tensor vec(const std::vector<double>& v) {
    return xgrad::from_vector(v, {static_cast<std::int64_t>(v.size())}, xgrad::kFloat64);
}

}  // namespace

TEST_CASE("50 steps of RMSprop, Adagrad, Adamax, Adadelta, parameter groups and schedulers match PyTorch") {
    const auto runs = golden_lines("run");
    REQUIRE(runs.size() == 22);
    const Tensor labels = golden::get(kFile, "data.labels");
    for (const auto& run : runs) {
        const auto& key = run.first;
        const auto& o = run.second;
        INFO(describe(key, o));
        const std::string dt = key.substr(key.rfind('.') + 1);
        const bool f32 = dt == "float32";
        const double rtol = f32 ? 1e-5 : 1e-11, atol = f32 ? 1e-7 : 1e-14;
        const Tensor x = golden::get(kFile, "data." + dt + ".x"), y = golden::get(kFile, "data." + dt + ".y");
        Tensor W = golden::get(kFile, "data." + dt + ".W").clone().requires_grad_();
        Tensor b = golden::get(kFile, "data." + dt + ".b").clone().requires_grad_();
        const bool groups = o.count("groups") != 0;
        auto opt = make_optimizer(groups ? std::vector<Tensor>{W} : std::vector<Tensor>{W, b}, o);
        if (groups) opt->add_param_group({b}, {{"lr", opt_num(o, "lr_b", 0)}});
        std::vector<std::unique_ptr<optim::LRScheduler>> keep;
        auto sched = make_scheduler(*opt, o, keep);
        std::vector<double> losses, lrs;
        for (int step = 0; step < 50; ++step) {
            opt->zero_grad();
            Tensor out = F::linear(x, W, b);
            Tensor loss = o.at("loss") == "mse" ? F::mse_loss(out, y) : F::cross_entropy(out, labels);
            loss.backward();
            if (o.count("clip")) nn::utils::clip_grad_norm_({W, b}, opt_num(o, "clip", 0));
            lrs.push_back(opt->lr());
            opt->step();
            if (sched) sched->step();
            losses.push_back(loss.item<double>());
        }
        golden::check_close(W, golden::get(kFile, key + ".W"), key + " W", rtol, atol);
        golden::check_close(b, golden::get(kFile, key + ".b"), key + " b", rtol, atol);
        golden::check_close(vec(losses), golden::get(kFile, key + ".loss"), key + " losses", rtol, atol);
        golden::check_close(vec(lrs), golden::get(kFile, key + ".lr"), key + " lr", 1e-12, 0.0);
    }
}

TEST_CASE("RMSprop, Adagrad, Adamax and Adadelta updates are PyTorch's bits where the CPU has FMA") {
    // Their x.add(y, alpha=a) and addcmul are fused multiply-adds in PyTorch's AVX2 kernels and in
    // xgrad's; without FMA both round the products first (the goldens come from an AVX2 CPU).
    const bool fma = xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2;
    CHECK(golden::check_updates(kFile, make_optimizer, fma) == 10);  // gen_optim_more.py's 5 updates, two dtypes
}

TEST_CASE("LambdaLR, LinearLR, OneCycleLR and SequentialLR give PyTorch's rates on two groups for 30 steps") {
    const auto schedules = golden_lines("schedule");
    REQUIRE(schedules.size() == 6);
    for (const auto& schedule : schedules) {
        const auto& key = schedule.first;
        const auto& o = schedule.second;
        INFO(describe(key, o));
        Tensor p = xgrad::zeros({1}).requires_grad_(), q = xgrad::zeros({1}).requires_grad_();
        const double lr = opt_num(o, "lr", 0);
        std::unique_ptr<optim::Optimizer> opt;
        if (o.count("opt"))
            opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions{.lr = lr});
        else
            opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions{.lr = lr, .momentum = 0.9});
        opt->add_param_group({q}, {{"lr", lr / 2}});
        std::vector<std::unique_ptr<optim::LRScheduler>> keep;
        auto sched = make_scheduler(*opt, o, keep);
        std::vector<double> lrs = sched->get_last_lr(), moms;
        for (int i = 0; i < 30; ++i) {
            opt->step();
            sched->step();
            for (double v : sched->get_last_lr()) lrs.push_back(v);
            moms.push_back(opt->option(1, o.count("opt") ? "beta1" : "momentum"));
        }
        golden::check_close(vec(lrs), golden::get(kFile, key + ".lr"), key, 1e-12, 1e-18);
        golden::check_close(vec(moms), golden::get(kFile, key + ".momentum"), key + " momentum", 1e-12, 0.0);
    }
}

TEST_CASE("ReduceLROnPlateau reduces each group's rate as PyTorch's on the same metrics") {
    const auto metrics = golden::get(kFile, "plateau.metrics").to_vector<double>();
    const std::vector<std::pair<std::string, optim::PlateauOptions>> cases{
        {"plateau_min", {.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = {0.004}}},
        {"plateau_max_abs", {.mode_max = true, .factor = 0.3, .patience = 1, .threshold = 0.05, .threshold_abs = true}},
        {"plateau_default", {}}};
    for (const auto& c : cases) {
        INFO(c.first);
        Tensor p = xgrad::zeros({1}).requires_grad_(), q = xgrad::zeros({1}).requires_grad_();
        optim::SGD opt({p}, {.lr = 0.1});
        opt.add_param_group({q}, {{"lr", 0.05}});
        optim::ReduceLROnPlateau sched(opt, c.second);
        std::vector<double> lrs;
        for (double m : metrics) {
            sched.step(m);
            for (double v : sched.get_last_lr()) lrs.push_back(v);
        }
        golden::check_close(vec(lrs), golden::get(kFile, c.first + ".lr"), c.first, 1e-15, 0.0);
    }
}

TEST_CASE("clip_grad_norm_ and clip_grad_value_ scale gradients as PyTorch's and return the total norm") {
    for (const std::string dt : {"float32", "float64"}) {
        const double rtol = dt == "float32" ? 2e-6 : 1e-13;
        auto fresh = [&] {
            std::vector<Tensor> ps;
            for (int i = 0; i < 2; ++i) {
                Tensor g = golden::get(kFile, "clip." + dt + ".g" + std::to_string(i));
                Tensor p = xgrad::zeros_like(g).requires_grad_();
                p.mutable_grad() = g.clone();
                ps.push_back(p);
            }
            return ps;
        };
        for (auto [p, m] : std::vector<std::pair<double, double>>{
                 {2.0, 1.0}, {1.0, 2.0}, {INFINITY, 0.5}, {3.0, 0.8}, {2.0, 100.0}}) {
            const std::string key = "clip." + dt + ".p" + (std::isinf(p) ? "inf" : nn::python_float_repr(p)) + ".m" +
                                    nn::python_float_repr(m);
            INFO(key);
            auto ps = fresh();
            Tensor total = nn::utils::clip_grad_norm_(ps, m, p);
            golden::check_close(total, golden::get(kFile, key + ".total"), key + " total", rtol, 0.0);
            for (int i = 0; i < 2; ++i)
                golden::check_close(ps[i].grad(), golden::get(kFile, key + ".g" + std::to_string(i)), key, rtol, 1e-15);
        }
        auto ps = fresh();
        nn::utils::clip_grad_value_(ps, 0.7);
        for (int i = 0; i < 2; ++i)
            golden::check_close(ps[i].grad(), golden::get(kFile, "clip." + dt + ".value.g" + std::to_string(i)),
                                "value", 0.0, 0.0);
    }
    Tensor w = xgrad::ones({2}).requires_grad_();
    CHECK(nn::utils::clip_grad_norm_({w}, 1.0).item<float>() == 0.0f);  // no gradient: 0, nothing scaled
    w.mutable_grad() = xgrad::tensor({INFINITY, 1.0});
    CHECK_THROWS_WITH_AS(nn::utils::clip_grad_norm_({w}, 1.0, 2.0, true),
                         doctest::Contains("The total norm of order 2.0 for gradients from `parameters` is non-finite"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(nn::utils::clip_grad_norm_({w}, 1.0, 0.0),
                         "clip_grad_norm_: norm_type must be positive or inf, got 0.0", std::invalid_argument);
}

TEST_CASE("get_rng_state gives torch.get_rng_state's bytes, and set_rng_state takes them") {
    auto bytes_of = [](const std::string& name) {
        std::vector<std::uint8_t> out;
        for (auto v : golden::get(kFile, name).to_vector<std::int64_t>()) out.push_back(static_cast<std::uint8_t>(v));
        return out;
    };
    xgrad::manual_seed(5);
    CHECK(xgrad::get_rng_state() == bytes_of("rng.seed5"));
    xgrad::randn({3}, xgrad::kFloat64);
    xgrad::rand({5});
    const auto saved = xgrad::get_rng_state();
    CHECK(saved == bytes_of("rng.seed5_draws"));  // with a cached normal
    const Tensor next = xgrad::randn({4}, xgrad::kFloat64);
    golden::check_close(next, golden::get(kFile, "rng.seed5_next"), "next", 0.0, 0.0);
    xgrad::manual_seed(999);
    xgrad::set_rng_state(bytes_of("rng.seed5_draws"));  // PyTorch's bytes continue the same stream
    golden::check_close(xgrad::randn({4}, xgrad::kFloat64), next, "after set_rng_state", 0.0, 0.0);
    xgrad::manual_seed(123);
    xgrad::rand({700});
    CHECK(xgrad::get_rng_state() == bytes_of("rng.seed123_700"));
    CHECK(xgrad::initial_seed() == 123);
    CHECK_THROWS_WITH_AS(xgrad::set_rng_state(std::vector<std::uint8_t>(10)),
                         "set_rng_state: Expected either a THGeneratorState of size 5048 or a THGeneratorStateNew of "
                         "size 5056 but found the input RNG state size to be 10",
                         std::invalid_argument);
}

namespace {

struct Net : nn::Module {
    nn::Linear fc1{3, 8}, fc2{8, 2};
    nn::Dropout drop{0.3};
    Net() {
        register_module("fc1", fc1);
        register_module("fc2", fc2);
        register_module("drop", drop);
    }
    Tensor forward(const Tensor& x) override { return fc2(drop(fc1(x).relu())); }
};

struct Training {
    Net net;
    optim::Adam opt;
    optim::OneCycleLR sched;
    Training()
        : opt(net.fc1.parameters(), {.lr = 0.01, .amsgrad = true}),
          sched((opt.add_param_group(net.fc2.parameters(), {{"lr", 0.005}}), opt), std::vector<double>{0.05, 0.02},
                {.total_steps = 40}) {}
    double step(const Tensor& x, const Tensor& y) {
        opt.zero_grad();
        Tensor loss = F::mse_loss(net(xgrad::randn({1}) * 0.0 + x), y);  // draws from the generator each step
        loss.backward();
        nn::utils::clip_grad_norm_(net.parameters(), 0.5);
        opt.step();
        sched.step();
        return loss.item<double>();
    }
};

}  // namespace

TEST_CASE("a checkpoint of model, optimizer, scheduler and generator resumes bit-identically") {
    xgrad::manual_seed(42);
    const Tensor x = xgrad::randn({16, 3}), y = xgrad::randn({16, 2});
    auto run = [&](int steps, Training& t) {
        std::vector<double> losses;
        for (int i = 0; i < steps; ++i) losses.push_back(t.step(x, y));
        return losses;
    };
    xgrad::manual_seed(7);
    Training whole;
    const auto all = run(30, whole);

    xgrad::manual_seed(7);
    const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    const std::string model_file = dir + "/xgrad_ckpt_model.safetensors",
                      state_file = dir + "/xgrad_ckpt_state.safetensors";
    std::vector<double> first;
    {
        Training part;
        first = run(12, part);
        xgrad::save(part.net, model_file);
        optim::StateDict state;
        for (auto& [k, t] : part.opt.state_dict()) state.emplace_back("optimizer." + k, t);
        for (auto& [k, t] : part.sched.state_dict()) state.emplace_back("scheduler." + k, t);
        std::vector<double> rng;
        for (auto byte : xgrad::get_rng_state()) rng.push_back(byte);
        state.emplace_back("rng_state",
                           xgrad::from_vector(rng, {static_cast<std::int64_t>(rng.size())}, xgrad::kInt64));
        xgrad::save_tensors(state, state_file);
    }
    xgrad::manual_seed(1234);  // a fresh process would start elsewhere
    Training resumed;
    xgrad::load(resumed.net, model_file);
    optim::StateDict opt_state, sched_state;
    for (auto& [k, t] : xgrad::load_tensors(state_file)) {
        if (k.rfind("optimizer.", 0) == 0) opt_state.emplace_back(k.substr(10), t);
        if (k.rfind("scheduler.", 0) == 0) sched_state.emplace_back(k.substr(10), t);
        if (k == "rng_state") {
            std::vector<std::uint8_t> bytes;
            for (auto v : t.to_vector<std::int64_t>()) bytes.push_back(static_cast<std::uint8_t>(v));
            xgrad::set_rng_state(bytes);
        }
    }
    resumed.opt.load_state_dict(opt_state);
    resumed.sched.load_state_dict(sched_state);
    auto rest = run(18, resumed);
    first.insert(first.end(), rest.begin(), rest.end());
    REQUIRE(first.size() == all.size());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(first[i] == all[i]);  // exactly
    for (std::size_t i = 0; i < whole.net.parameters().size(); ++i)
        CHECK(whole.net.parameters()[i].to_vector<float>() == resumed.net.parameters()[i].to_vector<float>());
    CHECK(resumed.opt.option(1, "lr") == whole.opt.option(1, "lr"));
    CHECK(resumed.opt.state(0).step == 30);
    std::remove(model_file.c_str());
    std::remove(state_file.c_str());
}

TEST_CASE("state_dict round-trips every optimizer's state, and load_state_dict checks it") {
    Tensor w = xgrad::tensor({1.0, -2.0, 3.0}).requires_grad_();
    Tensor v = xgrad::tensor({0.5}).requires_grad_();
    auto train = [&](optim::Optimizer& opt) {
        for (int i = 0; i < 3; ++i) {
            opt.zero_grad();
            ((w * w).sum() + (v * w.sum()).sum()).backward();
            opt.step();
        }
    };
    std::vector<std::unique_ptr<optim::Optimizer>> opts;
    opts.push_back(std::make_unique<optim::RMSprop>(std::vector<Tensor>{w, v},
                                                    optim::RMSpropOptions{.momentum = 0.5, .centered = true}));
    opts.push_back(std::make_unique<optim::Adagrad>(std::vector<Tensor>{w, v}));
    opts.push_back(std::make_unique<optim::Adamax>(std::vector<Tensor>{w, v}));
    opts.push_back(std::make_unique<optim::Adadelta>(std::vector<Tensor>{w, v}));
    opts.push_back(
        std::make_unique<optim::SGD>(std::vector<Tensor>{w, v}, optim::SGDOptions{.lr = 0.1, .momentum = 0.9}));
    const std::vector<std::vector<std::string>> names{
        {"state.0.grad_avg", "state.0.momentum_buffer", "state.0.square_avg", "state.0.step"},
        {"state.0.step", "state.0.sum"},
        {"state.0.exp_avg", "state.0.exp_inf", "state.0.step"},
        {"state.0.acc_delta", "state.0.square_avg", "state.0.step"},
        {"state.0.momentum_buffer"}};
    for (std::size_t k = 0; k < opts.size(); ++k) {
        train(*opts[k]);
        const auto sd = opts[k]->state_dict();
        std::vector<std::string> state0;
        for (auto& [n, t] : sd)
            if (n.rfind("state.0.", 0) == 0) state0.push_back(n);
        CHECK(state0 == names[k]);
        const Tensor w_before = w.clone(), v_before = v.clone();
        train(*opts[k]);
        const Tensor w_after = w.clone();
        // Reload the saved state and the saved parameters: the same three steps give the same values.
        {
            xgrad::NoGradGuard g;
            w.copy_(w_before);
            v.copy_(v_before);
        }
        opts[k]->load_state_dict(sd);
        train(*opts[k]);
        CHECK(w.to_vector<float>() == w_after.to_vector<float>());
    }
    optim::Adam adam({w});
    auto sd = opts[2]->state_dict();
    CHECK_THROWS_WITH_AS(adam.load_state_dict(sd), "Adam: load_state_dict: unexpected key 'state.0.exp_inf'",
                         std::invalid_argument);
    optim::Adamax two({w});
    CHECK_THROWS_WITH_AS(two.load_state_dict(sd),
                         "Adamax: load_state_dict: loaded state dict contains a parameter group that doesn't match "
                         "the size of optimizer's group (2 != 1 in group 0)",
                         std::invalid_argument);
    two.add_param_group({v}, {{"lr", 0.5}});
    CHECK(two.option(1, "lr") == 0.5);
    CHECK(two.option(1, "beta1") == 0.9);
    CHECK_THROWS_WITH_AS(two.add_param_group({w}),
                         "Adamax: some parameters appear in more than one parameter group (parameter 2)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(two.set_option(1, "beta2", 1.0),
                         "Adamax: invalid beta parameter at index 1: 1.0 (must be in [0, 1))", std::invalid_argument);
}

TEST_CASE("bad options of the new optimizers and schedulers throw PyTorch's messages") {
    Tensor p = xgrad::zeros({2}).requires_grad_();
    CHECK_THROWS_WITH_AS(optim::Adadelta({p}, {.rho = 1.5}), "Adadelta: invalid rho value: 1.5", std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::Adagrad({p}, {.lr_decay = -1}), "Adagrad: invalid lr_decay value: -1.0",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::RMSprop({p}, {.alpha = -0.5}), "RMSprop: invalid alpha value: -0.5",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::Adamax({p}, {.lr = -1}), "Adamax: invalid learning rate: -1.0", std::invalid_argument);
    optim::SGD sgd({p}, {.lr = 0.1});
    CHECK_THROWS_WITH_AS(optim::LinearLR(sgd, 0.0),
                         "LinearLR: Starting multiplicative factor expected to be between 0 and 1.",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(sgd, {.factor = 1.0}), "ReduceLROnPlateau: Factor should be < 1.0.",
                         std::invalid_argument);
    Tensor q = xgrad::zeros({1}).requires_grad_();
    sgd.add_param_group({q});
    CHECK_THROWS_WITH_AS(optim::LambdaLR(sgd, std::vector<optim::LambdaLR::Lambda>{[](std::int64_t) { return 1.0; }}),
                         "LambdaLR: Expected 2 lr_lambdas, but got 1", std::invalid_argument);
    optim::OneCycleLR one(sgd, 0.1, {.total_steps = 10});
    for (int i = 0; i < 10; ++i) one.step();
    CHECK_THROWS_WITH_AS(one.step(), "OneCycleLR: Tried to step 11 times. The specified number of total steps is 10",
                         std::invalid_argument);
    optim::Adagrad ada({p});
    CHECK_THROWS_WITH_AS(optim::OneCycleLR(ada, 0.1, {.total_steps = 10}),
                         "OneCycleLR: optimizer must support momentum with `cycle_momentum` option enabled",
                         std::invalid_argument);
}

TEST_CASE("to_dot draws the graph with grad_fn names, named leaves and shapes") {
    Tensor w = xgrad::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).requires_grad_();
    Tensor b = xgrad::tensor({0.5, -0.5}).requires_grad_();
    Tensor x = xgrad::ones({4, 3});
    Tensor loss = F::linear(x, w, b).relu().sum();
    const std::string dot = xgrad::autograd::to_dot(loss, {{"fc.weight", w}, {"fc.bias", b}});
    INFO(dot);
    CHECK(dot.rfind("digraph {\n", 0) == 0);
    CHECK(dot.find("n0 [label=\" ()\" fillcolor=darkolivegreen1]") != std::string::npos);
    CHECK(dot.find("[label=SumBackward0]") != std::string::npos);
    CHECK(dot.find("[label=ReluBackward0]") != std::string::npos);
    CHECK(dot.find("[label=\"fc.weight\\n (2, 3)\" fillcolor=lightblue]") != std::string::npos);
    CHECK(dot.find("[label=\"fc.bias\\n (2)\" fillcolor=lightblue]") != std::string::npos);
    CHECK(dot.find("n1 -> n0") != std::string::npos);  // the last node feeds the output
    std::size_t acc = 0;
    for (std::size_t pos = 0; (pos = dot.find("[label=AccumulateGrad]", pos)) != std::string::npos; ++pos) ++acc;
    CHECK(acc == 2);
    CHECK(dot.substr(dot.size() - 2) == "}\n");
}

TEST_CASE("the new optimizers and clip_grad_norm_ on CUDA follow the CPU" *
          doctest::skip(!xgrad::cuda::is_available())) {
    xgrad::manual_seed(3);
    const Tensor x = xgrad::randn({6, 3}), y = xgrad::randn({6, 2});
    const Tensor w0 = xgrad::randn({2, 3}), b0 = xgrad::randn({2});
    for (const std::string kind : {"rmsprop", "adagrad", "adamax", "adadelta"}) {
        INFO(kind);
        std::vector<Tensor> finals;
        for (const xgrad::Device device : {xgrad::Device(xgrad::kCPU), xgrad::Device(xgrad::kCUDA)}) {
            Tensor w = w0.to(device).requires_grad_(), b = b0.to(device).requires_grad_();
            const Opts o{{"opt", kind}, {"momentum", "0.5"}, {"centered", "True"}, {"weight_decay", "0.01"}};
            auto opt = make_optimizer({w}, o);
            opt->add_param_group({b}, {{"lr", 0.02}});
            for (int i = 0; i < 10; ++i) {
                opt->zero_grad();
                F::mse_loss(F::linear(x.to(device), w, b), y.to(device)).backward();
                nn::utils::clip_grad_norm_({w, b}, 0.5);
                opt->step();
            }
            finals.push_back(w.cpu());
        }
        golden::check_close(finals[1], finals[0], kind + " on CUDA", 1e-5, 1e-6);
    }
}
