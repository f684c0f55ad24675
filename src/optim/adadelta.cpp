// Adadelta's update, written as PyTorch 1.13's _single_tensor_adadelta so the numbers agree.
#include "xgrad/optim/adadelta.hpp"

#include "optim/common.hpp"
#include "xgrad/factory.hpp"

namespace xgrad::optim {

Adadelta::Adadelta(std::vector<Tensor> params, const AdadeltaOptions& o)
    : Optimizer(std::move(params),
                {{"lr", o.lr},
                 {"rho", o.rho},
                 {"eps", o.eps},
                 {"weight_decay", o.weight_decay},
                 {"maximize", o.maximize ? 1.0 : 0.0}},
                "Adadelta"),
      options_(o) {
    check_options(defaults());
}

void Adadelta::check_options(const GroupOptions& o) const {
    if (!(o.at("rho") >= 0.0 && o.at("rho") <= 1.0))
        xgrad::detail::fail(name_, "invalid rho value: " + nn::python_float_repr(o.at("rho")));
    detail::check_non_negative(name_, o, "eps", "epsilon");
    detail::check_non_negative(name_, o, "weight_decay", "weight_decay");
}

bool Adadelta::is_state_name(const std::string& n) const {
    return n == "step" || n == "square_avg" || n == "acc_delta";
}

void Adadelta::update(const GroupOptions& o, std::size_t index, Tensor& param, const Tensor& grad_in) {
    const double rho = o.at("rho"), eps = o.at("eps");
    ParamState& s = state_[index];
    if (!s.count("square_avg") || s.at("square_avg").shape() != param.shape())
        s = {{"square_avg", zeros_like(param)}, {"acc_delta", zeros_like(param)}};
    detail::follow(s.at("square_avg"), param);
    detail::follow(s.at("acc_delta"), param);
    detail::bump_step(s, kInt64);
    Tensor grad = (o.at("maximize") != 0.0 ? grad_in.neg() : grad_in).to(param.dtype());
    if (o.at("weight_decay") != 0.0) grad = detail::add_scaled(grad, param, o.at("weight_decay"));
    Tensor& square_avg = s.at("square_avg");
    Tensor& acc_delta = s.at("acc_delta");
    detail::addcmul_(square_avg.mul_(rho), grad, grad, 1.0 - rho);
    Tensor std = square_avg.add(eps).sqrt();
    Tensor delta = acc_delta.add(eps).sqrt().div(std).mul(grad);
    detail::addcmul_(acc_delta.mul_(rho), delta, delta, 1.0 - rho);
    param.add_(delta, -o.at("lr"));
}

}  // namespace xgrad::optim
