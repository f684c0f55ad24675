// Containers of submodules: Sequential (a chain applied in order), ModuleList and ModuleDict.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// Applies its modules in order; they are named "0", "1", ... as in PyTorch.
///
/// Initial weights are PyTorch's for the same seed even though C++ may construct the arguments
/// right to left: the constructor redraws them in argument order when needed.
///
/// ```cpp
/// xgrad::nn::Sequential layer(xgrad::nn::Linear(5, 6), xgrad::nn::ReLU());
/// layer.push_back(xgrad::nn::Linear(6, 1));
/// xgrad::Tensor y = layer(x);
/// xgrad::nn::Module& first = layer[0];
/// for (auto& m : layer) std::cout << *m << "\n";
/// ```
class Sequential : public Module {
public:
    /// An empty chain.
    Sequential() = default;
    /// A chain of the given modules (moved or copied in).
    template <typename... Ms>
    requires(sizeof...(Ms) > 0 &&
             (std::is_base_of_v<Module, std::decay_t<Ms>> && ...)) explicit Sequential(Ms&&... modules) {
        (push_back(std::forward<Ms>(modules)), ...);
        // C++ may have built the arguments right to left; PyTorch draws initial weights left to right.
        std::vector<Module*> args;
        for (auto& m : modules_) args.push_back(m.get());
        redraw_in_order(args);
    }
    /// Appends a module (moved or copied in).
    template <typename M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
    void push_back(M&& module) {
        push_back(std::shared_ptr<Module>(std::make_shared<std::decay_t<M>>(std::forward<M>(module))));
    }
    /// Appends a module held by pointer (shared with the caller).
    void push_back(std::shared_ptr<Module> module);
    /// The i-th module (negative counts from the end); throws when out of range.
    Module& operator[](std::int64_t i) const;
    /// Number of modules.
    std::size_t size() const { return modules_.size(); }
    /// Iterators over the modules (as shared pointers).
    auto begin() const { return modules_.begin(); }
    /// Iterators over the modules (as shared pointers).
    auto end() const { return modules_.end(); }
    /// Applies every module in order.
    Tensor forward(const Tensor& input) override;

private:
    std::vector<std::shared_ptr<Module>> modules_;
};

/// A list of submodules, registered under "0", "1", ... as `torch.nn.ModuleList`: parameters(),
/// state_dict() and to() see them. It has no forward(); the owner decides how to call them.
///
/// ```cpp
/// struct Tower : xgrad::nn::Module {
///     xgrad::nn::ModuleList layers;
///     Tower() {
///         for (int i = 0; i < 3; ++i) layers.push_back(xgrad::nn::Linear(8, 8));
///         register_module("layers", layers);   // parameters: layers.0.weight, layers.0.bias, ...
///     }
///     xgrad::Tensor forward(const xgrad::Tensor& x) override {
///         xgrad::Tensor h = x;
///         for (auto& layer : layers) h = (*layer)(h).relu();
///         return h;
///     }
/// };
/// ```
class ModuleList : public Module {
public:
    /// An empty list.
    ModuleList() = default;
    /// A list of the given modules (moved or copied in), initialised in argument order as Sequential.
    template <typename... Ms>
    requires(sizeof...(Ms) > 0 &&
             (std::is_base_of_v<Module, std::decay_t<Ms>> && ...)) explicit ModuleList(Ms&&... modules) {
        (push_back(std::forward<Ms>(modules)), ...);
        std::vector<Module*> args;
        for (auto& m : modules_) args.push_back(m.get());
        redraw_in_order(args);
    }
    /// Appends a module (moved or copied in), PyTorch's `append`.
    template <typename M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
    void push_back(M&& module) {
        push_back(std::shared_ptr<Module>(std::make_shared<std::decay_t<M>>(std::forward<M>(module))));
    }
    /// Appends a module held by pointer (shared with the caller).
    void push_back(std::shared_ptr<Module> module);
    /// Appends every module of `modules` (shared), PyTorch's `extend`.
    void extend(const std::vector<std::shared_ptr<Module>>& modules);
    /// The i-th module (negative counts from the end); throws when out of range.
    Module& operator[](std::int64_t i) const;
    /// The i-th module as a shared pointer (negative counts from the end); throws when out of range.
    std::shared_ptr<Module> ptr(std::int64_t i) const;
    /// Number of modules.
    std::size_t size() const { return modules_.size(); }
    /// Iterators over the modules (as shared pointers).
    auto begin() const { return modules_.begin(); }
    /// Iterators over the modules (as shared pointers).
    auto end() const { return modules_.end(); }

private:
    std::vector<std::shared_ptr<Module>> modules_;
};

/// Submodules by string key, in insertion order, as `torch.nn.ModuleDict`: each is registered under
/// its key, so its parameters are named `key.weight`, ... and it prints as `(key): Linear(...)`.
///
/// Unlike PyTorch, inserting an existing key throws instead of replacing the module (a registered
/// submodule cannot be swapped out from under optimizers that hold its parameters).
///
/// ```cpp
/// xgrad::nn::ModuleDict heads({{"cls", std::make_shared<xgrad::nn::Linear>(16, 10)},
///                              {"box", std::make_shared<xgrad::nn::Linear>(16, 4)}});
/// xgrad::Tensor logits = heads["cls"](features);
/// for (auto& [key, m] : heads.items()) std::cout << key << ": " << *m << "\n";
/// ```
class ModuleDict : public Module {
public:
    /// An empty dictionary.
    ModuleDict() = default;
    /// The given (key, module) pairs, inserted in order (a braced list constructs them in order, so
    /// initial weights match PyTorch's for the same seed).
    ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> items);
    /// Inserts `module` (moved or copied in) under `key`; throws when the key exists.
    template <typename M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
    void insert(const std::string& key, M&& module) {
        insert(key, std::shared_ptr<Module>(std::make_shared<std::decay_t<M>>(std::forward<M>(module))));
    }
    /// Inserts a module held by pointer (shared with the caller) under `key`; throws when the key exists.
    void insert(const std::string& key, std::shared_ptr<Module> module);
    /// The module under `key`; throws when there is none.
    Module& operator[](const std::string& key) const;
    /// The module under `key` as a shared pointer; throws when there is none.
    std::shared_ptr<Module> ptr(const std::string& key) const;
    /// True when `key` is present (Python's `key in d`).
    bool contains(const std::string& key) const;
    /// Number of modules.
    std::size_t size() const { return items_.size(); }
    /// The keys, in insertion order.
    std::vector<std::string> keys() const;
    /// The (key, module) pairs, in insertion order.
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& items() const { return items_; }
    /// Iterators over the (key, module) pairs.
    auto begin() const { return items_.begin(); }
    /// Iterators over the (key, module) pairs.
    auto end() const { return items_.end(); }

private:
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> items_;
};

}  // namespace xgrad::nn
