// Checks indexing (gather, scatter, index_select, index_add, x[idx], one_hot, Embedding) and the shape
// ops built on views and copies (split ... pad, eye, linspace) against PyTorch's values, gradients and errors.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
namespace F = xgrad::nn::functional;

namespace {

const char* kFile = "indexing.txt";

bool has(const std::string& name) {
    return golden::load(kFile).count(name) != 0;
}

Tensor idx(const std::string& name) {
    return golden::get(kFile, "idx." + name);
}

/// Applies `fn` to the golden leaves of `name.dtype` and compares its value, grad_fn name and the
/// gradients of (out * w).sum() with PyTorch's, bit for bit, then runs gradcheck on it.
void check_case(const std::string& name, const std::string& dtype, const Fn& fn) {
    const std::string key = name + "." + dtype;
    INFO(key);
    std::vector<Tensor> ins;
    for (int i = 0; has(key + ".in" + std::to_string(i)); ++i) {
        Tensor t = golden::get(kFile, key + ".in" + std::to_string(i)).clone();
        if (has(key + ".g" + std::to_string(i))) t.requires_grad_();
        ins.push_back(t);
    }
    REQUIRE(!ins.empty());
    Tensor out = fn(ins);
    golden::check_close(out, golden::get(kFile, key + ".out"), key + " value");
    CHECK(out.grad_fn_name() == golden::grad_fn_name(kFile, key));
    out.backward(golden::get(kFile, key + ".w"));
    CHECK(golden::bits_differ(out, golden::get(kFile, key + ".out")) == 0);
    for (std::size_t i = 0; i < ins.size(); ++i)
        if (ins[i].requires_grad()) {
            const Tensor want = golden::get(kFile, key + ".g" + std::to_string(i));
            golden::check_close(ins[i].grad(), want, key + " grad of input " + std::to_string(i));
            CHECK(golden::bits_differ(ins[i].grad(), want) == 0);
        }
    golden::check_gradcheck(fn, ins, key + " gradcheck");
}

/// check_case for float32, and float64 where the golden file has it.
void check(const std::string& name, const Fn& fn) {
    check_case(name, "float32", fn);
    if (has(name + ".float64.out")) check_case(name, "float64", fn);
}

/// `f` throws std::invalid_argument with exactly "op: message".
void check_error(const std::function<void()>& f, const std::string& expected) {
    CHECK(golden::invalid_argument_of(f) == expected);
}

Tensor longs(xgrad::NestedValues v) {
    return xgrad::tensor(v, xgrad::kInt64);
}

}  // namespace

TEST_CASE("gather, scatter and scatter_add match PyTorch") {
    check("gather_dim0", [](const auto& in) { return in[0].gather(0, idx("gather_rows")); });
    check("gather_dim1", [](const auto& in) { return xgrad::gather(in[0], 1, idx("gather_cols")); });
    check("gather_neg_dim_noncontig", [](const auto& in) { return in[0].t().gather(-1, idx("gather_cols")); });
    check("gather_3d", [](const auto& in) { return in[0].gather(1, idx("gather_3d")); });
    check("scatter_src", [](const auto& in) { return in[0].scatter(0, idx("scatter_rows"), in[1]); });
    check("scatter_value",
          [](const auto& in) { return xgrad::scatter(in[0], 1, idx("gather_cols").narrow(1, 0, 1), 2.5); });
    check("scatter_add", [](const auto& in) { return in[0].scatter_add(0, idx("add_rows"), in[1]); });
    check("scatter_add_dim1", [](const auto& in) { return xgrad::scatter_add(in[0], 1, idx("gather_cols"), in[1]); });
}

TEST_CASE("index_select, index_add and x[idx] match PyTorch") {
    check("index_select_dim0", [](const auto& in) { return in[0].index_select(0, idx("select")); });
    check("index_select_dim1", [](const auto& in) { return xgrad::index_select(in[0], 1, idx("select")); });
    check("index_select_noncontig", [](const auto& in) { return in[0].t().index_select(0, idx("select")); });
    check("index_add", [](const auto& in) { return in[0].index_add(0, idx("select"), in[1]); });
    check("index_add_alpha_dim1", [](const auto& in) { return xgrad::index_add(in[0], 1, idx("select"), in[1], 2.0); });
    check("index_add_alpha_slices", [](const auto& in) { return in[0].index_add(0, idx("select"), in[1], 0.7); });
    check("index_add_alpha_1d", [](const auto& in) { return in[0].index_add(0, idx("select"), in[1], 0.7); });
    check("index_tensor", [](const auto& in) { return in[0].index({idx("rows")}); });
    check("index_tensor_3d", [](const auto& in) { return in[0].index({idx("rows").select(0, 0)}); });
    check("index_pair", [](const auto& in) { return in[0].index({idx("pair_i"), idx("pair_j")}); });
    check("index_pair_bcast", [](const auto& in) { return in[0].index({idx("bcast_i"), idx("bcast_j")}); });
    check("index_triple", [](const auto& in) { return in[0].index({idx("tri_a"), idx("tri_b"), idx("tri_c")}); });
    check("index_pair_noncontig", [](const auto& in) { return in[0].t().index({idx("pair_i"), idx("pair_j")}); });
}

TEST_CASE("indexing refuses bad indices with PyTorch's messages") {
    const Tensor x = xgrad::randn({3, 4});
    check_error(
        [&] {
            x.gather(1, longs({{0, 5}, {1, 2}}));
        },
        "gather: index 5 is out of bounds for dimension 1 with size 4");
    check_error(
        [&] {
            x.gather(1, longs({{0, -1}}));
        },
        "gather: index -1 is out of bounds for dimension 1 with size 4");
    check_error([&] { x.gather(1, xgrad::tensor({{0.0, 1.0}})); }, "gather: gather(): Expected dtype int64 for index");
    check_error(
        [&] {
            x.gather(1, longs({0, 1}));
        },
        "gather: Index tensor must have the same number of dimensions as input tensor");
    check_error(
        [&] {
            x.gather(1, xgrad::zeros({4, 2}, xgrad::kInt64));
        },
        "gather: Size does not match at dimension 0 expected index [4, 2] to be smaller than self [3, 4] "
        "apart from dimension 1");
    check_error(
        [&] {
            x.scatter(0, longs({{3}}), xgrad::ones({1, 1}));
        },
        "scatter: index 3 is out of bounds for dimension 0 with size 3");
    check_error(
        [&] {
            x.scatter(0, xgrad::zeros({2, 2}, xgrad::kInt64), xgrad::ones({1, 1}));
        },
        "scatter: Expected index [2, 2] to be smaller than self [3, 4] apart from dimension 0 and to be "
        "smaller size than src [1, 1]");
    check_error(
        [&] {
            x.scatter(0, longs({{0}}), xgrad::ones({1, 1}, xgrad::kFloat64));
        },
        "scatter: scatter(): Expected self.dtype to be equal to src.dtype");
    check_error(
        [&] {
            x.scatter_add(0, longs({{-1}}), xgrad::ones({1, 1}));
        },
        "scatter_add: index -1 is out of bounds for dimension 0 with size 3");
    check_error([&] { x.index_select(0, longs({3})); }, "index_select: index out of range in self");
    check_error([&] { x.index_select(0, longs({-1})); }, "index_select: index out of range in self");
    check_error([&] { x.index_select(0, longs({{0}})); },
                "index_select: index_select(): Index is supposed to be a vector");
    check_error([&] { x.index_select(0, xgrad::tensor({0.0})); },
                "index_select: index_select(): Expected dtype int32 or int64 for index");
    check_error(
        [&] {
            x.index_add(0, longs({1}), xgrad::ones({2, 4}));
        },
        "index_add: index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 0");
    check_error([&] { x.index_add(0, longs({3}), xgrad::ones({1, 4})); }, "index_add: index out of range in self");
    check_error([&] { x.index({longs({3})}); }, "index: index 3 is out of bounds for dimension 0 with size 3");
    check_error([&] { x.index({longs({-4})}); }, "index: index -4 is out of bounds for dimension 0 with size 3");
}

TEST_CASE("index checks take exactly [0, size) (or [-size, size)), int64's extremes and empty dims too") {
    const Tensor x = xgrad::randn({3, 4});
    auto ints = [](std::vector<std::int64_t> v, const Shape& shape) {
        return xgrad::from_vector(v, shape, xgrad::kInt64);
    };
    const std::int64_t top = std::numeric_limits<std::int64_t>::max(),
                       bottom = std::numeric_limits<std::int64_t>::min();
    // The edges are taken: gather along dim 1 ([0, 4)), advanced indexing along dim 0 ([-3, 3)).
    CHECK(x.gather(1, ints({0, 3, 3, 0}, {2, 2}))
              .equal(xgrad::stack({x.select(0, 0).index_select(0, ints({0, 3}, {2})),
                                   x.select(0, 1).index_select(0, ints({3, 0}, {2}))})));
    CHECK(x.index({ints({-3, 2}, {2})}).equal(xgrad::stack({x.select(0, 0), x.select(0, 2)})));
    // Everything past them is refused, whatever its distance (d = v - lo wraps for the extremes).
    for (std::int64_t v : {std::int64_t{4}, std::int64_t{-1}, top, bottom, top - 2, bottom + 3}) {
        CAPTURE(v);
        check_error(
            [&] {
                x.gather(1, ints({0, v}, {1, 2}));
            },
            "gather: index " + std::to_string(v) + " is out of bounds for dimension 1 with size 4");
    }
    for (std::int64_t v : {std::int64_t{3}, std::int64_t{-4}, top, bottom}) {
        CAPTURE(v);
        check_error([&] { x.index({ints({v}, {1})}); },
                    "index: index " + std::to_string(v) + " is out of bounds for dimension 0 with size 3");
    }
    // A dim of size 0 takes no index at all.
    const Tensor empty = xgrad::zeros({0, 4});
    check_error([&] { empty.index_select(0, ints({0}, {1})); }, "index_select: index out of range in self");
    check_error([&] { empty.index({ints({0}, {1})}); }, "index: index 0 is out of bounds for dimension 0 with size 0");
}

TEST_CASE("one_hot matches PyTorch") {
    const Tensor in = golden::get(kFile, "one_hot.in");
    golden::check_close(F::one_hot(in), golden::get(kFile, "one_hot.out"), "one_hot");
    golden::check_close(F::one_hot(in, 5), golden::get(kFile, "one_hot5.out"), "one_hot 5");
    CHECK(F::one_hot(xgrad::zeros({0}, xgrad::kInt64), 3).shape() == Shape{0, 3});
    check_error([] { F::one_hot(longs({-1})); }, "one_hot: Class values must be non-negative.");
    check_error([] { F::one_hot(longs({3}), 3); }, "one_hot: Class values must be smaller than num_classes.");
    check_error([] { F::one_hot(xgrad::tensor({3.0})); }, "one_hot: one_hot is only applicable to index tensor.");
    check_error([] { F::one_hot(xgrad::zeros({0}, xgrad::kInt64)); },
                "one_hot: Can not infer total number of classes from empty tensor.");
}

TEST_CASE("nn::Embedding: PyTorch's initial weight, output, gradient and repr") {
    xgrad::manual_seed(0);
    xgrad::nn::Embedding emb(10, 3, 0);
    // Bit for bit: normal(0, 1) from the generator, then the padding row zeroed.
    golden::check_close(emb.weight, golden::get(kFile, "embedding.weight"), "initial weight", 0, 0);
    Tensor out = emb(idx("embedding_in"));
    golden::check_close(out, golden::get(kFile, "embedding.out"), "output", 0, 0);
    CHECK(out.grad_fn_name() == golden::grad_fn_name(kFile, "embedding"));
    out.backward(golden::get(kFile, "embedding.w"));
    golden::check_close(emb.weight.grad(), golden::get(kFile, "embedding.grad"), "weight grad");
    CHECK(emb.weight.grad()[0].abs().sum().item<double>() == 0.0);  // padding row: no gradient

    xgrad::manual_seed(3);
    xgrad::nn::Embedding neg(4, 5, -1);
    golden::check_close(neg.weight, golden::get(kFile, "embedding_neg_pad.weight"), "padding_idx=-1", 0, 0);

    std::ostringstream repr;
    repr << "# repr " << emb << " | " << neg << " | " << xgrad::nn::Embedding(5, 3);
    std::ifstream file(golden::dir() + "/" + kFile);
    std::string line, expected;
    while (std::getline(file, line))
        if (line.rfind("# repr ", 0) == 0) expected = line;
    CHECK(repr.str() == expected);

    // F::embedding's gradient with gradcheck (a padding row that the input uses would differ from
    // finite differences by design, so row 5, unused, is the padding row here).
    golden::check_gradcheck([](const auto& in) { return F::embedding(idx("embedding_in"), in[0], 5); },
                            {xgrad::randn({10, 3}, xgrad::kFloat64).requires_grad_()}, "embedding gradcheck");

    check_error([] { xgrad::nn::Embedding(5, 3, 5); }, "Embedding: Padding_idx must be within num_embeddings");
    check_error([] { xgrad::nn::Embedding(5, 3, -6); }, "Embedding: Padding_idx must be within num_embeddings");
    xgrad::nn::Embedding small(5, 3);
    check_error([&] { small(longs({5})); }, "embedding: index out of range in self");
    check_error([&] { small(longs({-1})); }, "embedding: index out of range in self");
    check_error([&] { small(xgrad::tensor({1.0})); },
                "embedding: Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                "Long, Int; but got torch.float32 instead (while checking arguments for embedding)");
}

TEST_CASE("split, chunk, repeat and repeat_interleave match PyTorch") {
    check("split_1", [](const auto& in) { return in[0].split(2, 1)[1]; });
    check("split_last", [](const auto& in) { return xgrad::split(in[0], 2, 1)[2]; });
    check("split_sizes", [](const auto& in) { return in[0].split(std::vector<std::int64_t>{1, 3, 1}, 1)[1]; });
    check("chunk", [](const auto& in) { return xgrad::chunk(in[0], 3, 0)[1]; });
    CHECK(xgrad::zeros({5, 2}).chunk(3).size() == 3);
    CHECK(xgrad::zeros({4, 2}).chunk(3).size() == 2);  // chunks of 2: fewer than asked, as PyTorch
    // An empty dim: as many empty chunks as asked, as PyTorch 1.13's chunk (torch.zeros(0, 3).chunk(2)).
    const auto empty = xgrad::zeros({0, 3}).chunk(2);
    CHECK(empty.size() == 2);
    for (const Tensor& c : empty) CHECK(c.shape() == xgrad::Shape{0, 3});
    check("repeat", [](const auto& in) { return in[0].repeat({2, 1, 3}); });
    check("repeat_noncontig", [](const auto& in) { return in[0].t().repeat({2, 2}); });
    check("repeat_interleave", [](const auto& in) { return in[0].repeat_interleave(2); });
    check("repeat_interleave_dim", [](const auto& in) { return xgrad::repeat_interleave(in[0], 3, 1); });
    const Tensor x = xgrad::randn({3, 4});
    check_error(
        [&] {
            x.split(std::vector<std::int64_t>{1, 1});
        },
        "split: split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension "
        "0), but got split_sizes=[1, 1]");
    check_error([&] { x.chunk(0); }, "chunk: chunk expects `chunks` to be greater than 0, got: 0");
    check_error([&] { x.repeat({2}); },
                "repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
}

TEST_CASE("flip, roll, tril, triu, unflatten and diag match PyTorch") {
    check("flip", [](const auto& in) { return in[0].flip({0, 2}); });
    check("flip_noncontig", [](const auto& in) { return xgrad::flip(in[0].transpose(0, 1), -1); });
    check("roll_flat", [](const auto& in) { return in[0].roll({3}); });
    check("roll_dims", [](const auto& in) { return xgrad::roll(in[0], {1, -2}, {0, 1}); });
    check("tril", [](const auto& in) { return in[0].tril(); });
    check("tril_k", [](const auto& in) { return xgrad::tril(in[0], 1); });
    check("triu", [](const auto& in) { return in[0].triu(); });
    check("triu_k", [](const auto& in) { return xgrad::triu(in[0], -1); });
    check("unflatten", [](const auto& in) { return in[0].unflatten(1, {2, -1}); });
    // -1 comes from the dim's size even where another dim is 0 (PyTorch: torch.Size([1, 2, 0])).
    CHECK(xgrad::zeros({2, 0}).unflatten(0, {1, -1}).shape() == xgrad::Shape{1, 2, 0});
    check_error([] { xgrad::zeros({4}).unflatten(0, {-1, -1}); }, "unflatten: only one dimension can be inferred");
    check("diag_1d", [](const auto& in) { return in[0].diag(1); });
    check("diag_1d_neg", [](const auto& in) { return xgrad::diag(in[0], -2); });
    check("diag_2d", [](const auto& in) { return in[0].diag(); });
    check("diag_2d_k", [](const auto& in) { return in[0].diag(-1); });
    check("diag_2d_noncontig", [](const auto& in) { return in[0].t().diag(2); });
    const Tensor x = xgrad::randn({3, 4});
    check_error([&] { x.flip({0, 0}); }, "flip: dim 0 appears multiple times in the list of dims");
    check_error([&] { x.roll({1, 2}, {0}); }, "roll: shifts and dimensions must align. shifts: 2, dims:1");
    check_error(
        [] {
            xgrad::zeros({2, 6}).unflatten(1, {4, 2});
        },
        "unflatten: Provided sizes [4, 2] don't multiply up to the size of dim 1 (6) in the input tensor");
    check_error([] { xgrad::zeros({2, 2, 2}).diag(); }, "diag: matrix or a vector expected, got shape (2, 2, 2)");
    check_error([] { xgrad::zeros({3}).tril(); }, "tril: input tensor must have at least 2 dimensions, got shape (3,)");
}

TEST_CASE("F::pad (constant, reflect, replicate) matches PyTorch") {
    check("pad_constant", [](const auto& in) { return F::pad(in[0], {1, 2, 0, 1}, "constant", 0.5); });
    check("pad_constant_crop", [](const auto& in) { return F::pad(in[0], {-1, 2}); });
    check("pad_reflect_1d", [](const auto& in) { return F::pad(in[0], {2, 1}, "reflect"); });
    check("pad_reflect_2d", [](const auto& in) { return F::pad(in[0], {1, 2, 2, 1}, "reflect"); });
    check("pad_replicate_1d", [](const auto& in) { return F::pad(in[0], {3, 1}, "replicate"); });
    check("pad_replicate_2d", [](const auto& in) { return F::pad(in[0], {1, 2, 2, 1}, "replicate"); });
    check_error([] { F::pad(xgrad::zeros({3, 4}), {1}); }, "pad: Padding length must be divisible by 2");
    check_error(
        [] {
            F::pad(xgrad::zeros({1, 2, 3}), {3, 3}, "reflect");
        },
        "pad: Argument #4: Padding size should be less than the corresponding input dimension, but got: "
        "padding (3, 3) at dimension 2 of input (1, 2, 3)");
}

TEST_CASE("eye and linspace match PyTorch") {
    golden::check_close(xgrad::eye(3), golden::get(kFile, "eye3"), "eye(3)", 0, 0);
    golden::check_close(xgrad::eye(2, 4, xgrad::kFloat64), golden::get(kFile, "eye24"), "eye(2, 4)", 0, 0);
    golden::check_close(xgrad::eye(3, 2, xgrad::kInt64), golden::get(kFile, "eye32_int"), "eye(3, 2) int64", 0, 0);
    // Bit for bit (see linspace's comment on PyTorch's vector blocks).
    golden::check_close(xgrad::linspace(0, 1, 7), golden::get(kFile, "linspace_f32"), "linspace f32", 0, 0);
    golden::check_close(xgrad::linspace(-3.3, 7.1, 41), golden::get(kFile, "linspace_f32_long"), "linspace 41", 0, 0);
    golden::check_close(xgrad::linspace(5, -7.7, 1001), golden::get(kFile, "linspace_f32_1001"), "linspace 1001", 0, 0);
    golden::check_close(xgrad::linspace(0.1, 123.7, 100, xgrad::kFloat64), golden::get(kFile, "linspace_f64_100"),
                        "linspace f64 100", 0, 0);
    golden::check_close(xgrad::linspace(-7, 100, 23, xgrad::kInt64), golden::get(kFile, "linspace_i64_long"),
                        "linspace i64 23", 0, 0);
    golden::check_close(xgrad::linspace(-2, 3, 10, xgrad::kFloat64), golden::get(kFile, "linspace_f64"), "linspace f64",
                        0, 0);
    golden::check_close(xgrad::linspace(0, 10, 4, xgrad::kInt64), golden::get(kFile, "linspace_i64"), "linspace i64", 0,
                        0);
    golden::check_close(xgrad::linspace(2.5, 9, 1), golden::get(kFile, "linspace_one"), "linspace one step", 0, 0);
    CHECK(xgrad::linspace(0, 1, 0).numel() == 0);
    check_error([] { xgrad::eye(-1); }, "eye: n must be greater or equal to 0, got -1");
    check_error([] { xgrad::linspace(0, 1, -1); }, "linspace: number of steps must be non-negative");
}

TEST_CASE("nn::Flatten and nn::Unflatten reshape and print as PyTorch's") {
    xgrad::nn::Sequential seq(xgrad::nn::Flatten(), xgrad::nn::Flatten(0, 2), xgrad::nn::Unflatten(1, {2, 3}),
                              xgrad::nn::Unflatten(-1, {4}));
    std::ostringstream printed;
    printed << seq;
    std::string repr = "# repr_flatten ";
    for (char c : printed.str()) repr += c == '\n' ? std::string("\\n") : std::string(1, c);
    std::ifstream file(golden::dir() + "/" + kFile);
    std::string line, expected;
    while (std::getline(file, line))
        if (line.rfind("# repr_flatten ", 0) == 0) expected = line;
    CHECK(repr == expected);

    const Tensor x = golden::get(kFile, "flatten_modules.in");
    Tensor y = xgrad::nn::Unflatten(1, {4, -1})(xgrad::nn::Flatten()(x));
    golden::check_close(y, golden::get(kFile, "flatten_modules.out"), "Flatten then Unflatten", 0, 0);
    CHECK(y.shape() == Shape{2, 4, 3});
}

TEST_CASE("indexing with empty indices and 0-d tensors") {
    const Tensor x = xgrad::randn({3, 4}).requires_grad_();
    const Tensor none = xgrad::zeros({0}, xgrad::kInt64);
    CHECK(x.index_select(0, none).shape() == Shape{0, 4});
    CHECK(x.gather(1, xgrad::zeros({3, 0}, xgrad::kInt64)).shape() == Shape{3, 0});
    CHECK(x.index({none}).shape() == Shape{0, 4});
    CHECK(F::embedding(none, x).shape() == Shape{0, 4});
    Tensor same = x.scatter_add(0, xgrad::zeros({0, 4}, xgrad::kInt64), xgrad::ones({0, 4}));
    CHECK(same.to_vector<float>() == x.to_vector<float>());
    Tensor y = x.index_add(0, none, xgrad::ones({0, 4}));
    y.sum().backward();
    CHECK(x.grad().to_vector<float>() == std::vector<float>(12, 1.0f));
    // 0-d: torch.tensor(3.).gather(0, torch.tensor(0)) is tensor(3.).
    const Tensor s = xgrad::tensor(3.0);
    CHECK(s.gather(0, xgrad::tensor(0.0, xgrad::kInt64)).item<float>() == 3.0f);
    CHECK(golden::invalid_argument_of([&] { s.gather(0, xgrad::tensor(1.0, xgrad::kInt64)); }) ==
          "gather: index 1 is out of bounds for dimension 0 with size 1");
}

TEST_CASE("scatter from a src larger than the index: src's other elements get zero gradient") {
    // PyTorch 1.13 computes the same forward but fails in backward (its gradient has the index's shape).
    const Tensor x = xgrad::zeros({2, 3}).requires_grad_(), src = xgrad::arange(12.0).reshape({3, 4}).requires_grad_();
    Tensor y = x.scatter(1, xgrad::tensor({{2.0, 0.0}}, xgrad::kInt64), src);
    CHECK(y.to_vector<float>() == std::vector<float>{1, 0, 0, 0, 0, 0});
    (y * xgrad::arange(1.0, 7.0).reshape({2, 3})).sum().backward();
    CHECK(src.grad().to_vector<float>() == std::vector<float>{3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 2, 0, 4, 5, 6});
}
