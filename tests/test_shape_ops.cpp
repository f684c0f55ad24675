// Checks views and layout ops (transpose ... cat, stack, to, clone) against PyTorch's values, gradients and errors.
#include <doctest/doctest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/detail/tensor_impl.hpp"  // only to compare storages
#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {

const char* kFile = "shape_ops.txt";

bool has(const std::string& name) {
    return golden::load(kFile).count(name) != 0;
}

/// Applies `fn` to the golden leaves of `name.dtype`, and compares its value, grad_fn name and the
/// gradients of (out * w).sum() with PyTorch's, then runs gradcheck on it.
void check_case(const std::string& name, const std::string& dtype, const Fn& fn, const std::string& grad_fn,
                bool gradcheck = true) {
    const std::string key = name + "." + dtype;
    INFO(key);
    std::vector<Tensor> ins;
    for (int i = 0; has(key + ".in" + std::to_string(i)); ++i) {
        // A copy, so that requires_grad_ and grads do not touch the cached golden tensor.
        Tensor t = golden::get(kFile, key + ".in" + std::to_string(i)).clone();
        if (has(key + ".g" + std::to_string(i))) t.requires_grad_();
        ins.push_back(t);
    }
    REQUIRE(!ins.empty());
    Tensor out = fn(ins);
    golden::check_close(out, golden::get(kFile, key + ".out"), key + " value");
    CHECK(out.grad_fn_name() == grad_fn);
    out.backward(golden::get(kFile, key + ".w"));
    for (std::size_t i = 0; i < ins.size(); ++i)
        if (ins[i].requires_grad())
            golden::check_close(ins[i].grad(), golden::get(kFile, key + ".g" + std::to_string(i)),
                                key + " grad of input " + std::to_string(i));
    if (gradcheck) golden::check_gradcheck(fn, ins, key + " gradcheck");
}

/// Runs check_case for both dtypes.
void check_both(const std::string& name, const Fn& fn, const std::string& grad_fn) {
    check_case(name, "float32", fn, grad_fn);
    check_case(name, "float64", fn, grad_fn);
}

/// Asserts that `f` throws std::invalid_argument whose message contains every one of `parts`.
using golden::check_throws;

Tensor arange_f(std::int64_t n, Shape shape) {
    return xgrad::arange(static_cast<double>(n)).reshape(shape);
}

}  // namespace

TEST_CASE("transpose, t and permute match PyTorch") {
    check_both(
        "transpose", [](const auto& in) { return in[0].transpose(0, 2); }, "TransposeBackward0");
    check_case(
        "transpose_neg", "float32", [](const auto& in) { return in[0].transpose(-1, -2); }, "TransposeBackward0");
    check_case(
        "t", "float32", [](const auto& in) { return in[0].t(); }, "TBackward0");
    check_both(
        "permute",
        [](const auto& in) {
            return in[0].permute({2, 0, 1});
        },
        "PermuteBackward0");
    check_case(
        "permute_neg", "float32",
        [](const auto& in) {
            return in[0].permute({-1, 0, -2});
        },
        "PermuteBackward0");

    SUBCASE("they are views with swapped strides") {
        Tensor x = arange_f(24, {2, 3, 4});
        Tensor y = x.transpose(0, 2);
        CHECK(y.shape() == Shape{4, 3, 2});
        CHECK(y.strides() == std::vector<std::int64_t>{1, 4, 12});
        CHECK_FALSE(y.is_contiguous());
        CHECK(y.impl()->storage == x.impl()->storage);
        Tensor p = x.permute({1, 2, 0});
        CHECK(p.strides() == std::vector<std::int64_t>{4, 1, 12});
    }
    SUBCASE("t of 0-d and 1-d tensors is the identity") {
        Tensor v = xgrad::tensor({1.0, 2.0, 3.0}).requires_grad_();
        Tensor tv = v.t();
        CHECK(tv.shape() == Shape{3});
        CHECK(tv.grad_fn_name() == "TBackward0");
        CHECK(xgrad::tensor(2.0).t().dim() == 0);
    }
}

TEST_CASE("reshape, view and flatten match PyTorch") {
    // torch 1.13 names reshape's node ReshapeAliasBackward0 (UnsafeViewBackward0 when it copies);
    // xgrad deliberately uses torch 2.x's ViewBackward0.
    check_both(
        "reshape_view",
        [](const auto& in) {
            return in[0].reshape({4, -1});
        },
        "ViewBackward0");
    check_both(
        "reshape_copy",
        [](const auto& in) {
            return in[0].transpose(0, 1).reshape({-1, 2});
        },
        "ViewBackward0");
    check_case(
        "view", "float32",
        [](const auto& in) {
            return in[0].view({-1, 3, 2});
        },
        "ViewBackward0");
    check_case(
        "view_noncontig", "float32",
        [](const auto& in) {
            return in[0].transpose(0, 1).view({3, 2, 2, 2});
        },
        "ViewBackward0");
    check_case(
        "view_strided", "float32",
        [](const auto& in) {
            return in[0].slice(2, {}, {}, 2).view({6, 2});
        },
        "ViewBackward0");
    check_case(
        "flatten", "float32", [](const auto& in) { return in[0].flatten(); }, "ViewBackward0");
    check_case(
        "flatten_1", "float32", [](const auto& in) { return in[0].flatten(1); }, "ViewBackward0");
    check_case(
        "flatten_01_noncontig", "float32", [](const auto& in) { return in[0].transpose(1, 2).flatten(0, 1); },
        "ViewBackward0");

    SUBCASE("reshape of a viewable tensor shares storage, otherwise copies") {
        Tensor x = arange_f(24, {2, 3, 4});
        Tensor v = x.reshape({6, 4});
        CHECK(v.impl()->storage == x.impl()->storage);
        Tensor xt = x.transpose(0, 1);
        Tensor c = xt.reshape({-1});
        CHECK(c.impl()->storage != x.impl()->storage);
        CHECK(c.is_contiguous());
        CHECK(c.to_vector<float>() == xt.contiguous().to_vector<float>());
    }
    SUBCASE("view of a non-contiguous but compatible tensor keeps strides, and no copy is made") {
        Tensor x = arange_f(24, {2, 3, 4});
        Tensor v = x.transpose(0, 1).view({3, 2, 2, 2});
        CHECK(v.impl()->storage == x.impl()->storage);
        CHECK(v.strides() == std::vector<std::int64_t>{4, 12, 2, 1});
        Tensor s = x.slice(2, {}, {}, 2).view({6, 2});
        CHECK(s.strides() == std::vector<std::int64_t>{4, 2});
    }
    SUBCASE("flatten of a single dimension is the tensor itself, as in PyTorch") {
        Tensor x = xgrad::zeros({2, 3}).requires_grad_();
        CHECK(x.flatten(1, 1).impl() == x.impl());
        CHECK(x.flatten(-1).is_leaf());
    }
    SUBCASE("reshape to and from 0-d and size-1 shapes") {
        Tensor s = xgrad::tensor(5.0);
        CHECK(s.reshape({1, 1}).shape() == Shape{1, 1});
        CHECK(s.reshape({-1}).shape() == Shape{1});
        CHECK(s.flatten().shape() == Shape{1});
        CHECK(xgrad::tensor({{7.0}}).reshape({}).item<float>() == 7.0f);
        CHECK(xgrad::zeros({0, 3}).reshape({3, -1, 2}).shape() == Shape{3, 0, 2});
    }
    SUBCASE("errors name the op and the shapes") {
        Tensor x = xgrad::zeros({2, 3, 4});
        check_throws([&] { x.view({3, 2, 5}); }, {"view", "(3, 2, 5)", "(2, 3, 4)"});
        check_throws([&] { x.reshape({5, -1}); }, {"reshape", "(5, -1)", "(2, 3, 4)"});
        check_throws([&] { x.reshape({-1, -1}); }, {"reshape", "(-1, -1)"});
        check_throws([&] { x.reshape({2, -3, 4}); }, {"reshape", "-3"});
        check_throws([&] { x.transpose(0, 1).view({3, 8}); }, {"view", "(3, 2, 4)", "(3, 8)", "reshape"});
        check_throws([&] { x.flatten(2, 1); }, {"flatten", "start_dim"});
        check_throws([&] { x.flatten(0, 3); }, {"flatten", "3"});
    }
}

TEST_CASE("unsqueeze and squeeze match PyTorch") {
    check_case(
        "unsqueeze", "float32", [](const auto& in) { return in[0].unsqueeze(1); }, "UnsqueezeBackward0");
    check_case(
        "unsqueeze_neg", "float32", [](const auto& in) { return in[0].unsqueeze(-1); }, "UnsqueezeBackward0");
    check_case(
        "squeeze_all", "float32", [](const auto& in) { return in[0].squeeze(); }, "SqueezeBackward0");
    check_case(
        "squeeze_dim", "float32", [](const auto& in) { return in[0].squeeze(1); }, "SqueezeBackward1");
    check_case(
        "squeeze_neg", "float32", [](const auto& in) { return in[0].squeeze(-1); }, "SqueezeBackward1");
    check_case(
        "squeeze_noop", "float32", [](const auto& in) { return in[0].squeeze(0); }, "SqueezeBackward1");

    SUBCASE("shapes and strides") {
        Tensor x = arange_f(6, {2, 3});
        CHECK(x.unsqueeze(0).shape() == Shape{1, 2, 3});
        CHECK(x.unsqueeze(2).shape() == Shape{2, 3, 1});
        CHECK(x.unsqueeze(-3).shape() == Shape{1, 2, 3});
        CHECK(x.unsqueeze(2).is_contiguous());
        CHECK(x.t().unsqueeze(1).strides() == std::vector<std::int64_t>{1, 6, 3});  // as PyTorch
        CHECK(xgrad::tensor(1.0).unsqueeze(0).shape() == Shape{1});
        CHECK(xgrad::zeros({1, 1}).squeeze().dim() == 0);
        CHECK(xgrad::tensor(1.0).squeeze(0).dim() == 0);
    }
    SUBCASE("dims out of range") {
        Tensor x = xgrad::zeros({2, 3});
        check_throws([&] { x.unsqueeze(3); }, {"unsqueeze", "dimension 3", "[-3, 2]"});
        check_throws([&] { x.unsqueeze(-4); }, {"unsqueeze", "-4"});
        check_throws([&] { x.squeeze(2); }, {"squeeze", "dimension 2", "[-2, 1]"});
        check_throws([&] { x.transpose(0, 2); }, {"transpose", "dimension 2", "2 dimensions"});
        check_throws([&] { x.transpose(-3, 0); }, {"transpose", "-3"});
    }
}

TEST_CASE("permute errors name the op and the shape") {
    Tensor x = xgrad::zeros({2, 3, 4});
    check_throws([&] { x.permute({0, 1}); }, {"permute", "2", "(2, 3, 4)"});
    check_throws([&] { x.permute({0, 1, 1}); }, {"permute", "repeated"});
    check_throws([&] { x.permute({0, 1, -2}); }, {"permute", "repeated"});
    check_throws([&] { x.permute({0, 1, 3}); }, {"permute", "dimension 3"});
}

TEST_CASE("expand and expand_as match PyTorch") {
    check_both(
        "expand",
        [](const auto& in) {
            return in[0].expand({2, 3, 4});
        },
        "ExpandBackward0");
    check_case(
        "expand_keep", "float32",
        [](const auto& in) {
            return in[0].expand({-1, 5});
        },
        "ExpandBackward0");
    check_case(
        "expand_as", "float32", [](const auto& in) { return in[0].expand_as(in[1]); }, "ExpandBackward0");

    SUBCASE("expanded dimensions have stride 0 and share storage") {
        Tensor v = arange_f(3, {3, 1});
        Tensor e = v.expand({2, 3, 4});
        CHECK(e.strides() == std::vector<std::int64_t>{0, 1, 0});
        CHECK(e.impl()->storage == v.impl()->storage);
        CHECK(e.to_vector<float>()[13] == 0.0f);  // [1][0][1]
        CHECK(e.to_vector<float>()[17] == 1.0f);  // [1][1][1]
    }
    SUBCASE("expand to the same shape is still a recorded view, as in PyTorch") {
        Tensor v = xgrad::ones({3}).requires_grad_();
        Tensor e = v.expand({3});
        CHECK_FALSE(e.is_leaf());
        CHECK(e.grad_fn_name() == "ExpandBackward0");
    }
    SUBCASE("errors name the op and the shapes") {
        Tensor v = xgrad::zeros({3, 2});
        check_throws([&] { v.expand({3, 4}); }, {"expand", "(3, 2)", "(3, 4)", "2 != 4"});
        check_throws([&] { v.expand({2}); }, {"expand", "(2,)", "(3, 2)"});
        check_throws([&] { v.expand({-1, 3, 2}); }, {"expand", "-1"});
        check_throws([&] { v.expand({3, -2}); }, {"expand", "-2"});
        check_throws([&] { v.expand_as(xgrad::zeros({4, 2})); }, {"expand", "(3, 2)", "(4, 2)"});
    }
}

TEST_CASE("contiguous and clone match PyTorch") {
    check_case(
        "contiguous", "float32", [](const auto& in) { return in[0].transpose(0, 2).contiguous(); }, "CloneBackward0");
    check_case(
        "clone", "float32", [](const auto& in) { return in[0].clone(); }, "CloneBackward0");

    Tensor x = arange_f(6, {2, 3});
    CHECK(x.contiguous().impl() == x.impl());  // already contiguous: the same tensor
    Tensor c = x.t().contiguous();
    CHECK(c.is_contiguous());
    CHECK(c.strides() == std::vector<std::int64_t>{2, 1});
    CHECK(c.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
    Tensor k = x.clone();
    CHECK(k.impl()->storage != x.impl()->storage);
    k.fill_(9.0);
    CHECK(x.to_vector<float>()[0] == 0.0f);
}

TEST_CASE("slice, narrow, select and operator[] match PyTorch") {
    check_case(
        "slice_neg", "float32", [](const auto& in) { return in[0].slice(1, -2, {}); }, "SliceBackward0");
    check_both(
        "slice_step2", [](const auto& in) { return in[0].slice(2, {}, {}, 2); }, "SliceBackward0");
    check_case(
        "slice_clamped", "float32", [](const auto& in) { return in[0].slice(1, -100, 2); }, "SliceBackward0");
    check_case(
        "slice_step2_offset", "float32", [](const auto& in) { return in[0].slice(2, 1, 100, 2); }, "SliceBackward0");
    check_case(
        "narrow", "float32", [](const auto& in) { return in[0].narrow(2, 1, 2); }, "SliceBackward0");
    check_case(
        "narrow_neg", "float32", [](const auto& in) { return in[0].narrow(-1, -3, 2); }, "SliceBackward0");
    check_both(
        "select", [](const auto& in) { return in[0].select(1, -1); }, "SelectBackward0");
    check_case(
        "index", "float32", [](const auto& in) { return in[0][1]; }, "SelectBackward0");

    SUBCASE("Python's slicing bounds") {
        Tensor x = xgrad::arange(10.0);
        auto v = [](const Tensor& t) { return t.to_vector<float>(); };
        CHECK(v(x.slice(0, 2, 5)) == std::vector<float>{2, 3, 4});
        CHECK(v(x.slice(0, -3, {})) == std::vector<float>{7, 8, 9});
        CHECK(v(x.slice(0, {}, -8)) == std::vector<float>{0, 1});
        CHECK(v(x.slice(0, 1, {}, 3)) == std::vector<float>{1, 4, 7});
        CHECK(v(x.slice(0, -100, 100, 4)) == std::vector<float>{0, 4, 8});
        CHECK(x.slice(0, 5, 2).shape() == Shape{0});
        CHECK(x.slice(0, 20, 30).shape() == Shape{0});
        CHECK(x.slice(0, 1, {}, 3).strides() == std::vector<std::int64_t>{3});
        CHECK(x.slice(0, 1, {}, 3).storage_offset() == 1);
    }
    SUBCASE("select and operator[] drop the dimension") {
        Tensor x = arange_f(24, {2, 3, 4});
        CHECK(x[1].shape() == Shape{3, 4});
        CHECK(x[1][2].to_vector<float>() == std::vector<float>{20, 21, 22, 23});
        CHECK(x[-1][-1][-1].item<float>() == 23.0f);
        CHECK(x.select(2, 1).storage_offset() == 1);
    }
    SUBCASE("errors name the op, the index and the shape") {
        Tensor x = xgrad::zeros({2, 3});
        check_throws([&] { x.select(1, 3); }, {"select", "index 3", "size 3", "(2, 3)"});
        check_throws([&] { x.select(0, -3); }, {"select", "index -3", "size 2"});
        check_throws([&] { (void)x[2]; }, {"select", "index 2"});
        check_throws([&] { x.select(2, 0); }, {"select", "dimension 2"});
        check_throws([&] { xgrad::tensor(1.0).select(0, 0); }, {"select", "0-d"});
        check_throws([&] { x.slice(2, 0, 1); }, {"slice", "dimension 2"});
        check_throws([&] { x.slice(1, 0, 1, 0); }, {"slice", "step"});
        check_throws([&] { x.slice(1, 0, 1, -1); }, {"slice", "step"});
        check_throws([&] { x.narrow(1, 2, 2); }, {"narrow", "size 3"});
        check_throws([&] { x.narrow(3, 0, 1); }, {"narrow", "dimension 3"});
    }
}

TEST_CASE("cat and stack match PyTorch") {
    check_both(
        "cat0",
        [](const auto& in) {
            return xgrad::cat({in[0], in[1]}, 0);
        },
        "CatBackward0");
    check_case(
        "cat1", "float32",
        [](const auto& in) {
            return xgrad::cat({in[0], in[1], in[2]}, -1);
        },
        "CatBackward0");
    check_case(
        "cat_noncontig", "float32",
        [](const auto& in) {
            return xgrad::cat({in[0].t(), in[1]}, 0);
        },
        "CatBackward0");
    check_case(
        "stack0", "float32",
        [](const auto& in) {
            return xgrad::stack({in[0], in[1]});
        },
        "StackBackward0");
    check_both(
        "stack_last",
        [](const auto& in) {
            return xgrad::stack({in[0], in[1], in[2]}, -1);
        },
        "StackBackward0");

    SUBCASE("only the inputs that require grad get one") {
        Tensor a = xgrad::ones({2}).requires_grad_();
        Tensor b = xgrad::zeros({3});
        Tensor c = xgrad::cat({b, a});
        c.backward(xgrad::arange(5.0));
        CHECK(a.grad().to_vector<float>() == std::vector<float>{3, 4});
        CHECK_FALSE(b.grad().defined());
    }
    SUBCASE("the same tensor twice gets both gradients") {
        Tensor a = xgrad::tensor({1.0, 2.0}).requires_grad_();
        xgrad::stack({a, xgrad::cat({a, a}).slice(0, 1, 3)}).backward(xgrad::arange(4.0).reshape({2, 2}));
        CHECK(a.grad().to_vector<float>() == std::vector<float>{0 + 3, 1 + 2});  // a[0]: 0 and 3; a[1]: 1 and 2
    }
    SUBCASE("errors name the op and the shapes") {
        Tensor a = xgrad::zeros({2, 3}), b = xgrad::zeros({2, 4});
        check_throws([&] { xgrad::cat({a, b}, 0); }, {"cat", "(2, 3)", "(2, 4)"});
        check_throws([&] { xgrad::cat({a, xgrad::zeros({2, 3, 1})}, 0); }, {"cat", "(2, 3)", "(2, 3, 1)"});
        check_throws([&] { xgrad::cat({a, b}, 2); }, {"cat", "dimension 2"});
        check_throws([&] { xgrad::cat({}, 0); }, {"cat", "empty"});
        check_throws([&] { xgrad::stack({a, b}); }, {"stack", "(2, 3)", "(2, 4)"});
        check_throws([&] { xgrad::stack({a, a}, 3); }, {"stack", "dimension 3"});
        check_throws([&] { xgrad::stack({}); }, {"stack", "empty"});
    }
}

TEST_CASE("to(dtype), type_as: converted copies that pass gradients back in the source dtype") {
    check_case(
        "to_float64", "float32", [](const auto& in) { return in[0].to(xgrad::kFloat64); }, "ToCopyBackward0");
    // No gradcheck: float32 results carry no meaningful finite differences.
    check_case(
        "to_float32", "float64", [](const auto& in) { return in[0].to(xgrad::kFloat32); }, "ToCopyBackward0", false);

    Tensor x = xgrad::tensor({1.5, -2.25}).requires_grad_();
    CHECK(x.to(xgrad::kFloat32).impl() == x.impl());  // same dtype: the same tensor
    Tensor d = x.type_as(xgrad::zeros({1}, xgrad::kFloat64));
    CHECK(d.dtype() == xgrad::kFloat64);
    CHECK(d.grad_fn_name() == "ToCopyBackward0");
    d.backward(xgrad::tensor({2.0, 3.0}, xgrad::kFloat64));
    CHECK(x.grad().dtype() == xgrad::kFloat32);
    CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 3});
    Tensor i = x.to(xgrad::kInt64);  // integers carry no gradient
    CHECK(i.dtype() == xgrad::kInt64);
    CHECK_FALSE(i.requires_grad());
    CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2});
    Tensor back = xgrad::tensor({3.0, -1.0}, xgrad::kInt64).to(xgrad::kFloat64);
    CHECK(back.to_vector<double>() == std::vector<double>{3, -1});
}

TEST_CASE("gradients flow back through chains of non-contiguous views") {
    check_both(
        "chain",
        [](const auto& in) {
            return in[0]
                .transpose(0, 2)
                .slice(0, 1, {})
                .slice(2, {}, {}, 2)
                .permute({1, 0, 2})
                .reshape({-1})
                .slice(0, 2, 9);
        },
        "SliceBackward0");
    check_case(
        "chain_select", "float32",
        [](const auto& in) {
            return in[0].t()[1].unsqueeze(0).expand({3, 3});
        },
        "ExpandBackward0");
}

TEST_CASE("views share storage with their base") {
    Tensor x = arange_f(12, {3, 4}).requires_grad_();
    SUBCASE("writing through views under NoGradGuard changes the base") {
        xgrad::NoGradGuard no_grad;
        x.t()[1].fill_(-1.0);                                                // column 1
        x.slice(1, 2, {})[0].copy_(xgrad::tensor({7.0, 8.0}));               // x[0, 2:]
        x.view({2, 6})[1].slice(0, 4, {}).zero_();                           // x[2, 2:]
        x.unsqueeze(0).expand({2, 3, 4})[1][2][0].fill_(5.0);                // x[2, 0]
        x.select(0, 1).narrow(0, 3, 1).fill_(42.0);                          // x[1, 3]
        x.permute({1, 0}).squeeze().slice(0, 0, 1).flatten()[1].fill_(6.0);  // x[1, 0]
        CHECK(x.to_vector<float>() == std::vector<float>{0, -1, 7, 8, 6, -1, 6, 42, 5, -1, 0, 0});
    }
    SUBCASE("views of a leaf that requires grad cannot be written outside NoGradGuard") {
        check_throws([&] { x[0].fill_(1.0); }, {"fill_"});
        check_throws([&] { x.fill_(1.0); }, {"fill_", "leaf"});
    }
    SUBCASE("detach shares storage too") {
        Tensor d = x.detach();
        d[0].fill_(100.0);
        CHECK(x.to_vector<float>()[3] == 100.0f);
        CHECK(d.is_leaf());
        CHECK_FALSE(d.requires_grad());
    }
}

TEST_CASE("lists of sizes or strides beyond six values (held on the heap) copy, move, grow and resize as vectors") {
    using xgrad::Strides;
    using List = std::vector<std::int64_t>;
    const List three{9, 8, 7};                 // held inline
    const List eight{1, 2, 3, 4, 5, 6, 7, 8};  // on the heap
    for (const List& from : {three, eight}) {
        for (const List& to : {three, eight}) {
            CAPTURE(from.size());
            CAPTURE(to.size());
            const Strides src(from);
            const Strides copied = src;
            CHECK(copied == from);
            Strides assigned(to);
            assigned = src;
            CHECK(assigned == from);
            CHECK(src == from);
            Strides moved_from = src;
            const Strides moved(std::move(moved_from));
            CHECK(moved == from);
            CHECK(moved_from.empty());  // NOLINT(bugprone-use-after-move): moving leaves the list empty
            Strides target(to);
            Strides source = src;
            target = std::move(source);
            CHECK(target == from);
            CHECK(source.empty());  // NOLINT(bugprone-use-after-move)
            source.push_back(5);    // a moved-from list takes values again
            CHECK(source == List{5});
            Strides self(from);
            const Strides& alias = self;
            self = alias;
            CHECK(self == from);
        }
    }
    Strides grown;
    List expected;
    for (std::int64_t i = 0; i < 20; ++i) {
        grown.push_back(i * i);
        expected.push_back(i * i);
        CHECK(grown == expected);
    }
    grown.resize(3);
    expected.resize(3);
    CHECK(grown == expected);
    grown.resize(9, -1);
    expected.resize(9, -1);
    CHECK(grown == expected);
    Strides small;
    small.resize(4, 7);
    CHECK(small == List{7, 7, 7, 7});
    // resize_for_overwrite keeps the old values and leaves the new ones for the caller, inline and
    // on the heap (past kInline the old values move with it).
    small.resize_for_overwrite(5);
    small[4] = 8;
    CHECK(small == List{7, 7, 7, 7, 8});
    small.resize_for_overwrite(9);
    for (std::size_t i = 5; i < 9; ++i) small[i] = static_cast<std::int64_t>(i);
    CHECK(small == List{7, 7, 7, 7, 8, 5, 6, 7, 8});
    small.resize_for_overwrite(2);
    CHECK(small == List{7, 7});
}

TEST_CASE("tensors of eight dims (shapes held on the heap) compute as their two-dim reshapes") {
    const Shape shape{2, 3, 1, 2, 2, 1, 3, 2};
    Tensor x = xgrad::arange(144.0).reshape(shape).requires_grad_();
    const Tensor flat = x.detach().reshape({72, 2});
    CHECK(x.sum(-1).to_vector<float>() == flat.sum(-1).to_vector<float>());
    CHECK(x.sum(-1).shape() == Shape{2, 3, 1, 2, 2, 1, 3});
    const Tensor round_trip = x.transpose(0, 7).contiguous().transpose(0, 7);
    CHECK(round_trip.shape() == shape);
    CHECK(round_trip.strides() != x.strides());
    CHECK(round_trip.to_vector<float>() == x.to_vector<float>());
    (x * x).sum().backward();
    CHECK(x.grad().shape() == shape);
    CHECK(x.grad().to_vector<float>() == (flat * 2.0).to_vector<float>());
}
