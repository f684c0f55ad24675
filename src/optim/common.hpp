// Helpers the optimizers' updates share: state that follows its parameter, option checks, and the runs
// of deferred fused updates.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/module.hpp"
#include "xgrad/optim/optimizer.hpp"

namespace xgrad::optim::detail {

/// `state` in `param`'s dtype and on its device (the module was converted or moved with Module::to).
inline void follow(Tensor& state, const Tensor& param) {
    if (state.dtype() != param.dtype()) state = state.to(param.dtype());
    if (state.device() != param.device()) state = state.to(param.device());
}

/// Throws PyTorch's "invalid <what> value: v" unless option `key` is >= 0.
inline void check_non_negative(const char* name, const GroupOptions& o, const char* key, const char* what) {
    if (!(o.at(key) >= 0.0))
        xgrad::detail::fail(name, std::string("invalid ") + what + " value: " + nn::python_float_repr(o.at(key)));
}

/// The state entry `key` of a 0-d step counter, incremented; made as `dtype` when absent.
inline double bump_step(ParamState& s, DType dtype) {
    auto it = s.find("step");
    const double step = (it == s.end() ? 0.0 : it->second.to(kFloat64).item<double>()) + 1.0;
    s["step"] = full({}, step, dtype);
    return step;
}

/// `a.add(b, alpha=alpha)` as PyTorch's kernel computes it (one rounding where the CPU has FMA): a new
/// tensor of a's shape.
inline Tensor add_scaled(const Tensor& a, const Tensor& b, double alpha) {
    Tensor r = a.clone();
    r.add_(b, alpha);
    return r;
}

/// `self.addcmul_(t1, t2, value=value)` as PyTorch's kernel computes it: self + (value·t1)·t2, the
/// last multiply-add with one rounding where the CPU has FMA. Same shapes and dtype.
inline void addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
    NoGradGuard no_grad;
    const Tensor a = value == 1.0 ? t1.contiguous() : t1 * value, b = t2.contiguous();
    if (self.is_contiguous()) {
        kernels::addcmul(self, a, b);
        xgrad::detail::bump_version(self);
        return;
    }
    Tensor dst = self.contiguous();
    kernels::addcmul(dst, a, b);
    self.copy_(dst);
}

/// Takes the fused updates deferred during a step (`deferred`, left empty) and calls `run(first, last)`
/// for each run of neighbours that one kernel call can update together: the same coefficients
/// (`same_coefficients(a, b)`), dtype and device, and the same optional state (tensor `optional` of
/// each entry's `tensors`, defined for all or none).
template <class Deferred, class SameCoefficients, class Run>
void run_deferred(std::vector<Deferred>& deferred, std::size_t optional, SameCoefficients&& same_coefficients,
                  Run&& run) {
    const std::vector<Deferred> work = std::move(deferred);
    deferred.clear();
    for (std::size_t i = 0; i < work.size();) {
        const Deferred& head = work[i];
        auto same = [&](const Deferred& d) {
            return same_coefficients(d, head) && d.tensors[0].dtype() == head.tensors[0].dtype() &&
                   d.tensors[0].device() == head.tensors[0].device() &&
                   d.tensors[optional].defined() == head.tensors[optional].defined();
        };
        std::size_t end = i + 1;
        while (end < work.size() && same(work[end])) ++end;
        run(work.data() + i, work.data() + end);
        i = end;
    }
}

}  // namespace xgrad::optim::detail
