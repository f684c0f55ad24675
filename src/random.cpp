// PyTorch's CPU sampling algorithms, reproduced operation by operation so that every value matches.
//
// What PyTorch 1.13's x86-64 build computes (checked bit for bit against it, see tests/golden/gen_random.py):
// - uniform: float takes one 32-bit draw, (r & 0xFFFFFF) * 2^-24; double takes random64(),
//   (r & (2^53 - 1)) * 2^-53; then x * (to - from) + from, rounded once (the kernel is compiled
//   with FMA contraction, so it is a fused multiply-add).
// - normal, fewer than 16 elements or not contiguous: a double Box–Muller per pair of values whose
//   second half waits in the generator; the result is fma(z, std, mean) in double, then cast.
// - normal, 16 or more contiguous elements: uniforms of the tensor's dtype fill the buffer, then
//   each block of 16 is transformed as 8 pairs (i, i + 8); a ragged tail redraws and retransforms
//   the last 16. float32 runs PyTorch's AVX2 kernel, whose log and sincos are the Cephes polynomials
//   of avx_mathfun.h evaluated in float with fused multiply-adds; emulated below in scalar code.
// - randint, randperm and bernoulli use one 32-bit draw each (random64() for ranges >= 2^32, double
//   uniforms for bernoulli with a double or scalar probability).
// - exponential_: one double uniform u per element, (-1 / lambda) * log(1 - u) in double, then cast.
// - multinomial: without replacement, the exponential race (PyTorch 1.13 takes it for one sample
//   only without replacement; later versions for any one sample): q = p / Exp(1) drawn
//   in p's memory order, then argmax (one sample) or topk (Tensor::topk: PyTorch's order of ties);
//   with replacement, per row, the cumulative sum in p's dtype divided by the total, then one double
//   uniform per sample and a binary search.
// - Draws follow memory order: a transposed target is filled storage-first, and rand_like/randn_like
//   keep a transposed layout as empty_like does; bernoulli's result is contiguous.
#include "xgrad/random.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/autograd.hpp"

namespace xgrad {

using detail::fail;

// ---- generators --------------------------------------------------------------------------------

Generator& Generator::manual_seed(std::uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex());
    seed_ = seed;
    engine_.seed_with(static_cast<std::uint32_t>(seed & 0xffffffffULL));
    next_normal_.reset();
    return *this;
}

std::uint64_t Generator::seed() {
    std::random_device device;
    std::uint64_t s = (static_cast<std::uint64_t>(device()) << 32) | device();
    manual_seed(s);
    return s;
}

namespace detail {

// MT19937's twist: word i becomes word i + 397 xor the twisted pair (i, i + 1), in place, in three
// loops without a carried dependency (the first reads words not yet replaced, the second words
// replaced by the first), so that the compiler vectorises them; a branch-free twist of the low bit.
void Mt19937::refill() {
    constexpr int kShift = 397;
    constexpr std::uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
    auto twist = [](std::uint32_t hi, std::uint32_t lo, std::uint32_t far) {
        const std::uint32_t y = (hi & kUpper) | (lo & kLower);
        return far ^ (y >> 1) ^ ((0u - (y & 1u)) & kMatrix);
    };
    int i = 0;
    for (; i < kWords - kShift; ++i) words_[i] = twist(words_[i], words_[i + 1], words_[i + kShift]);
    for (; i < kWords - 1; ++i) words_[i] = twist(words_[i], words_[i + 1], words_[i + kShift - kWords]);
    words_[kWords - 1] = twist(words_[kWords - 1], words_[0], words_[kShift - 1]);
    next_ = 0;
}

}  // namespace detail

Generator& default_generator() {
    static Generator generator;
    return generator;
}

Generator& manual_seed(std::uint64_t seed) {
    return default_generator().manual_seed(seed);
}

std::uint64_t initial_seed() {
    return default_generator().initial_seed();
}

// Generator state as libtorch's THGeneratorStateNew: {u64 seed; i32 left; i32 seeded; u64 next;
// u64 state[624]; f64 normal_x, normal_y, normal_rho; i32 normal_is_valid; (pad) f32 next_float_normal;
// bool valid; (pad)}. libtorch reads word `next` after `--left`, so left + next = 625 except right after
// seeding (left 1, next 0); libstdc++'s mt19937 keeps the position p = next (624 right after seeding).
namespace {
constexpr std::size_t kMtWords = 624, kStateBytes = 5056, kLegacyStateBytes = 5048;
constexpr std::size_t kNextOff = 16, kWordsOff = 24, kNormalYOff = 5024, kNormalValidOff = 5040;

template <typename T>
void put(std::vector<std::uint8_t>& out, std::size_t offset, T value) {
    std::memcpy(out.data() + offset, &value, sizeof(T));
}
template <typename T>
T take(const std::vector<std::uint8_t>& in, std::size_t offset) {
    T value;
    std::memcpy(&value, in.data() + offset, sizeof(T));
    return value;
}
}  // namespace

std::vector<std::uint8_t> Generator::get_state() const {
    std::lock_guard<std::mutex> lock(mutex());
    std::vector<std::uint8_t> out(kStateBytes, 0);
    for (std::size_t i = 0; i < kMtWords; ++i) put<std::uint64_t>(out, kWordsOff + 8 * i, engine_.words()[i]);
    const auto p = static_cast<std::uint64_t>(engine_.position());
    const bool fresh = p == kMtWords && engine_ == detail::Mt19937(static_cast<std::uint32_t>(seed_));
    put<std::uint64_t>(out, 0, seed_);
    put<std::int32_t>(out, 8, static_cast<std::int32_t>(kMtWords + 1 - p));  // left
    put<std::int32_t>(out, 12, 1);                                           // seeded
    put<std::uint64_t>(out, kNextOff, fresh ? 0 : p);
    if (next_normal_) {
        put<double>(out, kNormalYOff, *next_normal_);
        put<std::int32_t>(out, kNormalValidOff, 1);
    }
    return out;
}

void Generator::set_state(const std::vector<std::uint8_t>& state) {
    if (state.size() != kStateBytes && state.size() != kLegacyStateBytes)
        detail::fail("set_rng_state",
                     "Expected either a THGeneratorState of size 5048 or a THGeneratorStateNew of "
                     "size 5056 but found the input RNG state size to be " +
                         std::to_string(state.size()));
    const auto left = take<std::int32_t>(state, 8);
    if (left < 1 || left > static_cast<std::int32_t>(kMtWords))
        detail::fail("set_rng_state", "invalid Mersenne Twister position: left = " + std::to_string(left));
    std::uint32_t words[kMtWords];
    for (std::size_t i = 0; i < kMtWords; ++i)
        words[i] = static_cast<std::uint32_t>(take<std::uint64_t>(state, kWordsOff + 8 * i) & 0xffffffffULL);
    detail::Mt19937 engine;
    engine.set(words, static_cast<int>(kMtWords + 1 - static_cast<std::size_t>(left)));
    std::optional<double> normal;
    if (take<std::int32_t>(state, kNormalValidOff) != 0) normal = take<double>(state, kNormalYOff);
    std::lock_guard<std::mutex> lock(mutex());
    engine_ = engine;
    seed_ = take<std::uint64_t>(state, 0);
    next_normal_ = normal;
}

std::vector<std::uint8_t> get_rng_state() {
    return default_generator().get_state();
}

void set_rng_state(const std::vector<std::uint8_t>& state) {
    default_generator().set_state(state);
}

namespace {

constexpr double kPi = 3.14159265358979323846;

// The hot loops are compiled twice, with and without hardware FMA, and picked at load time: the
// results are the same (a fused multiply-add rounds once either way), only the speed differs.
// ThreadSanitizer instruments the ifunc resolver that picks a clone, which then runs before the
// sanitizer's runtime is set up and crashes: its builds use the default clone only.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XGRAD_NO_CLONES
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define XGRAD_NO_CLONES
#endif
#if defined(__GNUC__) && defined(__x86_64__) && defined(__ELF__) && !defined(XGRAD_NO_CLONES)
#define XGRAD_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define XGRAD_FMA_CLONES
#endif
#define XGRAD_INLINE [[gnu::always_inline]] inline

Generator& pick(Generator* gen) {
    return gen ? *gen : default_generator();
}

/// A float in [0, 1) from one 32-bit draw (24 random bits).
XGRAD_INLINE float uniform_float(Generator& g) {
    return static_cast<float>(g.random() & 0xFFFFFFu) * (1.0f / 16777216.0f);
}

/// A double in [0, 1) from one 64-bit draw (53 random bits).
XGRAD_INLINE double uniform_double(Generator& g) {
    return static_cast<double>(g.random64() & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// One uniform value of type T in [from, to), as PyTorch's uniform_real_distribution.
template <typename T>
XGRAD_INLINE T uniform_value(Generator& g, T from, T to) {
    if constexpr (std::is_same_v<T, float>)
        return std::fma(uniform_float(g), to - from, from);
    else
        return std::fma(uniform_double(g), to - from, from);
}

/// One value from Exp(lambda) in double, as PyTorch's exponential_distribution<double> on the CPU.
XGRAD_INLINE double exponential_double(Generator& g, double lambda) {
    return -1.0 / lambda * std::log(1.0 - uniform_double(g));
}

/// One standard normal from the double Box–Muller, using and refilling the generator's cache.
double normal_double(Generator& g) {
    if (auto cached = g.next_double_normal_sample()) {
        g.set_next_double_normal_sample(std::nullopt);
        return *cached;
    }
    double u1 = uniform_double(g);
    double u2 = uniform_double(g);
    double r = std::sqrt(-2.0 * std::log(1.0 - u2));
    double theta = 2.0 * kPi * u1;
    g.set_next_double_normal_sample(r * std::sin(theta));
    return r * std::cos(theta);
}

// ---- the float32 Box–Muller of PyTorch's AVX2 kernel, one lane at a time -------------------------

XGRAD_INLINE float bits_to_float(std::uint32_t u) {
    return std::bit_cast<float>(u);
}
XGRAD_INLINE std::uint32_t float_to_bits(float f) {
    return std::bit_cast<std::uint32_t>(f);
}

/// Natural log as avx_mathfun's log256_ps (Cephes logf), for x in (0, 1].
XGRAD_INLINE float cephes_logf(float x) {
    bool invalid = x <= 0.0f;
    x = std::max(x, bits_to_float(0x00800000u));  // no denormals
    auto exponent = static_cast<std::int32_t>(float_to_bits(x) >> 23) - 0x7f;
    x = bits_to_float((float_to_bits(x) & ~0x7f800000u) | float_to_bits(0.5f));  // mantissa in [0.5, 1)
    float e = static_cast<float>(exponent) + 1.0f;
    bool below = x < 0.707106781186547524f;
    float extra = below ? x : 0.0f;
    x = x - 1.0f;
    e = e - (below ? 1.0f : 0.0f);
    x = x + extra;
    float z = x * x;
    float y = 7.0376836292E-2f;
    y = std::fma(y, x, -1.1514610310E-1f);
    y = std::fma(y, x, 1.1676998740E-1f);
    y = std::fma(y, x, -1.2420140846E-1f);
    y = std::fma(y, x, 1.4249322787E-1f);
    y = std::fma(y, x, -1.6668057665E-1f);
    y = std::fma(y, x, 2.0000714765E-1f);
    y = std::fma(y, x, -2.4999993993E-1f);
    y = std::fma(y, x, 3.3333331174E-1f);
    y = y * x;
    y = std::fma(y, z, e * -2.12194440e-4f);
    y = std::fma(-z, 0.5f, y);
    x = std::fma(e, 0.693359375f, x + y);
    return invalid ? std::numeric_limits<float>::quiet_NaN() : x;
}

/// Sine and cosine as avx_mathfun's sincos256_ps (Cephes sinf/cosf), for x in [0, 2π).
XGRAD_INLINE void cephes_sincosf(float x, float& sin_out, float& cos_out) {
    std::uint32_t sign_sin = float_to_bits(x) & 0x80000000u;
    x = bits_to_float(float_to_bits(x) & 0x7fffffffu);
    auto j = static_cast<std::int32_t>(x * 1.27323954473516f);  // 4/π, truncated
    j = (j + 1) & ~1;
    float y = static_cast<float>(j);
    sign_sin ^= static_cast<std::uint32_t>(j & 4) << 29;
    std::uint32_t sign_cos = static_cast<std::uint32_t>(~(j - 2) & 4) << 29;
    bool sine_poly = (j & 2) == 0;
    // Extended-precision reduction x - y·π/4.
    x = std::fma(y, -0.78515625f, x);
    x = std::fma(y, -2.4187564849853515625e-4f, x);
    x = std::fma(y, -3.77489497744594108e-8f, x);
    float z = x * x;
    float c = 2.443315711809948E-005f;
    c = std::fma(c, z, -1.388731625493765E-003f);
    c = std::fma(c, z, 4.166664568298827E-002f);
    c = c * z;
    c = std::fma(c, z, -(z * 0.5f));
    c = c + 1.0f;
    float s = -1.9515295891E-4f;
    s = std::fma(s, z, 8.3321608736E-3f);
    s = std::fma(s, z, -1.6666654611E-1f);
    s = s * z;
    s = std::fma(s, x, x);
    // The kernel selects with masks and adds: (sin, cos) = sine_poly ? (s, c) : (c, s).
    float sin_part = sine_poly ? s + 0.0f : 0.0f + c;
    float cos_part = sine_poly ? c + 0.0f : 0.0f + s;
    sin_out = bits_to_float(float_to_bits(sin_part) ^ sign_sin);
    cos_out = bits_to_float(float_to_bits(cos_part) ^ sign_cos);
}

/// Turns 16 float uniforms into 16 normals as PyTorch's normal_fill_16_AVX2.
XGRAD_INLINE void normal_fill_16(float* d, float mean, float std) {
    const auto two_pi = static_cast<float>(2.0 * kPi);
    for (int j = 0; j < 8; ++j) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float radius = std::sqrt(-2.0f * cephes_logf(u1));
        float s, c;
        cephes_sincosf(two_pi * u2, s, c);
        d[j] = std::fma(radius * c, std, mean);
        d[j + 8] = std::fma(radius * s, std, mean);
    }
}

/// Turns 16 double uniforms into 16 normals as PyTorch's generic normal_fill_16.
XGRAD_INLINE void normal_fill_16(double* d, double mean, double std) {
    for (int j = 0; j < 8; ++j) {
        double u1 = 1.0 - d[j];
        double u2 = d[j + 8];
        double radius = std::sqrt(-2.0 * std::log(u1));
        double theta = static_cast<double>(2.0f) * kPi * u2;
        d[j] = std::fma(radius * std::cos(theta), std, mean);
        d[j + 8] = std::fma(radius * std::sin(theta), std, mean);
    }
}

/// Fills `n` contiguous values with uniforms in [from, to).
XGRAD_FMA_CLONES void fill_uniform(float* d, std::int64_t n, float from, float to, Generator& g) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = uniform_value<float>(g, from, to);
}
XGRAD_FMA_CLONES void fill_uniform(double* d, std::int64_t n, double from, double to, Generator& g) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = uniform_value<double>(g, from, to);
}

/// Transforms each whole block of 16 uniforms in `d[0, n)` into normals.
XGRAD_FMA_CLONES void normal_blocks(float* d, std::int64_t n, float mean, float std) {
    for (std::int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(d + i, mean, std);
}
XGRAD_FMA_CLONES void normal_blocks(double* d, std::int64_t n, double mean, double std) {
    for (std::int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(d + i, mean, std);
}

/// PyTorch's normal_fill for a contiguous buffer of at least 16 elements.
template <typename T>
void normal_fill(T* d, std::int64_t n, T mean, T std, Generator& g) {
    fill_uniform(d, n, T(0), T(1), g);
    normal_blocks(d, n, mean, std);
    if (n % 16 != 0) {
        T* tail = d + n - 16;
        fill_uniform(tail, 16, T(0), T(1), g);
        normal_blocks(tail, 16, mean, std);
    }
}

// ---- writing into tensors ------------------------------------------------------------------------

/// Throws unless `t` may be written in place and none of its elements share memory (PyTorch's
/// random fills refuse an expanded tensor, which fill_ accepts); then marks the write in its version
/// counter.
void check_writable(const Tensor& t, const char* op) {
    detail::check_inplace(t, op);
    detail::check_no_internal_overlap(t, op);
    detail::bump_version(t);
}

/// The dimensions of `t` from the largest stride to the smallest (ties keep their order): the order
/// in which PyTorch's TensorIterator walks an output, so that a transposed tensor is filled
/// storage-first.
std::vector<std::size_t> memory_order(const Tensor& t) {
    const auto& strides = t.strides();
    std::vector<std::size_t> order(strides.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return strides[a] > strides[b]; });
    return order;
}

/// Calls `f(T* element, logical_index)` for each element of `t` in memory order.
template <typename T, typename F>
void for_each_in_memory_order(const Tensor& t, F&& f) {
    T* base = static_cast<T*>(t.impl()->storage->data);
    if (t.is_contiguous()) {
        T* p = base + t.storage_offset();
        for (std::int64_t i = 0, n = t.numel(); i < n; ++i) f(p + i, i);
        return;
    }
    const auto logical = detail::contiguous_strides(t.shape());
    std::vector<std::int64_t> shape, strides, logical_strides;
    for (auto d : memory_order(t)) {
        shape.push_back(t.shape()[static_cast<std::int64_t>(d)]);
        strides.push_back(t.strides()[d]);
        logical_strides.push_back(logical[d]);
    }
    std::vector<std::int64_t> index(static_cast<std::size_t>(t.numel()));
    detail::for_each_offset(Shape(shape), logical_strides, 0,
                            [&](std::int64_t k, std::int64_t i) { index[static_cast<std::size_t>(k)] = i; });
    detail::for_each_offset(Shape(shape), strides, t.storage_offset(), [&](std::int64_t k, std::int64_t off) {
        f(base + off, index[static_cast<std::size_t>(k)]);
    });
}

/// An uninitialised tensor shaped like `other` and, when other is a dense permutation of a
/// contiguous tensor (a transpose, say), strided like it too, as PyTorch's empty_like: random
/// values then land where PyTorch puts them.
Tensor empty_like_layout(const Tensor& other, DType dtype) {
    Tensor out = detail::make_empty(other.shape(), dtype);
    if (other.is_contiguous()) return out;
    auto order = memory_order(other);
    // Dense and non-overlapping: each stride (size-1 dims aside) is the product of the sizes inside it.
    std::vector<std::int64_t> strides(order.size());
    std::int64_t expected = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        std::int64_t size = other.shape()[static_cast<std::int64_t>(*it)];
        if (size != 1 && other.strides()[*it] != expected) return out;
        strides[*it] = expected;
        expected *= size;
    }
    return detail::make_view(out, other.shape(), std::move(strides), 0);
}

/// A CPU tensor to draw into (every generator is a CPU generator); finish() moves it to the device
/// the options name, after checking here that it exists.
Tensor make_random(const Shape& shape, const FactoryOptions& options, const char* op) {
    detail::checked_numel(shape, op);
    detail::resolve_device(options.device(), op);
    return detail::make_empty(shape, options.dtype(), kCPU, op);
}

Tensor finish(Tensor t, const FactoryOptions& options) {
    t.impl()->storage->version.store(0, std::memory_order_relaxed);  // a new tensor: its fill is no update
    if (!options.device().is_cpu()) t = t.to(options.device());
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

/// Random values are drawn on the CPU by PyTorch's CPU generator, then copied to the tensor's
/// device: a CUDA tensor gets the very numbers a CPU tensor would (PyTorch's CUDA generator would
/// give others).
template <typename F>
Tensor& fill_on_host(Tensor& self, F&& fill) {
    Tensor host = empty_like_layout(self, self.dtype());
    fill(host);
    kernels::copy(host, self);
    return self;
}

void check_floating(DType dtype, const char* op) {
    if (!is_floating_point(dtype)) fail(op, "needs a floating-point dtype, got " + to_string(dtype));
}

}  // namespace

// ---- in-place fills --------------------------------------------------------------------------------

Tensor& uniform_(Tensor& self, double from, double to, Generator* gen) {
    check_writable(self, "uniform_");
    check_floating(self.dtype(), "uniform_");
    if (!(from <= to))
        fail("uniform_", "expects to return a [from, to) range, but found from=" + std::to_string(from) +
                             " > to=" + std::to_string(to));
    if (!self.device().is_cpu()) return fill_on_host(self, [&](Tensor& h) { uniform_(h, from, to, gen); });
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    detail::dispatch_float(self.dtype(), "uniform_", [&](auto tag) {
        using T = decltype(tag);
        const double lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        if (from < lo || to > hi || !(to - from <= hi))
            fail("uniform_", "the range [" + std::to_string(from) + ", " + std::to_string(to) + ") does not fit " +
                                 to_string(self.dtype()));
        const auto f = static_cast<T>(from), t = static_cast<T>(to);
        if (self.is_contiguous()) return fill_uniform(self.impl()->data<T>(), self.numel(), f, t, g);
        for_each_in_memory_order<T>(self, [&](T* p, std::int64_t) { *p = uniform_value<T>(g, f, t); });
    });
    return self;
}

Tensor& normal_(Tensor& self, double mean, double std, Generator* gen) {
    check_writable(self, "normal_");
    check_floating(self.dtype(), "normal_");
    if (!(std >= 0.0)) fail("normal_", "expects std >= 0.0, but found std " + std::to_string(std));
    if (!self.device().is_cpu()) return fill_on_host(self, [&](Tensor& h) { normal_(h, mean, std, gen); });
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    detail::dispatch_float(self.dtype(), "normal_", [&](auto tag) {
        using T = decltype(tag);
        const std::int64_t n = self.numel();
        if (n >= 16 && self.is_contiguous()) {
            normal_fill<T>(self.impl()->data<T>(), n, static_cast<T>(mean), static_cast<T>(std), g);
            return;
        }
        for_each_in_memory_order<T>(
            self, [&](T* p, std::int64_t) { *p = static_cast<T>(std::fma(normal_double(g), std, mean)); });
    });
    return self;
}

Tensor& bernoulli_(Tensor& self, double p, Generator* gen) {
    check_writable(self, "bernoulli_");
    if (!(p >= 0.0 && p <= 1.0)) fail("bernoulli_", "expects p to be in [0, 1], but got p=" + std::to_string(p));
    if (!self.device().is_cpu()) return fill_on_host(self, [&](Tensor& h) { bernoulli_(h, p, gen); });
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    detail::dispatch_all(self.dtype(), [&](auto tag) {
        using T = decltype(tag);
        for_each_in_memory_order<T>(self, [&](T* q, std::int64_t) { *q = uniform_double(g) < p ? T(1) : T(0); });
    });
    return self;
}

Tensor& random_(Tensor& self, std::int64_t from, std::int64_t to, Generator* gen) {
    check_writable(self, "random_");
    if (from >= to)
        fail("random_", "expects 'from' to be less than 'to', but got from=" + std::to_string(from) +
                            " >= to=" + std::to_string(to));
    if (!self.device().is_cpu()) return fill_on_host(self, [&](Tensor& h) { random_(h, from, to, gen); });
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    const std::uint64_t range = static_cast<std::uint64_t>(to) - static_cast<std::uint64_t>(from);
    detail::dispatch_all(self.dtype(), [&](auto tag) {
        using T = decltype(tag);
        for_each_in_memory_order<T>(self, [&](T* p, std::int64_t) {
            std::uint64_t r = range >= (1ULL << 32) ? g.random64() : g.random();
            *p = static_cast<T>(static_cast<std::int64_t>(r % range + static_cast<std::uint64_t>(from)));
        });
    });
    return self;
}

Tensor& exponential_(Tensor& self, double lambd, Generator* gen) {
    check_writable(self, "exponential_");
    check_floating(self.dtype(), "exponential_");
    if (!(lambd >= 0.0)) fail("exponential_", "expects lambda >= 0.0, but found lambda=" + std::to_string(lambd));
    if (!self.device().is_cpu()) return fill_on_host(self, [&](Tensor& h) { exponential_(h, lambd, gen); });
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    detail::dispatch_float(self.dtype(), "exponential_", [&](auto tag) {
        using T = decltype(tag);
        for_each_in_memory_order<T>(self,
                                    [&](T* p, std::int64_t) { *p = static_cast<T>(exponential_double(g, lambd)); });
    });
    return self;
}

// ---- factories -------------------------------------------------------------------------------------

Tensor rand(const Shape& shape, FactoryOptions options, Generator* gen) {
    check_floating(options.dtype(), "rand");
    Tensor t = make_random(shape, options, "rand");
    uniform_(t, 0.0, 1.0, gen);
    return finish(t, options);
}

Tensor randn(const Shape& shape, FactoryOptions options, Generator* gen) {
    check_floating(options.dtype(), "randn");
    Tensor t = make_random(shape, options, "randn");
    normal_(t, 0.0, 1.0, gen);
    return finish(t, options);
}

Tensor normal(double mean, double std, const Shape& shape, FactoryOptions options, Generator* gen) {
    check_floating(options.dtype(), "normal");
    if (!(std >= 0.0)) fail("normal", "expects std >= 0.0, but found std " + std::to_string(std));
    Tensor t = make_random(shape, options, "normal");
    normal_(t, mean, std, gen);
    return finish(t, options);
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, FactoryOptions options, Generator* gen) {
    if (low >= high)
        fail("randint", "expects 'low' to be less than 'high', but got low=" + std::to_string(low) +
                            " >= high=" + std::to_string(high));
    Tensor t = make_random(shape, options, "randint");
    random_(t, low, high, gen);
    return finish(t, options);
}

Tensor randint(std::int64_t high, const Shape& shape, FactoryOptions options, Generator* gen) {
    return randint(0, high, shape, options, gen);
}

Tensor randperm(std::int64_t n, FactoryOptions options, Generator* gen) {
    if (n < 0) fail("randperm", "n must be non-negative, got " + std::to_string(n));
    if (options.dtype() == kFloat32 && n > (1LL << 24))
        fail("randperm", "n = " + std::to_string(n) + " is too large for float32 (at most 2^24)");
    Tensor t = make_random(Shape{n}, options, "randperm");
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    // Fisher–Yates from the front, one 32-bit draw per step (PyTorch's CPU algorithm for small n).
    std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), std::int64_t{0});
    for (std::int64_t i = 0; i + 1 < n; ++i) {
        auto z = static_cast<std::int64_t>(g.random() % static_cast<std::uint64_t>(n - i));
        std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(z + i)]);
    }
    detail::dispatch_all(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* out = t.impl()->template data<T>();
        for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(perm[static_cast<std::size_t>(i)]);
    });
    return finish(t, options);
}

Tensor rand_like(const Tensor& other, Generator* gen) {
    detail::check_defined(other, "rand_like");
    check_floating(other.dtype(), "rand_like");
    Tensor t = empty_like_layout(other, other.dtype());
    return uniform_(t, 0.0, 1.0, gen).to(other.device());
}

Tensor randn_like(const Tensor& other, Generator* gen) {
    detail::check_defined(other, "randn_like");
    check_floating(other.dtype(), "randn_like");
    Tensor t = empty_like_layout(other, other.dtype());
    return normal_(t, 0.0, 1.0, gen).to(other.device());
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
    detail::check_defined(p, "bernoulli");
    check_floating(p.dtype(), "bernoulli");
    Generator& g = pick(gen);
    std::lock_guard<std::mutex> lock(g.mutex());
    Tensor out = detail::make_empty(p.shape(), p.dtype());  // contiguous, as torch.bernoulli's
    detail::dispatch_float(p.dtype(), "bernoulli", [&](auto tag) {
        using T = decltype(tag);
        const std::vector<T> probs = p.to_vector<T>();
        for (T v : probs)
            if (!(v >= 0 && v <= 1))
                fail("bernoulli", "expects all probabilities to be in [0, 1], got " + std::to_string(v));
        // A float probability is compared with a float uniform, a double one with a double uniform.
        for_each_in_memory_order<T>(out, [&](T* o, std::int64_t i) {
            *o = uniform_value<T>(g, T(0), T(1)) < probs[static_cast<std::size_t>(i)] ? T(1) : T(0);
        });
    });
    return out.to(p.device());
}

Tensor bernoulli(const Tensor& input, double p, Generator* gen) {
    detail::check_defined(input, "bernoulli");
    Tensor out = detail::make_empty(input.shape(), input.dtype());  // contiguous, as torch.bernoulli's
    return bernoulli_(out, p, gen).to(input.device());
}

// ---- multinomial -----------------------------------------------------------------------------------

namespace {

/// Throws unless every probability is finite and >= 0 and each row has a positive entry: the checks
/// of PyTorch's exponential-race path, made before anything is drawn.
template <typename T>
void check_race_probabilities(const std::vector<T>& p, std::int64_t rows, std::int64_t categories) {
    for (T v : p)
        if (!(v >= 0 && v < std::numeric_limits<T>::infinity()))
            fail("multinomial",
                 "probability tensor contains either `inf`, `nan` or element < 0 (found " + std::to_string(v) + ")");
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto* row = p.data() + r * categories;
        if (std::all_of(row, row + categories, [](T v) { return v == T(0); }))
            fail("multinomial",
                 "invalid multinomial distribution (sum of probabilities <= 0) in row " + std::to_string(r));
    }
}

/// The checks of PyTorch's with-replacement kernel (an entry < 0, or NaN, is reported as "< 0", as
/// there), made for every row before anything is drawn.
template <typename T>
void check_cumulative_probabilities(const std::vector<T>& p, std::int64_t rows, std::int64_t categories) {
    for (std::int64_t r = 0; r < rows; ++r) {
        T sum = 0;
        for (std::int64_t j = 0; j < categories; ++j) {
            const T v = p[static_cast<std::size_t>(r * categories + j)];
            if (!(v >= 0))
                fail("multinomial", "invalid multinomial distribution (encountering probability entry < 0: " +
                                        std::to_string(v) + ")");
            if (!std::isfinite(v))
                fail("multinomial",
                     "invalid multinomial distribution (encountering probability entry = infinity "
                     "or NaN)");
            sum += v;
        }
        if (!(sum > 0))
            fail("multinomial",
                 "invalid multinomial distribution (sum of probabilities <= 0) in row " + std::to_string(r));
    }
}

}  // namespace

Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement, Generator* gen) {
    const char* op = "multinomial";
    detail::check_defined(probs, op);
    if (probs.dim() < 1 || probs.dim() > 2)
        fail(op, "prob_dist must be 1 or 2 dim, got shape " + to_string(probs.shape()));
    if (!is_floating_point(probs.dtype()))
        fail(op, "only supports floating-point dtypes for input, got " + to_string(probs.dtype()));
    if (num_samples <= 0) fail(op, "cannot sample n_sample <= 0 samples (got " + std::to_string(num_samples) + ")");
    const std::int64_t categories = probs.size(-1), rows = probs.dim() == 2 ? probs.size(0) : 1;
    if (!replacement && num_samples > categories)
        fail(op, "cannot sample n_sample > prob_dist.size(-1) samples without replacement (" +
                     std::to_string(num_samples) + " > " + std::to_string(categories) + ")");
    if (categories > (std::int64_t{1} << 24))
        fail(op, "number of categories cannot exceed 2^24, got " + std::to_string(categories));
    Tensor out = detail::make_empty(probs.dim() == 1 ? Shape{num_samples} : Shape{rows, num_samples}, kInt64);
    if (out.numel() == 0) return out.to(probs.device());
    const Tensor p = probs.device().is_cpu() ? probs : probs.cpu();  // drawn by the CPU generator
    auto* result = out.impl()->data<std::int64_t>();
    Generator& g = pick(gen);
    detail::dispatch_float(p.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        const std::vector<T> values = p.to_vector<T>();  // row-major
        if (!replacement) {
            check_race_probabilities(values, rows, categories);
            // q = p / Exp(1), the exponentials drawn in p's memory order (PyTorch's empty_like(p)).
            Tensor q = empty_like_layout(p, p.dtype());
            {
                std::lock_guard<std::mutex> lock(g.mutex());
                for_each_in_memory_order<T>(q, [&](T* e, std::int64_t i) {
                    *e = values[static_cast<std::size_t>(i)] / static_cast<T>(exponential_double(g, 1.0));
                });
            }
            if (num_samples > 1) {  // PyTorch's topk, whose order of equal (zero) weights Tensor::topk keeps
                const Tensor picked = q.topk(num_samples, -1).indices.contiguous();
                std::copy_n(picked.impl()->data<std::int64_t>(), out.numel(), result);
                return;
            }
            const Tensor best = q.argmax(-1).contiguous();  // the first largest, NaN above all
            std::copy_n(best.impl()->data<std::int64_t>(), out.numel(), result);
            return;
        }
        check_cumulative_probabilities(values, rows, categories);
        std::vector<T> cumulative(static_cast<std::size_t>(categories));
        std::lock_guard<std::mutex> lock(g.mutex());
        for (std::int64_t r = 0; r < rows; ++r) {
            T sum = 0;
            for (std::int64_t j = 0; j < categories; ++j) {
                sum += values[static_cast<std::size_t>(r * categories + j)];
                cumulative[static_cast<std::size_t>(j)] = sum;
            }
            for (T& c : cumulative) c /= sum;
            cumulative.back() = T(1);
            for (std::int64_t s = 0; s < num_samples; ++s) {
                const double u = uniform_double(g);
                // The first slot whose cumulative probability is not below u.
                std::int64_t lo = 0, hi = categories;
                while (hi - lo > 0) {
                    const std::int64_t mid = lo + (hi - lo) / 2;
                    if (static_cast<double>(cumulative[static_cast<std::size_t>(mid)]) < u)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                result[r * num_samples + s] = lo;
            }
        }
    });
    return out.to(probs.device());
}

}  // namespace xgrad
