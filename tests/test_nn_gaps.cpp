// Tests for the smaller nn gaps: Conv1d/Conv2d padding strings and padding modes, F::pad's circular
// mode, max/avg pooling's dilation, ceil_mode, indices and divisor_override, and F::normalize for any
// p: PyTorch golden values (forward, backward, init, repr, error texts) and gradcheck.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
using Ins = std::vector<Tensor>;

namespace {

const char* kFile = "nn_gaps.txt";
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
    const char* name;
    int inputs;
    std::function<Tensor(const Ins&)> fn;
};

const Case kCases[] = {
    {"conv2d.same", 3, [](const Ins& in) { return F::conv2d(in[0], in[1], in[2], 1, "same"); }},
    {"conv2d.same_even_dil", 2,
     [](const Ins& in) {
         return F::conv2d(in[0], in[1], Tensor(), 1, "same", {1, 2});
     }},
    {"conv2d.same_unbatched", 2, [](const Ins& in) { return F::conv2d(in[0], in[1], Tensor(), 1, "same"); }},
    {"conv2d.valid", 3, [](const Ins& in) { return F::conv2d(in[0], in[1], in[2], 1, "valid", 1, 2); }},
    {"conv1d.same_even", 3, [](const Ins& in) { return F::conv1d(in[0], in[1], in[2], 1, "same"); }},
    {"conv1d.valid", 2, [](const Ins& in) { return F::conv1d(in[0], in[1], Tensor(), 2, "valid"); }},
    {"pad.circular2d", 1,
     [](const Ins& in) {
         return F::pad(in[0], {2, 1, 1, 3}, "circular");
     }},
    {"pad.circular1d", 1,
     [](const Ins& in) {
         return F::pad(in[0], {1, 2}, "circular");
     }},
    {"pad.circular_crop", 1,
     [](const Ins& in) {
         return F::pad(in[0], {-1, 2, 0, -2}, "circular");
     }},
    {"pad.circular3d", 1,
     [](const Ins& in) {
         return F::pad(in[0], {1, 0, 0, 2, 1, 1}, "circular");
     }},
    {"max_pool2d.dil", 1, [](const Ins& in) { return F::max_pool2d(in[0], 3, 2, 1, 2); }},
    {"max_pool2d.ceil", 1, [](const Ins& in) { return F::max_pool2d(in[0], 3, 2, 0, 1, true); }},
    {"max_pool2d.ceil_pad_dil", 1,
     [](const Ins& in) {
         return F::max_pool2d(in[0], {2, 3}, xgrad::nn::Pair(2, 2), {1, 1}, {2, 1}, true);
     }},
    {"max_pool2d.unbatched_ceil", 1, [](const Ins& in) { return F::max_pool2d(in[0], 2, std::nullopt, 0, 1, true); }},
    {"avg_pool2d.ceil", 1, [](const Ins& in) { return F::avg_pool2d(in[0], 3, 2, 1, true, true); }},
    {"avg_pool2d.ceil_nocount", 1, [](const Ins& in) { return F::avg_pool2d(in[0], 3, 2, 1, true, false); }},
    {"avg_pool2d.divisor", 1,
     [](const Ins& in) {
         return F::avg_pool2d(in[0], {2, 3}, 1, {1, 1}, false, true, 4);
     }},
    {"avg_pool2d.ceil_divisor", 1, [](const Ins& in) { return F::avg_pool2d(in[0], 2, 2, 0, true, true, 3); }},
    {"max_pool1d.all", 1, [](const Ins& in) { return F::max_pool1d(in[0], 3, 2, 1, 2, true); }},
    {"max_pool1d.unbatched", 1, [](const Ins& in) { return F::max_pool1d(in[0], 2); }},
    {"avg_pool1d.ceil_nocount", 1, [](const Ins& in) { return F::avg_pool1d(in[0], 3, 2, 1, true, false); }},
    {"avg_pool1d.unbatched", 1, [](const Ins& in) { return F::avg_pool1d(in[0], 2, 1, 1); }},
    {"normalize.p05", 1, [](const Ins& in) { return F::normalize(in[0], 0.5, 1); }},
    {"normalize.inf", 1, [](const Ins& in) { return F::normalize(in[0], kInf, -1); }},
    {"normalize.ninf", 1, [](const Ins& in) { return F::normalize(in[0], -kInf, 0); }},
    {"normalize.p0", 1, [](const Ins& in) { return F::normalize(in[0], 0, 1); }},
    {"normalize.pneg", 1, [](const Ins& in) { return F::normalize(in[0], -1.5, 1); }},
    {"cosine.dim1", 2, [](const Ins& in) { return F::cosine_similarity(in[0], in[1]); }},
    {"cosine.small_norms", 2,
     [](const Ins& in) {
         // Rows of norm 0 and below eps: the norms are clamped, their gradients still passed on.
         const Tensor scale = xgrad::tensor({{0.0}, {1.0}, {1e-9}, {1.0}}, xgrad::kFloat64).to(in[0].dtype());
         return F::cosine_similarity(in[0] * scale, in[1]);
     }},
    {"cosine.broadcast_dim0", 2, [](const Ins& in) { return F::cosine_similarity(in[0], in[1], 0, 1e-3); }},
    {"cosine.table", 2, [](const Ins& in) { return F::cosine_similarity(in[0].unsqueeze(1), in[1].unsqueeze(0), -1); }},
    {"cosine.vectors", 2, [](const Ins& in) { return F::cosine_similarity(in[0], in[1], 0); }},
    {"pdist.p2", 2, [](const Ins& in) { return F::pairwise_distance(in[0], in[1]); }},
    {"pdist.p1_keepdim", 2, [](const Ins& in) { return F::pairwise_distance(in[0], in[1], 1.0, 1e-6, true); }},
    {"pdist.p3_broadcast", 2, [](const Ins& in) { return F::pairwise_distance(in[0], in[1], 3.0, 1e-3); }},
    {"pdist.inf_vectors", 2, [](const Ins& in) { return F::pairwise_distance(in[0], in[1], kInf); }},
    {"cdist.p2_direct", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1]); }},
    {"cdist.p2_mm", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1]); }},
    {"cdist.p2_mm_forced", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1], 2.0, "use_mm_for_euclid_dist"); }},
    {"cdist.p2_donot_mm", 2,
     [](const Ins& in) { return xgrad::cdist(in[0], in[1], 2.0, "donot_use_mm_for_euclid_dist"); }},
    {"cdist.p2_zero_direct", 2,
     [](const Ins& in) {
         return xgrad::cdist(xgrad::cat({in[0], in[1].narrow(0, 0, 1)}), in[1]);
     }},
    {"cdist.p2_zero_mm", 2,
     [](const Ins& in) {
         return xgrad::cdist(xgrad::cat({in[0], in[1].narrow(0, 0, 2)}), in[1]);
     }},
    {"cdist.p1_batch", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1], 1.0); }},
    {"cdist.p3_broadcast", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1], 3.0); }},
    {"cdist.p05", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1], 0.5); }},
    {"cdist.p15_zero", 2,
     [](const Ins& in) {
         return xgrad::cdist(xgrad::cat({in[0], in[1].narrow(0, 1, 1)}), in[1], 1.5);
     }},
    {"cdist.inf", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1], kInf); }},
    {"cdist.p0", 2, [](const Ins& in) { return xgrad::cdist(in[0], in[1], 0.0); }},
    {"prelu.single", 2, [](const Ins& in) { return F::prelu(in[0], in[1]); }},
    {"prelu.channels", 2, [](const Ins& in) { return F::prelu(in[0], in[1]); }},
    {"prelu.vector", 2, [](const Ins& in) { return F::prelu(in[0], in[1]); }},
    {"glu.last", 1, [](const Ins& in) { return F::glu(in[0]); }},
    {"glu.dim1", 1, [](const Ins& in) { return F::glu(in[0], 1); }},
    {"glu.long", 1, [](const Ins& in) { return F::glu(in[0] * 4.0); }},
    {"glu.mid", 1, [](const Ins& in) { return F::glu(in[0] * 4.0, 1); }},
};

/// PyTorch's grad_fn name without the C++ namespace torch::autograd:: that CopySlices carries.
std::string torch_name(std::string name) {
    const std::string ns = "torch::autograd::";
    return name.rfind(ns, 0) == 0 ? name.substr(ns.size()) : name;
}

/// A module made after manual_seed(seed), as gen_nn_gaps.py's module_case: its output and the gradients
/// of the input and of every parameter.
void check_module(const std::string& name, std::uint64_t seed, const std::function<nn::Module*()>& make,
                  const std::function<Tensor(nn::Module&, const Tensor&)>& apply) {
    INFO(name);
    xgrad::manual_seed(seed);
    std::unique_ptr<nn::Module> m(make());
    Tensor x = golden::get(kFile, name + ".x").clone().requires_grad_();
    Tensor out = apply(*m, x);
    golden::check_close(out, golden::get(kFile, name + ".out"), name + " out", 1e-4, 1e-5);
    CHECK(out.grad_fn_name() == golden::grad_fn_name(kFile, name));
    (out * golden::get(kFile, name + ".w")).sum().backward();
    golden::check_close(x.grad(), golden::get(kFile, name + ".gx"), name + " gx", 1e-4, 1e-5);
    for (const auto& [k, p] : m->named_parameters())
        golden::check_close(p.grad(), golden::get(kFile, name + ".g." + k), name + " g." + k, 1e-4, 1e-5);
}

}  // namespace

TEST_CASE("padding strings, circular pad, pooling options and normalize match PyTorch forward and backward") {
    // PyTorch's bits too (where the CPU has FMA, as PyTorch's AVX2 build), except for convolutions
    // (oneDNN's order of sums) and cdist's matrix-product form (the BLAS's kernel for the CPU).
    const bool fma = xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2;
    for (const Case& c : kCases)
        for (const char* dt : {"float32", "float64"}) {
            const std::string name = c.name;
            const bool mm = name.rfind("cdist.", 0) == 0 && name.find("_mm") != std::string::npos &&
                            name.find("donot") == std::string::npos;
            const bool bits = fma && !mm && name.rfind("conv", 0) != 0;
            const std::string key = std::string(c.name) + "." + dt;
            INFO(key);
            const bool f32 = std::string(dt) == "float32";
            const double rtol = f32 ? 1e-4 : 1e-10, atol = f32 ? 1e-5 : 1e-12;
            Ins in;
            for (int i = 0; i < c.inputs; ++i)
                in.push_back(golden::get(kFile, key + ".in" + std::to_string(i)).clone().requires_grad_());
            Tensor out = c.fn(in);
            golden::check_close(out, golden::get(kFile, key + ".out"), key + " out", rtol, atol);
            if (bits) CHECK(golden::bits_differ(out, golden::get(kFile, key + ".out")) == 0);
            CHECK(out.grad_fn_name() == torch_name(golden::grad_fn_name(kFile, key)));
            (out * golden::get(kFile, key + ".w")).sum().backward();
            for (int i = 0; i < c.inputs; ++i) {
                const Tensor want = golden::get(kFile, key + ".g" + std::to_string(i));
                const Tensor& got = in[static_cast<std::size_t>(i)].grad();
                golden::check_close(got, want, key + " grad " + std::to_string(i), rtol, atol);
                if (bits) CHECK_MESSAGE(golden::bits_differ(got, want) == 0, "grad ", i);
            }
        }
}

namespace {

/// Runs `body` on each instruction set this CPU has (vec_math's dispatch), then restores the current one.
void over_simd_archs(const std::function<void(int)>& body) {
    namespace vm = xgrad::kernels::cpu;
    const vm::SimdArch arch = vm::simd_arch();
    for (const vm::SimdArch a : {vm::SimdArch::kAvx512, vm::SimdArch::kAvx2, vm::SimdArch::kSse2}) {
        if (!vm::simd_arch_supported(a)) continue;
        vm::set_simd_arch(a);
        body(static_cast<int>(a));
    }
    vm::set_simd_arch(arch);
}

/// Checks a cdist's distances and gradients (an undefined one is skipped) against cdist.txt's `key`.d,
/// .gx and .gy: within a tolerance, and bit for bit where `exact`.
void check_cdist(const std::string& key, const Tensor& d, const Tensor& gx, const Tensor& gy, bool exact) {
    const Tensor results[] = {d, gx, gy};
    const char* const parts[] = {".d", ".gx", ".gy"};
    for (int r = 0; r < 3; ++r) {
        if (!results[r].defined()) continue;
        const std::string what = key + parts[r];
        const Tensor want = golden::get("cdist.txt", what);
        golden::check_close(results[r], want, what, 1e-5, 1e-6);
        if (exact) CHECK_MESSAGE(golden::bits_differ(results[r], want) == 0, what << ": bits");
    }
}

/// gen_cdist.py's key of a case: `prefix` then the dtype, the features and p.
std::string cdist_key(const char* prefix, xgrad::DType dtype, std::int64_t m, double p) {
    char key[64];
    std::snprintf(key, sizeof key, "%s%s.m%lld.p%g", prefix, xgrad::to_string(dtype).substr(6).c_str(),
                  static_cast<long long>(m), p);
    return key;
}

}  // namespace

TEST_CASE("cdist's direct kernel gives PyTorch's bits for 1 to 25 features") {
    // gen_cdist.py: (6, m) and (5, m) inputs from formulas of the indices, p = 2, 3 and 0.5; which squares
    // PyTorch rounds apart from the sum depends on m. Exact on every instruction set for p = 2; the
    // powers are SLEEF's, within an ulp without FMA.
    over_simd_archs([](int a) {
        for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
            for (std::int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 25})
                for (const double p : {2.0, 3.0, 0.5}) {
                    std::vector<double> xv, yv, uv;
                    for (std::int64_t k = 0; k < 6 * m; ++k)
                        xv.push_back(std::sin(0.37 * static_cast<double>(k + 1)) * 2 + 0.5 +
                                     0.1 * static_cast<double>(k % 3));
                    for (std::int64_t k = 0; k < 5 * m; ++k)
                        yv.push_back(std::cos(0.53 * static_cast<double>(k + 1)) * 1.5);
                    for (std::int64_t k = 0; k < 30; ++k) uv.push_back(std::sin(0.71 * static_cast<double>(k + 1)));
                    Tensor x = xgrad::from_vector(xv, {6, m}, dtype).requires_grad_();
                    Tensor y = xgrad::from_vector(yv, {5, m}, dtype).requires_grad_();
                    Tensor d = xgrad::cdist(x, y, p, "donot_use_mm_for_euclid_dist");
                    (d * xgrad::from_vector(uv, {6, 5}, dtype)).sum().backward();
                    const std::string k = cdist_key("", dtype, m, p);
                    CAPTURE(k);
                    CAPTURE(a);
                    const bool exact = a != static_cast<int>(xgrad::kernels::cpu::SimdArch::kSse2) || p == 2;
                    check_cdist(k, d, x.grad(), y.grad(), exact);
                }
    });
}

TEST_CASE("cdist's direct kernel gives PyTorch's bits for p = 1 and 2 with many pairs and long rows") {
    // gen_cdist.py's "wide" cases: (3, m) to (65, m), m = 17 and 65. xgrad puts the pairs (forward) and
    // the features (backward) side by side in vector lanes, in blocks of 64, 16, 8, 4 or 2 lanes by
    // instruction set and dtype, with the ones left over alone: these sizes reach every path. Exact on
    // every instruction set (without FMA the fused squares are fused lane by lane).
    over_simd_archs([](int a) {
        for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
            for (std::int64_t m : {17, 65})
                for (const double p : {1.0, 2.0}) {
                    std::vector<double> xv, yv, uv;
                    for (std::int64_t k = 0; k < 3 * m; ++k)
                        xv.push_back(std::sin(0.37 * static_cast<double>(k + 1)) * 2 + 0.5);
                    for (std::int64_t k = 0; k < 65 * m; ++k)
                        yv.push_back(std::cos(0.53 * static_cast<double>(k + 1)) * 1.5);
                    for (std::int64_t k = 0; k < 3 * 65; ++k) uv.push_back(std::sin(0.71 * static_cast<double>(k + 1)));
                    Tensor x = xgrad::from_vector(xv, {3, m}, dtype).requires_grad_();
                    Tensor y = xgrad::from_vector(yv, {65, m}, dtype).requires_grad_(m == 17);
                    Tensor d = xgrad::cdist(x, y, p, "donot_use_mm_for_euclid_dist");
                    (d * xgrad::from_vector(uv, {3, 65}, dtype)).sum().backward();
                    const std::string k = cdist_key("wide.", dtype, m, p);
                    CAPTURE(k);
                    CAPTURE(a);
                    check_cdist(k, d, x.grad(), m == 17 ? y.grad() : Tensor(), true);
                }
    });
}

TEST_CASE("Conv2d and Conv1d with padding strings and padding modes match PyTorch's modules") {
    using M = nn::Module;
    auto fwd = [](M& m, const Tensor& x) { return m.forward(x); };
    check_module(
        "m2_reflect", 1, [] { return new nn::Conv2d(2, 3, 3, 1, 1, 1, 1, true, "reflect"); }, fwd);
    check_module(
        "m2_replicate_same", 2,
        [] {
            return new nn::Conv2d(2, 3, {2, 3}, 1, "same", 1, 1, true, "replicate");
        },
        fwd);
    check_module(
        "m2_circular", 3,
        [] {
            return new nn::Conv2d(2, 4, 3, 2, {1, 2}, 1, 1, false, "circular");
        },
        fwd);
    check_module(
        "m2_zeros_same", 4, [] { return new nn::Conv2d(2, 3, 4, 1, "same"); }, fwd);
    check_module(
        "m2_reflect_valid", 5, [] { return new nn::Conv2d(2, 2, 3, 1, "valid", 1, 1, true, "reflect"); }, fwd);
    check_module(
        "m1_circular_same", 6, [] { return new nn::Conv1d(3, 2, 4, 1, "same", 1, 1, true, "circular"); }, fwd);
    check_module(
        "m1_reflect", 7, [] { return new nn::Conv1d(3, 2, 3, 1, 2, 1, 1, true, "reflect"); }, fwd);
    check_module(
        "m1_replicate_unbatched", 8, [] { return new nn::Conv1d(3, 2, 3, 1, 1, 1, 1, true, "replicate"); }, fwd);
}

TEST_CASE("max_pool2d_with_indices returns PyTorch's int64 indices") {
    const Tensor x = golden::get(kFile, "indices.x");
    auto [y, idx] = F::max_pool2d_with_indices(x, 3, 2, 1, 2, true);
    golden::check_close(y, golden::get(kFile, "indices.y"), "y", 0, 0);
    CHECK(idx.dtype() == xgrad::kInt64);
    golden::check_close(idx, golden::get(kFile, "indices.idx"), "idx", 0, 0);
    nn::MaxPool2d pool({2, 3}, std::nullopt, 0, 1, true);
    CHECK(pool.return_indices());
    auto [yu, iu] = pool.forward_with_indices(x.select(0, 0));
    golden::check_close(yu, golden::get(kFile, "indices.unbatched_y"), "unbatched y", 0, 0);
    golden::check_close(iu, golden::get(kFile, "indices.unbatched_idx"), "unbatched idx", 0, 0);
    golden::check_close(pool(x.select(0, 0)), yu, "forward gives the values", 0, 0);
    const Tensor x1 = golden::get(kFile, "indices1d.x");
    nn::MaxPool1d pool1(3, 2, 1, 2, true, true);
    auto [y1, i1] = pool1.forward_with_indices(x1);
    golden::check_close(y1, golden::get(kFile, "indices1d.y"), "1d y", 0, 0);
    CHECK(i1.dtype() == xgrad::kInt64);
    golden::check_close(i1, golden::get(kFile, "indices1d.idx"), "1d idx", 0, 0);
}

TEST_CASE("normalize with p = ±inf shares the gradient among ties; p < 1 gives 0 where x is 0") {
    const std::vector<std::pair<double, std::string>> ps{{kInf, "inf"}, {-kInf, "ninf"}, {0.5, "p05"}};
    for (const auto& [p, key_] : ps) {
        const std::string& key = key_;  // clang 14 cannot capture a structured binding in INFO
        INFO(key);
        Tensor x = xgrad::tensor({{1.0, -3.0, 3.0, 2.0}, {0.0, 0.0, 0.0, 0.0}, {0.0, 2.0, -0.5, 2.0}}, xgrad::kFloat64)
                       .requires_grad_();
        Tensor y = F::normalize(x, p, 1);
        golden::check_close(y, golden::get(kFile, "normalize.ties_" + key + ".y"), "y", 1e-12, 1e-12);
        Tensor w = xgrad::arange(12, xgrad::TensorOptions{.dtype = xgrad::kFloat64}).reshape({3, 4}) / 7.0 - 0.5;
        (y * w).sum().backward();
        golden::check_close(x.grad(), golden::get(kFile, "normalize.ties_" + key + ".dx"), "dx", 1e-12, 1e-12);
    }
}

TEST_CASE("gradcheck: padding strings and modes, circular pad, pooling options, normalize") {
    xgrad::manual_seed(7);
    auto d = xgrad::kFloat64;
    Tensor x = xgrad::randn({2, 2, 6, 5}, d).requires_grad_(), w = xgrad::randn({3, 2, 2, 3}, d).requires_grad_();
    golden::check_gradcheck(
        [](const Ins& in) {
            return F::conv2d(in[0], in[1], Tensor(), 1, "same", {2, 1});
        },
        {x, w}, "conv2d same");
    golden::check_gradcheck(
        [](const Ins& in) {
            return F::conv2d(F::pad(in[0], {1, 2, 2, 0}, "circular"), in[1]);
        },
        {x, w}, "circular conv2d");
    Tensor x1 = xgrad::randn({2, 3, 7}, d).requires_grad_(), w1 = xgrad::randn({2, 3, 4}, d).requires_grad_();
    golden::check_gradcheck([](const Ins& in) { return F::conv1d(in[0], in[1], Tensor(), 1, "same"); }, {x1, w1},
                            "conv1d same");
    golden::check_gradcheck([](const Ins& in) { return F::pad(in[0], {-1, 3}, "circular"); }, {x1}, "pad circular");
    golden::check_gradcheck(
        [](const Ins& in) {
            return F::max_pool2d(in[0], {2, 3}, 2, 1, {2, 1}, true);
        },
        {x}, "max_pool2d dilation ceil");
    golden::check_gradcheck([](const Ins& in) { return F::avg_pool2d(in[0], 3, 2, 1, true, false); }, {x},
                            "avg_pool2d ceil");
    golden::check_gradcheck([](const Ins& in) { return F::avg_pool2d(in[0], 2, 2, 0, true, true, 3); }, {x},
                            "avg_pool2d ceil divisor");
    Tensor x3 = xgrad::randn({2, 3, 10}, d).requires_grad_();
    golden::check_gradcheck([](const Ins& in) { return F::max_pool1d(in[0], 3, 2, 1, 2, true); }, {x3}, "max_pool1d");
    golden::check_gradcheck([](const Ins& in) { return F::avg_pool1d(in[0], 3, 2, 1, true, false); }, {x3},
                            "avg_pool1d");
    Tensor v = xgrad::randn({3, 5}, d).requires_grad_();
    for (double p : {0.5, -1.5, kInf, -kInf, 3.0}) {
        INFO("p = " << p);
        golden::check_gradcheck([p](const Ins& in) { return F::normalize(in[0], p, 1); }, {v}, "normalize");
    }
}

TEST_CASE("modules with the new options print as PyTorch's") {
    auto r = golden::reprs("nn_gaps_repr.txt");
    using golden::printed;
    CHECK(printed(nn::Conv2d(2, 3, {3, 4}, 1, "same", 2, 1, true, "reflect")) == r.at("conv2d_same_reflect"));
    CHECK(printed(nn::Conv2d(2, 3, 3, 1, "valid")) == r.at("conv2d_valid"));
    CHECK(printed(nn::Conv2d(2, 4, 3, 2, {1, 2}, 1, 1, false, "circular")) == r.at("conv2d_circular"));
    CHECK(printed(nn::Conv1d(2, 3, 4, 1, "valid", 1, 1, true, "circular")) == r.at("conv1d_valid_circular"));
    CHECK(printed(nn::Conv1d(2, 3, 4, 1, 2, 1, 1, false, "replicate")) == r.at("conv1d_replicate"));
    CHECK(printed(nn::MaxPool2d(3, 2, 1, 2, true, true)) == r.at("maxpool_all"));
    CHECK(printed(nn::MaxPool2d({2, 3}, std::nullopt, 0, {1, 2})) == r.at("maxpool_dil"));
    CHECK(printed(nn::AvgPool2d(2, std::nullopt, 0, true, true, 3)) == r.at("avgpool_ceil"));
    CHECK(printed(nn::MaxPool1d(3, 2, 1, 2, false, true)) == r.at("maxpool1d"));
    CHECK(printed(nn::MaxPool1d(2)) == r.at("maxpool1d_default"));
    CHECK(printed(nn::AvgPool1d(3, 2, 1, true, false)) == r.at("avgpool1d"));
    CHECK(printed(nn::CosineSimilarity(0, 1e-3)) == r.at("cosine_similarity"));
    CHECK(printed(nn::PairwiseDistance(1.0, 1e-6, true)) == r.at("pairwise_distance"));
    CHECK(printed(nn::PReLU(3, 0.1)) == r.at("prelu"));
    CHECK(printed(nn::GLU(0)) == r.at("glu"));
}

TEST_CASE("PReLU and GLU: parameters, finite differences and bad inputs") {
    nn::PReLU act(3, 0.1);
    CHECK(act.weight.equal(xgrad::full({3}, 0.1)));
    CHECK(act.parameters().size() == 1);
    xgrad::manual_seed(4);
    const Tensor x = xgrad::randn({2, 3, 4});
    const Tensor y = act(x);
    CHECK(y.equal(F::prelu(x, act.weight)));
    y.sum().backward();
    CHECK(act.weight.grad().defined());
    const Tensor xd = xgrad::randn({2, 3, 5}, xgrad::kFloat64), wd = xgrad::rand({3}, xgrad::kFloat64);
    golden::check_gradcheck([](const Ins& in) { return F::prelu(in[0], in[1]); }, {xd, wd}, "prelu");
    golden::check_gradcheck([](const Ins& in) { return F::glu(in[0], 1); }, {xd.narrow(1, 0, 2)}, "glu");
    golden::check_throws([&] { (void)F::prelu(x, xgrad::ones({2})); },
                         {"prelu", "Found parameter numbers = 2 and channel size = 3", "(2, 3, 4)"});
    golden::check_throws([&] { (void)F::glu(x, 1); }, {"glu", "Halving dimension must be even", "(2, 3, 4)"});
    golden::check_throws([&] { (void)F::glu(xgrad::tensor(1.0)); }, {"glu", "scalars"});
}

TEST_CASE("cosine_similarity and pairwise_distance: modules, finite differences and bad inputs") {
    xgrad::manual_seed(3);
    const Tensor a = xgrad::randn({4, 5}, xgrad::kFloat64), b = xgrad::randn({4, 5}, xgrad::kFloat64);
    nn::CosineSimilarity cos(1, 1e-8);
    nn::PairwiseDistance dist(3.0, 1e-6, true);
    CHECK(cos(a, b).equal(F::cosine_similarity(a, b)));
    CHECK(dist(a, b).equal(F::pairwise_distance(a, b, 3.0, 1e-6, true)));
    CHECK_THROWS_AS((void)cos.forward(a), std::invalid_argument);
    for (double p : {2.0, 1.0, 3.0, 0.5}) {
        INFO("p = " << p);
        golden::check_gradcheck([p](const Ins& in) { return F::pairwise_distance(in[0], in[1], p); }, {a, b},
                                "pairwise_distance");
    }
    golden::check_gradcheck([](const Ins& in) { return F::cosine_similarity(in[0], in[1], 1); }, {a, b},
                            "cosine_similarity");
    golden::check_gradcheck([](const Ins& in) { return F::cosine_similarity(in[0].unsqueeze(1), in[1], -1); }, {a, b},
                            "cosine_similarity broadcast");
    golden::check_throws(
        [&] {
            (void)F::cosine_similarity(a, xgrad::randn({3, 5}));
        },
        {"cosine_similarity", "(4, 5)", "(3, 5)"});
    golden::check_throws([&] { (void)F::cosine_similarity(a, b, 2); }, {"cosine_similarity", "2"});
    golden::check_throws([&] { (void)F::pairwise_distance(a.to(xgrad::kInt64), b); },
                         {"pairwise_distance", "floating-point", "torch.int64"});
}

TEST_CASE("bad padding strings, padding modes and pooling options throw PyTorch's messages") {
    using golden::check_throws;
    const Tensor x = xgrad::randn({1, 2, 6, 6}), w = xgrad::randn({3, 2, 3, 3});
    check_throws([&] { F::conv2d(x, w, Tensor(), 2, "same"); },
                 {"conv2d", "padding='same' is not supported for strided convolutions"});
    check_throws(
        [&] {
            F::conv1d(xgrad::randn({1, 2, 5}), xgrad::randn({3, 2, 3}), Tensor(), 2, "same");
        },
        {"conv1d", "padding='same' is not supported for strided convolutions"});
    check_throws([&] { F::conv2d(x, w, Tensor(), 1, "foo"); }, {"conv2d", "Invalid padding string: 'foo'"});
    check_throws([] { nn::Conv2d(2, 3, 3, 2, "same"); },
                 {"Conv2d", "padding='same' is not supported for strided convolutions"});
    check_throws([] { nn::Conv2d(2, 3, 3, 1, "foo"); },
                 {"Conv2d", "Invalid padding string 'foo', should be one of {'same', 'valid'}"});
    check_throws([] { nn::Conv1d(2, 3, 3, 1, 0, 1, 1, true, "foo"); },
                 {"Conv1d",
                  "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
                  "padding_mode='foo'"});
    check_throws(
        [&] {
            F::pad(x, {7, 0, 0, 0}, "circular");
        },
        {"pad", "Padding value causes wrapping around more than once."});
    check_throws(
        [&] {
            F::pad(x, {-7, 0, 0, 0}, "circular");
        },
        {"pad", "Negative padding value is resulting in an empty dimension"});
    check_throws(
        [] {
            F::pad(xgrad::randn({4, 5}), {1, 1}, "circular");
        },
        {"pad", "Invalid padding size, expected 0 but got 2"});
    check_throws(
        [&] {
            F::pad(x, {1, 1, 0, 0}, "circular", 1.0);
        },
        {"pad", "Padding mode \"circular\" doesn't take in value argument"});
    check_throws([&] { F::pad(x, {1, 1}, "foo"); }, {"pad", "Unrecognised padding mode foo"});
    check_throws(
        [&] {
            F::pad(xgrad::randn({2, 3, 5, 4, 4, 4}), {1, 1}, "circular");
        },
        {"pad", "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"});
    check_throws([&] { F::max_pool2d(x, 3, std::nullopt, 0, 0); },
                 {"max_pool2d", "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"});
    check_throws(
        [] {
            F::max_pool1d(xgrad::randn({2, 3, 4, 5}), 2);
        },
        {"max_pool1d",
         "Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but "
         "got:[2, 3, 4, 5]"});
    check_throws(
        [] {
            F::avg_pool1d(xgrad::randn({2, 3, 4, 5}), 2);
        },
        {"avg_pool1d",
         "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' "
         "(while checking arguments for avg_pool1d)"});
    check_throws([&] { F::avg_pool2d(x, 3, std::nullopt, 0, false, true, 0); },
                 {"avg_pool2d", "divisor must be not zero"});
    // The circular pad of an unbatched input fails as in PyTorch 1.13, so does the module's forward.
    nn::Conv2d ring(2, 3, 3, 1, 1, 1, 1, true, "circular");
    check_throws([&] { ring(xgrad::randn({2, 6, 6})); }, {"pad", "Invalid padding size, expected 2 but got 4"});
}

TEST_CASE("MultiheadAttention with kdim/vdim, add_bias_kv and add_zero_attn matches PyTorch") {
    struct MhaCase {
        const char* name;
        std::uint64_t seed;
        std::int64_t e, h;
        nn::MultiheadAttentionOptions opts;
        bool masked;
    };
    for (const MhaCase& c :
         {MhaCase{"mha.kvdim", 31, 8, 2, {.kdim = 5, .vdim = 3}, true},
          MhaCase{
              "mha.bias_kv_zero", 32, 6, 3, {.add_bias_kv = true, .add_zero_attn = true, .batch_first = true}, true},
          MhaCase{"mha.bias_kv_unbatched", 33, 4, 2, {.add_bias_kv = true, .kdim = 3}, true},
          MhaCase{"mha.zero_attn_nobias", 34, 6, 2, {.bias = false, .add_zero_attn = true, .vdim = 2}, false}}) {
        const std::string key = c.name;
        INFO(key);
        xgrad::manual_seed(c.seed);
        nn::MultiheadAttention mha(c.e, c.h, c.opts);
        // Every parameter drawn as PyTorch draws it, in PyTorch's order and under its names.
        for (const auto& [name, p] : mha.named_parameters())
            golden::check_close(p, golden::get(kFile, key + ".init." + name), key + " init " + name, 0, 0);
        mha.to(xgrad::kFloat64);
        auto in = [&](const char* k) { return golden::get(kFile, key + "." + k).clone().requires_grad_(); };
        Tensor q = in("q"), k = in("k"), v = in("v");
        auto [out, weights] = mha.forward(q, k, v, c.masked ? golden::get(kFile, key + ".mask") : Tensor());
        golden::check_close(out, golden::get(kFile, key + ".out"), key + " out", 1e-10, 1e-12);
        golden::check_close(weights, golden::get(kFile, key + ".weights"), key + " weights", 1e-10, 1e-12);
        ((out * golden::get(kFile, key + ".wo")).sum() + (weights * golden::get(kFile, key + ".ww")).sum()).backward();
        golden::check_close(q.grad(), golden::get(kFile, key + ".gq"), key + " gq", 1e-10, 1e-12);
        golden::check_close(k.grad(), golden::get(kFile, key + ".gk"), key + " gk", 1e-10, 1e-12);
        golden::check_close(v.grad(), golden::get(kFile, key + ".gv"), key + " gv", 1e-10, 1e-12);
        for (const auto& [name, p] : mha.named_parameters())
            golden::check_close(p.grad(), golden::get(kFile, key + ".g." + name), key + " g." + name, 1e-10, 1e-12);
    }
    nn::MultiheadAttention named(8, 2, {.add_bias_kv = true, .kdim = 5, .vdim = 3});
    std::string names;
    for (const auto& [name, p] : named.named_parameters()) names += (names.empty() ? "" : ", ") + name;
    CHECK(names == golden::reprs("nn_gaps_repr.txt").at("mha_kvdim"));
    CHECK(named.kdim() == 5);
    CHECK(named.vdim() == 3);
    CHECK(!named.in_proj_weight.defined());
}

TEST_CASE("gradcheck: MultiheadAttention with kdim/vdim, add_bias_kv and add_zero_attn") {
    xgrad::manual_seed(12);
    nn::MultiheadAttention mha(4, 2, {.add_bias_kv = true, .add_zero_attn = true, .kdim = 3, .vdim = 5});
    mha.to(xgrad::kFloat64);
    auto d = xgrad::kFloat64;
    Tensor q = xgrad::randn({3, 2, 4}, d).requires_grad_(), k = xgrad::randn({2, 2, 3}, d).requires_grad_();
    Tensor v = xgrad::randn({2, 2, 5}, d).requires_grad_(), mask = xgrad::randn({3, 2}, d);
    golden::check_gradcheck(
        [&](const Ins& in) {
            auto [out, w] = mha.forward(in[0], in[1], in[2], mask);
            return (out * out).sum() + (w * w).sum();
        },
        {q, k, v}, "mha inputs");
    golden::check_gradcheck(
        [&](const Ins& in) {
            mha.bias_k = in[0];
            mha.bias_v = in[1];
            return mha.forward(q.detach(), k.detach(), v.detach(), mask).first;
        },
        {mha.bias_k.detach().clone().requires_grad_(), mha.bias_v.detach().clone().requires_grad_()}, "mha bias_kv");
}

TEST_CASE("MultiheadAttention with kdim/vdim checks the key and value sizes") {
    nn::MultiheadAttention mha(4, 2, {.kdim = 3, .vdim = 5});
    golden::check_throws(
        [&] {
            mha.forward(xgrad::randn({2, 1, 4}), xgrad::randn({3, 1, 3}), xgrad::randn({2, 1, 5}));
        },
        {"MultiheadAttention",
         "key's sequence and batch dims torch.Size([3, 1]) do not match value's "
         "torch.Size([2, 1])"});
    golden::check_throws(
        [&] {
            mha.forward(xgrad::randn({2, 1, 4}), xgrad::randn({3, 1, 4}), xgrad::randn({3, 1, 5}));
        },
        {"MultiheadAttention", "kdim=3"});
    golden::check_throws(
        [&] {
            mha.forward(xgrad::randn({2, 1, 4}), xgrad::randn({3, 1, 3}), xgrad::randn({3, 1, 4}));
        },
        {"MultiheadAttention", "vdim=5"});
}

TEST_CASE("cdist: finite differences, batches, long rows in steps, empty inputs and bad inputs") {
    xgrad::manual_seed(4);
    const Tensor a = xgrad::randn({2, 4, 3}, xgrad::kFloat64), b = xgrad::randn({5, 3}, xgrad::kFloat64);
    for (double p : {2.0, 1.0, 3.0, 1.5, 0.5}) {
        INFO("p = " << p);
        golden::check_gradcheck([p](const Ins& in) { return xgrad::cdist(in[0], in[1], p); }, {a, b}, "cdist");
    }
    golden::check_gradcheck([](const Ins& in) { return xgrad::cdist(in[0], in[1], 2.0, "use_mm_for_euclid_dist"); },
                            {a, b}, "cdist through the matrix product");
    // Batches broadcast; each entry is the distance of its rows.
    const Tensor d = xgrad::cdist(a, b, 1.0);
    CHECK(d.shape() == xgrad::Shape{2, 4, 5});
    CHECK(d[1][2][3].item<double>() == doctest::Approx((a[1][2] - b[3]).abs().sum().item<double>()).epsilon(1e-14));
    // Rows long enough to be taken one at a time (2^24 differences per step): the same distances.
    const Tensor x = xgrad::randn({3, 2500}), y = xgrad::randn({4000, 2500});
    const Tensor far = xgrad::cdist(x, y, 1.0);
    for (std::int64_t i = 0; i < 3; ++i)
        golden::check_close(far[i], (x[i] - y).abs().sum(-1), "cdist row " + std::to_string(i), 1e-5, 1e-3);
    // Empty inputs give zeros or an empty table.
    CHECK(xgrad::cdist(xgrad::zeros({0, 3}), xgrad::zeros({2, 3})).shape() == xgrad::Shape{0, 2});
    CHECK(xgrad::cdist(xgrad::ones({2, 0}), xgrad::ones({3, 0})).equal(xgrad::zeros({2, 3})));

    const Tensor f = xgrad::zeros({2, 3});
    golden::check_throws([&] { (void)xgrad::cdist(xgrad::zeros({3}), f); },
                         {"cdist", "cdist only supports at least 2D tensors, X1 got: 1D"});
    golden::check_throws(
        [&] {
            (void)xgrad::cdist(f, xgrad::zeros({2, 4}));
        },
        {"cdist", "X1 and X2 must have the same number of columns. X1: 3 X2: 4"});
    golden::check_throws([&] { (void)xgrad::cdist(f.to(xgrad::kInt64), f.to(xgrad::kInt64)); },
                         {"cdist", "cdist only supports floating-point dtypes, X1 got", "int64"});
    golden::check_throws([&] { (void)xgrad::cdist(f, f, -1.0); }, {"cdist", "non-negative p values"});
    golden::check_throws([&] { (void)xgrad::cdist(f, f.to(xgrad::kFloat64)); }, {"cdist", "same dtype"});
    golden::check_throws([&] { (void)xgrad::cdist(f, f, 2.0, "foo"); },
                         {"cdist", "foo is not a valid value for compute_mode"});
    golden::check_throws(
        [&] {
            (void)xgrad::cdist(xgrad::zeros({2, 2, 3}), xgrad::zeros({3, 2, 3}));
        },
        {"cdist", "(2, 2, 3)", "(3, 2, 3)", "batch dims", "cannot be broadcast"});
}
