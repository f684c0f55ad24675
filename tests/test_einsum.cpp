// Checks xgrad::einsum against torch.einsum (1.13): values, gradients and error messages from
// tests/golden/einsum.txt (gen_einsum.py), gradcheck in float64, and the cases torch has no golden for.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Shape;
using xgrad::Tensor;

namespace {

const char* kFile = "einsum.txt";

bool has(const std::string& name) {
    return golden::load(kFile).count(name) != 0;
}

/// The lines of einsum.txt that start with `# <tag> `, without that prefix.
std::vector<std::string> tagged(const std::string& tag) {
    std::ifstream in(golden::dir() + "/" + kFile);
    std::vector<std::string> out;
    const std::string prefix = "# " + tag + " ";
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
    return out;
}

/// "2,3;5,2,3" as shapes; "" is one 0-d shape per empty part.
std::vector<Shape> parse_shapes(const std::string& text) {
    std::vector<Shape> shapes;
    std::stringstream parts(text);
    std::string part;
    while (std::getline(parts, part, ';')) {
        std::vector<std::int64_t> dims;
        std::stringstream ds(part);
        std::string d;
        while (std::getline(ds, d, ',')) dims.push_back(std::stoll(d));
        shapes.emplace_back(dims);
    }
    return shapes;
}

}  // namespace

TEST_CASE("einsum: values and gradients as torch.einsum's") {
    const auto equations = tagged("equation");
    REQUIRE(equations.size() == 32);
    for (const std::string& line : equations) {
        const std::string name = line.substr(0, line.find(' '));
        const std::string eq = line.substr(line.find(' ') + 1);
        for (const std::string dtype : {"float32", "float64"}) {
            const std::string key = name + "." + dtype;
            if (!has(key + ".out")) continue;
            INFO(key << " \"" << eq << "\"");
            std::vector<Tensor> ins;
            for (int i = 0; has(key + ".in" + std::to_string(i)); ++i)
                ins.push_back(golden::get(kFile, key + ".in" + std::to_string(i)).clone().requires_grad_());
            // Sums in float32 run in another order than torch's (its bmm, our matmul): to rounding.
            const double tol = dtype == "float32" ? 1e-5 : 1e-12;
            Tensor out = xgrad::einsum(eq, ins);
            golden::check_close(out, golden::get(kFile, key + ".out"), key + " value", tol, tol);
            out.backward(golden::get(kFile, key + ".w"));
            for (std::size_t i = 0; i < ins.size(); ++i)
                golden::check_close(ins[i].grad(), golden::get(kFile, key + ".g" + std::to_string(i)),
                                    key + " grad " + std::to_string(i), tol, tol);
            // Pairs with nothing summed on both sides are a plain product, as PyTorch's sumproduct_pair
            // makes them, with gradients summed in PyTorch's order: its bits (the other equations'
            // matrix products depend on OpenBLAS's kernel for the CPU).
            if (name == "scalar" || name == "kept_summed_one") {
                CHECK(golden::bits_differ(out, golden::get(kFile, key + ".out")) == 0);
                for (std::size_t i = 0; i < ins.size(); ++i)
                    CHECK(golden::bits_differ(ins[i].grad(), golden::get(kFile, key + ".g" + std::to_string(i))) == 0);
            }
            if (dtype == "float64") {
                std::vector<Tensor> fresh;
                for (const Tensor& t : ins) fresh.push_back(t.detach().clone().requires_grad_());
                golden::check_gradcheck([eq](const std::vector<Tensor>& in) { return xgrad::einsum(eq, in); }, fresh,
                                        key + " gradcheck");
            }
        }
    }
}

TEST_CASE("einsum: torch's error messages for bad equations") {
    const auto errors = tagged("error");
    REQUIRE(errors.size() == 15);
    for (const std::string& line : errors) {
        const auto bar1 = line.find('|'), bar2 = line.find('|', bar1 + 1);
        const std::string eq = line.substr(0, bar1), message = line.substr(bar2 + 1);
        std::vector<Tensor> ops;
        for (const Shape& s : parse_shapes(line.substr(bar1 + 1, bar2 - bar1 - 1))) ops.push_back(xgrad::zeros(s));
        INFO("\"" << eq << "\"");
        CHECK(golden::invalid_argument_of([&] { xgrad::einsum(eq, ops); }) == message);
    }
    Tensor a = xgrad::zeros({2, 3}), b = xgrad::zeros({3, 4}, xgrad::kFloat64);
    // torch's bmm: "expected scalar type Float but found Double"; here with the op and the operand.
    CHECK(golden::invalid_argument_of([&] {
              xgrad::einsum("ij,jk", {a, b});
          }) == "einsum(): expected scalar type Float but found Double (operand 1)");
    CHECK(golden::invalid_argument_of([&] { xgrad::einsum("i", {}); }) ==
          "einsum(): must specify the equation string and at least one operand");
}

TEST_CASE("einsum: empty dims, int64 and views") {
    // torch.einsum("i,j->ij", torch.ones(2), torch.ones(0)).shape == (2, 0)
    Tensor e = xgrad::einsum("i,j->ij", {xgrad::ones({2}), xgrad::ones({0})});
    CHECK(e.shape() == Shape{2, 0});
    // torch.einsum("ij,j->", zeros(0, 3), ones(3)) == 0
    CHECK(xgrad::einsum("ij,j->", {xgrad::zeros({0, 3}), xgrad::ones({3})}).item<float>() == 0.0f);
    // int64 stays int64 and exact: trace and a product.
    Tensor m = xgrad::arange(9.0).reshape({3, 3}).to(xgrad::kInt64);
    Tensor tr = xgrad::einsum("ii", {m});
    CHECK(tr.dtype() == xgrad::kInt64);
    CHECK(tr.item<std::int64_t>() == 12);
    CHECK(xgrad::einsum("ij,jk->ik", {m, m}).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{15, 18, 21, 42, 54, 66, 69, 90, 111});
    // A diagonal's gradient lands on the diagonal only.
    Tensor x = xgrad::ones({3, 3}).requires_grad_();
    xgrad::einsum("ii->i", {x}).sum().backward();
    CHECK(x.grad().to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
}
