// Checks the CUDA backend against the CPU, its reference (llm.c's habit): every op and module forward
// and backward, broadcasting and strided inputs, a training loop, moves between devices, saving,
// mixed-device errors and running out of memory. Without a GPU the suite exits 77 (meson's SKIP).
//
// Built with -DXGRAD_TEST_CUDA_ON_CPU, the "GPU" side is the CPU: the suite then checks itself
// (its inputs, tolerances and bookkeeping) on a machine without a GPU; the CUDA-only cases skip.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

namespace {

namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;
using xgrad::Shape;
using xgrad::Tensor;
using xgrad::TensorOptions;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

// A device type, not a Device: a tensor on the GPU reports `cuda:0`, which equals `kCUDA` as a type but
// not `Device(kCUDA)` (the current GPU, "cuda"), as in PyTorch.
#ifdef XGRAD_TEST_CUDA_ON_CPU
constexpr xgrad::DeviceType kGpu = xgrad::kCPU;
#else
constexpr xgrad::DeviceType kGpu = xgrad::kCUDA;
#endif
const bool kRealGpu = kGpu == xgrad::kCUDA;

/// Tolerances relative to the largest expected magnitude (at least 1): float64, float32, float32 GEMMs.
constexpr double kTol64 = 1e-12, kTol32 = 1e-5, kTolMatmul = 1e-4;

double tol_for(xgrad::DType dtype) {
    return dtype == xgrad::kFloat64 ? kTol64 : kTol32;
}

/// `gpu` (on the GPU) holds `cpu`'s values within rtol of the largest expected magnitude.
void check_match(const Tensor& gpu, const Tensor& cpu, const std::string& what, double rtol) {
    INFO(what);
    REQUIRE(gpu.defined());
    REQUIRE(cpu.defined());
    CHECK(gpu.device() == kGpu);
    CHECK(cpu.device() == xgrad::kCPU);
    double scale = 1.0;
    for (double v : cpu.to_vector<double>())
        if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    golden::check_close(gpu.cpu(), cpu, what, rtol, rtol * scale);
}

/// Runs `f` on CPU inputs and on GPU copies of them: the outputs must match, and so must the input
/// gradients of sum(out * u) for a random u. Floating inputs require grad.
void check_op(const std::string& name, const Fn& f, const Inputs& inputs, double rtol = 0) {
    Inputs c, g;
    for (const Tensor& t : inputs) {
        Tensor host = t.detach().clone(), dev = t.detach().to(kGpu);
        if (t.is_floating_point()) {
            host.requires_grad_(true);
            dev.requires_grad_(true);
        }
        c.push_back(host);
        g.push_back(dev);
    }
    Tensor yc = f(c), yg = f(g);
    if (rtol == 0) rtol = tol_for(yc.dtype());
    check_match(yg, yc, name + " (forward)", rtol);
    CHECK(yg.grad_fn_name() == yc.grad_fn_name());
    if (!yc.requires_grad()) return;
    Tensor u = xgrad::randn(yc.shape(), yc.dtype());
    (yc * u).sum().backward();
    (yg * u.to(kGpu)).sum().backward();
    for (std::size_t i = 0; i < c.size(); ++i) {
        if (!c[i].requires_grad()) continue;
        REQUIRE_MESSAGE(g[i].grad().defined() == c[i].grad().defined(), name << ": gradient of input " << i);
        if (c[i].grad().defined())
            check_match(g[i].grad(), c[i].grad(), name + " (gradient of input " + std::to_string(i) + ")", rtol);
    }
}

Tensor randn(Shape shape, xgrad::DType dtype) {
    return xgrad::randn(shape, dtype);
}

/// Values in [0.5, 2.5): safe for log, sqrt and powers.
Tensor positive(Shape shape, xgrad::DType dtype) {
    return xgrad::rand(shape, dtype) * 2.0 + 0.5;
}

const xgrad::DType kDtypes[] = {xgrad::kFloat32, xgrad::kFloat64};

}  // namespace

// ---- devices and memory -----------------------------------------------------------------------------------

TEST_CASE("devices: tensors know their GPU, and copies round-trip") {
    if (!kRealGpu) return;
    CHECK(xgrad::cuda::is_available());
    CHECK(xgrad::cuda::device_count() >= 1);
    Tensor x = xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}});
    Tensor g = x.cuda();
    CHECK(g.is_cuda());
    CHECK(g.device() == xgrad::Device(xgrad::kCUDA, 0));
    CHECK(xgrad::to_string(g.device()) == "cuda:0");
    CHECK(g.to(xgrad::kCUDA).impl() == g.impl());  // already there: no copy
    CHECK(g.to(xgrad::Device(xgrad::kCUDA, 0)).impl() == g.impl());
    CHECK(g.cpu().to_vector<float>() == std::vector<float>{1, 2, 3, 4});
    CHECK(g.to_vector<double>() == std::vector<double>{1, 2, 3, 4});
    CHECK(g[1][0].item<float>() == 3.0f);
    CHECK(g.t().contiguous().to_vector<float>() == std::vector<float>{1, 3, 2, 4});
    CHECK(g.t().cpu().to_vector<float>() == std::vector<float>{1, 3, 2, 4});  // strided source
    Tensor host = xgrad::zeros({2, 2});
    host.t().copy_(g);  // device to a strided host view
    CHECK(host.to_vector<float>() == std::vector<float>{1, 3, 2, 4});
    Tensor dev = xgrad::zeros({2, 2}, TensorOptions{.dtype = xgrad::kFloat64, .device = xgrad::kCUDA});
    dev.t().copy_(x);  // host to a strided device view, float32 to float64
    CHECK(dev.to_vector<double>() == std::vector<double>{1, 3, 2, 4});
    CHECK(g.to(xgrad::kInt64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3, 4});
    float* p = g.data_ptr<float>();  // a device pointer, as PyTorch's
    CHECK(p != nullptr);
    CHECK(p != x.data_ptr<float>());
    xgrad::cuda::synchronize();
    // Empty tensors move and reduce.
    Tensor e = xgrad::zeros({0, 3}, xgrad::kCUDA);
    CHECK(e.cpu().numel() == 0);
    CHECK(e.sum(0).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("devices: factories honour the device, random ones with the CPU's numbers") {
    if (!kRealGpu) return;
    CHECK(xgrad::zeros({2}, xgrad::kCUDA).is_cuda());
    CHECK(xgrad::ones({2}, TensorOptions{.device = xgrad::kCUDA}).to_vector<float>() == std::vector<float>{1, 1});
    CHECK(xgrad::full({2}, 0.5, TensorOptions{.dtype = xgrad::kFloat64, .device = xgrad::kCUDA}).to_vector<double>() ==
          std::vector<double>{0.5, 0.5});
    CHECK(xgrad::arange(3.0, TensorOptions{.device = xgrad::kCUDA}).to_vector<float>() == std::vector<float>{0, 1, 2});
    CHECK(xgrad::tensor({1.0, 2.0}, xgrad::kCUDA).is_cuda());
    CHECK(xgrad::from_vector(std::vector<double>{1, 2}, {2}, xgrad::kCUDA).to_vector<float>() ==
          std::vector<float>{1, 2});
    Tensor w = xgrad::zeros({2}, TensorOptions{.device = xgrad::kCUDA, .requires_grad = true});
    CHECK(w.is_cuda());
    CHECK(w.requires_grad());
    CHECK(xgrad::zeros_like(w).is_cuda());
    CHECK(xgrad::ones_like(w).is_cuda());
    CHECK(xgrad::empty_like(w).is_cuda());
    CHECK(xgrad::full_like(w, 2.0).is_cuda());
    for (auto dtype : kDtypes) {
        xgrad::manual_seed(7);
        Tensor a = xgrad::randn({3, 40}, dtype), b = xgrad::rand({5}, dtype);
        Tensor i = xgrad::randint(0, 10, {6});
        xgrad::manual_seed(7);
        Tensor ga = xgrad::randn({3, 40}, TensorOptions{.dtype = dtype, .device = xgrad::kCUDA});
        Tensor gb = xgrad::rand({5}, TensorOptions{.dtype = dtype, .device = xgrad::kCUDA});
        Tensor gi = xgrad::randint(0, 10, {6}, TensorOptions{.dtype = xgrad::kInt64, .device = xgrad::kCUDA});
        CHECK(ga.is_cuda());
        CHECK(ga.to_vector<double>() == a.to_vector<double>());  // bit for bit
        CHECK(gb.to_vector<double>() == b.to_vector<double>());
        CHECK(gi.to_vector<std::int64_t>() == i.to_vector<std::int64_t>());
        xgrad::manual_seed(3);
        Tensor u = xgrad::zeros({4, 3}, dtype);
        xgrad::uniform_(u, -1.0, 1.0);
        xgrad::manual_seed(3);
        Tensor gu = xgrad::zeros({4, 3}, TensorOptions{.dtype = dtype, .device = xgrad::kCUDA});
        xgrad::uniform_(gu, -1.0, 1.0);
        CHECK(gu.is_cuda());
        CHECK(gu.to_vector<double>() == u.to_vector<double>());
        // exponential_ and multinomial: drawn on the host, the CPU's values.
        xgrad::manual_seed(5);
        Tensor e = xgrad::exponential_(u, 2.0);
        Tensor m = xgrad::multinomial(b, 3), mr = xgrad::multinomial(b, 7, true);
        xgrad::manual_seed(5);
        Tensor ge = xgrad::exponential_(gu, 2.0);
        Tensor gm = xgrad::multinomial(gb, 3), gmr = xgrad::multinomial(gb, 7, true);
        CHECK(ge.is_cuda());
        CHECK(ge.to_vector<double>() == e.to_vector<double>());
        CHECK(gm.is_cuda());
        CHECK(gm.to_vector<std::int64_t>() == m.to_vector<std::int64_t>());
        CHECK(gmr.to_vector<std::int64_t>() == mr.to_vector<std::int64_t>());
    }
}

TEST_CASE("memory: the caching allocator counts, caches and empties") {
    if (!kRealGpu) return;
    xgrad::cuda::synchronize();
    xgrad::cuda::empty_cache();
    const std::size_t before = xgrad::cuda::memory_allocated();
    xgrad::cuda::reset_peak_memory_stats();
    {
        Tensor big = xgrad::empty({1 << 20}, xgrad::kCUDA);  // 4 MiB
        CHECK(xgrad::cuda::memory_allocated() >= before + (4u << 20));
        CHECK(xgrad::cuda::max_memory_allocated() >= before + (4u << 20));
    }
    CHECK(xgrad::cuda::memory_allocated() == before);  // freed into the cache
    CHECK(xgrad::cuda::memory_reserved() >= before + (4u << 20));
    CHECK(xgrad::cuda::max_memory_allocated() >= before + (4u << 20));
    Tensor again = xgrad::empty({1 << 20}, xgrad::kCUDA);  // a cache hit
    CHECK(xgrad::cuda::memory_allocated() >= before + (4u << 20));
    again = Tensor();
    xgrad::cuda::empty_cache();
    CHECK(xgrad::cuda::memory_reserved() == xgrad::cuda::memory_allocated());
}

TEST_CASE("memory: asking for more than the card has throws OutOfMemoryError, and the device goes on") {
    if (!kRealGpu) return;
    Tensor keep = xgrad::ones({1000}, xgrad::kCUDA);
    std::string message;
    try {
        Tensor huge = xgrad::empty({std::int64_t{1} << 42}, xgrad::kCUDA);  // 16 TiB of float32
    } catch (const xgrad::OutOfMemoryError& e) {
        message = e.what();
    }
    INFO(message);
    CHECK(message.find("out of memory") != std::string::npos);
    CHECK(message.find("tried to allocate 17592186044416 bytes") != std::string::npos);
    CHECK(message.find("cache held") != std::string::npos);
    Tensor after = xgrad::ones({1000}, xgrad::kCUDA) + keep;  // a normal allocation works
    CHECK(after.sum().item<float>() == 2000.0f);
}

TEST_CASE("printing a CUDA tensor gives PyTorch's text with device='cuda:0'") {
    if (!kRealGpu) return;
    Tensor x = xgrad::tensor({1.0, 2.5});
    CHECK(xgrad::to_string(x.cuda()) == "tensor([1.0000, 2.5000], device='cuda:0')");
    CHECK(xgrad::to_string(x.to(xgrad::kFloat64).cuda()) ==
          "tensor([1.0000, 2.5000], device='cuda:0', dtype=torch.float64)");
    Tensor w = x.cuda().requires_grad_(true);
    CHECK(xgrad::to_string(w * 2.0) == "tensor([2., 5.], device='cuda:0', grad_fn=<MulBackward0>)");
    CHECK(xgrad::to_string(xgrad::zeros({0}, xgrad::kCUDA)) == "tensor([], device='cuda:0')");
}

TEST_CASE("an op mixing devices throws naming the op and both devices") {
    if (!kRealGpu) return;
    Tensor c = xgrad::ones({2, 2}), g = xgrad::ones({2, 2}, xgrad::kCUDA);
    const std::vector<std::string> devices{"expected all tensors to be on the same device", "cuda:0", "cpu"};
    auto with = [&](std::string op) {
        auto parts = devices;
        parts.push_back(op + ":");
        return parts;
    };
    golden::check_throws([&] { (void)(g + c); }, with("add"));
    golden::check_throws([&] { (void)(c * g); }, with("mul"));
    golden::check_throws([&] { (void)g.maximum(c); }, with("maximum"));
    golden::check_throws([&] { (void)xgrad::matmul(g, c); }, with("matmul"));
    golden::check_throws([&] { (void)xgrad::cat({g, c}); }, with("cat"));
    golden::check_throws([&] { (void)F::layer_norm(g, {2}, xgrad::ones({2})); }, with("layer_norm"));
    golden::check_throws([&] { (void)F::mse_loss(g, c); }, with("sub"));
    golden::check_throws([&] { (void)F::cross_entropy(g, xgrad::zeros({2}, xgrad::kInt64)); }, with("cross_entropy"));
    golden::check_throws([&] { g.add_(c); }, with("add_"));
    // backward's gradient on another device than its output
    Tensor y = xgrad::ones({2, 2}, xgrad::kCUDA).requires_grad_() * 2.0;
    golden::check_throws([&] { y.backward(c); }, {"backward", "gradient is on cpu", "output is on cuda:0"});
}

// ---- ops against the CPU ---------------------------------------------------------------------------------------

TEST_CASE("elementwise maps of one operand, contiguous and strided") {
    xgrad::manual_seed(1);
    using xgrad::kFloat32;
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        const Tensor x = randn({6, 7}, dt), p = positive({6, 7}, dt);
        const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> any{
            {"neg", [](const Tensor& t) { return -t; }},
            {"abs", [](const Tensor& t) { return t.abs(); }},
            {"exp", [](const Tensor& t) { return t.exp(); }},
            {"tanh", [](const Tensor& t) { return t.tanh(); }},
            {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }},
            {"relu", [](const Tensor& t) { return t.relu(); }},
            {"gelu", [](const Tensor& t) { return t.gelu(); }},
            {"gelu tanh", [](const Tensor& t) { return t.gelu("tanh"); }},
            {"square", [](const Tensor& t) { return t.pow(2.0); }},
            {"cube", [](const Tensor& t) { return t.pow(3.0); }},
            {"pow 0", [](const Tensor& t) { return t.pow(0.0); }},
            {"scalars", [](const Tensor& t) { return ((t + 1.5) * 2.0 - 0.25) / 3.0; }},
            {"rsub", [](const Tensor& t) { return 2.0 - t; }},
            {"rdiv", [](const Tensor& t) { return 2.0 / (t.abs() + 1.0); }},
            {"clamp", [](const Tensor& t) { return t.clamp(-0.5, 0.7); }},
            {"clamp min", [](const Tensor& t) { return t.clamp(0.1); }},
        };
        const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> pos{
            {"sqrt", [](const Tensor& t) { return t.sqrt(); }},
            {"rsqrt", [](const Tensor& t) { return t.rsqrt(); }},
            {"log", [](const Tensor& t) { return t.log(); }},
            {"pow 0.5", [](const Tensor& t) { return t.pow(0.5); }},
            {"pow -1", [](const Tensor& t) { return t.pow(-1.0); }},
            {"pow 1.7", [](const Tensor& t) { return t.pow(1.7); }},
            {"pow -2.5", [](const Tensor& t) { return t.pow(-2.5); }},
        };
        for (const auto* list : {&any, &pos}) {
            const Tensor& in = list == &any ? x : p;
            for (const auto& [name, f] : *list) {
                check_op(name, [f = f](const Inputs& v) { return f(v[0]); }, {in});
                // Strided: a transposed view, and a slice with an offset and a step.
                check_op(name + " (transposed)", [f = f](const Inputs& v) { return f(v[0].t()); }, {in});
                check_op(name + " (sliced)", [f = f](const Inputs& v) { return f(v[0].slice(1, 1, 7, 2)); }, {in});
            }
        }
    }
    // int64 maps where the CPU defines them.
    Tensor i = xgrad::arange(-6.0, 6.0, 1.0, xgrad::kInt64).reshape({3, 4});
    check_op("int64 neg abs clamp", [](const Inputs& v) { return (-v[0]).abs().clamp(1, 4) + 2; }, {i});
    check_op(
        "int64 to float", [](const Inputs& v) { return v[0].exp(); }, {i}, kTol32);
    (void)kFloat32;
}

TEST_CASE("elementwise maps of two operands, with broadcasting and strides") {
    xgrad::manual_seed(2);
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        const Tensor a = randn({3, 1, 5}, dt), b = randn({4, 5}, dt), pa = positive({3, 1, 5}, dt);
        const Tensor c = randn({5, 4}, dt);
        check_op("add", [](const Inputs& v) { return v[0] + v[1]; }, {a, b});
        check_op("sub", [](const Inputs& v) { return v[0] - v[1]; }, {a, b});
        check_op("mul", [](const Inputs& v) { return v[0] * v[1]; }, {a, b});
        check_op("div", [](const Inputs& v) { return v[0] / (v[1].abs() + 0.5); }, {a, b});
        check_op("pow", [](const Inputs& v) { return v[0].pow(v[1]); }, {pa, b});
        check_op("maximum", [](const Inputs& v) { return v[0].maximum(v[1]); }, {a, b});
        check_op("minimum", [](const Inputs& v) { return xgrad::minimum(v[0], v[1]); }, {a, b});
        check_op("ties share", [](const Inputs& v) { return v[0].maximum(v[0].detach()); }, {b});
        check_op("transposed operand", [](const Inputs& v) { return v[0] * v[1].t(); }, {b, c});
        check_op("expanded and sliced",
                 [](const Inputs& v) {
                     return v[0].expand({3, 4, 5}).slice(2, 1, 5) * v[1].slice(1, 0, 4);
                 },
                 {a, b});
        check_op("mixed dtypes", [](const Inputs& v) { return v[0] * v[1].to(xgrad::kFloat32); }, {a, b});
        check_op("0-d operand", [](const Inputs& v) { return v[0] * v[1].sum(); }, {a, b});
    }
    Tensor i = xgrad::arange(12.0, xgrad::kInt64).reshape({3, 4}), j = xgrad::arange(4.0, xgrad::kInt64);
    check_op("int64", [](const Inputs& v) { return (v[0] * v[1] - v[1]).maximum(v[0]); }, {i, j});
}

TEST_CASE("issue 11 maths and activations: CUDA kernels against the CPU's") {
    xgrad::manual_seed(11);
    using Map = std::function<Tensor(const Tensor&)>;
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        // Values with kinks and thresholds in range (-3, 0, 3 for the hard activations).
        const Tensor x = randn({6, 7}, dt) * 3.0, p = positive({6, 7}, dt), u = positive({6, 7}, dt) * 0.6 - 0.9;
        const std::vector<std::pair<std::string, Map>> any{
            {"erf", [](const Tensor& t) { return t.erf(); }},
            {"sin", [](const Tensor& t) { return t.sin(); }},
            {"cos", [](const Tensor& t) { return t.cos(); }},
            {"atan", [](const Tensor& t) { return t.atan(); }},
            {"sinh", [](const Tensor& t) { return t.sinh(); }},
            {"cosh", [](const Tensor& t) { return t.cosh(); }},
            {"expm1", [](const Tensor& t) { return t.expm1(); }},
            {"exp2", [](const Tensor& t) { return t.exp2(); }},
            {"sign floor ceil round trunc",
             [](const Tensor& t) { return t.sign() + t.floor() + t.ceil() + t.round() + t.trunc(); }},
            {"silu", F::silu},
            {"mish", F::mish},
            {"selu", F::selu},
            {"hardswish", F::hardswish},
            {"hardsigmoid", F::hardsigmoid},
            {"relu6", F::relu6},
            {"logsigmoid", F::logsigmoid},
            {"softsign", F::softsign},
            {"quick_gelu", F::quick_gelu},
            {"leaky_relu", [](const Tensor& t) { return F::leaky_relu(t, 0.2); }},
            {"elu", [](const Tensor& t) { return F::elu(t, 0.5); }},
            {"celu", [](const Tensor& t) { return F::celu(t, 2.0); }},
            {"softplus", [](const Tensor& t) { return F::softplus(t, 2.0, 3.0); }},
            {"hardtanh", [](const Tensor& t) { return F::hardtanh(t, -2.0, 3.0); }},
            {"remainder fmod div scalar",
             [](const Tensor& t) {
                 return t.remainder(-1.5) + t.fmod(1.5) + t.div(0.7, "floor") + t.div(0.7, "trunc");
             }},
        };
        const std::vector<std::pair<std::string, Map>> unit{
            {"asin", [](const Tensor& t) { return t.asin(); }},
            {"acos", [](const Tensor& t) { return t.acos(); }},
            {"tan", [](const Tensor& t) { return t.tan(); }},
            {"log1p", [](const Tensor& t) { return t.log1p(); }},
        };
        const std::vector<std::pair<std::string, Map>> pos{
            {"log2", [](const Tensor& t) { return t.log2(); }},
            {"log10", [](const Tensor& t) { return t.log10(); }},
            {"pow of a scalar base", [](const Tensor& t) { return xgrad::pow(1.7, t); }},
        };
        for (const auto* list : {&any, &unit, &pos}) {
            const Tensor& in = list == &any ? x : list == &unit ? u : p;
            for (const auto& [name, f] : *list) {
                check_op(name, [f = f](const Inputs& v) { return f(v[0]); }, {in});
                check_op(name + " (transposed)", [f = f](const Inputs& v) { return f(v[0].t()); }, {in});
            }
        }
        const Tensor y = randn({7}, dt) * 2.0, lo = randn({6, 1}, dt), hi = randn({7}, dt) + 0.5;
        check_op("atan2", [](const Inputs& v) { return xgrad::atan2(v[0], v[1]); }, {x, y});
        check_op("remainder", [](const Inputs& v) { return v[0].remainder(v[1]); }, {x, y});
        check_op("fmod", [](const Inputs& v) { return v[0].fmod(v[1]); }, {x, y});
        check_op("div floor, trunc", [](const Inputs& v) { return v[0].div(v[1], "floor") + v[0].div(v[1], "trunc"); },
                 {x, y});
        check_op("clamp tensors", [](const Inputs& v) { return v[0].clamp(v[1], v[2]); }, {x, lo, hi});
        check_op("clamp_min, clamp_max tensors",
                 [](const Inputs& v) { return v[0].clamp_min(v[1]) + v[0].clamp_max(v[2]); }, {x, lo, hi});
        check_op("lerp", [](const Inputs& v) { return v[0].lerp(v[1], v[2].sigmoid()); }, {x, y, lo});
    }
    // Integer kernels: powers, sign and the divisions.
    const Tensor i = xgrad::arange(-6.0, 6.0, 1.0, xgrad::kInt64).reshape({3, 4});
    const Tensor j = xgrad::tensor({3.0, -2.0, 5.0, -1.0}, xgrad::kInt64);
    check_op("int64 pow sign", [](const Inputs& v) { return v[0].pow(5) + v[0].sign() + v[0].pow(v[1].abs()); },
             {i, j});
    check_op("int64 divisions",
             [](const Inputs& v) {
                 return v[0].remainder(v[1]) + v[0].fmod(v[1]) + v[0].div(v[1], "floor") + v[0].div(v[1], "trunc");
             },
             {i, j});
}

TEST_CASE("large elementwise maps: more elements than one grid covers") {
    xgrad::manual_seed(3);
    const Tensor x = randn({17 << 20}, xgrad::kFloat32);  // > 65535 blocks of 256 threads
    check_op("large exp", [](const Inputs& v) { return (v[0] * 0.1).exp(); }, {x});
    const Tensor y = randn({3, 5, 1, 7, 2, 1, 3, 2, 2, 3, 1, 2}, xgrad::kFloat64);
    check_op("many dims, permuted",
             [](const Inputs& v) {
                 return v[0].permute({11, 0, 10, 2, 9, 4, 8, 6, 7, 5, 3, 1}).sigmoid();
             },
             {y});
}

TEST_CASE("reductions, over rows, leading dims and everything") {
    xgrad::manual_seed(4);
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        for (Shape shape : {Shape{4, 6, 5}, Shape{3, 5000}, Shape{2, 1}, Shape{70000, 3}}) {
            CAPTURE(xgrad::to_string(shape));
            const Tensor x = randn(shape, dt);
            check_op("sum", [](const Inputs& v) { return v[0].sum(); }, {x});
            check_op("sum -1", [](const Inputs& v) { return v[0].sum(-1); }, {x});
            check_op("sum 0 (outer)", [](const Inputs& v) { return v[0].sum(0, true); }, {x});
            check_op("mean", [](const Inputs& v) { return v[0].mean(); }, {x});
            check_op("mean 0", [](const Inputs& v) { return v[0].mean(0); }, {x});
            check_op("mean -1", [](const Inputs& v) { return v[0].mean(-1, true); }, {x});
            check_op("var", [](const Inputs& v) { return v[0].var(-1); }, {x});
            check_op("var biased 0", [](const Inputs& v) { return v[0].var(0, false, true); }, {x});
            check_op("std", [](const Inputs& v) { return v[0].std(-1, true, false); }, {x});
            check_op("max", [](const Inputs& v) { return v[0].max(); }, {x});
            check_op("max -1", [](const Inputs& v) { return v[0].max(-1).values; }, {x});
            check_op("min 0", [](const Inputs& v) { return v[0].min(0, true).values; }, {x});
            check_op("sum strided", [](const Inputs& v) { return v[0].transpose(0, -1).sum(-1); }, {x});
        }
        const Tensor x = randn({3, 4, 5}, dt);
        check_op("sum middle", [](const Inputs& v) { return v[0].sum(1); }, {x});
        check_op("mean of dims", [](const Inputs& v) { return v[0].mean({0, 2}, true); }, {x});
        check_op("ties in max", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).max(-1).values; }, {x});
        check_op("ties in all-max", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).max(); }, {x});
    }
    Tensor i = xgrad::arange(24.0, xgrad::kInt64).reshape({2, 3, 4});
    check_op("int64 sum max",
             [](const Inputs& v) { return v[0].sum(-1) + v[0].sum(0).sum(0).sum() + v[0].max(1).values.sum(); }, {i});
    // bool, uint8 and int32 add up in int64, read in place: all, by rows, over the leading dim (the
    // column kernel) and a middle dim; the int32 sums pass int32's range.
    const Tensor n = xgrad::arange(21000.0, xgrad::kInt64).reshape({3000, 7});
    for (const Tensor& narrow :
         {n.remainder(3.0) == 0.0, n.remainder(256.0).to(xgrad::kUInt8), (n * 100000).to(xgrad::kInt32)}) {
        CAPTURE(xgrad::to_string(narrow.dtype()));
        check_op("narrow sum", [](const Inputs& v) { return v[0].sum(); }, {narrow});
        check_op("narrow sum 0", [](const Inputs& v) { return v[0].sum(0); }, {narrow});
        check_op("narrow sum 1", [](const Inputs& v) { return v[0].sum(1, true); }, {narrow});
        check_op("narrow sum middle", [](const Inputs& v) { return v[0].reshape({3, 1000, 7}).sum(1); }, {narrow});
    }
    // More rows than one grid has blocks.
    const Tensor many = randn({(1 << 20) + 5, 2}, xgrad::kFloat32);
    check_op("many rows", [](const Inputs& v) { return v[0].sum(-1); }, {many});
}

TEST_CASE("max/min with indices, amax, argmax, prod, running sums and products, logsumexp, var(correction)") {
    for (xgrad::DType dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        for (Shape shape : {Shape{4, 6, 5}, Shape{3, 300}, Shape{2, 1}, Shape{5000, 3}}) {
            CAPTURE(xgrad::to_string(shape));
            const Tensor x = randn(shape, dt);
            // Ties (clamped values) make the index the CPU's and the GPU's agree on visible.
            check_op("max -1 values", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).max(-1).values; }, {x});
            check_op("max -1 indices", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).max(-1).indices; }, {x});
            check_op("min 0 keepdim", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).min(0, true).values; }, {x});
            check_op("min 0 indices", [](const Inputs& v) { return v[0].min(0, true).indices; }, {x});
            check_op("amax ties", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).amax({0, 1}); }, {x});
            check_op("amin -1", [](const Inputs& v) { return v[0].amin(-1, true); }, {x});
            check_op("argmax", [](const Inputs& v) { return v[0].argmax(); }, {x});
            check_op("argmin 0", [](const Inputs& v) { return v[0].argmin(0, true); }, {x});
            check_op("prod -1", [](const Inputs& v) { return (v[0] * 0.5 + 1.0).prod(-1); }, {x});
            check_op("cumsum 0", [](const Inputs& v) { return v[0].cumsum(0); }, {x});
            check_op("cumsum -1", [](const Inputs& v) { return v[0].cumsum(-1); }, {x});
            check_op("cumprod -1", [](const Inputs& v) { return (v[0] * 0.1 + 1.0).cumprod(-1); }, {x});
            check_op("logsumexp", [](const Inputs& v) { return v[0].logsumexp(-1); }, {x});
            check_op("norm", [](const Inputs& v) { return v[0].norm(); }, {x});
            check_op("norm 1 and inf along dims",
                     [](const Inputs& v) { return v[0].norm(1.0, {0}, true) + v[0].norm(INFINITY, -1).sum(); }, {x});
            check_op("vector_norm 3", [](const Inputs& v) { return xgrad::linalg::vector_norm(v[0], 3.0, {-1}); }, {x});
            // At most 120 elements a side: the outer product of the 15000 elements of {5000, 3} is 1.8 GB.
            check_op("outer",
                     [](const Inputs& v) {
                         const Tensor f = v[0].flatten();
                         const Tensor head = f.narrow(0, 0, std::min<int64_t>(f.numel(), 120));
                         return xgrad::outer(head, head.flip({0}));
                     },
                     {x});
            check_op(
                "logaddexp and logaddexp2",
                [](const Inputs& v) { return xgrad::logaddexp(v[0], v[0].flip({0}) * 3.0) + v[0].logaddexp2(v[0]); },
                {x});
            check_op("nan_to_num", [](const Inputs& v) { return (v[0].log() * v[0].exp()).nan_to_num(0.5, 7.0); }, {x});
            check_op("diff", [](const Inputs& v) { return v[0].diff(2, 0, v[0].narrow(0, 0, 1)); }, {x});
            check_op("count_nonzero", [](const Inputs& v) { return v[0].gt(0.3).count_nonzero(-1); }, {x});
            check_op("meshgrid",
                     [](const Inputs& v) {
                         return xgrad::stack(xgrad::meshgrid({v[0].flatten(), v[0][0].flatten()}, "xy"));
                     },
                     {x});
            check_op("var correction 2", [](const Inputs& v) { return v[0].var(0, xgrad::Correction(2), true); }, {x});
        }
        // Zeros in prod and cumprod: the gradient is exact there on both devices.
        const Tensor z = xgrad::tensor({{1.5, 0.0, 2.0, -1.0}, {0.0, 3.0, 0.0, 0.5}, {2.0, 0.5, -1.0, 4.0}}).to(dt);
        check_op("prod with zeros", [](const Inputs& v) { return v[0].prod(1); }, {z});
        check_op("prod of all with a zero", [](const Inputs& v) { return v[0][0].prod(); }, {z});
        check_op("cumprod with zeros", [](const Inputs& v) { return v[0].cumprod(1); }, {z});
    }
    const Tensor i =
        xgrad::from_vector(std::vector<double>{3, 1, 3, 2, 0, 4, 4, 1, 2, 2, 0, 1, 3, 3, 1, 0, 2, 4, 1, 1, 0, 2, 3, 2},
                           {2, 3, 4}, xgrad::kInt64);
    check_op("int64 max indices", [](const Inputs& v) { return v[0].max(1).indices; }, {i});
    check_op("int64 prod and cumsum", [](const Inputs& v) { return v[0].prod(-1).sum() + v[0].cumsum(0); }, {i});
}

TEST_CASE("sort, argsort and topk") {
    for (xgrad::DType dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        for (Shape shape : {Shape{4, 6, 5}, Shape{3, 300}, Shape{2, 1}}) {
            CAPTURE(xgrad::to_string(shape));
            const Tensor x = randn(shape, dt);
            check_op("sort", [](const Inputs& v) { return v[0].sort().values; }, {x});
            check_op("sort 0 descending", [](const Inputs& v) { return v[0].sort(0, true).values; }, {x});
            // Ties: with `stable` both devices keep them in index order (without it the CPU gives
            // PyTorch's CPU order, the GPU index order).
            check_op("argsort ties", [](const Inputs& v) { return v[0].clamp(-0.3, 0.3).argsort(-1, true, true); },
                     {x});
            check_op("topk", [](const Inputs& v) { return v[0].topk(1, -1).values; }, {x});
            check_op("topk smallest 0", [](const Inputs& v) { return v[0].topk(2, 0, false).values; }, {x});
            check_op("topk indices", [](const Inputs& v) { return v[0].topk(1, 0).indices; }, {x});
            check_op("kthvalue", [](const Inputs& v) { return v[0].kthvalue(1, -1).values; }, {x});
            check_op("median", [](const Inputs& v) { return v[0].median(0, true).values; }, {x});
            check_op("median indices", [](const Inputs& v) { return v[0].median(-1).indices; }, {x});
            check_op("median of all", [](const Inputs& v) { return v[0].median(); }, {x});
            check_op("nanmedian", [](const Inputs& v) { return v[0].nanmedian(-1).values; }, {x});
            check_op("mode of distinct values", [](const Inputs& v) { return v[0].mode(-1).values; }, {x});
            // Ties: the same values; the indices of equal values may differ (the CPU's are PyTorch's).
            check_op("mode with ties", [](const Inputs& v) { return (v[0] * 2.0).round().mode(0, true).values; }, {x});
            check_op("nanmedian of all", [](const Inputs& v) { return v[0].nanmedian(); }, {x});
            // Composed of sort, gather and lerp: the CUDA kernels of those, and their gradients.
            check_op("quantile", [](const Inputs& v) { return v[0].quantile(0.3, -1); }, {x});
            check_op("quantile vector, all elements",
                     [](const Inputs& v) {
                         return v[0].quantile(xgrad::tensor({0.1, 0.9}).to(v[0].dtype()).to(v[0].device()));
                     },
                     {x});
            check_op("nanquantile nearest", [](const Inputs& v) { return v[0].nanquantile(0.6, 0, true, "nearest"); },
                     {x});
        }
    }
    const Tensor nan = xgrad::tensor({{1.0, NAN, -2.0, NAN, 0.5}, {NAN, NAN, NAN, NAN, NAN}});
    check_op("sort with NaN", [](const Inputs& v) { return v[0].sort(-1).values; }, {nan});
    check_op("argsort with NaN", [](const Inputs& v) { return v[0].argsort(-1, true, true); }, {nan});
    check_op("nanmedian with NaN", [](const Inputs& v) { return v[0].nanmedian(-1).indices; }, {nan});
    check_op("nanquantile with NaN", [](const Inputs& v) { return v[0].nanquantile(0.5, -1); }, {nan});
    // One wide row (CUB's device-wide radix sort) and many rows (its segmented sort), with ties, both
    // zeros and NaN; int64 keys too.
    xgrad::manual_seed(17);
    for (xgrad::DType dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        Tensor wide = (randn({1, 300000}, dt) * 8.0).round() / 8.0;
        wide.narrow(1, 0, 1000).fill_(-0.0);
        wide.narrow(1, 5000, 7).fill_(NAN);
        check_op("argsort of a wide row, stable", [](const Inputs& v) { return v[0].argsort(-1, false, true); },
                 {wide});
        check_op("sort of a wide row, descending, stable",
                 [](const Inputs& v) { return v[0].sort(-1, true, true).values; }, {wide});
        // Without ties: the CPU's topk orders ties as PyTorch's CPU does, the GPU in index order.
        check_op("topk of a wide row", [](const Inputs& v) { return v[0].topk(50).values; }, {randn({1, 300000}, dt)});
        check_op("argsort of many rows, stable", [](const Inputs& v) { return v[0].argsort(-1, true, true); },
                 {wide.reshape({3000, 100})});
        check_op("median of a wide row", [](const Inputs& v) { return v[0].nanmedian(); }, {wide});
    }
    // unique: a stable sort, then runs (so the same first-of-equals on both devices).
    const Tensor rounded = (randn({50, 40}, xgrad::kFloat64) * 4.0).round();
    check_op("unique values", [](const Inputs& v) { return xgrad::unique(v[0]).values; }, {rounded});
    check_op("unique inverse", [](const Inputs& v) { return xgrad::unique(v[0], true, true).inverse; }, {rounded});
    check_op("unique counts", [](const Inputs& v) { return xgrad::unique(v[0], true, false, true).counts; }, {rounded});
    check_op("unique_consecutive counts",
             [](const Inputs& v) { return xgrad::unique_consecutive(v[0].sort(0).values, true, true).counts; },
             {rounded});
    const Tensor ints = (randn({40, 1000}, xgrad::kFloat64) * 30.0).round().to(xgrad::kInt64);
    check_op("int64 argsort, stable", [](const Inputs& v) { return v[0].argsort(-1, false, true); }, {ints});
    check_op("int64 sort of one row, descending", [](const Inputs& v) { return v[0].flatten().sort(0, true).values; },
             {ints});
    // searchsorted / bucketize: one thread per value bisects its row (or the one shared row).
    for (xgrad::DType dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        Tensor values = (randn({30, 500}, dt) * 4.0).round() / 4.0;
        values.narrow(1, 0, 3).fill_(NAN);
        const Tensor rows = ((randn({30, 64}, dt) * 4.0).round() / 4.0).sort(-1).values;
        check_op("searchsorted of shared boundaries",
                 [](const Inputs& v) { return xgrad::searchsorted(v[1][0], v[0]); }, {values, rows});
        check_op("searchsorted by rows, right, int32",
                 [](const Inputs& v) {
                     return xgrad::searchsorted(v[1], v[0], {.right = true, .out_int32 = true}).to(xgrad::kInt64);
                 },
                 {values, rows});
        check_op("searchsorted with a sorter",
                 [](const Inputs& v) { return xgrad::searchsorted(v[1], v[0], {.sorter = v[1].argsort(-1)}); },
                 {values, rows.flip({1})});
        check_op("bucketize", [](const Inputs& v) { return xgrad::bucketize(v[0], v[1][3], {.right = true}); },
                 {values, rows});
        check_op("aminmax",
                 [](const Inputs& v) {
                     auto r = xgrad::aminmax(v[0], 1);
                     return r.max - r.min;
                 },
                 {values.nan_to_num()});
        check_op("var_mean",
                 [](const Inputs& v) {
                     auto [var, mean] = xgrad::var_mean(v[0], 0);
                     return var * mean;
                 },
                 {randn({7, 5}, dt)});
        check_op("cdist, direct", [](const Inputs& v) { return xgrad::cdist(v[0], v[1], 1.5); },
                 {randn({2, 5, 4}, dt), randn({7, 4}, dt)});
        check_op(
            "cdist, matrix product", [](const Inputs& v) { return xgrad::cdist(v[0], v[1]); },
            {randn({40, 6}, dt), randn({9, 6}, dt)}, dt == xgrad::kFloat32 ? 1e-4 : 0);
        check_op("kron", [](const Inputs& v) { return xgrad::kron(v[0], v[1]); },
                 {randn({2, 3}, dt), randn({4, 1, 2}, dt)});
    }
    check_op("int64 searchsorted",
             [](const Inputs& v) { return xgrad::searchsorted(v[0].flatten().sort(0).values, v[0]); }, {ints});
}

TEST_CASE("shape ops, copies and conversions") {
    xgrad::manual_seed(5);
    for (auto dt : kDtypes) {
        const Tensor x = randn({2, 3, 4}, dt), y = randn({2, 3, 4}, dt);
        check_op("views",
                 [](const Inputs& v) {
                     return v[0].permute({2, 0, 1}).reshape({4, 6}).t().contiguous();
                 },
                 {x});
        check_op("view ops",
                 [](const Inputs& v) { return v[0].unsqueeze(1).squeeze(1).flatten(1).narrow(1, 2, 5).select(0, 1); },
                 {x});
        check_op("expand", [](const Inputs& v) { return v[0].slice(0, 0, 1).expand({3, 3, 4}).clone(); }, {x});
        check_op("cat",
                 [](const Inputs& v) {
                     return xgrad::cat({v[0], v[1].transpose(1, 2).transpose(1, 2)}, 1);
                 },
                 {x, y});
        check_op("stack", [](const Inputs& v) { return xgrad::stack({v[0], v[1]}, -1); }, {x, y});
        check_op(
            "to other dtype", [](const Inputs& v) { return v[0].to(xgrad::kFloat64).to(xgrad::kFloat32); }, {x},
            kTol32);
        check_op("to device inside", [](const Inputs& v) { return v[0].cpu().exp().to(v[0].device()) * v[0]; }, {x});
    }
}

TEST_CASE("indexing: gather and scatter kernels, and the ops and shape ops built on them") {
    xgrad::manual_seed(11);
    const auto longs = [](std::vector<std::int64_t> v, Shape shape) {
        return xgrad::from_vector(v, shape, xgrad::kInt64);
    };
    for (auto dt : kDtypes) {
        const Tensor x = randn({3, 4}, dt), s = randn({3, 4}, dt), big = randn({4, 3, 5}, dt);
        const Tensor rows = longs({2, 0, 2, 2, 2, 0, 1, 2, 2, 1, 1, 0}, {3, 4});
        const Tensor sel = longs({2, 0, 2, 1}, {4});
        check_op("gather", [](const Inputs& v) { return v[0].gather(0, v[1]); }, {x, rows});
        check_op("gather strided", [](const Inputs& v) { return v[0].t().gather(1, v[1].t().narrow(1, 0, 2)); },
                 {x, rows});
        check_op("scatter", [](const Inputs& v) { return v[0].scatter(1, v[2].narrow(0, 0, 1).narrow(1, 0, 1), v[1]); },
                 {x, s, rows});
        check_op("scatter value", [](const Inputs& v) { return v[0].scatter(0, v[1], -1.5); }, {x, rows});
        // Repeated indices: atomic sums on the GPU, within rounding of the CPU's ordered sums.
        check_op("scatter_add", [](const Inputs& v) { return v[0].scatter_add(0, v[2], v[1]); }, {x, s, rows});
        check_op("index_select", [](const Inputs& v) { return v[0].index_select(1, v[1]); }, {big, sel});
        check_op("index_add", [](const Inputs& v) { return v[0].index_add(0, v[2], v[1], 0.5); },
                 {big, randn({4, 3, 5}, dt), sel});
        check_op("x[idx]", [](const Inputs& v) { return v[0].index({v[1].view({2, 2})}); }, {big, sel});
        check_op("x[i, j]", [](const Inputs& v) { return v[0].index({v[1], v[1].flip({0}) - 1}); }, {big, sel});
        check_op("embedding", [](const Inputs& v) { return F::embedding(v[1].view({2, 2}), v[0], 2); }, {x, sel});
        check_op("flip", [](const Inputs& v) { return v[0].flip({0, 2}); }, {big});
        check_op("roll", [](const Inputs& v) { return v[0].roll({1, -2}, {0, 2}); }, {big});
        check_op("repeat", [](const Inputs& v) { return v[0].repeat({2, 1, 1, 2}); }, {big});
        check_op("repeat_interleave", [](const Inputs& v) { return v[0].repeat_interleave(2, 1); }, {big});
        check_op("tril", [](const Inputs& v) { return v[0].tril(1) + v[0].triu(-1); }, {big});
        check_op("diag", [](const Inputs& v) { return v[0].diag(1).diag(); }, {x});
        check_op("split", [](const Inputs& v) { return v[0].split(2, 2)[1] * v[0].chunk(3, 2)[0]; }, {big});
        check_op("pad constant", [](const Inputs& v) { return F::pad(v[0], {1, 2, -1, 1}, "constant", 0.5); }, {big});
        check_op("pad reflect",
                 [](const Inputs& v) {
                     return F::pad(v[0], {2, 1, 1, 2}, "reflect");
                 },
                 {big.unsqueeze(0)});
        check_op("pad replicate", [](const Inputs& v) { return F::pad(v[0], {3, 1}, "replicate"); }, {big});
    }
    const Tensor classes = xgrad::from_vector(std::vector<std::int64_t>{0, 3, 1, 1}, {4}, xgrad::kInt64);
    check_match(F::one_hot(classes.to(kGpu), 5), F::one_hot(classes, 5), "one_hot", 0);
    check_match(xgrad::eye(3, 4, TensorOptions{.device = kGpu}), xgrad::eye(3, 4), "eye", 0);
    check_match(xgrad::linspace(-1, 2, 37, TensorOptions{.device = kGpu}), xgrad::linspace(-1, 2, 37), "linspace", 0);
    // An index out of range is refused before any kernel runs, on the GPU as on the CPU.
    const Tensor xg = randn({3, 4}, xgrad::kFloat32).to(kGpu);
    CHECK(golden::invalid_argument_of([&] { xg.index_select(0, classes.to(kGpu)); }) ==
          "index_select: index out of range in self");
}

TEST_CASE("matmul through cuBLAS: 1-D, 2-D, transposed, batched and broadcast") {
    xgrad::manual_seed(6);
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        const double tol = dt == xgrad::kFloat32 ? kTolMatmul : kTol64;
        const Tensor a = randn({5, 7}, dt), b = randn({7, 3}, dt), w = randn({3, 7}, dt);
        const Tensor v = randn({7}, dt), batch = randn({2, 4, 5, 7}, dt), bb = randn({4, 7, 3}, dt);
        check_op(
            "2-D", [](const Inputs& t) { return xgrad::matmul(t[0], t[1]); }, {a, b}, tol);
        check_op(
            "x W^T", [](const Inputs& t) { return t[0].matmul(t[1].t()); }, {a, w}, tol);
        check_op(
            "A^T B^T", [](const Inputs& t) { return t[0].t().matmul(t[1].t()); }, {b, w}, tol);
        check_op(
            "vector right", [](const Inputs& t) { return t[0].matmul(t[1]); }, {a, v}, tol);
        check_op(
            "vector left", [](const Inputs& t) { return t[1].matmul(t[0]); }, {b, v}, tol);
        check_op(
            "dot", [](const Inputs& t) { return t[0].matmul(t[0]); }, {v}, tol);
        check_op(
            "batched x 2-D (folded)", [](const Inputs& t) { return t[0].matmul(t[1]); }, {batch, b}, tol);
        check_op(
            "broadcast batches", [](const Inputs& t) { return t[0].matmul(t[1]); }, {batch, bb}, tol);
        check_op(
            "strided batch", [](const Inputs& t) { return t[0].transpose(0, 1).matmul(t[1].transpose(-1, -2)); },
            {batch, randn({4, 2, 3, 7}, dt)}, tol);
        check_op(
            "sliced operand", [](const Inputs& t) { return t[0].slice(1, 1, 6).matmul(t[1].slice(0, 1, 6)); }, {a, b},
            tol);
        check_op(
            "empty inner dim", [](const Inputs& t) { return t[0].slice(1, 0, 0).matmul(t[1].slice(0, 0, 0)); }, {a, b},
            tol);
        check_op(
            "linear", [](const Inputs& t) { return F::linear(t[0], t[1], t[2]); }, {batch, w, randn({3}, dt)}, tol);
    }
    if (kRealGpu) {  // the CPU multiplies int64 matrices; cuBLAS does not
        Tensor i = xgrad::arange(6.0, xgrad::kInt64).reshape({2, 3});
        golden::check_throws([&] { (void)xgrad::matmul(i.to(kGpu), i.t().to(kGpu)); }, {"matmul", "int64"});
    }
}

TEST_CASE("softmax, log_softmax and the losses") {
    xgrad::manual_seed(7);
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        for (Shape shape : {Shape{4, 10}, Shape{3, 3000}, Shape{2, 3, 5}}) {
            const Tensor x = randn(shape, dt) * 3.0;
            check_op("softmax", [](const Inputs& v) { return F::softmax(v[0], -1); }, {x});
            check_op("log_softmax", [](const Inputs& v) { return F::log_softmax(v[0], -1); }, {x});
            check_op("softmax 0", [](const Inputs& v) { return F::softmax(v[0], 0); }, {x});
        }
        const Tensor logits = randn({6, 5}, dt), target = xgrad::tensor({0.0, 4.0, 2.0, 2.0, 1.0, 3.0}, xgrad::kInt64);
        const Tensor weight = positive({5}, dt), y = randn({6, 5}, dt), p = xgrad::rand({6, 5}, dt);
        check_op("cross_entropy", [](const Inputs& v) { return F::cross_entropy(v[0], v[1]); }, {logits, target});
        check_op("cross_entropy weighted, ignored, smoothed",
                 [](const Inputs& v) {
                     return F::cross_entropy(v[0], v[1], {.weight = v[2], .ignore_index = 2, .label_smoothing = 0.1});
                 },
                 {logits, target, weight});
        check_op("cross_entropy none",
                 [](const Inputs& v) { return F::cross_entropy(v[0], v[1], {.reduction = F::Reduction::kNone}); },
                 {logits, target});
        check_op("cross_entropy (N, C, L)",
                 [](const Inputs& v) {
                     return F::cross_entropy(v[0].reshape({2, 5, 3}), v[1].reshape({2, 3}));
                 },
                 {randn({30}, dt), target});
        check_op("cross_entropy probabilities", [](const Inputs& v) { return F::cross_entropy(v[0], v[1]); },
                 {logits, F::softmax(p, -1)});
        check_op("nll_loss sum",
                 [](const Inputs& v) { return F::nll_loss(v[0], v[1], {.reduction = F::Reduction::kSum}); },
                 {logits, target});
        check_op("mse_loss", [](const Inputs& v) { return F::mse_loss(v[0], v[1]); }, {logits, y});
        check_op("l1_loss", [](const Inputs& v) { return F::l1_loss(v[0], v[1]); }, {logits, y});
        check_op("cosine_similarity", [](const Inputs& v) { return F::cosine_similarity(v[0], v[1]); }, {logits, y});
        check_op("cosine_similarity table",
                 [](const Inputs& v) { return F::cosine_similarity(v[0].unsqueeze(1), v[1].unsqueeze(0), -1); },
                 {logits, y});
        check_op("pairwise_distance", [](const Inputs& v) { return F::pairwise_distance(v[0], v[1], 3.0); },
                 {logits, y});
        check_op("prelu per channel", [](const Inputs& v) { return F::prelu(v[0], v[1]); }, {logits, weight});
        check_op("glu", [](const Inputs& v) { return F::glu(v[0], 0); }, {logits});
        check_op("bce with logits",
                 [](const Inputs& v) {
                     return F::binary_cross_entropy_with_logits(v[0], v[1], {.weight = v[2], .pos_weight = v[2]});
                 },
                 {logits, p, weight});
    }
}

TEST_CASE("LayerNorm and RMSNorm: fused kernels, forward and backward") {
    xgrad::manual_seed(8);
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        // Narrow rows (the CPU's scalar path), one warp, many warps, several chunks of rows, more than
        // 256 chunks of 64 rows, and no rows. The fast path's row groups of 32 to 512 threads holding
        // 1 to 4 vectors each (100 and 200: two; 768, 1500, 4096: the bench's widths), rows too wide
        // for it (8192 in float64) and widths of no whole number of 16-byte vectors (30 in float32)
        // take the general kernels.
        for (Shape shape :
             {Shape{5, 3}, Shape{4, 7, 32}, Shape{3, 1000}, Shape{300, 40}, Shape{20000, 8}, Shape{2, 0}, Shape{7, 100},
              Shape{7, 200}, Shape{33, 768}, Shape{5, 1500}, Shape{6, 4096}, Shape{3, 8192}, Shape{9, 30}}) {
            CAPTURE(xgrad::to_string(shape));
            const std::int64_t width = shape[shape.size() - 1];
            const Tensor x = randn(shape, dt) * 2.0 + 0.5, w = randn({width}, dt), b = randn({width}, dt);
            check_op("layer_norm", [width](const Inputs& v) { return F::layer_norm(v[0], {width}, v[1], v[2]); },
                     {x, w, b});
            check_op("layer_norm, no affine", [width](const Inputs& v) { return F::layer_norm(v[0], {width}); }, {x});
            check_op("layer_norm, weight only",
                     [width](const Inputs& v) { return F::layer_norm(v[0], {width}, v[1], Tensor(), 1e-3); }, {x, w});
            check_op("rms_norm", [width](const Inputs& v) { return F::rms_norm(v[0], {width}, v[1]); }, {x, w});
            check_op("rms_norm, no weight", [width](const Inputs& v) { return F::rms_norm(v[0], {width}); }, {x});
            const std::int64_t first = shape[0];
            check_op("layer_norm of a strided input",
                     [first](const Inputs& v) { return F::layer_norm(v[0].transpose(0, -1), {first}, v[1]); },
                     {x, randn({first}, dt)});
        }
        // Tensors too large for L2 (x and y of 96 MB, where an H100's or H200's L2 holds 50 MB) take
        // the streaming forward kernel: rows of 768 (groups of 64 threads in float32, 128 in float64)
        // and, in float32, of 6144 (groups of 512).
        if (kRealGpu) {
            const std::vector<Shape> large = dt == xgrad::kFloat32 ? std::vector<Shape>{{16384, 768}, {2048, 6144}}
                                                                   : std::vector<Shape>{{8192, 768}};
            for (const Shape& shape : large) {
                CAPTURE(xgrad::to_string(shape));
                const std::int64_t width = shape[1];
                const Tensor x = randn(shape, dt) * 2.0 + 0.5, w = randn({width}, dt), b = randn({width}, dt);
                check_op("layer_norm, streaming",
                         [width](const Inputs& v) { return F::layer_norm(v[0], {width}, v[1], v[2]); }, {x, w, b});
                check_op("rms_norm, streaming", [width](const Inputs& v) { return F::rms_norm(v[0], {width}, v[1]); },
                         {x, w});
            }
        }
        // A view at an odd offset: rows not aligned to 16 bytes take the general kernels.
        check_op("layer_norm of a view at an odd offset",
                 [](const Inputs& v) {
                     return F::layer_norm(v[0].flatten().narrow(0, 1, 8 * 64).view({8, 64}), {64}, v[1], v[2]);
                 },
                 {randn({8 * 64 + 1}, dt), randn({64}, dt), randn({64}, dt)});
        check_op("rms_norm of a view at an odd offset",
                 [](const Inputs& v) {
                     return F::rms_norm(v[0].flatten().narrow(0, 1, 8 * 64).view({8, 64}), {64}, v[1]);
                 },
                 {randn({8 * 64 + 1}, dt), randn({64}, dt)});
        const Tensor x = randn({4, 3, 5}, dt);
        check_op("layer_norm over two dims",
                 [](const Inputs& v) {
                     return F::layer_norm(v[0], {3, 5}, v[1], v[2]);
                 },
                 {x, randn({3, 5}, dt), randn({3, 5}, dt)});
    }
}

TEST_CASE("convolution, pooling and batch/group norm: im2col/col2im and pooling kernels") {
    xgrad::manual_seed(9);
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        const double tol = dt == xgrad::kFloat64 ? kTol64 : kTolMatmul;
        const Tensor x = randn({2, 4, 9, 7}, dt), w = randn({6, 2, 3, 2}, dt), b = randn({6}, dt);
        check_op(
            "conv2d, stride, padding, dilation, groups",
            [](const Inputs& v) {
                return F::conv2d(v[0], v[1], v[2], {2, 1}, {1, 2}, {2, 1}, 2);
            },
            {x, w, b}, tol);
        check_op(
            "conv2d of a strided input", [](const Inputs& v) { return F::conv2d(v[0].transpose(2, 3), v[1]); },
            {x, randn({3, 4, 3, 3}, dt)}, tol);
        check_op(
            "conv1d", [](const Inputs& v) { return F::conv1d(v[0], v[1], v[2], 2, 1); },
            {randn({3, 4, 11}, dt), randn({5, 4, 3}, dt), randn({5}, dt)}, tol);
        // A large batch: more elements than one grid covers.
        check_op(
            "conv2d, many images", [](const Inputs& v) { return F::conv2d(v[0], v[1], Tensor(), 1, 1); },
            {randn({64, 3, 32, 32}, dt), randn({4, 3, 3, 3}, dt)}, tol);
        check_op("max_pool2d", [](const Inputs& v) { return F::max_pool2d(v[0], 3, 2, 1); }, {x});
        check_op("max_pool2d, overlapping windows",
                 [](const Inputs& v) {
                     return F::max_pool2d(v[0], {3, 2}, 1);
                 },
                 {x});
        check_op("avg_pool2d", [](const Inputs& v) { return F::avg_pool2d(v[0], 3, 2, 1); }, {x});
        check_op("avg_pool2d without padded zeros",
                 [](const Inputs& v) { return F::avg_pool2d(v[0], 3, 1, 1, false, false); }, {x});
        check_op("max_pool2d, dilation and ceil_mode",
                 [](const Inputs& v) {
                     return F::max_pool2d(v[0], {3, 2}, 2, 1, {2, 1}, true);
                 },
                 {x});
        check_op("avg_pool2d, ceil_mode without padded zeros",
                 [](const Inputs& v) { return F::avg_pool2d(v[0], 3, 2, 1, true, false); }, {x});
        check_op("avg_pool2d, ceil_mode and divisor_override",
                 [](const Inputs& v) { return F::avg_pool2d(v[0], 2, 2, 0, true, true, 3); }, {x});
        check_op(
            "conv2d, padding \"same\" with an even kernel, circular pad",
            [](const Inputs& v) {
                return F::conv2d(F::pad(v[0], {1, 2, 0, 1}, "circular"), v[1], v[2], 1, "same");
            },
            {x, randn({6, 4, 2, 3}, dt), randn({6}, dt)}, tol);
        check_op("adaptive_avg_pool2d", [](const Inputs& v) { return F::adaptive_avg_pool2d(v[0], {4, 5}); }, {x});
        check_op("adaptive_avg_pool2d upsampling",
                 [](const Inputs& v) {
                     return F::adaptive_avg_pool2d(v[0], {11, 9});
                 },
                 {x});
        check_op("batch_norm (training)",
                 [](const Inputs& v) { return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); },
                 {x, randn({4}, dt), randn({4}, dt)});
        check_op("group_norm", [](const Inputs& v) { return F::group_norm(v[0], 2, v[1], v[2]); },
                 {x, randn({4}, dt), randn({4}, dt)});
        check_op("group_norm without weight and bias", [](const Inputs& v) { return F::group_norm(v[0], 4); }, {x});
        check_op("group_norm, weight alone", [](const Inputs& v) { return F::group_norm(v[0], 1, v[1]); },
                 {x, randn({4}, dt)});
        check_op("batch_norm (2-D, training)",
                 [](const Inputs& v) { return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); },
                 {randn({9, 6}, dt), randn({6}, dt), randn({6}, dt)});
        check_op("batch_norm (evaluation)",
                 [](const Inputs& v) { return F::batch_norm(v[0], v[3], v[4], v[1], v[2], false); },
                 {x, randn({4}, dt), randn({4}, dt), randn({4}, dt), xgrad::rand({4}, dt) + 0.5});
        // The running statistics a training step leaves behind.
        for (const Shape& shape : {Shape{9, 6}, Shape{3, 6, 5, 4}}) {
            const Tensor in = randn(shape, dt);
            Tensor rm = xgrad::zeros({6}, dt), rv = xgrad::ones({6}, dt);
            Tensor rm_gpu = rm.to(kGpu), rv_gpu = rv.to(kGpu);
            F::batch_norm(in, rm, rv, Tensor(), Tensor(), true, 0.3);
            F::batch_norm(in.to(kGpu), rm_gpu, rv_gpu, Tensor(), Tensor(), true, 0.3);
            check_match(rm_gpu, rm, "batch_norm running_mean", tol_for(dt));
            check_match(rv_gpu, rv, "batch_norm running_var", tol_for(dt));
        }
        for (const double p : {2.0, 1.0, 0.5, 3.0, std::numeric_limits<double>::infinity()})
            check_op("cdist, direct, p = " + std::to_string(p),
                     [p](const Inputs& v) {
                         return xgrad::cdist(xgrad::cat({v[0], v[1].narrow(0, 0, 1)}), v[1], p,
                                             "donot_use_mm_for_euclid_dist");
                     },
                     {randn({5, 7}, dt), randn({4, 7}, dt)});
    }
}

TEST_CASE("gradcheck runs on the GPU") {
    xgrad::manual_seed(9);
    const Tensor x = randn({3, 4}, xgrad::kFloat64).to(kGpu).requires_grad_(true);
    golden::check_gradcheck([](const Inputs& v) { return F::layer_norm(v[0], {4}).tanh().sum(-1); }, {x},
                            "layer_norm on the GPU");
}

// ---- modules and training ------------------------------------------------------------------------------------------

namespace {

/// The parameters of two copies of one model agree.
void check_params(nn::Module& gpu, nn::Module& cpu, const std::string& what, double tol) {
    auto g = gpu.named_parameters(), c = cpu.named_parameters();
    REQUIRE(g.size() == c.size());
    for (std::size_t i = 0; i < g.size(); ++i)
        check_match(g[i].second.detach(), c[i].second.detach(), what + " " + c[i].first, tol);
}

struct Classifier : nn::Module {
    nn::Linear fc1{10, 32};
    nn::LayerNorm ln{Shape{32}};
    nn::GELU act;
    nn::Linear fc2{32, 5};
    Classifier() {
        register_module("fc1", fc1);
        register_module("ln", ln);
        register_module("act", act);
        register_module("fc2", fc2);
    }
    Tensor forward(const Tensor& x) override { return fc2(act(ln(fc1(x)))); }
};

}  // namespace

TEST_CASE("modules on the GPU compute what they compute on the CPU") {
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        xgrad::manual_seed(10);
        nn::Sequential cpu(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 8), nn::Tanh(), nn::RMSNorm(1), nn::Linear(8, 3),
                           nn::Sigmoid());
        xgrad::manual_seed(10);
        nn::Sequential gpu(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 8), nn::Tanh(), nn::RMSNorm(1), nn::Linear(8, 3),
                           nn::Sigmoid());
        cpu.to(dt);
        gpu.to(dt);
        gpu.to(kGpu);
        for (auto& [name, p] : gpu.named_parameters()) CHECK(p.device() == kGpu);
        const Tensor x = randn({4, 6}, dt);
        Tensor yc = cpu(x), yg = gpu(x.to(kGpu));
        check_match(yg, yc, "Sequential forward", dt == xgrad::kFloat32 ? kTolMatmul : kTol64);
        yc.sum().backward();
        yg.sum().backward();
        for (auto& [name, p] : gpu.named_parameters()) CHECK(p.grad().device() == kGpu);
        check_params(gpu, cpu, "Sequential", dt == xgrad::kFloat32 ? kTolMatmul : kTol64);
    }
    // Dropout draws its mask on the CPU: the same seed masks the same elements on both devices.
    const Tensor x = randn({8, 16}, xgrad::kFloat32);
    nn::Dropout drop(0.3);
    xgrad::manual_seed(11);
    Tensor dc = drop(x);
    xgrad::manual_seed(11);
    Tensor dg = drop(x.to(kGpu));
    check_match(dg, dc, "dropout", kTol32);
}

namespace {

/// Trains `model` on fixed data for `steps` Adam steps on `device`; returns the losses.
std::vector<double> train(nn::Module& model, optim::Optimizer& opt, xgrad::Device device, int steps) {
    xgrad::manual_seed(12);
    const Tensor x = xgrad::randn({16, 10}, model.parameters()[0].dtype()).to(device);
    const Tensor y = xgrad::randint(0, 5, {16}).to(device);
    std::vector<double> losses;
    for (int step = 0; step < steps; ++step) {
        opt.zero_grad();
        Tensor loss = F::cross_entropy(model(x), y);
        loss.backward();
        opt.step();
        losses.push_back(loss.item<double>());
    }
    return losses;
}

}  // namespace

TEST_CASE("a training loop on the GPU follows the CPU's (Linear, LayerNorm, cross_entropy, Adam)") {
    for (auto dt : kDtypes) {
        CAPTURE(xgrad::to_string(dt));
        const double tol = dt == xgrad::kFloat32 ? 1e-4 : 1e-10;
        xgrad::manual_seed(13);
        Classifier cpu;
        xgrad::manual_seed(13);
        Classifier gpu;
        cpu.to(dt);
        gpu.to(dt);
        optim::Adam opt_c(cpu.parameters(), {.lr = 1e-3});
        optim::Adam opt_g(gpu.parameters(), {.lr = 1e-3});  // built before the move: it follows
        gpu.to(kGpu);
        auto lc = train(cpu, opt_c, xgrad::kCPU, 20);
        auto lg = train(gpu, opt_g, kGpu, 20);
        for (std::size_t i = 0; i < lc.size(); ++i)
            CHECK(std::abs(lg[i] - lc[i]) <= tol * std::max(1.0, std::abs(lc[i])));
        check_params(gpu, cpu, "after 20 steps", tol);
        // Back to the CPU and on: the optimizer's state follows its parameters again.
        gpu.to(xgrad::kCPU);
        for (auto& [name, p] : gpu.named_parameters()) CHECK(p.device() == xgrad::kCPU);
        train(cpu, opt_c, xgrad::kCPU, 5);
        train(gpu, opt_g, xgrad::kCPU, 5);
        auto g = gpu.named_parameters(), c = cpu.named_parameters();
        for (std::size_t i = 0; i < g.size(); ++i)
            golden::check_close(g[i].second.detach(), c[i].second.detach(), "back on the CPU " + c[i].first, tol, tol);
    }
}

TEST_CASE("SGD with momentum and AdamW with amsgrad step on the GPU as on the CPU") {
    xgrad::manual_seed(14);
    Classifier cpu;
    xgrad::manual_seed(14);
    Classifier gpu;
    gpu.to(kGpu);
    optim::SGD sgd_c(cpu.fc1.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
    optim::SGD sgd_g(gpu.fc1.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
    optim::AdamW adamw_c(cpu.fc2.parameters(), {.lr = 1e-2, .amsgrad = true});
    optim::AdamW adamw_g(gpu.fc2.parameters(), {.lr = 1e-2, .amsgrad = true});
    const Tensor x = xgrad::randn({8, 10}), y = xgrad::randint(0, 5, {8});
    for (int step = 0; step < 5; ++step) {
        for (auto* o : std::vector<optim::Optimizer*>{&sgd_c, &sgd_g, &adamw_c, &adamw_g}) o->zero_grad();
        F::cross_entropy(cpu(x), y).backward();
        F::cross_entropy(gpu(x.to(kGpu)), y.to(kGpu)).backward();
        for (auto* o : std::vector<optim::Optimizer*>{&sgd_c, &sgd_g, &adamw_c, &adamw_g}) o->step();
    }
    check_params(gpu, cpu, "SGD and AdamW", kTolMatmul);
}

TEST_CASE(
    "SGD's fused kernel gives the CPU kernel's bits on the GPU (momentum, dampening, decay, nesterov, maximize)") {
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        for (bool nesterov : {false, true}) {
            INFO(dtype << (nesterov ? ", nesterov" : ", dampening 0.1, maximize"));
            xgrad::manual_seed(16);
            Tensor cpu = xgrad::randn({1000}, dtype).requires_grad_();
            Tensor gpu = cpu.detach().clone().to(kGpu).requires_grad_();  // its own storage, also where kGpu is the CPU
            const optim::SGDOptions o{.lr = 0.03,
                                      .momentum = 0.9,
                                      .dampening = nesterov ? 0.0 : 0.1,
                                      .weight_decay = 0.01,
                                      .nesterov = nesterov,
                                      .maximize = !nesterov};
            optim::SGD sgd_c({cpu}, o), sgd_g({gpu}, o);
            for (int step = 0; step < 4; ++step) {
                const Tensor g = xgrad::randn({1000}, dtype);
                cpu.mutable_grad() = g;
                gpu.mutable_grad() = g.to(kGpu);
                sgd_c.step();
                sgd_g.step();
            }
            CHECK(gpu.to(xgrad::kCPU).to_vector<double>() == cpu.to_vector<double>());
            CHECK(sgd_g.state(0).momentum_buffer.to(xgrad::kCPU).to_vector<double>() ==
                  sgd_c.state(0).momentum_buffer.to_vector<double>());
        }
    }
}

TEST_CASE("a model saved from the GPU loads on the CPU, and back") {
    const std::string path = (std::filesystem::temp_directory_path() / "xgrad_test_cuda.safetensors").string();
    xgrad::manual_seed(15);
    Classifier gpu;
    gpu.to(kGpu);
    {
        xgrad::NoGradGuard no_grad;
        gpu.fc1.weight.mul_(2.0);  // an update made on the GPU
    }
    xgrad::save(gpu, path);
    Classifier cpu;
    xgrad::load(cpu, path);
    auto g = gpu.named_parameters(), c = cpu.named_parameters();
    for (std::size_t i = 0; i < g.size(); ++i) {
        CHECK(c[i].second.device() == xgrad::kCPU);
        CHECK(c[i].second.to_vector<float>() == g[i].second.to_vector<float>());
    }
    Classifier back;
    back.to(kGpu);
    xgrad::load(back, path);  // loads into parameters that live on the GPU
    CHECK(back.fc1.weight.device() == kGpu);
    CHECK(back.fc1.weight.to_vector<float>() == gpu.fc1.weight.to_vector<float>());
    std::remove(path.c_str());
}

// ---- comparisons and logical ops (issue 11) ----------------------------------------------------------------
TEST_CASE("comparisons, logical ops, isnan family, any/all and isclose: the compare kernel against the CPU's") {
    xgrad::manual_seed(17);
    const double nan = std::nan(""), inf = INFINITY;
    using Pair = std::function<Tensor(const Tensor&, const Tensor&)>;
    const std::vector<std::pair<std::string, Pair>> ops = {
        {"eq", [](const Tensor& a, const Tensor& b) { return a == b; }},
        {"ne", [](const Tensor& a, const Tensor& b) { return a != b; }},
        {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }},
        {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }},
        {"gt", [](const Tensor& a, const Tensor& b) { return a > b; }},
        {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }},
        {"logical_and", [](const Tensor& a, const Tensor& b) { return a.logical_and(b); }},
        {"logical_or", [](const Tensor& a, const Tensor& b) { return a.logical_or(b); }},
        {"logical_xor", [](const Tensor& a, const Tensor& b) { return a.logical_xor(b); }},
        {"isnan", [](const Tensor& a, const Tensor&) { return a.isnan(); }},
        {"isinf", [](const Tensor& a, const Tensor&) { return a.isinf(); }},
        {"isposinf", [](const Tensor& a, const Tensor&) { return a.isposinf(); }},
        {"isneginf", [](const Tensor& a, const Tensor&) { return a.isneginf(); }},
        {"isfinite", [](const Tensor& a, const Tensor&) { return a.isfinite(); }},
        {"any(dim)", [](const Tensor& a, const Tensor&) { return a.any(1); }},
        {"all(dim)", [](const Tensor& a, const Tensor&) { return a.all(0, true); }},
        {"isclose",
         [](const Tensor& a, const Tensor& b) { return a.isclose(b.expand_as(a).to(a.dtype()), 0.5, 0.1, true); }},
    };
    // Rounded values so that ties occur, with NaN, ±inf and zeros; b broadcasts along dim 0 and a
    // transposed view is read through its strides.
    Tensor special = xgrad::tensor({nan, inf, -inf, 0.0, -0.0, 1.0});
    for (auto dt : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64, xgrad::kUInt8, xgrad::kBool}) {
        CAPTURE(xgrad::to_string(dt));
        Tensor a = xgrad::cat({(xgrad::randn({4, 6}) * 2.0).round(), special.reshape({1, 6})}).to(dt);
        Tensor b = (xgrad::randn({6}) * 2.0).round().to(dt);
        Tensor at = xgrad::cat({(xgrad::randn({6, 5}) * 2.0).round(), special.reshape({6, 1})}, 1).to(dt).t();
        for (const auto& [name, f] : ops)
            for (const auto& [left, what] : {std::pair{a, "contiguous"}, std::pair{at, "transposed"}}) {
                const std::string label = std::string(name) + ", " + what;  // clang 14: no bindings in INFO
                INFO(label);
                Tensor c = f(left, b), g = f(left.to(kGpu), b.to(kGpu));
                CHECK(g.device() == kGpu);
                CHECK(g.dtype() == c.dtype());
                CHECK(g.shape() == c.shape());
                CHECK(g.cpu().to(xgrad::kInt64).to_vector<std::int64_t>() ==
                      c.to(xgrad::kInt64).to_vector<std::int64_t>());
            }
    }
    Tensor big = xgrad::randn({70000, 3});  // more elements than one grid covers
    CHECK(((big.to(kGpu) > 0.0).cpu().to_vector<bool>()) == (big > 0.0).to_vector<bool>());
}

int main(int argc, char** argv) {
    if (kRealGpu && !xgrad::cuda::is_available()) {
        std::printf("no CUDA device: skipped\n");
        return 77;  // meson's exit code for a skipped test
    }
    doctest::Context context(argc, argv);
    return context.run();
}

// ---- selection by a mask (issue 11, branch mask) ------------------------------------------------------------
TEST_CASE("selection by a mask: the where kernel, masked_fill, nonzero, masked_select, x[mask], attention masks") {
    xgrad::manual_seed(12);
    // Random bool masks without comparisons: relu leaves zeros (false) and positives (true).
    const Tensor m = xgrad::randn({3, 4}).relu().to(xgrad::kBool), rows = xgrad::randn({3}).relu().to(xgrad::kBool);
    for (auto dt : kDtypes) {
        const Tensor x = randn({3, 4}, dt), y = randn({3, 4}, dt), col = randn({3, 1}, dt);
        check_op("where", [](const Inputs& v) { return xgrad::where(v[2], v[0], v[1]); }, {x, y, m});
        check_op("where broadcast strided", [](const Inputs& v) { return xgrad::where(v[2].t(), v[1], v[0].t()); },
                 {x, col.t(), m});
        check_op("where scalar", [](const Inputs& v) { return xgrad::where(v[1], -2.5, v[0]); }, {x, m});
        check_op("masked_fill", [](const Inputs& v) { return v[0].masked_fill(v[1], 0.75); }, {x, m});
        check_op("masked_fill tensor", [](const Inputs& v) { return v[0].masked_fill(v[2], v[1].sum()); }, {x, y, m});
        check_op("masked_select", [](const Inputs& v) { return v[0].masked_select(v[1]); }, {x, m});
        check_op("x[mask]", [](const Inputs& v) { return v[0].index({v[1]}); }, {x, rows});
        check_op("sdpa bool mask",
                 [](const Inputs& v) { return F::scaled_dot_product_attention(v[0], v[1], v[1], v[2].t()); },
                 {x.t(), randn({3, 3}, dt), m});
    }
    // Every dtype goes through the kernel (dispatch_all), and nonzero finds its positions on the host.
    for (auto dt : {xgrad::kInt64, xgrad::kInt32, xgrad::kUInt8, xgrad::kBool}) {
        const Tensor a = (xgrad::randn({3, 4}) * 5.0).abs().to(dt), c = xgrad::ones({4}).to(dt);
        check_match(xgrad::where(m.to(kGpu), a.to(kGpu), c.to(kGpu)), xgrad::where(m, a, c), "where int", 0);
    }
    check_match(m.to(kGpu).nonzero(), m.nonzero(), "nonzero", 0);
    Tensor xg = xgrad::zeros({3, 4}, TensorOptions{.device = kGpu});
    xg.index_put_({m.to(kGpu)}, 2.0);
    check_match(xg, m.to(xgrad::kFloat32) * 2.0, "index_put_", 0);
}
