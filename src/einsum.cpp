// torch.einsum as a composite of views, sums and batched matmuls (so it differentiates and runs on every
// device without kernels of its own): the equation parsed and checked with PyTorch 1.13's messages,
// each operand laid out over one common list of dimensions (output dims first, then the summed ones),
// and the operands contracted left to right, each pair as one bmm.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail/tensor_impl.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

namespace {

constexpr int kLabels = 52;  // A-Z then a-z, PyTorch's order for the implicit output
constexpr int kEllipsis = -1;

[[noreturn]] void bad(const std::string& message) {
    throw std::invalid_argument("einsum(): " + message);
}

bool is_label(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

int label_index(char c) {
    return c <= 'Z' ? c - 'A' : c - 'a' + 26;
}

char label_char(int l) {
    return static_cast<char>(l < 26 ? 'A' + l : 'a' + l - 26);
}

void invalid_subscript(std::size_t at) {
    bad("invalid subscript given at index " + std::to_string(at) +
        " in the equation string, subscripts must be in [a-zA-Z]");
}

// Sums `t` over `dims` keeping them (as size 1); no-op for none.
Tensor sum_keep(const Tensor& t, const std::vector<std::int64_t>& dims) {
    return dims.empty() ? t : t.sum(Dims(dims), /*keepdim=*/true);
}

// Multiplies a and b (both laid out over the same P dims, broadcastable) and sums the dims `summed`,
// which stay as size 1: a bmm over (batch, a's own dims, summed) x (batch, summed, b's own dims), or,
// as PyTorch 1.13's sumproduct_pair, a plain product when no summed dim is left on both sides (its
// gradients are then sums, not matrix products).
Tensor contract_pair(Tensor a, Tensor b, const std::vector<bool>& summed) {
    const std::int64_t p = a.dim();
    std::vector<std::int64_t> pre_a, pre_b;  // summed dims that only one side has: summed first
    for (std::int64_t d = 0; d < p; ++d) {
        if (!summed[static_cast<std::size_t>(d)]) continue;
        if (a.size(d) != 1 && b.size(d) == 1) pre_a.push_back(d);
        if (b.size(d) != 1 && a.size(d) == 1) pre_b.push_back(d);
    }
    a = sum_keep(a, pre_a);
    b = sum_keep(b, pre_b);
    std::vector<std::int64_t> batch, lo, ro, sum, ones;
    for (std::int64_t d = 0; d < p; ++d) {
        const bool ha = a.size(d) != 1, hb = b.size(d) != 1;
        if (summed[static_cast<std::size_t>(d)] && ha && hb)
            sum.push_back(d);
        else if (ha && hb)
            batch.push_back(d);
        else if (ha)
            lo.push_back(d);
        else if (hb)
            ro.push_back(d);
        else
            ones.push_back(d);
    }
    if (sum.empty()) return a * b;
    auto numel = [](const Tensor& t, const std::vector<std::int64_t>& dims) {
        std::int64_t n = 1;
        for (std::int64_t d : dims) n *= t.size(d);
        return n;
    };
    auto order = [](std::initializer_list<const std::vector<std::int64_t>*> parts) {
        std::vector<std::int64_t> o;
        for (const auto* part : parts)
            for (std::int64_t d : *part) o.push_back(d);
        return o;
    };
    const std::int64_t nb = numel(a, batch), nl = numel(a, lo), ns = numel(a, sum), nr = numel(b, ro);
    // (B, LO, S) x (B, S, RO); the size-1 dims of each side ride along at the end of its permutation.
    Tensor a3 = a.permute(Dims(order({&batch, &lo, &sum, &ro, &ones}))).reshape({nb, nl, ns});
    Tensor b3 = b.permute(Dims(order({&batch, &sum, &ro, &lo, &ones}))).reshape({nb, ns, nr});
    Tensor c = a3.matmul(b3);  // (B, LO, RO)
    const std::vector<std::int64_t> placed = order({&batch, &lo, &ro, &sum, &ones});
    std::vector<std::int64_t> sizes;
    for (std::int64_t d : batch) sizes.push_back(a.size(d));
    for (std::int64_t d : lo) sizes.push_back(a.size(d));
    for (std::int64_t d : ro) sizes.push_back(b.size(d));
    sizes.resize(static_cast<std::size_t>(p), 1);
    std::vector<std::int64_t> inverse(static_cast<std::size_t>(p));
    for (std::int64_t i = 0; i < p; ++i) inverse[static_cast<std::size_t>(placed[static_cast<std::size_t>(i)])] = i;
    return c.reshape(Shape(sizes)).permute(Dims(inverse));
}

// The diagonal of dims d1 < d2 (equal sizes), in place of d1; d2 is removed. A strided view of the two
// dims merged, so its gradient lands on the diagonal only.
Tensor take_diagonal(const Tensor& t, std::int64_t d1, std::int64_t d2) {
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 0; d < t.dim(); ++d) {
        if (d == d2) continue;
        perm.push_back(d);
        if (d == d1) perm.push_back(d2);
    }
    const std::int64_t n = t.size(d1);
    std::vector<std::int64_t> merged;
    for (std::int64_t d = 0; d < t.dim(); ++d) {
        if (d == d2) continue;
        merged.push_back(d == d1 ? n * n : t.size(d));
    }
    return t.permute(Dims(perm)).reshape(Shape(merged)).slice(d1, {}, {}, n + 1);
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
    if (operands.empty()) bad("must specify the equation string and at least one operand");

    // ---- parse the inputs' subscripts: labels 0..51, kEllipsis for "..." ----
    const std::size_t arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    std::vector<std::vector<int>> subs(1);
    std::vector<bool> has_ellipsis(1, false);
    for (std::size_t i = 0; i < lhs.size(); ++i) {
        const char c = lhs[i];
        const std::size_t op = subs.size() - 1;
        if (c == ' ') continue;
        if (c == ',') {
            subs.emplace_back();
            has_ellipsis.push_back(false);
        } else if (c == '.') {
            if (has_ellipsis[op])
                bad("found '.' for operand " + std::to_string(op) + " for which an ellipsis was already found");
            if (i + 2 >= lhs.size() || lhs[i + 1] != '.' || lhs[i + 2] != '.')
                bad("found '.' for operand " + std::to_string(op) + " that is not part of any ellipsis");
            has_ellipsis[op] = true;
            subs[op].push_back(kEllipsis);
            i += 2;
        } else if (is_label(c)) {
            subs[op].push_back(label_index(c));
        } else {
            invalid_subscript(i);
        }
    }
    if (subs.size() < operands.size()) bad("more operands were provided than specified in the equation");
    if (subs.size() > operands.size()) bad("fewer operands were provided than specified in the equation");

    const DType dtype = operands[0].dtype();
    for (std::size_t i = 1; i < operands.size(); ++i) {
        if (operands[i].dtype() != dtype)
            bad("expected scalar type " + detail::scalar_type_name(dtype) + " but found " +
                detail::scalar_type_name(operands[i].dtype()) + " (operand " + std::to_string(i) + ")");
        if (operands[i].device() != operands[0].device())
            bad("expected all operands on one device, but operand 0 is on " + to_string(operands[0].device()) +
                " and operand " + std::to_string(i) + " on " + to_string(operands[i].device()));
    }

    // ---- dims per operand; how many the ellipsis covers ----
    std::array<int, kLabels> count{};
    std::int64_t ell_dims = 0;
    for (std::size_t i = 0; i < operands.size(); ++i) {
        const auto n = static_cast<std::int64_t>(subs[i].size()) - (has_ellipsis[i] ? 1 : 0);
        const std::int64_t nd = operands[i].dim();
        if (has_ellipsis[i]) {
            if (n > nd)
                bad("the number of subscripts in the equation (" + std::to_string(n) +
                    ") is more than the number of dimensions (" + std::to_string(nd) + ") for operand " +
                    std::to_string(i));
            ell_dims = std::max(ell_dims, nd - n);
        } else if (n != nd) {
            bad("the number of subscripts in the equation (" + std::to_string(n) +
                ") does not match the number of dimensions (" + std::to_string(nd) + ") for operand " +
                std::to_string(i) + " and no ellipsis was given");
        }
        for (int l : subs[i])
            if (l != kEllipsis) ++count[static_cast<std::size_t>(l)];
    }

    // ---- the output: explicit after "->", else the ellipsis then the labels seen once, sorted ----
    // pos[l]: the position of label l in the common layout; ell_pos: where the ellipsis dims start.
    std::array<std::int64_t, kLabels> pos;
    pos.fill(-1);
    std::int64_t ell_pos = -1, n_out = 0;
    if (arrow != std::string::npos) {
        for (std::size_t i = arrow + 2; i < equation.size(); ++i) {
            const char c = equation[i];
            if (c == ' ') continue;
            if (c == '.') {
                if (ell_pos >= 0) bad("found '.' for output but an ellipsis (...) was already found");
                if (i + 2 >= equation.size() || equation[i + 1] != '.' || equation[i + 2] != '.')
                    bad("found '.' for output that is not part of any ellipsis (...)");
                ell_pos = n_out;
                n_out += ell_dims;
                i += 2;
            } else if (is_label(c)) {
                const int l = label_index(c);
                if (count[static_cast<std::size_t>(l)] == 0)
                    bad(std::string("output subscript ") + c +
                        " does not appear in the equation for any input operand");
                if (pos[static_cast<std::size_t>(l)] >= 0)
                    bad(std::string("output subscript ") + c + " appears more than once in the output");
                pos[static_cast<std::size_t>(l)] = n_out++;
            } else {
                invalid_subscript(i);
            }
        }
    } else {
        ell_pos = 0;
        n_out = ell_dims;
        for (int l = 0; l < kLabels; ++l)
            if (count[static_cast<std::size_t>(l)] == 1) pos[static_cast<std::size_t>(l)] = n_out++;
    }
    // Summed dims after the output's: a dropped ellipsis first, then the other labels in label order.
    std::int64_t p = n_out;
    if (ell_pos < 0) {
        ell_pos = p;
        p += ell_dims;
    }
    for (int l = 0; l < kLabels; ++l)
        if (count[static_cast<std::size_t>(l)] > 0 && pos[static_cast<std::size_t>(l)] < 0)
            pos[static_cast<std::size_t>(l)] = p++;

    // ---- each operand over the common layout: diagonals taken, dims permuted, missing ones size 1 ----
    std::vector<Tensor> laid;
    std::vector<std::int64_t> size(static_cast<std::size_t>(p), 1);  // broadcast size per position
    std::vector<std::int64_t> last_op(static_cast<std::size_t>(p), -1);
    for (std::size_t i = 0; i < operands.size(); ++i) {
        Tensor t = operands[i];
        std::vector<std::int64_t> where;  // position of each of t's dims
        std::vector<int> label_of;        // its label, or kEllipsis
        const std::int64_t covered = t.dim() - (static_cast<std::int64_t>(subs[i].size()) - 1);
        for (int l : subs[i]) {
            if (l == kEllipsis) {
                for (std::int64_t k = 0; k < covered; ++k) {
                    where.push_back(ell_pos + ell_dims - covered + k);
                    label_of.push_back(kEllipsis);
                }
            } else {
                where.push_back(pos[static_cast<std::size_t>(l)]);
                label_of.push_back(l);
            }
        }
        // Repeated labels: the diagonal, as PyTorch's x.diagonal(0, d1, d2).
        for (std::size_t d1 = 0; d1 < where.size(); ++d1) {
            for (std::size_t d2 = d1 + 1; d2 < where.size();) {
                if (label_of[d2] == kEllipsis || label_of[d2] != label_of[d1]) {
                    ++d2;
                    continue;
                }
                const auto a = static_cast<std::int64_t>(d1), b = static_cast<std::int64_t>(d2);
                if (t.size(a) != t.size(b))
                    bad(std::string("subscript ") + label_char(label_of[d1]) + " is repeated for operand " +
                        std::to_string(i) + " but the sizes don't match, " + std::to_string(t.size(b)) +
                        " != " + std::to_string(t.size(a)));
                t = take_diagonal(t, a, b);
                where.erase(where.begin() + b);
                label_of.erase(label_of.begin() + b);
            }
        }
        // Sizes must agree across operands, or be 1.
        for (std::size_t d = 0; d < where.size(); ++d) {
            const auto at = static_cast<std::size_t>(where[d]);
            const std::int64_t n = t.size(static_cast<std::int64_t>(d));
            if (n != 1 && size[at] != 1 && n != size[at]) {
                if (label_of[d] == kEllipsis)
                    bad("dimension " + std::to_string(where[d] - ell_pos) + " covered by ellipsis in operand " +
                        std::to_string(i) + "has size " + std::to_string(n) +
                        " which does not broadcast with previously seen ellipsis with size " +
                        std::to_string(size[at]) + " for the respective dimension");
                bad(std::string("subscript ") + label_char(label_of[d]) + " has size " + std::to_string(n) +
                    " for operand " + std::to_string(i) + " which does not broadcast with previously seen size " +
                    std::to_string(size[at]));
            }
            if (n != 1) size[at] = n;
            last_op[at] = static_cast<std::int64_t>(i);
        }
        // Permute into position order, then insert the missing positions as size 1.
        std::vector<std::int64_t> perm(where.size());
        for (std::size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<std::int64_t>(k);
        std::sort(perm.begin(), perm.end(), [&](std::int64_t x, std::int64_t y) {
            return where[static_cast<std::size_t>(x)] < where[static_cast<std::size_t>(y)];
        });
        std::vector<std::int64_t> full(static_cast<std::size_t>(p), 1);
        for (std::size_t d = 0; d < where.size(); ++d)
            full[static_cast<std::size_t>(where[d])] = t.size(static_cast<std::int64_t>(d));
        laid.push_back(t.permute(Dims(perm)).reshape(Shape(full)));
    }

    // ---- contract left to right; a summed dim goes with the last operand that has it ----
    auto summed_at = [&](std::int64_t op) {
        std::vector<bool> s(static_cast<std::size_t>(p), false);
        for (std::int64_t d = n_out; d < p; ++d)
            s[static_cast<std::size_t>(d)] = last_op[static_cast<std::size_t>(d)] == op;
        return s;
    };
    auto dims_of = [&](const std::vector<bool>& s) {
        std::vector<std::int64_t> dims;
        for (std::int64_t d = 0; d < p; ++d)
            if (s[static_cast<std::size_t>(d)]) dims.push_back(d);
        return dims;
    };
    Tensor result = sum_keep(laid[0], dims_of(summed_at(0)));
    for (std::size_t i = 1; i < laid.size(); ++i)
        result = contract_pair(result, laid[i], summed_at(static_cast<std::int64_t>(i)));
    std::vector<std::int64_t> out_shape;
    for (std::int64_t d = 0; d < n_out; ++d) out_shape.push_back(result.size(d));
    return result.reshape(Shape(out_shape));
}

}  // namespace xgrad
