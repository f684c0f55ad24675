// The Module base class: named parameters and submodules, modes, devices, state dicts and printing.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xgrad/tensor.hpp"

namespace xgrad::nn {

/// Tensors by dotted name, in registration order (PyTorch's `OrderedDict` state dict).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Base class of every layer and model: it knows its parameters and submodules by name.
///
/// A module registers the members that hold its state. Registrations are stored relative to the
/// module itself, so copying or moving a module keeps them pointing at the copy's own members (a copy
/// shares parameter storage with the original, as Tensor copies do). Submodules that are not
/// members are registered as `std::shared_ptr` and owned.
///
/// ```cpp
/// struct Net : xgrad::nn::Module {
///     xgrad::nn::Linear fc1{5, 6}, fc2{6, 1};
///     Net() {
///         register_module("fc1", fc1);
///         register_module("fc2", fc2);
///     }
///     xgrad::Tensor forward(const xgrad::Tensor& x) override { return fc2(fc1(x).relu()); }
/// };
/// Net net;
/// for (auto& [name, p] : net.named_parameters()) std::cout << name << "\n";  // fc1.weight ...
/// ```
class Module {
public:
    virtual ~Module() = default;

    /// The computation; modules that compute something override it.
    virtual Tensor forward(const Tensor& input);
    /// `forward(input)`, as calling a module in Python.
    Tensor operator()(const Tensor& input) { return forward(input); }

    /// Parameters by dotted name (`0.weight`, `fc1.bias`), this module's first, then each child's.
    NamedTensors named_parameters(bool recurse = true) const;
    /// The parameters, in the order of named_parameters().
    std::vector<Tensor> parameters(bool recurse = true) const;
    /// Buffers (state that is saved but not trained) by dotted name.
    NamedTensors named_buffers(bool recurse = true) const;
    /// Direct submodules by name.
    std::vector<std::pair<std::string, Module*>> named_children() const;
    /// Direct submodules.
    std::vector<Module*> children() const;
    /// This module (named "") and every descendant, depth first, by dotted name.
    std::vector<std::pair<std::string, Module*>> named_modules();

    /// Resets every parameter's gradient to undefined (PyTorch's `set_to_none=True` default).
    void zero_grad();
    /// Switches this module and its descendants to training mode (or evaluation mode for false).
    Module& train(bool on = true);
    /// Switches to evaluation mode: `train(false)`.
    Module& eval() { return train(false); }
    /// True in training mode (the default).
    bool is_training() const { return training_; }
    /// Converts every parameter and buffer in place, so handles held elsewhere (optimizers) follow.
    Module& to(DType dtype);
    /// Moves every parameter and buffer (and their gradients) to `device` in place, so optimizers
    /// built earlier keep training them; their state follows at the next step.
    Module& to(Device device);

    /// Parameters and buffers by dotted name; the tensors share storage with the module.
    NamedTensors state_dict() const;
    /// Copies values from `state` into the parameters and buffers of the same names.
    ///
    /// Shapes and dtypes must match. With `strict`, missing and unexpected names are errors too.
    /// Everything is checked before anything is written: on error the module is unchanged.
    void load_state_dict(const NamedTensors& state, bool strict = true);

    /// True while this module's own parameters still wait for their shape: a lazy module such as
    /// `LayerNorm(1)` before its first forward (PyTorch's `has_uninitialized_params()`). Saving a
    /// model with one throws; loading a state dict gives it the file's shapes.
    virtual bool has_uninitialized_parameters() const { return false; }

    /// Re-initialises the parameters as the constructor did (drawing from the default generator);
    /// modules without random initialisation do nothing.
    virtual void reset_parameters() {}

    /// The name printed for this module: the class name (override to change it).
    virtual std::string name() const;
    /// What is printed inside the parentheses, e.g. `in_features=5, out_features=6, bias=True`.
    virtual std::string extra_repr() const { return ""; }

protected:
    /// A module with nothing registered, in training mode.
    Module() = default;
    // Copies keep registrations valid (they are relative to the module); protected so that a
    // derived module cannot be sliced into a bare Module.
    /// Copies the registrations; they resolve against the copy's own members.
    Module(const Module&) = default;
    /// Moves the registrations; they resolve against the new object's own members.
    Module(Module&&) noexcept = default;
    /// Copy-assigns the registrations.
    Module& operator=(const Module&) = default;
    /// Move-assigns the registrations.
    Module& operator=(Module&&) noexcept = default;

    /// For lazy modules: the shapes of this module's entries in `state` (named `prefix` + parameter
    /// name) become its parameters' shapes. load_state_dict calls it with `apply` false to check
    /// (throw naming the entry when a shape cannot fit), then, once everything is checked, with
    /// `apply` true to create the parameters before their values are copied.
    virtual void initialize_from(const std::map<std::string, Tensor>& state, const std::string& prefix, bool apply) {
        (void)state, (void)prefix, (void)apply;
    }

    /// Registers a member tensor as a parameter named `name`; returns it.
    Tensor& register_parameter(const std::string& name, Tensor& member);
    /// Registers a member tensor as a buffer (saved in state_dict, not trained).
    Tensor& register_buffer(const std::string& name, Tensor& member);
    /// Registers a member submodule under `name`; returns it.
    template <typename M>
    M& register_module(const std::string& name, M& member) {
        add_child(name, static_cast<Module*>(&member), nullptr);
        return member;
    }
    /// Registers a submodule that this module owns through a shared pointer.
    template <typename M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        Module* raw = module.get();
        add_child(name, raw, std::shared_ptr<Module>(module, raw));
        return module;
    }

    /// Runs reset_parameters() and remembers the default generator's state before it, so that a
    /// container built from several such modules can redraw them in argument order (see Sequential).
    void initialize_parameters();
    /// Redraws the recorded initialisations of `arguments` (and their submodules) in argument order
    /// if they were drawn in another order, as C++ may evaluate constructor arguments right to left.
    static void redraw_in_order(const std::vector<Module*>& arguments);

private:
    struct InitRecord;
    enum class Kind { kParameter, kBuffer };
    struct TensorEntry {
        std::string name;
        std::ptrdiff_t offset;  // of the Tensor member, from this Module
        Kind kind;
    };
    struct ChildEntry {
        std::string name;
        std::ptrdiff_t offset;          // of a member submodule, from this Module (when not owned)
        std::shared_ptr<Module> owned;  // a submodule held by pointer
    };

    void add_child(const std::string& name, Module* child, std::shared_ptr<Module> owned);
    std::ptrdiff_t member_offset(const void* member, const char* what, const std::string& name) const;
    void check_new_name(const std::string& name, const char* what) const;
    Tensor& tensor_at(const TensorEntry& e) const;
    Module* child_at(const ChildEntry& e) const;
    void collect(const std::string& prefix, Kind kind, bool recurse, NamedTensors& out) const;

    std::vector<TensorEntry> tensors_;
    std::vector<ChildEntry> children_;
    bool training_ = true;
    std::shared_ptr<const InitRecord> init_;  // set by initialize_parameters(), cleared once adopted

    friend std::ostream& operator<<(std::ostream& os, const Module& module);
};

/// Prints the module as PyTorch prints it: `Linear(in_features=5, out_features=6, bias=True)`, or a
/// container with one `(name): child` line per submodule.
std::ostream& operator<<(std::ostream& os, const Module& module);

/// Python's `repr()` of a float (shortest round-trip form): `1e-05`, `0.5`, `1.0`.
std::string python_float_repr(double value);

}  // namespace xgrad::nn
