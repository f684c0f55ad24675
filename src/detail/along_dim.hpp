// A tensor seen as rows along one dim (that dim moved last, contiguous), the layout the kernels of
// max(dim), prod, the running sums and sorting take; shared by reduction.cpp and sorting.cpp.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"

namespace xgrad::detail {

/// `x` as rows × width along `dim`. A 0-d tensor is one row of one element.
struct AlongDim {
    std::int64_t dim = 0;  // wrapped
    std::int64_t rows = 1, width = 1;
    Shape shape;                        // the input's
    Shape moved;                        // the input's shape with `dim` moved last
    std::vector<std::int64_t> inverse;  // permutes `moved` back to the input's order
    Tensor rows_view;                   // contiguous (rows, width), detached

    kernels::RowsView view() const { return {rows_view, rows, width, false}; }

    /// The input's shape with `dim` of size `n` (the result of a reduction with keepdim, or of topk).
    Shape with_size(std::int64_t n) const {
        if (shape.empty()) return shape;
        Shape s = shape;
        s[dim] = n;
        return s;
    }
    /// The input's shape without `dim` (a reduction without keepdim).
    Shape without() const {
        Shape s;
        for (std::int64_t d = 0; d < shape.size(); ++d)
            if (d != dim) s.push_back(shape[d]);
        return s;
    }
    /// `t`, rows × n along the moved dim (contiguous), back in the input's dim order (contiguous).
    Tensor restore(const Tensor& t, std::int64_t n) const {
        if (shape.size() <= 1) return t.reshape(with_size(n));
        Shape m = moved;
        m[m.size() - 1] = n;
        return t.reshape(m).permute(Dims(inverse)).contiguous();
    }
    /// A tensor of the input's shape with `dim` of size n (such as a gradient), as rows × n.
    Tensor to_rows(const Tensor& t, std::int64_t n) const {
        if (shape.size() <= 1) return t.reshape(Shape{rows, n}).contiguous();
        std::vector<std::int64_t> perm;
        for (std::int64_t d = 0; d < shape.size(); ++d)
            if (d != dim) perm.push_back(d);
        perm.push_back(dim);
        return t.permute(Dims(perm)).contiguous().reshape(Shape{rows, n});
    }
};

/// Checks `dim` against `x` (a 0-d tensor takes 0 and -1, as PyTorch) and builds the rows (unless
/// `build_rows` is false: then rows_view stays undefined, for a caller that reads `x` in place).
inline AlongDim along_dim(const Tensor& x, std::int64_t dim, const char* op, bool build_rows = true) {
    check_defined(x, op);
    AlongDim a;
    a.shape = x.shape();
    const std::int64_t nd = x.dim(), n = std::max<std::int64_t>(nd, 1);
    if (dim < -n || dim >= n)
        fail(op, "dimension " + std::to_string(dim) + " is out of range for a tensor of shape " + to_string(x.shape()) +
                     " (expected to be in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "])");
    a.dim = dim < 0 ? dim + n : dim;
    Tensor base = x.detach();
    if (nd == 0) {
        a.rows_view = base.reshape(Shape{1, 1}).contiguous();
        return a;
    }
    std::vector<std::int64_t> perm, moved;
    for (std::int64_t d = 0; d < nd; ++d)
        if (d != a.dim) perm.push_back(d);
    perm.push_back(a.dim);
    a.inverse.assign(static_cast<std::size_t>(nd), 0);
    for (std::size_t i = 0; i < perm.size(); ++i) {
        a.inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
        moved.push_back(x.size(perm[i]));
    }
    a.moved = Shape(moved);
    a.width = x.size(a.dim);
    for (std::int64_t d : perm)
        if (d != a.dim) a.rows *= x.size(d);
    if (build_rows)
        a.rows_view = (a.dim == nd - 1 ? base : base.permute(Dims(perm))).contiguous().reshape(Shape{a.rows, a.width});
    return a;
}

}  // namespace xgrad::detail
