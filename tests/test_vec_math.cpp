// Tests for src/kernels/cpu/vec_math.hpp: PyTorch's bits on each instruction set this CPU runs, the
// instruction sets against each other, tails and in-place calls.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <xgrad/parallel.hpp>
#include <xgrad/xgrad.hpp>

#include "../src/detail/tensor_impl.hpp"
#include "../src/kernels/cpu/matmul.hpp"
#include "../src/kernels/cpu/sum_order.hpp"
#include "../src/kernels/cpu/vec_math.hpp"
#include "../src/kernels/cuda/sort_key.hpp"
#include "../src/kernels/scalar_ops.hpp"
#include "golden.hpp"

namespace vm = xgrad::kernels::cpu;
using vm::SimdArch;

namespace {

std::string arch_name(SimdArch a) {
    return a == SimdArch::kAvx512 ? "avx512" : a == SimdArch::kAvx2 ? "avx2" : "sse2";
}

/// The instruction sets this machine runs, best first.
std::vector<SimdArch> supported_archs() {
    std::vector<SimdArch> archs;
    for (SimdArch a : {SimdArch::kAvx512, SimdArch::kAvx2, SimdArch::kSse2})
        if (vm::simd_arch_supported(a)) archs.push_back(a);
    return archs;
}

/// Puts the instruction set back as it was when the test ends.
struct ArchGuard {
    SimdArch saved = vm::simd_arch();
    ~ArchGuard() { vm::set_simd_arch(saved); }
};

/// Position of v on the line of all values of its type, so that neighbours differ by 1.
template <typename T>
std::int64_t ordinal(T v) {
    using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
    I i;
    std::memcpy(&i, &v, sizeof v);
    return i < 0 ? -static_cast<std::int64_t>(i & std::numeric_limits<I>::max()) : static_cast<std::int64_t>(i);
}

/// How far got is from want: ulps between them (0 for two NaNs, "infinite" for one).
template <typename T>
double ulps(T want, T got) {
    if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0.0 : 1e300;
    return std::fabs(static_cast<double>(ordinal(want) - ordinal(got)));
}

/// The ops under test: name, then how to call vec_math on x (and g for the backward ones) with exponent e.
struct Op {
    std::string name;
    bool composite;  // built from the elementary functions: error grows where the result cancels
    double max_ulps_without_fma;
};

const std::vector<Op>& ops() {
    static const std::vector<Op> list = {
        {"exp", false, 1},
        {"log", false, 1},
        {"tanh", false, 1},
        {"sigmoid", false, 4},
        {"erf", false, 1},
        {"gelu", true, 0},
        {"gelu_tanh", true, 0},
        {"sqrt", false, 0},
        {"rsqrt", false, 0},
        {"gelu_backward", true, 0},
        {"gelu_tanh_backward", true, 0},
        {"pow", false, 1},
        {"silu", true, 1},
        {"silu_backward", true, 1},
        {"pow_tensor", false, 1},
        {"log1p", false, 1},
        {"softplus", true, 2},
        {"softplus_beta2", true, 2},
        {"softplus_backward", true, 2},
        {"sin", false, 1},
        {"cos", false, 1},
        {"log2", false, 1},
        {"log10", false, 1},
        {"expm1", false, 1},
        {"mish", true, 2},
        {"mish_backward", true, 2},
        {"log_sigmoid", true, 2},
        {"log_sigmoid_backward", true, 2},
        {"tan", false, 1},
        {"atan", false, 1},
        {"asin", false, 1},
        {"acos", false, 1},
        {"sinh", false, 1},
        {"cosh", false, 1},
        {"atan2", false, 1},
        {"gelu_erf", true, 0},
        {"gelu_erf_backward", true, 0},
    };
    return list;
}

template <typename T>
std::vector<T> run(const std::string& op, const std::vector<T>& x, const std::vector<T>& g = {}, double e = 0) {
    std::vector<T> y(x.size());
    const auto n = static_cast<std::int64_t>(x.size());
    if (op == "exp") vm::vexp(x.data(), y.data(), n);
    if (op == "log") vm::vlog(x.data(), y.data(), n);
    if (op == "tanh") vm::vtanh(x.data(), y.data(), n);
    if (op == "sigmoid") vm::vsigmoid(x.data(), y.data(), n);
    if (op == "erf") vm::verf(x.data(), y.data(), n);
    if (op == "gelu") vm::vgelu(x.data(), y.data(), n);
    if (op == "gelu_tanh") vm::vgelu_tanh(x.data(), y.data(), n);
    if (op == "sqrt") vm::vsqrt(x.data(), y.data(), n);
    if (op == "rsqrt") vm::vrsqrt(x.data(), y.data(), n);
    if (op == "gelu_backward") vm::vgelu_backward(g.data(), x.data(), y.data(), n);
    if (op == "gelu_tanh_backward") vm::vgelu_tanh_backward(g.data(), x.data(), y.data(), n);
    if (op == "gelu_erf") vm::vgelu_erf(x.data(), y.data(), n);
    if (op == "gelu_erf_backward") vm::vgelu_erf_backward(g.data(), x.data(), y.data(), n);
    if (op == "pow") vm::vpow(x.data(), e, y.data(), n);
    if (op == "silu") vm::vsilu(x.data(), y.data(), n);
    if (op == "silu_backward") vm::vsilu_backward(g.data(), x.data(), y.data(), n);
    if (op == "pow_tensor") vm::vpow(x.data(), g.data(), y.data(), n);  // g: the exponents
    if (op == "atan2") vm::vatan2(x.data(), g.data(), y.data(), n);     // atan2(x, g)
    if (op == "log1p") vm::vlog1p(x.data(), y.data(), n);
    if (op == "sin") vm::vsin(x.data(), y.data(), n);
    if (op == "cos") vm::vcos(x.data(), y.data(), n);
    if (op == "tan") vm::vtan(x.data(), y.data(), n);
    if (op == "atan") vm::vatan(x.data(), y.data(), n);
    if (op == "asin") vm::vasin(x.data(), y.data(), n);
    if (op == "acos") vm::vacos(x.data(), y.data(), n);
    if (op == "sinh") vm::vsinh(x.data(), y.data(), n);
    if (op == "cosh") vm::vcosh(x.data(), y.data(), n);
    if (op == "log2") vm::vlog2(x.data(), y.data(), n);
    if (op == "log10") vm::vlog10(x.data(), y.data(), n);
    if (op == "expm1") vm::vexpm1(x.data(), y.data(), n);
    if (op == "mish") vm::vmish(x.data(), y.data(), n);
    if (op == "mish_backward") vm::vmish_backward(g.data(), x.data(), y.data(), n);
    if (op == "log_sigmoid") vm::vlog_sigmoid(x.data(), y.data(), n);
    if (op == "log_sigmoid_backward") vm::vlog_sigmoid_backward(g.data(), x.data(), y.data(), n);
    if (op == "softplus") vm::vscalar_map(vm::ScalarMap::kSoftplus, x.data(), T(1), T(20), y.data(), n, false);
    if (op == "softplus_beta2") vm::vscalar_map(vm::ScalarMap::kSoftplus, x.data(), T(2), T(5), y.data(), n, false);
    if (op == "softplus_backward")
        vm::vgrad_map(vm::GradMap::kSoftplus, g.data(), x.data(), T(1), T(20), y.data(), n, false);
    return y;
}

/// Without FMA, how far from the FMA (PyTorch) result a value may be: `max_ulps` for the elementary
/// functions; for the gelu forms, whose results cancel to 0 for negative x, a few ulps plus
/// 8 eps |x| (times |g| for the backward ones).
template <typename T>
bool close_without_fma(const Op& op, T x, T g, T want, T got) {
    if (ulps(want, got) <= op.max_ulps_without_fma) return true;
    if (!op.composite || std::isnan(want) || std::isnan(got)) return false;
    const double eps = std::numeric_limits<T>::epsilon();
    const double scale = std::max(1.0, std::fabs(double(x))) * std::max(1.0, std::fabs(double(g)));
    const double slack = 4 * eps * std::fabs(static_cast<double>(want)) + 8 * eps * scale;
    return std::fabs(static_cast<double>(want) - static_cast<double>(got)) <= slack;
}

/// "x = <x> (<hex>): want <want>, got <got>" for failure messages.
template <typename T>
std::string mismatch(T x, T want, T got) {
    std::ostringstream s;
    s << "x = " << x << " (" << std::hexfloat << x << "): want " << want << ", got " << got;
    return s.str();
}

template <typename T>
std::vector<T> golden_values(const std::string& name) {
    return golden::get("vec_math.txt", name).to_vector<T>();
}

/// Checks op on the golden inputs of `key` (e.g. "exp.float32") against PyTorch's outputs, on every arch.
template <typename T>
void check_golden(const Op& op, const std::string& key, double e = 0) {
    std::vector<T> x = golden_values<T>(key + ".x"), want = golden_values<T>(key + ".y");
    // The backward ops' upstream gradients, pow_tensor's exponents, or atan2's second operand.
    const bool two_inputs =
        op.name.find("backward") != std::string::npos || op.name == "pow_tensor" || op.name == "atan2";
    std::vector<T> g = two_inputs ? golden_values<T>(key + ".g") : std::vector<T>{};
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        std::vector<T> got = run(op.name, x, g, e);
        for (std::size_t i = 0; i < x.size(); ++i) {
            const T gi = g.empty() ? T(1) : g[i];
            const bool ok =
                arch == SimdArch::kSse2 ? close_without_fma(op, x[i], gi, want[i], got[i]) : ulps(want[i], got[i]) == 0;
            if (!ok) {
                FAIL_CHECK(key << " on " << arch_name(arch) << ": " << mismatch(x[i], want[i], got[i]));
                break;
            }
        }
    }
}

/// Inputs across the whole range: a uniform band, log-uniform magnitudes of both signs, random bits.
template <typename T>
std::vector<T> wide_inputs(std::size_t n, double band, unsigned seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> uni(-band, band), expo(-300, 300), coin(0, 1);
    const double top = sizeof(T) == 4 ? 38 : 300;
    std::vector<T> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        switch (i % 3) {
            case 0:
                x[i] = static_cast<T>(uni(gen));
                break;
            case 1:
                x[i] = static_cast<T>((coin(gen) < 0.5 ? -1 : 1) * std::pow(10.0, expo(gen) * top / 300));
                break;
            default: {
                std::uint64_t bits = gen();
                std::memcpy(&x[i], &bits, sizeof(T));
            }
        }
    }
    return x;
}

}  // namespace

TEST_CASE("vec_math picks the best instruction set this machine has") {
    const auto archs = supported_archs();
    REQUIRE(!archs.empty());
    CHECK(vm::simd_arch() == archs.front());
    const std::string name = vm::simd_arch_name();
    CHECK(name == (archs.front() == SimdArch::kAvx512 ? "avx512bw"
                   : archs.front() == SimdArch::kAvx2 ? "fma3+avx2"
                                                      : "sse2"));
    MESSAGE("vec_math runs " << name);
    if (!vm::simd_arch_supported(SimdArch::kAvx512)) CHECK_THROWS(vm::set_simd_arch(SimdArch::kAvx512));
}

TEST_CASE("vec_math gives PyTorch's results: bit for bit with FMA, within stated bounds without") {
    for (const Op& op : ops()) {
        SUBCASE(op.name.c_str()) {
            if (op.name == "pow") {
                for (int i = 0; i < 13; ++i) {
                    const std::string key = "pow" + std::to_string(i);
                    const double e = golden::get("vec_math.txt", key + ".float32.e").item<double>();
                    CAPTURE(e);
                    check_golden<float>(op, key + ".float32", e);
                    check_golden<double>(op, key + ".float64", e);
                }
            } else {
                check_golden<float>(op, op.name + ".float32");
                check_golden<double>(op, op.name + ".float64");
            }
        }
    }
}

TEST_CASE("vec_math's instruction sets agree: AVX2 and AVX-512 exactly, SSE2 within bounds") {
    ArchGuard guard;
    const auto archs = supported_archs();
    if (archs.size() < 2) return;  // nothing to compare on an SSE2-only machine
    auto agree = [&](const Op& op, auto tag, double e) {
        using T = decltype(tag);
        const double band = op.name == "exp" || op.name == "sigmoid" ? 120 : 12;
        std::vector<T> x = wide_inputs<T>(6000, band, 7), g(x.size());
        std::mt19937 gen(8);
        std::normal_distribution<double> normal;
        for (T& v : g) v = static_cast<T>(normal(gen));
        vm::set_simd_arch(archs.front());
        std::vector<T> ref = run(op.name, x, g, e);
        for (std::size_t a = 1; a < archs.size(); ++a) {
            vm::set_simd_arch(archs[a]);
            std::vector<T> got = run(op.name, x, g, e);
            for (std::size_t i = 0; i < x.size(); ++i) {
                const bool ok = archs[a] == SimdArch::kSse2 ? close_without_fma(op, x[i], g[i], ref[i], got[i])
                                                            : ulps(ref[i], got[i]) == 0;
                if (!ok) {
                    FAIL_CHECK(op.name << (sizeof(T) == 4 ? " float32" : " float64") << " e=" << e << ", "
                                       << arch_name(archs[a]) << " against " << arch_name(archs.front()) << ": "
                                       << mismatch(x[i], ref[i], got[i]));
                    break;
                }
            }
        }
    };
    for (const Op& op : ops()) {
        for (double e : op.name == "pow" ? std::vector<double>{1.5, -0.7, 7.0} : std::vector<double>{0.0}) {
            agree(op, float{}, e);
            agree(op, double{}, e);
        }
    }
}

TEST_CASE("vec_math: every length, any alignment, and in place give the same bits") {
    ArchGuard guard;
    const std::vector<float> x = wide_inputs<float>(300, 10, 3);
    const std::vector<double> xd = wide_inputs<double>(300, 10, 4);
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        CAPTURE(arch_name(arch));
        std::vector<float> full(x.size());
        vm::vtanh(x.data(), full.data(), static_cast<std::int64_t>(x.size()));
        std::vector<double> full_d(xd.size());
        vm::vexp(xd.data(), full_d.data(), static_cast<std::int64_t>(xd.size()));
        for (std::int64_t offset : {0, 1, 3}) {
            for (std::int64_t n = 0; n <= 70; ++n) {
                std::vector<float> y(static_cast<std::size_t>(n) + 1, -7.0f);
                vm::vtanh(x.data() + offset, y.data(), n);
                for (std::int64_t i = 0; i < n; ++i) REQUIRE(ulps(full[offset + i], y[i]) == 0);
                CHECK(y[n] == -7.0f);  // nothing written past the end
                std::vector<double> buf(xd.begin() + offset, xd.begin() + offset + n);
                vm::vexp(buf.data(), buf.data(), n);  // in place
                for (std::int64_t i = 0; i < n; ++i) REQUIRE(ulps(full_d[offset + i], buf[i]) == 0);
            }
        }
        // The gelu backward may write over either input.
        std::vector<float> g = wide_inputs<float>(37, 3, 5), gx = x, want(37);
        gx.resize(37);
        vm::vgelu_backward(g.data(), gx.data(), want.data(), 37);
        std::vector<float> over_g = g;
        vm::vgelu_backward(over_g.data(), gx.data(), over_g.data(), 37);
        std::vector<float> over_x = gx;
        vm::vgelu_backward(g.data(), over_x.data(), over_x.data(), 37);
        for (std::size_t i = 0; i < 37; ++i) {
            CHECK(ulps(want[i], over_g[i]) == 0);
            CHECK(ulps(want[i], over_x[i]) == 0);
        }
    }
}

namespace {

/// Adam's update written out in scalar code, in PyTorch 1.13's order (the reference for adam_update):
/// exp_avg's add_ and exp_avg_sq's addcmul_ are fused multiply-adds where the arch has FMA (`fused`).
template <typename T>
void adam_reference(std::vector<T>& p, const std::vector<T>& g, std::vector<T>& m, std::vector<T>& v,
                    std::vector<T>* vmax, const vm::AdamCoefficients<T>& c, bool fused) {
    for (std::size_t i = 0; i < p.size(); ++i) {
        const T mb = m[i] * c.beta1, vb = v[i] * c.beta2, gb = g[i] * c.one_minus_beta2;
        const T mi = fused ? std::fma(c.one_minus_beta1, g[i], mb) : mb + c.one_minus_beta1 * g[i];
        const T vi = fused ? std::fma(gb, g[i], vb) : vb + gb * g[i];
        m[i] = mi;
        v[i] = vi;
        T vd = vi;
        if (vmax) {
            const T old = (*vmax)[i];
            vd = std::isnan(old) ? old : std::isnan(vi) ? vi : std::max(old, vi);
            (*vmax)[i] = vd;
        }
        p[i] = p[i] + mi * c.neg_step_size / (std::sqrt(vd) / c.bias_correction2_sqrt + c.eps);
    }
}

template <typename T>
void check_adam(SimdArch arch, bool amsgrad, std::size_t n) {
    std::mt19937 rng(static_cast<unsigned>(n * 2 + amsgrad));
    std::normal_distribution<double> normal;
    auto random = [&](double scale) {
        std::vector<T> x(n);
        for (auto& e : x) e = static_cast<T>(normal(rng) * scale);
        return x;
    };
    std::vector<T> p = random(1.0), g = random(0.1), m = random(0.01), v = random(0.001), vmax = random(0.001);
    for (auto& e : v) e = std::abs(e);
    for (auto& e : vmax) e = std::abs(e);
    if (n > 3) {
        g[1] = std::numeric_limits<T>::quiet_NaN();     // NaN through m, v and the max
        vmax[2] = std::numeric_limits<T>::quiet_NaN();  // a NaN already in vmax stays
        vmax[3] = v[3] * T(0.99999);                    // ties and near ties of the max
    }
    const vm::AdamCoefficients<T> c{T(0.9), T(1 - 0.9), T(0.999), T(1 - 0.999), T(0.0316), T(1e-8), T(-0.00123)};
    std::vector<T> p2 = p, m2 = m, v2 = v, vmax2 = vmax;
    vm::adam_update(p.data(), g.data(), m.data(), v.data(), amsgrad ? vmax.data() : nullptr, c,
                    static_cast<std::int64_t>(n));
    adam_reference(p2, g, m2, v2, amsgrad ? &vmax2 : nullptr, c, arch != SimdArch::kSse2);
    const std::string what = arch_name(arch) + (sizeof(T) == 4 ? " float32" : " float64") +
                             (amsgrad ? " amsgrad" : "") + " n=" + std::to_string(n);
    INFO(what);
    CHECK(std::memcmp(p.data(), p2.data(), n * sizeof(T)) == 0);
    CHECK(std::memcmp(m.data(), m2.data(), n * sizeof(T)) == 0);
    CHECK(std::memcmp(v.data(), v2.data(), n * sizeof(T)) == 0);
    if (amsgrad) CHECK(std::memcmp(vmax.data(), vmax2.data(), n * sizeof(T)) == 0);
}

}  // namespace

TEST_CASE("sgd_update and axpy fuse their multiply-adds exactly where the instruction set has FMA") {
    ArchGuard guard;
    std::mt19937 rng(7);
    std::normal_distribution<double> normal;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        const bool fused = arch != SimdArch::kSse2;
        for (std::size_t n : {1, 5, 16, 33, 1000}) {
            std::vector<double> p(n), g(n), buf(n), y(n), x(n);
            for (std::size_t i = 0; i < n; ++i) {
                p[i] = normal(rng);
                g[i] = normal(rng);
                buf[i] = normal(rng);
                y[i] = normal(rng);
                x[i] = normal(rng);
            }
            for (bool nesterov : {false, true}) {
                CAPTURE(arch_name(arch));
                CAPTURE(n);
                CAPTURE(nesterov);
                const vm::SgdCoefficients<double> c{0.01, 0.9, 0.9, -0.05, !nesterov, true, false, nesterov};
                std::vector<double> p1 = p, b1 = buf, p2 = p, b2 = buf;
                vm::sgd_update(p1.data(), g.data(), b1.data(), c, static_cast<std::int64_t>(n));
                for (std::size_t i = 0; i < n; ++i) {
                    if (fused)
                        xgrad::kernels::scalar::sgd_element<true>(p2[i], g[i], &b2[i], c.weight_decay, c.momentum,
                                                                  c.one_minus_dampening, c.neg_lr, c.maximize, c.decay,
                                                                  c.first, c.nesterov);
                    else
                        xgrad::kernels::scalar::sgd_element<false>(p2[i], g[i], &b2[i], c.weight_decay, c.momentum,
                                                                   c.one_minus_dampening, c.neg_lr, c.maximize, c.decay,
                                                                   c.first, c.nesterov);
                }
                CHECK(std::memcmp(p1.data(), p2.data(), n * sizeof(double)) == 0);
                CHECK(std::memcmp(b1.data(), b2.data(), n * sizeof(double)) == 0);
            }
            std::vector<double> y1 = y;
            vm::axpy(y1.data(), x.data(), -0.37, static_cast<std::int64_t>(n));
            for (std::size_t i = 0; i < n; ++i)
                CHECK(y1[i] == (fused ? std::fma(-0.37, x[i], y[i]) : y[i] + -0.37 * x[i]));
        }
    }
}

TEST_CASE("adam_update gives the scalar formula's bits on every instruction set, tails and NaNs included") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (bool amsgrad : {false, true})
            for (std::size_t n : {1, 5, 16, 33, 1000}) {
                check_adam<float>(arch, amsgrad, n);
                check_adam<double>(arch, amsgrad, n);
            }
    }
}

namespace {

/// sum_cascade and quad_cascade against sum_order.hpp's scalar cascade_sum, bit for bit.
template <typename T>
void check_cascade(SimdArch arch, std::int64_t rows, std::int64_t stride, int power) {
    constexpr int W = vm::kLanes<T>;
    using L = vm::Lanes<T, W>;
    std::mt19937 gen(static_cast<unsigned>(rows * 31 + stride + power));
    std::uniform_real_distribution<double> mag(-20, 20);
    std::bernoulli_distribution neg(0.5);
    // Magnitudes over 2^-20 .. 2^20, so that every change of order changes the bits.
    std::vector<T> x(static_cast<std::size_t>(std::max<std::int64_t>(1, rows * stride)));
    for (T& v : x) v = static_cast<T>(std::exp2(mag(gen)) * (neg(gen) ? -1 : 1));
    for (bool square : {false, true}) {  // the elements, or their squares (each rounded: x.pow(2))
        auto want = vm::cascade_sum<L, 4>(rows, [&](std::int64_t i, int k) {
            L l = L::load(x.data() + i * stride + k * W);
            if (square)
                for (T& v : l.v) v = v * v;
            return l;
        });
        std::vector<T> got(4 * W, T(-1));
        vm::sum_cascade(x.data(), rows, stride, power, got.data(), square);
        for (int k = 0; k < 4; ++k)
            for (int l = 0; l < W; ++l) {
                INFO(arch_name(arch) << " " << (sizeof(T) == 4 ? "float32" : "float64") << " rows " << rows
                                     << " stride " << stride << " power " << power << " square " << square << " lane "
                                     << k * W + l);
                // cascade_sum computes its own power; the explicit one must match it for this comparison.
                REQUIRE(power == std::max<std::int64_t>(4, vm::ceil_log2(rows) / 4));
                CHECK(ordinal(got[k * W + l]) == ordinal(want[k].v[l]));
            }
    }
}

}  // namespace

TEST_CASE("sum_cascade gives the scalar cascade's bits on every instruction set, of x and of x squared") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (std::int64_t rows : {0, 1, 15, 16, 17, 255, 256, 257, 4095, 4096, 4097, 9000}) {
            const int power = static_cast<int>(std::max<std::int64_t>(4, vm::ceil_log2(rows) / 4));
            check_cascade<float>(arch, rows, 32, power);
            check_cascade<float>(arch, rows, 45, power);  // rows apart, unaligned
            check_cascade<double>(arch, rows, 16, power);
            check_cascade<double>(arch, rows, 19, power);
        }
        check_cascade<float>(arch, 70000, 32, 4);  // up to 2^19 rows: power 4 still
    }
    vm::set_simd_arch(supported_archs().front());
    check_cascade<float>(supported_archs().front(), (1 << 19) + 5, 32, 5);  // power 5 (64 MiB)
}

TEST_CASE("vmla fuses its multiply-add where the instruction set has FMA, and only there") {
    // (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly; the product rounded first loses it (a tie to even).
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        CAPTURE(arch_name(arch));
        for (std::size_t n : {1, 7, 37}) {  // tails alone, and batches with a tail
            const std::vector<float> a(n, 1.0f + 0x1p-12f), c(n, -(1.0f + 0x1p-11f));
            const std::vector<double> ad(n, 1.0 + 0x1p-27), cd(n, -(1.0 + 0x1p-26));
            std::vector<float> y(n);
            std::vector<double> yd(n);
            vm::vmla(a.data(), a.data(), c.data(), y.data(), static_cast<std::int64_t>(n));
            vm::vmla(ad.data(), ad.data(), cd.data(), yd.data(), static_cast<std::int64_t>(n));
            const bool fused = arch != SimdArch::kSse2;
            for (std::size_t i = 0; i < n; ++i) {
                CHECK(y[i] == (fused ? 0x1p-24f : 0.0f));
                CHECK(yd[i] == (fused ? 0x1p-54 : 0.0));
            }
        }
    }
}

/// softmax (or log_softmax) of one row of x as softmax.cpp computed it before vsoftmax_rows, a call per
/// step: the max (the first NaN wins), x - max, exp, lanes_sum, then a multiply by 1 / sum or a
/// subtraction of log(sum).
template <typename T>
std::vector<T> softmax_by_steps(const std::vector<T>& x, bool log) {
    const auto n = static_cast<std::int64_t>(x.size());
    std::vector<T> y(x.size()), e(x.size());
    const T m = x[static_cast<std::size_t>(vm::row_extreme_index(x.data(), n, true))];
    vm::vscalar_map(vm::ScalarMap::kSub, x.data(), m, T(0), y.data(), n, false);
    vm::vexp(y.data(), e.data(), n);
    const T s = vm::lanes_sum(e.data(), n);
    T log_s;
    vm::vlog(&s, &log_s, 1);
    if (log)
        vm::vscalar_map(vm::ScalarMap::kSub, y.data(), log_s, T(0), y.data(), n, false);
    else
        vm::vscalar_map(vm::ScalarMap::kMul, e.data(), T(1) / s, T(0), y.data(), n, false);
    return y;
}

/// Their backward as it was computed step by step: lanes_dot, a subtraction and a product, or
/// lanes_sum and vgrad_map's fused kLogSoftmax.
template <typename T>
std::vector<T> softmax_backward_by_steps(const std::vector<T>& g, const std::vector<T>& o, bool log) {
    const auto n = static_cast<std::int64_t>(g.size());
    std::vector<T> d(g.size());
    if (log) {
        vm::vgrad_map(vm::GradMap::kLogSoftmax, g.data(), o.data(), vm::lanes_sum(g.data(), n), T(0), d.data(), n,
                      false);
    } else {
        vm::vscalar_map(vm::ScalarMap::kSub, g.data(), vm::lanes_dot(g.data(), o.data(), n), T(0), d.data(), n, false);
        vm::varith(vm::Arith::kMul, d.data(), o.data(), d.data(), n, false);
    }
    return d;
}

template <typename T>
void check_softmax_rows() {
    std::mt19937 rng(11);
    std::normal_distribution<double> normal(0.0, 4.0);
    for (std::int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 64, 70, 129}) {
        CAPTURE(n);
        for (int kind = 0; kind < 4; ++kind) {  // plain, a NaN, zeros of both signs, infinities
            CAPTURE(kind);
            const auto un = static_cast<std::size_t>(n);
            std::vector<T> x(un), g(un);
            for (std::size_t i = 0; i < un; ++i) {
                x[i] = static_cast<T>(normal(rng));
                g[i] = static_cast<T>(normal(rng));
            }
            if (kind == 1) x[un / 2] = std::numeric_limits<T>::quiet_NaN();
            if (kind == 2)
                for (std::size_t i = 0; i < un; i += 2) x[i] = i % 4 == 0 ? T(0) : T(-0.0);
            if (kind == 3) {
                x[0] = -std::numeric_limits<T>::infinity();
                x[un - 1] = std::numeric_limits<T>::infinity();
            }
            for (bool log : {false, true}) {
                CAPTURE(log);
                std::vector<T> y(un), d(un);
                vm::vsoftmax_rows(x.data(), y.data(), 1, n, log);
                const std::vector<T> want = softmax_by_steps(x, log);
                vm::vsoftmax_backward_rows(g.data(), y.data(), d.data(), 1, n, log);
                const std::vector<T> want_d = softmax_backward_by_steps(g, y, log);
                for (std::size_t i = 0; i < un; ++i) {
                    CHECK(ulps(want[i], y[i]) == 0);
                    CHECK(ulps(want_d[i], d[i]) == 0);
                }
            }
        }
    }
    // Several rows in one call: each as alone.
    std::vector<T> x(3 * 37), y(3 * 37);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(normal(rng));
    vm::vsoftmax_rows(x.data(), y.data(), 3, 37, false);
    for (std::size_t r = 0; r < 3; ++r) {
        const std::vector<T> row(x.begin() + static_cast<std::ptrdiff_t>(r * 37),
                                 x.begin() + static_cast<std::ptrdiff_t>((r + 1) * 37));
        const std::vector<T> want = softmax_by_steps(row, false);
        for (std::size_t i = 0; i < 37; ++i) CHECK(ulps(want[i], y[r * 37 + i]) == 0);
    }
}

TEST_CASE("vsoftmax_rows and its backward give the bits of the step-by-step kernels on every instruction set") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        CAPTURE(arch_name(arch));
        check_softmax_rows<float>();
        check_softmax_rows<double>();
    }
}

TEST_CASE("quad_cascade splits between threads without changing a bit") {
    constexpr int W = vm::kLanes<float>;
    using L = vm::Lanes<float, W>;
    const int saved = xgrad::get_num_threads();
    // Blocks of 4096 rows (power 4), with and without a remainder.
    for (std::int64_t rows : {3 * 4096 + 100, 2 * 4096, 5 * 4096 + 1}) {
        std::mt19937 gen(static_cast<unsigned>(rows));
        std::uniform_real_distribution<double> mag(-20, 20);
        std::vector<float> x(static_cast<std::size_t>(rows * 4 * W));
        for (float& v : x) v = static_cast<float>(std::exp2(mag(gen)) * (gen() % 2 ? -1 : 1));
        auto want =
            vm::cascade_sum<L, 4>(rows, [&](std::int64_t i, int k) { return L::load(x.data() + (i * 4 + k) * W); });
        for (int threads : {1, 2, 3}) {
            xgrad::set_num_threads(threads);
            float got[4 * W];
            vm::quad_cascade(x.data(), rows, 4 * W, got);
            for (int k = 0; k < 4 * W; ++k) {
                INFO("rows " << rows << " threads " << threads << " lane " << k);
                CHECK(ordinal(got[k]) == ordinal(want[k / W].v[k % W]));
            }
        }
    }
    xgrad::set_num_threads(saved);
}

namespace {

/// ColumnSums fed in chunks (starting at multiples of align(), taken last to first) against outer_sum.
template <typename T>
void check_column_sums(std::int64_t rows, std::int64_t cols) {
    std::mt19937 gen(static_cast<unsigned>(rows * 131 + cols));
    std::uniform_real_distribution<double> mag(-20, 20);
    // (at least one element, so that the pointer is not null when there are no rows)
    std::vector<T> x(static_cast<std::size_t>(std::max<std::int64_t>(1, rows * cols))),
        want(static_cast<std::size_t>(cols));
    for (T& v : x) v = static_cast<T>(std::exp2(mag(gen)) * (gen() % 2 ? -1 : 1));
    vm::outer_sum(x.data(), rows, cols, want.data());
    const vm::ColumnSums<T> sums(rows, cols);
    std::vector<T> slots(static_cast<std::size_t>(sums.size()), T(0)), got(static_cast<std::size_t>(cols));
    const std::int64_t chunk = sums.align() * 3;
    for (std::int64_t lo = (rows - 1) / chunk * chunk; lo >= 0; lo -= chunk)
        for (std::int64_t i = lo; i < std::min(rows, lo + chunk); ++i) {
            const auto [c, rest] = sums.row_slots(slots.data(), i);
            for (std::int64_t j = 0; j < cols; ++j) (j < sums.cascaded() ? c : rest)[j] += x[i * cols + j];
        }
    sums.finish(slots.data(), got.data());
    for (std::int64_t j = 0; j < cols; ++j) {
        INFO("rows " << rows << " cols " << cols << " column " << j);
        CHECK(std::memcmp(&got[j], &want[j], sizeof(T)) == 0);
    }
}

}  // namespace

TEST_CASE("ColumnSums gives outer_sum's bits from rows added a chunk at a time") {
    // Columns of every kind (groups of four registers, registers, single columns, groups of four
    // scalar columns, a single column), rows that climb every level of the cascades, and rows left over.
    for (std::int64_t cols : {1, 3, 6, 11, 20, 37, 75}) {
        for (std::int64_t rows : {0, 1, 3, 17, 255, 1030, 4419, 17495}) {
            check_column_sums<float>(rows, cols);
            check_column_sums<double>(rows, cols);
        }
    }
    // 2^20 + 3 rows: the cascade down a whole column steps 2^5 rows at a time.
    check_column_sums<float>((1 << 20) + 3, 6);
}

namespace {

/// varith against the scalar formula, with and without non-temporal stores, at every alignment.
template <typename T>
void check_arith(SimdArch arch, vm::Arith op, std::size_t n, std::size_t offset, bool stream) {
    std::mt19937 gen(static_cast<unsigned>(n * 7 + offset));
    std::normal_distribution<double> dist(0, 3);
    std::vector<T> a(n + offset), b(n + offset), y(n + offset + 1, T(-7));
    for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = static_cast<T>(dist(gen));
        b[i] = static_cast<T>(dist(gen));
    }
    if (n > 3) {  // relu's backward: NaN and -0 results pass their gradient, 0 blocks it
        b[offset] = std::numeric_limits<T>::quiet_NaN();
        b[offset + 1] = T(-0.0);
        b[offset + 2] = T(0);
        a[offset + 2] = T(-0.0);  // two equal zeros
        a[offset + 3] = -std::numeric_limits<T>::quiet_NaN();
        b[offset + 3] = std::numeric_limits<T>::quiet_NaN();  // two NaNs: maximum and minimum take a's
    }
    vm::varith(op, a.data() + offset, b.data() + offset, y.data() + offset, static_cast<std::int64_t>(n), stream);
    for (std::size_t i = 0; i < offset; ++i) REQUIRE(y[i] == T(-7));  // nothing written outside
    REQUIRE(y[offset + n] == T(-7));
    for (std::size_t i = offset; i < offset + n; ++i) {
        const T u = a[i], v = b[i];
        const T want = op == vm::Arith::kAdd   ? u + v
                       : op == vm::Arith::kSub ? u - v
                       : op == vm::Arith::kMul ? u * v
                       : op == vm::Arith::kDiv ? u / v
                       : op == vm::Arith::kTanhBackward
                           ? u * (arch == SimdArch::kSse2 ? T(1) - v * v : std::fma(-v, v, T(1)))
                       : op == vm::Arith::kSigmoidBackward ? u * (T(1) - v) * v
                       : op == vm::Arith::kMaximum         ? (u != u   ? u
                                                              : v != v ? v
                                                              : u > v  ? u
                                                                       : v)
                       : op == vm::Arith::kMinimum         ? (u != u   ? u
                                                              : v != v ? v
                                                              : u < v  ? u
                                                                       : v)
                                                           : (v <= T(0) ? T(0) : u);
        INFO(arch_name(arch) << " op " << static_cast<int>(op) << " n " << n << " offset " << offset << " stream "
                             << stream << " at " << i - offset);
        // Bits (ordinal() does not tell -0 from +0); of two NaN operands, + - * / may return either
        // (x86 returns the first, and the compiler may swap a commutative scalar operation's operands).
        const bool max_min = op == vm::Arith::kMaximum || op == vm::Arith::kMinimum;
        // (a NaN's sign out of a fused multiply-add is the hardware's: NaN is all that is checked then)
        const bool fused_nan = op == vm::Arith::kTanhBackward && want != want;
        if (!fused_nan && (max_min || !(u != u && v != v)))
            CHECK(std::memcmp(&y[i], &want, sizeof(T)) == 0);
        else
            CHECK(y[i] != y[i]);
    }
}

}  // namespace

TEST_CASE("varith gives the scalar formula's bits with and without non-temporal stores") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (auto op :
             {vm::Arith::kAdd, vm::Arith::kSub, vm::Arith::kMul, vm::Arith::kDiv, vm::Arith::kReluBackward,
              vm::Arith::kTanhBackward, vm::Arith::kSigmoidBackward, vm::Arith::kMaximum, vm::Arith::kMinimum})
            for (std::size_t n : {1, 3, 7, 16, 17, 100, 1000})
                for (std::size_t offset : {0, 1, 3, 5})
                    for (bool stream : {false, true}) {
                        check_arith<float>(arch, op, n, offset, stream);
                        check_arith<double>(arch, op, n, offset, stream);
                    }
    }
}

namespace {

/// vscalar_map against the scalar formula, with and without non-temporal stores, at every alignment,
/// NaN, infinities and signed zeros among the inputs.
template <typename T>
void check_scalar_map(SimdArch arch, vm::ScalarMap op, T a, T b, std::size_t n, std::size_t offset, bool stream) {
    std::mt19937 gen(static_cast<unsigned>(n * 11 + offset));
    std::normal_distribution<double> dist(0, 3);
    std::vector<T> x(n + offset), y(n + offset + 1, T(-7));
    for (T& v : x) v = static_cast<T>(dist(gen));
    // Besides NaN, infinities and zeros: halves and values just off an integer for the rounding maps,
    // and values too large to have a fraction.
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                          -std::numeric_limits<T>::quiet_NaN(),
                          T(-0.0),
                          T(0),
                          std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),
                          T(2.5),
                          T(-2.5),
                          T(-0.5),
                          T(0.5),
                          T(-0.3),
                          T(4194304.5),
                          T(-3.0),
                          T(1e30),
                          T(-1e30),
                          std::numeric_limits<T>::denorm_min()};
    for (std::size_t k = 0; k < std::size(specials) && k < n; ++k) x[offset + k * 2 % n] = specials[k];
    vm::vscalar_map(op, x.data() + offset, a, b, y.data() + offset, static_cast<std::int64_t>(n), stream);
    for (std::size_t i = 0; i < offset; ++i) REQUIRE(y[i] == T(-7));  // nothing written outside
    REQUIRE(y[offset + n] == T(-7));
    for (std::size_t i = offset; i < offset + n; ++i) {
        const T v = x[i];
        T want = T(0);
        switch (op) {
            case vm::ScalarMap::kNeg:
                want = -v;
                break;
            case vm::ScalarMap::kAbs:
                want = std::abs(v);
                break;
            case vm::ScalarMap::kSquare:
                want = v * v;
                break;
            case vm::ScalarMap::kCube:
                want = v * v * v;
                break;
            case vm::ScalarMap::kReciprocal:
                want = T(1) / v;
                break;
            case vm::ScalarMap::kAdd:
                want = v + a;
                break;
            case vm::ScalarMap::kSub:
                want = v - a;
                break;
            case vm::ScalarMap::kRsub:
                want = a - v;
                break;
            case vm::ScalarMap::kMul:
                want = v * a;
                break;
            case vm::ScalarMap::kDiv:
                want = v / a;
                break;
            case vm::ScalarMap::kRdiv:
                want = a / v;
                break;
            case vm::ScalarMap::kClamp: {
                const T low = v < a ? a : v;
                want = b < low ? b : low;
                break;
            }
            case vm::ScalarMap::kFloor:
                want = std::floor(v);
                break;
            case vm::ScalarMap::kCeil:
                want = std::ceil(v);
                break;
            case vm::ScalarMap::kRound:
                want = std::nearbyint(v);
                break;
            case vm::ScalarMap::kTrunc:
                want = std::trunc(v);
                break;
            case vm::ScalarMap::kSign:
                want = T(T(0) < v) - T(v < T(0));
                break;
            case vm::ScalarMap::kLeakyRelu:
                want = v > T(0) ? v : v * a;
                break;
            case vm::ScalarMap::kSoftplus:  // SLEEF's exp and log1p: checked against PyTorch's goldens instead
                return;
            case vm::ScalarMap::kHardsigmoid:
            case vm::ScalarMap::kHardswish: {
                const T lo = v + T(3) < T(0) ? T(0) : v + T(3);
                const T c = T(6) < lo ? T(6) : lo;
                want = op == vm::ScalarMap::kHardsigmoid ? c / T(6) : v * c / T(6);
                break;
            }
            case vm::ScalarMap::kSmoothL1:
            case vm::ScalarMap::kHuber:  // scalar_ops.hpp's formulas, which the CUDA kernels take
                want = xgrad::kernels::scalar::float_unary<T>(op == vm::ScalarMap::kSmoothL1
                                                                  ? xgrad::kernels::UnaryOp::kSmoothL1
                                                                  : xgrad::kernels::UnaryOp::kHuber,
                                                              v, a, b);
                break;
        }
        INFO(arch_name(arch) << " op " << static_cast<int>(op) << " a " << a << " b " << b << " n " << n << " offset "
                             << offset << " stream " << stream << " at " << i - offset << " x " << v);
        CHECK(std::memcmp(&y[i], &want, sizeof(T)) == 0);  // bits: ordinal() does not tell -0 from +0
    }
}

}  // namespace

TEST_CASE("vscalar_map gives the scalar formula's bits with and without non-temporal stores") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (int k = 0; k < vm::kScalarMapCount; ++k) {
            const auto op = static_cast<vm::ScalarMap>(k);
            // clamp's bounds in order, crossed (max wins) and NaN-free; a negative zero bound too
            const std::vector<std::pair<double, double>> scalars =
                op == vm::ScalarMap::kClamp ? std::vector<std::pair<double, double>>{{-1, 1.5}, {2, -2}, {-0.0, 0.0}}
                                            : std::vector<std::pair<double, double>>{{1.7, 0}, {-0.3, 0}, {0, 0}};
            for (const auto& ab : scalars)
                for (std::size_t n : {1, 3, 7, 16, 17, 100, 1000})
                    for (std::size_t offset : {0, 1, 3})
                        for (bool stream : {false, true}) {
                            check_scalar_map<float>(arch, op, static_cast<float>(ab.first),
                                                    static_cast<float>(ab.second), n, offset, stream);
                            check_scalar_map<double>(arch, op, ab.first, ab.second, n, offset, stream);
                        }
        }
    }
}

namespace {

/// vgrad_map against the scalar formula (kernels/scalar_ops.hpp's), as check_scalar_map.
template <typename T>
void check_grad_map(SimdArch arch, vm::GradMap op, T a, T b, std::size_t n, std::size_t offset, bool stream) {
    std::mt19937 gen(static_cast<unsigned>(n * 13 + offset));
    std::normal_distribution<double> dist(0, 4);
    std::vector<T> g(n + offset), x(n + offset), y(n + offset + 1, T(-7));
    for (T& v : g) v = static_cast<T>(dist(gen));
    for (T& v : x) v = static_cast<T>(dist(gen));
    // The pieces' ends (and NaN, infinities, zeros) among the inputs.
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                          std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),
                          T(-0.0),
                          T(0),
                          T(3),
                          T(-3),
                          T(6),
                          a,
                          b};
    for (std::size_t k = 0; k < std::size(specials) && k < n; ++k) x[offset + k * 3 % n] = specials[k];
    vm::vgrad_map(op, g.data() + offset, x.data() + offset, a, b, y.data() + offset, static_cast<std::int64_t>(n),
                  stream);
    if (stream) vm::stream_fence();
    for (std::size_t i = 0; i < offset; ++i) REQUIRE(y[i] == T(-7));
    REQUIRE(y[offset + n] == T(-7));
    for (std::size_t i = offset; i < offset + n; ++i) {
        const T u = g[i], v = x[i];
        T want = T(0);
        switch (op) {
            case vm::GradMap::kLeakyRelu:
                want = v > T(0) ? u : u * a;
                break;
            case vm::GradMap::kHardtanh:
                want = v > a && v < b ? u : T(0);
                break;
            case vm::GradMap::kHardsigmoid:
                want = v > T(-3) && v < T(3) ? u * T(1.0f / 6.0f) : T(0);
                break;
            case vm::GradMap::kHardswish:
                want = v < T(-3) ? T(0) : v >= T(3) ? u : u * (v / T(3) + T(0.5));
                break;
            case vm::GradMap::kSmoothL1:
                want = (std::abs(v) >= a ? (v > T(0) ? T(1) : T(-1)) : v / a) * b * u;
                break;
            case vm::GradMap::kHuber:
                want = (std::abs(v) >= a ? (v > T(0) ? T(1) : T(-1)) * a : v) * b * u;
                break;
            case vm::GradMap::kPow:
                want = u * (v * a);
                break;
            case vm::GradMap::kSoftplus:    // SLEEF's exp: checked against PyTorch's goldens instead
            case vm::GradMap::kLogSoftmax:  // likewise (log_softmax's backward, test_elementwise_more)
                return;
        }
        INFO(arch_name(arch) << " grad map " << static_cast<int>(op) << " n " << n << " offset " << offset << " stream "
                             << stream << " at " << i - offset << " x " << v);
        CHECK(std::memcmp(&y[i], &want, sizeof(T)) == 0);
    }
}

}  // namespace

TEST_CASE("vgrad_map gives the scalar formula's bits") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (int k = 0; k < vm::kGradMapCount; ++k) {
            const auto op = static_cast<vm::GradMap>(k);
            for (const auto& [a, b] : std::vector<std::pair<double, double>>{{0.01, 0}, {-1, 1}, {0, 6}})
                for (std::size_t n : {1, 3, 16, 17, 100, 1000})
                    for (std::size_t offset : {0, 1})
                        for (bool stream : {false, true}) {
                            check_grad_map<float>(arch, op, static_cast<float>(a), static_cast<float>(b), n, offset,
                                                  stream);
                            check_grad_map<double>(arch, op, a, b, n, offset, stream);
                        }
        }
    }
}

TEST_CASE("maps long enough for non-temporal stores and prefetching give the same bits as short calls") {
    ArchGuard guard;
    // One call of kStreamBytes and more streams (tanh, gelu and the two-input maps on Intel CPUs only;
    // exp, sigmoid, silu, relu and sqrt everywhere) and prefetches its inputs; the same elements in calls
    // of 1000 do neither.
    const std::size_t n = static_cast<std::size_t>(vm::kStreamBytes) / sizeof(float) + 37;
    std::vector<float> x(n + 1), g(n + 1), big(n + 1), small(n + 1);
    std::mt19937 gen(5);
    std::normal_distribution<float> dist(0, 4);
    for (float& v : x) v = dist(gen);
    for (float& v : g) v = dist(gen);
    using Map = void (*)(const float*, float*, std::int64_t);
    using Map2 = void (*)(const float*, const float*, float*, std::int64_t);
    const std::pair<const char*, Map> maps[] = {{"exp", &vm::vexp},   {"tanh", &vm::vtanh}, {"gelu", &vm::vgelu},
                                                {"relu", &vm::vrelu}, {"sqrt", &vm::vsqrt}, {"sigmoid", &vm::vsigmoid},
                                                {"silu", &vm::vsilu}};
    const std::pair<const char*, Map2> maps2[] = {{"gelu_backward", &vm::vgelu_backward},
                                                  {"silu_backward", &vm::vsilu_backward}};
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (std::size_t offset : {0, 1}) {  // an output aligned, and one a float past it
            const auto len = static_cast<std::int64_t>(n - offset);
            const auto same = [&](const char* name) {
                INFO(arch_name(arch) << " offset " << offset << " " << name);
                CHECK(std::memcmp(big.data() + offset, small.data() + offset,
                                  static_cast<std::size_t>(len) * sizeof(float)) == 0);
            };
            for (const auto& [name, map] : maps) {
                map(x.data() + offset, big.data() + offset, len);
                for (std::int64_t i = 0; i < len; i += 1000)
                    map(x.data() + offset + i, small.data() + offset + i, std::min<std::int64_t>(1000, len - i));
                same(name);
            }
            for (const auto& [name, map] : maps2) {
                map(g.data() + offset, x.data() + offset, big.data() + offset, len);
                for (std::int64_t i = 0; i < len; i += 1000)
                    map(g.data() + offset + i, x.data() + offset + i, small.data() + offset + i,
                        std::min<std::int64_t>(1000, len - i));
                same(name);
            }
        }
    }
}

namespace {

/// var_rows' order, one element at a time: 32 lanes, added in order, then the tail.
template <typename T, typename F>
double lane_sum(const std::vector<T>& x, F f) {
    double lanes[32] = {};
    std::size_t i = 0;
    for (; i + 32 <= x.size(); i += 32)
        for (std::size_t k = 0; k < 32; ++k) lanes[k] += f(static_cast<double>(x[i + k]));
    double s = 0;
    for (double v : lanes) s += v;
    for (; i < x.size(); ++i) s += f(static_cast<double>(x[i]));
    return s;
}

template <typename T>
std::pair<double, double> var_row_want(const std::vector<T>& x) {
    const std::size_t n = x.size();
    if constexpr (std::is_same_v<T, float>) {
        // One pass, shifted by c: the mean of the first 32 elements, rounded to float.
        const std::size_t head = std::min<std::size_t>(n, 32);
        double c = 0;
        for (std::size_t i = 0; i < head; ++i) c += static_cast<double>(x[i]);
        c = static_cast<double>(static_cast<float>(c / static_cast<double>(head)));
        const double s1 = lane_sum(x, [&](double v) { return v - c; });
        const double s2 = lane_sum(x, [&](double v) { return (v - c) * (v - c); });
        double m2 = s2 - s1 * s1 / static_cast<double>(n);
        m2 = m2 < 0 ? 0.0 : m2;
        // Against the exact two-pass sums (long double): the shift keeps the cancellation small.
        long double m = 0, q = 0;
        for (T v : x) m += v;
        m /= static_cast<long double>(n);
        for (T v : x) q += (v - m) * (v - m);
        CHECK(std::abs(static_cast<double>(q) - m2) <= 1e-13 * static_cast<double>(q) + 1e-300);
        return {c + s1 / static_cast<double>(n), m2};
    } else {
        const double mean = lane_sum(x, [](double v) { return v; }) / static_cast<double>(n);
        return {mean, lane_sum(x, [&](double v) { return (v - mean) * (v - mean); })};
    }
}

/// var_rows over `rows` rows of n elements, each row with its own mean and spread (AVX-512 pairs rows:
/// an odd count has a row alone), against each row's sums in var_rows' order.
template <typename T>
void check_var_rows(SimdArch arch, std::size_t rows, std::size_t n) {
    std::mt19937 gen(static_cast<unsigned>(n * 7 + rows));
    std::vector<T> x(rows * n);
    std::vector<std::pair<double, double>> want;
    for (std::size_t r = 0; r < rows; ++r) {
        // A mean far from 0: cancellation shows.
        std::normal_distribution<double> dist(100.0 * static_cast<double>(r + 1), 30.0 / static_cast<double>(r + 1));
        std::vector<T> row(n);
        for (T& v : row) v = static_cast<T>(dist(gen));
        std::copy(row.begin(), row.end(), x.begin() + static_cast<std::ptrdiff_t>(r * n));
        want.push_back(var_row_want(row));
    }
    std::vector<double> mean(rows, -1), m2(rows, -1);
    vm::var_rows(x.data(), static_cast<std::int64_t>(rows), static_cast<std::int64_t>(n), mean.data(), m2.data());
    for (std::size_t r = 0; r < rows; ++r) {
        INFO(arch_name(arch) << (sizeof(T) == 4 ? " float32" : " float64") << " n " << n << " row " << r << " of "
                             << rows);
        CHECK(ordinal(mean[r]) == ordinal(want[r].first));
        CHECK(ordinal(m2[r]) == ordinal(want[r].second));
    }
}

}  // namespace

TEST_CASE("var_rows adds in double in the same order on every instruction set, row by row") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (std::size_t n : {1, 2, 31, 32, 33, 100, 4096, 4099})
            for (std::size_t rows : {1, 2, 3, 4, 5}) {
                check_var_rows<float>(arch, rows, n);
                check_var_rows<double>(arch, rows, n);
            }
    }
}

namespace {

/// PyTorch 1.13's RowwiseMoments (aten/src/ATen/native/cpu/moments_utils.h) on its AVX2 registers,
/// written out lane by lane: Welford passes over chunks of 16 registers, the chunks' moments merged in a
/// cascade (a level takes in the one below every other chunk), the elements after the last register in
/// a scalar Welford pass, which then takes in the lanes in order. Every step rounded on its own, as
/// PyTorch's build computes them (no multiply-add is fused).
template <typename T>
std::pair<T, T> rowwise_moments(const std::vector<T>& x) {
    constexpr std::int64_t kL = 32 / sizeof(T);
    using Lanes = std::array<T, kL>;
    const auto n = static_cast<std::int64_t>(x.size());
    const std::int64_t regs = n / kL, chunks = (regs + 15) / 16;
    std::int64_t depth = 1;
    while ((std::int64_t{1} << depth) < chunks) ++depth;
    auto add = [](std::int64_t add_n, T add_m1, T add_m2, std::int64_t& cnt, T& m1, T& m2) {
        const std::int64_t total = cnt + add_n;
        const T c = total == 0 ? T(0) : static_cast<T>(add_n) / static_cast<T>(total);
        const T delta = add_m1 - m1;
        m1 = m1 + c * delta;
        m2 = m2 + (add_m2 + delta * delta * c * static_cast<T>(cnt));
        cnt = total;
    };
    std::vector<std::int64_t> sn(static_cast<std::size_t>(depth), 0);
    std::vector<Lanes> s1(static_cast<std::size_t>(depth), Lanes{}), s2 = s1;
    auto add_level = [&](std::size_t from, std::size_t to, std::int64_t count, const Lanes& a1, const Lanes& a2) {
        for (std::int64_t k = 0; k < kL; ++k) {
            std::int64_t cnt = sn[to];
            add(count, a1[k], a2[k], cnt, s1[to][k], s2[to][k]);
        }
        sn[to] += count;
        (void)from;
    };
    for (std::int64_t i = 0; i < chunks; ++i) {
        const std::int64_t count = std::min<std::int64_t>(16, regs - i * 16);
        Lanes a1{}, a2{};
        for (std::int64_t j = 0; j < count; ++j)
            for (std::int64_t k = 0; k < kL; ++k) {
                const T v = x[static_cast<std::size_t>((i * 16 + j) * kL + k)], d = v - a1[k];
                a1[k] = a1[k] + d * (T(1) / static_cast<T>(j + 1));
                a2[k] = a2[k] + d * (v - a1[k]);
            }
        add_level(0, 0, count, a1, a2);
        std::int64_t mask = i + 1;
        for (std::int64_t l = 1; l < depth && (mask & 1) == 0; ++l, mask >>= 1) {
            const auto lu = static_cast<std::size_t>(l);
            add_level(lu - 1, lu, sn[lu - 1], s1[lu - 1], s2[lu - 1]);
            sn[lu - 1] = 0;
            s1[lu - 1] = s2[lu - 1] = Lanes{};
        }
    }
    for (std::size_t l = 1; l < sn.size(); ++l) add_level(l, 0, sn[l], s1[l], s2[l]);
    std::int64_t cnt = 0;
    T m1 = 0, m2 = 0;
    for (std::int64_t i = regs * kL; i < n; ++i) {
        const T v = x[static_cast<std::size_t>(i)], d = v - m1;
        ++cnt;
        m1 += d / static_cast<T>(cnt);
        m2 += d * (v - m1);
    }
    for (std::int64_t k = 0; k < kL; ++k) add(regs, s1[0][k], s2[0][k], cnt, m1, m2);
    return {m1, m2};
}

/// norm_moments of x against rowwise_moments, bit for bit (a NaN matching any NaN), and, for finite
/// rows, against the long-double two-pass moments: the mean within 256 ε of |mean| + σ, m2 within
/// 64 ε of m2 + n·|mean|·σ (Welford's updates round each step at the scale of the mean).
template <typename T>
void check_norm_moments(const std::vector<T>& x, const char* what) {
    T mean = -1, m2 = -1;
    vm::norm_moments(x.data(), static_cast<std::int64_t>(x.size()), &mean, &m2);
    const std::pair<T, T> want = rowwise_moments(x);
    const T want_mean = want.first, want_m2 = want.second;
    INFO(what << (sizeof(T) == 4 ? " float32" : " float64") << " n " << x.size() << " mean " << mean << " m2 " << m2
              << " want " << want_mean << " " << want_m2);
    auto same = [](T a, T b) { return std::isnan(b) ? std::isnan(a) : ordinal(a) == ordinal(b); };
    CHECK(same(mean, want_mean));
    CHECK(same(m2, want_m2));
    long double m = 0, q = 0;
    bool finite = true;
    for (T v : x) {
        m += v;
        finite = finite && std::isfinite(v);
    }
    if (!finite || x.empty()) return;
    m /= static_cast<long double>(x.size());
    for (T v : x) q += (v - m) * (v - m);
    const double eps = std::numeric_limits<T>::epsilon();
    const double sd = std::sqrt(static_cast<double>(q) / static_cast<double>(x.size()));
    CHECK(std::abs(static_cast<double>(mean) - static_cast<double>(m)) <=
          256 * eps * (std::abs(static_cast<double>(m)) + sd));
    CHECK(std::abs(static_cast<double>(m2) - static_cast<double>(q)) <=
          64 * eps * (static_cast<double>(q) + static_cast<double>(x.size()) * std::abs(static_cast<double>(m)) * sd));
}

template <typename T>
void check_norm_moments_rows(std::size_t n) {
    std::mt19937 gen(static_cast<unsigned>(n));
    std::normal_distribution<double> normal;
    std::vector<T> x(n);
    check_norm_moments(x, "zeros");
    for (T& v : x) v = static_cast<T>(normal(gen));
    check_norm_moments(x, "N(0, 1)");
    for (T& v : x) v = static_cast<T>(1e3 + normal(gen));
    check_norm_moments(x, "N(1000, 1)");
    for (std::size_t i = 0; i < n; ++i)
        x[i] = static_cast<T>(1e3 + static_cast<double>(i * i) / static_cast<double>(n));
    check_norm_moments(x, "a ramp");
    if (n == 0) return;
    std::fill(x.begin(), x.end(), static_cast<T>(3.25));
    T mean = -1, m2 = -1;
    vm::norm_moments(x.data(), static_cast<std::int64_t>(n), &mean, &m2);
    CHECK(mean == static_cast<T>(3.25));
    CHECK(m2 == T(0));
    x[n / 2] = std::numeric_limits<T>::infinity();
    check_norm_moments(x, "an infinity");
    x[0] = std::numeric_limits<T>::quiet_NaN();
    check_norm_moments(x, "a NaN");
    // Four different rows at once (norm_moments_rows, which layer_norm calls): each row's own moments.
    std::vector<std::vector<T>> rows(4, std::vector<T>(n));
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (T& v : rows[r]) v = static_cast<T>(static_cast<double>(r) * 10 + normal(gen));
    const T* ptrs[4] = {rows[0].data(), rows[1].data(), rows[2].data(), rows[3].data()};
    T means[4], m2s[4];
    vm::norm_moments_rows(ptrs, 4, static_cast<std::int64_t>(n), means, m2s);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const std::pair<T, T> want = rowwise_moments(rows[r]);
        CHECK(ordinal(means[r]) == ordinal(want.first));
        CHECK(ordinal(m2s[r]) == ordinal(want.second));
    }
}

}  // namespace

TEST_CASE("norm_moments gives PyTorch's RowwiseMoments bit for bit on every instruction set") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        INFO(arch_name(arch));
        // Below a register, one partial chunk, whole chunks, and cascades up to 6 levels deep.
        for (std::size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 64, 100, 127, 128, 129, 255, 257, 768, 1500, 2100, 4099}) {
            check_norm_moments_rows<float>(n);
            check_norm_moments_rows<double>(n);
        }
    }
}

namespace {

/// layer_norm_rows_backward over four rows against four calls of layer_norm_row_backward, bit for bit:
/// dx, and the weight and bias sums the rows add into (with and without a weight, dx and the sums).
template <typename T>
void check_rows_backward(std::int64_t n) {
    constexpr std::int64_t kRows = 4;
    std::mt19937 rng(static_cast<unsigned>(n) * 7 + sizeof(T));
    std::normal_distribution<double> nd(0.0, 1.0);
    auto values = [&](std::int64_t count, double scale, double shift) {
        std::vector<T> v(static_cast<std::size_t>(count));
        for (auto& e : v) e = static_cast<T>(nd(rng) * scale + shift);
        return v;
    };
    const std::vector<T> g = values(kRows * n, 1.0, 0.0), x = values(kRows * n, 2.0, 0.5), w = values(n, 0.5, 1.0);
    const std::vector<T> start_w = values(n, 1.0, 0.0), start_b = values(n, 1.0, 0.0);
    const std::vector<T> rstd = values(kRows, 0.1, 0.8), mean = values(kRows, 0.5, 0.0);
    for (bool with_w : {true, false})
        for (bool with_dx : {true, false}) {
            CAPTURE(with_w);
            CAPTURE(with_dx);
            std::vector<T> dx1(static_cast<std::size_t>(kRows * n)), dx4 = dx1;
            std::vector<T> aw1 = start_w, ab1 = start_b, aw4 = start_w, ab4 = start_b;
            for (std::int64_t r = 0; r < kRows; ++r)
                vm::layer_norm_row_backward(g.data() + r * n, x.data() + r * n, with_w ? w.data() : nullptr, rstd[r],
                                            mean[r], with_dx ? dx1.data() + r * n : nullptr, aw1.data(), ab1.data(), n,
                                            false, 0);
            vm::layer_norm_rows_backward(g.data(), x.data(), with_w ? w.data() : nullptr, rstd.data(), mean.data(),
                                         with_dx ? dx4.data() : nullptr, aw4.data(), ab4.data(), n, kRows, false, 0);
            CHECK(std::memcmp(dx1.data(), dx4.data(), dx1.size() * sizeof(T)) == 0);
            CHECK(std::memcmp(aw1.data(), aw4.data(), aw1.size() * sizeof(T)) == 0);
            CHECK(std::memcmp(ab1.data(), ab4.data(), ab1.size() * sizeof(T)) == 0);
        }
}

/// RMSNorm's first backward pass, with Σ (g·w)·x summed on the way (rms_norm_row_terms, then
/// inner_sum_from_quads), against the products stored and summed by inner_sum, and the weight terms
/// against the scalar formula: bit for bit, for the cut a ColumnSums row has (the groups before it) and
/// for a cut inside the groups (the weight terms then in a pass of their own).
template <typename T>
void check_rms_terms(std::int64_t n) {
    std::mt19937 rng(static_cast<unsigned>(n) * 5 + sizeof(T));
    std::normal_distribution<double> nd(0.0, 1.0);
    auto values = [&](double scale) {
        std::vector<T> v(static_cast<std::size_t>(n));
        for (auto& e : v) e = static_cast<T>(nd(rng) * scale);
        return v;
    };
    std::vector<T> g = values(1.0), x = values(2.0);
    const std::vector<T> w = values(0.7), start = values(1.0);
    if (n > 2) g[1] = T(-0.0);  // products of zeros among the others
    const T rstd = T(0.83);
    constexpr std::int64_t kQuad = 128 / sizeof(T), kW = vm::kLanes<T>;
    const std::int64_t groups_cut = n >= kW ? n / kQuad * kQuad : n / 4 * 4;
    for (std::int64_t cut : {groups_cut, std::min<std::int64_t>(n, kQuad / 2), std::int64_t{0}})
        for (bool with_w : {true, false}) {
            CAPTURE(cut);
            CAPTURE(with_w);
            const T* pw = with_w ? w.data() : nullptr;
            auto q = [&](std::int64_t i) { return (pw ? g[i] * pw[i] : g[i]) * x[i]; };
            std::vector<T> stored(static_cast<std::size_t>(n));
            for (std::int64_t i = 0; i < n; ++i) stored[i] = q(i);
            const T want = vm::inner_sum<T>(stored.data(), n);
            std::vector<T> want_acc = start, want_rest = start;
            for (std::int64_t i = 0; i < n; ++i) {
                T& a = i < cut ? want_acc[i] : want_rest[i];
                a = a + g[i] * (x[i] * rstd);
            }
            T quads[kQuad];
            std::vector<T> acc = start, rest = start;
            vm::rms_norm_row_terms(g.data(), x.data(), pw, rstd, quads, acc.data(), rest.data(), cut, n);
            const T got = vm::inner_sum_from_quads<T>(quads, n, q);
            CHECK(std::memcmp(&got, &want, sizeof(T)) == 0);
            CHECK(std::memcmp(acc.data(), want_acc.data(), acc.size() * sizeof(T)) == 0);
            CHECK(std::memcmp(rest.data(), want_rest.data(), rest.size() * sizeof(T)) == 0);
            // Without quad_sums: the weight terms alone.
            std::vector<T> acc2 = start, rest2 = start;
            vm::rms_norm_row_terms(g.data(), x.data(), pw, rstd, nullptr, acc2.data(), rest2.data(), cut, n);
            CHECK(std::memcmp(acc2.data(), want_acc.data(), acc2.size() * sizeof(T)) == 0);
            CHECK(std::memcmp(rest2.data(), want_rest.data(), rest2.size() * sizeof(T)) == 0);
        }
}

}  // namespace

TEST_CASE("LayerNorm's backward over four rows side by side gives the bits of four rows one at a time") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        INFO(arch_name(arch));
        // Below a register (the rows one at a time), whole registers, and partial ones at the end.
        for (std::int64_t n : {1, 3, 4, 7, 8, 9, 13, 16, 17, 100, 768, 1500}) {
            CAPTURE(n);
            check_rows_backward<float>(n);
            check_rows_backward<double>(n);
        }
    }
}

TEST_CASE("RMSNorm's backward sums its products on the way with the bits of PyTorch's sum of them stored") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        INFO(arch_name(arch));
        // Below a register, no group of four, 1 to 15 groups, 16 and more (the cascade's levels move, up
        // to its top one at 2^12 groups of floats), each with registers and elements after the groups.
        for (std::int64_t n : {1, 3, 5, 7, 8, 9, 16, 31, 32, 33, 100, 511, 512, 513, 768, 1500, 4099, 131101}) {
            CAPTURE(n);
            check_rms_terms<float>(n);
            check_rms_terms<double>(n);
        }
    }
}

TEST_CASE("StreamFenceOnce defers the maps' fences on its thread until the outermost one ends") {
    CHECK_FALSE(vm::stream_fence_deferred());
    {
        vm::StreamFenceOnce outer;
        CHECK(vm::stream_fence_deferred());
        {
            vm::StreamFenceOnce inner;
            CHECK(vm::stream_fence_deferred());
        }
        CHECK(vm::stream_fence_deferred());  // the inner one neither fences nor ends the deferral
        bool other_thread = true;
        std::thread([&] { other_thread = vm::stream_fence_deferred(); }).join();
        CHECK_FALSE(other_thread);  // per thread
        // A streamed map inside the scope still writes its values.
        const std::int64_t n = (vm::kStreamBytes / 4) + 37;
        std::vector<float> a(static_cast<std::size_t>(n), 1.5f), b(a.size(), 2.0f), y(a.size(), 0.0f);
        vm::varith(vm::Arith::kAdd, a.data(), b.data(), y.data(), n, true);
        CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 3.5f; }));
    }
    CHECK_FALSE(vm::stream_fence_deferred());
}

TEST_CASE(
    "sum_rows_serial gives inner_sum's bits for every row length, of x and of x squared, on every instruction set") {
    ArchGuard guard;
    std::mt19937 rng(21);
    std::normal_distribution<double> nd(0.0, 1.0);
    auto check = [&](auto tag, std::int64_t n, std::int64_t rows) {
        using T = decltype(tag);
        std::vector<T> x(static_cast<std::size_t>(n * rows));
        for (auto& e : x) e = static_cast<T>(nd(rng) * 3.0);
        if (x.size() > 5) {  // a row of zeros of both signs, and a row with an infinity
            for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i % 2 ? T(-0.0) : T(0.0);
            if (rows > 1) x[static_cast<std::size_t>(n)] = std::numeric_limits<T>::infinity();
        }
        INFO("n=", n, " rows=", rows, " ", sizeof(T) == 4 ? "float" : "double");
        std::vector<T> got(static_cast<std::size_t>(rows)), want(got.size());
        vm::sum_rows_serial(x.data(), rows, n, got.data());
        for (std::int64_t r = 0; r < rows; ++r)
            want[static_cast<std::size_t>(r)] = vm::inner_sum<T>(x.data() + r * n, n);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0);
        vm::sum_rows_serial(x.data(), rows, n, got.data(), true);  // the squares, as RMSNorm sums them
        for (std::int64_t r = 0; r < rows; ++r)
            want[static_cast<std::size_t>(r)] = vm::inner_sum<T, true>(x.data() + r * n, n);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0);
    };
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        INFO(arch_name(arch));
        // Every path of inner_sum: below a register, one to three registers, 1 to 15 groups of four, the
        // cascade from 16 groups (its levels moving at 16, 256 and 4096), each with registers and
        // elements after the groups.
        for (std::int64_t n = 0; n <= 600; ++n) {
            check(float{}, n, 3);
            check(double{}, n, 3);
        }
        for (std::int64_t n : {1023, 1500, 4096, 8191, 8195, 40000, 131071, 131075, 262143}) {
            check(float{}, n, 2);
            check(double{}, n, 2);
        }
    }
}

TEST_CASE("small matrix products summed by xgrad give OpenBLAS's bits") {
    // With FMA, matmul sums products with k < 8 itself (matmul.cpp); on SSE2 it always calls BLAS. The
    // two must agree bit for bit, for every operand layout, with and without a bias (beta = 1).
    ArchGuard guard;
    const SimdArch best = supported_archs().front();
    vm::set_simd_arch(best);
    if (!vm::small_products_in_use()) {
        MESSAGE("small products go to BLAS here (", arch_name(best), ", OpenBLAS core not one of the known four)");
        return;
    }
    xgrad::manual_seed(11);
    std::int64_t compared = 0;
    for (xgrad::DType dtype : {xgrad::kFloat32, xgrad::kFloat64})
        for (std::int64_t n : {1, 2, 3, 8, 13, 32})
            for (std::int64_t m : {1, 4, 6, 9, 32})
                for (std::int64_t k = 1; k <= 7; ++k)
                    for (int layout = 0; layout < 4; ++layout) {
                        if (n * m * k > 512) continue;
                        // a and b row-major or transposed views of column-major storage
                        xgrad::Tensor a = layout & 1 ? xgrad::randn({k, n}, dtype).t() : xgrad::randn({n, k}, dtype);
                        xgrad::Tensor b = layout & 2 ? xgrad::randn({m, k}, dtype).t() : xgrad::randn({k, m}, dtype);
                        xgrad::Tensor bias = xgrad::randn({n, m}, dtype);
                        xgrad::Tensor got[2], want[2];
                        for (int pass = 0; pass < 2; ++pass) {
                            vm::set_simd_arch(pass == 0 ? best : SimdArch::kSse2);
                            xgrad::Tensor& plain = pass == 0 ? got[0] : want[0];
                            xgrad::Tensor& biased = pass == 0 ? got[1] : want[1];
                            plain = xgrad::empty({n, m}, dtype);
                            vm::matmul(a, b, plain);
                            biased = bias.clone();
                            vm::matmul(a, b, biased, 1.0);
                        }
                        vm::set_simd_arch(best);
                        for (int i = 0; i < 2; ++i) {
                            INFO(xgrad::to_string(dtype), " n=", n, " m=", m, " k=", k, " layout=", layout,
                                 " bias=", i);
                            REQUIRE(got[i].dtype() == dtype);
                            const bool same = dtype == xgrad::kFloat32
                                                  ? got[i].to_vector<float>() == want[i].to_vector<float>()
                                                  : got[i].to_vector<double>() == want[i].to_vector<double>();
                            CHECK(same);
                            ++compared;
                        }
                    }
    CHECK(compared > 500);
}

TEST_CASE("matmul's transpose flags read an operand as its transposed view does, bit for bit") {
    // mm_backward passes transposed operands as flags instead of views: the product must be the same.
    xgrad::manual_seed(12);
    for (xgrad::DType dtype : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64})
        for (const std::array<std::int64_t, 3>& nkm :
             {std::array<std::int64_t, 3>{2, 5, 6}, {3, 7, 1}, {33, 40, 17}, {64, 300, 70}})
            for (std::int64_t batch : {0, 3})  // 0: 2-D (mm); else a batch of 3 (bmm)
                for (int flags = 0; flags < 4; ++flags) {
                    const std::int64_t n = nkm[0], k = nkm[1], m = nkm[2];  // plain variables: INFO captures them
                    const bool ta = flags & 1, tb = flags & 2;
                    auto shape = [batch](std::int64_t r, std::int64_t c) {
                        return batch ? xgrad::Shape{batch, r, c} : xgrad::Shape{r, c};
                    };
                    auto make = [dtype](const xgrad::Shape& s) {
                        xgrad::Tensor t = xgrad::randn(s, xgrad::kFloat64).mul(4.0);
                        return dtype == xgrad::kInt64 ? t.to(xgrad::kInt64) : t.to(dtype);
                    };
                    // a and b stored as the kernel reads them: transposed where their flag is set
                    const xgrad::Tensor a = make(ta ? shape(k, n) : shape(n, k));
                    const xgrad::Tensor b = make(tb ? shape(m, k) : shape(k, m));
                    const xgrad::Tensor bias = make(shape(n, m));
                    for (double beta : {0.0, 1.0}) {
                        INFO(xgrad::to_string(dtype), " n=", n, " k=", k, " m=", m, " batch=", batch, " ta=", ta,
                             " tb=", tb, " beta=", beta);
                        xgrad::Tensor flagged = beta == 0 ? xgrad::empty(shape(n, m), dtype) : bias.clone();
                        xgrad::Tensor viewed = beta == 0 ? xgrad::empty(shape(n, m), dtype) : bias.clone();
                        vm::matmul(a, b, flagged, beta, {.a = ta, .b = tb});
                        vm::matmul(ta ? a.transpose(-2, -1) : a, tb ? b.transpose(-2, -1) : b, viewed, beta);
                        CHECK(xgrad::equal(flagged, viewed));
                        // and the product is the product: against float64 (values of tens to hundreds)
                        const xgrad::Tensor want =
                            xgrad::matmul((ta ? a.transpose(-2, -1) : a).to(xgrad::kFloat64),
                                          (tb ? b.transpose(-2, -1) : b).to(xgrad::kFloat64))
                                .add(beta == 0 ? xgrad::zeros({1}, xgrad::kFloat64) : bias.to(xgrad::kFloat64));
                        CHECK(xgrad::allclose(flagged.to(xgrad::kFloat64), want, 1e-4, 0.05));
                    }
                }
}

TEST_CASE("GradList holds gradients in place up to three, and moves between in place and heap") {
    using xgrad::detail::GradList;
    const auto values = [](const GradList& l) {
        std::vector<double> v;
        for (const xgrad::Tensor& t : l) v.push_back(t.defined() ? t.item<double>() : -1.0);
        return v;
    };
    GradList small{xgrad::tensor({1.0}), xgrad::Tensor()};
    CHECK(values(small) == std::vector<double>{1.0, -1.0});
    GradList big(5);
    big[4] = xgrad::tensor({5.0});
    big.push_back(xgrad::tensor({6.0}));
    CHECK(values(big) == std::vector<double>{-1, -1, -1, -1, 5, 6});
    GradList from_vector(std::vector<xgrad::Tensor>{xgrad::tensor({7.0})});
    CHECK(values(from_vector) == std::vector<double>{7.0});
    big = std::move(small);  // heap <- in place
    CHECK(values(big) == std::vector<double>{1.0, -1.0});
    big.push_back(xgrad::tensor({3.0}));
    big.push_back(xgrad::tensor({4.0}));  // in place -> heap
    CHECK(values(big) == std::vector<double>{1, -1, 3, 4});
    GradList moved(std::move(big));
    CHECK(values(moved) == std::vector<double>{1, -1, 3, 4});
    moved.resize(1);
    CHECK(values(moved) == std::vector<double>{1.0});
}

namespace {

/// Whether a and b hold the same bits (both contiguous, of one dtype and shape).
bool same_bits(const xgrad::Tensor& a, const xgrad::Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() && a.is_contiguous() && b.is_contiguous() &&
           std::memcmp(a.impl()->data<char>(), b.impl()->data<char>(),
                       static_cast<std::size_t>(a.numel()) * xgrad::element_size(a.dtype())) == 0;
}

}  // namespace

TEST_CASE("an operand of one element, and a scalar, give the bits of the op on whole tensors") {
    // x op s with s a 0-d tensor (or of shape (1, 1)) runs as x op scalar (vscalar_map), streamed
    // when the output is large; the reference is the op on s expanded to x's shape and copied, which
    // takes the whole-tensor path (varith). NaN, infinities and signed zeros are among the inputs.
    const int threads_before = xgrad::get_num_threads();
    xgrad::manual_seed(31);
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const std::int64_t elem = dtype == xgrad::kFloat32 ? 4 : 8;
        for (std::int64_t n : {std::int64_t{37}, vm::kStreamBytes / elem + 37}) {
            xgrad::Tensor x = xgrad::randn({n}, dtype);
            const double specials[] = {std::nan(""), -std::nan(""), -0.0, 0.0, INFINITY, -INFINITY};
            for (std::size_t k = 0; k < std::size(specials); ++k)
                x.narrow(0, static_cast<std::int64_t>(3 * k), 1).fill_(specials[k]);
            for (int threads : {1, 2}) {
                xgrad::set_num_threads(threads);
                for (double value : {1.75, -0.0}) {
                    for (const xgrad::Tensor& s :
                         {xgrad::full({}, value, dtype), xgrad::full({1, 1}, value, dtype).reshape({1})}) {
                        const xgrad::Tensor whole = s.expand({n}).contiguous();
                        INFO(xgrad::to_string(dtype)
                             << ", n " << n << ", " << threads << " threads, s " << value << " of shape " << s.shape());
                        CHECK(same_bits(x + s, x + whole));
                        CHECK(same_bits(s + x, whole + x));
                        CHECK(same_bits(x - s, x - whole));
                        CHECK(same_bits(s - x, whole - x));
                        CHECK(same_bits(x * s, x * whole));
                        CHECK(same_bits(s * x, whole * x));
                        CHECK(same_bits(x / s, x / whole));
                        CHECK(same_bits(s / x, whole / x));
                        // the scalar forms: x op 1.75 as x op (a tensor of 1.75s)
                        CHECK(same_bits(x * value, x * whole));
                        CHECK(same_bits(value - x, whole - x));
                        CHECK(same_bits(x / value, x / whole));
                    }
                }
                // -x flips the sign bit of every element, zeros and NaN included
                const xgrad::Tensor negated = -x, flipped = x.clone();
                if (dtype == xgrad::kFloat32) {
                    auto* p = flipped.impl()->data<std::uint32_t>();
                    for (std::int64_t i = 0; i < n; ++i) p[i] ^= 0x80000000u;
                } else {
                    auto* p = flipped.impl()->data<std::uint64_t>();
                    for (std::int64_t i = 0; i < n; ++i) p[i] ^= 0x8000000000000000ull;
                }
                INFO(xgrad::to_string(dtype) << ", n " << n << ", " << threads << " threads");
                CHECK(same_bits(negated, flipped));
            }
        }
    }
    xgrad::set_num_threads(threads_before);
}

namespace {

/// amax/amin and argmax/argmin of each row of x against the scalar rule: the first NaN when a row
/// has one, else the first element equal to the extreme (so the first of +0 and -0).
template <typename T>
void check_row_extremes(const xgrad::Tensor& x, bool max) {
    const std::int64_t rows = x.size(0), width = x.size(1);
    const xgrad::Tensor values = max ? x.amax(-1) : x.amin(-1), indices = max ? x.argmax(-1) : x.argmin(-1);
    const T* px = x.impl()->data<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* row = px + r * width;
        std::int64_t at = 0;
        for (std::int64_t i = 1; i < width && row[at] == row[at]; ++i)
            if (row[i] != row[i] || (max ? row[i] > row[at] : row[i] < row[at])) at = i;
        const T got = values.impl()->data<T>()[r];
        INFO((max ? "max" : "min") << " of row " << r << " of " << width << " (" << sizeof(T) * 8 << "-bit)");
        CHECK(std::memcmp(&got, &row[at], sizeof(T)) == 0);
        CHECK(indices.impl()->data<std::int64_t>()[r] == at);
    }
}

}  // namespace

TEST_CASE(
    "amax, amin, argmax and argmin of rows: the first NaN, else the first of equal extremes, on every "
    "instruction set") {
    ArchGuard guard;
    xgrad::manual_seed(37);
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
            for (std::int64_t width : {1, 3, 16, 63, 64, 65, 130, 1000}) {
                // row 0 plain; 1 a NaN late; 2 two NaNs; 3 all zeros of both signs; 4 the extreme twice;
                // 5 infinities; 6 a NaN first
                xgrad::Tensor x = xgrad::randn({7, width}, dtype);
                auto set = [&](std::int64_t r, std::int64_t c, double v) {
                    if (c < width) x.narrow(0, r, 1).narrow(1, c, 1).fill_(v);
                };
                set(1, width - 1, std::nan(""));
                set(2, width / 2, -std::nan(""));
                set(2, width - 1, std::nan(""));
                x.narrow(0, 3, 1).fill_(0.0);
                for (std::int64_t c = 0; c < width; c += 3) set(3, c, -0.0);
                set(4, width / 3, 9.0);
                set(4, width - 1, 9.0);
                set(4, width / 4, -9.0);
                set(4, width - 2, -9.0);
                set(5, width / 2, INFINITY);
                set(5, width - 1, -INFINITY);
                set(6, 0, std::nan(""));
                INFO(arch_name(arch));
                for (bool max : {true, false}) {
                    if (dtype == xgrad::kFloat32)
                        check_row_extremes<float>(x, max);
                    else
                        check_row_extremes<double>(x, max);
                }
            }
        }
    }
}

namespace {

template <typename T>
void check_compare(SimdArch arch, vm::Compare op, std::int64_t a_step, std::int64_t b_step, std::size_t n) {
    std::mt19937 gen(static_cast<unsigned>(n * 13 + static_cast<std::size_t>(op)));
    std::uniform_int_distribution<int> pick(-2, 2);  // few values, so that many pairs are equal
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(), T(-0.0), T(0), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity()};
    std::vector<T> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
        a[i] = static_cast<T>(pick(gen));
        b[i] = static_cast<T>(pick(gen));
        if (i % 7 == 3) a[i] = specials[(i / 7) % 5];
        if (i % 5 == 1) b[i] = specials[(i / 5) % 5];
    }
    std::vector<char> y(n + 1, 7);
    vm::vcompare(op, a.data(), a_step, b.data(), b_step, reinterpret_cast<bool*>(y.data()),
                 static_cast<std::int64_t>(n));
    REQUIRE(y[n] == 7);  // nothing written past the end
    for (std::size_t i = 0; i < n; ++i) {
        const T u = a[i * static_cast<std::size_t>(a_step)], v = b[i * static_cast<std::size_t>(b_step)];
        const bool want = op == vm::Compare::kEq   ? u == v
                          : op == vm::Compare::kNe ? u != v
                          : op == vm::Compare::kLt ? u < v
                          : op == vm::Compare::kLe ? u <= v
                          : op == vm::Compare::kGt ? u > v
                                                   : u >= v;
        INFO(arch_name(arch) << " op " << static_cast<int>(op) << " steps " << a_step << " " << b_step << " n " << n
                             << " at " << i << ": " << u << " vs " << v);
        CHECK(static_cast<int>(y[i]) == static_cast<int>(want));
    }
}

}  // namespace

TEST_CASE("vcompare gives the scalar comparison as bools of 0 or 1, NaN unordered, on every instruction set") {
    ArchGuard guard;
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (int k = 0; k < 6; ++k)
            for (auto [as, bs] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {1, 0}, {0, 1}, {0, 0}})
                for (std::size_t n : {1, 3, 8, 17, 100}) {
                    check_compare<float>(arch, static_cast<vm::Compare>(k), as, bs, n);
                    check_compare<double>(arch, static_cast<vm::Compare>(k), as, bs, n);
                }
    }
}

TEST_CASE("where and masked_fill take the bits of x or y, a batch at a time, on every instruction set") {
    ArchGuard guard;
    xgrad::manual_seed(41);
    for (SimdArch arch : supported_archs()) {
        vm::set_simd_arch(arch);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
            for (std::int64_t width : {1, 5, 16, 33, 100}) {
                const xgrad::Tensor mask = xgrad::rand({3, width}) > 0.5;
                const xgrad::Tensor row_mask = xgrad::rand({width}) > 0.5;  // broadcast over the rows
                xgrad::Tensor x = xgrad::randn({3, width}, dtype), y = xgrad::randn({3, width}, dtype);
                x.narrow(1, 0, 1).fill_(-std::nan(""));
                y.narrow(1, width / 2, 1).fill_(-0.0);
                const xgrad::Tensor ys = y.narrow(0, 0, 1).squeeze(0);  // a row of y, broadcast
                auto check = [&](const xgrad::Tensor& got, const xgrad::Tensor& c, const xgrad::Tensor& a,
                                 const xgrad::Tensor& b) {
                    const xgrad::Tensor cc = c.expand({3, width}).contiguous();
                    const xgrad::Tensor ac = a.expand({3, width}).contiguous(), bc = b.expand({3, width}).contiguous();
                    const auto* pc = cc.impl()->data<bool>();
                    const std::size_t elem = xgrad::element_size(dtype);
                    bool same = got.shape() == xgrad::Shape{3, width};
                    for (std::int64_t i = 0; same && i < 3 * width; ++i) {
                        const auto* want = (pc[i] ? ac : bc).impl()->data<char>() + i * static_cast<std::int64_t>(elem);
                        same = std::memcmp(got.contiguous().impl()->data<char>() + i * static_cast<std::int64_t>(elem),
                                           want, elem) == 0;
                    }
                    return same;
                };
                INFO(arch_name(arch) << ", " << xgrad::to_string(dtype) << ", width " << width);
                CHECK(check(xgrad::where(mask, x, y), mask, x, y));
                CHECK(check(xgrad::where(row_mask, x, ys), row_mask, x, ys));
                CHECK(check(xgrad::where(mask, 2.5, y), mask, xgrad::full({}, 2.5, dtype), y));
                CHECK(check(xgrad::where(mask, x, -0.0), mask, x, xgrad::full({}, -0.0, dtype)));
                CHECK(check(xgrad::masked_fill(x, mask, -INFINITY), mask, xgrad::full({}, -INFINITY, dtype), x));
                CHECK(check(xgrad::masked_fill(x, row_mask, 7.0), row_mask, xgrad::full({}, 7.0, dtype), x));
                CHECK(check(xgrad::where(mask.t().contiguous().t(), x, y), mask, x, y));  // a strided mask
            }
        }
    }
}

TEST_CASE("contiguous() of transposed matrices, tile by tile: every element in place, batched and offset") {
    const int threads_before = xgrad::get_num_threads();
    xgrad::manual_seed(43);
    for (int threads : {1, 2}) {
        xgrad::set_num_threads(threads);
        for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64, xgrad::kInt32, xgrad::kUInt8}) {
            // (batch, rows, cols) of the result; the source is a (batch, cols + 3, rows + 5) tensor's
            // narrowed and transposed block, so its column stride exceeds the rows and it starts at an offset.
            // e elements make 2 KiB: a column stride of e (rows e - 5), rows of e elements, or both, take
            // the kernel's narrow tiles (copy.cpp); odd sizes leave ends outside its 4x4 and 2x2 blocks.
            const std::int64_t e = 2048 / static_cast<std::int64_t>(xgrad::element_size(dtype));
            for (const auto& brc : {std::array<std::int64_t, 3>{1, 16, 16},
                                    {1, 33, 70},
                                    {3, 65, 17},
                                    {2, 100, 31},
                                    {2, e - 5, 37},
                                    {1, 130, e},
                                    {1, e - 5, e + 1},
                                    {1, e - 5, e}}) {
                const std::int64_t b = brc[0], r = brc[1], c = brc[2];  // not a structured binding: INFO captures
                const xgrad::Tensor values = xgrad::randn({b, c + 3, r + 5}) * 100.0;
                // int32 values near 0x7FA00000 have the bits of float NaNs with payloads, which the 4-byte
                // blocks must move unchanged; uint8 takes the int64 values modulo 256
                const xgrad::Tensor big =
                    dtype == xgrad::kFloat32 || dtype == xgrad::kFloat64
                        ? values.to(dtype)
                        : (values.to(xgrad::kInt64) + (dtype == xgrad::kInt32 ? 0x7FA00000 : 0)).to(dtype);
                const xgrad::Tensor src = big.narrow(1, 2, c).narrow(2, 1, r).transpose(1, 2);
                const xgrad::Tensor got = src.contiguous();
                const xgrad::Tensor bigc = big.to(xgrad::kFloat64);
                const std::vector<double> all = bigc.to_vector<double>(),
                                          out = got.to(xgrad::kFloat64).to_vector<double>();
                bool same = got.is_contiguous() && got.shape() == xgrad::Shape{b, r, c};
                for (std::int64_t k = 0; same && k < b; ++k)
                    for (std::int64_t i = 0; same && i < r; ++i)
                        for (std::int64_t j = 0; same && j < c; ++j)
                            same = out[static_cast<std::size_t>((k * r + i) * c + j)] ==
                                   all[static_cast<std::size_t>((k * (c + 3) + j + 2) * (r + 5) + i + 1)];
                INFO(xgrad::to_string(dtype) << " (" << b << ", " << r << ", " << c << "), " << threads << " threads");
                CHECK(same);
                CHECK(got.transpose(1, 2).contiguous().equal(src.transpose(1, 2).contiguous()));  // and back
            }
        }
    }
    xgrad::set_num_threads(threads_before);
}

TEST_CASE(
    "rows added at an index from a broadcast source: Embedding's backward of a sum, index_add of an expanded row") {
    namespace F = xgrad::nn::functional;
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const xgrad::Tensor idx = xgrad::tensor({3, 0, 3, 5, 3, 0, 7}, xgrad::kInt64);
        xgrad::Tensor w = xgrad::randn({8, 37}, dtype).requires_grad_();
        (F::embedding(idx, w).sum() * 0.5).backward();  // each row's gradient: 0.5 per use of its index
        const std::vector<double> got = w.grad().to(xgrad::kFloat64).to_vector<double>();
        const double uses[8] = {2, 0, 0, 3, 0, 1, 0, 1};
        bool same = true;
        for (std::size_t r = 0; r < 8; ++r)
            for (std::size_t c = 0; c < 37; ++c) same = same && got[r * 37 + c] == 0.5 * uses[r];
        INFO(xgrad::to_string(dtype));
        CHECK(same);
        // index_add of one row expanded over the index, onto a base: base + (uses × the row), in order
        const xgrad::Tensor base = xgrad::randn({8, 37}, dtype), row = xgrad::randn({1, 37}, dtype);
        const xgrad::Tensor added = xgrad::index_add(base, 0, idx, row.expand({7, 37}));
        const xgrad::Tensor want = xgrad::index_add(base, 0, idx, row.expand({7, 37}).contiguous());
        CHECK(added.equal(want));
    }
}

TEST_CASE("broadcast binary ops whose outputs stream give the bits of small calls, on 1 and 2 threads") {
    // The strided loop streams a whole output of kStreamBytes and more run by run and fences once per
    // thread's share; the same rows in calls of 64 rows neither stream nor share.
    const int threads_before = xgrad::get_num_threads();
    xgrad::manual_seed(29);
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const std::int64_t width = 1030, elem = dtype == xgrad::kFloat32 ? 4 : 8;
        const std::int64_t rows = vm::kStreamBytes / (width * elem) + 5;
        const xgrad::Tensor x = xgrad::randn({rows, width}, dtype), row = xgrad::randn({width}, dtype);
        const xgrad::Tensor col = xgrad::randn({rows, 1}, dtype);
        for (int threads : {1, 2}) {
            xgrad::set_num_threads(threads);
            const xgrad::Tensor sum = x + row, product = x * col;
            std::vector<xgrad::Tensor> sums, products;
            for (std::int64_t r = 0; r < rows; r += 64) {
                const std::int64_t len = std::min<std::int64_t>(64, rows - r);
                sums.push_back(x.narrow(0, r, len) + row);
                products.push_back(x.narrow(0, r, len) * col.narrow(0, r, len));
            }
            INFO(xgrad::to_string(dtype) << ", " << threads << " threads");
            CHECK(sum.equal(xgrad::cat(sums)));
            CHECK(product.equal(xgrad::cat(products)));
        }
    }
    xgrad::set_num_threads(threads_before);
}

TEST_CASE("var and std over the rows of a tensor from memory give the bits of small calls") {
    // A tensor of kStreamBytes and more prefetches a later row while each row's second pass runs.
    xgrad::manual_seed(31);
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64}) {
        const std::int64_t width = 1500, elem = dtype == xgrad::kFloat32 ? 4 : 8;
        const std::int64_t rows = vm::kStreamBytes / (width * elem) + 7;
        const xgrad::Tensor x = xgrad::randn({rows, width}, dtype) * 3.0 + 1.0;
        const xgrad::Tensor var = x.var(-1), std = x.std(-1, false);
        std::vector<xgrad::Tensor> vars, stds;
        for (std::int64_t r = 0; r < rows; r += 64) {
            const xgrad::Tensor part = x.narrow(0, r, std::min<std::int64_t>(64, rows - r));
            vars.push_back(part.var(-1));
            stds.push_back(part.std(-1, false));
        }
        INFO(xgrad::to_string(dtype));
        CHECK(var.equal(xgrad::cat(vars)));
        CHECK(std.equal(xgrad::cat(stds)));
    }
}

namespace {

/// The positions of `v` stably sorted by the CUDA sort's keys (kernels/cuda/sort_key.hpp).
template <typename T>
std::vector<std::int64_t> order_by_keys(const std::vector<T>& v, bool descending) {
    std::vector<std::int64_t> pos(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
    std::stable_sort(pos.begin(), pos.end(), [&](std::int64_t a, std::int64_t b) {
        return xgrad::kernels::cuda::sort_key(v[static_cast<std::size_t>(a)], descending) <
               xgrad::kernels::cuda::sort_key(v[static_cast<std::size_t>(b)], descending);
    });
    return pos;
}

/// Values with every case a sort key must order: NaNs of both signs and other payloads, both zeros,
/// both infinities, subnormals, extremes, ties; then random numbers.
template <typename T>
std::vector<T> awkward_values(std::uint32_t seed) {
    using L = std::numeric_limits<T>;
    std::vector<T> v;
    if constexpr (std::is_floating_point_v<T>) {
        v = {T(1),
             T(-1),
             T(0),
             -T(0),
             L::infinity(),
             -L::infinity(),
             L::quiet_NaN(),
             -L::quiet_NaN(),
             L::denorm_min(),
             -L::denorm_min(),
             L::max(),
             L::lowest(),
             L::min(),
             -L::min(),
             T(1),
             T(0),
             -T(0),
             T(2.5)};
        // A NaN with another payload.
        T nan = L::quiet_NaN();
        unsigned char bytes[sizeof(T)];
        std::memcpy(bytes, &nan, sizeof(T));
        bytes[0] ^= 0x5a;
        std::memcpy(&nan, bytes, sizeof(T));
        v.push_back(nan);
        std::mt19937 gen(seed);
        std::normal_distribution<double> normal;
        for (int i = 0; i < 300; ++i) v.push_back(static_cast<T>(std::round(normal(gen) * 4) / 4));  // many ties
        for (int i = 0; i < 300; ++i) v.push_back(static_cast<T>(normal(gen) * 1e3));
    } else {
        v = {T(0), T(-1), T(1), L::max(), L::min(), T(-7), T(7), T(0), L::max(), L::min()};
        std::mt19937_64 gen(seed);
        for (int i = 0; i < 300; ++i) v.push_back(static_cast<T>(gen() % 41) - 20);  // ties
        for (int i = 0; i < 300; ++i) v.push_back(static_cast<T>(gen()));
    }
    std::shuffle(v.begin(), v.end(), std::mt19937(seed + 1));
    return v;
}

template <typename T>
void check_sort_keys(xgrad::DType dtype) {
    const std::vector<T> v = awkward_values<T>(7);
    const auto n = static_cast<std::int64_t>(v.size());
    const xgrad::Tensor x = xgrad::from_vector(v, {n}, dtype);
    for (bool descending : {false, true}) {
        INFO(xgrad::to_string(dtype) << (descending ? ", descending" : ", ascending"));
        // The CPU's stable sort is PyTorch's order: NaN above every number, ties in index order.
        const xgrad::Tensor expected = x.argsort(0, descending, /*stable=*/true);
        CHECK(xgrad::from_vector(order_by_keys(v, descending), {n}).equal(expected));
    }
}

}  // namespace

TEST_CASE("the CUDA sort's keys order a row as the CPU's stable sort does") {
    // The CUDA sort radix-sorts these keys (with the positions) and keeps ties in index order, so
    // its indices are the stable sort's wherever this holds; run here on the host, where no GPU is.
    check_sort_keys<float>(xgrad::kFloat32);
    check_sort_keys<double>(xgrad::kFloat64);
    check_sort_keys<std::int64_t>(xgrad::kInt64);
}
