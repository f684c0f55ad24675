// Switching gradient recording off, and checking gradients against finite differences.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
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

/// The autograd graph behind `root` as Graphviz DOT text, drawn as torchviz's `make_dot` draws it:
/// one box per backward node named by its grad_fn (`AddmmBackward0`, `MseLossBackward0` ...), an
/// `AccumulateGrad` box under each leaf, the leaves in light blue labelled with their name from
/// `params` (when given, e.g. `model.named_parameters()`) and their shape, the output in green with
/// its shape. Edges point from inputs to the node that consumes them. Nodes are numbered in the
/// order a depth-first walk from `root` meets them, so the text is reproducible.
///
/// ```cpp
/// std::ofstream("graph.dot") << xgrad::autograd::to_dot(loss, model.named_parameters());
/// // shell: dot -Tsvg graph.dot -o graph.svg
/// ```
std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& params = {});

}  // namespace autograd
}  // namespace xgrad
