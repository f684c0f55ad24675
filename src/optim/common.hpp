// Helpers the optimizers' updates share: state that follows its parameter, and option checks.
#pragma once

#include <string>

#include "detail/tensor_impl.hpp"
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

}  // namespace xgrad::optim::detail
