// Everyday ops composed of others, so that they run on every device: nan_to_num, count_nonzero, diff,
// meshgrid, aminmax and kron.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::NeedsGrad;
using detail::Saved;
using Grads = detail::GradList;

Tensor Tensor::nan_to_num(double nan, std::optional<double> posinf, std::optional<double> neginf) const {
    detail::check_defined(*this, "nan_to_num");
    if (!is_floating_point()) return clone();  // nothing to replace, as PyTorch
    const bool f32 = dtype() == kFloat32;
    const double big = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    Tensor out;
    {
        NoGradGuard no_grad;
        if (posinf.value_or(big) >= big && neginf.value_or(-big) <= -big)
            // Every finite value lies inside the infinities' replacements: a clamp replaces the infinities
            // alone (three passes instead of six: 1024x1500 floats 2.8 -> 0.55 ms, PyTorch 1.13 0.9 ms).
            out = where(isnan(), nan, clamp(neginf.value_or(-big), posinf.value_or(big)));
        else
            out = where(isnan(), nan,
                        where(isposinf(), posinf.value_or(big), where(isneginf(), neginf.value_or(-big), *this)));
    }
    if (detail::needs_grad({this}))
        detail::record(out, "NanToNumBackward0", {this}, [sx = Saved(*this)](const Tensor& g, const NeedsGrad&) {
            return Grads{g * sx->isfinite().to(g.dtype())};
        });
    return out;
}

Tensor Tensor::count_nonzero(const Dims& dims) const {
    detail::check_defined(*this, "count_nonzero");
    return ne(0.0).sum(dims);
}

Tensor Tensor::diff(std::int64_t n, std::int64_t dim, const Tensor& prepend, const Tensor& append) const {
    const char* op = "diff";
    detail::check_defined(*this, op);
    if (this->dim() == 0) detail::fail(op, "expects input to be at least one-dimensional");
    if (n < 0) detail::fail(op, "order must be non-negative but got " + std::to_string(n));
    const std::int64_t d = detail::wrap_dim(dim, this->dim(), op);
    // prepend and append: self's shape but along dim (a 0-d one is one slice of its value).
    auto along = [&](const Tensor& t, const char* what) {
        if (t.dim() == 0) {
            Shape s = shape();
            s[d] = 1;
            return t.expand(s);
        }
        bool same = t.dim() == this->dim();
        for (std::int64_t k = 0; same && k < this->dim(); ++k) same = k == d || t.size(k) == size(k);
        if (!same)
            detail::fail(op, std::string("expects the shape of the tensor to ") + what +
                                 " to match that of the input except along the differencing dimension " +
                                 std::to_string(d) + ": input " + to_string(shape()) + ", " + what + " " +
                                 to_string(t.shape()));
        return t;
    };
    Tensor x = *this;
    if (prepend.defined() || append.defined()) {
        std::vector<Tensor> parts;
        if (prepend.defined()) parts.push_back(along(prepend, "prepend"));
        parts.push_back(x);
        if (append.defined()) parts.push_back(along(append, "append"));
        x = cat(parts, d);
    }
    if (n == 0) return x.clone();
    const bool logical = x.dtype() == kBool;
    for (std::int64_t i = 0; i < n && x.size(d) > 0; ++i) {
        const std::int64_t len = x.size(d) - 1;
        x = logical ? x.narrow(d, 1, len).logical_xor(x.narrow(d, 0, len)) : x.narrow(d, 1, len) - x.narrow(d, 0, len);
    }
    return x;
}

namespace {

/// unique / unique_consecutive over `flat` (1-D, without a record), in the order of `order` (the
/// positions of flat's elements as they are walked, undefined for flat's own order): a value starts
/// where it differs from the one before (every NaN alone).
UniqueResult runs(const Tensor& flat, const Tensor& order, const Shape& shape, bool inverse, bool counts) {
    UniqueResult r;
    const std::int64_t n = flat.numel();
    const FactoryOptions i64 = FactoryOptions(kInt64).device(flat.device());
    if (n == 0) {
        r.values = flat.clone();
        if (inverse) r.inverse = zeros(shape, i64);
        if (counts) r.counts = zeros({0}, i64);
        return r;
    }
    const Tensor s = order.defined() ? flat.index_select(0, order) : flat;
    const Tensor start =
        cat({ones({1}, FactoryOptions(kBool).device(flat.device())), s.narrow(0, 1, n - 1).ne(s.narrow(0, 0, n - 1))});
    r.values = s.masked_select(start);
    if (inverse) {
        const Tensor group = start.to(kInt64).cumsum(0) - 1;  // each walked element's value
        r.inverse = (order.defined() ? zeros({n}, i64).scatter(0, order, group) : group).reshape(shape);
    }
    if (counts) r.counts = start.nonzero().reshape({-1}).diff(1, 0, Tensor(), full({1}, static_cast<double>(n), i64));
    return r;
}

}  // namespace

UniqueResult unique(const Tensor& x, bool /*sorted*/, bool return_inverse, bool return_counts) {
    detail::check_defined(x, "unique");
    NoGradGuard no_grad;
    const Tensor flat = x.detach().reshape({x.numel()});
    // A stable sort: equal values keep their order, so each value's first element in x leads its run.
    const Tensor order = flat.numel() == 0 ? Tensor() : flat.argsort(0, false, true);
    return runs(flat, order, x.shape(), return_inverse, return_counts);
}

UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts) {
    detail::check_defined(x, "unique_consecutive");
    NoGradGuard no_grad;
    return runs(x.detach().reshape({x.numel()}), Tensor(), x.shape(), return_inverse, return_counts);
}

Tensor Tensor::unique(bool sorted) const {
    return xgrad::unique(*this, sorted).values;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
    const char* op = "meshgrid";
    if (indexing != "ij" && indexing != "xy")
        detail::fail(op, "indexing must be one of \"xy\" or \"ij\", but received: " + indexing);
    if (tensors.empty()) detail::fail(op, "expects a non-empty list of tensors");
    Shape shape;
    for (const Tensor& t : tensors) {
        detail::check_defined(t, op);
        if (t.dim() > 1) detail::fail(op, "expects 0-D or 1-D tensors, got one of shape " + to_string(t.shape()));
        if (t.dtype() != tensors[0].dtype() || t.device() != tensors[0].device())
            detail::fail(op, "expects all tensors to have the same dtype and device, got " +
                                 to_string(tensors[0].dtype()) + " and " + to_string(t.dtype()));
        shape.push_back(t.numel());
    }
    // "xy": the first two inputs change places in the grid's dims.
    const bool swap = indexing == "xy" && tensors.size() >= 2;
    auto place = [&](std::size_t k) { return swap && k < 2 ? 1 - k : k; };
    Shape grid;
    for (std::size_t k = 0; k < tensors.size(); ++k) grid.push_back(shape[static_cast<std::int64_t>(place(k))]);
    std::vector<Tensor> out;
    for (std::size_t k = 0; k < tensors.size(); ++k) {
        Shape view(std::vector<std::int64_t>(tensors.size(), 1));
        view[static_cast<std::int64_t>(place(k))] = tensors[k].numel();
        out.push_back(tensors[k].reshape(view).expand(grid));
    }
    return out;
}

}  // namespace xgrad

// ---- aminmax, kron --------------------------------------------------------------------------------------

namespace xgrad {

MinMax aminmax(const Tensor& x, std::optional<std::int64_t> dim, bool keepdim) {
    detail::check_defined(x, "aminmax");
    if (!dim) {
        if (x.numel() == 0)
            detail::fail("aminmax",
                         "cannot compute aminmax over an empty dimension as the operation has no identity "
                         "(shape " +
                             to_string(x.shape()) + ")");
        const Dims all(std::vector<std::int64_t>{});
        if (!keepdim) return {x.amin(all), x.amax(all)};
        // keepdim without a dim: every dim kept, of size 1 (a 0-d input stays 0-d).
        std::vector<std::int64_t> every(static_cast<std::size_t>(x.dim()));
        for (std::size_t d = 0; d < every.size(); ++d) every[d] = static_cast<std::int64_t>(d);
        const Dims dims(every);
        return {x.amin(dims, true), x.amax(dims, true)};
    }
    const std::int64_t d = detail::wrap_dim(*dim, std::max<std::int64_t>(x.dim(), 1), "aminmax");
    if (x.dim() > 0 && x.size(d) == 0)
        detail::fail("aminmax", "Expected reduction dim " + std::to_string(*dim) + " to have non-zero size (shape " +
                                    to_string(x.shape()) + ")");
    return {x.amin(Dims{*dim}, keepdim), x.amax(Dims{*dim}, keepdim)};
}

Tensor kron(const Tensor& a, const Tensor& b) {
    detail::check_defined(a, "kron");
    detail::check_defined(b, "kron");
    detail::check_same_device(a, b, "kron");
    const std::int64_t nd = std::max(a.dim(), b.dim());
    // a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...) is (a0, b0, a1, b1, ...): merge the pairs.
    std::vector<std::int64_t> as, bs, out;
    for (std::int64_t d = 0; d < nd; ++d) {
        const std::int64_t ad = d - (nd - a.dim()), bd = d - (nd - b.dim());
        const std::int64_t sa = ad >= 0 ? a.size(ad) : 1, sb = bd >= 0 ? b.size(bd) : 1;
        as.insert(as.end(), {sa, 1});
        bs.insert(bs.end(), {1, sb});
        out.push_back(sa * sb);
    }
    return a.reshape(Shape(as)).mul(b.reshape(Shape(bs))).reshape(Shape(out));
}

}  // namespace xgrad
