// Reductions (sum, mean, var, std, max, min) against PyTorch's values, grad_fn names and gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

namespace {

using xgrad::Dims;
using xgrad::Shape;
using xgrad::Tensor;
using Fn = std::function<Tensor(const Tensor&)>;

const std::string kFile = "reduction.txt";

/// PyTorch's grad_fn name for `key` ("case.dtype"); "" when its output had none.
std::string golden_grad_fn(const std::string& key) {
    return golden::grad_fn_name(kFile, key);
}

/// The golden input of `key` as a fresh tensor (the loader caches, so never mutate its tensors).
Tensor leaf(const std::string& key) {
    Tensor t = golden::get(kFile, key + ".in0").clone();
    if (t.is_floating_point()) t.requires_grad_();
    return t;
}

/// One golden case: `fn` on PyTorch's input must give PyTorch's output, grad_fn name and gradient of
/// (out * w).sum(); in float64 its backward must also agree with finite differences.
struct Case {
    std::string name;
    Fn fn;
    std::vector<std::string> dtypes = {"float32", "float64"};
    bool gradcheck = true;  // false where ties make the function non-differentiable
    bool exact = false;     // the output and gradient are PyTorch's bits, compared as such
};

/// With `exact`, every case's output and gradient are compared as PyTorch's bits.
void check_cases(const std::vector<Case>& cases, bool exact = false) {
    for (const Case& c : cases) {
        for (const std::string& dtype : c.dtypes) {
            const std::string key = c.name + "." + dtype;
            Tensor x = leaf(key);
            Tensor out = c.fn(x);
            golden::check_close(out, golden::get(kFile, key + ".out"), key + " forward");
            const std::string want = golden_grad_fn(key);
            CHECK_MESSAGE(out.grad_fn_name() == want,
                          key << ": grad_fn " << out.grad_fn_name() << ", PyTorch " << want);
            if (want.empty()) continue;
            (out * golden::get(kFile, key + ".w")).sum().backward();
            golden::check_close(x.grad(), golden::get(kFile, key + ".g0"), key + " grad");
            if (c.exact || exact) {
                CHECK_MESSAGE(golden::bits_differ(out, golden::get(kFile, key + ".out")) == 0, key << " forward bits");
                CHECK_MESSAGE(golden::bits_differ(x.grad(), golden::get(kFile, key + ".g0")) == 0, key << " grad bits");
            }
            if (dtype == "float64" && c.gradcheck)
                golden::check_gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0]); }, {leaf(key)},
                                        key + " gradcheck");
        }
    }
}

Tensor step2(const Tensor& x, std::int64_t dim) {
    return x.slice(dim, std::nullopt, std::nullopt, 2);
}

}  // namespace

// The float inputs are (2, 3, 4) unless a case says otherwise.

TEST_CASE("sum") {
    check_cases(
        {
            {"sum_all", [](const Tensor& x) { return x.sum(); }},    // SumBackward0
            {"sum_dim1", [](const Tensor& x) { return x.sum(1); }},  // SumBackward1
            {"sum_dim0_keep", [](const Tensor& x) { return x.sum(0, true); }},
            {"sum_dimneg1_keep", [](const Tensor& x) { return xgrad::sum(x, -1, true); }},
            {"sum_dims02",
             [](const Tensor& x) {
                 return x.sum({0, 2});
             }},
            {"sum_dimsneg2neg1_keep",
             [](const Tensor& x) {
                 return x.sum({-2, -1}, true);
             }},
            {"sum_dims_all",
             [](const Tensor& x) {
                 return x.sum({0, 1, 2});
             }},
            {"sum_transposed", [](const Tensor& x) { return x.transpose(0, 2).sum(0); }},
            {"sum_sliced", [](const Tensor& x) { return step2(x, 2).sum(-1); }},
            {"sum_0d", [](const Tensor& x) { return x.sum(0); }},  // a 0-d input
        },
        /*exact=*/true);
}

TEST_CASE("mean") {
    check_cases(
        {
            {"mean_all", [](const Tensor& x) { return x.mean(); }},    // MeanBackward0
            {"mean_dim1", [](const Tensor& x) { return x.mean(1); }},  // MeanBackward1
            {"mean_dim0_keep", [](const Tensor& x) { return x.mean(0, true); }},
            {"mean_dimneg1_keep", [](const Tensor& x) { return xgrad::mean(x, -1, true); }},
            {"mean_dims02",
             [](const Tensor& x) {
                 return x.mean({0, 2});
             }},
            {"mean_dimsneg2neg1_keep",
             [](const Tensor& x) {
                 return x.mean({-2, -1}, true);
             }},
            {"mean_dims_all",
             [](const Tensor& x) {
                 return x.mean({0, 1, 2});
             }},
            {"mean_transposed", [](const Tensor& x) { return x.transpose(0, 2).mean(0); }},
            {"mean_sliced", [](const Tensor& x) { return step2(x, 2).mean(-1); }},
            {"mean_0d", [](const Tensor& x) { return x.mean(0); }},
        },
        /*exact=*/true);
}

TEST_CASE("var and std") {
    for (const std::string op : {"var", "std"}) {
        CAPTURE(op);
        auto f = [op](const Tensor& x, const Dims& d, bool unbiased, bool keepdim) {
            return op == "var" ? x.var(d, unbiased, keepdim) : x.std(d, unbiased, keepdim);
        };
        check_cases(
            {
                {op + "_all", [op](const Tensor& x) { return op == "var" ? x.var() : x.std(); }},
                {op + "_dim1_unbiased_keep", [f](const Tensor& x) { return f(x, 1, true, true); }},
                {op + "_dim1_unbiased", [f](const Tensor& x) { return f(x, 1, true, false); }},
                {op + "_dim1_biased_keep", [f](const Tensor& x) { return f(x, 1, false, true); }},
                {op + "_dim1_biased", [f](const Tensor& x) { return f(x, 1, false, false); }},
                {op + "_dimneg1_biased", [f](const Tensor& x) { return f(x, -1, false, false); }},
                {op + "_dims02",
                 [f](const Tensor& x) {
                     return f(x, {0, 2}, true, false);
                 }},
                {op + "_dimsneg2neg1_biased_keep",
                 [f](const Tensor& x) {
                     return f(x, {-2, -1}, false, true);
                 }},
                {op + "_dims_all_biased",
                 [f](const Tensor& x) {
                     return f(x, {0, 1, 2}, false, false);
                 }},
                {op + "_transposed", [f](const Tensor& x) { return f(x.transpose(0, 2), 1, true, false); }},
                {op + "_sliced", [f](const Tensor& x) { return f(step2(x, 1), 0, true, false); }},
            },
            /*exact=*/true);
    }
    // A constant row has std 0, where PyTorch's gradient is 0 rather than 0/0. Differences at 0 see |h|.
    check_cases({{"std_constant_row", [](const Tensor& x) { return x.std(1); }, {"float32", "float64"}, false}});
}

TEST_CASE("sums, means and variances over reduced dims that do not merge into one run: PyTorch's bits") {
    // The innermost run's slices are summed one by one, in place (contiguous, strided, permuted), and
    // added up in order; var and std visit the elements by decreasing stride.
    const Dims d02 = {0, 2};
    for (const std::string op : {"sum", "mean"}) {
        CAPTURE(op);
        auto f = [op](const Tensor& x, const Dims& d, bool keepdim) {
            return op == "sum" ? x.sum(d, keepdim) : x.mean(d, keepdim);
        };
        check_cases(
            {
                {op + "_dims02_wide", [&](const Tensor& x) { return f(x, d02, false); }},
                {op + "_dims02_strided", [&](const Tensor& x) { return f(step2(x, 2), d02, false); }},
                {op + "_dims02_permuted",
                 [&](const Tensor& x) {
                     return f(x.permute({2, 1, 0}), d02, false);
                 }},
                {op + "_dims013",
                 [&](const Tensor& x) {
                     return f(x, {0, 1, 3}, true);
                 }},
                {op + "_all_sliced",
                 [op](const Tensor& x) {
                     const Tensor s = x.narrow(1, 1, 2);
                     return op == "sum" ? s.sum() : s.mean();
                 }},
            },
            /*exact=*/true);
    }
    check_cases({{"var_dims02_permuted",
                  [&](const Tensor& x) {
                      return x.permute({2, 1, 0}).var(d02);
                  }},
                 {"std_dims02_permuted",
                  [&](const Tensor& x) {
                      return x.permute({2, 1, 0}).std(d02);
                  }}},
                /*exact=*/true);
    check_cases({{"sum_int_dims02", [&](const Tensor& x) { return x.sum(d02); }, {"int64"}, false}}, /*exact=*/true);
}

TEST_CASE("max and min") {
    const std::vector<std::string> both = {"float32", "float64"};
    for (const std::string op : {"max", "min"}) {
        CAPTURE(op);
        auto all = [op](const Tensor& x) { return op == "max" ? x.max() : x.min(); };
        auto along = [op](const Tensor& x, std::int64_t d, bool keepdim) {
            return op == "max" ? x.max(d, keepdim).values : x.min(d, keepdim).values;
        };
        check_cases({
            {op + "_all", all, both, true, true},  // MaxBackward1 / MinBackward1: PyTorch's bits
            {op + "_dim1", [along](const Tensor& x) { return along(x, 1, false); }},  // MaxBackward0 / MinBackward0
            {op + "_dimneg1_keep", [along](const Tensor& x) { return along(x, -1, true); }},
            {op + "_transposed", [along](const Tensor& x) { return along(x.transpose(0, 2), 0, false); }},
            // Ties: the all-reduction splits the gradient evenly, the reduction along a dim gives it to the
            // first extreme element (the index PyTorch returns). Not differentiable there.
            {op + "_all_ties", all, both, false, true},  // each tie gets grad / count, the rest +0
            {op + "_dim1_ties", [along](const Tensor& x) { return along(x, 1, false); }, both, false},
            {op + "_dim0_ties_keep", [along](const Tensor& x) { return along(x, 0, true); }, both, false},
        });
    }
    // NaN wins; the all-reduction splits the gradient between the NaNs, along a dim the first NaN takes it.
    check_cases({
        {"max_all_nan", [](const Tensor& x) { return x.max(); }, both, false, true},
        {"min_all_nan", [](const Tensor& x) { return x.min(); }, both, false, true},
        {"max_dim1_nan", [](const Tensor& x) { return x.max(1).values; }, both, false},
        {"min_dim0_nan", [](const Tensor& x) { return x.min(0).values; }, both, false},
    });
}

TEST_CASE("amax and amin over leading dims read the columns in place, with the rows' results") {
    // The CPU reduces a leading dim of a contiguous tensor column by column, without the transposed copy
    // a trailing reduction reads: each result must be the same element, the first NaN of the column
    // winning and, among equal values (+0 and -0), the first one.
    const int saved = xgrad::get_num_threads();
    xgrad::manual_seed(9);
    for (int threads : {1, 2}) {
        xgrad::set_num_threads(threads);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64}) {
            Tensor x = (xgrad::randn({37, 3000}) * 4.0).round().to(dtype);  // many ties
            if (dtype != xgrad::kInt64) {
                x.select(0, 5).slice(0, 0, 40).fill_(NAN);  // NaN in some columns, first or after others
                // columns whose extreme is a zero met twice: -0 first, then +0 (amax); +0, then -0 (amin)
                x.slice(1, 20, 100).fill_(-5.0);
                x.slice(1, 100, 180).fill_(5.0);
                x.select(0, 3).slice(0, 20, 100).fill_(-0.0);
                x.select(0, 9).slice(0, 20, 100).fill_(0.0);
                x.select(0, 3).slice(0, 100, 180).fill_(0.0);
                x.select(0, 9).slice(0, 100, 180).fill_(-0.0);
                x.select(0, 2).slice(0, 100, 130).fill_(INFINITY);
            }
            for (bool max : {true, false}) {
                const Tensor got = max ? x.amax(0) : x.amin(0),
                             want = max ? x.t().contiguous().amax(1) : x.t().contiguous().amin(1);
                const std::vector<double> g = got.to(xgrad::kFloat64).to_vector<double>(),
                                          w = want.to(xgrad::kFloat64).to_vector<double>();
                bool same = g.size() == w.size();
                for (std::size_t i = 0; same && i < g.size(); ++i)
                    same =
                        std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]);
                CAPTURE(xgrad::to_string(dtype));
                CAPTURE(max);
                CHECK(same);
                // two leading dims of a 3-D tensor, and keepdim
                const Tensor x3 = x.reshape({37, 30, 100});
                const Tensor r3 = max ? x3.amax({0, 1}, true) : x3.amin({0, 1}, true);
                CHECK(r3.shape() == xgrad::Shape{1, 1, 100});
                const Tensor w3 = max ? x3.permute({2, 0, 1}).contiguous().reshape({100, 1110}).amax(1)
                                      : x3.permute({2, 0, 1}).contiguous().reshape({100, 1110}).amin(1);
                const std::vector<double> a3 = r3.reshape({100}).to(xgrad::kFloat64).to_vector<double>(),
                                          b3 = w3.to(xgrad::kFloat64).to_vector<double>();
                bool same3 = true;
                for (std::size_t i = 0; i < a3.size(); ++i)
                    same3 = same3 && (std::isnan(b3[i]) ? std::isnan(a3[i]) : a3[i] == b3[i]);
                CHECK(same3);
            }
        }
    }
    xgrad::set_num_threads(saved);
}

TEST_CASE("int64 reductions stay int64 and exact") {
    const std::vector<std::string> ints = {"int64"};
    check_cases({
        {"sum_int_all", [](const Tensor& x) { return x.sum(); }, ints},
        {"sum_int_dim0", [](const Tensor& x) { return x.sum(0); }, ints},
        {"max_int_dim1", [](const Tensor& x) { return x.max(1).values; }, ints},
        {"min_int_all", [](const Tensor& x) { return x.min(); }, ints},
    });
    // Beyond 2^53 a double accumulator would round; PyTorch's int64 sums and extremes are exact.
    const std::int64_t big = (std::int64_t{1} << 60) + 1;
    Tensor x = xgrad::from_vector(std::vector<std::int64_t>{big, 1, 1, big - 2}, {2, 2}, xgrad::kInt64);
    CHECK(x.sum().item<std::int64_t>() == 2 * big);
    CHECK(x.sum(1).to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 1, big - 1});
    CHECK(x.max().item<std::int64_t>() == big);
    CHECK(x.max(0).values.to_vector<std::int64_t>() == std::vector<std::int64_t>{big, big - 2});
    CHECK(x.min(1).values.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1});
}

TEST_CASE("bool, uint8 and int32 sums are int64 and exact") {
    using xgrad::kInt64;
    // 3000 x 7: the multiples of 3 below 21000 (7000), by rows, columns (the leading dim, read as
    // (width, rows)) and a transposed view.
    const Tensor n = xgrad::arange(21000.0, kInt64).reshape({3000, 7});
    const Tensor mask = n.remainder(3.0) == 0.0;
    REQUIRE(mask.dtype() == xgrad::kBool);
    CHECK(mask.sum().dtype() == kInt64);
    CHECK(mask.sum().item<std::int64_t>() == 7000);
    CHECK(mask.sum(0).to_vector<std::int64_t>() == std::vector<std::int64_t>{1000, 1000, 1000, 1000, 1000, 1000, 1000});
    const std::vector<std::int64_t> rows = mask.sum(1).to_vector<std::int64_t>();
    for (std::size_t r = 0; r < rows.size(); ++r) {  // row r holds 7r .. 7r + 6
        std::int64_t expected = 0;
        for (std::int64_t v = 7 * static_cast<std::int64_t>(r); v < 7 * static_cast<std::int64_t>(r) + 7; ++v)
            expected += v % 3 == 0;
        CHECK_MESSAGE(rows[r] == expected, "row " << r);
    }
    CHECK(mask.t().sum(0).to_vector<std::int64_t>() == rows);
    CHECK(mask.sum(1, true).shape() == Shape{3000, 1});
    // uint8 wraps nowhere: 0..255 repeated, summed in int64 (255 * 256 / 2 per period).
    const Tensor u = n.remainder(256.0).to(xgrad::kUInt8);
    CHECK(u.sum().item<std::int64_t>() == 82 * 32640 + (21000 - 82 * 256) * (21000 - 82 * 256 - 1) / 2);
    CHECK(u.sum(0).equal(u.to(kInt64).sum(0)));
    CHECK(u.reshape({3, 1000, 7}).sum(1).equal(u.to(kInt64).reshape({3, 1000, 7}).sum(1)));
    // int32 sums past int32's range, and negative values.
    const std::int64_t top = 2147483647;
    const Tensor i =
        xgrad::from_vector(std::vector<std::int64_t>{top, top, top, -5, top, -top}, {2, 3}, kInt64).to(xgrad::kInt32);
    CHECK(i.sum().item<std::int64_t>() == 3 * top - 5);
    CHECK(i.sum(1).to_vector<std::int64_t>() == std::vector<std::int64_t>{3 * top, -5});
    CHECK(i.sum(0).to_vector<std::int64_t>() == std::vector<std::int64_t>{top - 5, 2 * top, 0});
}

TEST_CASE("errors name the op and the shapes") {
    Tensor x = xgrad::zeros({2, 3});
    SUBCASE("dim out of range") {
        golden::check_throws([&] { (void)x.sum(2); }, {"sum", "dimension 2", "(2, 3)"});
        golden::check_throws([&] { (void)x.mean(-3); }, {"mean", "dimension -3", "(2, 3)"});
        golden::check_throws([&] { (void)x.var(2); }, {"var", "dimension 2", "(2, 3)"});
        golden::check_throws([&] { (void)x.std({0, -3}); }, {"std", "dimension -3", "(2, 3)"});
        golden::check_throws([&] { (void)x.max(2); }, {"max", "dimension 2", "(2, 3)"});
        golden::check_throws([&] { (void)x.min(-3); }, {"min", "dimension -3", "(2, 3)"});
    }
    SUBCASE("repeated dims") {
        golden::check_throws([&] { (void)x.sum({0, 0}); }, {"sum", "multiple times", "(2, 3)"});
        golden::check_throws([&] { (void)x.mean({1, -1}); }, {"mean", "multiple times", "(2, 3)"});
        golden::check_throws([&] { (void)x.var({-2, 0}); }, {"var", "multiple times", "(2, 3)"});
    }
    SUBCASE("mean, var and std need floating point") {
        Tensor i = xgrad::zeros({2, 3}, xgrad::kInt64);
        golden::check_throws([&] { (void)i.mean(); }, {"mean", "torch.int64", "(2, 3)"});
        golden::check_throws([&] { (void)i.mean(0); }, {"mean", "torch.int64", "(2, 3)"});
        golden::check_throws([&] { (void)i.var(); }, {"var", "torch.int64", "(2, 3)"});
        golden::check_throws([&] { (void)i.std(1); }, {"std", "torch.int64", "(2, 3)"});
    }
    SUBCASE("max and min of an empty dimension") {
        Tensor e = xgrad::zeros({2, 0});
        golden::check_throws([&] { (void)e.max(1); }, {"max", "(2, 0)"});
        golden::check_throws([&] { (void)e.min(); }, {"min", "(2, 0)"});
    }
}

TEST_CASE("sum and mean add in PyTorch's order: bit-identical results") {
    // Rounding noise such as the mean of a normalised row (2.4835e-09 in the notebooks) is only
    // reproducible if every addition happens in PyTorch's order; so no tolerance here.
    const auto& all = golden::load("sum_order.txt");
    int checked = 0;
    for (const auto& [name, x] : all) {
        if (name.size() < 2 || name.substr(name.size() - 2) != ".x") continue;
        std::string base = name.substr(0, name.size() - 2);
        CAPTURE(base);
        if (base.rfind("inner.", 0) == 0) {
            golden::check_close(x.sum(-1), golden::get("sum_order.txt", base + ".sum"), base + " sum", 0, 0);
            golden::check_close(x.mean(-1, true), golden::get("sum_order.txt", base + ".mean"), base + " mean", 0, 0);
        } else if (base.rfind("outer.", 0) == 0) {
            golden::check_close(x.sum(0), golden::get("sum_order.txt", base + ".sum"), base + " sum", 0, 0);
            golden::check_close(x.mean(0), golden::get("sum_order.txt", base + ".mean"), base + " mean", 0, 0);
        } else {
            golden::check_close(x.sum(), golden::get("sum_order.txt", base + ".sum"), base + " sum", 0, 0);
            golden::check_close(x.mean(), golden::get("sum_order.txt", base + ".mean"), base + " mean", 0, 0);
        }
        ++checked;
    }
    CHECK(checked == 2 * (25 + 9 + 1));
}

TEST_CASE("sums over middle dims add each outer block down its columns, as PyTorch") {
    // gen_sum_order.py's middle.*: the reduced dims between kept ones, on 1 and 2 threads.
    const auto& all = golden::load("sum_order.txt");
    int checked = 0;
    const int saved = xgrad::get_num_threads();
    for (const auto& [name, x] : all) {
        if (name.rfind("middle.", 0) != 0 || name.substr(name.size() - 3) != ".in") continue;
        const std::string base = name.substr(0, name.size() - 3);
        std::vector<std::int64_t> dims;
        for (std::size_t k = base.find(".dims") + 5; k < base.size(); ++k) dims.push_back(base[k] - '0');
        CAPTURE(base);
        for (int threads : {1, 2}) {
            xgrad::set_num_threads(threads);
            CAPTURE(threads);
            CHECK(golden::bits_differ(x.sum(xgrad::Dims(dims)), golden::get("sum_order.txt", base + ".sum")) == 0);
            CHECK(golden::bits_differ(x.mean(xgrad::Dims(dims), true), golden::get("sum_order.txt", base + ".mean")) ==
                  0);
        }
        ++checked;
    }
    xgrad::set_num_threads(saved);
    CHECK(checked == 2 * 11);
}

TEST_CASE("rows of -0 sum to +0, as in PyTorch") {
    // Short rows start their register sums at their first elements rather than at +0; the sum of the
    // lanes starts at +0 and so still takes a -0 away, as PyTorch's kernel does.
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64})
        for (std::int64_t width : {5, 8, 16, 48, 64, 100, 600}) {
            CAPTURE(width);
            const Tensor s = xgrad::full({3, width}, -0.0, dtype).sum(-1);
            for (double v : s.to(xgrad::kFloat64).to_vector<double>()) {
                CHECK(v == 0.0);
                CHECK_FALSE(std::signbit(v));
            }
        }
}

TEST_CASE("prod multiplies in PyTorch's order: bit-identical results") {
    // PyTorch multiplies a contiguous innermost dim in vector lanes and an outer dim element by
    // element; a long row's product differs in its last bits between the two orders.
    const auto& all = golden::load("sum_order.txt");
    int checked = 0;
    for (const auto& [name, x] : all) {
        if (name.rfind("prod.", 0) != 0 || name.size() < 3 || name.substr(name.size() - 3) != ".in") continue;
        const std::string base = name.substr(0, name.size() - 3);
        const Tensor& want = golden::get("sum_order.txt", base + ".prod");
        CAPTURE(base);
        Tensor got;
        if (base.rfind("prod.inner.", 0) == 0) {
            got = x.prod(-1);
        } else if (base.find(".all") != std::string::npos) {
            got = x.prod();
        } else {
            got = x.prod(base.find(".dim0") != std::string::npos ? 0 : 1);
        }
        golden::check_close(got, want, base, 0, 0);
        // The same at two threads (rows split between them).
        const int saved = xgrad::get_num_threads();
        xgrad::set_num_threads(2);
        golden::check_close(base.rfind("prod.inner.", 0) == 0 ? x.prod(-1) : got, want, base + " 2 threads", 0, 0);
        xgrad::set_num_threads(saved);
        ++checked;
    }
    CHECK(checked == 2 * (18 + 5));
}

/// The strided view a gen_sum_order.py case names (`PREFIX.TAG.K.eSHAPE.pPERM.sDIM`): its base `x`
/// expanded to SHAPE, permuted by PERM ("-": not), then every second element from the second along
/// dim DIM ("-": not sliced).
Tensor strided_case(const std::string& base, const Tensor& x) {
    const std::size_t e = base.find(".e"), p = base.find(".p", e), s = base.find(".s", p);
    std::vector<std::int64_t> shape, perm;
    std::stringstream dims_text(base.substr(e + 2, p - e - 2));
    for (std::string n; std::getline(dims_text, n, 'x');) shape.push_back(std::stoll(n));
    for (char c : base.substr(p + 2, s - p - 2))
        if (c != '-') perm.push_back(c - '0');
    Tensor v = x.expand(Shape(shape));
    if (!perm.empty()) v = v.permute(Dims(perm));
    if (base[s + 2] != '-') v = v.slice(base[s + 2] - '0', 1, {}, 2);
    return v;
}

TEST_CASE("sums of strided and expanded inputs read them in place, in PyTorch's order") {
    // gen_sum_order.py's bcast.*: a permuted, sliced or expanded (stride 0) input is summed in the order
    // PyTorch's TensorIterator gives its strides, which differs from a contiguous copy's in many of these
    // cases (x.t().sum(1) is summed as x.sum(0)).
    const auto& all = golden::load("sum_order.txt");
    const int saved = xgrad::get_num_threads();
    int checked = 0;
    for (const auto& [name, x] : all) {
        if (name.rfind("bcast.", 0) != 0 || name.substr(name.size() - 3) != ".in") continue;
        const std::string base = name.substr(0, name.size() - 3);  // bcast.TAG.K.eSHAPE.pPERM.sDIM
        const Tensor v = strided_case(base, x);
        for (const auto& entry : all) {
            const std::string& key = entry.first;  // not a structured binding: CAPTURE's lambda takes it
            const Tensor& want = entry.second;
            if (key.rfind(base + ".d", 0) != 0 || key.substr(key.size() - 4) != ".sum") continue;
            const std::string dl = key.substr(base.size() + 2, key.size() - base.size() - 6);
            std::vector<std::int64_t> dims;
            if (dl != "all")
                for (char c : dl) dims.push_back(c - '0');
            CAPTURE(key);
            for (int threads : {1, 2}) {
                xgrad::set_num_threads(threads);
                CAPTURE(threads);
                CHECK(golden::bits_differ(dims.empty() ? v.sum() : v.sum(Dims(dims)), want) == 0);
                const Tensor& mean = golden::get("sum_order.txt", key.substr(0, key.size() - 4) + ".mean");
                CHECK(golden::bits_differ(dims.empty() ? v.mean() : v.mean(Dims(dims)), mean) == 0);
            }
            ++checked;
        }
    }
    xgrad::set_num_threads(saved);
    CHECK(checked == 2 * 49);
}

TEST_CASE("products, norms, variances and sums of strided inputs follow PyTorch's order, keepdim included") {
    // gen_sum_order.py's layout.*: prod reads a strided input in place (lanes where its iterator finds
    // a contiguous reduced run), as the float 2-norm's vector path does; var and std with one result
    // take the mean from the strided sum and the squares in the input's own order; with more results,
    // the Welford pass visits the reduced dims in the iterator's order, which keepdim can change.
    const auto& all = golden::load("sum_order.txt");
    const int saved = xgrad::get_num_threads();
    int checked = 0;
    for (const auto& [name, x] : all) {
        if (name.rfind("layout.", 0) != 0 || name.substr(name.size() - 3) != ".in") continue;
        const std::string base = name.substr(0, name.size() - 3);
        const Tensor v = strided_case(base, x);
        for (const auto& entry : all) {
            const std::string& key = entry.first;  // not a structured binding: CAPTURE's lambda takes it
            if (key.rfind(base + ".d", 0) != 0) continue;
            // .dDIMS.kKEEPDIM.OP
            const std::size_t k = key.find(".k", base.size() + 2), op_at = key.find('.', k + 1);
            const std::string dl = key.substr(base.size() + 2, k - base.size() - 2), op = key.substr(op_at + 1);
            const bool keepdim = key[k + 2] == '1';
            std::vector<std::int64_t> dims;
            if (dl != "all")
                for (char c : dl) dims.push_back(c - '0');
            const bool whole = dims.empty();
            const Dims d(dims);
            auto run = [&]() -> Tensor {
                if (op == "sum") return whole ? v.sum() : v.sum(d, keepdim);
                if (op == "mean") return whole ? v.mean() : v.mean(d, keepdim);
                if (op == "prod") return whole ? v.prod() : v.prod(dims[0], keepdim);
                if (op == "norm") return whole ? v.norm() : v.norm(2.0, d, keepdim);
                const bool unbiased = op.back() == '1';
                if (op.rfind("var", 0) == 0)
                    return whole ? v.var(Dims(std::vector<std::int64_t>{}), unbiased) : v.var(d, unbiased, keepdim);
                return whole ? v.std(Dims(std::vector<std::int64_t>{}), unbiased) : v.std(d, unbiased, keepdim);
            };
            CAPTURE(key);
            for (int threads : {1, 2}) {
                xgrad::set_num_threads(threads);
                CAPTURE(threads);
                CHECK(golden::bits_differ(run(), entry.second) == 0);
            }
            ++checked;
        }
    }
    xgrad::set_num_threads(saved);
    CHECK(checked == 222);
}

TEST_CASE("variances on a midpoint between two floats round as PyTorch's") {
    // gen_sum_order.py's ties.*: constant rows (PyTorch's float mean is an ulp off, so a float
    // variance is tiny, not 0) and rows of two repeated values (the population std can sit on a
    // midpoint between floats): the fast paths' double results there are checked and, near a
    // midpoint, computed again in PyTorch's order.
    int checked = 0;
    for (const char* tag : {"f32", "f64"})
        for (const char* nm : {"const", "two"}) {
            const std::string base = std::string("ties.") + tag + "." + nm;
            CAPTURE(base);
            const Tensor& x = golden::get("sum_order.txt", base + ".in");
            const Dims last{-1}, first{0};
            CHECK(golden::bits_differ(x.var(last, false), golden::get("sum_order.txt", base + ".var0")) == 0);
            CHECK(golden::bits_differ(x.std(last, false), golden::get("sum_order.txt", base + ".std0")) == 0);
            const Tensor& var0 = golden::get("sum_order.txt", base + ".all.var0");
            const Tensor& std0 = golden::get("sum_order.txt", base + ".all.std0");
            for (std::int64_t r = 0; r < x.size(0); ++r) {
                CAPTURE(r);
                CHECK(golden::bits_differ(x[r].var(first, false), var0[r]) == 0);
                CHECK(golden::bits_differ(x[r].std(first, false), std0[r]) == 0);
            }
            ++checked;
        }
    CHECK(checked == 4);
}

TEST_CASE("a broadcast add's gradients sum the expanded gradient in PyTorch's order") {
    for (const char* tag : {"f32", "f64"}) {
        CAPTURE(tag);
        const std::string base = std::string("bcastgrad.") + tag;
        Tensor a = golden::get("sum_order.txt", base + ".a.in").detach().requires_grad_(true);
        Tensor b = golden::get("sum_order.txt", base + ".b.in").detach().requires_grad_(true);
        ((a + b).sum() * 0.1).backward();
        CHECK(golden::bits_differ(a.grad(), golden::get("sum_order.txt", base + ".a.grad")) == 0);
        CHECK(golden::bits_differ(b.grad(), golden::get("sum_order.txt", base + ".b.grad")) == 0);
    }
}

TEST_CASE("long sums keep PyTorch's one-thread bits at any number of threads") {
    // Many top-level cascade blocks, which xgrad sums in parallel and then adds in order. The inputs
    // are the global generator's (PyTorch's numbers for the same seed).
    struct Long {
        const char* name;
        std::uint64_t seed;
        Shape shape;
        xgrad::DType dtype;
        int dim;  // 99: the whole tensor
    };
    const Long cases[] = {{"long.f32.all", 7, {3 * (1 << 18) + 5}, xgrad::kFloat32, 99},
                          {"long.f32.rows", 8, {3, (1 << 20) + 3}, xgrad::kFloat32, -1},
                          {"long.f32.cols", 9, {4097, 96}, xgrad::kFloat32, 0},
                          {"long.f64.all", 10, {(1 << 19) + 7}, xgrad::kFloat64, 99}};
    const int saved = xgrad::get_num_threads();
    for (const Long& c : cases) {
        xgrad::manual_seed(c.seed);
        const Tensor x = xgrad::randn(c.shape, c.dtype);
        for (int threads : {1, 2, 3}) {
            xgrad::set_num_threads(threads);
            CAPTURE(threads);
            const Tensor s = c.dim == 99 ? x.sum() : x.sum(c.dim);
            golden::check_close(s, golden::get("sum_order.txt", std::string(c.name) + ".sum"), c.name, 0, 0);
        }
    }
    xgrad::set_num_threads(saved);
}

TEST_CASE("an empty list of dims reduces them all, keepdim keeping each as 1 (as PyTorch 1.13's dim=[])") {
    const xgrad::Dims all(std::vector<std::int64_t>{});
    const Tensor base = xgrad::arange(12.0).reshape({3, 4}) * 0.37 - 1.0;
    for (const Tensor& x : {base, base.t()}) {  // contiguous, and transposed (the general walk)
        CAPTURE(x.is_contiguous());
        for (bool keepdim : {false, true}) {
            CAPTURE(keepdim);
            const xgrad::Shape expected = keepdim ? xgrad::Shape{1, 1} : xgrad::Shape{};
            const Tensor s = x.sum(all, keepdim), m = x.mean(all, keepdim), v = x.var(all, true, keepdim);
            CHECK(s.shape() == expected);
            CHECK(m.shape() == expected);
            CHECK(v.shape() == expected);
            CHECK(s.reshape({}).item<float>() == x.sum().item<float>());
            CHECK(m.reshape({}).item<float>() == x.mean().item<float>());
            CHECK(v.reshape({}).item<float>() == x.var().item<float>());
        }
    }
}
