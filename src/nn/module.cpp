// Module bookkeeping: registration relative to the module, traversal, modes, state dicts, printing.
#include "xgrad/nn/module.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <ostream>
#include <sstream>
#include <typeinfo>

#include "detail/tensor_impl.hpp"
#include "xgrad/random.hpp"

namespace xgrad {

void detail::replace_contents(const Tensor& t, const Tensor& converted) {
    auto& impl = *t.impl();
    const auto& src = *converted.impl();
    impl.storage = src.storage;
    impl.shape = src.shape;
    impl.strides = src.strides;
    impl.offset = src.offset;
    impl.dtype = src.dtype;
    impl.device = src.device;
    impl.grad = impl.grad.defined() && impl.grad.shape() == src.shape ? impl.grad.to(src.dtype).to(src.storage->device)
                                                                      : Tensor();
}

}  // namespace xgrad

namespace xgrad::nn {

using detail::fail;

// A registered member must live inside the module object; this bound catches registering a local
// variable or a heap object by mistake (those belong in a shared_ptr).
static constexpr std::ptrdiff_t kMaxModuleSize = 1 << 16;

// ---- initialisation order ------------------------------------------------------------------------
// C++ evaluates function arguments in an unspecified order (GCC: right to left), so in
// `Sequential(Linear(5, 6), ReLU(), Linear(6, 2))` the second Linear may draw its weights first.
// PyTorch draws them left to right. Each module therefore records the generator state before its
// draws and a sequence number; Sequential's constructor redraws its arguments in argument order
// when they were built in another order and nothing else has drawn since.

struct Module::InitRecord {
    std::uint64_t sequence;
    Generator before, after;  // the default generator around this module's draws
};

namespace {
std::atomic<std::uint64_t> init_counter{0};
}  // namespace

void Module::initialize_parameters() {
    auto record = std::make_shared<InitRecord>();
    record->sequence = ++init_counter;
    record->before = default_generator();
    reset_parameters();
    record->after = default_generator();
    init_ = std::move(record);
}

void Module::redraw_in_order(const std::vector<Module*>& arguments) {
    // Every recorded initialisation in each argument's subtree, in construction order.
    std::vector<std::vector<Module*>> units;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // first and last sequence per argument
    const InitRecord* earliest = nullptr;
    for (Module* arg : arguments) {
        std::vector<Module*> drawn;
        for (auto& [name, m] : arg->named_modules())
            if (m->init_) drawn.push_back(m);
        if (drawn.empty()) continue;
        std::sort(drawn.begin(), drawn.end(),
                  [](Module* a, Module* b) { return a->init_->sequence < b->init_->sequence; });
        spans.emplace_back(drawn.front()->init_->sequence, drawn.back()->init_->sequence);
        if (!earliest || drawn.front()->init_->sequence < earliest->sequence) earliest = drawn.front()->init_.get();
        units.push_back(std::move(drawn));
    }
    bool in_order = true;
    for (std::size_t i = 1; i < spans.size(); ++i) in_order = in_order && spans[i - 1].second < spans[i].first;
    // Redraw only when the draws were out of order, back to back, and the last one is the latest
    // draw of all: then rewinding and redrawing leaves the generator exactly where PyTorch's would be.
    std::vector<const InitRecord*> all;
    for (auto& unit : units)
        for (Module* m : unit) all.push_back(m->init_.get());
    std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->sequence < b->sequence; });
    bool back_to_back = !all.empty() && all.back()->after == default_generator();
    for (std::size_t i = 1; back_to_back && i < all.size(); ++i) back_to_back = all[i]->before == all[i - 1]->after;
    if (!in_order && back_to_back) {
        default_generator() = earliest->before;
        NoGradGuard no_grad;
        for (auto& unit : units)
            for (Module* m : unit) m->reset_parameters();
    }
    for (auto& unit : units)
        for (Module* m : unit) m->init_.reset();
}

Tensor Module::forward(const Tensor&) {
    fail("forward", "module " + name() + " does not define forward()");
}

std::ptrdiff_t Module::member_offset(const void* member, const char* what, const std::string& name) const {
    auto offset = reinterpret_cast<const char*>(member) - reinterpret_cast<const char*>(this);
    if (offset <= 0 || offset >= kMaxModuleSize)
        fail(what, "'" + name +
                       "' is not a data member of this module; register a std::shared_ptr for a "
                       "submodule that lives elsewhere");
    return offset;
}

void Module::check_new_name(const std::string& name, const char* what) const {
    if (name.empty() || name.find('.') != std::string::npos)
        fail(what, "the name '" + name + "' must be non-empty and contain no '.'");
    for (const auto& t : tensors_)
        if (t.name == name) fail(what, "the name '" + name + "' is already registered");
    for (const auto& c : children_)
        if (c.name == name) fail(what, "the name '" + name + "' is already registered");
}

Tensor& Module::register_parameter(const std::string& name, Tensor& member) {
    check_new_name(name, "register_parameter");
    tensors_.push_back({name, member_offset(&member, "register_parameter", name), Kind::kParameter});
    if (member.defined() && !member.requires_grad()) member.requires_grad_(true);
    return member;
}

Tensor& Module::register_buffer(const std::string& name, Tensor& member) {
    check_new_name(name, "register_buffer");
    tensors_.push_back({name, member_offset(&member, "register_buffer", name), Kind::kBuffer});
    return member;
}

void Module::add_child(const std::string& name, Module* child, std::shared_ptr<Module> owned) {
    check_new_name(name, "register_module");
    if (!child) fail("register_module", "submodule '" + name + "' is null");
    std::ptrdiff_t offset = owned ? 0 : member_offset(child, "register_module", name);
    children_.push_back({name, offset, std::move(owned)});
}

Tensor& Module::tensor_at(const TensorEntry& e) const {
    return *reinterpret_cast<Tensor*>(const_cast<char*>(reinterpret_cast<const char*>(this)) + e.offset);
}

Module* Module::child_at(const ChildEntry& e) const {
    if (e.owned) return e.owned.get();
    return reinterpret_cast<Module*>(const_cast<char*>(reinterpret_cast<const char*>(this)) + e.offset);
}

void Module::collect(const std::string& prefix, Kind kind, bool recurse, NamedTensors& out) const {
    for (const auto& e : tensors_)
        if (e.kind == kind && tensor_at(e).defined()) out.emplace_back(prefix + e.name, tensor_at(e));
    if (!recurse) return;
    for (const auto& c : children_) child_at(c)->collect(prefix + c.name + ".", kind, true, out);
}

NamedTensors Module::named_parameters(bool recurse) const {
    NamedTensors out;
    collect("", Kind::kParameter, recurse, out);
    return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
    std::vector<Tensor> out;
    for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
    return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
    NamedTensors out;
    collect("", Kind::kBuffer, recurse, out);
    return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const {
    std::vector<std::pair<std::string, Module*>> out;
    for (const auto& c : children_) out.emplace_back(c.name, child_at(c));
    return out;
}

std::vector<Module*> Module::children() const {
    std::vector<Module*> out;
    for (const auto& c : children_) out.push_back(child_at(c));
    return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
    std::vector<std::pair<std::string, Module*>> out{{"", this}};
    for (const auto& c : children_)
        for (auto& [name, m] : child_at(c)->named_modules())
            out.emplace_back(name.empty() ? c.name : c.name + "." + name, m);
    return out;
}

void Module::zero_grad() {
    for (auto& [name, p] : named_parameters()) p.mutable_grad() = Tensor();
}

Module& Module::train(bool on) {
    training_ = on;
    for (Module* c : children()) c->train(on);
    return *this;
}

Module& Module::to(DType dtype) {
    if (!is_floating_point(dtype)) fail("Module::to", "parameters must stay floating point, got " + to_string(dtype));
    NoGradGuard no_grad;
    // Only floating-point parameters and buffers change, as PyTorch's Module.to(dtype): integer and
    // bool buffers (BatchNorm's num_batches_tracked, masks) keep their dtype.
    for (auto& [name, t] : state_dict())
        if (t.is_floating_point() && t.dtype() != dtype) detail::replace_contents(t, t.detach().to(dtype).contiguous());
    return *this;
}

Module& Module::to(Device device) {
    const Device target = detail::resolve_device(device, "Module::to");
    NoGradGuard no_grad;
    for (auto& [name, t] : state_dict())
        if (t.device() != target) detail::replace_contents(t, t.detach().to(target));
    return *this;
}

NamedTensors Module::state_dict() const {
    NamedTensors out;
    // PyTorch orders a module's own parameters, then its buffers, then each child's, recursively.
    std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
        m.collect(prefix, Kind::kParameter, false, out);
        m.collect(prefix, Kind::kBuffer, false, out);
        for (const auto& c : m.children_) walk(*m.child_at(c), prefix + c.name + ".");
    };
    walk(*this, "");
    return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
    NamedTensors own = state_dict();
    std::map<std::string, Tensor> given;
    for (const auto& [name, t] : state) {
        if (!given.emplace(name, t).second) fail("load_state_dict", "the name '" + name + "' appears twice");
    }
    // Lazy modules take their shapes from the file (as PyTorch's lazy modules do when loading).
    std::map<std::string, Module*> lazy;  // by prefix: "" for this module, "norm." for a child
    for (auto& [name, m] : named_modules())
        if (m->has_uninitialized_parameters()) {
            m->initialize_from(given, name.empty() ? "" : name + ".", /*apply=*/false);
            lazy[name.empty() ? "" : name + "."] = m;
        }
    std::vector<std::string> missing, unexpected;
    std::map<std::string, bool> known;
    for (const auto& [name, t] : own) {
        known[name] = true;
        auto it = given.find(name);
        if (it == given.end()) {
            missing.push_back(name);
            continue;
        }
        const Tensor& src = it->second;
        if (!src.defined()) fail("load_state_dict", "the tensor for '" + name + "' is undefined");
        const bool shape_from_file = lazy.count(name.substr(0, name.rfind('.') + 1)) != 0;
        if (!shape_from_file && src.shape() != t.shape())
            fail("load_state_dict", "size mismatch for " + name + ": the file has shape " + to_string(src.shape()) +
                                        ", the module has shape " + to_string(t.shape()));
        if (src.dtype() != t.dtype())
            fail("load_state_dict", "dtype mismatch for " + name + ": the file has " + to_string(src.dtype()) +
                                        ", the module has " + to_string(t.dtype()));
    }
    for (const auto& [name, t] : state)
        if (!known.count(name)) unexpected.push_back(name);
    if (strict && (!missing.empty() || !unexpected.empty())) {
        std::string msg = "error(s) in loading state_dict for " + name() + ":";
        auto list = [](const std::vector<std::string>& v) {
            std::string s;
            for (const auto& n : v) s += (s.empty() ? "\"" : ", \"") + n + "\"";
            return s;
        };
        if (!missing.empty()) msg += " missing key(s): " + list(missing) + ".";
        if (!unexpected.empty()) msg += " unexpected key(s): " + list(unexpected) + ".";
        fail("load_state_dict", msg);
    }
    NoGradGuard no_grad;  // everything checked: now write
    for (auto& [prefix, m] : lazy) m->initialize_from(given, prefix, /*apply=*/true);
    for (auto& [name, t] : own) {
        auto it = given.find(name);
        if (it != given.end()) t.copy_(it->second);
    }
}

std::string Module::name() const {
    const char* mangled = typeid(*this).name();
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string full = status == 0 && demangled ? demangled : mangled;
    std::free(demangled);
    auto cut = full.rfind("::");  // the class name without its namespaces, as Python prints it
    return cut == std::string::npos ? full : full.substr(cut + 2);
}

namespace {

/// Indents every line but the first by `spaces` (PyTorch's _addindent).
std::string add_indent(const std::string& s, int spaces) {
    std::string out;
    for (char c : s) {
        out += c;
        if (c == '\n') out.append(static_cast<std::size_t>(spaces), ' ');
    }
    return out;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Module& module) {
    std::vector<std::string> extra_lines, child_lines;
    std::string extra = module.extra_repr();
    if (!extra.empty()) {
        std::istringstream in(extra);
        for (std::string line; std::getline(in, line);) extra_lines.push_back(line);
    }
    for (const auto& [name, child] : module.named_children()) {
        std::ostringstream c;
        c << *child;
        child_lines.push_back("(" + name + "): " + add_indent(c.str(), 2));
    }
    os << module.name() << "(";
    if (extra_lines.size() == 1 && child_lines.empty()) {
        os << extra_lines[0];
    } else if (!extra_lines.empty() || !child_lines.empty()) {
        os << "\n";
        for (const auto& l : extra_lines) os << "  " << l << "\n";
        for (const auto& l : child_lines) os << "  " << l << "\n";
    }
    return os << ")";
}

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    // Shortest digits that round-trip, then Python's layout: scientific when the exponent is below
    // -4 or at least 16, with a two-digit exponent and a ".0" on integral values otherwise.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    std::string sci(buf, end);  // d.ddde±XX
    auto e = sci.find('e');
    std::string mantissa = sci.substr(0, e);
    int exponent = std::stoi(sci.substr(e + 1));
    bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        out += digits[0];
        if (digits.size() > 1) out.append(".").append(digits, 1, std::string::npos);
        out += exponent < 0 ? "e-" : "e+";
        std::string e_digits = std::to_string(std::abs(exponent));
        if (e_digits.size() < 2) out += '0';
        out += e_digits;
    } else if (exponent < 0) {
        out.append("0.").append(static_cast<std::size_t>(-exponent - 1), '0').append(digits);
    } else {
        auto int_len = static_cast<std::size_t>(exponent + 1);
        if (digits.size() <= int_len) {
            out.append(digits).append(int_len - digits.size(), '0').append(".0");
        } else {
            out.append(digits, 0, int_len).append(".").append(digits, int_len, std::string::npos);
        }
    }
    return out;
}

}  // namespace xgrad::nn
