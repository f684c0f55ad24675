// Random tensors whose values are bit-identical to PyTorch's CPU generator for the same seed.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "xgrad/shape.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

namespace detail {
/// A mutex that a copyable class can hold: a copy gets a fresh, unlocked mutex.
struct CopyableMutex {
    std::mutex mutex;
    CopyableMutex() = default;
    CopyableMutex(const CopyableMutex&) {}
    CopyableMutex& operator=(const CopyableMutex&) { return *this; }
};

/// The 32-bit Mersenne Twister MT19937: the stream of std::mt19937 and of PyTorch's CPU generator,
/// kept in 32-bit words (libstdc++'s std::mt19937 keeps 64-bit ones on x86-64, and its refill of the
/// 624 words ran at half PyTorch's speed).
class Mt19937 {
public:
    /// The number of 32-bit words of state.
    static constexpr int kWords = 624;
    /// Seeded as std::mt19937(seed).
    explicit Mt19937(std::uint32_t seed = 5489u) { seed_with(seed); }
    /// Reseeds, as std::mt19937::seed(seed).
    void seed_with(std::uint32_t seed) {
        words_[0] = seed;
        for (int i = 1; i < kWords; ++i)
            words_[i] = 1812433253u * (words_[i - 1] ^ (words_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
        next_ = kWords;
    }
    /// The next 32-bit draw.
    std::uint32_t operator()() {
        if (next_ >= kWords) refill();
        std::uint32_t y = words_[next_++];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        return y ^ (y >> 18);
    }
    /// The state words, as std::mt19937 writes them to a stream.
    const std::uint32_t* words() const { return words_; }
    /// The index of the word the next draw tempers (kWords: the words are refilled first).
    int position() const { return next_; }
    /// Sets the words and the position (0 to kWords), as std::mt19937 reads them from a stream.
    void set(const std::uint32_t* words, int position) {
        for (int i = 0; i < kWords; ++i) words_[i] = words[i];
        next_ = position;
    }
    /// Equal when both will draw the same stream (the same words and position, as std::mt19937's ==).
    friend bool operator==(const Mt19937& a, const Mt19937& b) {
        if (a.next_ != b.next_) return false;
        for (int i = 0; i < kWords; ++i)
            if (a.words_[i] != b.words_[i]) return false;
        return true;
    }

private:
    void refill();  // the twist of all 624 words (random.cpp)
    std::uint32_t words_[kWords];
    int next_ = kWords;
};

}  // namespace detail

/// A source of random numbers with PyTorch's CPU generator state: a 32-bit Mersenne Twister plus
/// the second value of the last double-precision Box–Muller pair, kept for the next normal draw.
///
/// Every random function locks the generator's mutex for its whole draw, as PyTorch does, so
/// threads may share one (the default generator included; modules built in two threads at once
/// then each get a consistent block of the stream, in whichever order the threads come). Calls of
/// `random()` / `random64()` made directly are not locked: hold `mutex()` around them when the
/// generator is shared. Copying a generator copies its state, so the copy replays the same stream
/// (as `torch.Generator.get_state` / `set_state`).
///
/// ```cpp
/// xgrad::Generator gen(42);
/// auto a = xgrad::rand({3}, {}, &gen);     // torch.rand(3, generator=torch.Generator().manual_seed(42))
/// ```
class Generator {
public:
    /// PyTorch's default seed, 67280421310721, which libtorch's CPU generator starts from.
    static constexpr std::uint64_t kDefaultSeed = 67280421310721ULL;

    /// A generator seeded with kDefaultSeed.
    Generator() : Generator(kDefaultSeed) {}
    /// A generator seeded with `seed`, as `torch.Generator().manual_seed(seed)`.
    explicit Generator(std::uint64_t seed) { manual_seed(seed); }
    /// A copy of `other`'s state (taken under its lock): it replays the same stream.
    Generator(const Generator& other) {
        std::lock_guard<std::mutex> lock(other.mutex());
        engine_ = other.engine_;
        seed_ = other.seed_;
        next_normal_ = other.next_normal_;
    }
    /// Takes `other`'s state (under both locks).
    Generator& operator=(const Generator& other) {
        if (this != &other) {
            std::scoped_lock lock(mutex(), other.mutex());
            engine_ = other.engine_;
            seed_ = other.seed_;
            next_normal_ = other.next_normal_;
        }
        return *this;
    }

    /// Reseeds (only the low 32 bits reach the Mersenne Twister, as in PyTorch) and forgets any
    /// cached normal value; returns *this.
    Generator& manual_seed(std::uint64_t seed);
    /// Reseeds from a non-deterministic source and returns the new seed.
    std::uint64_t seed();
    /// The seed last set.
    std::uint64_t initial_seed() const { return seed_; }

    /// One 32-bit draw.
    std::uint32_t random() { return engine_(); }
    /// Two 32-bit draws joined into 64 bits, the first draw being the high word (as PyTorch).
    std::uint64_t random64() {
        std::uint64_t hi = random();
        return (hi << 32) | random();
    }

    /// The cached second normal of the last double Box–Muller pair, if any.
    std::optional<double> next_double_normal_sample() const { return next_normal_; }
    /// Sets or clears the cached normal.
    void set_next_double_normal_sample(std::optional<double> value) { next_normal_ = value; }
    /// The state as PyTorch 1.13's `Generator.get_state()` bytes (5056 of them, the layout of libtorch's
    /// `THGeneratorStateNew` on a little-endian 64-bit machine): seed, Mersenne Twister words and
    /// position, and the cached normal. PyTorch's `torch.get_rng_state()` after the same draws gives
    /// the same bytes, and set_state() takes PyTorch's. xgrad has no uint8 dtype, so the state is a
    /// byte vector rather than a tensor.
    std::vector<std::uint8_t> get_state() const;
    /// Restores a get_state() (or PyTorch's 5056- or legacy 5048-byte state); the stream then continues
    /// exactly where the saved one was. Throws std::invalid_argument for another size or an invalid
    /// position, leaving the generator as it was.
    void set_state(const std::vector<std::uint8_t>& state);
    /// The mutex every random function holds while it draws from this generator.
    std::mutex& mutex() const { return mutex_.mutex; }
    /// Equal when both will produce the same stream (same engine state and cached normal).
    friend bool operator==(const Generator& a, const Generator& b) {
        if (&a == &b) return true;
        std::scoped_lock lock(a.mutex(), b.mutex());
        return a.engine_ == b.engine_ && a.seed_ == b.seed_ && a.next_normal_ == b.next_normal_;
    }

private:
    detail::Mt19937 engine_;
    std::uint64_t seed_ = kDefaultSeed;
    std::optional<double> next_normal_;
    mutable detail::CopyableMutex mutex_;
};

/// The generator every random function uses when given none (PyTorch's `torch.default_generator`).
Generator& default_generator();
/// Seeds the default generator, as `torch.manual_seed(seed)`; returns it.
///
/// ```cpp
/// xgrad::manual_seed(123);
/// auto x = xgrad::randn({2, 5});   // the same numbers as torch.randn(2, 5) after torch.manual_seed(123)
/// ```
Generator& manual_seed(std::uint64_t seed);
/// The seed the default generator was last given.
std::uint64_t initial_seed();
/// The default generator's state, as `torch.get_rng_state()` (its bytes; see Generator::get_state).
///
/// ```cpp
/// auto saved = xgrad::get_rng_state();
/// auto a = xgrad::randn({3});
/// xgrad::set_rng_state(saved);
/// auto b = xgrad::randn({3});   // the same values as a
/// ```
std::vector<std::uint8_t> get_rng_state();
/// Restores the default generator's state, as `torch.set_rng_state(state)`.
void set_rng_state(const std::vector<std::uint8_t>& state);

/// Uniform values in [0, 1), as `torch.rand`; float32 or float64.
Tensor rand(const Shape& shape, FactoryOptions options = {}, Generator* gen = nullptr);
/// Standard normal values, as `torch.randn`; float32 or float64.
Tensor randn(const Shape& shape, FactoryOptions options = {}, Generator* gen = nullptr);
/// Integers uniform in [low, high), as `torch.randint(low, high, shape)`; int64 unless `options`
/// say otherwise.
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, FactoryOptions options = kInt64,
               Generator* gen = nullptr);
/// Integers uniform in [0, high), as `torch.randint(high, shape)`.
Tensor randint(std::int64_t high, const Shape& shape, FactoryOptions options = kInt64, Generator* gen = nullptr);
/// A random permutation of 0..n-1, as `torch.randperm(n)`; int64 unless `options` say otherwise.
Tensor randperm(std::int64_t n, FactoryOptions options = kInt64, Generator* gen = nullptr);
/// Values from N(mean, std²) of `shape`, as `torch.normal(mean, std, shape)`.
Tensor normal(double mean, double std, const Shape& shape, FactoryOptions options = {}, Generator* gen = nullptr);
/// rand with other's shape and dtype.
Tensor rand_like(const Tensor& other, Generator* gen = nullptr);
/// randn with other's shape and dtype.
Tensor randn_like(const Tensor& other, Generator* gen = nullptr);
/// 1 with probability `p[i]`, else 0, for each element of `p`; the result has p's shape and dtype
/// (`torch.bernoulli(p)`).
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
/// 1 with probability `p`, else 0, in input's shape and dtype (`torch.bernoulli(input, p)`).
Tensor bernoulli(const Tensor& input, double p, Generator* gen = nullptr);

/// Indices drawn from the categorical distribution in each row of `probs` (1-D: one distribution;
/// 2-D: one per row), as `torch.multinomial(probs, num_samples, replacement)`: int64, shaped
/// (num_samples) or (rows, num_samples). The weights need not sum to one; they must be finite and
/// non-negative, with a positive entry in each row. Without replacement, num_samples may not exceed
/// the number of categories, and a zero weight is drawn only once every positive one has been.
///
/// The draws are PyTorch 1.13's CPU ones for the same seed (its exponential race without replacement,
/// its cumulative search with replacement), so a seeded sampling loop prints the
/// same indices. A CUDA `probs` is sampled on the CPU and the indices copied back.
///
/// ```cpp
/// xgrad::manual_seed(0);
/// Tensor next = xgrad::multinomial(F::softmax(logits, -1), 1);   // one token per row of logits
/// Tensor draws = xgrad::multinomial(xgrad::tensor({0.1, 0.2, 0.7}), 10, /*replacement=*/true);
/// ```
Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement = false, Generator* gen = nullptr);

// In-place fills. They write straight into storage and record nothing; like PyTorch they refuse a
// leaf that requires grad unless a NoGradGuard is alive (nn::init holds one for you).

/// Fills `self` with values uniform in [from, to), as `self.uniform_(from, to)`; returns `self`.
Tensor& uniform_(Tensor& self, double from = 0.0, double to = 1.0, Generator* gen = nullptr);
/// Fills `self` with values from N(mean, std²), as `self.normal_(mean, std)`; returns `self`.
Tensor& normal_(Tensor& self, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
/// Fills `self` with 1 (probability `p`) or 0, as `self.bernoulli_(p)`, the draw behind dropout.
Tensor& bernoulli_(Tensor& self, double p = 0.5, Generator* gen = nullptr);
/// Fills `self` with values from the exponential distribution of rate `lambd`, as
/// `self.exponential_(lambd)`: (-1 / lambd) * log(1 - u) for a double uniform u, PyTorch's values.
Tensor& exponential_(Tensor& self, double lambd = 1.0, Generator* gen = nullptr);
/// Fills `self` with integers uniform in [from, to), as `self.random_(from, to)`.
Tensor& random_(Tensor& self, std::int64_t from, std::int64_t to, Generator* gen = nullptr);

}  // namespace xgrad
