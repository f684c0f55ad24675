// RMSprop's update, written as PyTorch 1.13's _single_tensor_rmsprop so the numbers agree.
#include "xgrad/optim/rmsprop.hpp"

#include "optim/common.hpp"
#include "xgrad/factory.hpp"

namespace xgrad::optim {

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& o)
    : Optimizer(std::move(params),
                {{"lr", o.lr},
                 {"alpha", o.alpha},
                 {"eps", o.eps},
                 {"weight_decay", o.weight_decay},
                 {"momentum", o.momentum},
                 {"centered", o.centered ? 1.0 : 0.0},
                 {"maximize", o.maximize ? 1.0 : 0.0}},
                "RMSprop"),
      options_(o) {
    check_options(defaults());
}

void RMSprop::check_options(const GroupOptions& o) const {
    detail::check_non_negative(name_, o, "eps", "epsilon");
    detail::check_non_negative(name_, o, "momentum", "momentum");
    detail::check_non_negative(name_, o, "weight_decay", "weight_decay");
    detail::check_non_negative(name_, o, "alpha", "alpha");
}

bool RMSprop::is_state_name(const std::string& n) const {
    return n == "step" || n == "square_avg" || n == "momentum_buffer" || n == "grad_avg";
}

void RMSprop::update(const GroupOptions& o, std::size_t index, Tensor& param, const Tensor& grad_in) {
    const double alpha = o.at("alpha"), momentum = o.at("momentum");
    const bool centered = o.at("centered") != 0.0;
    ParamState& s = state_[index];
    if (!s.count("square_avg") || s.at("square_avg").shape() != param.shape()) {
        s = {{"square_avg", zeros_like(param)}};
        if (momentum > 0.0) s["momentum_buffer"] = zeros_like(param);
        if (centered) s["grad_avg"] = zeros_like(param);
    }
    for (auto& [k, t] : s)
        if (k != "step") detail::follow(t, param);
    if (momentum > 0.0 && !s.count("momentum_buffer")) s["momentum_buffer"] = zeros_like(param);  // set later
    if (centered && !s.count("grad_avg")) s["grad_avg"] = zeros_like(param);
    const double step = detail::bump_step(s, kInt64);
    (void)step;

    Tensor grad = (o.at("maximize") != 0.0 ? grad_in.neg() : grad_in).to(param.dtype());
    if (o.at("weight_decay") != 0.0) grad = detail::add_scaled(grad, param, o.at("weight_decay"));
    Tensor& square_avg = s.at("square_avg");
    detail::addcmul_(square_avg.mul_(alpha), grad, grad, 1.0 - alpha);
    Tensor avg;
    if (centered) {
        Tensor& grad_avg = s.at("grad_avg");
        grad_avg.mul_(alpha).add_(grad, 1.0 - alpha);
        Tensor centred = square_avg.clone();  // square_avg.addcmul(grad_avg, grad_avg, value=-1)
        detail::addcmul_(centred, grad_avg, grad_avg, -1.0);
        avg = centred.sqrt();
    } else {
        avg = square_avg.sqrt();
    }
    avg = avg.add(o.at("eps"));
    if (momentum > 0.0) {
        Tensor& buf = s.at("momentum_buffer");
        buf.mul_(momentum).add_(grad / avg);  // addcdiv_(grad, avg), value 1
        param.add_(buf, -o.at("lr"));
    } else {
        param.add_(grad * -o.at("lr") / avg);  // addcdiv_(grad, avg, value=-lr)
    }
}

}  // namespace xgrad::optim
