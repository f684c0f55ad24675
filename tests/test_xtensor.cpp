// Tests for xtensor.hpp: tensors from xtensor expressions (copies) and xtensor views of tensors (no copy).
#include "xgrad/xtensor.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xfixed.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "golden.hpp"
#include "xgrad/cuda.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/tensor.hpp"

using xgrad::Tensor;

using golden::invalid_argument_of;

namespace {}  // namespace

TEST_CASE("from_xtensor copies any expression, its value type giving the dtype") {
    xt::xarray<double> a = {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
    Tensor t = xgrad::from_xtensor(a);
    CHECK(t.dtype() == xgrad::kFloat64);
    CHECK(t.shape() == xgrad::Shape{2, 3});
    CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
    CHECK(!t.requires_grad());
    a(0, 0) = 100.0;  // a copy: the tensor does not change
    CHECK(t.to_vector<double>()[0] == 1.0);

    // A lazy expression with broadcasting, and a strided view of a column.
    xt::xtensor<float, 1> row = {1.0f, 2.0f};
    Tensor sum = xgrad::from_xtensor(xt::xtensor<float, 2>{{10.0f}, {20.0f}} + row);
    CHECK(sum.dtype() == xgrad::kFloat32);
    CHECK(sum.shape() == xgrad::Shape{2, 2});
    CHECK(sum.to_vector<float>() == std::vector<float>{11, 12, 21, 22});
    Tensor column = xgrad::from_xtensor(xt::view(a, xt::all(), 1));
    CHECK(column.shape() == xgrad::Shape{2});
    CHECK(column.to_vector<double>() == std::vector<double>{2, 5});

    // Integers, fixed shapes, 0-d and empty expressions.
    Tensor idx = xgrad::from_xtensor(xt::arange<std::int64_t>(4));
    CHECK(idx.dtype() == xgrad::kInt64);
    CHECK(idx.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3});
    xt::xtensor_fixed<float, xt::xshape<2, 2>> fixed = {{1.0f, 2.0f}, {3.0f, 4.0f}};
    CHECK(xgrad::from_xtensor(fixed).shape() == xgrad::Shape{2, 2});
    Tensor scalar = xgrad::from_xtensor(xt::xarray<double>(2.5));
    CHECK(scalar.dim() == 0);
    CHECK(scalar.item<double>() == 2.5);
    CHECK(xgrad::from_xtensor(xt::xtensor<float, 2>::from_shape({0, 3})).shape() == xgrad::Shape{0, 3});
}

TEST_CASE("as_xtensor views a tensor's memory: no copy, shape and strides honoured") {
    Tensor t = xgrad::arange(6.0).reshape({2, 3});
    auto v = xgrad::as_xtensor<float>(t);
    CHECK(v.shape() == std::vector<std::size_t>{2, 3});
    CHECK(v(1, 2) == 5.0f);
    v(1, 2) = 50.0f;  // writes reach the tensor
    CHECK(t.to_vector<float>()[5] == 50.0f);
    t.fill_(1.0);  // and the tensor's writes reach the view
    CHECK(v(0, 0) == 1.0f);

    // A transpose, a stepped slice of it, an expanded tensor, and a slice not at the storage's start.
    Tensor base = xgrad::arange(12.0, xgrad::kFloat64).reshape({3, 4});
    auto tv = xgrad::as_xtensor<const double>(base.t());
    CHECK(tv.shape() == std::vector<std::size_t>{4, 3});
    CHECK(tv(3, 1) == 7.0);
    CHECK(xt::sum(tv)() == 66.0);
    auto stepped = xgrad::as_xtensor<double>(base.slice(1, 0, 4, 2));  // columns 0 and 2
    CHECK(stepped.shape() == std::vector<std::size_t>{3, 2});
    CHECK(stepped(2, 1) == 10.0);
    auto expanded = xgrad::as_xtensor<double>(xgrad::tensor({1.0, 2.0}, xgrad::kFloat64).unsqueeze(0).expand({3, 2}));
    CHECK(expanded(2, 1) == 2.0);
    auto last_row = xgrad::as_xtensor<double>(base[2]);
    CHECK(last_row(0) == 8.0);
    last_row(3) = -1.0;
    CHECK(base.to_vector<double>()[11] == -1.0);

    // Back to a tensor: a copy of the view's values in row-major order.
    CHECK(xgrad::from_xtensor(tv).to_vector<double>() == base.t().contiguous().to_vector<double>());

    // 0-d and empty tensors, int64.
    auto s = xgrad::as_xtensor<std::int64_t>(xgrad::tensor(7.0, xgrad::kInt64));
    CHECK(s.dimension() == 0);
    CHECK(s() == 7);
    CHECK(xgrad::as_xtensor<float>(xgrad::zeros({0, 4})).size() == 0);
}

TEST_CASE("an xtensor view keeps the storage alive") {
    auto make = [] { return xgrad::as_xtensor<float>(xgrad::full({2, 2}, 3.0)); };
    auto v = make();  // the only handle to the tensor's storage is the view's now
    xgrad::Tensor other = xgrad::full({64, 64}, -1.0);
    CHECK(v(1, 1) == 3.0f);
    CHECK(xt::sum(v)() == 12.0f);
}

TEST_CASE("as_xtensor refuses the wrong dtype, a tensor that requires grad, an undefined or a CUDA tensor") {
    Tensor f = xgrad::zeros({2});
    std::string msg = invalid_argument_of([&] { xgrad::as_xtensor<double>(f); });
    CHECK(msg ==
          "as_xtensor: the tensor holds torch.float32, but the view's element type is torch.float64 (use the matching "
          "type, or t.to(torch.float64) for a converted copy)");
    msg = invalid_argument_of([&] { xgrad::as_xtensor<std::int64_t>(f); });
    CHECK(msg.find("holds torch.float32, but the view's element type is torch.int64") != std::string::npos);

    Tensor w = xgrad::ones({2}).requires_grad_();
    msg = invalid_argument_of([&] { xgrad::as_xtensor<float>(w); });
    CHECK(msg ==
          "as_xtensor: the tensor requires grad, and writes through the view would bypass autograd (use t.detach())");
    CHECK(xgrad::as_xtensor<float>(w.detach())(0) == 1.0f);

    msg = invalid_argument_of([&] { xgrad::as_xtensor<float>(Tensor()); });
    CHECK(msg.rfind("as_xtensor: ", 0) == 0);

    if (xgrad::cuda::is_available()) {
        msg = invalid_argument_of([&] { xgrad::as_xtensor<float>(f.cuda()); });
        CHECK(msg == "as_xtensor: the tensor is on cuda:0; xtensor views need CPU memory (use t.cpu())");
    } else {
        MESSAGE("no CUDA device: the device check is not exercised");
    }
}
