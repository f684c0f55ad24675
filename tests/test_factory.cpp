// Checks the tensor factories (tensor, from_vector, zeros ... arange, *_like) and their options against PyTorch.
#include <doctest/doctest.h>

#include "golden.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;

namespace {

using golden::check_throws;

}  // namespace

TEST_CASE("tensor() from nested braces, 0-D to 4-D") {
    SUBCASE("0-D") {
        Tensor s = xgrad::tensor(2.5);
        CHECK(s.dim() == 0);
        CHECK(s.shape() == Shape{});
        CHECK(s.dtype() == xgrad::kFloat32);
        CHECK(s.item<float>() == 2.5f);
    }
    SUBCASE("1-D") {
        Tensor v = xgrad::tensor({1.0, -2.0, 3.5});
        CHECK(v.shape() == Shape{3});
        CHECK(v.to_vector<float>() == std::vector<float>{1.0f, -2.0f, 3.5f});
        CHECK(xgrad::tensor({7.0}).shape() == Shape{1});  // braces always make a list
        CHECK(xgrad::tensor({1, 2, 3}).to_vector<float>() == std::vector<float>{1, 2, 3});
    }
    SUBCASE("2-D, including a single column") {
        Tensor c = xgrad::tensor({{0.2, 0.1, 0.3}, {0.5, 0.1, 0.1}});
        CHECK(c.shape() == Shape{2, 3});
        CHECK(c.to_vector<float>() == std::vector<float>{0.2f, 0.1f, 0.3f, 0.5f, 0.1f, 0.1f});
        Tensor col = xgrad::tensor({{0.5}, {-1.0}});
        CHECK(col.shape() == Shape{2, 1});
        CHECK(col.to_vector<float>() == std::vector<float>{0.5f, -1.0f});
        CHECK(xgrad::tensor({{0.5}}).shape() == Shape{1, 1});
        CHECK(xgrad::tensor({{0.5, -1.0}}).shape() == Shape{1, 2});
    }
    SUBCASE("3-D and 4-D") {
        Tensor t3 = xgrad::tensor({{{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, {{7.0, 8.0}, {9.0, 10.0}, {11.0, 12.0}}});
        CHECK(t3.shape() == Shape{2, 3, 2});
        CHECK(t3.to_vector<float>()[7] == 8.0f);
        Tensor t4 = xgrad::tensor({{{{1.0}, {2.0}}}, {{{3.0}, {4.0}}}});
        CHECK(t4.shape() == Shape{2, 1, 2, 1});
        CHECK(t4.to_vector<double>() == std::vector<double>{1, 2, 3, 4});
    }
    SUBCASE("empty lists, as torch.tensor([]) and torch.tensor([[], []])") {
        CHECK(xgrad::tensor(xgrad::NestedValues(std::initializer_list<xgrad::NestedValues>{})).shape() == Shape{0});
        CHECK(xgrad::tensor({{}, {}}).shape() == Shape{2, 0});
    }
    SUBCASE("options: dtype and requires_grad") {
        Tensor d = xgrad::tensor({1.0, 2.0}, xgrad::kFloat64);
        CHECK(d.dtype() == xgrad::kFloat64);
        Tensor i = xgrad::tensor({{1.0, -2.0}}, xgrad::kInt64);
        CHECK(i.dtype() == xgrad::kInt64);
        CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2});
        Tensor g = xgrad::tensor({1.0}, xgrad::TensorOptions{.dtype = xgrad::kFloat64, .requires_grad = true});
        CHECK(g.requires_grad());
        CHECK(g.is_leaf());
        CHECK(g.dtype() == xgrad::kFloat64);
        CHECK(xgrad::tensor(0.1, xgrad::kFloat64).item<double>() == 0.1);
        CHECK(xgrad::tensor(0.1).item<double>() == static_cast<double>(0.1f));
    }
    SUBCASE("non-rectangular lists throw") {
        check_throws([] { xgrad::tensor({{1.0, 2.0}, {3.0}}); }, {"tensor", "rectangular", "expected 2", "got 1"});
        check_throws([] { xgrad::tensor({{1.0, 2.0}, 3.0}); }, {"tensor", "rectangular"});
        check_throws([] { xgrad::tensor({1.0, {2.0, 3.0}}); }, {"tensor", "rectangular"});
        check_throws([] { xgrad::tensor({{{1.0}}, {{2.0}, {3.0}}}); }, {"tensor", "rectangular"});
        check_throws([] { xgrad::tensor({{{1.0}}, {2.0}}); }, {"tensor", "rectangular"});
        check_throws([] { xgrad::tensor({{{}}, {1.0}}); }, {"tensor", "rectangular"});
        check_throws([] { xgrad::tensor({{}, {1.0}}); }, {"tensor", "rectangular"});
        check_throws([] { xgrad::tensor({1.0}, xgrad::TensorOptions{.dtype = xgrad::kInt64, .requires_grad = true}); },
                     {"requires_grad_", "only Tensors of floating point dtype can require gradients"});
    }
}

TEST_CASE("from_vector copies row-major values and converts them") {
    std::vector<double> vals{1.5, 2.5, 3.5, 4.5, 5.5, 6.5};
    Tensor t = xgrad::from_vector(vals, {2, 3});
    CHECK(t.dtype() == xgrad::kFloat32);
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t[1].to_vector<float>() == std::vector<float>{4.5f, 5.5f, 6.5f});
    vals[0] = 100.0;  // a copy: the tensor does not see later changes
    CHECK(t.to_vector<float>()[0] == 1.5f);
    Tensor i = xgrad::from_vector(std::vector<std::int64_t>{1, 2, 3}, {3}, xgrad::kFloat64);
    CHECK(i.dtype() == xgrad::kFloat64);
    CHECK(i.to_vector<double>() == std::vector<double>{1, 2, 3});
    Tensor f = xgrad::from_vector(std::vector<float>{2.0f}, {}, xgrad::TensorOptions{.requires_grad = true});
    CHECK(f.dim() == 0);
    CHECK(f.requires_grad());
    check_throws([] { xgrad::from_vector(std::vector<float>{1, 2, 3}, {2, 2}); }, {"from_vector", "3", "(2, 2)"});
}

TEST_CASE("zeros, ones, full and empty") {
    Tensor z = xgrad::zeros({2, 3});
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.dtype() == xgrad::kFloat32);
    CHECK(z.is_contiguous());
    CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
    CHECK(xgrad::ones({3}, xgrad::kFloat64).to_vector<double>() == std::vector<double>(3, 1.0));
    CHECK(xgrad::ones({2}, xgrad::kInt64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1});
    Tensor f = xgrad::full({2, 2}, 0.5);
    CHECK(f.to_vector<float>() == std::vector<float>(4, 0.5f));
    CHECK(xgrad::full({}, -3.0).item<float>() == -3.0f);
    CHECK(xgrad::zeros({0, 4}).numel() == 0);
    // zeros are written as zero bytes (memset); -0.0 is not zero bytes and keeps its sign
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const std::vector<double> neg = xgrad::full({37}, -0.0, dtype).to_vector<double>();
        const std::vector<double> pos = xgrad::zeros({37}, dtype).to_vector<double>();
        CHECK(std::all_of(neg.begin(), neg.end(), [](double v) { return v == 0 && std::signbit(v); }));
        CHECK(std::all_of(pos.begin(), pos.end(), [](double v) { return v == 0 && !std::signbit(v); }));
    }
    CHECK(xgrad::zeros({5}, xgrad::kBool).any().item<bool>() == false);
    CHECK(xgrad::zeros({3}, xgrad::kInt32).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 0});
    Tensor e = xgrad::empty({3, 4}, xgrad::kFloat64);
    CHECK(e.shape() == Shape{3, 4});
    CHECK(e.dtype() == xgrad::kFloat64);
    CHECK(e.is_contiguous());
    Tensor w = xgrad::zeros({3}, xgrad::TensorOptions{.dtype = xgrad::kFloat64, .requires_grad = true});
    CHECK(w.requires_grad());
    CHECK(w.is_leaf());
    CHECK_FALSE(xgrad::zeros({3}).requires_grad());
    check_throws([] { xgrad::zeros({2, -1}); }, {"zeros", "(2, -1)"});
    check_throws([] { xgrad::full({-3}, 1.0); }, {"full", "(-3,)"});
}

TEST_CASE("arange matches torch.arange") {
    SUBCASE("arange(end)") {
        Tensor a = xgrad::arange(5);
        CHECK(a.dtype() == xgrad::kFloat32);  // torch.arange(5) is int64; xgrad's default is float32
        CHECK(a.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
        CHECK(xgrad::arange(2.5).to_vector<float>() == std::vector<float>{0, 1, 2});
        CHECK(xgrad::arange(0).numel() == 0);
        CHECK(xgrad::arange(4, xgrad::kInt64).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3});
    }
    SUBCASE("arange(start, end, step): values and lengths as PyTorch's (float32)") {
        // torch.arange(0, 1, 0.1): ten values, start + i * step computed in double, then rounded.
        CHECK(xgrad::arange(0, 1, 0.1).to_vector<float>() ==
              std::vector<float>{0.0f, 0x1.99999ap-4f, 0x1.99999ap-3f, 0x1.333334p-2f, 0x1.99999ap-2f, 0x1.0p-1f,
                                 0x1.333334p-1f, 0x1.666666p-1f, 0x1.99999ap-1f, 0x1.ccccccp-1f});
        CHECK(xgrad::arange(0.0, 0.3, 0.1).numel() == 3);
        CHECK(xgrad::arange(-1, 1, 0.25).to_vector<float>() ==
              std::vector<float>{-1, -0.75f, -0.5f, -0.25f, 0, 0.25f, 0.5f, 0.75f});
        CHECK(xgrad::arange(1, 1, 1).numel() == 0);
        Tensor d = xgrad::arange(0, 1, 0.1, xgrad::kFloat64);
        CHECK(d.dtype() == xgrad::kFloat64);
        CHECK(d.to_vector<double>()[3] == 0.30000000000000004);
    }
    SUBCASE("negative step") {
        CHECK(xgrad::arange(10, 0, -3).to_vector<float>() == std::vector<float>{10, 7, 4, 1});
        CHECK(xgrad::arange(1, 0, -0.3).to_vector<float>() ==
              std::vector<float>{1.0f, 0x1.666666p-1f, 0x1.99999ap-2f, 0x1.99999ap-4f});
    }
    SUBCASE("inconsistent or zero step throws") {
        check_throws([] { xgrad::arange(0, 1, -1); }, {"arange", "inconsistent with step sign"});
        check_throws([] { xgrad::arange(5, 0, 1); }, {"arange", "inconsistent with step sign"});
        check_throws([] { xgrad::arange(0, 1, 0); }, {"arange", "step must be nonzero"});
    }
    SUBCASE("requires_grad option") {
        CHECK(xgrad::arange(0, 3, 1, xgrad::TensorOptions{.requires_grad = true}).requires_grad());
    }
}

TEST_CASE("*_like factories take the shape and dtype of another tensor, not its grad") {
    Tensor x = xgrad::ones({2, 3}, xgrad::kFloat64).requires_grad_();
    Tensor xt = x.t();  // non-contiguous, non-leaf
    for (const Tensor& src : {x, xt}) {
        Tensor z = xgrad::zeros_like(src);
        CHECK(z.shape() == src.shape());
        CHECK(z.dtype() == xgrad::kFloat64);
        CHECK(z.is_contiguous());
        CHECK_FALSE(z.requires_grad());
        CHECK(z.to_vector<double>() == std::vector<double>(6, 0.0));
        CHECK(xgrad::ones_like(src).to_vector<double>() == std::vector<double>(6, 1.0));
        CHECK(xgrad::full_like(src, 2.5).to_vector<double>() == std::vector<double>(6, 2.5));
        CHECK(xgrad::empty_like(src).shape() == src.shape());
        CHECK(xgrad::empty_like(src).dtype() == xgrad::kFloat64);
    }
    Tensor o = xgrad::ones_like(x, xgrad::TensorOptions{.dtype = xgrad::kFloat32, .requires_grad = true});
    CHECK(o.dtype() == xgrad::kFloat32);
    CHECK(o.requires_grad());
    CHECK(xgrad::zeros_like(x, xgrad::kInt64).dtype() == xgrad::kInt64);
}
