// Elementwise ops (arithmetic, powers, activations, selections) against PyTorch's values, grad_fn names and gradients.
#include <doctest/doctest.h>

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

using xgrad::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

const std::string kFile = "elementwise.txt";

/// PyTorch's grad_fn name for `key` ("case.dtype"); "" when its output had none.
std::string golden_grad_fn(const std::string& key) {
    return golden::grad_fn_name(kFile, key);
}

/// The golden leaves of `key`, as fresh tensors; the floating ones require grad.
std::vector<Tensor> leaves(const std::string& key) {
    std::vector<Tensor> ins;
    for (int i = 0; golden::load(kFile).count(key + ".in" + std::to_string(i)); ++i) {
        Tensor t = golden::get(kFile, key + ".in" + std::to_string(i)).clone();  // the loader caches: never mutate
        if (t.is_floating_point()) t.requires_grad_();
        ins.push_back(t);
    }
    REQUIRE_MESSAGE(!ins.empty(), "no inputs for " << key << " in " << kFile);
    return ins;
}

/// One golden case: `fn` applied to PyTorch's leaves must give PyTorch's output, grad_fn name and the
/// gradients of (out * w).sum(); in float64 its backward must also agree with finite differences.
struct Case {
    std::string name;
    Fn fn;
    std::vector<std::string> dtypes = {"float32", "float64"};
    bool gradcheck = true;  // false where inputs sit on a kink (ties, 0 for relu) that differences cannot see
};

/// Cases whose gradients are PyTorch's bits where the CPU has FMA (PyTorch's formulas, in its order and
/// with the multiply-adds its compiler fuses); the others are checked within a tolerance.
const std::set<std::string> kExactGrads = {"tanh",        "tanh_transposed", "sigmoid",      "maximum",
                                           "minimum",     "maximum_bcast",   "maximum_ties", "minimum_ties",
                                           "maximum_nan", "minimum_nan",     "rdiv_scalar",  "add_bcast",
                                           "sub_bcast",   "mul_bcast",       "div_bcast"};

void check_case(const Case& c) {
    namespace vm = xgrad::kernels::cpu;
    const bool exact = kExactGrads.count(c.name) && vm::simd_arch() != vm::SimdArch::kSse2;
    for (const std::string& dtype : c.dtypes) {
        const std::string key = c.name + "." + dtype;
        std::vector<Tensor> ins = leaves(key);
        Tensor out = c.fn(ins);
        golden::check_close(out, golden::get(kFile, key + ".out"), key + " forward");
        const std::string want = golden_grad_fn(key);
        CHECK_MESSAGE(out.grad_fn_name() == want, key << ": grad_fn " << out.grad_fn_name() << ", PyTorch " << want);
        if (want.empty()) continue;
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

}  // namespace

TEST_CASE("tensor-tensor arithmetic broadcasts as PyTorch") {
    check_cases({
        {"add_bcast", [](auto& in) { return in[0] + in[1]; }},          // (2, 3) + (3,)
        {"add_same", [](auto& in) { return in[0].add(in[1]); }},        // (2, 3) + (2, 3)
        {"sub_bcast", [](auto& in) { return in[0] - in[1]; }},          // (3, 1) - (2, 1, 4)
        {"mul_bcast", [](auto& in) { return in[0] * in[1]; }},          // (2, 1) * (1, 4)
        {"mul_scalar_tensor", [](auto& in) { return in[0] * in[1]; }},  // (2, 3) * ()
        {"div_bcast", [](auto& in) { return in[0] / in[1]; }},          // (4, 1, 3) / (2, 1)
        {"div_same", [](auto& in) { return in[0].div(in[1]); }},
    });
}

TEST_CASE("non-contiguous operands: transposed and step-2 slices") {
    check_cases({
        {"add_transposed", [](auto& in) { return in[0].t() + in[1]; }},
        {"mul_sliced_rows", [](auto& in) { return in[0].slice(0, std::nullopt, std::nullopt, 2) * in[1]; }},
        {"sub_sliced_cols", [](auto& in) { return in[0].slice(1, std::nullopt, std::nullopt, 2) - in[1].t(); }},
        {"div_transposed", [](auto& in) { return in[0] / in[1].transpose(0, 1); }},
        {"neg_transposed", [](auto& in) { return -in[0].t(); }},
        {"exp_sliced", [](auto& in) { return in[0].slice(1, 1, std::nullopt, 2).exp(); }},
        {"tanh_transposed", [](auto& in) { return in[0].t().tanh(); }},
    });
}

TEST_CASE("a scalar on either side") {
    check_cases({
        {"add_scalar", [](auto& in) { return in[0] + 1.5; }},
        {"radd_scalar", [](auto& in) { return 1.5 + in[0]; }},
        {"sub_scalar", [](auto& in) { return in[0] - 1.5; }},
        {"rsub_scalar", [](auto& in) { return 2.0 - in[0]; }},  // RsubBackward1
        {"mul_scalar", [](auto& in) { return in[0] * 2.5; }},
        {"rmul_scalar", [](auto& in) { return 2.5 * in[0]; }},
        {"div_scalar", [](auto& in) { return in[0] / 3.0; }},
        {"rdiv_scalar", [](auto& in) { return 1.0 / in[0]; }},  // reciprocal() * 1: MulBackward0
        {"neg", [](auto& in) { return -in[0]; }},
    });
}

TEST_CASE("pow's gradient multiplies in PyTorch's order, bit for bit") {
    for (const std::string dtype : {"float32", "float64"}) {
        const std::string key = "pow_3_order." + dtype;
        std::vector<Tensor> ins = leaves(key);
        (xgrad::pow(ins[0], 3.0) * golden::get(kFile, key + ".w")).sum().backward();
        golden::check_close(ins[0].grad(), golden::get(kFile, key + ".g0"), key + " gradient", 0.0, 0.0);
    }
}

TEST_CASE("powers, roots, exponentials, logarithms, abs") {
    check_cases({
        {"pow_2", [](auto& in) { return in[0].pow(2.0); }},
        {"pow_3", [](auto& in) { return xgrad::pow(in[0], 3.0); }},
        {"pow_half", [](auto& in) { return in[0].pow(0.5); }},
        {"pow_minus1", [](auto& in) { return in[0].pow(-1.0); }},
        {"pow_0", [](auto& in) { return in[0].pow(0.0); }},  // 1 also at 0
        // 0 ** e is inf for e < 0 (xsimd's pow alone says 0); differences cannot straddle a pole.
        {"pow_scalar_zero_base", [](auto& in) { return in[0].pow(-2.0); }, {"float32", "float64"}, false},
        {"rdiv_zero", [](auto& in) { return 1.0 / in[0]; }, {"float32", "float64"}, false},
        {"pow_tensor", [](auto& in) { return in[0].pow(in[1]); }},  // (2, 3) ** (3,)
        // 0 ** 0 == 1, 0 ** 2 and 0 ** -1 == inf; PyTorch's gradients at 0 ** 0 are 0, not 0 * inf.
        // Differences at 0 ** b blow up for b < eps.
        {"pow_tensor_zero_base", [](auto& in) { return xgrad::pow(in[0], in[1]); }, {"float32", "float64"}, false},
        {"sqrt", [](auto& in) { return in[0].sqrt(); }},
        {"rsqrt", [](auto& in) { return xgrad::rsqrt(in[0]); }},
        {"exp", [](auto& in) { return xgrad::exp(in[0]); }},
        {"log", [](auto& in) { return in[0].log(); }},
        // Every third input is exactly 0, where PyTorch's gradient of abs is 0; the central difference
        // there is 0 too, so gradcheck still applies.
        {"abs", [](auto& in) { return in[0].abs(); }},
    });
}

TEST_CASE("activations") {
    check_cases({
        {"tanh", [](auto& in) { return in[0].tanh(); }},
        {"sigmoid", [](auto& in) { return xgrad::sigmoid(in[0]); }},
        // Inputs at exactly 0, where PyTorch's gradient is 0 and the central difference is 1/2.
        {"relu", [](auto& in) { return in[0].relu(); }, {"float32", "float64"}, false},
        {"gelu", [](auto& in) { return in[0].gelu(); }},
        {"gelu_tanh", [](auto& in) { return in[0].gelu("tanh"); }},
    });
}

TEST_CASE("maximum, minimum and clamp") {
    check_cases({
        {"maximum", [](auto& in) { return xgrad::maximum(in[0], in[1]); }},
        {"minimum", [](auto& in) { return xgrad::minimum(in[0], in[1]); }},
        {"maximum_bcast", [](auto& in) { return in[0].maximum(in[1]); }},  // (3, 4) and (4,)
        // Ties split the gradient in halves; differences see one side only.
        {"maximum_ties", [](auto& in) { return in[0].maximum(in[1]); }, {"float32", "float64"}, false},
        {"minimum_ties", [](auto& in) { return in[0].minimum(in[1]); }, {"float32", "float64"}, false},
        {"clamp_both", [](auto& in) { return in[0].clamp(-0.5, 0.7); }},
        {"clamp_min", [](auto& in) { return in[0].clamp(-0.5); }},
        {"clamp_max", [](auto& in) { return xgrad::clamp(in[0], std::nullopt, 0.7); }},
        // NaN propagates (xsimd's max and min alone would return the other operand), and the
        // gradients at NaN follow PyTorch's formulas: maximum/minimum pass g to both sides, relu passes it.
        {"maximum_nan", [](auto& in) { return in[0].maximum(in[1]); }, {"float32", "float64"}, false},
        {"minimum_nan", [](auto& in) { return in[0].minimum(in[1]); }, {"float32", "float64"}, false},
        {"clamp_nan", [](auto& in) { return in[0].clamp(-1.0, 1.5); }, {"float32", "float64"}, false},
        {"relu_nan", [](auto& in) { return in[0].relu(); }, {"float32", "float64"}, false},
        // A fractional bound makes int64 float32; an integral one keeps int64.
        {"clamp_int_fractional", [](auto& in) { return in[0].clamp(0.5); }, {"int64"}},
        {"clamp_int_integral", [](auto& in) { return in[0].clamp(-1.0, 2.0); }, {"int64"}},
    });
}

TEST_CASE("int64 stays int64 where PyTorch keeps it, and promotes where it promotes") {
    const std::vector<std::string> ints = {"int64"};
    check_cases({
        {"add_int", [](auto& in) { return in[0] + in[1]; }, ints},  // int64 (2, 3) + int64 (3,)
        {"mul_int", [](auto& in) { return in[0] * in[1]; }, ints},
        {"sub_int_scalar", [](auto& in) { return in[0] - 4.0; }, ints},  // an integral scalar keeps int64
        {"neg_int", [](auto& in) { return -in[0]; }, ints},
        {"div_int", [](auto& in) { return in[0] / in[1]; }, ints},               // true division: float32
        {"add_int_float", [](auto& in) { return in[0] + in[1]; }, {"float32"}},  // int64 + float32 -> float32
        {"mul_float_int", [](auto& in) { return in[0] * in[1]; }},               // float * int64 keeps the float dtype
    });

    SUBCASE("int64 arithmetic is exact beyond 2^53") {
        const std::int64_t big = (std::int64_t{1} << 60) + 1;
        Tensor a = xgrad::from_vector(std::vector<std::int64_t>{big, -big}, {2}, xgrad::kInt64);
        Tensor b = xgrad::from_vector(std::vector<std::int64_t>{2, 3}, {2}, xgrad::kInt64);
        CHECK((a + b).to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 2, -big + 3});
        CHECK((a - b).to_vector<std::int64_t>() == std::vector<std::int64_t>{big - 2, -big - 3});
        CHECK((a * 1.0).to_vector<std::int64_t>() == std::vector<std::int64_t>{big, -big});
        CHECK((-a).to_vector<std::int64_t>() == std::vector<std::int64_t>{-big, big});
        CHECK(a.maximum(b).to_vector<std::int64_t>() == std::vector<std::int64_t>{big, 3});
    }
    SUBCASE("a fractional scalar promotes int64 to float32, as PyTorch's default dtype") {
        Tensor a = xgrad::from_vector(std::vector<std::int64_t>{1, 2}, {2}, xgrad::kInt64);
        Tensor r = a * 2.5;
        CHECK(r.dtype() == xgrad::kFloat32);
        CHECK(r.to_vector<double>() == std::vector<double>{2.5, 5.0});
        CHECK((a * 2.0).dtype() == xgrad::kInt64);
        CHECK(a.exp().dtype() == xgrad::kFloat32);
    }
    SUBCASE("float32 with float64 promotes to float64") {
        Tensor a = xgrad::tensor({1.0, 2.0}).requires_grad_();
        Tensor b = xgrad::tensor({0.5, 0.25}, xgrad::kFloat64);
        Tensor r = a * b;
        CHECK(r.dtype() == xgrad::kFloat64);
        r.sum().backward();
        CHECK(a.grad().dtype() == xgrad::kFloat32);  // a leaf's gradient has the leaf's dtype
        CHECK(a.grad().to_vector<double>() == std::vector<double>{0.5, 0.25});
    }
}

TEST_CASE("recording: no grad_fn without requires_grad or under NoGradGuard; reused inputs accumulate") {
    Tensor x = xgrad::tensor({1.0, -2.0, 3.0});
    CHECK((x * x).grad_fn_name().empty());
    x.requires_grad_();
    {
        xgrad::NoGradGuard no_grad;
        CHECK_FALSE((x * x).requires_grad());
    }
    Tensor y = x * x + x;  // d/dx = 2x + 1
    y.sum().backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, -3.0, 7.0});
}

TEST_CASE("errors name the op and the shapes") {
    Tensor a = xgrad::zeros({2, 3}), b = xgrad::zeros({4});
    SUBCASE("shapes that do not broadcast") {
        golden::check_throws([&] { (void)(a + b); }, {"add", "(2, 3)", "(4,)"});
        golden::check_throws([&] { (void)(a - b); }, {"sub", "(2, 3)", "(4,)"});
        golden::check_throws([&] { (void)(a * b); }, {"mul", "(2, 3)", "(4,)"});
        golden::check_throws([&] { (void)(a / b); }, {"div", "(2, 3)", "(4,)"});
        golden::check_throws([&] { (void)a.pow(b); }, {"pow", "(2, 3)", "(4,)"});
        golden::check_throws([&] { (void)a.maximum(b); }, {"maximum", "(2, 3)", "(4,)"});
        golden::check_throws([&] { (void)a.minimum(b); }, {"minimum", "(2, 3)", "(4,)"});
    }
    SUBCASE("bad options") {
        golden::check_throws([&] { (void)a.gelu("fast"); }, {"gelu", "fast"});
        golden::check_throws([&] { (void)a.clamp(std::nullopt, std::nullopt); }, {"clamp", "min", "max"});
    }
    SUBCASE("undefined operands") {
        golden::check_throws([&] { (void)(a + Tensor()); }, {"add", "undefined"});
        golden::check_throws([&] { (void)Tensor().exp(); }, {"exp", "undefined"});
    }
}

TEST_CASE("transposed operands of the output's shape give the contiguous operands' bits") {
    // Large enough (at least the CPU's parallel grain) that the kernel copies such an operand tile by
    // tile before the map, batched (a permuted 3-D tensor) and 2-D, with one operand transposed or both.
    const int threads_before = xgrad::get_num_threads();
    xgrad::manual_seed(3);
    for (int threads : {1, 2}) {
        xgrad::set_num_threads(threads);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64}) {
            const Tensor a = (xgrad::randn({3, 300, 170}) * 50.0).to(dtype),
                         b = (xgrad::randn({3, 300, 170}) * 50.0).to(dtype);
            const Tensor at = a.transpose(1, 2), bt = b.transpose(1, 2);  // (3, 170, 300), strides (.., 1, 170)
            const Tensor ac = at.contiguous(), bc = bt.contiguous();
            CAPTURE(xgrad::to_string(dtype));
            CAPTURE(threads);
            CHECK((at + bt).equal(ac + bc));
            CHECK((at * bc).equal(ac * bc));
            CHECK((bc - at[1]).equal(bc - ac[1]));  // 2-D, broadcast against the batch
            CHECK(at.abs().equal(ac.abs()));
            CHECK(at[0].t().neg().equal(ac[0].t().contiguous().neg()));  // transposed back: a contiguous view
            if (dtype != xgrad::kInt64) {
                CHECK(at.exp().equal(ac.exp()));
                CHECK(xgrad::maximum(at, bt).equal(xgrad::maximum(ac, bc)));
            }
        }
    }
    xgrad::set_num_threads(threads_before);
}

TEST_CASE("a column broadcast across rows gives the expanded column's bits, on either side of + - * /") {
    // Along each output row such an operand is one value: the kernel maps the row with that scalar.
    xgrad::manual_seed(4);
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        for (std::int64_t rows : {3, 700}) {  // below and above the CPU's parallel grain
            const Tensor z = xgrad::randn({rows, 301}).to(dtype), c = xgrad::randn({rows, 1}).to(dtype).add(0.5);
            const Tensor ce = c.expand({rows, 301}).contiguous();
            CAPTURE(xgrad::to_string(dtype));
            CAPTURE(rows);
            CHECK((z + c).equal(z + ce));
            CHECK((c - z).equal(ce - z));
            CHECK((z - c).equal(z - ce));
            CHECK((c / z).equal(ce / z));
            CHECK((z / c).equal(z / ce));
            CHECK((c * z).equal(ce * z));
            const Tensor u = xgrad::randn({rows}).to(dtype), v = xgrad::randn({301}).to(dtype);
            CHECK(xgrad::outer(u, v).equal(u.reshape({rows, 1}).expand({rows, 301}).contiguous() *
                                           v.reshape({1, 301}).expand({rows, 301}).contiguous()));
        }
    }
}

TEST_CASE("short broadcast runs (row and channel scales, bias rows, kron) give the expanded operands' bits") {
    // Runs shorter than the scalar-map threshold go to the kernel many rows at a time. The shapes cross
    // the CPU's parallel grain mid-run and mid-row (a block cut by a thread's share), and put the
    // broadcast dims inside and outside the merged rows.
    const int threads_before = xgrad::get_num_threads();
    xgrad::manual_seed(5);
    struct Case {
        xgrad::Shape x, y;
    };
    const std::vector<Case> cases = {
        {{4096, 48}, {4096, 1}},            // a row scale, rows of three AVX-512 vectors
        {{2001, 37}, {2001, 1}},            // rows with a tail; two threads' shares meet mid-row
        {{33, 9, 30, 17}, {33, 1, 30, 1}},  // the second share starts halfway along the dim of the rows
        {{64, 16, 7, 7}, {1, 16, 1, 1}},    // a channel scale
        {{700, 61}, {61}},                  // a bias row
        {{9, 5, 3, 129}, {5, 1, 129}},      // a repeated block over two dims
        {{40, 1, 50, 1}, {1, 30, 1, 50}},   // kron's shapes: each operand one value along the other's runs
        {{33, 8, 31, 17}, {33, 1, 31, 1}},
        {{5, 3}, {5, 1}},  // one small block
    };
    for (int threads : {1, 2}) {
        xgrad::set_num_threads(threads);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
            for (const Case& c : cases) {
                const Tensor x = xgrad::randn(c.x).to(dtype), y = xgrad::randn(c.y).to(dtype).add(0.25);
                const xgrad::Shape out = (x + y).shape();
                const Tensor xe = x.expand(out).contiguous(), ye = y.expand(out).contiguous();
                CAPTURE(threads);
                CAPTURE(xgrad::to_string(dtype));
                CAPTURE(xgrad::to_string(out));
                CHECK((x + y).equal(xe + ye));
                CHECK((y + x).equal(ye + xe));
                CHECK((x - y).equal(xe - ye));
                CHECK((y - x).equal(ye - xe));
                CHECK((x * y).equal(xe * ye));
                CHECK((x / y).equal(xe / ye));
                CHECK((y / x).equal(ye / xe));
            }
        }
    }
    xgrad::set_num_threads(threads_before);
    // kron is such a product.
    const Tensor a = xgrad::randn({20, 30}), b = xgrad::randn({7, 9});
    CHECK(xgrad::kron(a, b).equal(a.reshape({20, 1, 30, 1})
                                      .expand({20, 7, 30, 9})
                                      .contiguous()
                                      .mul(b.reshape({1, 7, 1, 9}).expand({20, 7, 30, 9}).contiguous())
                                      .reshape({140, 270})));
}

TEST_CASE("results of permuted, transposed and sliced operands take PyTorch's layout (tests/golden/layout.txt)") {
    // TensorIterator's output layout: the dims ordered by the operands' strides. Values are checked
    // against the same ops on contiguous copies; the strides against PyTorch's.
    auto ar = [](const xgrad::Shape& shape) {
        return xgrad::arange(static_cast<double>(shape.numel())).reshape(shape) / 7.0 + 1.0;
    };
    const Tensor t = ar({4, 3}).t(), c = ar({3, 4}), p = ar({2, 3, 4}).permute({2, 0, 1}),
                 s = ar({4, 3}).t().narrow(1, 0, 2), nhwc = ar({2, 4, 5, 3}).permute({0, 3, 1, 2}), col = ar({3, 1}),
                 one = ar({3, 1}).t();
    const std::vector<std::pair<std::string, std::function<Tensor(bool)>>> cases = {
        // each case computed from the operands as they are (false) or from contiguous copies (true)
        {"t.exp", [&](bool k) { return (k ? t.contiguous() : t).exp(); }},
        {"t.mul_scalar", [&](bool k) { return (k ? t.contiguous() : t) * 2.0; }},
        {"t.add_t", [&](bool k) { return k ? t.contiguous() + t.contiguous() : t + t; }},
        {"t.mul_c", [&](bool k) { return (k ? t.contiguous() : t) * c; }},
        {"c.mul_t", [&](bool k) { return c * (k ? t.contiguous() : t); }},
        {"t.add_row", [&](bool k) { return (k ? t.contiguous() : t) + ar({4}); }},
        {"t.mul_col", [&](bool k) { return (k ? t.contiguous() : t) * col; }},
        {"col.sub_t", [&](bool k) { return col - (k ? t.contiguous() : t); }},
        {"p.add_scalar", [&](bool k) { return (k ? p.contiguous() : p) + 1.0; }},
        {"p.mul_p", [&](bool k) { return k ? p.contiguous() * p.contiguous() : p * p; }},
        {"p.mul_bcast",
         [&](bool k) {
             return (k ? p.contiguous() : p) * ar({4, 1, 1});
         }},
        {"p.add_row", [&](bool k) { return (k ? p.contiguous() : p) + ar({3}); }},
        {"p.neg", [&](bool k) { return (k ? p.contiguous() : p).neg(); }},
        {"s.mul_scalar", [&](bool k) { return (k ? s.contiguous() : s) * 2.0; }},
        {"s.add_s", [&](bool k) { return k ? s.contiguous() + s.contiguous() : s + s; }},
        {"nhwc.mul_channel",
         [&](bool k) {
             return (k ? nhwc.contiguous() : nhwc) * ar({1, 3, 1, 1});
         }},
        {"nhwc.relu", [&](bool k) { return (k ? nhwc.contiguous() : nhwc).relu(); }},
        {"nhwc.add_nhwc", [&](bool k) { return k ? nhwc.contiguous() + nhwc.contiguous() : nhwc + nhwc; }},
        {"nhwc.mul_c",
         [&](bool k) {
             return (k ? nhwc.contiguous() : nhwc) * ar({2, 3, 4, 5});
         }},
        {"one.exp", [&](bool k) { return (k ? one.contiguous() : one).exp(); }},
        {"one.add_row", [&](bool k) { return (k ? one.contiguous() : one) + ar({3}); }},
    };
    for (const auto& c : cases) {
        const std::string& name = c.first;  // not a structured binding: CAPTURE's lambda takes it (clang)
        CAPTURE(name);
        const Tensor r = c.second(false), expected = c.second(true);
        CHECK(r.equal(expected));
        const std::vector<std::int64_t> want = golden::get("layout.txt", name + ".strides").to_vector<std::int64_t>();
        CHECK(std::vector<std::int64_t>(r.strides().begin(), r.strides().end()) == want);
    }
    // The gradient of a contiguous leaf stays contiguous (PyTorch's AccumulateGrad layout contract).
    Tensor x = ar({4, 3}).requires_grad_();
    (x.t().exp() * ar({3, 4})).sum().backward();
    CHECK(x.grad().is_contiguous());
    CHECK(x.grad().allclose(x.detach().exp() * ar({3, 4}).t()));
}
