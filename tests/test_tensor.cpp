// Checks the Tensor handle: metadata, element access, copies and in-place updates, as PyTorch reports them.
#include <doctest/doctest.h>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "xgrad/xgrad.hpp"

#include "../src/detail/tensor_impl.hpp"

using xgrad::Shape;
using xgrad::Tensor;

namespace {

using golden::check_throws;

Tensor arange_f(std::int64_t n, Shape shape) {
    return xgrad::arange(static_cast<double>(n)).reshape(shape);
}

}  // namespace

TEST_CASE("shape, size, dim, numel, dtype, device") {
    Tensor x = xgrad::zeros({2, 3, 4});
    CHECK(x.defined());
    CHECK(x.shape() == Shape{2, 3, 4});
    CHECK(x.sizes() == x.shape());
    CHECK(x.size(0) == 2);
    CHECK(x.size(-1) == 4);
    CHECK(x.size(-3) == 2);
    CHECK(x.dim() == 3);
    CHECK(x.numel() == 24);
    CHECK(x.dtype() == xgrad::kFloat32);
    CHECK(x.device() == xgrad::kCPU);
    CHECK(x.is_floating_point());
    CHECK_FALSE(xgrad::zeros({1}, xgrad::kInt64).is_floating_point());
    Tensor s = xgrad::tensor(1.0);
    CHECK(s.dim() == 0);
    CHECK(s.numel() == 1);
    check_throws([&] { x.size(3); }, {"size", "dimension 3", "[-3, 2]"});
    check_throws([&] { x.size(-4); }, {"size", "-4"});
    check_throws([&] { s.size(0); }, {"size", "dimension 0", "no dimensions"});  // as PyTorch
    check_throws([&] { s.size(-1); }, {"size", "dimension -1", "no dimensions"});
}

TEST_CASE("strides, storage_offset and is_contiguous, as PyTorch's stride()") {
    Tensor x = arange_f(24, {2, 3, 4});
    CHECK(x.strides() == std::vector<std::int64_t>{12, 4, 1});
    CHECK(x.storage_offset() == 0);
    CHECK(x.is_contiguous());
    Tensor t = x.transpose(0, 2);
    CHECK(t.strides() == std::vector<std::int64_t>{1, 4, 12});
    CHECK_FALSE(t.is_contiguous());
    Tensor s = x[1].slice(1, 1, 3);
    CHECK(s.storage_offset() == 13);
    CHECK(s.strides() == std::vector<std::int64_t>{4, 1});
    CHECK_FALSE(s.is_contiguous());
    CHECK(x[1].is_contiguous());
    CHECK(x.slice(0, 1, 2).is_contiguous());
    CHECK_FALSE(x.slice(1, 1, 2).is_contiguous());
    CHECK(xgrad::zeros({4, 1}).t().is_contiguous());  // strides (1, 1): a size-1 dim's stride does not matter
    CHECK(xgrad::zeros({3, 1}).expand({3, 4}).is_contiguous() == false);
    CHECK(xgrad::zeros({1, 4}).expand({1, 4}).is_contiguous());
    CHECK(xgrad::zeros({}).strides().empty());
}

TEST_CASE("item, to_vector and data_ptr") {
    Tensor x = arange_f(6, {2, 3});
    CHECK(x[1][2].item<float>() == 5.0f);
    CHECK(x[1][2].item<double>() == 5.0);
    CHECK(x[1][2].item<std::int64_t>() == 5);
    CHECK(xgrad::tensor({{-2.5}}).item<float>() == -2.5f);  // any one-element tensor
    check_throws([&] { x.item<float>(); }, {"item", "6 elements", "(2, 3)"});
    check_throws([&] { xgrad::zeros({0}).item<float>(); }, {"item", "0 elements"});

    CHECK(x.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
    CHECK(x.t().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});  // row-major order of the view
    CHECK(x.t().to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 3, 1, 4, 2, 5});
    CHECK(xgrad::tensor({0.1}, xgrad::kFloat64).to_vector<float>() == std::vector<float>{0.1f});
    CHECK(xgrad::zeros({0, 3}).to_vector<float>().empty());

    float* p = x.data_ptr<float>();
    CHECK(p[4] == 4.0f);
    p[4] = 40.0f;  // the pointer is the storage
    CHECK(x[1][1].item<float>() == 40.0f);
    CHECK(x[1].data_ptr<float>() == p + 3);
    Tensor ones64 = xgrad::ones({2}, xgrad::kFloat64), ones_i = xgrad::ones({2}, xgrad::kInt64);
    CHECK(ones64.data_ptr<double>()[1] == 1.0);
    CHECK(ones_i.data_ptr<std::int64_t>()[0] == 1);
    check_throws([&] { x.data_ptr<double>(); }, {"data_ptr", "torch.float32", "torch.float64"});
    check_throws([&] { x.data_ptr<std::int64_t>(); }, {"data_ptr", "torch.int64"});
    check_throws([&] { x.t().data_ptr<float>(); }, {"data_ptr", "(3, 2)", "not contiguous"});
}

TEST_CASE("an undefined tensor refuses metadata queries") {
    Tensor u;
    CHECK_FALSE(u.defined());
    CHECK_FALSE(u.requires_grad());
    CHECK(u.grad_fn_name().empty());
    check_throws([&] { (void)u.shape(); }, {"shape", "undefined"});
    check_throws([&] { (void)u.dtype(); }, {"dtype", "undefined"});
    check_throws([&] { u.to_vector<float>(); }, {"to_vector", "undefined"});
    check_throws([&] { u.clone(); }, {"clone", "undefined"});
}

TEST_CASE("Tensor is a handle: copies share storage and history") {
    Tensor a = xgrad::zeros({3});
    Tensor b = a;  // NOLINT: the copy is the point
    b.fill_(2.0);
    CHECK(a.to_vector<float>() == std::vector<float>{2, 2, 2});
    CHECK(a.impl() == b.impl());
    Tensor c = a.clone();
    c.fill_(5.0);
    CHECK(a.to_vector<float>() == std::vector<float>{2, 2, 2});
}

TEST_CASE("vocabulary: dtype names, shapes and options") {
    CHECK(xgrad::to_string(xgrad::kFloat32) == "torch.float32");
    CHECK(xgrad::to_string(xgrad::kFloat64) == "torch.float64");
    CHECK(xgrad::to_string(xgrad::kInt64) == "torch.int64");
    CHECK(xgrad::kDouble == xgrad::kFloat64);
    CHECK(xgrad::element_size(xgrad::kFloat32) == 4);
    CHECK(xgrad::element_size(xgrad::kFloat64) == 8);
    CHECK(xgrad::element_size(xgrad::kInt64) == 8);
    CHECK(xgrad::to_string(Shape{2, 5}) == "(2, 5)");
    CHECK(xgrad::to_string(Shape{3}) == "(3,)");
    CHECK(xgrad::to_string(Shape{}) == "()");
    std::ostringstream os;
    os << Shape{2, 5} << " " << Shape{} << " " << xgrad::kFloat64;
    CHECK(os.str() == "torch.Size([2, 5]) torch.Size([]) torch.float64");
    CHECK(Shape{2, 3, 4}.numel() == 24);
    CHECK(Shape{}.numel() == 1);
    // TensorOptions: designated initialisers, PyTorch's defaults for what is left out.
    const xgrad::TensorOptions o{.dtype = xgrad::kFloat64, .requires_grad = true};
    CHECK(o.dtype == xgrad::kFloat64);
    CHECK(o.requires_grad);
    CHECK(o.device == xgrad::kCPU);
    CHECK(xgrad::TensorOptions{}.dtype == xgrad::kFloat32);
    CHECK_FALSE(xgrad::TensorOptions{}.requires_grad);
    // What a factory takes: TensorOptions, a bare dtype or device, or libtorch's chained setters.
    const xgrad::FactoryOptions f = o;
    CHECK(f.dtype() == xgrad::kFloat64);
    CHECK(f.requires_grad());
    CHECK(f.device() == xgrad::kCPU);
    CHECK(xgrad::FactoryOptions(xgrad::kInt64).dtype() == xgrad::kInt64);
    CHECK_FALSE(xgrad::FactoryOptions(xgrad::kInt64).requires_grad());
    const xgrad::FactoryOptions chained = xgrad::FactoryOptions().dtype(xgrad::kFloat64).requires_grad(true);
    CHECK(chained.dtype() == xgrad::kFloat64);
    CHECK(chained.requires_grad());
    Tensor t = xgrad::zeros({2}, xgrad::TensorOptions{.dtype = xgrad::kFloat64, .requires_grad = true});
    CHECK(t.dtype() == xgrad::kFloat64);
    CHECK(t.requires_grad());
    CHECK(t.is_leaf());
}

TEST_CASE("in-place updates: copy_, fill_, zero_ and arithmetic") {
    SUBCASE("copy_ broadcasts and converts, also into a non-contiguous view") {
        Tensor x = xgrad::zeros({2, 3}, xgrad::kFloat64);
        x.copy_(xgrad::tensor({1.0, 2.0, 3.0}));  // float32 row, broadcast
        CHECK(x.to_vector<double>() == std::vector<double>{1, 2, 3, 1, 2, 3});
        x.t()[2].copy_(xgrad::tensor({-1.0, -2.0}));  // column 2
        CHECK(x.to_vector<double>() == std::vector<double>{1, 2, -1, 1, 2, -2});
        check_throws([&] { x.copy_(xgrad::zeros({4})); }, {"copy_", "(4,)", "(2, 3)"});
        check_throws([&] { x.copy_(xgrad::zeros({1, 2, 3})); }, {"copy_", "(1, 2, 3)", "(2, 3)"});
    }
    SUBCASE("copy_ from an overlapping view of the same storage reads before it writes") {
        Tensor x = xgrad::arange(4.0);
        x.slice(0, 1, {}).copy_(x.slice(0, {}, 3));
        CHECK(x.to_vector<float>() == std::vector<float>{0, 0, 1, 2});
        Tensor m = arange_f(9, {3, 3});
        m.copy_(m.t());  // PyTorch refuses this; xgrad copies through a temporary
        CHECK(m.to_vector<float>() == std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8});
    }
    SUBCASE("fill_ and zero_ write every element of a strided view only") {
        Tensor x = arange_f(6, {2, 3});
        x.slice(1, {}, {}, 2).fill_(9.0);
        CHECK(x.to_vector<float>() == std::vector<float>{9, 1, 9, 9, 4, 9});
        x[0].zero_();
        CHECK(x.to_vector<float>() == std::vector<float>{0, 0, 0, 9, 4, 9});
        x.slice(1, {}, {}, 2).zero_();  // zero bytes go through memset on contiguous runs only
        CHECK(x.to_vector<float>() == std::vector<float>{0, 0, 0, 0, 4, 0});
        Tensor d = xgrad::ones({70}, xgrad::kFloat64);
        d.fill_(-0.0);  // not zero bytes: the sign stays
        const std::vector<double> v = d.to_vector<double>();
        CHECK(std::all_of(v.begin(), v.end(), [](double e) { return e == 0 && std::signbit(e); }));
        Tensor n = xgrad::full({9}, 7.0, xgrad::kInt64);
        n.slice(0, 2, 7).zero_();
        CHECK(n.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, 7, 0, 0, 0, 0, 0, 7, 7});
    }
    SUBCASE("arithmetic updates") {
        Tensor x = xgrad::ones({2, 2});
        x.add_(xgrad::full({2, 2}, 2.0), 0.5);
        CHECK(x.to_vector<float>() == std::vector<float>(4, 2.0f));
        x += 1.0;
        x *= 2.0;
        x -= xgrad::ones({2, 2});
        x /= 5.0;
        CHECK(x.to_vector<float>() == std::vector<float>(4, 1.0f));
        x.mul_(xgrad::tensor({2.0, 3.0}));  // broadcast row
        CHECK(x.to_vector<float>() == std::vector<float>{2, 3, 2, 3});
        x.t().add_(1.0);  // a non-contiguous target takes the general path
        CHECK(x.to_vector<float>() == std::vector<float>{3, 4, 3, 4});
        check_throws([&] { x.add_(xgrad::ones({2, 2, 2})); }, {"add_", "(2, 2, 2)", "(2, 2)"});
    }
    SUBCASE("arithmetic updates write into the tensor, with the out-of-place op's bits") {
        xgrad::manual_seed(3);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
            const Tensor x = xgrad::randn({37, 45}, dtype), row = xgrad::randn({45}, dtype) + 3.0;
            const Tensor same = xgrad::randn({37, 45}, dtype), scalar = xgrad::full({}, 0.3, dtype);
            auto check = [&](const Tensor& want, const std::function<void(Tensor&)>& update) {
                Tensor y = x.clone();
                const void* data = y.impl()->storage->data;
                update(y);
                CHECK(y.impl()->storage->data == data);
                CHECK(golden::bits_differ(y, want) == 0);
            };
            check(x * row, [&](Tensor& y) { y.mul_(row); });
            check(x * scalar, [&](Tensor& y) { y.mul_(scalar); });
            check(x * 0.3, [&](Tensor& y) { y.mul_(0.3); });
            check(x / same, [&](Tensor& y) { y.div_(same); });
            check(x / 0.3, [&](Tensor& y) { y.div_(0.3); });
            check(x + row, [&](Tensor& y) { y.add_(row); });
            check(x - row, [&](Tensor& y) { y.sub_(row); });
            check(x - scalar, [&](Tensor& y) { y.sub_(scalar); });
            // alpha other than 1 with a broadcast operand: one rounding, as the same-shape update (and
            // PyTorch's fused kernel), not alpha * row rounded first.
            Tensor want = x.clone();
            want.add_(row.expand(x.shape()).contiguous(), 0.7);
            check(want, [&](Tensor& y) { y.add_(row, 0.7); });
            Tensor twice = x + row * 0.7;
            if (xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2)
                CHECK(golden::bits_differ(want, twice) > 0);  // the case tells the two apart
            check(x + 0.3, [&](Tensor& y) { y.add_(0.3); });
            check(x * x, [&](Tensor& y) { y.mul_(y); });  // itself: each element read before it is written
        }
        // Another view of the same storage is read whole before the writes: each element plus the one
        // before it as it was, not as just written.
        Tensor m = xgrad::arange(6.0);
        m.slice(0, 1, {}).add_(m.slice(0, {}, 5));
        CHECK(m.to_vector<float>() == std::vector<float>{0, 1, 3, 5, 7, 9});
        Tensor p = xgrad::arange(6.0);
        p.slice(0, 1, {}).mul_(p.slice(0, {}, 5));
        CHECK(p.to_vector<float>() == std::vector<float>{0, 0, 2, 6, 12, 20});
    }
    SUBCASE("an operand that requires grad is refused outside NoGradGuard: its gradient would be lost") {
        const Tensor x = xgrad::tensor({1.0, 2.0}).requires_grad_();
        Tensor buf = xgrad::zeros({2});
        const std::string lost = "in-place updates are not recorded by autograd";
        check_throws([&] { buf.copy_(x * 2.0); }, {"copy_", lost});
        check_throws([&] { buf.add_(x); }, {"add_", lost});
        check_throws([&] { buf.sub_(x); }, {"sub_", lost});
        check_throws([&] { buf.mul_(x); }, {"mul_", lost});
        check_throws([&] { buf.div_(x); }, {"div_", lost});
        check_throws(
            [&] {
                buf.masked_fill_(xgrad::tensor({1.0, 0.0}, xgrad::kBool), x.sum());
            },
            {"masked_fill_", lost});
        check_throws([&] { buf.index_put_({xgrad::tensor({0.0}, xgrad::kInt64)}, x.slice(0, 0, 1)); },
                     {"index_put_", lost});
        CHECK(buf.to_vector<float>() == std::vector<float>{0, 0});  // nothing written
        buf.copy_(x.detach() * 2.0);
        {
            xgrad::NoGradGuard no_grad;  // an optimizer's or an EMA's update
            buf.add_(x);
        }
        CHECK(buf.to_vector<float>() == std::vector<float>{3, 6});
    }
}

TEST_CASE("Device: a type and an index, named and compared as torch.device") {
    const xgrad::Device cpu = xgrad::kCPU, cuda = xgrad::kCUDA, cuda1(xgrad::kCUDA, 1);
    CHECK(cpu.is_cpu());
    CHECK(cpu.index() == -1);
    CHECK(xgrad::Device(xgrad::kCPU, 3) == cpu);  // the CPU has no index
    CHECK(cuda.is_cuda());
    CHECK_FALSE(cuda.has_index());
    CHECK(cuda1.index() == 1);
    CHECK(xgrad::to_string(cpu) == "cpu");
    CHECK(xgrad::to_string(cuda) == "cuda");
    CHECK(xgrad::to_string(cuda1) == "cuda:1");
    std::ostringstream os;
    os << cuda1 << " " << cpu;
    CHECK(os.str() == "cuda:1 cpu");
    // Against a device type only the type counts; two devices compare their indices too.
    CHECK(cuda1 == xgrad::kCUDA);
    CHECK(xgrad::kCUDA == cuda1);
    CHECK(cuda1 != xgrad::kCPU);
    CHECK(cuda1 != xgrad::Device(xgrad::kCUDA, 0));
    CHECK(cuda1 == xgrad::Device(xgrad::kCUDA, 1));
    CHECK(xgrad::Device::kCUDA == xgrad::kCUDA);  // the old enum's spelling
    static_assert(xgrad::Device(xgrad::kCUDA, 2).index() == 2);
    CHECK(xgrad::TensorOptions{.device = xgrad::kCUDA}.device == xgrad::kCUDA);
    CHECK(xgrad::TensorOptions{.device = cuda1}.device == cuda1);
    CHECK(xgrad::FactoryOptions(xgrad::kCUDA).device() == xgrad::kCUDA);
    CHECK(xgrad::FactoryOptions().device(cuda1).device() == cuda1);
    CHECK(xgrad::FactoryOptions(xgrad::kFloat64).device() == xgrad::kCPU);
    Tensor x = xgrad::zeros({2});
    CHECK_FALSE(x.is_cuda());
    CHECK(x.to(xgrad::kCPU).impl() == x.impl());  // already there: no copy
    CHECK(x.cpu().impl() == x.impl());
}

TEST_CASE("without a usable GPU, CUDA tensors are refused with the op's name") {
    if (xgrad::cuda::is_available()) return;  // test_cuda covers a machine with a GPU
    CHECK(xgrad::cuda::device_count() == 0);
    CHECK(xgrad::cuda::memory_allocated() == 0);
    CHECK(xgrad::cuda::max_memory_allocated() == 0);
    CHECK(xgrad::cuda::memory_reserved() == 0);
    xgrad::cuda::synchronize();  // nothing to wait for
    xgrad::cuda::empty_cache();
    Tensor x = xgrad::ones({2, 2});
    check_throws([&] { (void)x.to(xgrad::kCUDA); }, {"to:", "cannot use cuda"});
    check_throws([&] { (void)x.cuda(); }, {"to:", "cannot use cuda"});
    check_throws([&] { (void)x.to(xgrad::Device(xgrad::kCUDA, 1)); }, {"to:", "cuda:1"});
    check_throws([] { (void)xgrad::zeros({2}, xgrad::kCUDA); }, {"zeros:", "cuda"});
    check_throws([] { (void)xgrad::empty({2}, xgrad::kCUDA); }, {"empty:", "cuda"});
    check_throws([] { (void)xgrad::randn({2}, xgrad::TensorOptions{.device = xgrad::kCUDA}); }, {"randn:", "cuda"});
    xgrad::nn::Linear layer(2, 3);
    check_throws([&] { layer.to(xgrad::kCUDA); }, {"Module::to:", "cuda"});
    CHECK(layer.weight.device() == xgrad::kCPU);  // nothing moved
}

TEST_CASE("the CPU block cache keeps the newest large blocks, evicting the oldest when full") {
    using xgrad::detail::cpu_block_cache_held;
    const std::size_t cap = std::size_t{256} << 20;                             // BlockCache::kMaxCached
    const std::int64_t a = std::int64_t{60} << 18, b = std::int64_t{48} << 18;  // floats: 60 MiB, 48 MiB
    const std::size_t a_bytes = static_cast<std::size_t>(a) * 4, b_bytes = static_cast<std::size_t>(b) * 4;
    {
        std::vector<Tensor> first;
        for (int i = 0; i < 4; ++i) first.push_back(xgrad::empty({a}));
    }  // freed: 240 MiB kept, the cache nearly full
    CHECK(cpu_block_cache_held(a_bytes).second >= 4);
    const std::size_t b_before = cpu_block_cache_held(b_bytes).second;
    { const Tensor t = xgrad::empty({b}); }  // 48 MiB more: kept, older blocks make room
    const auto [total, of_b] = cpu_block_cache_held(b_bytes);
    CHECK(of_b == b_before + 1);
    CHECK(total <= cap);
    CHECK(cpu_block_cache_held(a_bytes).second < 4);  // the oldest 60 MiB block went back to the system
    {
        const Tensor t = xgrad::empty({b});  // served from the cache
        CHECK(cpu_block_cache_held(b_bytes).second == b_before);
    }
    // A block larger than the whole cache is never kept, and evicts nothing.
    const std::size_t before = cpu_block_cache_held(a_bytes).first;
    { const Tensor t = xgrad::empty({static_cast<std::int64_t>(cap / 4) + 16}); }
    CHECK(cpu_block_cache_held(a_bytes).first == before);
}

TEST_CASE("casting NaN, inf and out-of-range floats to int64 gives PyTorch's x86-64 values") {
    for (const char* dt : {"float32", "float64"}) {
        INFO(dt);
        const Tensor in = golden::get("hardening.txt", std::string("cast.") + dt + ".in");
        const Tensor expected = golden::get("hardening.txt", std::string("cast.") + dt + ".out");
        CHECK(in.to(xgrad::kInt64).to_vector<std::int64_t>() == expected.to_vector<std::int64_t>());
        // The same through a strided view and through to_vector.
        CHECK(in.slice(0, 1, std::nullopt, 2).to(xgrad::kInt64).to_vector<std::int64_t>() ==
              expected.slice(0, 1, std::nullopt, 2).to_vector<std::int64_t>());
        CHECK(in.to_vector<std::int64_t>() == expected.to_vector<std::int64_t>());
    }
}

TEST_CASE("item and to_vector take every arithmetic type, with libtorch's overflow check on item") {
    const Tensor x = xgrad::tensor({3.75});
    CHECK(x.item<int>() == 3);
    CHECK(x.item<unsigned char>() == 3);
    CHECK(x.item<bool>());
    CHECK(xgrad::zeros({1}).item<bool>() == false);
    CHECK(x.item<long double>() == 3.75L);
    CHECK(xgrad::tensor({-2.5}).item<short>() == -2);
    // int64 values go through int64, not double: 2^62 + 1 survives.
    const Tensor big = xgrad::from_vector(std::vector<std::int64_t>{(std::int64_t{1} << 62) + 1}, {1}, xgrad::kInt64);
    CHECK(big.item<std::uint64_t>() == (std::uint64_t{1} << 62) + 1);
    CHECK(big.item<long long>() == (1LL << 62) + 1);
    CHECK(xgrad::tensor({300.0}, xgrad::kInt64).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{44});
    check_throws([] { xgrad::tensor({300.0}, xgrad::kInt64).item<std::uint8_t>(); },
                 {"item: value cannot be converted to type unsigned char without overflow"});
    check_throws([] { xgrad::tensor({-1.0}).item<unsigned>(); },
                 {"item: value cannot be converted to type unsigned int without overflow"});
}
