// bool, uint8 and int32 tensors against PyTorch 1.13 (golden/gen_dtypes.py → dtypes.txt): what each
// case prints, character for character, or the error it raises.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
using xgrad::tensor;
namespace F = xgrad::nn::functional;

namespace {

using namespace golden::names;  // b, u8, i32, i64, f64
using golden::names::inf;       // declared here, so that they hide the C library's ::nan
using golden::names::nan;

/// The xgrad twin of every case of gen_dtypes.py, by name.
const std::map<std::string, std::function<Tensor()>>& cases() {
    static const std::map<std::string, std::function<Tensor()>> c = {
        {"bool_vec",
         [] {
             return tensor({1.0, 0.0, 1.0}, b);
         }},
        {"bool_all_true",
         [] {
             return tensor({1.0, 1.0}, b);
         }},
        {"bool_2d",
         [] {
             return tensor({{1.0}, {0.0}}, b);
         }},
        {"bool_0d", [] { return tensor(1.0, b); }},
        {"bool_empty", [] { return xgrad::empty({0}, b); }},
        {"bool_zeros",
         [] {
             return xgrad::zeros({2, 3}, b);
         }},
        {"bool_long", [] { return xgrad::ones({1200}, b); }},
        {"bool_from_floats",
         [] {
             return tensor({0.0, 0.5, nan, -2.0}, b);
         }},
        {"int32_vec",
         [] {
             return tensor({100000.0, 2.0}, i32);
         }},
        {"int32_empty",
         [] {
             return xgrad::zeros({0, 2}, i32);
         }},
        {"int32_ones",
         [] {
             return xgrad::ones({2, 2}, i32);
         }},
        {"uint8_vec",
         [] {
             return tensor({0.0, 1.0, 255.0}, u8);
         }},
        {"uint8_full_neg", [] { return xgrad::full({3}, -1, u8); }},
        {"bool_full", [] { return xgrad::full({2}, 2.5, b); }},
        {"uint8_arange", [] { return xgrad::arange(3.0, u8); }},
        {"int32_arange", [] { return xgrad::arange(-2.0, 7.0, 3.0, i32); }},
        {"uint8_t",
         [] {
             return tensor({{1.0, 2.0}}, u8).t();
         }},
        {"f32_to_int32",
         [] {
             return tensor({nan, 1e20, -1e20, 3.7, -3.7}).to(i32);
         }},
        {"f32_to_uint8",
         [] {
             return tensor({nan, 1e20, -1e20, -3.7, 300.5}).to(u8);
         }},
        {"f32_to_bool",
         [] {
             return tensor({0.0, -0.0, 0.5, nan, inf}).to(b);
         }},
        {"bool_to_f64",
         [] {
             return tensor({1.0, 0.0}, b).to(f64);
         }},
        {"int32_to_uint8",
         [] {
             return tensor({-1.0, 256.0, 255.0}, i32).to(u8);
         }},
        {"int64_to_int32",
         [] {
             return tensor({1099511627781.0, -1.0}, i64).to(i32);
         }},
        {"uint8_to_int64",
         [] {
             return tensor({200.0, 3.0}, u8).to(i64);
         }},
        {"uint8_add_scalar",
         [] {
             return tensor({200.0, 1.0}, u8) + 100;
         }},
        {"uint8_mul", [] { return tensor({200.0}, u8) * tensor({2.0}, u8); }},
        {"uint8_sub_wrap", [] { return tensor({5.0}, u8) - tensor({6.0}, u8); }},
        {"uint8_neg", [] { return tensor({200.0}, u8).neg(); }},
        {"int32_wrap", [] { return tensor({2147483647.0}, i32) + 1; }},
        {"bool_add",
         [] {
             return tensor({1.0, 0.0}, b) + tensor({1.0, 1.0}, b);
         }},
        {"bool_mul",
         [] {
             return tensor({1.0, 0.0}, b) * tensor({1.0, 1.0}, b);
         }},
        {"bool_mul_float",
         [] {
             return tensor({1.0, 0.0}, b) * 2.5;
         }},
        {"bool_add_int",
         [] {
             return tensor({1.0, 0.0}, b) + 2;
         }},
        {"int32_div",
         [] {
             return tensor({2.0, 3.0}, i32) / 2;
         }},
        {"int32_abs",
         [] {
             return tensor({1.0, -2.0}, i32).abs();
         }},
        {"int32_pow",
         [] {
             return tensor({1.0, 2.0}, i32).pow(2);
         }},
        {"int32_exp",
         [] {
             return tensor({1.0, 2.0}, i32).exp();
         }},
        {"int32_clamp",
         [] {
             return tensor({1.0, 2.0, 5.0}, i32).clamp(0, 3);
         }},
        {"int32_maximum",
         [] {
             return xgrad::maximum(tensor({1.0, 7.0}, i32), tensor({4.0, 2.0}, i32));
         }},
        {"int32_plus_0d_int64", [] { return xgrad::ones({2}, i32) + tensor(1.0, i64); }},
        {"int32_plus_0d_f64", [] { return xgrad::ones({2}, i32) + tensor(1.0, f64); }},
        {"f32_plus_0d_f64", [] { return xgrad::ones({2}) + tensor(1.0, f64); }},
        {"uint8_plus_0d_int64",
         [] {
             return tensor({1.0, 2.0}, u8) + tensor(1000.0, i64);
         }},
        {"f32_plus_bool",
         [] {
             return tensor({1.0, 2.0}) + tensor({1.0, 0.0}, b);
         }},
        {"int32_plus_int64",
         [] {
             return tensor({1.0, 2.0}, i32) + tensor({3.0, 4.0}, i64);
         }},
        {"uint8_plus_int32", [] { return tensor({250.0}, u8) + tensor({10.0}, i32); }},
        {"bool_times_uint8",
         [] {
             return tensor({1.0, 0.0}, b) * tensor({7.0, 9.0}, u8);
         }},
        {"0d_f32_plus_0d_f64", [] { return tensor(1.0) + tensor(2.0, f64); }},
        {"f64_plus_0d_int64", [] { return tensor({1.5}, f64) + tensor(2.0, i64); }},
        {"bool_sum",
         [] {
             return tensor({1.0, 0.0, 1.0}, b).sum();
         }},
        {"uint8_sum",
         [] {
             return tensor({200.0, 100.0}, u8).sum();
         }},
        {"int32_sum_dim",
         [] {
             return tensor({{1.0, 2.0}, {3.0, 4.0}}, i32).sum({0});
         }},
        {"int32_max",
         [] {
             return tensor({1.0, 2.0}, i32).max();
         }},
        {"bool_max",
         [] {
             return tensor({1.0, 0.0}, b).max();
         }},
        {"uint8_argmax",
         [] {
             return tensor({1.0, 9.0, 2.0}, u8).argmax();
         }},
        {"int32_max_dim_values",
         [] {
             return tensor({{3.0, 1.0}, {2.0, 8.0}}, i32).max(std::int64_t{1}).values;
         }},
        {"int32_sort_values",
         [] {
             return tensor({3.0, 1.0, 2.0}, i32).sort().values;
         }},
        {"int32_sort_indices",
         [] {
             return tensor({3.0, 1.0, 2.0}, i32).sort().indices;
         }},
        {"bool_sort_values",
         [] {
             return tensor({1.0, 0.0}, b).sort().values;
         }},
        {"uint8_cumsum",
         [] {
             return tensor({3.0, 255.0}, u8).cumsum(0);
         }},
        {"int32_prod",
         [] {
             return tensor({1.0, 2.0, 3.0}, i32).prod();
         }},
        {"int32_matmul",
         [] {
             return xgrad::matmul(tensor({{1.0, 2.0}}, i32), tensor({{3.0}, {4.0}}, i32));
         }},
        {"cat_int32_int64",
         [] {
             return xgrad::cat({tensor({1.0}, i32), tensor({2.0}, i64)});
         }},
        {"uint8_index_select",
         [] {
             return tensor({10.0, 20.0, 30.0}, u8).index_select(0, tensor({2.0, 0.0}, i64));
         }},
        {"bool_reshape",
         [] {
             return tensor({1.0, 0.0, 0.0, 1.0}, b).reshape({2, 2});
         }},
        {"uint8_div_0d_int64",
         [] {
             return tensor({1.0, 2.0}, u8) / tensor(300.0, i64);
         }},
        {"int32_div_0d_int64", [] { return tensor({3.0}, i32) / tensor(8589934592.0, i64); }},
        {"uint8_atan2_0d_int64", [] { return tensor({128.0}, u8).atan2(tensor(-2.0, i64)); }},
        {"int64_relu",
         [] {
             return tensor({-2.0, 3.0}, i64).relu();
         }},
        {"uint8_relu",
         [] {
             return F::relu(tensor({7.0, 0.0}, u8));
         }},
        {"int64_hardtanh",
         [] {
             return F::hardtanh(tensor({5.0, -3.0, 0.0}, i64));
         }},
        {"int64_hardtanh_fractional",
         [] {
             return F::hardtanh(tensor({5.0, -3.0}, i64), -2.5, 2.5);
         }},
        {"int32_relu6",
         [] {
             return F::relu6(tensor({7.0, -1.0, 3.0}, i32));
         }},
        {"f32_clamp_0d_f64",
         [] {
             return tensor({1.0, 2.0}).clamp(tensor(1.5, f64), Tensor());
         }},
        {"uint8_clamp_0d_int64",
         [] {
             return tensor({3.0, 5.0}, u8).clamp(tensor(4.0, i64), Tensor());
         }},
        {"uint8_clamp_0d_negative",
         [] {
             return tensor({3.0, 254.0, 5.0}, u8).clamp(tensor(-2.0, i64), Tensor());
         }},
        {"int32_clamp_0d_f64",
         [] {
             return tensor({1.0, 5.0}, i32).clamp(tensor(2.5, f64), tensor(4.5, f64));
         }},
        {"bool_pow",
         [] {
             return tensor({1.0, 0.0}, b).pow(2);
         }},
        {"rpow_uint8",
         [] {
             return xgrad::pow(2, tensor({3.0, 9.0}, u8));
         }},
        {"rpow_int32",
         [] {
             return xgrad::pow(3, tensor({2.0, 20.0}, i32));
         }},
        {"err_relu_bool", [] { return tensor({1.0}, b).relu(); }},
        {"err_hardtanh_bool", [] { return F::hardtanh(tensor({1.0}, b)); }},
        {"err_hardtanh_uint8_negative", [] { return F::hardtanh(tensor({5.0}, u8)); }},
        {"err_lerp_uint8", [] { return tensor({1.0}, u8).lerp(tensor({1.0}, i64), 0.5); }},
        {"err_gelu_int64",
         [] {
             return F::gelu(tensor({1.0, 2.0}, i64));
         }},
        {"err_gelu_bool", [] { return F::gelu(tensor({1.0}, b)); }},
        {"err_abs_bool", [] { return tensor({1.0}, b).abs(); }},
        {"err_floor_bool", [] { return tensor({1.0}, b).floor(); }},
        {"err_ceil_bool", [] { return tensor({1.0}, b).ceil(); }},
        {"err_round_bool", [] { return tensor({1.0}, b).round(); }},
        {"err_trunc_bool", [] { return tensor({1.0}, b).trunc(); }},
        {"err_argmax_bool",
         [] {
             return tensor({1.0, 0.0}, b).argmax();
         }},
        {"err_argmin_bool",
         [] {
             return tensor({1.0, 0.0}, b).argmin(0);
         }},
        {"err_topk_bool",
         [] {
             return tensor({1.0, 0.0}, b).topk(1).values;
         }},
        {"err_median_bool",
         [] {
             return tensor({1.0, 0.0}, b).median();
         }},
        {"err_median_dim_bool",
         [] {
             return tensor({1.0, 0.0}, b).median(0).values;
         }},
        {"err_kthvalue_bool",
         [] {
             return tensor({1.0, 0.0}, b).kthvalue(1).values;
         }},
        {"err_sub_bool_float", [] { return tensor({1.0}, b) - 1.5; }},
        {"err_rsub_bool", [] { return 0.5 - tensor({1.0}, b); }},
        {"err_sub_int_bool", [] { return tensor({1.0}, i64) - tensor({1.0}, b); }},
        {"err_pow_bool", [] { return tensor({1.0}, b).pow(tensor({1.0}, b)); }},
        {"err_remainder_bool", [] { return tensor({1.0}, b).remainder(tensor({1.0}, b)); }},
        {"err_fmod_bool", [] { return tensor({1.0}, b).fmod(tensor({1.0}, b)); }},
        {"err_floor_divide_bool", [] { return tensor({1.0}, b).div(tensor({1.0}, b), "floor"); }},
        {"err_matmul_bool",
         [] {
             return tensor({{1.0, 0.0}}, b).matmul(tensor({{1.0}, {1.0}}, b));
         }},
        {"err_masked_fill_uint8_overflow",
         [] {
             return xgrad::zeros({2}, u8).masked_fill(tensor({1.0, 0.0}, b), tensor(300.0, i64));
         }},
        {"int32_masked_fill_0d_float",
         [] {
             return xgrad::zeros({2}, i32).masked_fill(tensor({1.0, 0.0}, b), tensor(2.5));
         }},
        {"bool_sort_values_still",
         [] {
             return tensor({1.0, 0.0}, b).sort().values;
         }},
        {"err_full_uint8", [] { return xgrad::full({2}, 300, u8); }},
        {"err_full_int32", [] { return xgrad::full({2}, 2147483648.0, i32); }},
        {"err_full_int32_nan", [] { return xgrad::full({2}, nan, i32); }},
        {"err_sub_bool", [] { return tensor({1.0}, b) - tensor({1.0}, b); }},
        {"err_neg_bool", [] { return -tensor({1.0}, b); }},
        {"err_requires_grad_int32",
         [] {
             return tensor({1.0, 2.0}, i32).requires_grad_();
         }},
    };
    return c;
}

}  // namespace

TEST_CASE("bool, uint8 and int32 tensors print, convert, compute and promote as PyTorch's") {
    golden::check_reprs("dtypes.txt", cases());
}

TEST_CASE("dtype names, sizes, promote_types and element access") {
    CHECK(xgrad::to_string(xgrad::kBool) == "torch.bool");
    CHECK(xgrad::to_string(xgrad::kInt32) == "torch.int32");
    CHECK(xgrad::to_string(xgrad::kUInt8) == "torch.uint8");
    CHECK(xgrad::element_size(xgrad::kBool) == 1);
    CHECK(xgrad::element_size(xgrad::kUInt8) == 1);
    CHECK(xgrad::element_size(xgrad::kInt32) == 4);
    CHECK(!xgrad::is_floating_point(xgrad::kBool));
    CHECK(xgrad::promote_types(xgrad::kBool, xgrad::kUInt8) == xgrad::kUInt8);
    CHECK(xgrad::promote_types(xgrad::kInt32, xgrad::kUInt8) == xgrad::kInt32);
    CHECK(xgrad::promote_types(xgrad::kInt32, xgrad::kFloat32) == xgrad::kFloat32);
    CHECK(xgrad::result_type(xgrad::ones({2}, i32), tensor(1.0, f64)) == f64);
    CHECK(xgrad::result_type(xgrad::ones({2}), tensor(1.0, f64)) == xgrad::kFloat32);

    Tensor mask = tensor({1.0, 0.0, 1.0}, b);
    CHECK(mask.to_vector<bool>() == std::vector<bool>{true, false, true});
    CHECK(mask.sum().item<std::int64_t>() == 2);
    CHECK(tensor(1.0, b).item<bool>());
    CHECK(tensor({-3.0}, i32).item<int>() == -3);
    CHECK(tensor({250.0}, u8).item<int>() == 250);
    CHECK(*tensor({1.0, 0.0}, b).data_ptr<bool>());
    CHECK(tensor({7.0}, u8).data_ptr<std::uint8_t>()[0] == 7);
    CHECK(tensor({-7.0}, i32).data_ptr<std::int32_t>()[0] == -7);
    std::string msg = golden::invalid_argument_of([&] { mask.data_ptr<float>(); });
    CHECK_MESSAGE(msg.find("the tensor holds torch.bool, not torch.float32") != std::string::npos, msg);
    // Floating maths refuses them by name (mean of an integer tensor, as PyTorch).
    msg = golden::invalid_argument_of([&] { tensor({1.0, 2.0}, i32).mean(); });
    CHECK_MESSAGE(msg.find("mean: needs a floating-point tensor, got torch.int32") != std::string::npos, msg);
}
