// StepLR and CosineAnnealingLR, with PyTorch 1.13's chainable (recursive) get_lr formulas.
#include "xgrad/optim/lr_scheduler.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "detail/tensor_impl.hpp"

namespace xgrad::optim {

LRScheduler::LRScheduler(Optimizer& optimizer)
    : optimizer_(optimizer), base_lr_(optimizer.lr()), last_lr_(optimizer.lr()) {}

void LRScheduler::step() {
    ++last_epoch_;
    last_lr_ = get_lr();
    optimizer_.set_lr(last_lr_);
}

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
    if (step_size < 1) detail::fail("StepLR", "step_size must be at least 1, got " + std::to_string(step_size));
    initial_step();
}

double StepLR::get_lr() const {
    const double lr = optimizer_.lr();
    if (last_epoch() == 0 || last_epoch() % step_size_ != 0) return lr;
    return lr * gamma_;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
    if (t_max < 1) detail::fail("CosineAnnealingLR", "T_max must be at least 1, got " + std::to_string(t_max));
    initial_step();
}

double CosineAnnealingLR::get_lr() const {
    using std::numbers::pi;
    const double lr = optimizer_.lr();
    const std::int64_t e = last_epoch();
    const auto t_max = static_cast<double>(t_max_);
    if (e == 0) return lr;
    // At the bottom of each cosine, the recursion's ratio is 0/0: PyTorch steps back up explicitly.
    if ((e - 1 - t_max_) % (2 * t_max_) == 0) return lr + (base_lr() - eta_min_) * (1 - std::cos(pi / t_max)) / 2;
    return (1 + std::cos(pi * static_cast<double>(e) / t_max)) /
               (1 + std::cos(pi * static_cast<double>(e - 1) / t_max)) * (lr - eta_min_) +
           eta_min_;
}

}  // namespace xgrad::optim
