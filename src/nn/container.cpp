// Sequential's storage, indexing and forward.
#include "xgrad/nn/container.hpp"

#include "detail/tensor_impl.hpp"

namespace xgrad::nn {

void Sequential::push_back(std::shared_ptr<Module> module) {
    if (!module) detail::fail("Sequential::push_back", "the module is null");
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
}

Module& Sequential::operator[](std::int64_t i) const {
    const auto n = static_cast<std::int64_t>(modules_.size());
    if (i < -n || i >= n)
        detail::fail("Sequential",
                     "index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " modules");
    return *modules_[static_cast<std::size_t>(i < 0 ? i + n : i)];
}

Tensor Sequential::forward(const Tensor& input) {
    Tensor x = input;
    for (auto& m : modules_) x = m->forward(x);
    return x;
}

}  // namespace xgrad::nn
