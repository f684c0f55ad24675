// The Optimizer base class: parameter groups and their options, the step loop, and state_dict.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xgrad/tensor.hpp"

namespace xgrad::optim {

/// A group's option values by PyTorch's names (`"lr"`, `"momentum"`, `"weight_decay"` ...); Adam's
/// `betas` are `"beta1"` and `"beta2"`, flags are 0 or 1. Schedulers add their own keys, as in
/// PyTorch (`"initial_lr"`, OneCycleLR's `"max_lr"` ...).
using GroupOptions = std::map<std::string, double>;

/// One parameter group, an entry of PyTorch's `optimizer.param_groups`: parameters sharing options.
struct ParamGroup {
    std::vector<Tensor> params;  ///< The group's parameters.
    GroupOptions options;        ///< Its options, every default filled in.
};

/// One parameter's optimizer state by PyTorch's names (`"step"`, `"exp_avg"`, `"momentum_buffer"` ...).
using ParamState = std::map<std::string, Tensor>;

/// A state dict as a flat, ordered list of named tensors (savable with xgrad::save_tensors): PyTorch's
/// nested dict with its keys joined by dots, e.g. `state.0.exp_avg`, `param_groups.0.lr`.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

/// Base of the optimizers: holds handles to the parameters, in groups, and updates them in place.
///
/// The handles share storage with the module's parameters, so a module that converts or
/// materialises its parameters in place (`Module::to`, a lazily shaped LayerNorm) stays trained.
/// State (momentum, moments) is created per parameter at the first step that sees its gradient.
/// The constructor makes one group from its parameters and options; add_param_group() adds more,
/// each with its own options (PyTorch's per-group `lr`, `weight_decay` ...). Schedulers set every
/// group's learning rate.
///
/// ```cpp
/// xgrad::optim::SGD opt(model.fc1.parameters(), {.lr = 0.1});
/// opt.add_param_group(model.fc2.parameters(), {{"lr", 0.01}, {"momentum", 0.9}});  // the rest: defaults
/// opt.zero_grad();
/// loss.backward();
/// opt.step();
/// ```
class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;             ///< Not copyable: the state would be shared.
    Optimizer& operator=(const Optimizer&) = delete;  ///< Not copyable: the state would be shared.

    /// Resets every parameter's gradient to undefined (PyTorch's `set_to_none=True` default).
    void zero_grad();
    /// Updates, under NoGradGuard, every parameter whose gradient is defined; the others are skipped.
    void step();
    /// The learning rate of the first group.
    double lr() const { return groups_.front().options.at("lr"); }
    /// Sets every group's learning rate; throws when negative.
    void set_lr(double lr);
    /// Every parameter, group after group (the order of PyTorch's state_dict indices).
    const std::vector<Tensor>& parameters() const { return params_; }
    /// The parameter groups (change options with set_option()).
    const std::vector<ParamGroup>& param_groups() const { return groups_; }
    /// Option `name` of group `group`; throws when there is no such group or option.
    double option(std::size_t group, const std::string& name) const;
    /// Sets option `name` of group `group`, as `opt.param_groups[group][name] = value`; a known option
    /// is checked as the constructor checks it, an unknown name is added (schedulers keep their keys so).
    void set_option(std::size_t group, const std::string& name, double value);
    /// Adds a group, as PyTorch's `add_param_group`: options it leaves out take the constructor's
    /// values; a parameter already in another group is an error.
    void add_param_group(std::vector<Tensor> params, const GroupOptions& options = {});
    /// The options given at construction, which new groups start from (PyTorch's `defaults`).
    const GroupOptions& defaults() const { return defaults_; }

    /// The state as PyTorch's `state_dict()` with its keys joined by dots.
    ///
    /// First the state of each parameter i (counted over all groups), as copies named like
    /// `state.0.exp_avg`; then each group g's options as 0-d float64 tensors named like
    /// `param_groups.0.lr`, and its parameters' indices as the int64 tensor `param_groups.0.params`.
    StateDict state_dict() const;
    /// Restores a state_dict() (from this optimizer's kind, with the same group sizes and shapes); state
    /// tensors take their parameter's dtype and device. Everything is checked before anything changes.
    void load_state_dict(const StateDict& state);

protected:
    /// The first group, of `params` with `defaults`; checks that `params` is not empty and holds only
    /// leaves. `name` names the optimizer in errors; derived constructors call check_options(defaults).
    Optimizer(std::vector<Tensor> params, GroupOptions defaults, const char* name);
    /// Updates parameter `index` (over all groups) in place from its gradient with its group's options;
    /// called by step() under NoGradGuard.
    virtual void update(const GroupOptions& group, std::size_t index, Tensor& param, const Tensor& grad) = 0;
    /// Throws for option values the optimizer rejects (PyTorch's ValueErrors, e.g. a negative momentum).
    virtual void check_options(const GroupOptions& options) const = 0;
    /// Parameter `index`'s state by PyTorch's names (empty before its first step).
    virtual ParamState get_state(std::size_t index) const { return state_.at(index); }
    /// Replaces parameter `index`'s state (names and shapes already checked against state_names()).
    virtual void set_state(std::size_t index, ParamState state) { state_.at(index) = std::move(state); }
    /// Whether `name` can be a state entry of this optimizer (load_state_dict rejects the others).
    virtual bool is_state_name(const std::string& name) const = 0;
    /// Called when add_param_group() appended parameters (state_ has grown already).
    virtual void on_params_added(std::size_t /*first*/) {}
    /// Called by step() once update() has seen every parameter (also when one of them threw): an
    /// optimizer that defers its updates finishes them here (Adam updates many parameters in one
    /// GPU launch).
    virtual void finish_step() {}

    const char* name_;               ///< "SGD", "Adam" ...: names the optimizer in errors.
    std::vector<ParamState> state_;  ///< Per-parameter state of optimizers that keep it by name.

private:
    /// Checks `params` (defined leaves, in no other group) and appends them as a group.
    void append_group(std::vector<Tensor> params, GroupOptions options);

    std::vector<Tensor> params_;
    std::vector<ParamGroup> groups_;
    GroupOptions defaults_;
};

}  // namespace xgrad::optim
