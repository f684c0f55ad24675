// max/min with indices, amax/amin, argmax/argmin, sort/argsort/topk, prod, cumsum, cumprod, logsumexp
// and var/std with correction, against PyTorch's values, indices, grad_fn names and gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "../src/kernels/cpu/vec_math.hpp"
#include "golden.hpp"
#include "xgrad/xgrad.hpp"

namespace {

using xgrad::Correction;
using xgrad::Tensor;
using xgrad::ValuesIndices;

const std::string kFile = "reduction_more.txt";
const std::vector<std::string> kFloats = {"float32", "float64"};
const std::vector<std::string> kInt64 = {"int64"};

/// The golden input of `key` as a fresh tensor (floating ones require grad).
Tensor leaf(const std::string& key) {
    Tensor t = golden::get(kFile, key + ".in0").clone();
    if (t.is_floating_point()) t.requires_grad_();
    return t;
}

/// One golden case: on PyTorch's input, `fn` must give PyTorch's output (and indices, where the case
/// has them), grad_fn name and gradient of (out * w).sum(); in float64 the backward must also agree
/// with finite differences unless `gradcheck` is off (ties, NaN, infinities).
struct Case {
    std::string name;
    std::function<ValuesIndices(const Tensor&)> fn;
    std::vector<std::string> dtypes = kFloats;
    bool gradcheck = true;
};

/// A case whose op returns one tensor.
std::function<ValuesIndices(const Tensor&)> one(std::function<Tensor(const Tensor&)> f) {
    return [f](const Tensor& x) { return ValuesIndices{f(x), Tensor()}; };
}

/// Compares the cases' outputs and gradients as PyTorch's bits too where the CPU has FMA (the goldens
/// come from PyTorch's AVX2 kernels); `exact` insists on every instruction set.
void check_cases(const std::vector<Case>& cases, bool exact = false) {
    const bool fma = xgrad::kernels::cpu::simd_arch() != xgrad::kernels::cpu::SimdArch::kSse2;
    for (const Case& c : cases) {
        const bool bits = exact || fma;
        for (const std::string& dtype : c.dtypes) {
            const std::string key = c.name + "." + dtype;
            CAPTURE(key);
            Tensor x = leaf(key);
            ValuesIndices r = c.fn(x);
            golden::check_close(r.values, golden::get(kFile, key + ".out"), key + " forward");
            if (r.indices.defined()) golden::check_close(r.indices, golden::get(kFile, key + ".idx"), key + " indices");
            const std::string want = golden::grad_fn_name(kFile, key);
            CHECK_MESSAGE(r.values.grad_fn_name() == want,
                          key << ": grad_fn " << r.values.grad_fn_name() << ", PyTorch " << want);
            if (want.empty()) continue;
            (r.values * golden::get(kFile, key + ".w")).sum().backward();
            golden::check_close(x.grad(), golden::get(kFile, key + ".g0"), key + " grad");
            if (bits) {
                CHECK_MESSAGE(golden::bits_differ(r.values, golden::get(kFile, key + ".out")) == 0, "forward bits");
                CHECK_MESSAGE(golden::bits_differ(x.grad(), golden::get(kFile, key + ".g0")) == 0, "grad bits");
            }
            if (dtype == "float64" && c.gradcheck)
                golden::check_gradcheck([&](const std::vector<Tensor>& in) { return c.fn(in[0]).values; }, {leaf(key)},
                                        key + " gradcheck");
        }
    }
}

}  // namespace

TEST_CASE("max and min along a dim: values, the first index, and the gradient at that index") {
    for (const std::string op : {"max", "min"}) {
        CAPTURE(op);
        auto along = [op](std::int64_t d, bool keepdim) {
            return [op, d, keepdim](const Tensor& x) { return op == "max" ? x.max(d, keepdim) : x.min(d, keepdim); };
        };
        check_cases({
            {op + "_dim1", along(1, false)},  // MaxBackward0 / MinBackward0
            {op + "_dimneg1_keep", along(-1, true)},
            {op + "_dim0_transposed", [along](const Tensor& x) { return along(0, false)(x.transpose(0, 2)); }},
            // Ties: the first index, which takes the whole gradient. A NaN wins at its first index.
            {op + "_dim1_ties", along(1, false), kFloats, false},
            {op + "_dim1_nan", along(1, false), kFloats, false},
            {op + "_0d", along(0, false)},
            {op + "_int_dim0", along(0, false), kInt64},
        });
        // The values-only form over one dim is the same function.
        Tensor x = leaf(op + "_dim1_ties.float64");
        Tensor v = op == "max" ? x.max(xgrad::Dims{1}) : x.min(xgrad::Dims{1});
        CHECK(v.grad_fn_name() == (op == "max" ? "MaxBackward0" : "MinBackward0"));
        (v * golden::get(kFile, op + "_dim1_ties.float64.w")).sum().backward();
        golden::check_close(x.grad(), golden::get(kFile, op + "_dim1_ties.float64.g0"), op + " values-only grad");
    }
}

TEST_CASE("amax and amin: ties share the gradient evenly; max over several dims is amax") {
    for (const std::string op : {"max", "min"}) {
        CAPTURE(op);
        auto a = [op](xgrad::Dims d, bool keepdim) {
            return one(
                [op, d, keepdim](const Tensor& x) { return op == "max" ? x.amax(d, keepdim) : x.amin(d, keepdim); });
        };
        const xgrad::Dims all(std::vector<std::int64_t>{});
        check_cases({
            {"a" + op + "_all", a(all, false)},  // AmaxBackward0 / AminBackward0
            {"a" + op + "_dims02", a({0, 2}, false)},
            {"a" + op + "_dimneg1_keep", a(-1, true)},
            {"a" + op + "_dims01_ties_keep", a({0, 1}, true), kFloats, false},
            {"a" + op + "_all_ties", a(all, false), kFloats, false},
            {"a" + op + "_dim1_nan", a(1, false), kFloats, false},
            // max/min over several dims: amax/amin's values and gradient.
            {"a" + op + "_dims01_ties_keep", one([op](const Tensor& x) {
                 return op == "max" ? x.max({0, 1}, true) : x.min({0, 1}, true);
             }),
             kFloats, false},
        });
    }
    // The free functions.
    Tensor x = leaf("amax_dims02.float64");
    golden::check_close(xgrad::amax(x, {0, 2}), golden::get(kFile, "amax_dims02.float64.out"), "xgrad::amax");
    golden::check_close(xgrad::amin(leaf("amin_all.float32")), golden::get(kFile, "amin_all.float32.out"),
                        "xgrad::amin");
}

TEST_CASE("argmax and argmin: flattened or along a dim, the first occurrence") {
    for (const std::string op : {"argmax", "argmin"}) {
        CAPTURE(op);
        auto f = [op](std::optional<std::int64_t> d, bool keepdim) {
            return one([op, d, keepdim](const Tensor& x) {
                return op == "argmax" ? x.argmax(d, keepdim) : x.argmin(d, keepdim);
            });
        };
        check_cases({
            {op + "_flat", f(std::nullopt, false)},
            {op + "_flat_keep", f(std::nullopt, true)},  // every dim kept, as size 1
            {op + "_dim1", f(1, false)},
            {op + "_dimneg1_keep", f(-1, true)},
            {op + "_ties", f(0, false)},
            {op + "_nan", f(1, false)},
            {op + "_int", f(std::nullopt, false), kInt64},
        });
    }
    CHECK(xgrad::argmax(leaf("argmax_dim1.float32"), 1).to_vector<std::int64_t>() ==
          golden::get(kFile, "argmax_dim1.float32.out").to_vector<std::int64_t>());
}

TEST_CASE("sort, argsort and topk") {
    auto sort = [](std::int64_t d, bool desc, bool stable = false) {
        return [d, desc, stable](const Tensor& x) { return x.sort(d, desc, stable); };
    };
    check_cases({
        {"sort_last", sort(-1, false)},  // SortBackward0
        {"sort_dim0_desc", sort(0, true)},
        {"sort_transposed", [](const Tensor& x) { return x.transpose(0, 1).sort(1); }},
        {"sort_ties_stable", sort(-1, false, true), kFloats, false},  // SortBackward1
        {"sort_ties_stable_desc", sort(0, true, true), kFloats, false},
        {"sort_nan", sort(1, false), kFloats, false},  // NaN above every number
        {"sort_nan_desc", sort(1, true), kFloats, false},
        {"sort_int", sort(1, false, true), kInt64},
        {"sort_0d", sort(-1, false)},
        {"argsort_desc", one([](const Tensor& x) { return x.argsort(1, true); })},
        {"argsort_ties_stable", one([](const Tensor& x) { return xgrad::argsort(x, -1, false, true); })},
        // Ties without `stable`: PyTorch's CPU order (libstdc++'s sort, partial_sort, nth_element).
        {"sort_ties", sort(-1, false), kFloats, false},
        {"sort_ties_desc_dim0", sort(0, true), kFloats, false},
        {"argsort_ties", one([](const Tensor& x) { return x.argsort(-1); }), kFloats, false},
        {"topk_ties", [](const Tensor& x) { return x.topk(3); }, kFloats, false},
        {"topk_ties_partial", [](const Tensor& x) { return x.topk(2); }, kFloats, false},
        {"topk_ties_smallest", [](const Tensor& x) { return x.topk(6, -1, false); }, kFloats, false},
        {"topk_ties_unsorted", [](const Tensor& x) { return x.topk(7, -1, true, false); }, kFloats, false},
        {"sort_int_unstable", sort(1, false), kInt64},
        {"kthvalue_2", [](const Tensor& x) { return x.kthvalue(2); }},  // KthvalueBackward0
        {"kthvalue_dim0_keep", [](const Tensor& x) { return xgrad::kthvalue(x, 3, 0, true); }},
        {"kthvalue_ties", [](const Tensor& x) { return x.kthvalue(17); }, kFloats, false},
        {"kthvalue_ties_dim0", [](const Tensor& x) { return x.kthvalue(30, 0); }, kFloats, false},
        {"kthvalue_nan", [](const Tensor& x) { return x.kthvalue(3, 1); }, kFloats, false},
        {"kthvalue_int", [](const Tensor& x) { return x.kthvalue(4, 1); }, kInt64},
        {"median_dim", [](const Tensor& x) { return x.median(-1); }},  // MedianBackward1
        {"median_dim0_keep", [](const Tensor& x) { return xgrad::median(x, 0, true); }},
        {"median_ties", [](const Tensor& x) { return x.median(1); }, kFloats, false},
        {"median_ties_odd", [](const Tensor& x) { return x.median(0); }, kFloats, false},
        {"median_nan", [](const Tensor& x) { return x.median(1); }, kFloats, false},
        {"median_all", one([](const Tensor& x) { return x.median(); })},  // MedianBackward0
        {"median_all_nan", one([](const Tensor& x) { return xgrad::median(x); }), kFloats, false},
        {"median_int", [](const Tensor& x) { return x.median(1); }, kInt64},
        {"topk_2", [](const Tensor& x) { return x.topk(2); }},  // TopkBackward0
        {"topk_3_dim0_smallest", [](const Tensor& x) { return xgrad::topk(x.transpose(0, 1), 3, 0, false); }},
        {"topk_all", [](const Tensor& x) { return x.topk(4, -1); }},
        {"topk_0", [](const Tensor& x) { return x.topk(0, 1); }},
        {"topk_dim0", [](const Tensor& x) { return x.topk(2, 0); }},
    });
    auto [values, indices] = xgrad::sort(leaf("sort_last.float64"));
    golden::check_close(values, golden::get(kFile, "sort_last.float64.out"), "structured binding: values");
    golden::check_close(indices, golden::get(kFile, "sort_last.float64.idx"), "structured binding: indices");
}

TEST_CASE("prod, cumsum and cumprod, with exact gradients where elements are zero") {
    check_cases({
        {"prod_all", one([](const Tensor& x) { return x.prod(); })},    // ProdBackward0
        {"prod_dim1", one([](const Tensor& x) { return x.prod(1); })},  // ProdBackward1
        {"prod_dim0_keep", one([](const Tensor& x) { return xgrad::prod(x, 0, true); })},
        {"prod_dim1_zeros", one([](const Tensor& x) { return x.prod(1); })},
        {"prod_all_one_zero", one([](const Tensor& x) { return x[0].prod(); })},
        {"prod_all_two_zeros", one([](const Tensor& x) { return xgrad::prod(x); })},
        {"prod_int", one([](const Tensor& x) { return x.prod(1); }), kInt64},
        {"cumsum_dim0", one([](const Tensor& x) { return x.cumsum(0); })},
        {"cumsum_dimneg1", one([](const Tensor& x) { return xgrad::cumsum(x, -1); })},
        {"cumsum_transposed", one([](const Tensor& x) { return x.transpose(0, 2).cumsum(1); })},
        {"cumsum_int", one([](const Tensor& x) { return x.cumsum(1); }), kInt64},
        {"cumprod_dim1", one([](const Tensor& x) { return x.cumprod(1); })},
        {"cumprod_dimneg1", one([](const Tensor& x) { return xgrad::cumprod(x, -1); })},
        {"cumprod_zeros", one([](const Tensor& x) { return x.cumprod(1); })},
        {"cumprod_zeros_dim0", one([](const Tensor& x) { return x.cumprod(0); })},
        {"cumprod_int", one([](const Tensor& x) { return x.cumprod(0); }), kInt64},
    });
    // Empty products are 1, as PyTorch.
    CHECK(xgrad::zeros({2, 0}).prod(1).to_vector<float>() == std::vector<float>{1.0F, 1.0F});
}

TEST_CASE("running sums and products, and products down a dim, interleaved rows: each row's order kept") {
    // The CPU kernels run four (scans) or eight (products) rows' chains at once, and scan or multiply
    // down a leading dim column by column in place; each element must still get its row's (column's)
    // operations in order: a running sum or product in double (float32 and float64, as PyTorch's CPU
    // cumsum and cumprod), a product in the tensor's dtype, element by element down dim 0.
    xgrad::manual_seed(5);
    for (std::int64_t rows : {1, 3, 4, 7, 8, 9, 17}) {
        for (std::int64_t cols : {5, 64}) {
            const Tensor x = xgrad::randn({rows, cols}, xgrad::kFloat64).mul(0.5).add(1.0);
            const std::vector<double> v = x.to_vector<double>();
            for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64}) {
                const Tensor t = dtype == xgrad::kInt64 ? x.mul(3.0).to(xgrad::kInt64) : x.to(dtype);
                const std::vector<double> e = t.to(xgrad::kFloat64).to_vector<double>();
                auto at = [&](std::int64_t r, std::int64_t c) { return e[static_cast<std::size_t>(r * cols + c)]; };
                auto as_dtype = [&](double d) {  // a value rounded to the dtype, as the kernel stores it
                    return dtype == xgrad::kFloat32 ? static_cast<double>(static_cast<float>(d)) : d;
                };
                std::vector<double> sum0(e.size()), sum1(e.size()), rsum1(e.size()), prod0(cols), cprod0(e.size()),
                    rsum0(e.size());
                for (std::int64_t c = 0; c < cols; ++c) {
                    double acc = 0, p = 1, cp = 1, back = 0;
                    for (std::int64_t r = 0; r < rows; ++r) {
                        acc += at(r, c);
                        sum0[static_cast<std::size_t>(r * cols + c)] = as_dtype(acc);
                        p = as_dtype(p * at(r, c));
                        cp *= at(r, c);  // running products accumulate in double too
                        cprod0[static_cast<std::size_t>(r * cols + c)] = as_dtype(cp);
                        back += at(rows - 1 - r, c);
                        rsum0[static_cast<std::size_t>((rows - 1 - r) * cols + c)] = as_dtype(back);
                    }
                    prod0[static_cast<std::size_t>(c)] = p;
                }
                for (std::int64_t r = 0; r < rows; ++r) {
                    double acc = 0, back = 0;
                    for (std::int64_t c = 0; c < cols; ++c) {
                        acc += at(r, c);
                        sum1[static_cast<std::size_t>(r * cols + c)] = as_dtype(acc);
                        back += at(r, cols - 1 - c);
                        rsum1[static_cast<std::size_t>(r * cols + cols - 1 - c)] = as_dtype(back);
                    }
                }
                CAPTURE(rows);
                CAPTURE(cols);
                CAPTURE(xgrad::to_string(dtype));
                CHECK(t.cumsum(0).to(xgrad::kFloat64).to_vector<double>() == sum0);
                CHECK(t.cumsum(1).to(xgrad::kFloat64).to_vector<double>() == sum1);
                if (dtype != xgrad::kInt64) {
                    CHECK(t.prod(0).to(xgrad::kFloat64).to_vector<double>() == prod0);
                    // cumsum's gradient is the running sum from the row's end
                    Tensor leaf = t.detach().requires_grad_();
                    leaf.cumsum(1).backward(t);
                    CHECK(leaf.grad().to(xgrad::kFloat64).to_vector<double>() == rsum1);
                    Tensor leaf0 = t.detach().requires_grad_();
                    leaf0.cumsum(0).backward(t);
                    CHECK(leaf0.grad().to(xgrad::kFloat64).to_vector<double>() == rsum0);
                    CHECK(t.cumprod(0).to(xgrad::kFloat64).to_vector<double>() == cprod0);
                }
            }
        }
    }
}

TEST_CASE("logsumexp: no overflow, infinities as PyTorch") {
    check_cases({
        {"logsumexp_dim1", one([](const Tensor& x) { return x.logsumexp(1); })},  // LogsumexpBackward0
        {"logsumexp_dims02_keep", one([](const Tensor& x) {
             return xgrad::logsumexp(x, {0, 2}, true);
         })},
        {"logsumexp_big", one([](const Tensor& x) { return x.logsumexp(-1); })},
        {"logsumexp_inf", one([](const Tensor& x) { return x.logsumexp(1); }), kFloats, false},
        {"logsumexp_int", one([](const Tensor& x) { return x.logsumexp(1); }), kInt64},  // float32 result
    });
    // An empty row gives -inf.
    CHECK(std::isinf(xgrad::zeros({2, 0}).logsumexp(1).to_vector<float>()[0]));
}

TEST_CASE("var and std with correction; the unbiased flag still works") {
    for (const std::string op : {"var", "std"}) {
        CAPTURE(op);
        auto f = [op](xgrad::Dims d, double c, bool keepdim) {
            return one([op, d, c, keepdim](const Tensor& x) {
                return op == "var" ? x.var(d, Correction(c), keepdim) : x.std(d, Correction(c), keepdim);
            });
        };
        check_cases(
            {
                {op + "_dim1_correction0", f(1, 0, false)},
                {op + "_dim1_correction1", f(1, 1, false)},
                {op + "_dim1_correction2", f(1, 2, false)},
                {op + "_dims02_correction2_keep", f({0, 2}, 2, true)},
                {op + "_all_correction0", f(xgrad::Dims(std::vector<std::int64_t>{}), 0, false)},
                {op + "_correction_past_n", f(1, 5, false), kFloats, false},  // N - 5 < 0: NaN, as PyTorch
                {op + "_special_rows", f(1, 1, false), kFloats, false},       // inf and NaN give NaN; 0 stays 0
                {op + "_dim1_correction1",
                 one([op](const Tensor& x) { return op == "var" ? x.var(1) : x.std(1, true); })},
                {op + "_dim1_correction0",
                 one([op](const Tensor& x) { return op == "var" ? x.var(1, false) : x.std(1, false); })},
            },
            /*exact=*/true);
    }
}

TEST_CASE("bad dims, k and dtypes throw naming the op and the shape, in PyTorch's words where it has them") {
    Tensor x = xgrad::zeros({2, 3});
    golden::check_throws([&] { (void)x.max(2); }, {"max", "dimension 2", "(2, 3)", "[-2, 1]"});
    golden::check_throws([&] { (void)x.argmin(-3); }, {"argmin", "dimension -3", "(2, 3)"});
    golden::check_throws([&] { (void)x.sort(2); }, {"sort", "dimension 2", "(2, 3)"});
    golden::check_throws([&] { (void)x.topk(1, 2); }, {"topk", "dimension 2", "(2, 3)"});
    golden::check_throws([&] { (void)x.cumsum(-3); }, {"cumsum", "dimension -3", "(2, 3)"});
    golden::check_throws([&] { (void)x.cumprod(2); }, {"cumprod", "dimension 2", "(2, 3)"});
    golden::check_throws([&] { (void)x.prod(2); }, {"prod", "dimension 2", "(2, 3)"});
    golden::check_throws([&] { (void)x.logsumexp(2); }, {"logsumexp", "dimension 2", "(2, 3)"});
    golden::check_throws([&] { (void)x.amax({0, 0}); }, {"amax", "appears multiple times", "(2, 3)"});
    // A 0-d tensor's dims 0 and -1 are the same one (PyTorch: "dim 0 appears multiple times").
    const Tensor s = xgrad::tensor(2.0);
    golden::check_throws([&] { (void)s.sum({0, 0}); }, {"sum", "appears multiple times", "()"});
    golden::check_throws([&] { (void)s.amax({0, -1}); }, {"amax", "appears multiple times", "()"});
    golden::check_throws([&] { (void)s.var({-1, 0}); }, {"var", "appears multiple times", "()"});
    CHECK(s.sum({-1}).item<float>() == 2.0f);
    golden::check_throws([&] { (void)x.topk(4); }, {"topk", "selected index k out of range", "k = 4", "(2, 3)"});
    golden::check_throws([&] { (void)x.topk(-1); }, {"topk", "selected index k out of range", "k = -1"});
    golden::check_throws([&] { (void)xgrad::tensor({2.0}).reshape({}).topk(0); }, {"topk", "0-d", "k = 0"});
    Tensor e = xgrad::zeros({2, 0});
    golden::check_throws([&] { (void)e.max(1); }, {"max", "Expected reduction dim 1 to have non-zero size", "(2, 0)"});
    golden::check_throws([&] { (void)e.argmax(1); }, {"argmax", "Expected reduction dim 1 to have non-zero size"});
    golden::check_throws([&] { (void)e.amin(1); }, {"amin", "Expected reduction dim to have non-zero size", "(2, 0)"});
    golden::check_throws([&] { (void)e.argmax(); },
                         {"argmax", "Expected reduction dim to be specified for input.numel() == 0", "(2, 0)"});
    Tensor i = xgrad::zeros({2, 3}, xgrad::kInt64);
    golden::check_throws([&] { (void)i.var(0, Correction(1)); }, {"var", "torch.int64", "(2, 3)"});
    golden::check_throws([&] { (void)i.std(0, Correction(0)); }, {"std", "torch.int64", "(2, 3)"});
    Tensor undefined;
    golden::check_throws([&] { (void)undefined.sort(); }, {"sort"});
    golden::check_throws([&] { (void)undefined.argmax(); }, {"argmax"});
}

TEST_CASE("kthvalue and median refuse what PyTorch refuses") {
    using doctest::Contains;
    const Tensor x = xgrad::tensor({1.0, 2.0});
    CHECK_THROWS_WITH_AS(x.kthvalue(3), Contains("kthvalue: selected number k out of range for dimension 0"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(x.kthvalue(0), Contains("selected number k out of range"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::zeros({0, 3}).median(0),
                         Contains("median: Expected reduction dim 0 to have non-zero size"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(x.median(1), Contains("median: dimension 1 is out of range"), std::invalid_argument);
    CHECK(std::isnan(xgrad::zeros({0}).median().item<float>()));  // PyTorch's NaN for an empty tensor
    // A 0-d tensor is its own median and first value, index 0.
    auto [v, i] = xgrad::tensor(5.0).median(0);
    CHECK(v.item<float>() == 5.0f);
    CHECK(i.item<std::int64_t>() == 0);
}

TEST_CASE("nanmedian: the lower median of the numbers, NaNs left out, PyTorch's index for a row of NaNs") {
    check_cases({
        {"nanmedian_dim", [](const Tensor& x) { return x.nanmedian(1); }, kFloats, false},  // NanmedianBackward1
        {"nanmedian_all_nan_rows", [](const Tensor& x) { return xgrad::nanmedian(x, 1); }, kFloats, false},
        {"nanmedian_long_nan_keep", [](const Tensor& x) { return x.nanmedian(1, true); }, kFloats, false},
        {"nanmedian_dim0", [](const Tensor& x) { return x.nanmedian(0); }},
        {"nanmedian_ties", [](const Tensor& x) { return x.nanmedian(1); }, kFloats, false},
        {"nanmedian_all", one([](const Tensor& x) { return x.nanmedian(); }), kFloats, false},  // NanmedianBackward0
        {"nanmedian_all_of_nans", one([](const Tensor& x) { return xgrad::nanmedian(x); }), kFloats, false},
        {"nanmedian_int", [](const Tensor& x) { return x.nanmedian(1); }, kInt64},  // as median
    });
    CHECK(std::isnan(xgrad::zeros({0}).nanmedian().item<float>()));  // PyTorch's NaN for an empty tensor
    golden::check_throws(
        [&] {
            (void)xgrad::zeros({2, 0}).nanmedian(1);
        },
        {"nanmedian", "Expected reduction dim 1 to have non-zero size", "(2, 0)"});
}

TEST_CASE("mode: the smallest most frequent value, at PyTorch's index, and the gradient there") {
    check_cases({
        {"mode_dim1", [](const Tensor& x) { return x.mode(1); }, kFloats, false},            // ModeBackward0
        {"mode_ties_long", [](const Tensor& x) { return xgrad::mode(x); }, kFloats, false},  // introsort's order
        {"mode_wide_keep", [](const Tensor& x) { return x.mode(-1, true); }, kFloats, false},
        {"mode_dim0", [](const Tensor& x) { return x.mode(0); }, kFloats, false},
        {"mode_distinct", [](const Tensor& x) { return x.mode(1); }},  // every run of one: the smallest
        {"mode_nan", [](const Tensor& x) { return x.mode(1); }, kFloats, false},
        {"mode_0d", [](const Tensor& x) { return x.mode(); }},
        {"mode_int", [](const Tensor& x) { return x.mode(1); }, kInt64},
        {"mode_bool",
         [](const Tensor& x) {
             ValuesIndices r = x.to(xgrad::kBool).mode(1);
             CHECK(r.values.dtype() == xgrad::kBool);
             return ValuesIndices{r.values.to(xgrad::kInt64), r.indices};
         },
         kInt64},
    });
    // Where NaNs split a run of equal numbers PyTorch's CPU answer depends on their places (its sort
    // leaves NaN unordered: NaN at 0 for this row); xgrad sorts NaN last and counts each once.
    auto [v, i] = xgrad::tensor({NAN, 1.0, NAN, 1.0, NAN}).mode();
    CHECK(v.item<float>() == 1.0f);
    CHECK(i.item<std::int64_t>() == 3);
    CHECK(xgrad::zeros({0, 3}).mode(1).values.shape() == xgrad::Shape{0});
    golden::check_throws(
        [&] {
            (void)xgrad::zeros({2, 0}).mode(1);
        },
        {"mode", "Expected reduction dim 1 to have non-zero size", "(2, 0)"});
    golden::check_throws([&] { (void)xgrad::zeros({2, 3}).mode(2); }, {"mode", "2", "(2, 3)"});
}

TEST_CASE("norm, linalg::vector_norm and outer: PyTorch's values, grad_fn names and gradients") {
    auto all = [](double p) { return one([p](const Tensor& x) { return x.norm(p); }); };
    auto along = [](double p, xgrad::Dims dims, bool keepdim = false) {
        return one([p, dims, keepdim](const Tensor& x) { return xgrad::norm(x, p, dims, keepdim); });
    };
    check_cases({
        {"norm_all", all(2.0)},  // NormBackward1
        {"norm_p1_dim1", along(1.0, 1)},
        {"norm_p3_dims02_keep", along(3.0, {0, 2}, true)},
        {"norm_p05_dim0", along(0.5, 0)},
        {"norm_pneg_dim1", along(-1.5, -1)},
        {"norm_inf_dim1", along(INFINITY, 1), kFloats, false},  // ties share the gradient
        {"norm_ninf_all", all(-INFINITY)},
        {"norm_zero_row", along(2.0, 1), kFloats, false},  // the gradient is 0 at the zero row
        {"norm_0d", all(2.0)},
        {"vector_norm_all", one([](const Tensor& x) { return xgrad::linalg::vector_norm(x); })},
        {"vector_norm_dim_keep", one([](const Tensor& x) { return xgrad::linalg::vector_norm(x, 2.0, {-1}, true); })},
        {"vector_norm_p15_dims01", one([](const Tensor& x) {
             return xgrad::linalg::vector_norm(x, 1.5, {0, 1});
         })},
        {"outer", one([](const Tensor& x) { return xgrad::outer(x[0], x[1]); })},  // MulBackward0
    });
    // The 0-"norm" counts the non-zeros; its backward gives no gradient, as PyTorch's (x.grad stays
    // undefined).
    for (const std::string dtype : {"float32", "float64"}) {
        const std::string key = "norm_p0_dim1." + dtype;
        Tensor x = leaf(key);
        Tensor n = x.norm(0.0, 1);
        golden::check_close(n, golden::get(kFile, key + ".out"), key);
        CHECK(n.grad_fn_name() == golden::grad_fn_name(kFile, key));
        (n * golden::get(kFile, key + ".w")).sum().backward();
        CHECK_FALSE(x.grad().defined());
    }
    // An empty reduction: 0 for a sum-based norm; for ±∞, 0 from Tensor::norm and none from
    // linalg.vector_norm (PyTorch 1.13's, with its message).
    CHECK(xgrad::zeros({0, 3}).norm(2.0, 0).equal(xgrad::zeros({3})));
    CHECK(xgrad::zeros({0, 3}).norm(INFINITY, 0).equal(xgrad::zeros({3})));
    CHECK(xgrad::zeros({0, 3}, xgrad::kFloat64).norm(-INFINITY).equal(xgrad::zeros({}, xgrad::kFloat64)));
    golden::check_throws(
        [&] {
            (void)xgrad::linalg::vector_norm(xgrad::zeros({0, 3}), INFINITY, {0});
        },
        {"linalg.vector_norm", "cannot compute the inf norm", "(0, 3)"});
    golden::check_throws([&] { (void)xgrad::zeros({3}, xgrad::kInt64).norm(); },
                         {"norm", "floating-point", "torch.int64"});
    golden::check_throws([&] { (void)xgrad::zeros({2, 3}).norm(2.0, {0, 0}); }, {"norm", "multiple times", "(2, 3)"});
    golden::check_throws(
        [&] {
            (void)xgrad::outer(xgrad::zeros({2, 3}), xgrad::zeros({3}));
        },
        {"outer", "1-D", "(2, 3)"});
}

TEST_CASE("logaddexp, nan_to_num, count_nonzero, diff and meshgrid: PyTorch's values and gradients") {
    auto lae = [](const Tensor& a, const Tensor& b, bool base2) {
        return base2 ? xgrad::logaddexp2(a, b) : a.logaddexp(b);
    };
    for (const bool base2 : {false, true}) {
        const std::string f = base2 ? "logaddexp2" : "logaddexp";
        check_cases({
            {f, one([=](const Tensor& x) { return lae(x[0], x[1], base2); })},  // LogaddexpBackward0
            {f + "_broadcast", one([=](const Tensor& x) { return lae(x[0].unsqueeze(1), x[1], base2); })},
            // Both +inf or both -inf give themselves (NaN gradients there, as PyTorch's); NaN stays NaN.
            {f + "_special", one([=](const Tensor& x) { return lae(x[0], x[1], base2); }), kFloats, false},
        });
    }
    check_cases({
        {"nan_to_num", one([](const Tensor& x) { return xgrad::nan_to_num(x); }), kFloats, false},
        {"nan_to_num_values", one([](const Tensor& x) { return x.nan_to_num(1.5, 9.0, -9.0); }), kFloats, false},
        {"nan_to_num_posinf_only", one([](const Tensor& x) { return x.nan_to_num(0.0, 1e3); }), kFloats, false},
        {"count_nonzero_all", one([](const Tensor& x) { return xgrad::count_nonzero(x); })},
        {"count_nonzero_dim1", one([](const Tensor& x) { return x.count_nonzero(1); })},
        {"count_nonzero_dims", one([](const Tensor& x) {
             return x.count_nonzero({0, 1});
         })},
        {"diff", one([](const Tensor& x) { return xgrad::diff(x); })},  // SubBackward0
        {"diff_n2_dim0_prepend", one([](const Tensor& x) {
             return x.diff(2, 0, xgrad::ones({1, 3, 4}, x.dtype()));
         })},
        {"diff_append_dim1", one([](const Tensor& x) { return x.diff(1, 1, Tensor(), x.narrow(1, 0, 2) * 3.0); })},
        {"diff_past_length", one([](const Tensor& x) { return x.diff(5); })},
        {"diff_int", one([](const Tensor& x) { return x.diff(1, 0); }), kInt64},
        {"diff_bool", one([](const Tensor& x) { return x.to(xgrad::kBool).diff().to(xgrad::kInt64); }), kInt64},
        {"meshgrid_ij", one([](const Tensor& x) {
             return xgrad::stack(xgrad::meshgrid({x[0], x[1].narrow(0, 0, 3)}));
         })},
        {"meshgrid_xy", one([](const Tensor& x) {
             return xgrad::stack(xgrad::meshgrid({x[0], x[1].narrow(0, 0, 3), x[0][1]}, "xy"));
         })},
    });
    CHECK(xgrad::nan_to_num(xgrad::tensor({1.0, 2.0}, xgrad::kInt64)).equal(xgrad::tensor({1.0, 2.0}, xgrad::kInt64)));
    // replacements at or past the largest finite value take a clamp: -0.0 and the largest values stay,
    // infinite replacements keep the infinities
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const double big = dtype == xgrad::kFloat32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
        const Tensor s = xgrad::tensor({-0.0, NAN, INFINITY, -INFINITY, big, -big, 2.5}, dtype);
        const std::vector<double> d = s.nan_to_num().to(xgrad::kFloat64).to_vector<double>();
        CHECK(std::signbit(d[0]));
        CHECK(d == std::vector<double>{0.0, 0.0, big, -big, big, -big, 2.5});
        const std::vector<double> keep = s.nan_to_num(7.0, INFINITY, -INFINITY).to(xgrad::kFloat64).to_vector<double>();
        CHECK(keep == std::vector<double>{0.0, 7.0, INFINITY, -INFINITY, big, -big, 2.5});
    }
    CHECK(xgrad::count_nonzero(xgrad::zeros({2, 3})).dtype() == xgrad::kInt64);
    const Tensor z = xgrad::zeros({2, 3});
    golden::check_throws([&] { (void)xgrad::tensor(1.0).diff(); }, {"diff", "at least one-dimensional"});
    golden::check_throws([&] { (void)z.diff(1, -1, xgrad::zeros({3, 1})); }, {"diff", "(2, 3)", "(3, 1)"});
    golden::check_throws([&] { (void)z.diff(-1); }, {"diff", "non-negative", "-1"});
    golden::check_throws(
        [&] {
            (void)xgrad::meshgrid({z[0], z[1]}, "foo");
        },
        {"meshgrid", "indexing must be one of \"xy\" or \"ij\"", "foo"});
    golden::check_throws([&] { (void)xgrad::meshgrid({z, z[0]}); }, {"meshgrid", "0-D or 1-D", "(2, 3)"});
    // Integers meet a floating tensor in its dtype; two integer tensors have no kernel, as in PyTorch.
    CHECK(xgrad::logaddexp(z.to(xgrad::kInt64), z).equal(xgrad::full({2, 3}, std::log(2.0f))));
    golden::check_throws([&] { (void)xgrad::logaddexp2(z.to(xgrad::kInt64), z.to(xgrad::kInt64)); },
                         {"logaddexp2", "\"logaddexp2_cpu\" not implemented for 'Long'"});
}

TEST_CASE("unique and unique_consecutive: PyTorch's values, inverse indices and counts") {
    for (const std::string name :
         {"unique_floats", "unique_zeros", "unique_zeros_wide", "unique_int", "unique_0d", "unique_consecutive"}) {
        for (const std::string dtype : {"float32", "float64", "int64"}) {
            const std::string key = name + "." + dtype;
            if (!golden::load(kFile).count(key + ".in0")) continue;
            CAPTURE(key);
            const Tensor x = golden::get(kFile, key + ".in0");
            const bool consecutive = name == "unique_consecutive";
            auto [values, inverse, counts] =
                consecutive ? xgrad::unique_consecutive(x, true, true) : xgrad::unique(x, true, true, true);
            golden::check_close(values, golden::get(kFile, key + ".out"), key + " values", 0, 0);
            // Of -0 and +0, the first in x: the sign bits are PyTorch's.
            const Tensor d = values.to(xgrad::kFloat64);  // -0 is the zero whose reciprocal is -inf
            const Tensor signbit = d.lt(0.0).logical_or(d.eq(0.0).logical_and((1.0 / d).lt(0.0)));
            golden::check_close(signbit.to(xgrad::kInt64), golden::get(kFile, key + ".signbit"), key + " sign bits", 0,
                                0);
            golden::check_close(inverse, golden::get(kFile, key + ".inverse"), key + " inverse", 0, 0);
            CHECK(inverse.shape() == x.shape());
            golden::check_close(counts, golden::get(kFile, key + ".counts"), key + " counts", 0, 0);
            if (!consecutive) {
                CHECK(x.unique().equal(values));
                CHECK_FALSE(xgrad::unique(x).inverse.defined());
            }
        }
    }
    // Each NaN is a value of its own, after the numbers (PyTorch 1.13's CPU kernel places them anywhere).
    auto [v, inv, n] = xgrad::unique(xgrad::tensor({NAN, 1.0, NAN, 1.0}), true, true, true);
    CHECK(v.narrow(0, 0, 1).equal(xgrad::tensor({1.0})));
    CHECK(v.narrow(0, 1, 2).isnan().all().item<bool>());
    CHECK(inv.equal(xgrad::tensor({1.0, 0.0, 2.0, 0.0}, xgrad::kInt64)));
    CHECK(n.equal(xgrad::tensor({2.0, 1.0, 1.0}, xgrad::kInt64)));
    auto empty = xgrad::unique(xgrad::zeros({0, 3}), true, true, true);
    CHECK(empty.values.numel() == 0);
    CHECK(empty.inverse.shape() == xgrad::Shape{0, 3});
    CHECK(empty.counts.numel() == 0);
    const Tensor b = xgrad::tensor({1.0, 0.0, 1.0}).to(xgrad::kBool);
    CHECK(b.unique().equal(xgrad::tensor({0.0, 1.0}).to(xgrad::kBool)));
    CHECK_FALSE(xgrad::tensor({1.0, 2.0}).requires_grad_().unique().requires_grad());
}

TEST_CASE("quantile and nanquantile: PyTorch's values, interpolations, shapes and gradients") {
    // q as a tensor of x's dtype, as PyTorch requires.
    auto q = [](const std::vector<double>& v, const Tensor& x) {
        return xgrad::from_vector(v, {static_cast<std::int64_t>(v.size())}, x.dtype());
    };
    const std::vector<double> q5 = {0.0, 0.33, 0.5, 0.875, 1.0};
    check_cases({
        {"quantile_dim1", one([](const Tensor& x) { return x.quantile(0.3, 1); })},  // SqueezeBackward3
        {"quantile_vec_dim0_keep", one([q](const Tensor& x) {
             return x.quantile(q({0.1, 0.5, 0.9}, x), 0, true);
         })},
        {"quantile_all", one([](const Tensor& x) { return xgrad::quantile(x, 0.75); })},
        {"quantile_all_vec_keep", one([q](const Tensor& x) {
             return xgrad::quantile(x, q({0.25, 0.6}, x), std::nullopt, true);
         })},
        {"quantile_lower", one([q, q5](const Tensor& x) { return x.quantile(q(q5, x), -1, false, "lower"); })},
        {"quantile_higher", one([q, q5](const Tensor& x) { return x.quantile(q(q5, x), -1, false, "higher"); })},
        {"quantile_midpoint", one([q, q5](const Tensor& x) { return x.quantile(q(q5, x), -1, false, "midpoint"); })},
        {"quantile_nearest", one([q, q5](const Tensor& x) { return x.quantile(q(q5, x), -1, false, "nearest"); })},
        // Equal values: the gradient goes where PyTorch's unstable sort put them.
        {"quantile_ties", one([q](const Tensor& x) {
             return x.quantile(q({0.25, 0.5}, x), 1);
         }),
         kFloats, false},
        {"quantile_nan", one([](const Tensor& x) { return x.quantile(0.4, 1); }), kFloats, false},  // NaN rows
        {"quantile_0d", one([](const Tensor& x) { return x.quantile(0.5, 0); })},
        {"nanquantile_rows", one([q](const Tensor& x) {
             return xgrad::nanquantile(x, q({0.2, 0.5}, x), 1);
         }),
         kFloats, false},
        {"nanquantile_all", one([](const Tensor& x) { return x.nanquantile(0.5); }), kFloats, false},
        {"nanquantile_dim0_keep", one([](const Tensor& x) { return x.nanquantile(0.8, 0, true); })},
    });
}

TEST_CASE("quantile passes a gradient to q, through the linear interpolation's weights, as PyTorch") {
    const Tensor x = xgrad::tensor({{0.3, -1.2, 2.5, 0.7, 1.9}, {1.1, 0.2, -0.4, 3.0, 0.9}}).to(xgrad::kFloat64);
    const Tensor q = xgrad::tensor({0.3, 0.55}).to(xgrad::kFloat64);
    golden::check_gradcheck([](const std::vector<Tensor>& in) { return in[0].quantile(in[1], 1); },
                            {x.clone().requires_grad_(), q.clone().requires_grad_()}, "quantile: x and q");
    golden::check_gradcheck([](const std::vector<Tensor>& in) { return in[0].nanquantile(in[1], 0, true); },
                            {x.clone().requires_grad_(), q.clone().requires_grad_()}, "nanquantile: x and q");
    // The other interpolations only gather at rounded ranks: q alone requiring grad gives a result
    // that does not, as PyTorch's.
    const Tensor qq = q.clone().requires_grad_();
    CHECK_FALSE(x.quantile(qq, 1, false, "nearest").requires_grad());
    CHECK(x.quantile(qq, 1, false, "midpoint").grad_fn_name() == "");
}

TEST_CASE("quantile refuses what PyTorch refuses, in its words") {
    const Tensor z = xgrad::zeros({2, 3});
    auto expect = [](const std::function<void()>& f, const std::string& what, std::vector<std::string> extra = {}) {
        std::string message = golden::error_message(kFile, what);
        const std::string prefix = "quantile() ";  // PyTorch's; xgrad's messages begin "quantile: "
        REQUIRE(message.rfind(prefix, 0) == 0);
        extra.insert(extra.begin(), message.substr(prefix.size()));
        extra.insert(extra.begin(), "quantile");
        golden::check_throws(f, extra);
    };
    expect([&] { (void)z.quantile(1.5); }, "quantile_q_range");
    expect([&] { (void)z.quantile(xgrad::tensor({0.5, -0.1})); }, "quantile_q_values");
    expect([&] { (void)z.quantile(xgrad::tensor({0.5}).reshape({1, 1})); }, "quantile_q_2d", {"(1, 1)"});
    expect([&] { (void)xgrad::zeros({0}).quantile(0.5); }, "quantile_empty", {"(0,)"});
    expect([&] { (void)xgrad::zeros({3}, xgrad::kInt64).quantile(0.5); }, "quantile_int", {"torch.int64"});
    expect([&] { (void)z.quantile(xgrad::tensor({0.5}).to(xgrad::kFloat64)); }, "quantile_q_dtype", {"torch.float64"});
    expect([&] { (void)z.quantile(0.5, std::nullopt, false, "cubic"); }, "quantile_interpolation");
    golden::check_throws([&] { (void)z.quantile(0.5, 2); }, {"quantile", "dimension 2", "[-2, 1]"});
    CHECK_THROWS_WITH_AS((void)z.nanquantile(-0.5), "nanquantile: q must be in the range [0, 1] but got -0.5",
                         std::invalid_argument);
}

TEST_CASE("searchsorted and bucketize: PyTorch's positions, sides, rows, NaN, sorter and messages") {
    auto ss = [](const Tensor& x, xgrad::SearchOptions o = {}) {
        return xgrad::searchsorted(x[0].sort(-1).values, x[1], o);
    };
    check_cases({
        {"searchsorted", one([&](const Tensor& x) { return ss(x); })},
        {"searchsorted_right", one([&](const Tensor& x) { return ss(x, {.right = true}); })},
        {"searchsorted_ties", one([&](const Tensor& x) { return ss(x); })},
        {"searchsorted_ties_right", one([&](const Tensor& x) { return ss(x, {.right = true}); })},
        {"searchsorted_rows", one([&](const Tensor& x) { return ss(x); })},
        {"searchsorted_rows_right", one([&](const Tensor& x) { return ss(x, {.right = true}); })},
        {"searchsorted_nan", one([&](const Tensor& x) { return ss(x); })},
        {"searchsorted_nan_right", one([&](const Tensor& x) { return ss(x, {.right = true}); })},
        {"searchsorted_int", one([&](const Tensor& x) { return ss(x); }), kInt64},
        {"searchsorted_sorter",
         one([](const Tensor& x) { return xgrad::searchsorted(x[0], x[1], {.sorter = x[0].argsort()}); })},
        {"searchsorted_scalar", one([](const Tensor& x) { return xgrad::searchsorted(x.sort(-1).values, 0.25); })},
        {"bucketize", one([](const Tensor& x) { return xgrad::bucketize(x.narrow(0, 1, 3), x[0].sort(-1).values); })},
        {"bucketize_right", one([](const Tensor& x) {
             return xgrad::bucketize(x.narrow(0, 1, 3), x[0].sort(-1).values, {.right = true});
         })},
    });
    // int32 positions; the common dtype of mixed operands (int64 boundaries, float values: compared as
    // float32); empty rows and empty values; a non-contiguous sequence.
    const Tensor seq = xgrad::tensor({1.0, 3.0, 5.0, 7.0});
    const Tensor v = xgrad::tensor({3.0, 6.0, 9.0, 0.5});
    const Tensor i32 = xgrad::searchsorted(seq, v, {.out_int32 = true});
    CHECK(i32.dtype() == xgrad::kInt32);
    CHECK(i32.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 3, 4, 0});
    CHECK(xgrad::searchsorted(seq.to(xgrad::kInt64), xgrad::tensor({2.5, 3.0}), {.right = true})
              .to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2});
    CHECK(xgrad::searchsorted(xgrad::zeros({2, 0}), xgrad::ones({2, 3})).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>(6, 0));
    CHECK(xgrad::searchsorted(seq, xgrad::zeros({0})).numel() == 0);
    const Tensor wide = xgrad::tensor({{1.0, 0.0}, {3.0, 0.0}, {5.0, 0.0}});
    CHECK(xgrad::searchsorted(wide.select(1, 0), v).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 3, 3, 0});
    // Many values in a long row: the bisection against a count of the smaller elements.
    xgrad::manual_seed(3);
    const Tensor big = xgrad::randn({5000}).sort(-1).values, many = xgrad::randn({3, 7000});
    CHECK(xgrad::searchsorted(big, many).equal(big.lt(many.unsqueeze(-1)).sum(-1)));
    CHECK(xgrad::searchsorted(big, many, {.right = true}).equal(big.le(many.unsqueeze(-1)).sum(-1)));

    const Tensor z = xgrad::zeros({2, 3});
    golden::check_throws([&] { (void)xgrad::searchsorted(xgrad::tensor(1.0), z); },
                         {"searchsorted", "boundaries tensor should have positive dimension, but got 0 dimension"});
    golden::check_throws(
        [&] {
            (void)xgrad::searchsorted(z, xgrad::zeros({3, 3}));
        },
        {"searchsorted", "first N-1 dimensions of boundaries tensor and input value tensor must match", "(2, 3)",
         "(3, 3)"});
    golden::check_throws(
        [&] { (void)xgrad::searchsorted(z, 1.0); },
        {"searchsorted", "input value can be a scalar only when boundaries tensor dimension is 1", "dim(2)"});
    golden::check_throws(
        [&] {
            (void)xgrad::searchsorted(z[0], z, {.sorter = xgrad::tensor({0.0, 1.0}, xgrad::kInt64)});
        },
        {"searchsorted", "boundary and sorter must have the same size", "(3,)", "(2,)"});
    golden::check_throws(
        [&] {
            (void)xgrad::searchsorted(z[0], z, {.sorter = xgrad::tensor({0.0, 1.0, 2.0}, xgrad::kInt32)});
        },
        {"searchsorted", "sorter must be a tensor of long dtype but got dtype", "int32"});
    golden::check_throws(
        [&] {
            (void)xgrad::searchsorted(z[0], z, {.sorter = xgrad::tensor({0.0, 1.0, 5.0}, xgrad::kInt64)});
        },
        {"searchsorted", "sorter index out of range"});
    golden::check_throws([&] { (void)xgrad::searchsorted(z[0].to(xgrad::kBool), z); },
                         {"searchsorted", "not implemented for 'Bool'"});
    golden::check_throws([&] { (void)xgrad::bucketize(z, z); },
                         {"bucketize", "boundaries tensor must be 1 dimension, but got dim(2)"});
}

TEST_CASE("aminmax, var_mean, std_mean and kron: PyTorch's values and gradients") {
    auto stacked = [](const xgrad::MinMax& r) { return xgrad::stack({r.min, r.max}); };
    auto pair = [](const std::pair<Tensor, Tensor>& r) { return xgrad::stack({r.first, r.second}); };
    // var_mean and std_mean: PyTorch's bits (one Welford pass gives both; its mean is not x.mean()'s).
    check_cases(
        {
            {"var_mean_dim1", one([&](const Tensor& x) { return pair(xgrad::var_mean(x, 1)); })},
            {"var_mean_all", one([&](const Tensor& x) { return pair(xgrad::var_mean(x)); })},
            {"var_mean_dims02_biased_keep", one([&](const Tensor& x) {
                 return pair(xgrad::var_mean(x, {0, 2}, false, true));
             })},
            {"std_mean_dim0", one([&](const Tensor& x) { return pair(xgrad::std_mean(x, 0)); })},
            {"std_mean_all_biased", one([&](const Tensor& x) {
                 return pair(xgrad::std_mean(x, xgrad::Dims(std::vector<std::int64_t>{}), false));
             })},
        },
        /*exact=*/true);
    check_cases({
        {"aminmax_dim1", one([&](const Tensor& x) { return stacked(xgrad::aminmax(x, 1)); })},
        {"aminmax_dimneg1_keep", one([&](const Tensor& x) { return stacked(xgrad::aminmax(x, -1, true)); })},
        {"aminmax_all", one([&](const Tensor& x) { return stacked(xgrad::aminmax(x)); })},
        {"aminmax_ties", one([&](const Tensor& x) { return stacked(xgrad::aminmax(x, 0)); }), kFloats, false},
        {"kron_2d", one([](const Tensor& x) {
             return xgrad::kron(x[0].narrow(0, 0, 2).narrow(1, 0, 2), x[1].narrow(0, 0, 3).narrow(1, 1, 3)) * 1.0;
         })},
        {"kron_1d_2d",
         one([](const Tensor& x) { return xgrad::kron(x[0][0], x[1].narrow(0, 0, 2).narrow(1, 0, 2)) * 1.0; })},
        {"kron_3d_1d", one([](const Tensor& x) { return xgrad::kron(x, x[1][1].narrow(0, 0, 2)) * 1.0; })},
        {"kron_int", one([](const Tensor& x) { return xgrad::kron(x.narrow(0, 0, 2), x.narrow(0, 2, 2)); }), kInt64},
    });
    // aminmax keeps every dim without one (0-d stays 0-d), takes bool, and names its empty inputs.
    const Tensor x = xgrad::tensor({{1.0, 5.0, 2.0}, {3.0, 2.0, 7.0}});
    const auto all = xgrad::aminmax(x, std::nullopt, true);
    CHECK(all.min.shape() == xgrad::Shape{1, 1});
    CHECK(all.max.item<double>() == 7.0);
    CHECK(xgrad::aminmax(xgrad::tensor(2.5), std::nullopt, true).min.dim() == 0);
    const auto b = xgrad::aminmax(xgrad::tensor({1.0, 0.0}).to(xgrad::kBool));
    CHECK((!b.min.item<bool>() && b.max.item<bool>()));
    golden::check_throws([] { (void)xgrad::aminmax(xgrad::zeros({0})); },
                         {"aminmax", "cannot compute aminmax over an empty dimension"});
    golden::check_throws(
        [] {
            (void)xgrad::aminmax(xgrad::zeros({2, 0}), 1);
        },
        {"aminmax", "Expected reduction dim 1 to have non-zero size", "(2, 0)"});
    CHECK(xgrad::kron(xgrad::tensor({1.0, 2.0}, xgrad::kInt64), xgrad::tensor({{1.0}, {10.0}}, xgrad::kInt64))
              .equal(xgrad::tensor({{1.0, 2.0}, {10.0, 20.0}}, xgrad::kInt64)));
}

TEST_CASE("vector norms, normalize, pairwise_distance and clip_grad_norm_ give PyTorch's bits") {
    // PyTorch 1.13 adds |x|^p along the reduced dim in order, in the dtype (x·x + s as one fused
    // multiply-add for p = 2, as its compiler fuses it), and for float32 p = 2 over the innermost dims
    // of a contiguous tensor first in eight lanes. SSE2 rounds twice, as PyTorch's default kernel.
    namespace vm = xgrad::kernels::cpu;
    if (vm::simd_arch() == vm::SimdArch::kSse2) return;
    namespace F = xgrad::nn::functional;
    const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> cases = {
        {"p2_last", [](const Tensor& t) { return xgrad::linalg::vector_norm(t, 2, {-1}); }},
        {"p2_all", [](const Tensor& t) { return xgrad::linalg::vector_norm(t, 2); }},
        {"p2_dim0", [](const Tensor& t) { return xgrad::linalg::vector_norm(t, 2, {0}); }},
        {"p2_t", [](const Tensor& t) { return xgrad::linalg::vector_norm(t.t(), 2, {-1}); }},
        {"p1_last", [](const Tensor& t) { return xgrad::linalg::vector_norm(t, 1, {-1}); }},
        {"p3_last", [](const Tensor& t) { return xgrad::linalg::vector_norm(t, 3, {-1}); }},
        {"p0.5_dim0", [](const Tensor& t) { return xgrad::linalg::vector_norm(t, 0.5, {0}); }},
        {"normalize", [](const Tensor& t) { return F::normalize(t, 2.0, 1); }},
        {"pdist", [](const Tensor& t) { return F::pairwise_distance(t, t.flip({0})); }},
    };
    for (const std::string dt : {"float32", "float64"}) {
        auto get = [&](const std::string& key) { return golden::get("exact.txt", dt + "." + key); };
        CAPTURE(dt);
        for (const auto& c : cases) {
            Tensor v = get("norm.v").detach().requires_grad_();
            Tensor out = c.second(v);
            out.backward(xgrad::ones_like(out));
            CAPTURE(c.first);
            CHECK(golden::bits_differ(out, get("norm." + c.first)) == 0);
            CHECK(golden::bits_differ(v.grad(), get("norm." + c.first + ".grad")) == 0);
        }
        CHECK(golden::bits_differ(xgrad::linalg::vector_norm(get("norm.v13"), 2, {-1}), get("norm.p2_last13")) == 0);
        // clip_grad_norm_: the total norm of the gradients' norms, and the gradients scaled by it
        std::vector<Tensor> params;
        for (int i = 0; i < 2; ++i) {
            Tensor g = get("clip.g" + std::to_string(i)).clone();
            Tensor q = xgrad::zeros(g.shape(), g.dtype()).requires_grad_();
            q.mutable_grad() = g;
            params.push_back(q);
        }
        const Tensor total = xgrad::nn::utils::clip_grad_norm_(params, 0.5);
        CHECK(golden::bits_differ(total, get("clip.total")) == 0);
        for (int i = 0; i < 2; ++i)
            CHECK(golden::bits_differ(params[static_cast<std::size_t>(i)].grad(),
                                      get("clip.clipped" + std::to_string(i))) == 0);
    }
}
