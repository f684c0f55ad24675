// Tests for print.hpp: tensors print exactly as PyTorch's repr (golden/print.txt).
#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>

#include "replay.hpp"

using xgrad::Tensor;

namespace {

/// One case of print.txt.
struct Case {
    std::string name;
    std::vector<std::string> options, input;
    std::string grad, hash, expected;
};

std::vector<std::string> split(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::vector<Case> read_cases() {
    std::ifstream in(replay::golden_path("print.txt"));
    if (!in) throw std::runtime_error("cannot open golden file " + replay::golden_path("print.txt"));
    std::vector<Case> cases;
    std::string line;
    auto rest = [](const std::string& l) { return l.substr(l.find(' ') + 1); };
    while (std::getline(in, line)) {
        if (line.rfind("case ", 0) != 0) continue;
        Case c;
        c.name = rest(line);
        std::getline(in, line);
        c.options = split(rest(line));
        std::getline(in, line);
        c.input = split(rest(line));
        std::getline(in, line);
        c.grad = rest(line);
        std::getline(in, line);
        c.hash = rest(line);
        std::getline(in, line);
        int n = std::stoi(rest(line));
        for (int i = 0; i < n; ++i) {
            std::getline(in, line);
            c.expected += (i ? "\n" : "") + line;
        }
        cases.push_back(std::move(c));
    }
    return cases;
}

/// Rebuilds a case's input as gen_print.py's make_input built it in PyTorch.
Tensor make_input(const std::vector<std::string>& w) {
    xgrad::DType dt = replay::dtype(w[1]);
    xgrad::Shape shape = replay::shape(w[2]);
    if (w[0] == "randn" || w[0] == "rand") {
        xgrad::manual_seed(std::stoull(w[3]));
        Tensor t = w[0] == "randn" ? xgrad::randn(shape, dt) : xgrad::rand(shape, dt);
        double scale = replay::number(w[4]);
        if (dt == xgrad::kFloat32)
            for (float *p = t.data_ptr<float>(), *e = p + t.numel(); p != e; ++p) *p *= static_cast<float>(scale);
        else
            for (double *p = t.data_ptr<double>(), *e = p + t.numel(); p != e; ++p) *p *= scale;
        return t;
    }
    if (w[0] == "randint") {
        xgrad::manual_seed(std::stoull(w[3]));
        return xgrad::randint(std::stoll(w[4]), std::stoll(w[5]), shape, dt);
    }
    if (w[0] == "values") {
        Tensor t = xgrad::empty(shape, dt);
        for (std::int64_t i = 0; i < t.numel(); ++i) {
            const std::string& v = w[static_cast<std::size_t>(3 + i)];
            if (dt == xgrad::kInt64)
                t.data_ptr<std::int64_t>()[i] = std::stoll(v);
            else if (dt == xgrad::kFloat32)
                t.data_ptr<float>()[i] = static_cast<float>(replay::number(v));
            else
                t.data_ptr<double>()[i] = replay::number(v);
        }
        return t;
    }
    throw std::runtime_error("unknown input " + w[0]);
}

Tensor apply(const std::string& grad, Tensor t) {
    if (grad == "none") return t;
    t.requires_grad_();
    if (grad == "leaf") return t;
    if (grad == "mul2") return t * 2.0;
    if (grad == "add1") return t + 1.0;
    if (grad == "relu") return t.relu();
    if (grad == "neg") return -t;
    if (grad == "sum") return t.sum();
    if (grad == "mean_keepdim") return t.mean(-1, true);
    throw std::runtime_error("unknown grad op " + grad);
}

void set_options(const std::vector<std::string>& o) {
    auto i64 = [](const std::string& s) {
        return s == "-" ? std::nullopt : std::optional<std::int64_t>(std::stoll(s));
    };
    auto i32 = [](const std::string& s) { return s == "-" ? std::nullopt : std::optional<int>(std::stoi(s)); };
    xgrad::PrintOptions p;
    p.precision = i32(o[0]);
    p.threshold = i64(o[1]);
    p.edgeitems = i64(o[2]);
    p.linewidth = i32(o[3]);
    if (o[4] != "-") p.sci_mode = o[4] == "True";
    if (o[5] != "-") p.profile = o[5];
    xgrad::set_printoptions(p);
}

/// Runs the cases whose grad op is (or is not) one of the recorded operations.
void run_cases(bool with_ops) {
    auto cases = read_cases();
    REQUIRE(cases.size() > 150);
    int run = 0;
    for (const auto& c : cases) {
        bool uses_ops = c.grad != "none" && c.grad != "leaf";
        if (uses_ops != with_ops) continue;
        INFO("case " << c.name);
        Tensor input = make_input(c.input);
        REQUIRE(split(replay::digest({input}))[1] == c.hash);  // the rebuild is exact
        Tensor shown = apply(c.grad, input);
        set_options(c.options);
        std::string text = xgrad::to_string(shown);
        xgrad::reset_printoptions();
        CHECK(text == c.expected);
        ++run;
    }
    CHECK(run > (with_ops ? 5 : 140));
}

}  // namespace

TEST_CASE("tensors print as PyTorch's repr (golden/print.txt)") {
    run_cases(false);
}

TEST_CASE("results of recorded operations print their grad_fn (golden/print.txt)") {
    run_cases(true);
}

TEST_CASE("the README example") {
    xgrad::manual_seed(123);
    auto x = xgrad::randn({2, 5});
    std::ostringstream os;
    os << x;
    CHECK(os.str() ==
          "tensor([[-0.1115,  0.1204, -0.3696, -0.2404, -1.1969],\n"
          "        [ 0.2093, -0.9724, -0.7550,  0.3239, -0.1085]])");
}

TEST_CASE("set_printoptions follows torch.set_printoptions") {
    xgrad::reset_printoptions();
    xgrad::set_printoptions({.precision = 2, .sci_mode = true});
    auto o = xgrad::get_printoptions();
    CHECK(o.precision == 2);
    CHECK(o.threshold == 1000);
    CHECK(o.sci_mode == true);
    CHECK(xgrad::to_string(xgrad::tensor({0.5, 0.25})) == "tensor([5.00e-01, 2.50e-01])");
    // Like PyTorch, a call that leaves sci_mode empty makes it automatic again.
    xgrad::set_printoptions({.linewidth = 100});
    CHECK_FALSE(xgrad::get_printoptions().sci_mode.has_value());
    CHECK(xgrad::get_printoptions().precision == 2);
    xgrad::set_printoptions({.profile = "short"});
    CHECK(xgrad::get_printoptions().edgeitems == 2);
    xgrad::set_printoptions({.profile = "full"});
    CHECK(xgrad::get_printoptions().threshold == std::numeric_limits<std::int64_t>::max());
    xgrad::reset_printoptions();
    o = xgrad::get_printoptions();
    CHECK(o.precision == 4);
    CHECK(o.edgeitems == 3);
    CHECK(o.linewidth == 80);
    CHECK(xgrad::to_string(Tensor()) == "[ Tensor (undefined) ]");
}

TEST_CASE("bad print options throw std::invalid_argument naming set_printoptions") {
    CHECK_THROWS_WITH_AS(xgrad::set_printoptions({.precision = -1}), doctest::Contains("set_printoptions"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::set_printoptions({.edgeitems = -2}), doctest::Contains("set_printoptions"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(xgrad::set_printoptions({.profile = "tiny"}), doctest::Contains("set_printoptions"),
                         std::invalid_argument);
    CHECK(xgrad::get_printoptions().precision == 4);  // a rejected call changes nothing
}
