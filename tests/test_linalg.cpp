// Checks matmul in all of torch.matmul's cases against PyTorch's values and gradients, and its errors.
#include <cblas.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {

const char* kFile = "linalg.txt";

bool has(const std::string& name) {
    return golden::load(kFile).count(name) != 0;
}

/// Whether this process's OpenBLAS runs the kernels PyTorch's ran on when gen_linalg.py wrote the
/// golden file (its `# blas <kernels> <threads>` line), and, if `threads_too`, as many threads.
/// Then xgrad's products are PyTorch's bit for bit; elsewhere they agree to rounding.
bool same_blas(bool threads_too) {
    std::ifstream in(golden::dir() + "/" + kFile);
    std::string line, hash, tag, kernels;
    int threads = 0;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        if (ls >> hash >> tag >> kernels >> threads && hash == "#" && tag == "blas") break;
    }
    return kernels == openblas_get_corename() && (!threads_too || threads == xgrad::get_num_threads());
}

/// Applies `fn` to the golden leaves of `name.dtype` and compares value, grad_fn name and the gradients
/// of (out * w).sum() with PyTorch's, then runs gradcheck.
void check_case(const std::string& name, const std::string& dtype, const Fn& fn, const std::string& grad_fn) {
    const std::string key = name + "." + dtype;
    INFO(key);
    std::vector<Tensor> ins;
    for (int i = 0; has(key + ".in" + std::to_string(i)); ++i)
        ins.push_back(golden::get(kFile, key + ".in" + std::to_string(i)).clone().requires_grad_());
    REQUIRE(ins.size() == 2);
    // The same OpenBLAS calls as PyTorch's (and the same loop for small batched matrices), single-threaded
    // at these sizes: bit for bit on the same kernels; else float32 sums rounded in another order.
    const bool exact = same_blas(/*threads_too=*/false);
    const double rtol = exact ? 0 : dtype == "float32" ? 1e-5 : 1e-12, atol = rtol;
    Tensor out = fn(ins);
    golden::check_close(out, golden::get(kFile, key + ".out"), key + " value", rtol, atol);
    CHECK(out.grad_fn_name() == grad_fn);
    out.backward(golden::get(kFile, key + ".w"));
    for (std::size_t i = 0; i < ins.size(); ++i)
        golden::check_close(ins[i].grad(), golden::get(kFile, key + ".g" + std::to_string(i)),
                            key + " grad of input " + std::to_string(i), rtol, atol);
    golden::check_gradcheck(fn, ins, key + " gradcheck");
}

Tensor mm(const std::vector<Tensor>& in) {
    return xgrad::matmul(in[0], in[1]);
}

/// The generator of gen_linalg.py: n float32 values k / 2^23 - 1, exactly as Python makes them.
std::vector<float> lcg(std::size_t n, std::uint32_t state) {
    std::vector<float> v(n);
    for (auto& x : v) {
        state = state * 1664525u + 1013904223u;
        x = static_cast<float>(static_cast<double>(state >> 8) / 8388608.0 - 1.0);
    }
    return v;
}

/// Every 7th row and 5th column, as gen_linalg.py stores the large case.
Tensor sample(const Tensor& t) {
    return t.slice(0, {}, {}, 7).slice(1, {}, {}, 5);
}

void check_throws(const std::function<void()>& f, const std::string& expected) {
    std::string msg;
    try {
        f();
    } catch (const std::invalid_argument& e) {
        msg = e.what();
    }
    CHECK(msg == expected);
}

}  // namespace

TEST_CASE("matmul of vectors and matrices matches PyTorch") {
    for (const char* dt : {"float32", "float64"}) {
        check_case("dot", dt, mm, "DotBackward0");
        check_case("mv", dt, mm, "MvBackward0");
        check_case("vm", dt, mm, "MmBackward0");  // torch 1.13: SqueezeBackward3 (mm, then squeeze_)
        check_case("mm", dt, mm, "MmBackward0");
    }
    Tensor a = golden::get(kFile, "dot.float32.in0"), b = golden::get(kFile, "dot.float32.in1");
    CHECK(xgrad::matmul(a, b).dim() == 0);
    CHECK(a.matmul(b).item<float>() == xgrad::matmul(a, b).item<float>());
}

TEST_CASE("batched matmul broadcasts like PyTorch") {
    // torch 1.13 names all of these UnsafeViewBackward0 (or CloneBackward0), after the reshapes
    // around its bmm; xgrad records one node.
    for (const char* dt : {"float32", "float64"}) {
        check_case("bmm", dt, mm, "BmmBackward0");
        check_case("broadcast", dt, mm, "BmmBackward0");
    }
    check_case("b3d_2d", "float32", mm, "BmmBackward0");
    check_case("b2d_3d", "float32", mm, "BmmBackward0");
    check_case("b1d_3d", "float32", mm, "BmmBackward0");
    check_case("b3d_1d", "float32", mm, "BmmBackward0");
    Tensor out = xgrad::matmul(xgrad::zeros({2, 1, 3, 4}), xgrad::zeros({5, 4, 2}));
    CHECK(out.shape() == Shape{2, 5, 3, 2});
}

TEST_CASE("matmul of transposed (non-contiguous) operands") {
    for (const char* dt : {"float32", "float64"})
        check_case(
            "transposed", dt, [](const auto& in) { return xgrad::matmul(in[0].t(), in[1].t()); }, "MmBackward0");
    check_case(
        "transposed_batch", "float32",
        [](const auto& in) { return in[0].transpose(1, 2).matmul(in[1].slice(1, {}, {}, 2)); }, "BmmBackward0");
}

TEST_CASE("a 64x128 by 128x96 float32 product matches PyTorch and a float64 product") {
    Tensor a = xgrad::from_vector(lcg(64 * 128, 1), {64, 128}).requires_grad_();
    Tensor b = xgrad::from_vector(lcg(128 * 96, 2), {128, 96}).requires_grad_();
    Tensor w = xgrad::from_vector(lcg(64 * 96, 3), {64, 96});
    Tensor out = xgrad::matmul(a, b);
    out.backward(w);
    // Exact on the same OpenBLAS kernels and thread count (OpenBLAS splits products this large
    // between its threads, which changes some roundings); else terms of size ~1 summed 128 times
    // differ by float32 rounding, ~128 * 6e-8 * |term|.
    const double tol = same_blas(/*threads_too=*/true) ? 0 : 1e-4;
    golden::check_close(sample(out), golden::get(kFile, "big.out"), "big value", tol, tol);
    golden::check_close(sample(a.grad()), golden::get(kFile, "big.g0"), "big grad a", tol, tol);
    golden::check_close(sample(b.grad()), golden::get(kFile, "big.g1"), "big grad b", tol, tol);
    // Every element, against the same product in float64.
    Tensor ref = xgrad::matmul(a.detach().to(xgrad::kFloat64), b.detach().to(xgrad::kFloat64)).to(xgrad::kFloat32);
    golden::check_close(out, ref, "big vs float64", 1e-4, 1e-4);
}

TEST_CASE("F::linear's output and gradients match PyTorch's, bit for bit on the same OpenBLAS") {
    // 1000 input features span several of OpenBLAS's k-blocks, where PyTorch's two ways differ: a
    // 2-D input is one addmm (the bias in the output first, each block's products added onto it), a
    // 4-D one a matmul, then + bias.
    Tensor x = xgrad::from_vector(lcg(8 * 1000, 4), {8, 1000});
    Tensor weight = xgrad::from_vector(lcg(24 * 1000, 5), {24, 1000});
    Tensor bias = xgrad::from_vector(lcg(24, 6), {24});
    Tensor w = xgrad::from_vector(lcg(8 * 24, 7), {8, 24});
    const double tol = same_blas(/*threads_too=*/false) ? 0 : 1e-4;
    for (const auto& c : {std::pair{"linear2d", Shape{8, 1000}}, {"linear4d", Shape{2, 2, 2, 1000}}}) {
        const char* name = c.first;  // not a structured binding: clang 14 cannot capture those (INFO)
        const Shape& shape = c.second;
        INFO(name);
        Tensor xi = x.reshape(shape).clone().requires_grad_(), W = weight.clone().requires_grad_();
        Tensor b = bias.clone().requires_grad_();
        Tensor out = xgrad::nn::functional::linear(xi, W, b);
        CHECK(out.grad_fn_name() == golden::grad_fn_name(kFile, name));
        out.backward(w.reshape(out.shape()));
        const std::string n = name;
        golden::check_close(out, golden::get(kFile, n + ".out"), "value", tol, tol);
        golden::check_close(xi.grad().slice(-1, {}, {}, 50), golden::get(kFile, n + ".gx"), "grad of x", tol, tol);
        golden::check_close(W.grad().slice(1, {}, {}, 50), golden::get(kFile, n + ".gw"), "grad of weight", tol, tol);
        golden::check_close(b.grad(), golden::get(kFile, n + ".gb"), "grad of bias", tol, tol);
    }
}

TEST_CASE("matmul of empty operands gives zeros") {
    Tensor out = xgrad::matmul(xgrad::ones({2, 0}), xgrad::ones({0, 3}));
    CHECK(out.shape() == Shape{2, 3});
    CHECK(out.to_vector<float>() == std::vector<float>(6, 0.0f));
    CHECK(xgrad::matmul(xgrad::ones({3, 0, 4}), xgrad::ones({4, 2})).shape() == Shape{3, 0, 2});
}

TEST_CASE("matmul of int64 tensors stays integral, as torch.matmul") {
    Tensor a = xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}}, xgrad::kInt64);
    Tensor b = xgrad::tensor({{5.0}, {6.0}}, xgrad::kInt64);
    Tensor out = xgrad::matmul(a, b);
    CHECK(out.dtype() == xgrad::kInt64);
    CHECK(out.to_vector<std::int64_t>() == std::vector<std::int64_t>{17, 39});
    // Mixed dtypes throw, as PyTorch's "expected scalar type Long but found Double".
    check_throws(
        [&] {
            xgrad::matmul(a, xgrad::tensor({0.5, 0.25}, xgrad::kFloat64));
        },
        "matmul: expected both arguments to have the same dtype, but got torch.int64 and torch.float64 "
        "(shapes (2, 2) and (2,))");
}

TEST_CASE("matmul errors name both shapes") {
    check_throws(
        [] {
            xgrad::matmul(xgrad::zeros({2, 5}), xgrad::zeros({4, 6}));
        },
        "matmul: shapes (2, 5) and (4, 6) cannot be multiplied (5 != 4)");
    check_throws([] { xgrad::matmul(xgrad::zeros({3}), xgrad::zeros({4})); },
                 "matmul: shapes (3,) and (4,) cannot be multiplied (3 != 4)");
    check_throws(
        [] {
            xgrad::matmul(xgrad::zeros({2, 3, 5}), xgrad::zeros({4}));
        },
        "matmul: shapes (2, 3, 5) and (4,) cannot be multiplied (5 != 4)");
    check_throws(
        [] {
            xgrad::matmul(xgrad::zeros({2}), xgrad::zeros({3, 2}));
        },
        "matmul: shapes (2,) and (3, 2) cannot be multiplied (2 != 3)");
    check_throws([] { xgrad::matmul(xgrad::zeros({}), xgrad::zeros({3})); },
                 "matmul: both arguments need at least 1 dimension, got shapes () and (3,)");
    std::string msg;
    try {
        xgrad::matmul(xgrad::zeros({2, 3, 4}), xgrad::zeros({5, 4, 2}));
    } catch (const std::invalid_argument& e) {
        msg = e.what();
    }
    INFO(msg);
    CHECK(msg.find("matmul") == 0);
    CHECK(msg.find("(2, 3, 4)") != std::string::npos);
    CHECK(msg.find("(5, 4, 2)") != std::string::npos);
}
