// Adagrad's update, written as PyTorch 1.13's _single_tensor_adagrad so the numbers agree.
#include "xgrad/optim/adagrad.hpp"

#include "optim/common.hpp"
#include "xgrad/factory.hpp"

namespace xgrad::optim {

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& o)
    : Optimizer(std::move(params),
                {{"lr", o.lr},
                 {"lr_decay", o.lr_decay},
                 {"eps", o.eps},
                 {"weight_decay", o.weight_decay},
                 {"initial_accumulator_value", o.initial_accumulator_value},
                 {"maximize", o.maximize ? 1.0 : 0.0}},
                "Adagrad"),
      options_(o) {
    check_options(defaults());
    on_params_added(0);
}

void Adagrad::check_options(const GroupOptions& o) const {
    detail::check_non_negative(name_, o, "lr_decay", "lr_decay");
    detail::check_non_negative(name_, o, "weight_decay", "weight_decay");
    detail::check_non_negative(name_, o, "initial_accumulator_value", "initial_accumulator_value");
    detail::check_non_negative(name_, o, "eps", "epsilon");
}

void Adagrad::on_params_added(std::size_t first) {
    // As PyTorch, the state is made now, `sum` filled with the group's initial_accumulator_value.
    std::size_t i = 0;
    for (const auto& group : param_groups())
        for (const auto& p : group.params) {
            if (i >= first)
                state_[i] = {{"step", full({}, 0.0, kFloat32)},
                             {"sum", full_like(p, group.options.at("initial_accumulator_value"))}};
            ++i;
        }
}

void Adagrad::update(const GroupOptions& o, std::size_t index, Tensor& param, const Tensor& grad_in) {
    ParamState& s = state_[index];
    if (!s.count("sum") || s.at("sum").shape() != param.shape())  // the parameter was materialised late
        s = {{"step", full({}, 0.0, kFloat32)}, {"sum", full_like(param, o.at("initial_accumulator_value"))}};
    detail::follow(s.at("sum"), param);
    const double step = detail::bump_step(s, kFloat32);
    Tensor grad = (o.at("maximize") != 0.0 ? grad_in.neg() : grad_in).to(param.dtype());
    if (o.at("weight_decay") != 0.0) grad = detail::add_scaled(grad, param, o.at("weight_decay"));
    const double clr = o.at("lr") / (1 + (step - 1) * o.at("lr_decay"));
    Tensor& sum = s.at("sum");
    detail::addcmul_(sum, grad, grad, 1.0);
    Tensor std = sum.sqrt().add(o.at("eps"));
    param.add_(grad * -clr / std);  // addcdiv_(grad, std, value=-clr)
}

}  // namespace xgrad::optim
