// Adamax's update, written as PyTorch 1.13's _single_tensor_adamax so the numbers agree.
#include "xgrad/optim/adamax.hpp"

#include <cmath>

#include "optim/common.hpp"
#include "xgrad/factory.hpp"

namespace xgrad::optim {

Adamax::Adamax(std::vector<Tensor> params, const AdamaxOptions& o)
    : Optimizer(std::move(params),
                {{"lr", o.lr},
                 {"beta1", o.betas[0]},
                 {"beta2", o.betas[1]},
                 {"eps", o.eps},
                 {"weight_decay", o.weight_decay},
                 {"maximize", o.maximize ? 1.0 : 0.0}},
                "Adamax"),
      options_(o) {
    check_options(defaults());
}

void Adamax::check_options(const GroupOptions& o) const {
    detail::check_non_negative(name_, o, "eps", "epsilon");
    for (int i = 0; i < 2; ++i) {
        const double beta = o.at(i == 0 ? "beta1" : "beta2");
        if (!(beta >= 0.0 && beta < 1.0))
            xgrad::detail::fail(name_, "invalid beta parameter at index " + std::to_string(i) + ": " +
                                           nn::python_float_repr(beta) + " (must be in [0, 1))");
    }
    detail::check_non_negative(name_, o, "weight_decay", "weight_decay");
}

bool Adamax::is_state_name(const std::string& n) const {
    return n == "step" || n == "exp_avg" || n == "exp_inf";
}

void Adamax::update(const GroupOptions& o, std::size_t index, Tensor& param, const Tensor& grad_in) {
    const double beta1 = o.at("beta1"), beta2 = o.at("beta2");
    ParamState& s = state_[index];
    if (!s.count("exp_avg") || s.at("exp_avg").shape() != param.shape())
        s = {{"exp_avg", zeros_like(param)}, {"exp_inf", zeros_like(param)}};
    detail::follow(s.at("exp_avg"), param);
    detail::follow(s.at("exp_inf"), param);
    const double step = detail::bump_step(s, kFloat32);
    Tensor grad = (o.at("maximize") != 0.0 ? grad_in.neg() : grad_in).to(param.dtype());
    if (o.at("weight_decay") != 0.0) grad = detail::add_scaled(grad, param, o.at("weight_decay"));
    Tensor& exp_avg = s.at("exp_avg");
    Tensor& exp_inf = s.at("exp_inf");
    exp_avg.mul_(beta1).add_(grad, 1.0 - beta1);
    // amax over cat([β2·u, |g| + eps]): the elementwise maximum, NaN propagating.
    exp_inf.copy_(exp_inf.mul(beta2).maximum(grad.abs().add(o.at("eps"))));
    const double clr = o.at("lr") / (1 - std::pow(beta1, step));
    param.add_(exp_avg * -clr / exp_inf);  // addcdiv_(exp_avg, exp_inf, value=-clr)
}

}  // namespace xgrad::optim
