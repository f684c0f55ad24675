// Golden tensors from PyTorch (written by the scripts in tests/golden/) and close-comparison checks.
//
// File format, one tensor per line: `name dtype ndim d0 .. d{ndim-1} v0 v1 ...`, dtype one of
// float32/float64/int64, values as Python's float.hex() (exact) or decimal integers.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "xgrad/xgrad.hpp"

namespace golden {

/// Short names of the dtypes and of NaN and infinity, for the case tables of the dtype, comparison and
/// masking tests (`using namespace golden::names;`).
namespace names {
constexpr auto b = xgrad::kBool;
constexpr auto u8 = xgrad::kUInt8;
constexpr auto i32 = xgrad::kInt32;
constexpr auto i64 = xgrad::kInt64;
constexpr auto f64 = xgrad::kFloat64;
inline const double nan = std::numeric_limits<double>::quiet_NaN();
inline const double inf = std::numeric_limits<double>::infinity();
}  // namespace names

/// The folder holding the golden files: $XGRAD_GOLDEN_DIR (set by meson test), else next to this file.
inline std::string dir() {
    if (const char* d = std::getenv("XGRAD_GOLDEN_DIR")) return d;
    std::string here = __FILE__;
    return here.substr(0, here.find_last_of('/')) + "/golden";
}

/// PyTorch's message for error case `name`: the `# error <name> <message>` line of a golden file.
inline std::string error_message(const std::string& file, const std::string& name) {
    std::ifstream in(dir() + "/" + file);
    std::string line, prefix = "# error " + name + " ";
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
    FAIL("no error " << name << " in " << file);
    return "";
}

/// Every tensor in `file` (cached), by name.
inline const std::map<std::string, xgrad::Tensor>& load(const std::string& file) {
    static std::map<std::string, std::map<std::string, xgrad::Tensor>> cache;
    auto found = cache.find(file);
    if (found != cache.end()) return found->second;
    std::ifstream in(dir() + "/" + file);
    if (!in) throw std::runtime_error("golden: cannot open " + dir() + "/" + file);
    std::map<std::string, xgrad::Tensor> tensors;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        std::string name, dtype;
        std::int64_t ndim = 0;
        ls >> name >> dtype >> ndim;
        std::vector<std::int64_t> dims(static_cast<std::size_t>(ndim));
        for (auto& d : dims) ls >> d;
        xgrad::Shape shape(dims);
        std::vector<double> values;
        std::string tok;
        while (ls >> tok) values.push_back(std::strtod(tok.c_str(), nullptr));
        if (static_cast<std::int64_t>(values.size()) != shape.numel())
            throw std::runtime_error("golden: " + name + " in " + file + " has the wrong number of values");
        xgrad::DType dt = dtype == "float64" ? xgrad::kFloat64 : dtype == "int64" ? xgrad::kInt64 : xgrad::kFloat32;
        tensors[name] = xgrad::from_vector(values, shape, dt);
    }
    return cache[file] = std::move(tensors);
}

/// PyTorch's grad_fn name for `key` from the `# grad_fn <key> <name>` lines of `file` (cached);
/// "" when PyTorch's output had no grad_fn.
inline std::string grad_fn_name(const std::string& file, const std::string& key) {
    static std::map<std::string, std::map<std::string, std::string>> cache;
    auto found = cache.find(file);
    if (found == cache.end()) {
        std::map<std::string, std::string> names;
        std::ifstream in(dir() + "/" + file);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream ls(line);
            std::string hash, tag, k, name;
            if (ls >> hash >> tag >> k >> name && hash == "#" && tag == "grad_fn") names[k] = name;
        }
        found = cache.emplace(file, std::move(names)).first;
    }
    auto it = found->second.find(key);
    return it == found->second.end() ? "" : it->second;
}

/// The tensor `name` of `file`; throws when missing.
inline xgrad::Tensor get(const std::string& file, const std::string& name) {
    const auto& all = load(file);
    auto it = all.find(name);
    if (it == all.end()) throw std::runtime_error("golden: no tensor " + name + " in " + file);
    return it->second;
}

/// How many elements of `actual` differ from `expected` in their bits (a NaN matching any NaN), or -1
/// when the shapes or dtypes differ: 0 is PyTorch's result exactly.
inline long bits_differ(const xgrad::Tensor& actual, const xgrad::Tensor& expected) {
    if (!actual.defined() || actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) return -1;
    const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();  // exact for float32 too
    long differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        differ += std::isnan(e[i]) ? !std::isnan(a[i]) : std::memcmp(&a[i], &e[i], sizeof(double)) != 0;
    return differ;
}

/// Checks shape, dtype and every value: |a - e| <= atol + rtol * |e| (NaNs must match NaNs).
/// With XGRAD_EXACT_AUDIT set, also reports on stderr (`AUDIT ...`) each comparison whose bits are not
/// PyTorch's: a survey of which results are exact, not a check.
inline void check_close(const xgrad::Tensor& actual, const xgrad::Tensor& expected, const std::string& what,
                        double rtol = 1e-5, double atol = 1e-6) {
    INFO(what);
    REQUIRE(actual.defined());
    REQUIRE(xgrad::to_string(actual.shape()) == xgrad::to_string(expected.shape()));
    CHECK(actual.dtype() == expected.dtype());
    auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
    if (const long d = std::getenv("XGRAD_EXACT_AUDIT") ? bits_differ(actual, expected) : 0; d != 0)
        std::fprintf(stderr, "AUDIT %s %s: %ld of %zu differ\n", xgrad::to_string(actual.dtype()).c_str(), what.c_str(),
                     d, a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        bool ok = std::isnan(e[i]) ? std::isnan(a[i])
                                   : (a[i] == e[i] || std::abs(a[i] - e[i]) <= atol + rtol * std::abs(e[i]));
        if (!ok) {
            FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << e[i]);
            return;
        }
    }
}

/// check_close, and with `exact` also PyTorch's bits.
inline void check_close_or_exact(const xgrad::Tensor& actual, const xgrad::Tensor& expected, const std::string& what,
                                 bool exact) {
    check_close(actual, expected, what);
    if (exact) CHECK_MESSAGE(bits_differ(actual, expected) == 0, what << ": bits");
}

/// Checks that `f` throws std::invalid_argument whose message contains every one of `parts`.
inline void check_throws(const std::function<void()>& f, const std::vector<std::string>& parts) {
    std::string msg;
    try {
        f();
    } catch (const std::invalid_argument& e) {
        msg = e.what();
    }
    INFO("message: " << msg);
    REQUIRE(!msg.empty());
    for (const auto& p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "missing \"" << p << "\"");
}

/// The message of the std::invalid_argument that `fn` throws, or a marker saying what happened instead.
template <typename Fn>
std::string invalid_argument_of(Fn fn) {
    try {
        fn();
    } catch (const std::invalid_argument& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<wrong exception type> ") + e.what();
    }
    return "<no exception>";
}

/// Runs gradcheck and reports its message on failure.
inline void check_gradcheck(const std::function<xgrad::Tensor(const std::vector<xgrad::Tensor>&)>& fn,
                            const std::vector<xgrad::Tensor>& inputs, const std::string& what) {
    auto r = xgrad::autograd::gradcheck(fn, inputs);
    INFO(what << ": " << r.message);
    CHECK(r.ok);
}

/// The modules PyTorch printed into `file` under `=== <name>` lines, by name (multi-line texts joined
/// with '\n').
inline std::map<std::string, std::string> reprs(const std::string& file) {
    std::ifstream in(dir() + "/" + file);
    std::map<std::string, std::string> out;
    std::string line, key;
    while (std::getline(in, line)) {
        if (line.rfind("=== ", 0) == 0) {
            key = line.substr(4);
            continue;
        }
        out[key] += (out[key].empty() ? "" : "\n") + line;
    }
    return out;
}

/// What `os << x` writes.
template <typename T>
std::string printed(const T& x) {
    std::ostringstream os;
    os << x;
    return os.str();
}

/// Checks every `=== name` text of `file` against its xgrad twin in `cases` (a function returning a
/// Tensor, printed, or the text itself): a text starting "!! " is PyTorch's error, which the
/// std::invalid_argument's message must contain, or the xgrad wording `wording` gives for the name.
template <typename Make>
void check_reprs(const std::string& file, const std::map<std::string, Make>& cases,
                 const std::map<std::string, std::string>& wording = {}) {
    const auto expected = reprs(file);
    REQUIRE(expected.size() == cases.size());
    for (const auto& entry : expected) {
        // Named copies, not a structured binding: clang 14 cannot capture those in INFO's lambda.
        const std::string& name = entry.first;
        const std::string& want = entry.second;
        INFO(name);
        REQUIRE(cases.count(name) == 1);
        const auto& make = cases.at(name);
        if (want.rfind("!! ", 0) == 0) {
            const std::string msg = invalid_argument_of(make);
            const std::string part = wording.count(name) ? wording.at(name) : want.substr(3);
            CHECK_MESSAGE(msg.find(part) != std::string::npos, msg);
        } else if constexpr (std::is_same_v<decltype(make()), std::string>) {
            CHECK(make() == want);
        } else {
            CHECK(printed(make()) == want);
        }
    }
}

/// The options of a `# <tag> <key> k=v ...` line of a golden file.
using Opts = std::map<std::string, std::string>;

/// The `# <tag> <key> k=v ...` lines of `file`, in order, as (key, options).
inline std::vector<std::pair<std::string, Opts>> tagged_lines(const std::string& file, const std::string& tag) {
    std::vector<std::pair<std::string, Opts>> out;
    std::ifstream in(dir() + "/" + file);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string hash, t, key, kv;
        if (!(ls >> hash >> t >> key) || hash != "#" || t != tag) continue;
        Opts opts;
        while (ls >> kv) opts[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
        out.emplace_back(key, opts);
    }
    return out;
}

/// The number option `k` of a tagged line, or `dflt`.
inline double opt_num(const Opts& o, const std::string& k, double dflt) {
    return o.count(k) ? std::stod(o.at(k)) : dflt;
}

/// Whether the option `k` of a tagged line is Python's True.
inline bool opt_flag(const Opts& o, const std::string& k) {
    return o.count(k) && o.at(k) == "True";
}

/// Checks the `# update <key> k=v` lines of `file` (golden_writer.py's optimizer_update): from `.p0`, the
/// optimizer `make(params, options)` takes the steps of the gradients `.g` and must reach `.p`, within
/// a tolerance, and bit for bit with `bits`; the parameter contiguous, and strided (every other element
/// of a buffer twice as long). Returns the number of update lines.
template <class Make>
std::size_t check_updates(const std::string& file, Make&& make, bool bits) {
    const auto updates = tagged_lines(file, "update");
    for (const auto& update : updates) {
        const std::string& key = update.first;
        INFO(key);
        const xgrad::Tensor grads = get(file, key + ".g"), want = get(file, key + ".p");
        for (const bool strided : {false, true}) {
            CAPTURE(strided);
            const xgrad::Tensor p0 = get(file, key + ".p0");
            xgrad::Tensor p = strided ? xgrad::stack({p0, p0}, 1).select(1, 0).detach() : p0.clone();
            REQUIRE(p.is_contiguous() != strided);
            p.requires_grad_();
            auto opt = make(std::vector<xgrad::Tensor>{p}, update.second);
            for (std::int64_t t = 0; t < grads.size(0); ++t) {
                p.mutable_grad() = grads[t].clone();
                opt->step();
            }
            check_close(p, want, key + " p", 1e-5, 1e-7);
            if (bits) CHECK(bits_differ(p, want) == 0);
        }
    }
    return updates.size();
}

}  // namespace golden
