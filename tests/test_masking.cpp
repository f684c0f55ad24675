// Selection by a mask against PyTorch 1.13 (golden/gen_masking.py): where, masked_fill, nonzero,
// masked_select, x[mask] and index_put_ (printed values, errors, gradients, gradcheck), and bool masks
// in scaled_dot_product_attention and MultiheadAttention.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
using xgrad::tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;

namespace {

const char* kFile = "masking.txt";
using namespace golden::names;  // b, u8, i32, i64, f64
using golden::names::inf;       // declared here, so that they hide the C library's ::nan
using golden::names::nan;

Tensor m3() {
    return tensor({1.0, 0.0, 1.0}, b);
}
Tensor m23() {
    return tensor({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}, b);
}
Tensor x3() {
    return tensor({1.0, 2.0, 3.0});
}
Tensor x23() {
    return tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
}
Tensor put(Tensor t, const Tensor& idx, const Tensor& v) {
    t = t.clone();
    t.index_put_({idx}, v);
    return t;
}
Tensor put(Tensor t, const Tensor& idx, double v) {
    t = t.clone();
    t.index_put_({idx}, v);
    return t;
}
Tensor put(Tensor t, const std::vector<Tensor>& idx, const Tensor& v) {
    t = t.clone();
    t.index_put_(idx, v);
    return t;
}
Tensor put(Tensor t, const std::vector<Tensor>& idx, double v) {
    t = t.clone();
    t.index_put_(idx, v);
    return t;
}
Tensor fill_(Tensor t, const Tensor& m, double v) {
    t = t.clone();
    t.masked_fill_(m, v);
    return t;
}

/// The xgrad twin of every printed case of gen_masking.py, by name.
const std::map<std::string, std::function<Tensor()>>& cases() {
    static const std::map<std::string, std::function<Tensor()>> c = {
        {"where_f32",
         [] {
             return xgrad::where(m3(), x3(), tensor({10.0, 20.0, 30.0}));
         }},
        {"where_broadcast",
         [] {
             return xgrad::where(tensor({{1.0}, {0.0}}, b), x3(), tensor(-1.0));
         }},
        {"where_promote_f32_f64",
         [] {
             return xgrad::where(m3(), x3(), tensor({1.0, 2.0, 3.0}, f64));
         }},
        {"where_promote_int_0d_f64",
         [] {
             return xgrad::where(m3(), tensor({1.0, 2.0, 3.0}, i64), tensor(0.5, f64));
         }},
        {"where_int32_uint8",
         [] {
             return xgrad::where(m3(), tensor({1.0, 2.0, 3.0}, i32), tensor({7.0, 8.0, 9.0}, u8));
         }},
        {"where_bool",
         [] {
             return xgrad::where(m3(), tensor({0.0, 0.0, 0.0}, b), tensor({1.0, 1.0, 1.0}, b));
         }},
        {"where_scalar_x",
         [] {
             return xgrad::where(m3(), 1.5, tensor({1.0, 2.0, 3.0}, i64));
         }},
        {"where_scalar_y_int",
         [] {
             return xgrad::where(m3(), tensor({1.0, 2.0, 3.0}, i64), 7);
         }},
        {"where_scalar_y_int32",
         [] {
             return xgrad::where(m3(), tensor({1.0, 2.0, 3.0}, i32), 2);
         }},
        {"where_scalar_bool_y",
         [] {
             return xgrad::where(m3(), 4, tensor({1.0, 0.0, 1.0}, b));
         }},
        {"where_scalar_f64",
         [] {
             return xgrad::where(m3(), tensor({1.0, 2.0, 3.0}, f64), -0.25);
         }},
        {"where_uint8_cond",
         [] {
             return xgrad::where(tensor({1.0, 0.0, 1.0}, u8), x3(), 0.0);
         }},
        {"where_1arg_0", [] { return xgrad::where(m23())[0]; }},
        {"where_1arg_1", [] { return xgrad::where(m23())[1]; }},
        {"masked_fill_scalar", [] { return x3().masked_fill(m3(), -1.0); }},
        {"masked_fill_broadcast",
         [] {
             return x3().masked_fill(tensor({{1.0}, {0.0}}, b), 7.0);
         }},
        {"masked_fill_int",
         [] {
             return tensor({1.0, 2.0, 3.0}, i64).masked_fill(m3(), 2.5);
         }},
        {"masked_fill_0d_tensor",
         [] {
             return tensor({1.0, 2.0, 3.0}, i64).masked_fill(m3(), tensor(9.75));
         }},
        {"masked_fill_uint8_self",
         [] {
             return tensor({1.0, 2.0, 3.0}, u8).masked_fill(m3(), 200);
         }},
        {"masked_fill_inf", [] { return x23().masked_fill(m23(), -inf); }},
        {"masked_fill_inplace",
         [] {
             return fill_(x23(), tensor({1.0, 0.0, 0.0}, b), 0.0);
         }},
        {"nonzero_2d",
         [] {
             return tensor({{0.0, 1.0, 0.0}, {2.0, 0.0, nan}}).nonzero();
         }},
        {"nonzero_bool", [] { return m23().nonzero(); }},
        {"nonzero_1d",
         [] {
             return xgrad::nonzero(tensor({0.0, 3.0, 0.0, 4.0}, i64));
         }},
        {"nonzero_0d", [] { return tensor(5.0).nonzero(); }},
        {"nonzero_0d_zero", [] { return tensor(0.0).nonzero(); }},
        {"nonzero_empty",
         [] {
             return xgrad::zeros({0, 3}).nonzero();
         }},
        {"nonzero_none",
         [] {
             return xgrad::zeros({2, 2}).nonzero();
         }},
        {"argwhere_3d",
         [] {
             return xgrad::argwhere(
                 tensor({{{1.0, 0.0}, {0.0, 0.0}, {0.0, 1.0}}, {{0.0, 0.0}, {0.0, 0.0}, {1.0, 0.0}}}, b));
         }},
        {"masked_select", [] { return x23().masked_select(m23()); }},
        {"masked_select_broadcast",
         [] {
             return x3().masked_select(tensor({{1.0}, {0.0}}, b));
         }},
        {"masked_select_uint8",
         [] {
             return xgrad::masked_select(x3(), tensor({0.0, 1.0, 1.0}, u8));
         }},
        {"masked_select_int",
         [] {
             return tensor({5.0, 6.0, 7.0}, i64).masked_select(m3());
         }},
        {"index_mask_rows",
         [] {
             return x23().index({tensor({0.0, 1.0}, b)});
         }},
        {"index_mask_full", [] { return x23().index({m23()}); }},
        {"index_mask_3d",
         [] {
             return xgrad::arange(24.0).view({2, 3, 4}).index({m23()});
         }},
        {"index_mask_none",
         [] {
             return x23().index({tensor({0.0, 0.0}, b)});
         }},
        {"index_mask_0d", [] { return tensor(5.0).index({tensor(1.0, b)}); }},
        {"index_mask_int",
         [] {
             return tensor({{1.0, 2.0}, {3.0, 4.0}}, i64).index({tensor({1.0, 0.0}, b)});
         }},
        {"put_mask_scalar", [] { return put(x23(), m23(), 0.5); }},
        {"put_mask_rows",
         [] {
             return put(x23(), tensor({1.0, 0.0}, b), tensor({7.0, 8.0, 9.0}));
         }},
        {"put_mask_values",
         [] {
             return put(x23(), m23(), tensor({-1.0, -2.0, -3.0}));
         }},
        {"put_index", [] { return put(x23(), tensor({-1.0}, i64), 0.0); }},
        {"put_int_tensor",
         [] {
             return put(tensor({1.0, 2.0, 3.0}, i64), m3(), tensor(2.7));
         }},
        {"put_pair",
         [] {
             return put(x23(), {tensor({0.0, 1.0}, i64), tensor({2.0, -3.0}, i64)}, 9.0);
         }},
        {"put_pair_bcast",
         [] {
             return put(xgrad::zeros({3, 4}), {tensor({{1.0}, {2.0}}, i64), tensor({0.0, 3.0}, i64)},
                        tensor({7.0, 8.0}));
         }},
        {"put_pair_slices",
         [] {
             return put(xgrad::zeros({2, 3, 2}), {tensor({1.0, 0.0}, i64), tensor({2.0, 2.0}, i64)},
                        tensor({5.0, 6.0}));
         }},
        {"put_index_2d",
         [] {
             return put(xgrad::zeros({3, 2}), tensor({{0.0}, {2.0}}, i64), tensor({{1.0, 2.0}}));
         }},
        {"err_put_pair_shapes",
         [] {
             return put(x23(), {tensor({0.0, 1.0}, i64), tensor({0.0, 1.0, 2.0}, i64)}, 1.0);
         }},
        {"err_put_pair_bounds",
         [] {
             return put(x23(), {tensor({0.0}, i64), tensor({3.0}, i64)}, 1.0);
         }},
        {"err_put_pair_values",
         [] {
             return put(x23(), {tensor({0.0, 1.0}, i64), tensor({0.0, 1.0}, i64)}, tensor({1.0, 2.0, 3.0}));
         }},
        {"err_where_cond",
         [] {
             return xgrad::where(tensor({1.0, 0.0, 1.0}, i64), x3(), x3());
         }},
        {"err_where_shapes",
         [] {
             return xgrad::where(m3(), tensor({1.0, 2.0}), tensor({1.0}));
         }},
        {"err_masked_fill_value_dim",
         [] {
             return x3().masked_fill(m3(), tensor({1.0, 2.0}));
         }},
        {"err_masked_fill_shapes",
         [] {
             return tensor({1.0, 2.0}).masked_fill(m3(), 0.0);
         }},
        {"err_masked_fill_inplace_shape",
         [] {
             return fill_(x3(), tensor({{1.0}, {0.0}}, b), 1.0);
         }},
        {"err_masked_select_mask",
         [] {
             return x3().masked_select(tensor({1.0, 0.0, 1.0}, i64));
         }},
        {"err_index_mask_shape", [] { return x23().index({m3()}); }},
        {"err_put_values",
         [] {
             return put(xgrad::zeros({2, 3}), m23(), tensor({1.0, 2.0}));
         }},
        {"err_masked_fill_mask",
         [] {
             return x3().masked_fill(tensor({1.0, 0.0, 1.0}, i64), 0.0);
         }},
    };
    return c;
}

/// PyTorch's broadcast error reads differently in xgrad (it names both shapes); the rest match.
const std::map<std::string, std::string> kXgradWording = {
    {"err_where_shapes", "where: shapes (3,) and (2,) cannot be broadcast together (3 != 2 at dimension 0)"},
    {"err_masked_fill_shapes",
     "masked_fill: shapes (2,) and (3,) cannot be broadcast together (2 != 3 at dimension 0)"},
};

Tensor get(const std::string& name) {
    return golden::get(kFile, name);
}
Tensor leaf(const std::string& name) {
    return get(name).clone().requires_grad_();
}

}  // namespace

TEST_CASE("where, masked_fill, nonzero, masked_select and x[mask] print as PyTorch's, or throw its errors") {
    golden::check_reprs("masking_repr.txt", cases(), kXgradWording);
}

TEST_CASE("gradients of where, masked_fill, masked_select and x[mask] match PyTorch, and gradcheck") {
    const Tensor m = tensor({{1.0, 0.0, 1.0, 0.0}, {0.0, 0.0, 1.0, 1.0}, {1.0, 1.0, 0.0, 0.0}}, b);
    using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
    struct Case {
        std::string name;
        Fn fn;
        std::vector<std::string> dtypes;
    };
    const std::vector<Case> all = {
        {"where", [&](const auto& in) { return xgrad::where(m, in[0], in[1]); }, {"float32", "float64"}},
        {"where_bcast", [&](const auto& in) { return xgrad::where(m, in[0], in[1]); }, {"float64"}},
        {"where_scalar", [&](const auto& in) { return xgrad::where(m, 0.5, in[0]); }, {"float64"}},
        {"masked_fill", [&](const auto& in) { return in[0].masked_fill(m, -2.0); }, {"float32", "float64"}},
        {"masked_fill_bcast", [&](const auto& in) { return in[0].masked_fill(m, 3.0); }, {"float64"}},
        {"masked_fill_tensor", [&](const auto& in) { return xgrad::masked_fill(in[0], m, in[1]); }, {"float64"}},
        {"masked_select", [&](const auto& in) { return in[0].masked_select(m); }, {"float64"}},
        {"masked_select_bcast", [&](const auto& in) { return in[0].masked_select(m); }, {"float64"}},
        {"index_mask", [&](const auto& in) { return in[0].index({m}); }, {"float64"}},
        {"index_mask_rows",
         [&](const auto& in) {
             return in[0].index({tensor({1.0, 0.0, 1.0}, b)});
         },
         {"float64"}},
    };
    for (const Case& c : all)
        for (const std::string& dtype : c.dtypes) {
            const std::string key = c.name + "." + dtype;
            INFO(key);
            std::vector<Tensor> ins;
            for (int i = 0; golden::load(kFile).count(key + ".in" + std::to_string(i)); ++i)
                ins.push_back(leaf(key + ".in" + std::to_string(i)));
            Tensor out = c.fn(ins);
            golden::check_close(out, get(key + ".out"), key + " forward", 0, 0);
            CHECK(out.grad_fn_name() == golden::grad_fn_name(kFile, key));
            (out * get(key + ".w")).sum().backward();
            for (std::size_t i = 0; i < ins.size(); ++i) {
                golden::check_close(ins[i].grad(), get(key + ".g" + std::to_string(i)), key + " grad", 1e-6, 1e-7);
                CHECK(golden::bits_differ(ins[i].grad(), get(key + ".g" + std::to_string(i))) == 0);  // PyTorch's bits
            }
            if (dtype == "float64") {
                std::vector<Tensor> again;
                for (const Tensor& t : ins) again.push_back(t.detach().clone().requires_grad_());
                golden::check_gradcheck(c.fn, again, key + " gradcheck");
            }
        }
}

TEST_CASE("masked_fill_ and index_put_ write in place; leaves that require grad refuse them") {
    Tensor x = x23();
    Tensor& same = x.masked_fill_(m23(), tensor(-4.0));
    CHECK(&same == &x);
    CHECK(x.to_vector<float>() == std::vector<float>{-4, 2, -4, 4, 5, -4});
    x.index_put_({tensor({0.0, 1.0}, b)}, 9.0);
    CHECK(x.to_vector<float>() == std::vector<float>{-4, 2, -4, 9, 9, 9});
    // A strided (transposed) view is written through.
    Tensor base = xgrad::zeros({3, 2});
    Tensor view = base.t();  // (2, 3)
    view.masked_fill_(m23(), 1.0);
    CHECK(base.to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 1});
    Tensor w = xgrad::ones({3}).requires_grad_();
    golden::check_throws([&] { w.masked_fill_(m3(), 0.0); }, {"masked_fill_", "leaf"});
    golden::check_throws([&] { w.index_put_({m3()}, 0.0); }, {"index_put_", "leaf"});
    // uint8 values that do not fit are refused as PyTorch refuses them.
    golden::check_throws([&] { tensor({1.0}, u8).masked_fill(tensor({1.0}, b), 300.0); },
                         {"masked_fill", "value cannot be converted to type"});
    // The gradient of a 0-d value tensor is the sum over the filled places, in its own dtype.
    Tensor v = tensor(2.0, f64).requires_grad_();
    Tensor y = x23().masked_fill(m23(), v);
    CHECK(y.dtype() == xgrad::kFloat32);
    y.sum().backward();
    CHECK(v.grad().dtype() == f64);
    CHECK(v.grad().item<double>() == 3.0);
}

TEST_CASE("scaled_dot_product_attention takes a bool mask: True takes part (PyTorch 2.x)") {
    for (const std::string key : {"sdpa_bool", "sdpa_bool_batched"}) {
        INFO(key);
        Tensor q = leaf(key + ".q"), k = leaf(key + ".k"), v = leaf(key + ".v");
        const Tensor mask = get(key + ".mask").to(b);
        Tensor out = F::scaled_dot_product_attention(q, k, v, mask);
        golden::check_close(out, get(key + ".out"), key + " out", 1e-12, 1e-12);
        (out * get(key + ".wo")).sum().backward();
        golden::check_close(q.grad(), get(key + ".gq"), key + " gq", 1e-10, 1e-12);
        golden::check_close(k.grad(), get(key + ".gk"), key + " gk", 1e-10, 1e-12);
        golden::check_close(v.grad(), get(key + ".gv"), key + " gv", 1e-10, 1e-12);
    }
    // The same as the additive mask it stands for.
    Tensor q = xgrad::randn({3, 4}), k = xgrad::randn({5, 4}), v = xgrad::randn({5, 2});
    const Tensor mask = tensor({{1.0, 0.0, 1.0, 1.0, 0.0}, {1.0, 1.0, 1.0, 1.0, 1.0}, {0.0, 0.0, 0.0, 0.0, 1.0}}, b);
    const Tensor additive = xgrad::where(mask, 0.0, xgrad::full({}, -inf));
    golden::check_close(F::scaled_dot_product_attention(q, k, v, mask),
                        F::scaled_dot_product_attention(q, k, v, additive), "bool = additive", 0, 0);
}

TEST_CASE("MultiheadAttention takes bool attn_mask and key_padding_mask as PyTorch 1.13") {
    struct MhaCase {
        const char* name;
        std::uint64_t seed;
        std::int64_t e, h;
        nn::MultiheadAttentionOptions opts;
        bool grads = true;
    };
    for (const MhaCase& c :
         {MhaCase{"mha_bool_attn", 41, 6, 2, {}}, MhaCase{"mha_kpm", 42, 6, 3, {}}, MhaCase{"mha_both", 43, 4, 2, {}},
          MhaCase{"mha_float_attn_kpm", 44, 4, 2, {}}, MhaCase{"mha_float_kpm", 45, 4, 2, {}},
          MhaCase{"mha_kpm_bias_kv", 46, 4, 2, {.add_bias_kv = true, .add_zero_attn = true}},
          MhaCase{"mha_kpm_unbatched", 47, 4, 2, {}}, MhaCase{"mha_all_hidden", 48, 4, 2, {}, false}}) {
        const std::string key = c.name;
        INFO(key);
        xgrad::manual_seed(c.seed);
        nn::MultiheadAttention mha(c.e, c.h, c.opts);
        mha.to(f64);
        Tensor q = leaf(key + ".q"), k = leaf(key + ".k"), v = leaf(key + ".v");
        const auto& all = golden::load(kFile);
        Tensor attn_mask, kpm;
        if (all.count(key + ".attn_mask")) {
            attn_mask = get(key + ".attn_mask");
            attn_mask =
                attn_mask.dtype() == xgrad::kFloat32 ? attn_mask.to(b) : attn_mask;  // bool lines load as float32
        }
        if (all.count(key + ".kpm")) {
            kpm = get(key + ".kpm");
            kpm = kpm.dtype() == xgrad::kFloat32 ? kpm.to(b) : kpm;
        }
        auto [out, weights] = mha.forward(q, k, v, attn_mask, true, true, kpm);
        golden::check_close(out, get(key + ".out"), key + " out", 1e-10, 1e-12);
        golden::check_close(weights, get(key + ".weights"), key + " weights", 1e-10, 1e-12);
        if (!c.grads) continue;
        ((out * get(key + ".wo")).sum() + (weights * get(key + ".ww")).sum()).backward();
        golden::check_close(q.grad(), get(key + ".gq"), key + " gq", 1e-10, 1e-12);
        golden::check_close(k.grad(), get(key + ".gk"), key + " gk", 1e-10, 1e-12);
        golden::check_close(v.grad(), get(key + ".gv"), key + " gv", 1e-10, 1e-12);
        for (const auto& [name, p] : mha.named_parameters())
            golden::check_close(p.grad(), get(key + ".g." + name), key + " g." + name, 1e-10, 1e-12);
    }
    nn::MultiheadAttention mha(4, 2);
    Tensor x = xgrad::randn({3, 2, 4});
    golden::check_throws(
        [&] {
            mha.forward(x, x, x, Tensor(), true, true, tensor({1.0, 0.0, 0.0}, b));
        },
        {"MultiheadAttention",
         "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found "
         "1-D tensor instead"});
    golden::check_throws(
        [&] {
            mha.forward(x, x, x, Tensor(), true, true, xgrad::zeros({3, 2}, xgrad::TensorOptions{.dtype = b}));
        },
        {"MultiheadAttention", "expecting key_padding_mask shape of (2, 3), but got torch.Size([3, 2])"});
    golden::check_throws(
        [&] {
            mha.forward(x, x, x, Tensor(), true, true, xgrad::zeros({2, 3}, i64));
        },
        {"MultiheadAttention", "only bool and floating types of key_padding_mask are supported"});
    golden::check_throws(
        [&] {
            mha.forward(x, x, x, xgrad::zeros({3, 3}, i64));
        },
        {"MultiheadAttention", "Only float, byte, and bool types are supported for attn_mask"});
}
