// Tests for conv1d/conv2d, max/avg/adaptive pooling and their modules: PyTorch golden values
// (forward, backward, init, repr, error texts) and gradcheck.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
using Ins = std::vector<Tensor>;

namespace {

const char* kFile = "conv.txt";

struct Case {
    const char* name;
    int inputs;
    std::function<Tensor(const Ins&)> fn;
};

const Case kCases[] = {
    {"conv2d.basic", 3, [](const Ins& in) { return F::conv2d(in[0], in[1], in[2]); }},
    {"conv2d.stride_pad", 3,
     [](const Ins& in) {
         return F::conv2d(in[0], in[1], in[2], {2, 1}, {1, 0});
     }},
    {"conv2d.dilation_groups", 3, [](const Ins& in) { return F::conv2d(in[0], in[1], in[2], 1, 2, 2, 2); }},
    {"conv2d.depthwise", 2, [](const Ins& in) { return F::conv2d(in[0], in[1], Tensor(), 2, 1, 1, 4); }},
    {"conv2d.unbatched", 2, [](const Ins& in) { return F::conv2d(in[0], in[1]); }},
    {"conv1d.all", 3, [](const Ins& in) { return F::conv1d(in[0], in[1], in[2], 2, 1, 2, 2); }},
    {"conv1d.unbatched", 2, [](const Ins& in) { return F::conv1d(in[0], in[1]); }},
    {"max_pool2d.k3s2p1", 1, [](const Ins& in) { return F::max_pool2d(in[0], 3, 2, 1); }},
    {"max_pool2d.k23", 1,
     [](const Ins& in) {
         return F::max_pool2d(in[0], {2, 3});
     }},
    {"max_pool2d.overlap", 1, [](const Ins& in) { return F::max_pool2d(in[0], 3, 1); }},
    {"avg_pool2d.k3s2p1", 1, [](const Ins& in) { return F::avg_pool2d(in[0], 3, 2, 1); }},
    {"avg_pool2d.no_pad_count", 1, [](const Ins& in) { return F::avg_pool2d(in[0], 3, 2, 1, false, false); }},
    {"avg_pool2d.k2", 1,
     [](const Ins& in) {
         return F::avg_pool2d(in[0], {2, 3}, 1);
     }},
    {"adaptive.down", 1,
     [](const Ins& in) {
         return F::adaptive_avg_pool2d(in[0], {3, 4});
     }},
    {"adaptive.global", 1, [](const Ins& in) { return F::adaptive_avg_pool2d(in[0], 1); }},
    {"adaptive.up", 1,
     [](const Ins& in) {
         return F::adaptive_avg_pool2d(in[0], {5, 7});
     }},
    {"batch_norm.train", 3, [](const Ins& in) { return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); }},
    {"batch_norm.train1d", 1,
     [](const Ins& in) { return F::batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3); }},
    {"batch_norm.eval", 3,
     [](const Ins& in) {
         const auto dt = in[0].dtype();
         return F::batch_norm(in[0], golden::get(kFile, "batch_norm.rm").to(dt),
                              golden::get(kFile, "batch_norm.rv").to(dt), in[1], in[2], false);
     }},
    {"group_norm.affine", 3, [](const Ins& in) { return F::group_norm(in[0], 3, in[1], in[2]); }},
    {"group_norm.plain", 1, [](const Ins& in) { return F::group_norm(in[0], 2, Tensor(), Tensor(), 1e-3); }},
};

/// The printed modules PyTorch wrote to conv_repr.txt, by name.
std::map<std::string, std::string> reprs() {
    std::ifstream in(golden::dir() + "/conv_repr.txt");
    std::map<std::string, std::string> r;
    std::string line;
    while (std::getline(in, line)) {
        const auto tab = line.find('\t');
        if (tab != std::string::npos) r[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return r;
}

using golden::printed;

/// check_close, and PyTorch's bits where vec_math's kernels have FMA, as PyTorch's AVX2 build (without it
/// some multiply-adds round twice): batch_norm and group_norm are PyTorch's CPU kernels.
void check_bits(const Tensor& actual, const Tensor& expected, const std::string& what, double rtol, double atol) {
    namespace vm = xgrad::kernels::cpu;
    golden::check_close(actual, expected, what, rtol, atol);
    if (vm::simd_arch() != vm::SimdArch::kSse2)
        CHECK_MESSAGE(golden::bits_differ(actual, expected) == 0, what << ": bits");
}

}  // namespace

TEST_CASE("conv and pooling match PyTorch forward and backward, float32 and float64") {
    for (const Case& c : kCases)
        for (const char* dt : {"float32", "float64"}) {
            const std::string key = std::string(c.name) + "." + dt;
            INFO(key);
            const bool f32 = std::string(dt) == "float32";
            const double rtol = f32 ? 1e-4 : 1e-10, atol = f32 ? 1e-5 : 1e-12;
            Ins in;
            for (int i = 0; i < c.inputs; ++i)
                in.push_back(golden::get(kFile, key + ".in" + std::to_string(i)).clone().requires_grad_());
            Tensor out = c.fn(in);
            const std::string name = c.name;
            const bool norm = name.rfind("batch_norm", 0) == 0 || name.rfind("group_norm", 0) == 0;
            const auto check = norm ? check_bits : golden::check_close;
            check(out, golden::get(kFile, key + ".out"), key + " out", rtol, atol);
            CHECK(out.grad_fn_name() == golden::grad_fn_name(kFile, key));
            (out * golden::get(kFile, key + ".w")).sum().backward();
            for (int i = 0; i < c.inputs; ++i)
                check(in[static_cast<std::size_t>(i)].grad(), golden::get(kFile, key + ".g" + std::to_string(i)),
                      key + " grad " + std::to_string(i), rtol, atol);
        }
}

TEST_CASE("max_pool2d: the first maximum of a window wins ties and takes the gradient") {
    Tensor x = golden::get(kFile, "max_pool2d.ties.x").clone().requires_grad_();
    Tensor y = F::max_pool2d(x, 2, 1);
    golden::check_close(y, golden::get(kFile, "max_pool2d.ties.y"), "y", 0, 0);
    y.sum().backward();
    golden::check_close(x.grad(), golden::get(kFile, "max_pool2d.ties.dx"), "dx", 0, 0);
}

TEST_CASE("max_pool2d propagates NaN") {
    Tensor x = xgrad::tensor({{{1.0, NAN}, {3.0, 2.0}}});
    CHECK(std::isnan(F::max_pool2d(x, 2).item<float>()));
}

TEST_CASE("conv2d with stride 1 and output rows as wide as the input's gives the bits of padding the input first") {
    // That case copies the columns as shifted runs of the input and adds the gradient's back the same
    // way; padding the input with zeros and convolving without padding takes the general window loop.
    // The columns, so the products, and the gradients' sums are the same, term for term and in order.
    struct Geometry {
        std::int64_t kh, kw, dh, dw, ph, pw;
    };
    const Geometry cases[] = {{3, 3, 1, 1, 1, 1}, {3, 3, 2, 2, 0, 2}, {5, 3, 1, 1, 4, 1}, {2, 5, 1, 1, 1, 2},
                              {1, 1, 1, 1, 0, 0}, {3, 1, 3, 1, 5, 0}, {4, 3, 1, 3, 2, 3}, {3, 3, 1, 1, 3, 1}};
    const int threads = xgrad::get_num_threads();
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
        for (const Geometry& c : cases) {
            CAPTURE(c.kh);
            CAPTURE(c.kw);
            CAPTURE(c.ph);
            xgrad::manual_seed(11);
            Tensor x = xgrad::randn({3, 4, 5, 7}, dtype).requires_grad_();
            Tensor w = xgrad::randn({6, 2, c.kh, c.kw}, dtype).requires_grad_();
            Tensor b = xgrad::randn({6}, dtype).requires_grad_();
            Tensor g = xgrad::randn({3, 6, 5 + 2 * c.ph - c.dh * (c.kh - 1), 7}, dtype);
            auto run = [&](bool pad_first, int threads) {
                xgrad::set_num_threads(threads);
                for (Tensor* t : {&x, &w, &b}) t->mutable_grad() = Tensor();
                Tensor y = pad_first ? F::conv2d(F::pad(x, {c.pw, c.pw, c.ph, c.ph}), w, b, 1, 0, {c.dh, c.dw}, 2)
                                     : F::conv2d(x, w, b, 1, {c.ph, c.pw}, {c.dh, c.dw}, 2);
                y.backward(g);
                return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
            };
            const std::vector<Tensor> ref = run(true, 1), fast = run(false, 1), two = run(false, 2);
            xgrad::set_num_threads(threads);
            for (std::size_t i = 0; i < ref.size(); ++i) {
                CAPTURE(i);
                REQUIRE(fast[i].shape() == ref[i].shape());
                CHECK(xgrad::equal(fast[i], ref[i]));
                CHECK(xgrad::equal(two[i], ref[i]));  // the weight gradient too, whatever the threads
            }
        }
}

TEST_CASE("conv2d's weight gradient over a batch whose partial sums are shared is each image's, summed") {
    // A weight of 2.4 MB (float64) keeps 27 partial sums (64 MiB) for 64 images, so images 27 apart
    // share one, added by BLAS to what it holds: the result is the images' gradients summed.
    xgrad::manual_seed(5);
    const auto d = xgrad::kFloat64;
    const int threads = xgrad::get_num_threads();
    Tensor x = xgrad::randn({64, 512, 3, 3}, d), w = xgrad::randn({64, 512, 3, 3}, d).requires_grad_();
    Tensor g = xgrad::randn({64, 64, 3, 3}, d);
    auto weight_grad = [&](const Tensor& xs, const Tensor& gs) {
        w.mutable_grad() = Tensor();
        F::conv2d(xs, w, Tensor(), 1, 1).backward(gs);
        return w.grad();
    };
    Tensor expected = xgrad::zeros({64, 512, 3, 3}, d);
    for (std::int64_t b = 0; b < 64; ++b) expected = expected + weight_grad(x.narrow(0, b, 1), g.narrow(0, b, 1));
    for (int t : {1, 2}) {
        CAPTURE(t);
        xgrad::set_num_threads(t);
        golden::check_close(weight_grad(x, g), expected, "dw", 1e-12, 1e-12);
    }
    xgrad::set_num_threads(threads);
}

TEST_CASE("gradcheck: conv1d, conv2d and pooling") {
    xgrad::manual_seed(3);
    auto d = xgrad::kFloat64;
    Tensor x = xgrad::randn({2, 4, 6, 5}, d).requires_grad_(), w = xgrad::randn({6, 2, 3, 2}, d).requires_grad_();
    Tensor b = xgrad::randn({6}, d).requires_grad_();
    golden::check_gradcheck(
        [](const Ins& in) {
            return F::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2);
        },
        {x, w, b}, "conv2d");
    Tensor x1 = xgrad::randn({2, 3, 9}, d).requires_grad_(), w1 = xgrad::randn({4, 3, 3}, d).requires_grad_();
    golden::check_gradcheck([](const Ins& in) { return F::conv1d(in[0], in[1], Tensor(), 2, 2, 2); }, {x1, w1},
                            "conv1d");
    golden::check_gradcheck([](const Ins& in) { return F::max_pool2d(in[0], 3, 2, 1); }, {x}, "max_pool2d");
    golden::check_gradcheck([](const Ins& in) { return F::avg_pool2d(in[0], 3, 2, 1, false, false); }, {x},
                            "avg_pool2d");
    golden::check_gradcheck([](const Ins& in) { return F::adaptive_avg_pool2d(in[0], {4, 3}); }, {x}, "adaptive");
}

TEST_CASE("Conv2d and Conv1d are initialised as PyTorch's, drawing weight then bias") {
    xgrad::manual_seed(0);
    nn::Conv2d a(3, 4, 3);
    nn::Conv2d b(4, 6, {3, 5}, 1, 0, 1, 2, false);
    nn::Conv1d c(4, 6, 3, 1, 0, 1, 2);
    for (const auto& [prefix, m] : std::vector<std::pair<std::string, nn::Module*>>{
             {"init.conv2d.", &a}, {"init.conv2d_g2.", &b}, {"init.conv1d.", &c}})
        for (const auto& [name, p] : m->named_parameters())
            golden::check_close(p, golden::get(kFile, prefix + name), prefix + name, 0, 0);
    CHECK(b.named_parameters().size() == 1);
    golden::check_close(xgrad::rand({3}), golden::get(kFile, "init.after"), "stream after", 0, 0);
}

TEST_CASE("modules print as PyTorch's") {
    auto r = reprs();
    CHECK(printed(nn::Conv2d(3, 4, 3)) == r.at("conv2d"));
    CHECK(printed(nn::Conv2d(3, 4, {3, 5}, 2, 1, 2, 1, false)) == r.at("conv2d_all"));
    CHECK(printed(nn::Conv2d(2, 2, 1, {1, 2})) == r.at("conv2d_stride"));
    CHECK(printed(nn::Conv1d(4, 6, 3, 1, 1, 1, 2)) == r.at("conv1d"));
    CHECK(printed(nn::MaxPool2d(2)) == r.at("maxpool"));
    CHECK(printed(nn::MaxPool2d({2, 3}, 1, 1)) == r.at("maxpool_tuple"));
    CHECK(printed(nn::AvgPool2d(3)) == r.at("avgpool"));
    CHECK(printed(nn::AvgPool2d(2, 1, 1, false, false)) == r.at("avgpool_all"));
    CHECK(printed(nn::AdaptiveAvgPool2d({5, 7})) == r.at("adaptive"));
    CHECK(printed(nn::AdaptiveAvgPool2d(3)) == r.at("adaptive1"));
}

TEST_CASE("modules run forward and backward in a Sequential") {
    xgrad::manual_seed(1);
    nn::Sequential net(nn::Conv2d(1, 2, 3, 1, 1), nn::ReLU(), nn::MaxPool2d(2), nn::AvgPool2d(2),
                       nn::AdaptiveAvgPool2d(1));
    Tensor y = net(xgrad::randn({3, 1, 8, 8}));
    CHECK(y.shape() == xgrad::Shape{3, 2, 1, 1});
    y.sum().backward();
    auto params = net.parameters();
    REQUIRE(params.size() == 2);
    CHECK(params[0].grad().defined());
}

TEST_CASE("bad convolution and pooling arguments throw PyTorch's messages") {
    using golden::check_throws;
    Tensor w = xgrad::randn({4, 3, 3, 3});
    check_throws(
        [&] {
            F::conv2d(xgrad::randn({2, 5, 8, 8}), w);
        },
        {"conv2d",
         "Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 5, 8, 8] to have 3 "
         "channels, but got 5 channels instead"});
    check_throws(
        [&] {
            F::conv2d(xgrad::randn({8, 8}), w);
        },
        {"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 8]"});
    check_throws(
        [&] {
            F::conv2d(xgrad::randn({2, 3, 2, 2}), w);
        },
        {"Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be "
         "greater than actual input size"});
    check_throws(
        [&] {
            F::conv2d(xgrad::randn({2, 3, 8, 8}), xgrad::randn({4, 3, 3}));
        },
        {"conv2d", "4D weight", "[4, 3, 3]"});
    check_throws(
        [&] {
            F::conv2d(xgrad::randn({2, 6, 8, 8}), w, Tensor(), 1, 0, 1, 3);
        },
        {"Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size "
         "[4, 3, 3, 3] instead"});
    check_throws(
        [&] {
            F::conv2d(xgrad::randn({2, 6, 8, 8}), xgrad::randn({6, 2, 3, 3}), xgrad::randn({5}), 1, 0, 1, 3);
        },
        {"Given weight of size [6, 2, 3, 3], expected bias to be 1-dimensional with 6 elements, but got "
         "bias of size [5] instead"});
    Tensor x = xgrad::randn({2, 3, 8, 8});
    check_throws([&] { F::conv2d(x, w, Tensor(), 0); }, {"non-positive stride is not supported"});
    check_throws([&] { F::conv2d(x, w, Tensor(), 1, -1); }, {"negative padding is not supported"});
    check_throws([&] { F::conv2d(x, w, Tensor(), 1, 0, 0); }, {"non-positive dilation is not supported"});
    check_throws([&] { F::conv2d(x, w, Tensor(), 1, 0, 1, 0); }, {"non-positive groups is not supported"});
    check_throws([&] { F::conv2d(x, w.to(xgrad::kFloat64)); }, {"conv2d", "float32", "float64"});
    check_throws(
        [&] {
            F::conv1d(xgrad::randn({2, 5, 8}), xgrad::randn({4, 3, 3}));
        },
        {"conv1d",
         "Given groups=1, weight of size [4, 3, 3], expected input[2, 5, 8] to have 3 channels, "
         "but got 5 channels instead"});
    check_throws(
        [&] {
            F::conv1d(xgrad::randn({2, 3, 2}), xgrad::randn({4, 3, 3}));
        },
        {"Calculated padded input size per channel: (2). Kernel size: (3). Kernel size can't be greater "
         "than actual input size"});
    check_throws([] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }, {"in_channels must be divisible by groups"});
    check_throws([] { nn::Conv2d(4, 3, 3, 1, 0, 1, 2); }, {"out_channels must be divisible by groups"});
    check_throws([] { nn::Conv1d(4, 4, 0); }, {"Conv1d", "kernel_size must be positive"});

    check_throws(
        [] {
            F::max_pool2d(xgrad::randn({1, 1, 2, 2}), 3);
        },
        {"max_pool2d", "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small"});
    check_throws(
        [] {
            F::max_pool2d(xgrad::randn({1, 1, 5, 5}), 2, std::nullopt, 2);
        },
        {"pad should be at most half of kernel size, but got pad=2 and kernel_size=2"});
    check_throws(
        [] {
            F::max_pool2d(xgrad::randn({5, 5}), 2);
        },
        {"non-empty 3D or 4D (batch mode) tensor expected for input"});
    check_throws([] { F::avg_pool2d(xgrad::randn({1, 1, 2, 2}), 3); }, {"avg_pool2d", "Output size is too small"});
    check_throws([] { F::avg_pool2d(xgrad::randn({1, 1, 4, 4}), 2, 0); }, {"stride should be greater than zero"});
    check_throws([] { F::adaptive_avg_pool2d(xgrad::randn({5}), 2); },
                 {"adaptive_avg_pool2d", "Expected 3D or 4D tensor"});
    check_throws(
        [] {
            F::adaptive_avg_pool2d(xgrad::randn({1, 0, 3}), 2);
        },
        {"Expected input to have non-zero size for non-batch dimensions"});
    check_throws([] { F::max_pool2d(xgrad::ones({1, 2, 2}, xgrad::kInt64), 2); }, {"max_pool2d", "floating"});
}

namespace {

/// batch_norm.txt's and group_norm.txt's inputs (golden_writer.py's channel_inputs()): x, the upstream
/// gradient, weight, bias, running mean and running variance, the same doubles rounded to the dtype.
std::vector<Tensor> batch_norm_inputs(xgrad::DType dtype, const Shape& shape) {
    std::vector<double> x, up, w, b, rm, rv;
    for (std::int64_t k = 0; k < shape.numel(); ++k) {
        const auto kd = static_cast<double>(k);
        x.push_back(std::sin(0.37 * (kd + 1)) * 2 + 0.5 + 0.1 * static_cast<double>(k % 3));
        up.push_back(std::cos(0.53 * (kd + 1)));
    }
    for (std::int64_t j = 0; j < shape[1]; ++j) {
        const auto jd = static_cast<double>(j);
        w.push_back(1 + 0.5 * std::sin(0.11 * jd + 0.5));
        b.push_back(0.1 * std::cos(0.23 * jd));
        rm.push_back(0.2 * std::sin(0.7 * jd));
        rv.push_back(1.5 + 0.5 * std::cos(0.3 * jd));
    }
    const Shape c{shape[1]};
    return {xgrad::from_vector(x, shape, dtype), xgrad::from_vector(up, shape, dtype),
            xgrad::from_vector(w, c, dtype),     xgrad::from_vector(b, c, dtype),
            xgrad::from_vector(rm, c, dtype),    xgrad::from_vector(rv, c, dtype)};
}

/// "float32.2x3x4": a golden key of a dtype and a shape.
std::string shape_key(xgrad::DType dtype, const Shape& shape) {
    std::string key = xgrad::to_string(dtype).substr(6) + ".";
    for (std::int64_t i = 0; i < shape.size(); ++i) {
        if (i > 0) key += "x";
        key += std::to_string(shape[i]);
    }
    return key;
}

/// body(instruction set, threads) on every instruction set this CPU has (check_bits asks for PyTorch's
/// bits where it has FMA), at 1 and 2 threads; then the instruction set and threads as they were.
void over_archs_and_threads(const std::function<void(int, int)>& body) {
    namespace vm = xgrad::kernels::cpu;
    const int threads = xgrad::get_num_threads();
    const vm::SimdArch arch = vm::simd_arch();
    for (const vm::SimdArch a : {vm::SimdArch::kAvx512, vm::SimdArch::kAvx2, vm::SimdArch::kSse2})
        for (const int t : {1, 2}) {
            if (!vm::simd_arch_supported(a)) continue;
            vm::set_simd_arch(a);
            xgrad::set_num_threads(t);
            body(static_cast<int>(a), t);
        }
    vm::set_simd_arch(arch);
    xgrad::set_num_threads(threads);
}

}  // namespace

TEST_CASE("max_pool2d over wide rows: PyTorch's indices (ties and NaNs) on every instruction set") {
    // gen_conv.py's max_pool2d.wide: x (1, 2, 5, 45) with many ties and some NaNs, from a formula of the
    // index; the windows whose row lies in the input go side by side in vector lanes (16, 8, 4 or 2 at
    // a time), the others one at a time. The values are x at the indices.
    struct Pool {
        const char* name;
        nn::Pair kernel, stride, padding, dilation;
    };
    const Pool pools[] = {{"k3s1p1", 3, 1, 1, 1},
                          {"k2s2", 2, 2, 0, 1},
                          {"k3s2p1", 3, 2, 1, 1},
                          {"k3s1p1d2", 3, 1, 1, 2},
                          {"k25s13", {2, 5}, {1, 3}, 0, 1}};
    std::vector<double> vals;
    for (int k = 0; k < 2 * 5 * 45; ++k) vals.push_back(k % 53 == 7 ? NAN : static_cast<double>((k * 37) % 5 - 2));
    over_archs_and_threads([&](int a, int t) {
        for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
            for (const Pool& p : pools) {
                const Tensor x = xgrad::from_vector(vals, {1, 2, 5, 45}, dtype);
                const auto [y, idx] = F::max_pool2d_with_indices(x, p.kernel, p.stride, p.padding, p.dilation);
                const std::string key =
                    std::string("max_pool2d.wide.") + p.name + "." + xgrad::to_string(dtype).substr(6) + ".idx";
                CAPTURE(key);
                CAPTURE(a);
                CAPTURE(t);
                const Tensor want = golden::get(kFile, key);
                REQUIRE(idx.shape() == want.shape());
                CHECK(idx.to_vector<std::int64_t>() == want.to_vector<std::int64_t>());
                const Tensor at = x.flatten(2).gather(2, idx.flatten(2)).view(y.shape());
                CHECK(golden::bits_differ(y, at) == 0);
            }
    });
}

TEST_CASE("batch_norm gives PyTorch's bits on shapes that run both of its CPU kernels") {
    // gen_batch_norm.py's SHAPES and PLAIN: 2-D input (PyTorch's channels-last kernel) with channels left
    // over after whole registers; images shorter than a register, odd and even, with whole registers and
    // tails (its contiguous kernel).
    const std::vector<Shape> shapes{{6, 4},    {16, 8},    {9, 13},    {64, 7},    {2, 3, 2},   {3, 4, 3},
                                    {3, 5, 7}, {2, 3, 40}, {5, 3, 33}, {3, 2, 65}, {2, 2, 5, 7}};
    const std::vector<Shape> plain{{9, 13}, {3, 5, 7}, {5, 3, 33}};
    over_archs_and_threads([&](int a, int t) {
        for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
            for (const Shape& shape : shapes) {
                const std::string key = shape_key(dtype, shape);
                const auto in = batch_norm_inputs(dtype, shape);
                const bool has_plain = std::find(plain.begin(), plain.end(), shape) != plain.end();
                for (const std::string mode : {"train", "eval", "plain"}) {
                    if (mode == "plain" && !has_plain) continue;
                    const std::string k = key + "." + mode;
                    CAPTURE(k);
                    CAPTURE(t);
                    CAPTURE(a);
                    const bool affine = mode != "plain", training = mode != "eval";
                    Tensor x = in[0].clone().requires_grad_();
                    Tensor w = affine ? in[2].clone().requires_grad_() : Tensor();
                    Tensor b = affine ? in[3].clone().requires_grad_() : Tensor();
                    Tensor rm = affine ? in[4].clone() : Tensor(), rv = affine ? in[5].clone() : Tensor();
                    Tensor y = F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
                    (y * in[1]).sum().backward();
                    check_bits(y, golden::get("batch_norm.txt", k + ".y"), k + ".y", 1e-5, 1e-6);
                    check_bits(x.grad(), golden::get("batch_norm.txt", k + ".dx"), k + ".dx", 1e-4, 1e-5);
                    if (!affine) continue;
                    check_bits(w.grad(), golden::get("batch_norm.txt", k + ".dw"), k + ".dw", 1e-5, 1e-5);
                    check_bits(b.grad(), golden::get("batch_norm.txt", k + ".db"), k + ".db", 1e-5, 1e-5);
                    if (!training) continue;
                    check_bits(rm, golden::get("batch_norm.txt", k + ".rm"), k + ".rm", 1e-6, 1e-7);
                    check_bits(rv, golden::get("batch_norm.txt", k + ".rv"), k + ".rv", 1e-6, 1e-7);
                }
            }
    });
    // Channels-last 4-D input with a channels-last upstream gradient: PyTorch's channels-last kernels,
    // which are its 2-D kernels on the (N·H·W, C) rows of the memory; the results channels-last.
    const std::vector<Shape> channels_last{{3, 13, 4, 5}, {2, 3, 1, 7}};
    over_archs_and_threads([&](int a, int t) {
        for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
            for (const Shape& shape : channels_last) {
                // the dims ordered as the memory holds them (N, spatial..., C), and back
                std::vector<std::int64_t> to_last{0}, back{0, shape.size() - 1};
                for (std::int64_t d = 2; d < shape.size(); ++d) to_last.push_back(d);
                to_last.push_back(1);
                for (std::int64_t d = 1; d < shape.size() - 1; ++d) back.push_back(d);
                auto relaid = [&](const Tensor& v) {
                    return v.permute(xgrad::Dims(to_last)).contiguous().permute(xgrad::Dims(back));
                };
                const auto in = batch_norm_inputs(dtype, shape);
                for (const std::string mode : {"train", "eval"}) {
                    const std::string k =
                        xgrad::to_string(dtype).substr(6) + ".cl." + shape_key(dtype, shape).substr(8) + "." + mode;
                    CAPTURE(k);
                    CAPTURE(t);
                    CAPTURE(a);
                    const bool training = mode == "train";
                    Tensor x = relaid(in[0]).detach().requires_grad_();
                    Tensor w = in[2].clone().requires_grad_(), b = in[3].clone().requires_grad_();
                    Tensor rm = in[4].clone(), rv = in[5].clone();
                    Tensor y = F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
                    CHECK(y.strides() == x.strides());
                    (y * relaid(in[1])).sum().backward();
                    CHECK(x.grad().strides() == x.strides());
                    check_bits(y, golden::get("batch_norm.txt", k + ".y"), k + ".y", 1e-5, 1e-6);
                    check_bits(x.grad(), golden::get("batch_norm.txt", k + ".dx"), k + ".dx", 1e-4, 1e-5);
                    check_bits(w.grad(), golden::get("batch_norm.txt", k + ".dw"), k + ".dw", 1e-5, 1e-5);
                    check_bits(b.grad(), golden::get("batch_norm.txt", k + ".db"), k + ".db", 1e-5, 1e-5);
                    if (!training) continue;
                    check_bits(rm, golden::get("batch_norm.txt", k + ".rm"), k + ".rm", 1e-6, 1e-7);
                    check_bits(rv, golden::get("batch_norm.txt", k + ".rv"), k + ".rv", 1e-6, 1e-7);
                }
            }
    });
    // The running statistics change in place, as an in-place op's: a graph that saved them cannot use them.
    for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        Tensor rm = xgrad::zeros({3}), s = xgrad::ones({3}, dtype).requires_grad_();
        Tensor y = (s * rm.to(dtype)).sum();  // float64: saves a converted copy, which stays as it was
        Tensor z = (s.to(xgrad::kFloat32) * rm).sum();
        F::batch_norm(xgrad::randn({4, 3}, dtype), rm, xgrad::ones({3}), Tensor(), Tensor(), true);
        if (dtype == xgrad::kFloat64) CHECK_NOTHROW(y.backward());
        CHECK_THROWS_WITH(z.backward(), doctest::Contains("modified by an inplace operation"));
    }
    // Channels split between threads: each channel's numbers are computed alone, in one order.
    const int threads = xgrad::get_num_threads();
    for (const Shape& shape : {Shape{8, 96, 50}, Shape{700, 96}}) {
        CAPTURE(xgrad::to_string(shape));
        const auto in = batch_norm_inputs(xgrad::kFloat32, shape);
        std::vector<Tensor> results;
        for (const int t : {1, 2}) {
            xgrad::set_num_threads(t);
            Tensor x = in[0].clone().requires_grad_(), w = in[2].clone().requires_grad_();
            Tensor rv = in[5].clone();
            Tensor y = F::batch_norm(x, Tensor(in[4].clone()), rv, w, in[3], true, 0.1, 1e-5);
            (y * in[1]).sum().backward();
            for (const Tensor& r : {y, x.grad(), w.grad(), rv}) results.push_back(r);
        }
        for (std::size_t i = 0; i < 4; ++i) CHECK(golden::bits_differ(results[i], results[i + 4]) == 0);
    }
    xgrad::set_num_threads(threads);
}

TEST_CASE("group_norm gives PyTorch's bits on shapes that run every part of its CPU kernel") {
    // gen_group_norm.py's CASES and MIXED: images and groups with 0 to 7 elements after whole registers.
    const std::vector<std::pair<Shape, std::int64_t>> cases{
        {{2, 6, 4, 3}, 3}, {{3, 4, 5}, 2},   {{2, 8, 7, 5}, 4}, {{2, 8, 37}, 2}, {{2, 16, 3, 11}, 8},
        {{2, 12, 1}, 3},   {{2, 6, 2}, 2},   {{2, 10, 6}, 2},   {{2, 14, 7}, 2}, {{2, 18, 13}, 2},
        {{1, 26, 15}, 2},  {{1, 13, 22}, 1}, {{2, 22, 3}, 2},   {{1, 14, 23}, 7}};
    const std::vector<std::pair<Shape, std::int64_t>> mixed{{{2, 6, 4, 3}, 3}, {{2, 14, 7}, 2}};
    over_archs_and_threads([&](int a, int t) {
        for (const auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
            for (const auto& [shape, groups] : cases) {
                const std::string key = shape_key(dtype, shape) + ".g" + std::to_string(groups);
                const auto in = batch_norm_inputs(dtype, shape);
                const bool has_mixed = std::find(mixed.begin(), mixed.end(), std::pair{shape, groups}) != mixed.end();
                for (const std::string mode : {"wb", "w", "b", "plain"}) {
                    if (mode != "wb" && !has_mixed) continue;
                    const std::string k = key + "." + mode;
                    CAPTURE(k);
                    CAPTURE(t);
                    CAPTURE(a);
                    const bool has_w = mode == "wb" || mode == "w", has_b = mode == "wb" || mode == "b";
                    Tensor x = in[0].clone().requires_grad_();
                    Tensor w = has_w ? in[2].clone().requires_grad_() : Tensor();
                    Tensor b = has_b ? in[3].clone().requires_grad_() : Tensor();
                    Tensor y = F::group_norm(x, groups, w, b, 1e-5);
                    check_bits(y, golden::get("group_norm.txt", k + ".y"), k + ".y", 1e-5, 1e-6);
                    if (mode == "b") continue;  // PyTorch 1.13's backward throws without a weight
                    (y * in[1]).sum().backward();
                    check_bits(x.grad(), golden::get("group_norm.txt", k + ".dx"), k + ".dx", 1e-4, 1e-5);
                    if (has_w) check_bits(w.grad(), golden::get("group_norm.txt", k + ".dw"), k + ".dw", 1e-5, 1e-5);
                    if (has_b) check_bits(b.grad(), golden::get("group_norm.txt", k + ".db"), k + ".db", 1e-5, 1e-5);
                }
            }
    });
    // Without a weight the bias still gets its gradient (Σ g per channel), where PyTorch 1.13 throws.
    Tensor x = xgrad::randn({2, 4, 3}, xgrad::kFloat64).requires_grad_();
    Tensor b = xgrad::randn({4}, xgrad::kFloat64).requires_grad_();
    Tensor g = xgrad::randn({2, 4, 3}, xgrad::kFloat64);
    F::group_norm(x, 2, Tensor(), b).backward(g);
    golden::check_close(b.grad(), g.sum({0, 2}), "bias alone", 1e-12, 1e-12);
    // gradcheck, float64, with the weight and bias and without
    golden::check_gradcheck([](const Ins& v) { return F::group_norm(v[0], 2, v[1], v[2]); },
                            {x, xgrad::randn({4}, xgrad::kFloat64).requires_grad_(), b}, "group_norm");
    golden::check_gradcheck([](const Ins& v) { return F::group_norm(v[0], 4); }, {x}, "group_norm plain");
}

TEST_CASE("BatchNorm2d and BatchNorm1d keep PyTorch's running statistics and use them in eval mode") {
    nn::BatchNorm2d bn(3);
    for (int step = 0; step < 2; ++step) {
        const std::string s = std::to_string(step);
        check_bits(bn(golden::get(kFile, "bn2d.x" + s)), golden::get(kFile, "bn2d.y" + s), "bn2d y" + s, 1e-5, 1e-5);
    }
    const auto state = bn.state_dict();
    std::vector<std::string> names;
    for (const auto& [name, t] : state) names.push_back(name);
    CHECK(names == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
    for (const auto& [name, t] : state)
        check_bits(t, golden::get(kFile, "bn2d.state." + name), "bn2d " + name, 1e-6, 1e-7);
    bn.eval();
    check_bits(bn(golden::get(kFile, "bn2d.x1")), golden::get(kFile, "bn2d.eval"), "bn2d eval", 1e-5, 1e-5);
    CHECK(bn.num_batches_tracked.item<std::int64_t>() == 2);  // eval mode leaves the statistics alone
    // Module::to(dtype) changes the floating-point tensors only, as PyTorch's.
    bn.to(xgrad::kFloat64);
    CHECK(bn.running_mean.dtype() == xgrad::kFloat64);
    CHECK(bn.weight.dtype() == xgrad::kFloat64);
    CHECK(bn.num_batches_tracked.dtype() == xgrad::kInt64);
    CHECK(bn.num_batches_tracked.item<std::int64_t>() == 2);

    nn::BatchNorm1d bn1(4, 1e-5, std::nullopt);  // momentum None: a cumulative average
    for (int step = 0; step < 3; ++step) {
        const std::string s = std::to_string(step);
        check_bits(bn1(golden::get(kFile, "bn1d.x" + s)), golden::get(kFile, "bn1d.y" + s), "bn1d y" + s, 1e-5, 1e-5);
    }
    for (const auto& [name, t] : bn1.state_dict())
        check_bits(t, golden::get(kFile, "bn1d.state." + name), "bn1d " + name, 1e-6, 1e-7);
}

TEST_CASE("Dropout2d draws one mask value per channel as PyTorch") {
    xgrad::manual_seed(5);
    golden::check_close(F::dropout2d(xgrad::ones({2, 4, 3, 3}), 0.3), golden::get(kFile, "dropout2d.p03"), "p=0.3", 0,
                        0);
    nn::Dropout2d drop(0.5);
    golden::check_close(drop(xgrad::ones({3, 5, 2, 2}, xgrad::kFloat64)), golden::get(kFile, "dropout2d.module"),
                        "module", 0, 0);
    golden::check_close(xgrad::rand({3}), golden::get(kFile, "dropout2d.after"), "stream after", 0, 0);
    drop.eval();
    Tensor x = xgrad::randn({2, 3, 2, 2});
    golden::check_close(drop(x), x, "eval", 0, 0);
}

TEST_CASE("gradcheck: batch_norm and group_norm") {
    xgrad::manual_seed(4);
    auto d = xgrad::kFloat64;
    Tensor x = xgrad::randn({3, 4, 2, 3}, d).requires_grad_(), w = xgrad::randn({4}, d).requires_grad_();
    Tensor b = xgrad::randn({4}, d).requires_grad_();
    golden::check_gradcheck([](const Ins& in) { return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
                            {x, w, b}, "batch_norm train");
    Tensor rm = xgrad::randn({4}, d), rv = xgrad::rand({4}, d) + 0.5;
    golden::check_gradcheck([&](const Ins& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); }, {x, w, b},
                            "batch_norm eval");
    golden::check_gradcheck([](const Ins& in) { return F::group_norm(in[0], 2, in[1], in[2]); }, {x, w, b},
                            "group_norm");
}

TEST_CASE("norm modules print as PyTorch's, and bad norm arguments throw PyTorch's messages") {
    auto r = reprs();
    CHECK(printed(nn::BatchNorm2d(3)) == r.at("bn2d"));
    CHECK(printed(nn::BatchNorm1d(4, 1e-5, std::nullopt, false, false)) == r.at("bn1d"));
    CHECK(nn::BatchNorm1d(4, 1e-5, 0.1, false, false).state_dict().empty());
    CHECK(printed(nn::GroupNorm(2, 6)) == r.at("gn"));
    CHECK(printed(nn::GroupNorm(3, 6, 1e-3, false)) == r.at("gn_all"));
    CHECK(printed(nn::Dropout2d(0.2)) == r.at("dropout2d"));

    using golden::check_throws;
    check_throws([] { nn::BatchNorm2d(3)(xgrad::randn({2, 3, 4})); }, {"expected 4D input (got 3D input)"});
    check_throws([] { nn::BatchNorm1d(3)(xgrad::randn({2, 3, 4, 5})); }, {"expected 2D or 3D input (got 4D input)"});
    check_throws(
        [] {
            nn::BatchNorm1d(3)(xgrad::randn({1, 3}));
        },
        {"Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"});
    check_throws([] { nn::BatchNorm1d(3)(xgrad::randn({4, 5})); }, {"running_mean should contain 5 elements not 3"});
    check_throws([] { nn::GroupNorm(4, 6); }, {"num_channels must be divisible by num_groups"});
    check_throws(
        [] {
            F::group_norm(xgrad::randn({2, 6, 3}), 4);
        },
        {"Expected number of channels in input to be divisible by num_groups, but got input of shape "
         "[2, 6, 3] and num_groups=4"});
    check_throws(
        [] {
            F::dropout2d(xgrad::randn({2, 3, 4}), 1.5);
        },
        {"dropout probability has to be between 0 and 1, but got 1.5"});
}
