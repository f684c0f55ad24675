// to_dot: the autograd graph as Graphviz DOT text, in torchviz's style, from the engine's nodes.
#include <map>
#include <sstream>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"

namespace xgrad::autograd {

namespace {

/// A shape as torchviz prints it: "(4, 3)", "()" for a 0-d tensor.
std::string shape_label(const Shape& shape) {
    std::string s = "(";
    for (std::int64_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

struct DotWriter {
    std::map<const void*, std::string> names;  // leaf impl -> user's name
    std::map<const void*, std::string> ids;    // node or leaf -> dot id
    std::ostringstream out;

    std::string id_of(const void* p, bool* fresh) {
        std::string id = std::to_string(ids.size());
        id.insert(id.begin(), 'n');  // not "n" + ...: GCC 12 warns falsely (-Wrestrict) on that
        auto [it, inserted] = ids.emplace(p, std::move(id));
        *fresh = inserted;
        return it->second;
    }

    std::string leaf(const detail::TensorImpl* impl) {
        bool fresh = false;
        const std::string id = id_of(impl, &fresh);
        if (fresh) {
            auto named = names.find(impl);
            const std::string label = (named == names.end() ? "" : named->second) + "\\n " + shape_label(impl->shape);
            out << "\t" << id << " [label=\"" << label << "\" fillcolor=lightblue]\n";
        }
        return id;
    }

    std::string node(const detail::Node* n) {
        bool fresh = false;
        const std::string id = id_of(n, &fresh);
        if (!fresh) return id;
        out << "\t" << id << " [label=" << n->name << "]\n";
        // Each child's lines are written before the edge that names it (ids first, then the edge).
        for (const auto& e : n->next) {
            if (e.fn) {
                const std::string child = node(e.fn.get());
                out << "\t" << child << " -> " << id << "\n";
            } else if (e.leaf) {
                bool fresh_acc = false;  // one AccumulateGrad per leaf, keyed by the leaf's grad slot
                const std::string acc = id_of(&e.leaf->grad, &fresh_acc);
                if (fresh_acc) {
                    out << "\t" << acc << " [label=AccumulateGrad]\n";
                    const std::string var = leaf(e.leaf.get());
                    out << "\t" << var << " -> " << acc << "\n";
                }
                out << "\t" << acc << " -> " << id << "\n";
            }
        }
        return id;
    }
};

}  // namespace

std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& params) {
    if (!root.defined()) xgrad::detail::fail("to_dot", "the tensor is undefined");
    DotWriter w;
    for (const auto& [name, t] : params)
        if (t.defined()) w.names.emplace(t.impl().get(), name);
    w.out << "digraph {\n\tgraph [size=\"12,12\"]\n"
          << "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]\n";
    const auto* impl = root.impl().get();
    if (impl->grad_fn) {
        bool fresh = false;
        const std::string out_id = w.id_of(impl, &fresh);
        w.out << "\t" << out_id << " [label=\" " << shape_label(impl->shape) << "\" fillcolor=darkolivegreen1]\n";
        const std::string last = w.node(impl->grad_fn.get());
        w.out << "\t" << last << " -> " << out_id << "\n";
    } else {
        w.leaf(impl);
    }
    w.out << "}\n";
    return w.out.str();
}

}  // namespace xgrad::autograd
