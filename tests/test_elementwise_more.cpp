// The maths and activations of issue 11 against PyTorch: values (special ones included), grad_fn names,
// gradients, gradcheck, integer results, error messages and the printed modules.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
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
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

const std::string kFile = "elementwise_more.txt";
const std::vector<std::string> kFloats = {"float32", "float64"};
const std::vector<std::string> kInt = {"int64"};

/// The golden leaves of `key`, as fresh tensors; the floating ones require grad.
std::vector<Tensor> leaves(const std::string& key) {
    std::vector<Tensor> ins;
    for (int i = 0; golden::load(kFile).count(key + ".in" + std::to_string(i)); ++i) {
        Tensor t = golden::get(kFile, key + ".in" + std::to_string(i)).clone();
        if (t.is_floating_point()) t.requires_grad_();
        ins.push_back(t);
    }
    REQUIRE_MESSAGE(!ins.empty(), "no inputs for " << key << " in " << kFile);
    return ins;
}

/// The exact int64 values of golden tensor `name` (golden::get reads numbers as doubles).
std::vector<std::int64_t> int_values(const std::string& name) {
    std::ifstream in(golden::dir() + "/" + kFile);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string n, dtype;
        std::int64_t ndim = 0, d = 0;
        if (!(ls >> n >> dtype >> ndim) || n != name) continue;
        for (std::int64_t i = 0; i < ndim; ++i) ls >> d;
        std::vector<std::int64_t> v;
        std::int64_t x = 0;
        while (ls >> x) v.push_back(x);
        return v;
    }
    FAIL("no tensor " << name << " in " << kFile);
    return {};
}

/// PyTorch's message for error case `name` (`# error <name> <message>` in the golden file).
std::string torch_error(const std::string& name) {
    return golden::error_message(kFile, name);
}

/// Checks that `f` throws std::invalid_argument containing PyTorch's message for `name` (after the
/// "op: " prefix xgrad puts first).
void check_torch_error(const std::function<void()>& f, const std::string& name, const std::string& op) {
    const std::string msg = golden::invalid_argument_of(f);
    std::string want = torch_error(name);
    if (want.rfind(op + " ", 0) == 0) want = want.substr(op.size() + 1);  // "div expected ...": the op once
    INFO(name << ": " << msg);
    CHECK(msg.rfind(op + ": ", 0) == 0);
    CHECK(msg.find(want) != std::string::npos);
}

struct Case {
    std::string name;
    Fn fn;
    std::vector<std::string> dtypes = kFloats;
    bool gradcheck = true;  // false where inputs sit on kinks or special values
};

/// Cases whose gradients are PyTorch's bits where the CPU has FMA (its formulas, in its order, with its
/// constants); the others are checked within a tolerance.
const std::set<std::string> kExactGrads = {"log10",
                                           "log10_special",
                                           "log10_transposed",
                                           "clamp_tensor",
                                           "clamp_tensor_min_only",
                                           "clamp_min_tensor",
                                           "clamp_max_tensor",
                                           "clamp_tensor_nan",
                                           "hardsigmoid",
                                           "hardsigmoid_special",
                                           "quick_gelu",
                                           "quick_gelu_special",
                                           "elu",
                                           "elu_special",
                                           "elu_05",
                                           "elu_05_special",
                                           "celu",
                                           "celu_special",
                                           "celu_2",
                                           "celu_2_special",
                                           "celu_03",
                                           "celu_03_special",
                                           "selu",
                                           "selu_special"};

void check_case(const Case& c) {
    namespace vm = xgrad::kernels::cpu;
    const bool exact = kExactGrads.count(c.name) && vm::simd_arch() != vm::SimdArch::kSse2;
    for (const std::string& dtype : c.dtypes) {
        const std::string key = c.name + "." + dtype;
        std::vector<Tensor> ins = leaves(key);
        Tensor out = c.fn(ins);
        const Tensor want = golden::get(kFile, key + ".out");
        golden::check_close(out, want, key + " forward");
        if (out.is_floating_point()) {  // and zeros carry PyTorch's sign (floor(-0.) is -0., sign(-0.) is 0.)
            const auto a = out.to_vector<double>(), e = want.to_vector<double>();
            for (std::size_t i = 0; i < a.size() && i < e.size(); ++i)
                if (e[i] == 0 && a[i] == 0)
                    CHECK_MESSAGE(std::signbit(a[i]) == std::signbit(e[i]), key << " element " << i);
        }
        if (out.dtype() == xgrad::kInt64) {
            CHECK_MESSAGE(out.to_vector<std::int64_t>() == int_values(key + ".out"), key << ": exact int64 values");
            continue;
        }
        const std::string grad_fn = golden::grad_fn_name(kFile, key);
        CHECK_MESSAGE(out.grad_fn_name() == grad_fn,
                      key << ": grad_fn " << out.grad_fn_name() << ", PyTorch " << grad_fn);
        if (grad_fn.empty()) continue;
        (out * golden::get(kFile, key + ".w")).sum().backward();
        for (std::size_t i = 0; i < ins.size(); ++i) {
            const std::string g = key + ".g" + std::to_string(i);
            if (ins[i].requires_grad()) golden::check_close_or_exact(ins[i].grad(), golden::get(kFile, g), g, exact);
        }
        if (dtype == "float64" && c.gradcheck) golden::check_gradcheck(c.fn, leaves(key), key + " gradcheck");
    }
}

void check_cases(const std::vector<Case>& cases) {
    for (const Case& c : cases) check_case(c);
}

/// The maps of one operand, by the golden file's names.
const std::map<std::string, Tensor (*)(const Tensor&)> kUnary = {
    {"erf", xgrad::erf},     {"sin", xgrad::sin},     {"cos", xgrad::cos},     {"tan", xgrad::tan},
    {"asin", xgrad::asin},   {"acos", xgrad::acos},   {"atan", xgrad::atan},   {"sinh", xgrad::sinh},
    {"cosh", xgrad::cosh},   {"log2", xgrad::log2},   {"log10", xgrad::log10}, {"log1p", xgrad::log1p},
    {"expm1", xgrad::expm1}, {"exp2", xgrad::exp2},   {"sign", xgrad::sign},   {"floor", xgrad::floor},
    {"ceil", xgrad::ceil},   {"round", xgrad::round}, {"trunc", xgrad::trunc},
};

}  // namespace

TEST_CASE("trigonometry, logarithms, exponentials and rounding match PyTorch, special values included") {
    for (const auto& [name, f] : kUnary) {
        auto fn = f;
        check_cases({
            // round's inputs sit on its steps (0.5, 1.5, ...), where differences see a jump.
            {name, [fn](auto& in) { return fn(in[0]); }, kFloats, name != "round"},
            {name + "_special", [fn](auto& in) { return fn(in[0]); }, kFloats, false},
            {name + "_transposed", [fn](auto& in) { return fn(in[0].t()); }},
        });
    }
}

TEST_CASE("integer tensors: floating maths in float32, rounding and sign stay int64") {
    for (const std::string name : {"sin", "exp2", "log1p", "sign", "floor", "round", "trunc", "ceil"}) {
        auto fn = kUnary.at(name);
        check_case({name + "_int", [fn](auto& in) { return fn(in[0]); }, kInt});
    }
}

TEST_CASE("integer powers stay int64 and exact; a negative one throws as PyTorch") {
    check_cases({
        {"pow_int_7", [](auto& in) { return in[0].pow(7); }, kInt},
        {"pow_int_big", [](auto& in) { return in[0].pow(40); }, kInt},  // wraps as PyTorch's int64
        {"pow_int_0", [](auto& in) { return in[0].pow(0); }, kInt},
        {"pow_int_half", [](auto& in) { return in[0].pow(0.5); }, kInt},  // float32
        {"pow_int_tensor", [](auto& in) { return in[0].pow(in[1]); }, kInt},
        {"rpow_int", [](auto& in) { return xgrad::pow(3, in[0]); }, kInt},
        {"rpow_int_float_base", [](auto& in) { return xgrad::pow(1.5, in[0]); }, kInt},
    });
    check_torch_error([] { xgrad::tensor({2, 3}, xgrad::kInt64).pow(-1); }, "pow_int_negative", "pow");
    // 2 ** 62 is exact, where float would round.
    CHECK(xgrad::tensor({2}, xgrad::kInt64).pow(62).item<std::int64_t>() == std::int64_t{1} << 62);
}

TEST_CASE("pow with a scalar base is differentiable in the exponent") {
    check_cases({
        {"rpow", [](auto& in) { return xgrad::pow(2.0, in[0]); }},
        // 0 ** -1 = inf, 0 ** 0 = 1, 0 ** 2 = 0; the gradient is 0 where the exponent is >= 0.
        {"rpow_zero_base", [](auto& in) { return xgrad::pow(0.0, in[0]); }, kFloats, false},
    });
}

TEST_CASE("atan2, remainder, fmod and rounded division, floating and integer") {
    check_cases({
        {"atan2", [](auto& in) { return xgrad::atan2(in[0], in[1]); }},
        {"atan2_special", [](auto& in) { return in[0].atan2(in[1]); }, kFloats, false},
        {"remainder", [](auto& in) { return xgrad::remainder(in[0], in[1]); }},
        {"fmod", [](auto& in) { return xgrad::fmod(in[0], in[1]); }},
        {"remainder_scalar", [](auto& in) { return in[0].remainder(-1.5); }},
        {"fmod_scalar", [](auto& in) { return xgrad::fmod(in[0], 1.5); }},
        {"remainder_special", [](auto& in) { return in[0].remainder(in[1]); }, kFloats, false},
        {"fmod_special", [](auto& in) { return in[0].fmod(in[1]); }, kFloats, false},
        {"div_trunc", [](auto& in) { return xgrad::div(in[0], in[1], "trunc"); }},
        {"div_floor", [](auto& in) { return in[0].div(in[1], "floor"); }},
        {"div_floor_scalar", [](auto& in) { return in[0].div(-0.7, "floor"); }},
        {"div_trunc_scalar", [](auto& in) { return xgrad::div(in[0], 0.7, "trunc"); }},
        {"div_floor_special", [](auto& in) { return in[0].div(in[1], "floor"); }, kFloats, false},
        {"div_trunc_special", [](auto& in) { return in[0].div(in[1], "trunc"); }, kFloats, false},
        {"remainder_int", [](auto& in) { return in[0].remainder(in[1]); }, kInt},
        {"fmod_int", [](auto& in) { return in[0].fmod(in[1]); }, kInt},
        {"div_trunc_int", [](auto& in) { return in[0].div(in[1], "trunc"); }, kInt},
        {"div_floor_int", [](auto& in) { return in[0].div(in[1], "floor"); }, kInt},
        {"remainder_int_scalar", [](auto& in) { return in[0].remainder(3); }, kInt},
        {"remainder_int_float_scalar", [](auto& in) { return in[0].remainder(2.5); }, kInt},
        {"div_floor_int_scalar", [](auto& in) { return in[0].div(-2, "floor"); }, kInt},
    });
    const Tensor i = xgrad::tensor({1, 2}, xgrad::kInt64);
    check_torch_error([&] { i.remainder(xgrad::tensor({1, 0}, xgrad::kInt64)); }, "remainder_int_zero", "remainder");
    check_torch_error([&] { i.div(0, "floor"); }, "div_int_zero", "div");
    check_torch_error([] { xgrad::ones({2}).div(2.0, "round"); }, "div_bad_mode", "div");
    CHECK(golden::invalid_argument_of([&] { i.fmod(0); }).find("ZeroDivisionError") != std::string::npos);
    // INT64_MIN by -1 traps in C (and in PyTorch 1.13, which dies of SIGFPE): here it wraps, and the
    // remainders are 0.
    const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    const Tensor m = xgrad::from_vector(std::vector<double>{-9.2233720368547758e18}, {1}, xgrad::kInt64);
    REQUIRE(m.item<std::int64_t>() == lowest);
    const Tensor minus1 = xgrad::tensor({-1}, xgrad::kInt64);
    CHECK(m.div(minus1, "trunc").item<std::int64_t>() == lowest);
    CHECK(m.div(minus1, "floor").item<std::int64_t>() == lowest);
    CHECK(m.remainder(minus1).item<std::int64_t>() == 0);
    CHECK(m.fmod(-1).item<std::int64_t>() == 0);
}

TEST_CASE("float32 fmod and remainder are the exact fmod, on every path of the kernel") {
    // fmod is exact, so there is one right answer: the C library's. The kernel takes quotients below
    // 2^24 through doubles four elements at a time and the rest (larger quotients, zero or infinite
    // divisors, inf and NaN) through std::fmod; the pairs below reach both, in every lane and the tail.
    std::vector<float> xs, ys;
    const float special[] = {0.0f,    -0.0f,           INFINITY,      -INFINITY,      NAN,         1e-45f,
                             -1e-45f, 1.17549435e-38f, 3.4028235e38f, -3.4028235e38f, 16777216.0f, 16777218.0f,
                             0.7f,    -0.7f,           3.0f,          -3.0f,          1.5f};
    for (float a : special)
        for (float b : special) {
            xs.push_back(a);
            ys.push_back(b);
        }
    xgrad::manual_seed(7);
    const std::vector<float> u = xgrad::randn({6000}).to_vector<float>(), v = xgrad::randn({6000}).to_vector<float>();
    for (std::size_t i = 0; i < u.size(); ++i) {
        const int e = static_cast<int>(i % 40) - 12;  // quotients from about 2^-30 to 2^40
        xs.push_back(std::ldexp(u[i], e));
        ys.push_back(std::ldexp(v[i], -(e / 3)));
        if (i % 5 == 0) xs.back() = ys.back() * static_cast<float>(static_cast<int>(i % 97) - 48);  // k·y exactly
    }
    xs.push_back(2.5f);  // a length that leaves a scalar tail
    ys.push_back(-1.0f);
    const auto n = static_cast<std::int64_t>(xs.size());
    const Tensor x = xgrad::from_vector(xs, {n}), y = xgrad::from_vector(ys, {n});
    const std::vector<float> f = x.fmod(y).to_vector<float>(), r = x.remainder(y).to_vector<float>();
    auto same = [](float a, float b) { return std::isnan(a) ? std::isnan(b) : std::memcmp(&a, &b, sizeof a) == 0; };
    int wrong_f = 0, wrong_r = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const float want = std::fmod(xs[i], ys[i]);
        float rem = want;
        if (rem != 0.0f && ((ys[i] < 0.0f) != (rem < 0.0f))) rem += ys[i];  // PyTorch 1.13's remainder
        wrong_f += same(f[i], want) ? 0 : 1;
        wrong_r += same(r[i], rem) ? 0 : 1;
    }
    CHECK(wrong_f == 0);
    CHECK(wrong_r == 0);
    // the scalar form and a broadcast dividend take the same kernel (NaN compared as NaN)
    auto all_same = [&](const Tensor& a, const Tensor& b) {
        const std::vector<float> p = a.to_vector<float>(), q = b.to_vector<float>();
        bool ok = p.size() == q.size();
        for (std::size_t i = 0; ok && i < p.size(); ++i) ok = same(p[i], q[i]);
        return ok;
    };
    CHECK(all_same(x.reshape({1, n}).expand({3, n}).fmod(y), x.fmod(y).reshape({1, n}).expand({3, n})));
    CHECK(all_same(x.remainder(-0.7), x.remainder(xgrad::full({n}, -0.7))));
}

TEST_CASE("lerp with a scalar and a tensor weight") {
    check_cases({
        {"lerp_scalar_low", [](auto& in) { return xgrad::lerp(in[0], in[1], 0.25); }},
        {"lerp_scalar_high", [](auto& in) { return in[0].lerp(in[1], 0.75); }},
        {"lerp_tensor", [](auto& in) { return xgrad::lerp(in[0], in[1], in[2]); }},
    });
    check_torch_error([] { xgrad::ones({2}).lerp(xgrad::ones({2}, xgrad::kFloat64), 0.5); }, "lerp_dtype", "lerp");
}

TEST_CASE("lerp gives PyTorch's bits: one fused multiply-add per form where the CPU has FMA") {
    // PyTorch's AVX2 kernel fuses w * (b - a) + a and -(b - a) * (1 - w) + b; without FMA (SSE2)
    // xgrad rounds twice, as PyTorch's default kernel: checked against those two roundings here.
    namespace vm = xgrad::kernels::cpu;
    const vm::SimdArch saved = vm::simd_arch();
    // The unfused forms, element by element (the build has no contraction): SSE2's results.
    auto unfused = [](const Tensor& a, const Tensor& b, const Tensor& w) {
        const Tensor shape_of = a + b + w;  // the broadcast shape, in row-major order
        const auto ab = a.expand(shape_of.shape()).contiguous(), bb = b.expand(shape_of.shape()).contiguous(),
                   wb = w.expand(shape_of.shape()).contiguous();
        if (a.dtype() == xgrad::kFloat32) {
            std::vector<float> x = ab.to_vector<float>(), y = bb.to_vector<float>(), t = wb.to_vector<float>(), r;
            for (std::size_t i = 0; i < x.size(); ++i) {
                const float d = y[i] - x[i];
                r.push_back(t[i] < 0.5f ? x[i] + t[i] * d : y[i] - d * (1.0f - t[i]));
            }
            return xgrad::from_vector(r, shape_of.shape());
        }
        std::vector<double> x = ab.to_vector<double>(), y = bb.to_vector<double>(), t = wb.to_vector<double>(), r;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double d = y[i] - x[i];
            r.push_back(t[i] < 0.5 ? x[i] + t[i] * d : y[i] - d * (1.0 - t[i]));
        }
        return xgrad::from_vector(r, shape_of.shape(), xgrad::kFloat64);
    };
    for (vm::SimdArch arch : {vm::SimdArch::kAvx512, vm::SimdArch::kAvx2, vm::SimdArch::kSse2}) {
        if (!vm::simd_arch_supported(arch)) continue;
        vm::set_simd_arch(arch);
        const bool fma = arch != vm::SimdArch::kSse2;
        for (const std::string dt : {"float32", "float64"}) {
            auto get = [&](const std::string& key) { return golden::get("lerp.txt", dt + "." + key); };
            const Tensor a = get("a"), b = get("b"), w = get("w"), row = get("row"), col = get("col");
            CAPTURE(dt);
            CAPTURE(static_cast<int>(arch));
            CHECK(golden::bits_differ(a.lerp(b, w), fma ? get("tensor") : unfused(a, b, w)) == 0);
            for (double s : {-0.6, 0.0, 0.3, 0.5, 0.7, 1.0, 1.2}) {
                std::ostringstream key;
                key << "scalar" << s << (s == static_cast<int>(s) ? ".0" : "");
                CAPTURE(key.str());
                const Tensor ws = xgrad::full({}, s, a.dtype());
                CHECK(golden::bits_differ(xgrad::lerp(a, b, s), fma ? get(key.str()) : unfused(a, b, ws)) == 0);
            }
            // a transposed self, a broadcast end row and a weight per row of the result
            const Tensor at = a.t().contiguous().t();
            CHECK(golden::bits_differ(at.lerp(row, col), fma ? get("broadcast") : unfused(at, row, col)) == 0);
        }
    }
    vm::set_simd_arch(saved);
    // The unfused forms differ from PyTorch's in the last bit for about a third of these elements:
    // the test above can tell them apart.
    const Tensor a = golden::get("lerp.txt", "float32.a"), b = golden::get("lerp.txt", "float32.b"),
                 w = golden::get("lerp.txt", "float32.w");
    CHECK(golden::bits_differ(unfused(a, b, w), golden::get("lerp.txt", "float32.tensor")) > 50);
}

TEST_CASE("logaddexp and logaddexp2 give PyTorch's bits, forward and backward") {
    // PyTorch 1.13's vectorised kernels: max + log(1 + exp(-|a - b|)) and max + log2(1 + pow(2, -|a - b|)),
    // with SLEEF's functions (vec_math's), whose bits are PyTorch's where the CPU has FMA.
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // SLEEF's results differ without FMA
    for (const std::string dt : {"float32", "float64"}) {
        auto get = [&](const std::string& key) { return golden::get("exact.txt", dt + "." + key); };
        for (bool base2 : {false, true}) {
            const std::string name = base2 ? "logaddexp2" : "logaddexp";
            Tensor a = get("lae.a").detach().requires_grad_(), b = get("lae.b").detach().requires_grad_();
            Tensor y = base2 ? xgrad::logaddexp2(a, b) : a.logaddexp(b);
            y.backward(get("lae.w"));
            CAPTURE(dt);
            CAPTURE(name);
            CHECK(golden::bits_differ(y, get(name)) == 0);
            CHECK(golden::bits_differ(a.grad(), get(name + ".ga")) == 0);
            CHECK(golden::bits_differ(b.grad(), get(name + ".gb")) == 0);
        }
    }
}

TEST_CASE("ops with a scalar formula of their own in PyTorch give its bits in the tail and on strided runs") {
    // PyTorch 1.13 computes these with cpu_kernel_vec: 16 floats (8 doubles) at a time with SLEEF along
    // a contiguous run, the rest of the run with the C library, and a strided run all with the C library.
    // Inputs of 780, 5 and 1 elements (tests/golden/gen_exact.py).
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // SLEEF's results differ without FMA
    using Op = std::function<Tensor(const Tensor&)>;
    const std::vector<std::pair<std::string, Op>> ops = {
        {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
        {"silu", [](const Tensor& x) { return F::silu(x); }},
        {"mish", [](const Tensor& x) { return F::mish(x); }},
        {"softplus", [](const Tensor& x) { return F::softplus(x); }},
        {"softplus_beta", [](const Tensor& x) { return F::softplus(x, 2.0, 3.0); }},
        {"gelu_tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); }},
        {"sinh", [](const Tensor& x) { return x.sinh(); }},
        {"cosh", [](const Tensor& x) { return x.cosh(); }},
        {"atan2", [](const Tensor& x) { return xgrad::atan2(x, x * 0.75 + 0.5); }},
        {"pow", [](const Tensor& x) { return (x.abs() + 0.25).pow(x * 0.5); }},
        {"pow_scalar", [](const Tensor& x) { return (x.abs() + 0.1).pow(2.7); }},
        {"pow_half", [](const Tensor& x) { return x.abs().pow(1.5); }},
        {"rpow", [](const Tensor& x) { return xgrad::pow(2.5, x); }},
        {"elu", [](const Tensor& x) { return F::elu(x); }},
        {"elu05", [](const Tensor& x) { return F::elu(x, 0.5); }},
        {"selu", [](const Tensor& x) { return F::selu(x); }},
        {"celu2", [](const Tensor& x) { return F::celu(x, 2.0); }},
        {"gelu", [](const Tensor& x) { return F::gelu(x); }},
        {"logaddexp", [](const Tensor& x) { return x.logaddexp(x * 0.75 + 0.5); }},
        {"logaddexp2", [](const Tensor& x) { return xgrad::logaddexp2(x, x * 0.75 + 0.5); }},
        {"logaddexp_row", [](const Tensor& x) { return x.logaddexp(x.slice(0, 0, 1) * 0.5); }},
    };

    for (const std::string dt : {"float32", "float64"}) {
        auto get = [&](const std::string& key) { return golden::get("exact.txt", dt + ".tail." + key); };
        const Tensor x = get("x").detach(), w = get("w");
        const std::vector<std::pair<std::string, std::function<Tensor()>>> layouts = {
            {"contiguous", [&] { return x.slice(1, 0, 13).contiguous(); }},
            {"transposed", [&] { return x.slice(1, 0, 13).t().contiguous().t(); }},
            {"strided", [&] { return x.slice(1, 0, 26, 2); }},
            {"five", [&] { return get("x5").detach().clone(); }},
            {"one", [&] { return get("x5").detach().slice(0, 0, 1).clone(); }},
        };
        for (const auto& [op_name, fn] : ops) {
            for (const auto& [layout, make] : layouts) {
                Tensor xi = make().requires_grad_();
                Tensor y = fn(xi);
                y.backward(w.flatten().slice(0, 0, xi.numel()).view(xi.shape()));
                const std::string key = op_name + "." + layout;
                CAPTURE(dt);
                CAPTURE(key);
                CHECK(golden::bits_differ(y, get(key)) == 0);
                CHECK(golden::bits_differ(xi.grad(), get(key + ".grad")) == 0);
            }
        }
    }
}

TEST_CASE("results take their operands' layout, and gradients sum over them in PyTorch's order") {
    // A transposed x with a row or a column: the result is transposed as in PyTorch (its TensorIterator
    // order), masks and where included, so the row's and the column's gradients sum over a transposed
    // tensor, in its order. Ties with the row in one row of x (maximum's and minimum's halves).
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // logaddexp's SLEEF results differ without FMA
    using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
    const std::vector<std::pair<std::string, Op>> ops = {
        {"maximum", [](const Tensor& a, const Tensor& b) { return xgrad::maximum(a, b); }},
        {"minimum", [](const Tensor& a, const Tensor& b) { return xgrad::minimum(a, b); }},
        {"where", [](const Tensor& a, const Tensor& b) { return xgrad::where(a.gt(0.3), a, b); }},
        {"logaddexp", [](const Tensor& a, const Tensor& b) { return xgrad::logaddexp(a, b); }},
    };
    for (const std::string dt : {"float32", "float64"}) {
        auto get = [&](const std::string& key) { return golden::get("exact.txt", dt + ".layout." + key); };
        for (const auto& [op_name, fn] : ops) {
            for (const std::string other : {"row", "col"}) {
                Tensor a = get("xt").detach().requires_grad_(), b = get(other).detach().requires_grad_();
                Tensor y = fn(a.t(), b);
                y.backward(get("w"));
                const std::string key = op_name + "." + other;
                CAPTURE(dt);
                CAPTURE(key);
                CHECK(y.strides() == a.t().strides());
                CHECK(golden::bits_differ(y, get(key)) == 0);
                CHECK(golden::bits_differ(a.grad(), get(key + ".ga")) == 0);
                CHECK(golden::bits_differ(b.grad(), get(key + ".gb")) == 0);
            }
        }
        // a comparison of a transposed tensor is transposed too
        const Tensor xt = get("xt");
        CHECK(xt.t().gt(0.0).strides() == xt.t().strides());
        CHECK(xt.t().isnan().strides() == xt.t().strides());
    }
}

TEST_CASE("clone, to(dtype), flip and sort keep the layout, as PyTorch's, and later sums follow it") {
    // A transposed view's copy is transposed (a dense input keeps its strides); a sliced or expanded one
    // gets dense strides in its dims' order (PyTorch's infer_dense_strides). A sum over dim 0 of the copy
    // then adds in PyTorch's order, to its bits. contiguous() stays row-major.
    for (const std::string dt : {"float32", "float64"}) {
        const auto other = dt == "float32" ? xgrad::kFloat64 : xgrad::kFloat32;
        const Tensor xt = golden::get("exact.txt", dt + ".layout.xt");
        const std::vector<std::pair<std::string, Tensor>> views = {
            {"transposed", xt.t()},
            {"sliced", xt.t().slice(1, 0, 40, 2)},
            {"expanded", xt.t().slice(1, 0, 1).expand({33, 40})},
        };
        for (const auto& [view_name, v] : views) {
            for (const std::string copy_name : {"clone", "to", "flip", "sort"}) {
                const Tensor c = copy_name == "clone"  ? v.clone()
                                 : copy_name == "to"   ? v.to(other)
                                 : copy_name == "flip" ? v.flip({1})
                                                       : v.sort(1).values;
                const std::string key = dt + ".preserve." + view_name + "." + copy_name;
                CAPTURE(key);
                const std::vector<std::int64_t> expected =
                    golden::get("exact.txt", key + ".strides").to_vector<std::int64_t>();
                CHECK(std::vector<std::int64_t>(c.strides().begin(), c.strides().end()) == expected);
                if (copy_name == "clone" || copy_name == "to") CHECK(c.equal(v.to(c.dtype()).contiguous()));
                CHECK(golden::bits_differ(c.sum(0), golden::get("exact.txt", key + ".sum0")) == 0);
            }
            CHECK(v.contiguous().is_contiguous());
            CHECK(v.reshape({-1}).equal(v.contiguous().view({-1})));
        }
    }
    // A leaf's gradient takes the leaf's layout where it is dense (PyTorch's AccumulateGrad), else
    // row-major: a transposed leaf's is transposed, a sliced one's contiguous.
    Tensor transposed = xgrad::randn({4, 3}).t().detach().requires_grad_();
    Tensor sliced = xgrad::randn({4, 3}).slice(1, 0, 3, 2).detach().requires_grad_();
    for (Tensor* leaf : {&transposed, &sliced}) {
        (*leaf * 2.0).sum().backward();
        CHECK(leaf->grad().equal(xgrad::full(leaf->shape(), 2.0)));
        const xgrad::Strides expected = leaf == &transposed ? leaf->strides() : xgrad::Strides{2, 1};
        CHECK(leaf->grad().strides() == expected);
    }
}

TEST_CASE("the gradients of expanded, permuted inputs sum in PyTorch's order") {
    // b expanded and permuted (gen_exact.py's expanded cases): the expand's backward sums the gradient over
    // the broadcast dims in the order of the gradient's layout. The losses' gradients are contiguous
    // (PyTorch's loss kernels write them so), norm's and amax's take the layout PyTorch's formulas give
    // them (an in-place fill keeps it; amax's mask compares the result with the input, in that order);
    // smooth_l1 and huber take the vector formula along the input's runs of 40.
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // the loss kernels' vector formulas fuse there
    struct Case {
        std::string name;
        xgrad::Shape size;
        xgrad::Dims perm;
        std::function<Tensor(const Tensor&)> fn;
    };
    const std::vector<Case> cases = {
        {"smooth_l1",
         {40, 17},
         {1, 0},
         [](const Tensor& v) { return F::smooth_l1_loss(v, v.detach() * 0.5 + 0.1, {.beta = 0.3}); }},
        {"huber",
         {40, 17},
         {1, 0},
         [](const Tensor& v) { return F::huber_loss(v, v.detach() * 0.5 + 0.1, {.delta = 0.4}); }},
        {"mse", {16, 3, 5}, {0, 2, 1}, [](const Tensor& v) { return F::mse_loss(v, v.detach() * 0.5 + 0.1); }},
        {"norm", {64, 33, 1, 16}, {3, 2, 0, 1}, [](const Tensor& v) { return v.norm(2.0, xgrad::Dims{0}); }},
        {"amax", {40, 16, 40}, {1, 2, 0}, [](const Tensor& v) { return v.amax(xgrad::Dims{1}); }},
        {"clamp", {8, 5, 64}, {1, 2, 0}, [](const Tensor& v) { return v.clamp(-0.5, 0.7); }},
        {"relu", {40, 64, 2}, {0, 2, 1}, [](const Tensor& v) { return v.relu(); }},
        {"leaky_relu", {40, 64, 2}, {0, 2, 1}, [](const Tensor& v) { return F::leaky_relu(v, 0.1); }},
        {"var", {33, 100, 17, 1}, {2, 3, 0, 1}, [](const Tensor& v) { return v.var(0); }},
        {"std", {40, 8, 17}, {1, 2, 0}, [](const Tensor& v) { return v.std(0); }},
        {"std_dim2", {3, 100, 8, 2}, {2, 3, 1, 0}, [](const Tensor& v) { return v.std(2); }},
    };
    for (const std::string dt : {"float32", "float64"}) {
        for (const Case& c : cases) {
            auto get = [&](const std::string& key) {
                return golden::get("exact.txt", dt + ".expanded." + c.name + key);
            };
            Tensor b = get(".b").detach().requires_grad_();
            Tensor y = c.fn(b.expand(c.size).permute(c.perm));
            y.backward(get(".w"));
            CAPTURE(dt);
            CAPTURE(c.name);
            CHECK(golden::bits_differ(y, get("")) == 0);
            CHECK(golden::bits_differ(b.grad(), get(".grad")) == 0);
        }
    }
}

TEST_CASE("add_ with alpha and an operand constant along the run rounds as PyTorch's compiled loop") {
    // self + 0.3 * other, fused where the CPU has FMA, except the elements of a run's last n % 16 floats
    // (8 doubles) that PyTorch's compiled scalar loop rounds apart: a 0-d operand over a row, a column
    // over rows, and a row over a transposed self (its runs go down the columns), runs of 5 ... 37.
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // without FMA every element is rounded apart
    for (const std::string dt : {"float32", "float64"}) {
        for (const int n : {5, 9, 13, 21, 29, 37}) {
            auto get = [&](const std::string& key) {
                return golden::get("exact.txt", dt + ".add_alpha." + std::to_string(n) + "." + key);
            };
            const Tensor base = get("base");
            CAPTURE(dt);
            CAPTURE(n);
            Tensor row0 = base.select(0, 0).clone();
            row0.add_(get("zero_d"), 0.3);
            CHECK(golden::bits_differ(row0, get("zero_d.out")) == 0);
            Tensor rows = base.clone();
            rows.add_(get("column"), 0.3);
            CHECK(golden::bits_differ(rows, get("column.out")) == 0);
            Tensor t = base.clone().t();
            t.add_(get("row"), 0.3);
            CHECK(t.strides() == base.t().strides());
            CHECK(golden::bits_differ(t, get("transposed_row.out")) == 0);
        }
    }
}

TEST_CASE("a large transposed operand keeps PyTorch's scalar formula along its strided runs") {
    // pow(2.5, x.t()) (a contiguous result) and atan2(x.t(), c) (c contiguous, the result transposed) over
    // 40960 elements: the strided operand is read in place, as PyTorch's scalar loop reads it, not copied
    // contiguous for the vector formula. Checksums of the bits (gen_exact.py's words()).
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;  // SLEEF's results differ without FMA
    auto words = [](const Tensor& t) {
        std::vector<std::int32_t> w;
        if (t.dtype() == xgrad::kFloat32) {
            const std::vector<float> v = t.to_vector<float>();
            w.resize(v.size());
            std::memcpy(w.data(), v.data(), v.size() * sizeof(float));
        } else {
            const std::vector<double> v = t.to_vector<double>();
            w.resize(2 * v.size());
            std::memcpy(w.data(), v.data(), v.size() * sizeof(double));
        }
        std::int64_t sum = 0;
        for (const std::int32_t v : w) sum += v;
        return sum;
    };
    for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const std::string dt = dtype == xgrad::kFloat32 ? "float32" : "float64";
        const Tensor i = xgrad::arange(40960, xgrad::FactoryOptions(xgrad::kFloat64));
        const Tensor x0 = ((((i * 7919.0).fmod(1001.0)) - 500.0) / 128.0).to(dtype).reshape({160, 256});
        const Tensor w = ((((i * 104729.0).fmod(1003.0)) - 501.0) / 256.0).to(dtype).reshape({256, 160});
        using Op = std::function<Tensor(const Tensor&)>;
        for (const auto& [op_name, fn] : std::vector<std::pair<std::string, Op>>{
                 {"rpow", [](const Tensor& a) { return xgrad::pow(2.5, a); }},
                 {"atan2", [](const Tensor& a) { return xgrad::atan2(a, a.contiguous() * 0.75 + 0.5); }}}) {
            Tensor x = x0.detach().requires_grad_();
            Tensor y = fn(x.t());
            y.backward(w);
            const std::string key = dt + ".big_transposed." + op_name;
            CAPTURE(key);
            CHECK(words(y) == golden::get("exact.txt", key).item<std::int64_t>());
            CHECK(words(x.grad()) == golden::get("exact.txt", key + ".grad").item<std::int64_t>());
        }
        // An expanded input's runs of 100, each with its scalar tail, at 1 and 2 threads (a thread's share
        // may start inside a run; the tail stays where the whole run puts it). The runs end in a value
        // whose sigmoid differs between the vector and the scalar formula (gen_exact.py).
        Tensor b = ((((i.slice(0, 0, 5100) * 7919.0).fmod(1001.0)) - 500.0) / 128.0).to(dtype).reshape({17, 3, 1, 100});
        b.slice(3, 92, 100).fill_(dtype == xgrad::kFloat32 ? -7.984375 : -7.875);
        const int threads = xgrad::get_num_threads();
        for (const int t : {1, 2}) {
            xgrad::set_num_threads(t);
            CAPTURE(t);
            CHECK(words(b.expand({17, 3, 17, 100}).sigmoid()) ==
                  golden::get("exact.txt", dt + ".big_expanded.sigmoid").item<std::int64_t>());
        }
        xgrad::set_num_threads(threads);
    }
}

TEST_CASE("clamp, clamp_min and clamp_max with tensor and scalar bounds") {
    check_cases({
        // (2, 4) between (4,) and (2, 1): some max below min, where the result is max.
        {"clamp_tensor", [](auto& in) { return xgrad::clamp(in[0], in[1], in[2]); }},
        {"clamp_tensor_min_only", [](auto& in) { return in[0].clamp(in[1], Tensor()); }},
        {"clamp_min_tensor", [](auto& in) { return xgrad::clamp_min(in[0], in[1]); }},
        {"clamp_max_tensor", [](auto& in) { return in[0].clamp_max(in[1]); }},
        {"clamp_min_scalar", [](auto& in) { return xgrad::clamp_min(in[0], -0.2); }},
        {"clamp_max_scalar", [](auto& in) { return in[0].clamp_max(0.3); }},
        {"clamp_tensor_nan", [](auto& in) { return in[0].clamp(in[1], in[2]); }, kFloats, false},
    });
    const std::string msg = golden::invalid_argument_of([] { xgrad::ones({2}).clamp(Tensor(), Tensor()); });
    CHECK(msg.find("At least one of 'min' or 'max' must not be None") != std::string::npos);
}

TEST_CASE("activations as functions match PyTorch's, kinks and special values included") {
    const std::map<std::string, Tensor (*)(const Tensor&)> plain = {
        {"silu", F::silu},
        {"selu", F::selu},
        {"mish", F::mish},
        {"relu6", F::relu6},
        {"hardswish", F::hardswish},
        {"hardsigmoid", F::hardsigmoid},
        {"logsigmoid", F::logsigmoid},
        {"softsign", F::softsign},
        {"quick_gelu", F::quick_gelu},
    };
    std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> acts(plain.begin(), plain.end());
    acts.push_back({"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x); }});
    acts.push_back({"leaky_relu_02", [](const Tensor& x) { return F::leaky_relu(x, 0.2); }});
    acts.push_back({"elu", [](const Tensor& x) { return F::elu(x); }});
    acts.push_back({"elu_05", [](const Tensor& x) { return F::elu(x, 0.5); }});
    acts.push_back({"celu", [](const Tensor& x) { return F::celu(x); }});
    acts.push_back({"celu_2", [](const Tensor& x) { return F::celu(x, 2.0); }});
    // 1 / 0.3 is inexact: the backward's (g·(1/alpha))·alpha keeps PyTorch's order of products.
    acts.push_back({"celu_03", [](const Tensor& x) { return F::celu(x, 0.3); }});
    acts.push_back({"softplus", [](const Tensor& x) { return F::softplus(x); }});
    acts.push_back({"softplus_beta", [](const Tensor& x) { return F::softplus(x, 2.0, 3.0); }});
    acts.push_back({"hardtanh", [](const Tensor& x) { return F::hardtanh(x); }});
    acts.push_back({"hardtanh_wide", [](const Tensor& x) { return F::hardtanh(x, -2.0, 3.0); }});
    for (const auto& [name, f] : acts) {
        auto fn = f;
        check_cases({
            {name, [fn](auto& in) { return fn(in[0]); }},
            {name + "_special", [fn](auto& in) { return fn(in[0]); }, kFloats, false},
            // six elements: PyTorch's scalar formulas, at the kinks too (hardswish's gradient at 3)
            {name + "_short", [fn](auto& in) { return fn(in[0]); }, kFloats, false},
        });
    }
    check_torch_error([] { F::celu(xgrad::ones({2}), 0.0); }, "celu_zero", "celu");
    CHECK(golden::invalid_argument_of([] { F::silu(xgrad::tensor({1}, xgrad::kInt64)); }) ==
          "silu: needs a floating-point tensor, got torch.int64");
}

namespace {

std::map<std::string, std::string> reprs() {
    return golden::reprs("elementwise_more_repr.txt");
}

using golden::printed;

}  // namespace

TEST_CASE("activation modules compute their functions and print as PyTorch's") {
    const auto want = reprs();
    auto check = [&](const std::string& key, nn::Module& m, const std::string& golden_case) {
        CHECK_MESSAGE(printed(m) == want.at(key), key << ": " << printed(m));
        if (golden_case.empty()) return;
        Tensor x = golden::get(kFile, golden_case + ".float64.in0");
        golden::check_close(m(x), golden::get(kFile, golden_case + ".float64.out"), key + " forward");
    };
    nn::SiLU silu;
    nn::LeakyReLU leaky, leaky02(0.2);
    nn::ELU elu, elu05(0.5);
    nn::SELU selu;
    nn::CELU celu;
    nn::Softplus softplus, softplus_beta(2.5, 10);
    nn::Mish mish;
    nn::ReLU6 relu6;
    nn::Hardswish hardswish;
    nn::Hardsigmoid hardsigmoid;
    nn::Hardtanh hardtanh, hardtanh_wide(-2.0, 3.0);
    nn::LogSigmoid logsigmoid;
    nn::Softsign softsign;
    nn::QuickGELU quick_gelu;
    nn::Softmax softmax(1);
    nn::LogSoftmax log_softmax(-1);
    check("silu", silu, "silu");
    check("leaky_relu", leaky, "leaky_relu");
    check("leaky_relu_02", leaky02, "leaky_relu_02");
    check("elu", elu, "elu");
    check("elu_05", elu05, "elu_05");
    check("selu", selu, "selu");
    check("celu", celu, "celu");
    check("softplus", softplus, "softplus");
    check("softplus_beta", softplus_beta, "");
    check("mish", mish, "mish");
    check("relu6", relu6, "relu6");
    check("hardswish", hardswish, "hardswish");
    check("hardsigmoid", hardsigmoid, "hardsigmoid");
    check("hardtanh", hardtanh, "hardtanh");
    check("hardtanh_wide", hardtanh_wide, "hardtanh_wide");
    check("logsigmoid", logsigmoid, "logsigmoid");
    check("softsign", softsign, "softsign");
    check("quick_gelu", quick_gelu, "quick_gelu");
    check("softmax", softmax, "softmax_mod");
    check("log_softmax", log_softmax, "");
    nn::LogSoftmax log_softmax0(0);
    Tensor x = golden::get(kFile, "log_softmax_mod.float64.in0");
    golden::check_close(log_softmax0(x), golden::get(kFile, "log_softmax_mod.float64.out"), "LogSoftmax(dim=0)");

    nn::Sequential net(nn::Linear(4, 3), nn::SiLU(), nn::Linear(3, 2), nn::LogSoftmax(1));
    CHECK(printed(net) == want.at("sequential"));
    CHECK(golden::invalid_argument_of([] { nn::CELU(0.0); }) == "CELU: ZeroDivisionError: alpha cannot be 0 for CELU");
    CHECK(golden::invalid_argument_of([] { nn::Hardtanh(1.0, -1.0); }) ==
          "Hardtanh: max_val (-1.0) must be greater than min_val (1.0)");
}
