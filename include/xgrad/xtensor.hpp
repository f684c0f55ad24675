// xtensor interop, opt-in: tensors from xtensor expressions, and xtensor views of tensors' memory.
// The only xgrad header that includes xtensor; xgrad/xgrad.hpp does not include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>
#include <xtensor/xadapt.hpp>
#include <xtensor/xbuffer_adaptor.hpp>
#include <xtensor/xexpression.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xtensor.hpp>

#include "xgrad/factory.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

namespace detail {

/// The DType that holds T: float, double, std::int64_t, std::int32_t, std::uint8_t and bool (const or
/// not); anything else is an error.
template <typename T>
constexpr DType dtype_of() {
    using V = std::remove_cv_t<T>;
    static_assert(std::is_same_v<V, float> || std::is_same_v<V, double> || std::is_same_v<V, std::int64_t> ||
                      std::is_same_v<V, std::int32_t> || std::is_same_v<V, std::uint8_t> || std::is_same_v<V, bool>,
                  "xgrad tensors hold float, double, std::int64_t, std::int32_t, std::uint8_t or bool; convert "
                  "first, e.g. with xt::cast<float>(e)");
    return std::is_same_v<V, float>          ? kFloat32
           : std::is_same_v<V, double>       ? kFloat64
           : std::is_same_v<V, std::int32_t> ? kInt32
           : std::is_same_v<V, std::uint8_t> ? kUInt8
           : std::is_same_v<V, bool>         ? kBool
                                             : kInt64;
}

/// The first element of `t`'s memory, after checking that `t` is defined, holds `dtype`, lives on
/// the CPU and needs no gradient; throws std::invalid_argument naming `op` otherwise.
void* xtensor_data(const Tensor& t, DType dtype, const char* op);

}  // namespace detail

/// A new CPU tensor with the shape and values of an xtensor expression (a copy, as `torch.tensor(a)`).
///
/// The expression is evaluated once, into the tensor's memory; its value type gives the dtype (float:
/// kFloat32, double: kFloat64, std::int64_t: kInt64, std::int32_t: kInt32, std::uint8_t: kUInt8, bool:
/// kBool; other types do not compile, so cast first with
/// `xt::cast<float>(e)`). The tensor is a leaf that does not require grad.
///
/// ```cpp
/// xt::xarray<double> a = {{1.0, 2.0}, {3.0, 4.0}};
/// xgrad::Tensor t = xgrad::from_xtensor(a * 2.0);   // float64, shape (2, 2)
/// ```
template <class E>
Tensor from_xtensor(const xt::xexpression<E>& expression) {
    const E& e = expression.derived_cast();
    using T = std::decay_t<typename E::value_type>;
    std::vector<std::size_t> shape(e.shape().begin(), e.shape().end());
    Tensor t = empty(Shape(std::vector<std::int64_t>(shape.begin(), shape.end())), detail::dtype_of<T>());
    auto* data = static_cast<T*>(detail::xtensor_data(t, detail::dtype_of<T>(), "from_xtensor"));
    auto out = xt::adapt(data, static_cast<std::size_t>(t.numel()), xt::no_ownership(), shape);
    xt::noalias(out) = e;
    return t;
}

/// An xtensor view of a CPU tensor's memory, without a copy (as `torch.Tensor.numpy()`).
///
/// `T` must be the tensor's element type (`float` for kFloat32, `double` for kFloat64,
/// `std::int64_t` for kInt64, `std::int32_t`, `std::uint8_t`, `bool`; `const T` gives a read-only view). The view (an
/// `xt::xstrided_view`) has the tensor's shape and strides, so it works on transposed, sliced and expanded tensors too;
/// copies of it share the memory. It holds a handle to the storage, which stays alive as long as the view does. Writes
/// through the view change the tensor (and every tensor sharing its storage) without autograd seeing them, so, as
/// PyTorch's `numpy()`, it refuses a tensor that requires grad: take `t.detach()`. The wrong `T`, a CUDA tensor or an
/// undefined one throw std::invalid_argument.
///
/// ```cpp
/// xgrad::Tensor t = xgrad::zeros({2, 3});
/// auto v = xgrad::as_xtensor<float>(t);
/// v(1, 2) = 5.0f;                                      // t[1][2] is 5 now
/// auto tv = xgrad::as_xtensor<const float>(t.t());     // shape (3, 2), strides (1, 3)
/// ```
template <typename T>
auto as_xtensor(const Tensor& t) {
    auto* data = static_cast<T*>(detail::xtensor_data(t, detail::dtype_of<T>(), "as_xtensor"));
    // All memory from the first element to the last one the strides reach, as a 1-d container whose
    // buffer holds a reference to the tensor's implementation (and so to its storage); then the
    // tensor's shape and strides over it.
    std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    std::size_t span = t.numel() == 0 ? 0 : 1;
    for (std::size_t d = 0; d < shape.size(); ++d)
        if (shape[d] > 1) span += (shape[d] - 1) * static_cast<std::size_t>(t.strides()[d]);
    using buffer_type = xt::xbuffer_adaptor<T*, xt::smart_ownership, std::shared_ptr<detail::TensorImpl>>;
    using flat_type = xt::xtensor_adaptor<buffer_type, 1>;
    using view_type = xt::xstrided_view<flat_type, std::vector<std::size_t>>;
    flat_type flat(buffer_type(data, span, t.impl()), {span});
    typename view_type::strides_type strides(t.strides().begin(), t.strides().end());
    return view_type(std::move(flat), std::move(shape), std::move(strides), 0, xt::layout_type::dynamic);
}

}  // namespace xgrad
