// Comparisons, logical ops, the isnan family, any/all, equal and isclose against PyTorch 1.13
// (golden/gen_compare.py → compare.txt): what each case prints, character for character, or the
// error it raises; and the op names in the errors.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <map>
#include <string>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
using xgrad::tensor;

namespace {

using namespace golden::names;  // b, u8, i32, i64, f64
using golden::names::inf;       // declared here, so that they hide the C library's ::nan
using golden::names::nan;

Tensor X() {
    return tensor({1.0, nan, -inf, inf, 2.0, -0.0});
}
Tensor Y() {
    return tensor({1.0, nan, -inf, 3.0, nan, 0.0});
}
/// A C++ bool as Python prints one.
std::string py_bool(bool v) {
    return v ? "True" : "False";
}

/// The xgrad twin of every case of gen_compare.py, by name: the text it prints.
const std::map<std::string, std::function<std::string()>>& cases() {
    static const std::map<std::string, std::function<std::string()>> c = {
        {"eq_nan", [] { return golden::printed(X() == Y()); }},
        {"ne_nan", [] { return golden::printed(X() != Y()); }},
        {"lt_nan", [] { return golden::printed(X() < Y()); }},
        {"le_nan", [] { return golden::printed(X() <= Y()); }},
        {"gt_nan", [] { return golden::printed(X() > Y()); }},
        {"ge_nan", [] { return golden::printed(X() >= Y()); }},
        {"eq_method_f64",
         [] {
             return golden::printed(tensor({1.0, 2.0}, f64).eq(tensor({1.0, 3.0}, f64)));
         }},
        {"ge_fn_int",
         [] {
             return golden::printed(xgrad::ge(tensor({1.0, 5.0, -3.0}, i64), tensor({1.0, 4.0, -2.0}, i64)));
         }},
        {"lt_broadcast",
         [] {
             return golden::printed(tensor({{1.0}, {2.0}, {3.0}}) < tensor({1.5, 2.5}));
         }},
        {"eq_transposed",
         [] {
             return golden::printed(tensor({{1.0, 2.0}, {3.0, 4.0}}).t() == tensor({{1.0, 3.0}, {2.0, 5.0}}));
         }},
        {"gt_expand",
         [] {
             return golden::printed(tensor({2.0}).expand({3}) > tensor({1.0, 2.0, 3.0}));
         }},
        {"eq_empty",
         [] {
             return golden::printed(xgrad::zeros({0, 3}) == xgrad::zeros({1, 3}));
         }},
        {"gt_scalar", [] { return golden::printed(X() > 1.5); }},
        {"le_rscalar", [] { return golden::printed(1.5 <= X()); }},
        {"eq_rscalar",
         [] {
             return golden::printed(2.0 == tensor({1.0, 2.0}));
         }},
        {"ne_scalar_nan",
         [] {
             return golden::printed(tensor({1.0, nan}) != nan);
         }},
        {"eq_scalar_nan",
         [] {
             return golden::printed(tensor({1.0, nan}) == nan);
         }},
        {"lt_scalar_inf",
         [] {
             return golden::printed(tensor({1.0, inf}) < inf);
         }},
        {"eq_f32_scalar", [] { return golden::printed(tensor({0.1}) == 0.1); }},
        {"lt_rscalar_int",
         [] {
             return golden::printed(2.0 < tensor({1.0, 2.0, 3.0}, i64));
         }},
        {"ge_int_half",
         [] {
             return golden::printed(tensor({1.0, 2.0, 3.0}, i64) >= 2.5);
         }},
        {"eq_int_big", [] { return golden::printed(tensor({16777217.0}, i64) == 16777217.0); }},
        {"eq_uint8_256",
         [] {
             return golden::printed(tensor({0.0, 255.0}, u8) == 256.0);
         }},
        {"eq_uint8_neg",
         [] {
             return golden::printed(tensor({0.0, 255.0}, u8) == -1.0);
         }},
        {"lt_uint8_half",
         [] {
             return golden::printed(tensor({0.0, 255.0}, u8) < 2.5);
         }},
        {"eq_bool_one",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) == 1.0);
         }},
        {"lt_bool_half",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) < 0.5);
         }},
        {"gt_int32_scalar",
         [] {
             return golden::printed(tensor({-5.0, 100000.0}, i32) > -6.0);
         }},
        {"eq_int_float0d",
         [] {
             return golden::printed(tensor({1.0, 2.0}, i64) == tensor(1.0));
         }},
        {"lt_int_float",
         [] {
             return golden::printed(tensor({1.0, 2.0, 3.0}, i64) < tensor({1.5, 2.0, 3.5}));
         }},
        {"eq_f32_f64", [] { return golden::printed(tensor({0.1}) == tensor({0.1}, f64)); }},
        {"eq_f32_f64_0d", [] { return golden::printed(tensor({0.1}) == tensor(0.1, f64)); }},
        {"eq_uint8_int0d",
         [] {
             return golden::printed(tensor({0.0, 255.0}, u8) == tensor(256.0, i64));
         }},
        {"lt_uint8_int32",
         [] {
             return golden::printed(tensor({0.0, 255.0}, u8) < tensor({-1.0, 300.0}, i32));
         }},
        {"eq_bool_bool",
         [] {
             return golden::printed(tensor({1.0, 0.0, 1.0}, b) == tensor({1.0, 1.0, 0.0}, b));
         }},
        {"lt_bool_bool",
         [] {
             return golden::printed(tensor({1.0, 0.0, 1.0}, b) < tensor({1.0, 1.0, 0.0}, b));
         }},
        {"eq_bool_int",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) == tensor({1.0, 2.0}, i64));
         }},
        {"gt_bool_float",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) > tensor({0.5, -0.5}));
         }},
        {"eq_0d_0d", [] { return golden::printed(tensor(2.0) == tensor(2.0, i64)); }},
        {"le_int32_int64",
         [] {
             return golden::printed(tensor({3.0, -4.0}, i32) <= tensor({3.0, -5.0}, i64));
         }},
        {"logical_and",
         [] {
             return golden::printed(
                 xgrad::logical_and(tensor({1.0, 0.0, nan, 2.0}), tensor({2.0, 0.0, 1.0, 0.0}, i64)));
         }},
        {"logical_or",
         [] {
             return golden::printed(xgrad::logical_or(tensor({1.0, 0.0, nan, 0.0}), tensor({0.0, 0.0, 0.0, 3.0}, u8)));
         }},
        {"logical_xor",
         [] {
             return golden::printed(
                 xgrad::logical_xor(tensor({1.0, 0.0, 1.0, 0.0}, b), tensor({1.0, 1.0, 0.0, 0.0}, b)));
         }},
        {"logical_xor_bcast",
         [] {
             return golden::printed(tensor({{0.0}, {1.0}}).logical_xor(tensor({0.0, 1.0, 2.0}, i32)));
         }},
        {"logical_not_f",
         [] {
             return golden::printed(xgrad::logical_not(tensor({0.0, -0.0, 1.0, nan})));
         }},
        {"logical_not_u8",
         [] {
             return golden::printed(tensor({0.0, 7.0}, u8).logical_not());
         }},
        {"logical_not_b",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b).logical_not());
         }},
        {"and_op",
         [] {
             return golden::printed(tensor({1.0, 0.0, 1.0}, b) & tensor({1.0, 1.0, 0.0}, b));
         }},
        {"or_op",
         [] {
             return golden::printed(tensor({1.0, 0.0, 0.0}, b) | tensor({0.0, 0.0, 1.0}, b));
         }},
        {"xor_op",
         [] {
             return golden::printed(tensor({1.0, 0.0, 1.0}, b) ^ tensor({1.0, 1.0, 0.0}, b));
         }},
        {"not_op",
         [] {
             return golden::printed(~tensor({1.0, 0.0}, b));
         }},
        {"and_int",
         [] {
             return golden::printed(tensor({12.0, -1.0, 5.0}, i64) & tensor({10.0, 7.0, 0.0}, i64));
         }},
        {"or_int_bcast",
         [] {
             return golden::printed(tensor({{1.0}, {8.0}}, i64) | tensor({2.0, 4.0}, i64));
         }},
        {"xor_int32",
         [] {
             return golden::printed(tensor({5.0, -6.0}, i32) ^ tensor({3.0, 3.0}, i32));
         }},
        {"and_u8_0d",
         [] {
             return golden::printed(tensor({255.0, 18.0}, u8) & tensor(15.0, i64));
         }},
        {"or_bool_int",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) | tensor({2.0, 2.0}, i64));
         }},
        {"not_int",
         [] {
             return golden::printed(~tensor({0.0, 5.0, -1.0}, i64));
         }},
        {"not_u8",
         [] {
             return golden::printed(~tensor({0.0, 5.0, 255.0}, u8));
         }},
        {"not_int32", [] { return golden::printed(~tensor({7.0}, i32)); }},
        {"range_mask",
         [] {
             return golden::printed((tensor({-1.0, 0.0, 5.0, 10.0}) >= 0.0) & (tensor({-1.0, 0.0, 5.0, 10.0}) < 10.0));
         }},
        {"and_bool_true",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) & true);
         }},
        {"and_bool_int",
         [] {
             return golden::printed(tensor({1.0, 0.0}, b) & 1);
         }},
        {"xor_true_bool",
         [] {
             return golden::printed(true ^ tensor({1.0, 0.0}, b));
         }},
        {"and_u8_num",
         [] {
             return golden::printed(tensor({5.0, 12.0}, u8) & 3);
         }},
        {"xor_u8_255",
         [] {
             return golden::printed(tensor({5.0, 12.0}, u8) ^ 255);
         }},
        {"and_u8_wrap",
         [] {
             return golden::printed(tensor({5.0, 12.0}, u8) & 300);
         }},
        {"or_int32_num",
         [] {
             return golden::printed(tensor({5.0, -3.0}, i32) | 8);
         }},
        {"and_num_int32",
         [] {
             return golden::printed(3 & tensor({5.0, -3.0}, i32));
         }},
        {"and_int32_big",
         [] {
             return golden::printed(tensor({5.0, -3.0}, i32) & 5000000000LL);
         }},
        {"or_int_neg",
         [] {
             return golden::printed(tensor({12.0, 0.0}, i64) | -16);
         }},
        {"isnan", [] { return golden::printed(xgrad::isnan(X())); }},
        {"isinf", [] { return golden::printed(xgrad::isinf(X())); }},
        {"isposinf", [] { return golden::printed(xgrad::isposinf(X())); }},
        {"isneginf", [] { return golden::printed(xgrad::isneginf(X())); }},
        {"isfinite", [] { return golden::printed(xgrad::isfinite(X())); }},
        {"isnan_f64",
         [] {
             return golden::printed(tensor({nan, 1.0}, f64).isnan());
         }},
        {"isfinite_f64",
         [] {
             return golden::printed(tensor({1e308, inf, nan}, f64).isfinite());
         }},
        {"isinf_int",
         [] {
             return golden::printed(tensor({1.0, 2.0}, i64).isinf());
         }},
        {"isnan_bool", [] { return golden::printed(tensor({1.0}, b).isnan()); }},
        {"isfinite_u8", [] { return golden::printed(tensor({3.0}, u8).isfinite()); }},
        {"isposinf_i32", [] { return golden::printed(tensor({3.0}, i32).isposinf()); }},
        {"any_f",
         [] {
             return golden::printed(tensor({0.0, 0.0, 2.0}).any());
         }},
        {"any_f_none",
         [] {
             return golden::printed(tensor({0.0, -0.0}).any());
         }},
        {"any_nan",
         [] {
             return golden::printed(tensor({0.0, nan}).any());
         }},
        {"all_f",
         [] {
             return golden::printed(tensor({1.0, 2.0, nan}).all());
         }},
        {"all_f_zero",
         [] {
             return golden::printed(tensor({1.0, 0.0}).all());
         }},
        {"any_dim",
         [] {
             return golden::printed(tensor({{0.0, 1.0}, {0.0, 0.0}}).any(1));
         }},
        {"all_dim0",
         [] {
             return golden::printed(tensor({{1.0, 1.0}, {0.0, 3.0}}).all(0));
         }},
        {"all_dim_keep",
         [] {
             return golden::printed(tensor({{1.0, 1.0}, {0.0, 3.0}}).all(-1, true));
         }},
        {"any_dim_keep",
         [] {
             return golden::printed(xgrad::any(tensor({{0.0, 0.0}, {0.0, 5.0}}, i64), 0, true));
         }},
        {"any_u8",
         [] {
             return golden::printed(tensor({0.0, 2.0}, u8).any());
         }},
        {"all_u8",
         [] {
             return golden::printed(tensor({1.0, 2.0}, u8).all());
         }},
        {"all_u8_dim",
         [] {
             return golden::printed(tensor({{1.0, 0.0}}, u8).all(1));
         }},
        {"any_u8_empty", [] { return golden::printed(xgrad::empty({0}, u8).any()); }},
        {"any_i32",
         [] {
             return golden::printed(tensor({0.0, 0.0}, i32).any());
         }},
        {"all_bool",
         [] {
             return golden::printed(tensor({1.0, 1.0}, b).all());
         }},
        {"any_bool_dim",
         [] {
             return golden::printed(tensor({{1.0, 0.0}, {0.0, 0.0}}, b).any(1));
         }},
        {"any_empty", [] { return golden::printed(xgrad::zeros({0}).any()); }},
        {"all_empty", [] { return golden::printed(xgrad::zeros({0}).all()); }},
        {"any_empty_dim",
         [] {
             return golden::printed(xgrad::zeros({2, 0}).any(1));
         }},
        {"all_empty_dim",
         [] {
             return golden::printed(xgrad::zeros({2, 0}).all(1));
         }},
        {"any_0d", [] { return golden::printed(tensor(3.0).any()); }},
        {"all_0d_dim", [] { return golden::printed(tensor(0.0).all(0)); }},
        {"all_fn",
         [] {
             return golden::printed(xgrad::all(tensor({{1.0, 2.0}, {3.0, 4.0}}, i64)));
         }},
        {"isclose_default",
         [] {
             return golden::printed(
                 xgrad::isclose(tensor({1.0, 1.0, 1.0, 1e-9}), tensor({1.0 + 1e-6, 1.0 + 1e-4, 1.00001, 0.0})));
         }},
        {"isclose_nan",
         [] {
             return golden::printed(
                 xgrad::isclose(tensor({nan, 1.0, inf, -inf, inf}), tensor({nan, nan, inf, inf, 1e38})));
         }},
        {"isclose_equal_nan",
         [] {
             return golden::printed(
                 xgrad::isclose(tensor({nan, 1.0, nan}), tensor({nan, nan, 2.0}), 1e-05, 1e-08, true));
         }},
        {"isclose_tol",
         [] {
             return golden::printed(tensor({1.0, 2.0, 3.0}, f64).isclose(tensor({1.1, 2.3, 3.0}, f64), 0.1, 0.05));
         }},
        {"isclose_zero_tol",
         [] {
             return golden::printed(xgrad::isclose(tensor({1.0, 1.0 + 1e-7}), tensor({1.0, 1.0}), 0.0, 0.0));
         }},
        {"isclose_bcast",
         [] {
             return golden::printed(xgrad::isclose(tensor({{1.0}, {2.0}}), tensor({1.0, 2.0, 2.00001})));
         }},
        {"isclose_int",
         [] {
             return golden::printed(
                 xgrad::isclose(tensor({100.0, 100.0, 5.0}, i64), tensor({101.0, 100.0, 7.0}, i64), 0.01, 0.0));
         }},
        {"isclose_u8",
         [] {
             return golden::printed(xgrad::isclose(tensor({0.0, 10.0}, u8), tensor({1.0, 10.0}, u8), 0.0, 1.0));
         }},
        {"isclose_bool",
         [] {
             return golden::printed(xgrad::isclose(tensor({1.0, 0.0}, b), tensor({1.0, 1.0}, b), 1e-05, 0.5));
         }},
        {"equal_true",
         [] {
             return py_bool(xgrad::equal(tensor({1.0, 2.0}), tensor({1.0, 2.0})));
         }},
        {"equal_false",
         [] {
             return py_bool(xgrad::equal(tensor({1.0, 2.0}), tensor({1.0, 2.5})));
         }},
        {"equal_shape",
         [] {
             return py_bool(xgrad::equal(tensor({1.0, 2.0}), tensor({{1.0, 2.0}})));
         }},
        {"equal_nan", [] { return py_bool(xgrad::equal(tensor({nan}), tensor({nan}))); }},
        {"equal_dtypes",
         [] {
             return py_bool(xgrad::equal(tensor({1.0, 2.0}, i64), tensor({1.0, 2.0})));
         }},
        {"allclose_true",
         [] {
             return py_bool(xgrad::allclose(tensor({1.0, 2.0}), tensor({1.0, 2.000001})));
         }},
        {"allclose_false",
         [] {
             return py_bool(xgrad::allclose(tensor({1.0, 2.0}), tensor({1.0, 2.1})));
         }},
        {"allclose_bcast",
         [] {
             return py_bool(xgrad::allclose(tensor({1.0}), tensor({1.0, 2.0})));
         }},
        {"allclose_nan", [] { return py_bool(xgrad::allclose(tensor({nan}), tensor({nan}), 1e-05, 1e-08, true)); }},
        {"err_isclose_dtypes",
         [] {
             return golden::printed(xgrad::isclose(tensor({1.0, 2.0}, i64), tensor({1.0, 2.0})));
         }},
        {"err_isclose_rtol", [] { return golden::printed(xgrad::isclose(tensor({1.0}), tensor({1.0}), -1.0)); }},
        {"err_isclose_atol", [] { return golden::printed(xgrad::isclose(tensor({1.0}), tensor({1.0}), 1e-05, -0.5)); }},
        {"err_and_float", [] { return golden::printed(tensor({1.0}) & tensor({1.0})); }},
        {"err_xor_int_float", [] { return golden::printed(tensor({1.0}, i64) ^ tensor({1.0})); }},
    };
    return c;
}

}  // namespace

TEST_CASE("comparisons, logical ops, isnan, any/all, equal and isclose print as PyTorch's") {
    golden::check_reprs("compare.txt", cases());
}

TEST_CASE("comparisons name the op in their errors; bitwise operators refuse floating tensors") {
    CHECK(golden::invalid_argument_of([] {
              return tensor({1.0, 2.0}) == tensor({1.0, 2.0, 3.0});
          }) == "eq: shapes (2,) and (3,) cannot be broadcast together (2 != 3 at dimension 0)");
    CHECK(golden::invalid_argument_of([] {
              return xgrad::zeros({2, 3}) < xgrad::zeros({4, 1, 2});
          }) == "lt: shapes (2, 3) and (4, 1, 2) cannot be broadcast together (3 != 2 at dimension 2)");
    CHECK(golden::invalid_argument_of([] { return xgrad::zeros({2}).ge(xgrad::zeros({3}, i64)); }) ==
          "ge: shapes (2,) and (3,) cannot be broadcast together (2 != 3 at dimension 0)");
    CHECK(golden::invalid_argument_of([] { return xgrad::logical_and(xgrad::zeros({2}), xgrad::zeros({3})); }) ==
          "logical_and: shapes (2,) and (3,) cannot be broadcast together (2 != 3 at dimension 0)");
    CHECK(golden::invalid_argument_of([] { return xgrad::isclose(xgrad::zeros({2}), xgrad::zeros({3})); }) ==
          "isclose: shapes (2,) and (3,) cannot be broadcast together (2 != 3 at dimension 0)");
    CHECK(golden::invalid_argument_of([] {
              return xgrad::ones({2, 3}).any(5);
          }) == "any: dimension 5 is out of range for a tensor of 2 dimensions (expected to be in [-2, 1])");
    CHECK(golden::invalid_argument_of([] {
              return xgrad::ones({2, 3}).all(-3);
          }) == "all: dimension -3 is out of range for a tensor of 2 dimensions (expected to be in [-2, 1])");
    CHECK(golden::invalid_argument_of([] { return tensor({1.0}) & tensor({1.0}, i64); }) ==
          "bitwise_and: \"bitwise_and_cpu\" not implemented for 'Float'");
    CHECK(golden::invalid_argument_of([] { return tensor({1.0}) ^ 1; }) ==
          "bitwise_xor: \"bitwise_xor_cpu\" not implemented for 'Float'");
    CHECK(golden::invalid_argument_of([] { return ~tensor({1.0}, f64); }) ==
          "bitwise_not: \"bitwise_not_cpu\" not implemented for 'Double'");
    CHECK(golden::invalid_argument_of([] { return xgrad::isnan(Tensor()); }).find("isnan:") == 0);
}

TEST_CASE("comparison results are bool, not differentiable, and strided operands read in place") {
    Tensor x = xgrad::arange(12.0).reshape({3, 4}).requires_grad_();
    Tensor m = x > 5.0;
    CHECK(m.dtype() == xgrad::kBool);
    CHECK_FALSE(m.requires_grad());
    CHECK(m.sum().item<std::int64_t>() == 6);
    // A transposed, sliced view against a broadcast row: the kernel walks both by their strides.
    Tensor v = xgrad::arange(12.0).reshape({3, 4}).t().slice(0, 1, 4, 2);  // (2, 3), strides (2, 4)
    Tensor r = v >= tensor({4.0, 5.0, 9.0});
    CHECK(r.to_vector<bool>() == std::vector<bool>{false, true, true, false, true, true});
    // Large enough to be split between threads.
    Tensor big = xgrad::arange(100000.0);
    CHECK((big.remainder(3.0) == 0.0).sum().item<std::int64_t>() == 33334);
}
