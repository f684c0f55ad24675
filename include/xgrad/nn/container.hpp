// Sequential: a chain of modules applied in order.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
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

}  // namespace xgrad::nn
