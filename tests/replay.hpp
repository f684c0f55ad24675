// Shared by test_random.cpp and test_nn_init.cpp: reads golden/*.txt written by gen_random.py and
// spells xgrad's results the way that script spells PyTorch's, so a line compares as one string.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <xgrad/xgrad.hpp>

namespace replay {

/// The golden directory: $XGRAD_GOLDEN_DIR (set by meson test), else tests/golden next to this file.
inline std::string golden_path(const std::string& name) {
    if (const char* dir = std::getenv("XGRAD_GOLDEN_DIR")) return std::string(dir) + "/" + name;
    std::string here = __FILE__;
    return here.substr(0, here.find_last_of('/') + 1) + "golden/" + name;
}

/// One command of a golden script and the text PyTorch produced for it ("" for `seed`).
struct Line {
    std::vector<std::string> words;
    std::string expected;
    std::string text;
};

inline std::vector<Line> read_script(const std::string& name) {
    std::ifstream in(golden_path(name));
    if (!in) throw std::runtime_error("cannot open golden file " + golden_path(name));
    std::vector<Line> lines;
    std::string text;
    while (std::getline(in, text)) {
        if (text.empty() || text[0] == '#') continue;
        Line line;
        line.text = text;
        auto eq = text.find(" = ");
        std::istringstream words(text.substr(0, eq));
        for (std::string w; words >> w;) line.words.push_back(w);
        if (eq != std::string::npos) line.expected = text.substr(eq + 3);
        lines.push_back(std::move(line));
    }
    return lines;
}

inline xgrad::DType dtype(const std::string& s) {
    if (s == "f32") return xgrad::kFloat32;
    if (s == "f64") return xgrad::kFloat64;
    if (s == "i64") return xgrad::kInt64;
    throw std::runtime_error("unknown dtype " + s);
}

inline xgrad::Shape shape(const std::string& s) {
    xgrad::Shape out;
    if (s == "-") return out;
    std::istringstream in(s);
    for (std::string part; std::getline(in, part, ',');) out.push_back(std::stoll(part));
    return out;
}

inline double number(const std::string& s) {
    return std::strtod(s.c_str(), nullptr);
}

/// Python's float.hex(): 0x1.<13 hex digits>p<exp>, 0x0.0p+0 for zero, inf / nan spelled out.
inline std::string float_hex(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    std::string sign = (bits >> 63) ? "-" : "";
    auto exponent = static_cast<int>((bits >> 52) & 0x7ff);
    std::uint64_t mantissa = bits & ((1ULL << 52) - 1);
    if (exponent == 0 && mantissa == 0) return sign + "0x0.0p+0";
    int e = exponent == 0 ? -1022 : exponent - 1023;
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%d.%013llxp%+d", exponent == 0 ? 0 : 1, static_cast<unsigned long long>(mantissa),
                  e);
    return sign + buf;
}

/// "count fnv1a64 leading-values", as gen_random.py's values_str.
inline std::string digest(const std::vector<xgrad::Tensor>& tensors) {
    std::uint64_t h = 0xCBF29CE484222325ULL;
    auto feed = [&](const void* p, std::size_t n) {
        auto* b = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < n; ++i) {
            h ^= b[i];
            h *= 0x100000001B3ULL;
        }
    };
    std::vector<std::string> words;
    for (const auto& t : tensors) {
        if (t.dtype() == xgrad::kInt64) {
            for (auto v : t.to_vector<std::int64_t>()) {
                feed(&v, sizeof v);
                words.push_back(std::to_string(v));
            }
        } else if (t.dtype() == xgrad::kFloat32) {
            for (auto v : t.to_vector<float>()) {
                feed(&v, sizeof v);
                words.push_back(float_hex(v));
            }
        } else {
            for (auto v : t.to_vector<double>()) {
                feed(&v, sizeof v);
                words.push_back(float_hex(v));
            }
        }
    }
    char hash[32];
    std::snprintf(hash, sizeof hash, "0x%016llx", static_cast<unsigned long long>(h));
    std::string out = std::to_string(words.size()) + " " + hash;
    std::size_t shown = words.size() <= 64 ? words.size() : 8;
    for (std::size_t i = 0; i < shown; ++i) out += " " + words[i];
    return out;
}

}  // namespace replay
