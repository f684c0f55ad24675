// PyTorch's CPU summation order (its AVX2 cascade sums), shared by the CPU kernels that sum.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace xgrad::kernels::cpu {

// ---- PyTorch's summation order ------------------------------------------------------------------
// PyTorch's CPU sum (the cascade sum of its AVX2 kernels) adds float32 and float64 in their own
// precision, in an order fixed by the shape. xgrad adds in the same order, so sums and means are
// bit-identical to PyTorch's: the notebooks print means of normalised rows, which are pure rounding
// noise (2.4835e-09) and depend on every bit. Exact for one reduction of up to 32768 elements;
// beyond that PyTorch may split the work between threads. A contiguous input's other layouts are
// summed in the inner order after a permutation; a strided one (permuted, sliced, broadcast) in 2-D
// blocks in its TensorIterator's order (block_sums).

/// Elements of one AVX2 register: the width of PyTorch's vector accumulators.
template <typename T>
constexpr int kLanes = static_cast<int>(32 / sizeof(T));

/// W accumulators added lane by lane, like one vector register.
template <typename T, int W>
struct Lanes {
    T v[W] = {};
    Lanes& operator+=(const Lanes& o) {
        for (int i = 0; i < W; ++i) v[i] += o.v[i];
        return *this;
    }
    static Lanes load(const T* p) {
        Lanes l;
        for (int i = 0; i < W; ++i) l.v[i] = p[i];
        return l;
    }
};

inline std::int64_t ceil_log2(std::int64_t x) {
    std::int64_t r = 0;
    while ((std::int64_t{1} << r) < x) ++r;
    return r;
}

/// Sums `size` rows of N accumulators (`get(i, k)`: row i, column k) in a cascade: partial sums move
/// up one of four levels every 2^power rows, so that only numbers of similar magnitude are added.
template <typename Acc, int N, typename Get>
std::array<Acc, N> cascade_sum(std::int64_t size, Get&& get) {
    constexpr int levels = 4;
    const std::int64_t power = std::max<std::int64_t>(4, ceil_log2(size) / levels);
    const std::int64_t step = std::int64_t{1} << power, mask = step - 1;
    std::array<std::array<Acc, N>, levels> acc{};
    std::int64_t i = 0;
    while (i + step <= size) {
        for (std::int64_t j = 0; j < step; ++j, ++i)
            for (int k = 0; k < N; ++k) acc[0][k] += get(i, k);
        for (int j = 1; j < levels; ++j) {
            for (int k = 0; k < N; ++k) {
                acc[j][k] += acc[j - 1][k];
                acc[j - 1][k] = Acc{};
            }
            if ((i & (mask << (j * power))) != 0) break;
        }
    }
    for (; i < size; ++i)
        for (int k = 0; k < N; ++k) acc[0][k] += get(i, k);
    for (int j = 1; j < levels; ++j)
        for (int k = 0; k < N; ++k) acc[0][k] += acc[j][k];
    return acc[0];
}

/// A row of `size` elements (`get(i)`) as four interleaved cascades, the tail added to the first,
/// then the four combined in order.
template <typename Acc, typename Get>
Acc interleaved_sum(std::int64_t size, Get&& get) {
    const std::int64_t quads = size / 4;
    auto part = cascade_sum<Acc, 4>(quads, [&](std::int64_t i, int k) { return get(i * 4 + k); });
    for (std::int64_t i = quads * 4; i < size; ++i) part[0] += get(i);
    for (int k = 1; k < 4; ++k) part[0] += part[k];
    return part[0];
}

/// cascade_sum<Lanes<T, W>, 4> over `rows` rows of four registers (128 bytes) at x + i * stride, into
/// out (4 * W values), by vec_math's vectorised kernel. Large inputs are split between threads at the
/// top level of the cascade (whole blocks of 2^(3 power) rows, which start and end with the lower
/// levels empty); the blocks' sums are then added in order, as the serial loop adds them, so the bits
/// do not depend on the number of threads.
template <typename T>
void quad_cascade(const T* x, std::int64_t rows, std::int64_t stride, T* out, bool square = false) {
    constexpr int kQuad = 4 * kLanes<T>;
    const int power = static_cast<int>(std::max<std::int64_t>(4, ceil_log2(rows) / 4));
    const std::int64_t block = std::int64_t{1} << (3 * power), blocks = rows / block;
    if (blocks < 2 || num_threads() == 1 || in_parallel_region()) {
        sum_cascade(x, rows, stride, power, out, square);
        return;
    }
    std::vector<T> part(static_cast<std::size_t>(blocks * kQuad));
    parallel_for(0, blocks, 1, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t b = lo; b < hi; ++b)
            sum_cascade(x + b * block * stride, block, stride, power, &part[b * kQuad], square);
    });
    T top[kQuad] = {};
    for (std::int64_t b = 0; b < blocks; ++b)
        for (int k = 0; k < kQuad; ++k) top[k] += part[b * kQuad + k];
    // The rows after the last block never reach the top level: their cascade ends with its lower levels
    // added together, and the top level comes last, as in the serial loop.
    sum_cascade(x + blocks * block * stride, rows - blocks * block, stride, power, out, square);
    for (int k = 0; k < kQuad; ++k) out[k] += top[k];
}

/// inner_sum's last steps, after its groups of four registers: the registers from `i` on added to the
/// first of part's four, the first `used` of them combined in order, then the scalar tail and the
/// first register's lanes added in order to a total that starts at +0.
template <typename T, typename At>
T finish_inner_sum(T* part, int used, std::int64_t i, std::int64_t n, At&& at) {
    constexpr int W = kLanes<T>;
    const std::int64_t vectors = n / W;
    for (; i < vectors; ++i)
        for (int k = 0; k < W; ++k) part[k] += at(i * W + k);
    for (int r = 1; r < used; ++r)
        for (int k = 0; k < W; ++k) part[k] += part[r * W + k];
    T total = 0;
    for (std::int64_t k = vectors * W; k < n; ++k) total += at(k);
    for (int k = 0; k < W; ++k) total += part[k];
    return total;
}

/// The sum of a contiguous row, in PyTorch's order: vector accumulators for rows of at least one
/// register, the scalar tail first and then the lanes in order; a scalar cascade for shorter rows.
/// With kSquare, the sum of the squares (each rounded to T): PyTorch's x.pow(2).sum(-1).
template <typename T, bool kSquare = false>
T inner_sum(const T* x, std::int64_t n) {
    constexpr int W = kLanes<T>;
    const auto at = [x](std::int64_t i) { return kSquare ? x[i] * x[i] : x[i]; };
    if (n < W) return interleaved_sum<T>(n, at);
    // interleaved_sum over registers: four interleaved cascades, the registers after the last group
    // of four added to the first, then the four combined in order.
    const std::int64_t vectors = n / W, quads = vectors / 4;
    T part[4 * W];
    std::int64_t i = 0;  // registers summed so far
    int used = 4;        // registers of part that hold sums
    if (quads >= 16) {
        std::fill(part, part + 4 * W, T(0));
        quad_cascade(x, quads, 4 * W, part, kSquare);
        i = quads * 4;
    } else if (quads > 0) {
        // Fewer groups than the cascade's first step (2^4): they all go to its first level, in order
        // (its three upper levels stay empty). That level starts at +0; here it starts at the first
        // group itself. The sums can then differ only in the sign of a zero (while every element so far
        // is -0), and `total` below starts at +0, which takes that sign away: the same bits. Inline and
        // without zeroing the array first (GCC's rep stos): the sums of rows of 48 floats took four
        // times as long through the cascade kernel.
        for (int k = 0; k < 4 * W; ++k) part[k] = at(k);
        for (std::int64_t q = 1; q < quads; ++q)
            for (int k = 0; k < 4 * W; ++k) part[k] += at(q * 4 * W + k);
        i = quads * 4;
    } else {
        // No group: the registers go to the first of four zero sums (the others add nothing, as
        // above), which starts at the first register.
        for (int k = 0; k < W; ++k) part[k] = at(k);
        i = 1;
        used = 1;
    }
    return finish_inner_sum<T>(part, used, i, n, at);
}

/// inner_sum<T, kSquare> of each of `rows` contiguous rows of n elements into out: vec_math's
/// sum_rows_serial (one loop over the rows) where inner_sum never splits a row between threads, else
/// inner_sum row by row.
template <typename T, bool kSquare = false>
void row_sums(const T* x, std::int64_t rows, std::int64_t n, T* out) {
    if (n < kSerialRowMax<T>) return sum_rows_serial(x, rows, n, out, kSquare);
    for (std::int64_t r = 0; r < rows; ++r) out[r] = inner_sum<T, kSquare>(x + r * n, n);
}

/// inner_sum<T> of a row of n elements at(i) whose whole groups of four registers (n / (4W) of them)
/// were summed already by sum_cascade's cascade into quad_sums (4W values, zeros for no group), as
/// vec_math's rms_norm_row_terms does on the fly: the same bits as inner_sum over the stored elements.
/// (inner_sum starts short rows' sums at their first elements rather than at +0: that can change only
/// the sign of a zero sum, which its total, starting at +0, takes away.)
template <typename T, typename At>
T inner_sum_from_quads(T* quad_sums, std::int64_t n, At&& at) {
    constexpr int W = kLanes<T>;
    if (n < W) return interleaved_sum<T>(n, at);
    return finish_inner_sum<T>(quad_sums, 4, n / (4 * W) * 4, n, at);
}

/// Column sums of a (rows × cols) block whose rows are `ld` elements apart (cols for a contiguous
/// block, 0 for one row broadcast down the block) and whose columns are contiguous, in PyTorch's order
/// for reductions over leading dimensions: blocks of four registers of columns share a cascade, then
/// single registers, then single columns; with fewer columns than a register, groups of four scalar
/// columns. Blocks of columns are split between threads.
template <typename T>
void outer_sum(const T* x, std::int64_t rows, std::int64_t cols, T* out, std::int64_t ld) {
    constexpr int W = kLanes<T>;
    using L = Lanes<T, W>;
    if (cols == 1 && ld == 1) {  // PyTorch sees a contiguous inner reduction here
        out[0] = inner_sum(x, rows);
        return;
    }
    std::int64_t j = 0;
    auto column = [&](std::int64_t c) {
        return interleaved_sum<T>(rows, [&](std::int64_t i) { return x[i * ld + c]; });
    };
    if (cols >= W) {
        const std::int64_t quads = cols / (4 * W);
        parallel_for(0, quads, std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(1, rows * 4 * W)),
                     [&](std::int64_t lo, std::int64_t hi) {
                         for (std::int64_t q = lo; q < hi; ++q) quad_cascade(x + q * 4 * W, rows, ld, out + q * 4 * W);
                     });
        j = quads * 4 * W;
        for (; j + W <= cols; j += W) {
            L s = interleaved_sum<L>(rows, [&](std::int64_t i) { return L::load(x + i * ld + j); });
            std::copy(s.v, s.v + W, out + j);
        }
    } else {
        for (; j + 3 < cols; j += 4) {
            auto s = cascade_sum<T, 4>(rows, [&](std::int64_t i, int k) { return x[i * ld + j + k]; });
            std::copy(s.begin(), s.end(), out + j);
        }
    }
    for (; j < cols; ++j) out[j] = column(j);
}

/// Column sums of a contiguous (rows × cols) block (outer_sum with rows `cols` apart).
template <typename T>
void outer_sum(const T* x, std::int64_t rows, std::int64_t cols, T* out) {
    outer_sum(x, rows, cols, out, cols);
}

/// The sums of one 2-D block of PyTorch's CPU sum (its cascade_sum's loop body): `size1` sums of
/// `size0` elements each, sum j of x[j * a1 + i * a0] for i < size0, into s[j]. The kernel, and so the
/// order, follows from the strides as PyTorch chooses it: rows contiguous and at least a register long,
/// inner_sum; sums contiguous to each other (and at least a register of them), outer_sum; otherwise
/// scalar code along the smaller stride (four interleaved cascades) or across four sums at a time (one
/// cascade each, shared). Strides may be 0 (a broadcast input); sums that read the same elements in
/// the same order are computed once.
template <typename T>
void block_sums(const T* x, std::int64_t size0, std::int64_t size1, std::int64_t a0, std::int64_t a1, T* s) {
    constexpr int W = kLanes<T>;
    const std::int64_t grain = std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(size0, 1));
    // Four interleaved cascades along sum j (one element read size0 times when a0 is 0).
    auto strided = [&](std::int64_t j) {
        const T* p = x + j * a1;
        if (a0 == 0) return interleaved_sum<T>(size0, [v = *p](std::int64_t) { return v; });
        return interleaved_sum<T>(size0, [p, a0](std::int64_t i) { return p[i * a0]; });
    };
    if (a0 == 1 && size0 >= W) {
        if (a1 == 0) {
            std::fill(s, s + size1, inner_sum(x, size0));
            return;
        }
        parallel_for(0, size1, grain, [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t j = lo; j < hi; ++j) s[j] = inner_sum(x + j * a1, size0);
        });
    } else if (a1 == 1 && size1 >= W) {
        outer_sum(x, size0, size1, s, a0);
    } else if (a0 < a1) {
        parallel_for(0, size1, grain, [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t j = lo; j < hi; ++j) s[j] = strided(j);
        });
    } else {
        // Four sums share a cascade (each its own accumulators), the last size1 % 4 interleaved.
        const std::int64_t groups = size1 / 4;
        auto group = [&](std::int64_t j) {
            auto g = cascade_sum<T, 4>(size0, [&](std::int64_t i, int k) { return x[(j + k) * a1 + i * a0]; });
            std::copy(g.begin(), g.end(), s + j);
        };
        if (a1 == 0 && groups > 0) {
            const T g = cascade_sum<T, 1>(size0, [&](std::int64_t i, int) { return x[i * a0]; })[0];
            std::fill(s, s + groups * 4, g);
        } else {
            parallel_for(0, groups, std::max<std::int64_t>(1, grain / 4), [&](std::int64_t lo, std::int64_t hi) {
                for (std::int64_t q = lo; q < hi; ++q) group(q * 4);
            });
        }
        for (std::int64_t j = groups * 4; j < size1; ++j) s[j] = strided(j);
    }
}

/// outer_sum's order for column sums whose rows arrive one at a time, possibly from several threads:
/// a row's values are added into its slots (row_slots), each slot a level-0 partial sum of the
/// cascade that outer_sum runs down its column, and finish() runs the rest of each cascade over the
/// slots. The slots start at +0 and take their rows in order, as the cascade's first level does, so
/// the result is outer_sum's bits whichever thread adds which rows, as long as each thread's rows
/// start at a multiple of align() and the rows of one slot are added in order.
///
/// The columns outer_sum sums with one cascade each (the first `cascaded` ones: whole groups of four
/// registers, or of four columns when there are fewer than a register) get a slot per 2^power rows.
/// The others (four cascades interleaved over the rows, then the last rows % 4) get four slots per
/// 4·2^power' rows, and the last rows get one slot each. A single column is a contiguous sum
/// (inner_sum) of its slots, one per row.
template <typename T>
class ColumnSums {
public:
    ColumnSums(std::int64_t rows, std::int64_t cols) : rows_(rows), cols_(cols) {
        constexpr int W = kLanes<T>;
        cascaded_ = cols >= W ? cols / (4 * W) * (4 * W) : cols / 4 * 4;
        power_ = static_cast<int>(std::max<std::int64_t>(4, ceil_log2(rows) / 4));
        quads_ = rows / 4;
        power_i_ = static_cast<int>(std::max<std::int64_t>(4, ceil_log2(quads_) / 4));
        if (cols == 1) {
            cascaded_ = 1;
            slots_c_ = rows;
        } else {
            slots_c_ = (rows >> power_) + 1;
        }
        slots_i_ = cols > cascaded_ ? ((quads_ >> power_i_) + 1) * 4 + 3 : 0;
    }

    /// Elements of the slot buffer, which must start as zeros.
    std::int64_t size() const { return slots_c_ * cascaded_ + slots_i_ * (cols_ - cascaded_); }

    /// The first `cascaded()` columns are summed with one cascade each; the others interleaved.
    std::int64_t cascaded() const { return cascaded_; }

    /// Threads' rows must start at multiples of this.
    std::int64_t align() const {
        if (cols_ == 1) return 1;
        const std::int64_t c = std::int64_t{1} << power_;
        return cols_ > cascaded_ ? std::max(c, std::int64_t{4} << power_i_) : c;
    }

    /// Where row i's values go: column j's slot is c[j] for j < cascaded(), i[j] for j >= cascaded().
    std::pair<T*, T*> row_slots(T* buf, std::int64_t i) const {
        T* c = buf + (cols_ == 1 ? i : i >> power_) * cascaded_;
        T* rest = buf + slots_c_ * cascaded_ - cascaded_;  // so that rest[j] is column j's (j >= cascaded)
        const std::int64_t width = cols_ - cascaded_;
        const std::int64_t slot =
            i < quads_ * 4 ? ((i >> 2) >> power_i_) * 4 + (i & 3) : ((quads_ >> power_i_) + 1) * 4 + (i - quads_ * 4);
        return {c, rest + slot * width};
    }

    /// The column sums, from the slots every row has been added into.
    void finish(const T* buf, T* out) const {
        if (cols_ == 1) {
            out[0] = inner_sum(buf, rows_);
            return;
        }
        if (cascaded_ > 0) combine(buf, rows_ >> power_, power_, cascaded_, cascaded_, out);
        const std::int64_t width = cols_ - cascaded_;
        if (width == 0) return;
        const T* rest = buf + slots_c_ * cascaded_;
        std::vector<T> part(static_cast<std::size_t>(4 * width));
        // Part k's slots are every fourth, from k.
        for (int k = 0; k < 4; ++k)
            combine(rest + k * width, quads_ >> power_i_, power_i_, width, 4 * width, &part[k * width]);
        T* p0 = part.data();
        const T* tail = rest + ((quads_ >> power_i_) + 1) * 4 * width;
        for (std::int64_t t = 0; t < rows_ - quads_ * 4; ++t)
            for (std::int64_t j = 0; j < width; ++j) p0[j] += tail[t * width + j];
        for (int k = 1; k < 4; ++k)
            for (std::int64_t j = 0; j < width; ++j) p0[j] += part[k * width + j];
        std::copy(p0, p0 + width, out + cascaded_);
    }

private:
    /// cascade_sum's upper levels over `full` level-0 sums (whole 2^power rows, `width` values each, `ld`
    /// apart), then the partial one after them: into out.
    static void combine(const T* slot, std::int64_t full, int power, std::int64_t width, std::int64_t ld, T* out) {
        const std::int64_t mask = (std::int64_t{1} << power) - 1;
        std::vector<T> up(static_cast<std::size_t>(3 * width), T(0));
        T *a1 = up.data(), *a2 = a1 + width, *a3 = a2 + width;
        for (std::int64_t b = 0; b < full; ++b) {
            const T* s = slot + b * ld;
            for (std::int64_t j = 0; j < width; ++j) a1[j] += s[j];
            const std::int64_t done = (b + 1) << power;
            if ((done & (mask << power)) != 0) continue;
            for (std::int64_t j = 0; j < width; ++j) {
                a2[j] += a1[j];
                a1[j] = T(0);
            }
            if ((done & (mask << (2 * power))) != 0) continue;
            for (std::int64_t j = 0; j < width; ++j) {
                a3[j] += a2[j];
                a2[j] = T(0);
            }
        }
        const T* partial = slot + full * ld;
        for (std::int64_t j = 0; j < width; ++j) out[j] = ((partial[j] + a1[j]) + a2[j]) + a3[j];
    }

    std::int64_t rows_, cols_, cascaded_ = 0, quads_ = 0, slots_c_ = 0, slots_i_ = 0;
    int power_ = 4, power_i_ = 4;
};

}  // namespace xgrad::kernels::cpu
