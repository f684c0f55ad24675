// Switching gradient recording off, and checking gradients against finite differences.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xgrad/tensor.hpp"

namespace xgrad {

/// Whether operations record a graph on this thread (true unless a NoGradGuard is alive).
bool is_grad_enabled();
/// Turns graph recording on or off for this thread.
void set_grad_enabled(bool enabled);

/// While alive, operations on this thread record no graph, as `with torch.no_grad():`.
///
/// ```cpp
/// {
///     xgrad::NoGradGuard no_grad;
///     w.sub_(w.grad() * lr);     // an update the graph must not see
/// }
/// ```
class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

namespace autograd {

/// What gradcheck found: `ok`, or the first input and element whose gradient disagrees.
struct GradcheckResult {
    bool ok = true;             ///< True when every Jacobian entry agreed.
    std::int64_t input = -1;    ///< Index of the failing input.
    std::int64_t element = -1;  ///< Flat index of the failing element of that input.
    std::int64_t output = -1;   ///< Flat index of the output element involved.
    double analytic = 0.0;      ///< d output / d input from backward().
    double numeric = 0.0;       ///< The same from central differences.
    std::string message;        ///< A sentence saying all of the above.
    /// True when the check passed.
    explicit operator bool() const { return ok; }
};

/// Checks `fn`'s backward against central finite differences in float64, as
/// `torch.autograd.gradcheck`: every entry of the Jacobian must satisfy
/// `|analytic - numeric| <= atol + rtol * |numeric|`.
///
/// The floating-point inputs that require grad are converted to float64 leaves and perturbed by
/// `±eps` one element at a time; `fn` must return a single tensor.
///
/// ```cpp
/// auto x = xgrad::randn({3, 4}, xgrad::kFloat64).requires_grad_();
/// auto r = xgrad::autograd::gradcheck([](const auto& in) { return in[0].tanh().sum(-1); }, {x});
/// // r.ok, or r.message says which element failed
/// ```
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

}  // namespace autograd
}  // namespace xgrad
