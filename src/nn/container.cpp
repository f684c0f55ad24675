// The containers' storage and indexing, and Sequential's forward.
#include "xgrad/nn/container.hpp"

#include "detail/tensor_impl.hpp"

namespace xgrad::nn {

void Sequential::push_back(std::shared_ptr<Module> module) {
    if (!module) detail::fail("Sequential::push_back", "the module is null");
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
}

namespace {

/// The i-th of `modules` (negative counts from the end), or an error naming `op`.
const std::shared_ptr<Module>& at_index(const std::vector<std::shared_ptr<Module>>& modules, std::int64_t i,
                                        const char* op) {
    const auto n = static_cast<std::int64_t>(modules.size());
    if (i < -n || i >= n)
        detail::fail(op, "index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " modules");
    return modules[static_cast<std::size_t>(i < 0 ? i + n : i)];
}

}  // namespace

Module& Sequential::operator[](std::int64_t i) const {
    return *at_index(modules_, i, "Sequential");
}

Tensor Sequential::forward(const Tensor& input) {
    Tensor x = input;
    for (auto& m : modules_) x = m->forward(x);
    return x;
}

// ---- ModuleList ----

void ModuleList::push_back(std::shared_ptr<Module> module) {
    if (!module) detail::fail("ModuleList::push_back", "the module is null");
    register_module(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
}

void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
    for (const auto& m : modules)
        if (!m) detail::fail("ModuleList::extend", "a module is null");
    for (const auto& m : modules) push_back(m);
}

Module& ModuleList::operator[](std::int64_t i) const {
    return *at_index(modules_, i, "ModuleList");
}

std::shared_ptr<Module> ModuleList::ptr(std::int64_t i) const {
    return at_index(modules_, i, "ModuleList");
}

// ---- ModuleDict ----

ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> items) {
    for (const auto& [key, m] : items) insert(key, m);
}

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
    if (!module) detail::fail("ModuleDict::insert", "the module for key '" + key + "' is null");
    if (contains(key))
        detail::fail("ModuleDict::insert",
                     "key '" + key + "' already exists; xgrad does not replace a registered module");
    register_module(key, module);  // checks the name: non-empty, no '.'
    items_.emplace_back(key, std::move(module));
}

std::shared_ptr<Module> ModuleDict::ptr(const std::string& key) const {
    for (const auto& [k, m] : items_)
        if (k == key) return m;
    detail::fail("ModuleDict", "no module under key '" + key + "'");
}

Module& ModuleDict::operator[](const std::string& key) const {
    return *ptr(key);
}

bool ModuleDict::contains(const std::string& key) const {
    for (const auto& [k, m] : items_)
        if (k == key) return true;
    return false;
}

std::vector<std::string> ModuleDict::keys() const {
    std::vector<std::string> out;
    for (const auto& [k, m] : items_) out.push_back(k);
    return out;
}

}  // namespace xgrad::nn
