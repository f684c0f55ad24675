// The checks behind xgrad/xtensor.hpp: which tensors may lend their memory to an xtensor view.
#include "xgrad/xtensor.hpp"

#include "detail/tensor_impl.hpp"

namespace xgrad::detail {

void* xtensor_data(const Tensor& t, DType dtype, const char* op) {
    check_defined(t, op);
    if (t.dtype() != dtype)
        fail(op, "the tensor holds " + to_string(t.dtype()) + ", but the view's element type is " + to_string(dtype) +
                     " (use the matching type, or t.to(" + to_string(dtype) + ") for a converted copy)");
    if (!t.device().is_cpu())
        fail(op, "the tensor is on " + to_string(t.device()) + "; xtensor views need CPU memory (use t.cpu())");
    if (t.requires_grad())
        fail(op, "the tensor requires grad, and writes through the view would bypass autograd (use t.detach())");
    const auto& impl = *t.impl();
    return static_cast<char*>(impl.storage->data) + impl.offset * static_cast<std::int64_t>(element_size(dtype));
}

}  // namespace xgrad::detail
