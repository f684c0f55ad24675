// Tests for LayerNorm/RMSNorm: PyTorch golden values, fused kernels vs primitive composites, gradcheck.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace vm = xgrad::kernels::cpu;
using golden::bits_differ;

namespace {

/// The trailing dims of `nshape` as negative dims: {-2, -1} for a 2-D normalized shape.
xgrad::Dims trailing_dims(const Shape& nshape) {
    std::vector<std::int64_t> d;
    for (std::int64_t i = -nshape.size(); i < 0; ++i) d.push_back(i);
    return xgrad::Dims(d);
}

/// LayerNorm from primitive ops, as tinygrad and the notebooks write it.
Tensor layer_norm_composite(const Tensor& x, const Shape& nshape, const Tensor& w, const Tensor& b, double eps) {
    auto d = trailing_dims(nshape);
    Tensor y = (x - x.mean(d, true)) / (x.var(d, false, true) + eps).sqrt();
    if (w.defined()) y = y * w;
    if (b.defined()) y = y + b;
    return y;
}

Tensor rms_norm_composite(const Tensor& x, const Shape& nshape, const Tensor& w, double eps) {
    Tensor y = x * (x.pow(2).mean(trailing_dims(nshape), true) + eps).rsqrt();
    return w.defined() ? y * w : y;
}

struct Case {
    const char* name;
    Shape nshape;
    bool affine;
};
const Case kCases[] = {
    {"w7", {7}, true}, {"w1", {1}, true}, {"w3", {3}, false}, {"d2", {3, 5}, true}, {"d3", {2, 3, 4}, true}};

/// Leaf copies of golden tensors.
Tensor leaf(const std::string& name) {
    return golden::get("nn.txt", name).clone().requires_grad_();
}

}  // namespace

TEST_CASE("layer_norm and rms_norm match PyTorch's values and gradients") {
    const bool exact = vm::simd_arch() != vm::SimdArch::kSse2;
    for (const char* tag : {"f32", "f64"}) {
        const bool f32 = std::string(tag) == "f32";
        const double rtol = f32 ? 1e-5 : 1e-12, atol = f32 ? 1e-5 : 1e-12;
        for (const auto& c : kCases) {
            for (bool rms : {false, true}) {
                std::string key = std::string(rms ? "rms." : "ln.") + c.name + "." + tag;
                CAPTURE(key);
                Tensor x = leaf(key + ".x");
                Tensor w = c.affine ? leaf(key + ".w") : Tensor();
                Tensor b = c.affine && !rms ? leaf(key + ".b") : Tensor();
                Tensor y = rms ? F::rms_norm(x, c.nshape, w) : F::layer_norm(x, c.nshape, w, b);
                golden::check_close(y, golden::get("nn.txt", key + ".y"), key + " y", rtol, atol);
                // LayerNorm gives PyTorch's bits where its AVX2 kernels define them (below); RMSNorm
                // those of PyTorch 1.13's composite x * rsqrt(x.pow(2).mean(dims) + eps) * w everywhere
                // (its gradients are close only).
                CHECK(((!exact && !rms) || bits_differ(y, golden::get("nn.txt", key + ".y")) == 0));
                CHECK(y.grad_fn_name() == (rms ? "MulBackward0" : "NativeLayerNormBackward0"));
                (y * golden::get("nn.txt", key + ".up")).sum().backward();
                // PyTorch's CPU backward writes dx as a·dy + b·x + c, whose terms cancel only to
                // rounding noise of about rstd·ulp: for width 1 (rstd ≈ 316) it gives -1.5e-5 where
                // the exact answer is 0. xgrad computes dx as PyTorch does; without FMA, and for RMSNorm,
                // its noise differs. Hence a looser absolute tolerance for float32 dx.
                golden::check_close(x.grad(), golden::get("nn.txt", key + ".dx"), key + " dx", rtol, f32 ? 1e-4 : atol);
                if (w.defined())
                    golden::check_close(w.grad(), golden::get("nn.txt", key + ".dw"), key + " dw", rtol, atol);
                if (b.defined())
                    golden::check_close(b.grad(), golden::get("nn.txt", key + ".db"), key + " db", rtol, atol);
                // LayerNorm's gradients are PyTorch's bits where its AVX2 kernels define them; RMSNorm's are
                // its composite's autograd, with no fused multiply-add, on every instruction set.
                if (exact || rms)
                    for (const auto& leaf_name : {std::pair{x, ".dx"}, {w, ".dw"}, {b, ".db"}})
                        if (leaf_name.first.defined())
                            CHECK_MESSAGE(
                                bits_differ(leaf_name.first.grad(), golden::get("nn.txt", key + leaf_name.second)) == 0,
                                leaf_name.second);
            }
        }
    }
    // An explicit eps.
    Tensor x = leaf("rms.eps.f32.x");
    CHECK(bits_differ(F::rms_norm(x, {6}, leaf("rms.eps.f32.w"), 1e-6), golden::get("nn.txt", "rms.eps.f32.y")) == 0);
}

namespace {

/// norm_exact.txt's inputs (gen_norm_exact.py's inputs()): the same doubles, rounded to the dtype.
struct NormInputs {
    Tensor x, w, b, up;
};
NormInputs norm_inputs(xgrad::DType dtype, std::int64_t width, std::int64_t rows) {
    std::vector<double> x, w, b, up;
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < width; ++j) {
            x.push_back(std::sin(0.37 * static_cast<double>(j + 1) + 1.3 * static_cast<double>(r)) *
                            static_cast<double>(1 + r) +
                        0.25 * static_cast<double>(r) - 2);
            up.push_back(std::cos(0.53 * static_cast<double>(j + 1) + 0.7 * static_cast<double>(r)));
        }
    for (std::int64_t j = 0; j < width; ++j) {
        w.push_back(1 + 0.5 * std::sin(0.11 * static_cast<double>(j) + 0.5));
        b.push_back(0.1 * std::cos(0.23 * static_cast<double>(j)));
    }
    auto t = [&](const std::vector<double>& v, const Shape& s) { return xgrad::from_vector(v, s, dtype); };
    return {t(x, {rows, width}), t(w, {width}), t(b, {width}), t(up, {rows, width})};
}

}  // namespace

TEST_CASE("LayerNorm gives PyTorch's bits on rows that run every part of its kernels") {
    // Widths from below one AVX2 register to a cascade of 17 chunks of 16 registers (gen_norm_exact.py),
    // on every instruction set: PyTorch's bits with FMA (its AVX2 build fuses some multiply-adds),
    // close without (SSE2, where xgrad keeps them unfused, as PyTorch's default build would).
    struct Case {
        xgrad::DType dtype;
        std::int64_t width, rows;
    };
    const Case cases[] = {{xgrad::kFloat32, 9, 2},    {xgrad::kFloat32, 100, 2},  {xgrad::kFloat32, 300, 2},
                          {xgrad::kFloat32, 1500, 1}, {xgrad::kFloat32, 2100, 1}, {xgrad::kFloat64, 9, 2},
                          {xgrad::kFloat64, 300, 2}};
    const vm::SimdArch saved = vm::simd_arch();
    for (auto arch : {vm::SimdArch::kAvx512, vm::SimdArch::kAvx2, vm::SimdArch::kSse2}) {
        if (!vm::simd_arch_supported(arch)) continue;
        vm::set_simd_arch(arch);
        const bool exact = arch != vm::SimdArch::kSse2;
        for (const Case& c : cases) {
            const std::string key = std::string(c.dtype == xgrad::kFloat32 ? "float32" : "float64") + ".w" +
                                    std::to_string(c.width) + "r" + std::to_string(c.rows);
            const std::string arch_name = vm::simd_arch_name();
            CAPTURE(key);
            CAPTURE(arch_name);
            auto check = [&](const Tensor& got, const std::string& name, bool bits = true) {
                const Tensor want = golden::get("norm_exact.txt", key + "." + name);
                if (exact && bits)
                    CHECK_MESSAGE(bits_differ(got, want) == 0, name);
                else
                    golden::check_close(got, want, name, 1e-5, 1e-4);
            };
            const NormInputs in = norm_inputs(c.dtype, c.width, c.rows);
            const Shape shape{c.width};
            for (bool affine : {true, false}) {
                if (!affine && c.width > 300) continue;
                Tensor x = in.x.clone().requires_grad_();
                Tensor w = affine ? in.w.clone().requires_grad_() : Tensor();
                Tensor b = affine ? in.b.clone().requires_grad_() : Tensor();
                Tensor y = F::layer_norm(x, shape, w, b, 1e-5);
                (y * in.up).sum().backward();
                const std::string tag = affine ? "" : "0";
                check(y, "y" + tag);
                check(x.grad(), "dx" + tag);
                if (affine) {
                    check(w.grad(), "dw");
                    check(b.grad(), "db");
                }
            }
            if (c.width == 100) {
                check(F::layer_norm(in.x, shape, in.w, Tensor(), 1e-5), "y_w");
                check(F::layer_norm(in.x, shape, Tensor(), in.b, 1e-5), "y_b");
            }
            // RMSNorm: PyTorch's composite in its bits, on every instruction set (Σx² in PyTorch's order of a
            // sum, no fused multiply-add anywhere).
            CHECK_MESSAGE(
                bits_differ(F::rms_norm(in.x, shape, in.w, 1e-6), golden::get("norm_exact.txt", key + ".rms")) == 0,
                "rms");
        }
    }
    vm::set_simd_arch(saved);
}

TEST_CASE("RMSNorm's gradients are PyTorch's composite's bits on many rows, on 1 and 2 threads") {
    // gen_norm_exact.py's RMS_CASES: the weight gradient sums thousands of rows in the order of PyTorch's
    // sum over leading dims, in every kind of column; the rows are split between threads.
    struct Case {
        xgrad::DType dtype;
        std::int64_t width, rows;
    };
    const Case cases[] = {{xgrad::kFloat32, 37, 4419}, {xgrad::kFloat32, 13, 17495}, {xgrad::kFloat32, 20, 300},
                          {xgrad::kFloat32, 6, 70},    {xgrad::kFloat32, 768, 96},   {xgrad::kFloat64, 1, 1030},
                          {xgrad::kFloat64, 130, 700}};
    const int threads = xgrad::get_num_threads();
    const vm::SimdArch saved = vm::simd_arch();
    for (auto arch : {vm::SimdArch::kAvx512, vm::SimdArch::kAvx2, vm::SimdArch::kSse2}) {
        if (!vm::simd_arch_supported(arch)) continue;
        vm::set_simd_arch(arch);
        for (int t : {1, 2}) {
            xgrad::set_num_threads(t);
            for (const Case& c : cases) {
                const std::string key = std::string("rms.") + (c.dtype == xgrad::kFloat32 ? "float32" : "float64") +
                                        ".w" + std::to_string(c.width) + "r" + std::to_string(c.rows);
                const std::string arch_name = vm::simd_arch_name();
                CAPTURE(key);
                CAPTURE(arch_name);
                CAPTURE(t);
                const NormInputs in = norm_inputs(c.dtype, c.width, c.rows);
                for (bool affine : {true, false}) {
                    Tensor x = in.x.clone().requires_grad_();
                    Tensor w = affine ? in.w.clone().requires_grad_() : Tensor();
                    (F::rms_norm(x, {c.width}, w, 1e-6) * in.up).sum().backward();
                    const std::string tag = affine ? "" : "0";
                    const Tensor dx = x.grad();
                    CHECK(bits_differ(dx.narrow(0, 0, 3), golden::get("norm_exact.txt", key + ".dx_head" + tag)) == 0);
                    CHECK(bits_differ(dx.narrow(0, c.rows - 3, 3),
                                      golden::get("norm_exact.txt", key + ".dx_tail" + tag)) == 0);
                    if (affine) CHECK(bits_differ(w.grad(), golden::get("norm_exact.txt", key + ".dw")) == 0);
                }
            }
        }
    }
    xgrad::set_num_threads(threads);
    vm::set_simd_arch(saved);
}

TEST_CASE("fused kernels agree with the composite of primitive ops") {
    xgrad::manual_seed(11);
    struct Geometry {
        Shape input, nshape;
    };
    const Geometry geometries[] = {{{4, 1}, {1}},       {{3, 3}, {3}},       {{5, 7}, {7}},
                                   {{3, 1500}, {1500}}, {{2, 3, 5}, {3, 5}}, {{2, 2, 3, 4}, {2, 3, 4}},
                                   {{64, 33}, {33}},    {{600, 130}, {130}}};  // the last one runs threaded
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const bool f32 = dtype == xgrad::kFloat32;
        for (const auto& g : geometries) {
            for (bool affine : {false, true}) {
                for (bool rms : {false, true}) {
                    CAPTURE(xgrad::to_string(g.input));
                    CAPTURE(affine);
                    CAPTURE(rms);
                    CAPTURE(f32);
                    Tensor x = (xgrad::randn(g.input, dtype) * 3.0 + 1.0).requires_grad_();
                    Tensor w = affine ? (xgrad::randn(g.nshape, dtype) + 1.0).requires_grad_() : Tensor();
                    Tensor b = affine && !rms ? xgrad::randn(g.nshape, dtype).requires_grad_() : Tensor();
                    Tensor up = xgrad::randn(g.input, dtype);
                    const double eps = 1e-5;
                    Tensor fused = rms ? F::rms_norm(x, g.nshape, w, eps) : F::layer_norm(x, g.nshape, w, b, eps);
                    std::vector<Tensor> leaves;
                    for (const Tensor& t : {x, w, b})
                        if (t.defined()) leaves.push_back(t);
                    (fused * up).sum().backward();
                    std::vector<Tensor> fused_grads;
                    for (auto& l : leaves) {
                        fused_grads.push_back(l.grad());
                        l.mutable_grad() = Tensor();
                    }
                    Tensor ref =
                        rms ? rms_norm_composite(x, g.nshape, w, eps) : layer_norm_composite(x, g.nshape, w, b, eps);
                    (ref * up).sum().backward();
                    const double tol = f32 ? 2e-4 : 1e-10;
                    golden::check_close(fused, ref.detach(), "forward", tol, tol);
                    for (std::size_t i = 0; i < leaves.size(); ++i)
                        golden::check_close(fused_grads[i], leaves[i].grad(), "gradient " + std::to_string(i), tol,
                                            tol * 10);
                    // RMSNorm's fused kernels compute what PyTorch's autograd computes through this very
                    // composite, and xgrad's primitive ops give PyTorch's bits: the same bits, any shape.
                    if (rms) {
                        CHECK(bits_differ(fused, ref.detach()) == 0);
                        for (std::size_t i = 0; i < leaves.size(); ++i)
                            CHECK_MESSAGE(bits_differ(fused_grads[i], leaves[i].grad()) == 0, "gradient ", i);
                    }
                }
            }
        }
    }
}

TEST_CASE("the fused kernels agree across the instruction sets this CPU runs") {
    const vm::SimdArch saved = vm::simd_arch();
    std::vector<vm::SimdArch> archs;
    for (auto a : {vm::SimdArch::kAvx512, vm::SimdArch::kAvx2, vm::SimdArch::kSse2})
        if (vm::simd_arch_supported(a)) archs.push_back(a);
    REQUIRE(archs.back() == vm::SimdArch::kSse2);
    xgrad::manual_seed(17);
    // Widths with and without vector tails, one row set large enough to run threaded.
    const Shape inputs[] = {{6, 8}, {5, 37}, {3, 1500}, {700, 130}};
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const double tol = dtype == xgrad::kFloat32 ? 1e-5 : 1e-12;
        for (const auto& input : inputs) {
            const Shape nshape{input[input.size() - 1]};
            Tensor x0 = xgrad::randn(input, dtype) * 3.0 + 1.0, up = xgrad::randn(input, dtype);
            Tensor w0 = xgrad::randn(nshape, dtype) + 1.0, b0 = xgrad::randn(nshape, dtype);
            for (bool rms : {false, true}) {
                CAPTURE(xgrad::to_string(input));
                CAPTURE(rms);
                std::vector<std::vector<Tensor>> results;  // per arch: y, dx, dw (, db)
                for (auto arch : archs) {
                    vm::set_simd_arch(arch);
                    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
                    Tensor b = rms ? Tensor() : b0.clone().requires_grad_();
                    Tensor y = rms ? F::rms_norm(x, nshape, w, 1e-5) : F::layer_norm(x, nshape, w, b, 1e-5);
                    (y * up).sum().backward();
                    results.push_back({y.detach(), x.grad(), w.grad()});
                    if (!rms) results.back().push_back(b.grad());
                }
                vm::set_simd_arch(saved);
                for (std::size_t a = 1; a < archs.size(); ++a)
                    for (std::size_t i = 0; i < results[0].size(); ++i)
                        golden::check_close(results[a][i], results[0][i], "output " + std::to_string(i), tol, tol);
            }
        }
    }
}

TEST_CASE("norms of tensors written with non-temporal stores give the bits of small calls") {
    xgrad::manual_seed(23);
    // Outputs of kStreamBytes and more are written with non-temporal stores, and the backward's from
    // half that (the forward's then are not); the same rows in calls of 64 rows are not. Width 770 puts
    // most rows off the vector alignment (a scalar head); rows of 1500 (more than 4 KiB) take LayerNorm's
    // backward four rows side by side from memory too.
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
        for (std::int64_t width : {768, 770, 1500})
            for (std::int64_t bytes : {vm::kStreamBytes / 2, vm::kStreamBytes}) {
                const std::int64_t elem = dtype == xgrad::kFloat32 ? 4 : 8;
                const std::int64_t rows = bytes / (width * elem) + 3;
                Tensor x0 = xgrad::randn({rows, width}, dtype) * 2.0 + 0.5, up = xgrad::randn({rows, width}, dtype);
                Tensor w0 = xgrad::randn({width}, dtype), b0 = xgrad::randn({width}, dtype);
                for (bool rms : {false, true}) {
                    auto run = [&](const Tensor& xs, const Tensor& ups) {
                        Tensor x = xs.detach().requires_grad_(), w = w0.detach().requires_grad_();
                        Tensor y = rms ? F::rms_norm(x, {width}, w, 1e-5) : F::layer_norm(x, {width}, w, b0, 1e-5);
                        (y * ups).sum().backward();
                        return std::pair{y.detach(), x.grad()};
                    };
                    auto [y, dx] = run(x0, up);
                    std::vector<Tensor> ys, dxs;
                    for (std::int64_t r = 0; r < rows; r += 64) {
                        const std::int64_t len = std::min<std::int64_t>(64, rows - r);
                        auto part = run(x0.narrow(0, r, len), up.narrow(0, r, len));
                        ys.push_back(part.first);
                        dxs.push_back(part.second);
                    }
                    INFO(xgrad::to_string(dtype)
                         << " width " << width << " rows " << rows << (rms ? " rms_norm" : " layer_norm"));
                    CHECK(y.equal(xgrad::cat(ys)));
                    CHECK(dx.equal(xgrad::cat(dxs)));
                }
            }
}

TEST_CASE("norms give the same bits wherever a row starts in memory") {
    // The row kernels write a row from its first vector-aligned element on (width 1500 floats puts
    // most rows off the alignment): a view whose rows start elsewhere than its contiguous copy's must
    // give the copy's bits, forward and backward, with and without the weight and bias.
    xgrad::manual_seed(29);
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
        for (std::int64_t width : {1500, 770}) {
            Tensor big = xgrad::randn({9, width}, dtype) * 2.0 + 0.5, up = xgrad::randn({8, width}, dtype);
            Tensor w0 = xgrad::randn({width}, dtype) + 1.0, b0 = xgrad::randn({width}, dtype);
            for (int form = 0; form < 4; ++form) {
                const bool rms = form >= 2, affine = form % 2 == 0;
                auto run = [&](const Tensor& xs) {
                    Tensor x = xs.detach().requires_grad_();
                    Tensor w = affine ? w0.detach().requires_grad_() : Tensor();
                    Tensor b = affine && !rms ? b0.detach().requires_grad_() : Tensor();
                    Tensor y = rms ? F::rms_norm(x, {width}, w, 1e-5) : F::layer_norm(x, {width}, w, b, 1e-5);
                    (y * up).sum().backward();
                    return std::vector<Tensor>{y.detach(), x.grad(), affine ? w.grad() : Tensor()};
                };
                Tensor view = big.narrow(0, 1, 8);  // rows start one row (not a multiple of 64 bytes) in
                auto a = run(view), b = run(view.contiguous());
                INFO(xgrad::to_string(dtype) << " width " << width << " form " << form);
                for (std::size_t i = 0; i < a.size(); ++i)
                    if (a[i].defined()) CHECK(a[i].equal(b[i]));
            }
        }
}

TEST_CASE("gradcheck passes for the fused kernels") {
    xgrad::manual_seed(5);
    Tensor x = xgrad::randn({3, 2, 4}, xgrad::kFloat64).requires_grad_();
    Tensor w = (xgrad::randn({2, 4}, xgrad::kFloat64) + 1.0).requires_grad_();
    Tensor b = xgrad::randn({2, 4}, xgrad::kFloat64).requires_grad_();
    golden::check_gradcheck(
        [](const auto& in) {
            return F::layer_norm(in[0], {2, 4}, in[1], in[2]);
        },
        {x, w, b}, "layer_norm 2 dims");
    golden::check_gradcheck([](const auto& in) { return F::layer_norm(in[0], {4}); }, {x}, "layer_norm no affine");
    golden::check_gradcheck([](const auto& in) { return F::rms_norm(in[0], {2, 4}, in[1]); }, {x, w}, "rms_norm");
    golden::check_gradcheck([](const auto& in) { return F::rms_norm(in[0], {4}, Tensor(), 1e-3); }, {x},
                            "rms_norm no weight");
}

TEST_CASE("LayerNorm in giagrad's form learns its shape at the first forward") {
    nn::LayerNorm ln(2);  // the last two axes, sizes unknown
    CHECK(ln.named_parameters().size() == 2);
    std::vector<Tensor> held = ln.parameters();  // an optimizer built before the first forward
    CHECK(held[0].numel() == 0);
    CHECK(!ln.normalized_shape());

    xgrad::manual_seed(2);
    Tensor x = xgrad::randn({4, 3, 5});
    Tensor y = ln(x);
    REQUIRE(ln.normalized_shape());
    CHECK(*ln.normalized_shape() == Shape{3, 5});
    CHECK(held[0].shape() == Shape{3, 5});  // the held handles see the materialised parameters
    CHECK(held[0].requires_grad());
    CHECK(held[0].sum().item<double>() == 15.0);
    CHECK(held[1].sum().item<double>() == 0.0);
    golden::check_close(y, F::layer_norm(x, {3, 5}), "ln(x)");
    y.sum().backward();
    CHECK(held[0].grad().shape() == Shape{3, 5});

    std::ostringstream os;
    os << ln;
    CHECK(os.str() == "LayerNorm((3, 5), eps=1e-05, elementwise_affine=True)");
    CHECK_THROWS_WITH_AS(
        ln(xgrad::randn({4, 3, 6})),
        "LayerNorm: input of shape (4, 3, 6) does not end with the normalized shape (3, 5) fixed by the "
        "first input",
        std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::LayerNorm(3)(xgrad::randn({4, 5})),
                         "LayerNorm: expects at least 3 dimensions, got input of shape (4, 5)", std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::LayerNorm(0), doctest::Contains("dimensions must be at least 1"), std::invalid_argument);
}

TEST_CASE("LayerNorm's two forms: PyTorch's shape form, no affine, interchangeable state dicts") {
    nn::LayerNorm torch_form({10});  // braces mean normalized_shape, as nn.LayerNorm(10) in PyTorch
    REQUIRE(torch_form.normalized_shape());
    CHECK(*torch_form.normalized_shape() == Shape{10});
    CHECK(torch_form.weight.shape() == Shape{10});
    nn::LayerNorm giagrad_form(1);
    CHECK(!giagrad_form.normalized_shape());
    giagrad_form(xgrad::ones({2, 10}));
    {
        xgrad::NoGradGuard no_grad;
        torch_form.weight.fill_(2.0);
    }
    giagrad_form.load_state_dict(torch_form.state_dict());
    CHECK(giagrad_form.weight.sum().item<double>() == 20.0);

    nn::LayerNorm plain(2, 1e-5, false);
    CHECK(plain.parameters().empty());
    Tensor y = plain(xgrad::randn({2, 3, 4}));
    CHECK(std::abs(y.mean().item<double>()) < 1e-6);
    CHECK_THROWS_WITH_AS(F::layer_norm(xgrad::ones({2, 5}), {4}),
                         "layer_norm: input of shape (2, 5) does not end with normalized_shape (4,)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(F::layer_norm(xgrad::ones({2, 5}), {5}, xgrad::ones({4})),
                         "layer_norm: weight and bias must have shape (5,), got (4,)", std::invalid_argument);
}

TEST_CASE("RMSNorm: eps defaults to the dtype's machine epsilon, both forms, printing") {
    xgrad::manual_seed(9);
    Tensor x = xgrad::randn({3, 8});
    nn::RMSNorm rms(1);
    Tensor expected = rms_norm_composite(x, {8}, Tensor(), std::numeric_limits<float>::epsilon());
    golden::check_close(rms(x), expected, "default eps float32");
    Tensor xd = x.to(xgrad::kFloat64) * 1e-9;  // tiny values make eps visible
    golden::check_close(F::rms_norm(xd, {8}),
                        rms_norm_composite(xd, {8}, Tensor(), std::numeric_limits<double>::epsilon()),
                        "default eps float64", 1e-12, 0);
    std::ostringstream os;
    os << rms;
    CHECK(os.str() == "RMSNorm((8,), eps=None, elementwise_affine=True)");
    nn::RMSNorm rms2({4}, 1e-6, false);
    os.str("");
    os << rms2;
    CHECK(os.str() == "RMSNorm((4,), eps=1e-06, elementwise_affine=False)");
    CHECK(rms2.parameters().empty());
    CHECK(rms.named_parameters().at(0).first == "weight");
}

TEST_CASE("an empty batch gives zero weight and bias gradients, as PyTorch") {
    Tensor x = xgrad::zeros({0, 4}).requires_grad_(true);
    Tensor w = xgrad::randn({4}).requires_grad_(true), b = xgrad::randn({4}).requires_grad_(true);
    (F::layer_norm(x, {4}, w, b).sum() + F::rms_norm(x, {4}, w).sum()).backward();
    CHECK(x.grad().shape() == Shape{0, 4});
    CHECK(w.grad().to_vector<float>() == std::vector<float>(4, 0.0f));
    CHECK(b.grad().to_vector<float>() == std::vector<float>(4, 0.0f));
}
