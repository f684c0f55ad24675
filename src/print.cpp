// Tensor printing: a line-for-line port of the rules in PyTorch 1.13's torch/_tensor_str.py.
#include "xgrad/print.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "detail/tensor_impl.hpp"

namespace xgrad {

using detail::fail;

namespace {

struct Options {
    int precision = 4;
    std::int64_t threshold = 1000;
    std::int64_t edgeitems = 3;
    int linewidth = 80;
    std::optional<bool> sci_mode;
};

Options& options() {
    static Options current;
    return current;
}

/// printf-style formatting of one double; glibc rounds the exact binary value half-to-even, as
/// Python's format() does.
std::string printf_double(const char* spec, int width, int precision, double v) {
    char buf[512];
    int n = std::snprintf(buf, sizeof buf, spec, width, precision, v);
    if (n < static_cast<int>(sizeof buf)) return std::string(buf, static_cast<std::size_t>(n));
    std::string big(static_cast<std::size_t>(n) + 1, '\0');
    std::snprintf(big.data(), big.size(), spec, width, precision, v);
    big.resize(static_cast<std::size_t>(n));
    return big;
}

/// Python's spelling of a non-finite float ("nan" whatever its sign bit).
std::string non_finite(double v) {
    return std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
}

std::string pad_left(std::string s, std::int64_t width) {
    if (static_cast<std::int64_t>(s.size()) < width) s.insert(0, static_cast<std::size_t>(width) - s.size(), ' ');
    return s;
}

/// `'{:.{p}e}'.format(v)` (with a minimum width).
std::string format_e(double v, int precision, int width = 0) {
    if (!std::isfinite(v)) return pad_left(non_finite(v), width);
    return printf_double("%*.*e", width, precision, v);
}

/// `'{:.{p}f}'.format(v)`.
std::string format_f(double v, int precision) {
    if (!std::isfinite(v)) return non_finite(v);
    return printf_double("%*.*f", 0, precision, v);
}

/// PyTorch's _Formatter: picks integer, fixed or scientific notation and one width for all elements
/// from the values that will be shown.
class Formatter {
public:
    /// Measures int64 values: the widest decimal spelling.
    explicit Formatter(const std::vector<std::int64_t>& values) {
        for (auto v : values)
            max_width_ = std::max<std::int64_t>(max_width_, static_cast<std::int64_t>(std::to_string(v).size()));
    }

    /// Measures floating values (as doubles) and chooses the notation.
    explicit Formatter(const std::vector<double>& values) {
        const int p = options().precision;
        std::vector<double> nonzero_finite;
        for (double v : values)
            if (std::isfinite(v) && v != 0) nonzero_finite.push_back(v);
        if (nonzero_finite.empty()) return;  // as PyTorch: integer style, and sci_mode is not applied

        double lo = std::numeric_limits<double>::infinity(), hi = 0;
        for (double v : nonzero_finite) {
            lo = std::min(lo, std::abs(v));
            hi = std::max(hi, std::abs(v));
            if (v != std::ceil(v)) int_mode_ = false;
        }
        auto widest = [&](auto&& fmt, std::int64_t extra) {
            for (double v : nonzero_finite)
                max_width_ = std::max<std::int64_t>(max_width_, static_cast<std::int64_t>(fmt(v).size()) + extra);
        };
        if (int_mode_) {
            if (hi / lo > 1000.0 || hi > 1.0e8) {
                sci_mode_ = true;
                widest([&](double v) { return format_e(v, p); }, 0);
            } else {
                widest([&](double v) { return format_f(v, 0); }, 1);
            }
        } else if (hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4) {
            sci_mode_ = true;
            widest([&](double v) { return format_e(v, p); }, 0);
        } else {
            widest([&](double v) { return format_f(v, p); }, 0);
        }
        if (options().sci_mode) sci_mode_ = *options().sci_mode;
    }

    std::int64_t width() const { return max_width_; }
    /// Sets the width of every element (bool tensors, whose "True"/"False" the formatter does not measure).
    void set_width(std::int64_t width) { max_width_ = width; }

    std::string format(std::int64_t v) const { return pad_left(std::to_string(v), max_width_); }

    std::string format(double v) const {
        std::string s;
        if (sci_mode_)
            s = format_e(v, options().precision, static_cast<int>(max_width_));
        else if (int_mode_)
            s = std::isfinite(v) ? format_f(v, 0) + "." : non_finite(v);
        else
            s = format_f(v, options().precision);
        return pad_left(std::move(s), max_width_);
    }

private:
    bool int_mode_ = true;
    bool sci_mode_ = false;
    std::int64_t max_width_ = 1;
};

/// The tensor's values in row-major order and the recursive layout of _tensor_str.
struct Printer {
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;  // row-major strides of `values`
    std::vector<double> values;
    std::vector<std::int64_t> ints;  // for integer and bool tensors
    bool floating = true;
    bool boolean = false;  // printed as True/False, in the formatter's width
    bool summarize = false;
    std::int64_t edge = 3;

    std::string at(std::int64_t i, const Formatter& f) const {
        auto k = static_cast<std::size_t>(i);
        if (boolean) return pad_left(ints[k] ? "True" : "False", f.width());
        return floating ? f.format(values[k]) : f.format(ints[k]);
    }

    /// The indices (along one dimension of size n) that a summarised print keeps; Python's
    /// `x[:e] + x[-e:]`, where e = 0 keeps everything.
    std::vector<std::int64_t> kept(std::int64_t n) const {
        std::vector<std::int64_t> idx;
        if (summarize && n > 2 * edge) {
            for (std::int64_t i = 0; i < edge; ++i) idx.push_back(i);
            for (std::int64_t i = edge > 0 ? n - edge : 0; i < n; ++i) idx.push_back(i);
        } else {
            for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
        }
        return idx;
    }

    /// get_summarized_data: the elements the formatter measures.
    void collect(std::size_t dim, std::int64_t offset, std::vector<std::int64_t>& out) const {
        if (dim == shape.size()) {
            out.push_back(offset);
            return;
        }
        if (dim + 1 < shape.size() && summarize && shape[dim] > 2 * edge && edge == 0)
            fail("print", "edgeitems = 0 cannot summarise a tensor of 2 or more dimensions");
        for (auto i : kept(shape[dim])) collect(dim + 1, offset + i * strides[dim], out);
    }

    std::string vector_str(std::int64_t offset, std::int64_t indent, const Formatter& f) const {
        const std::int64_t n = shape.back(), stride = strides.back();
        const std::int64_t element_length = f.width() + 2;
        const auto per_line = std::max<std::int64_t>(
            1, static_cast<std::int64_t>(std::floor(static_cast<double>(options().linewidth - indent) /
                                                    static_cast<double>(element_length))));
        std::vector<std::string> data;
        if (summarize && n > 2 * edge) {
            for (std::int64_t i = 0; i < edge; ++i) data.push_back(at(offset + i * stride, f));
            data.push_back(" ...");
            for (std::int64_t i = edge > 0 ? n - edge : 0; i < n; ++i) data.push_back(at(offset + i * stride, f));
        } else {
            for (std::int64_t i = 0; i < n; ++i) data.push_back(at(offset + i * stride, f));
        }
        std::string out = "[";
        const std::string line_break = ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' ');
        for (std::size_t i = 0; i < data.size(); ++i) {
            if (i > 0) out += (static_cast<std::int64_t>(i) % per_line == 0) ? line_break : ", ";
            out += data[i];
        }
        return out + "]";
    }

    std::string tensor_str(std::size_t dim, std::int64_t offset, std::int64_t indent, const Formatter& f) const {
        const std::size_t ndim = shape.size() - dim;
        if (ndim == 0) return at(offset, f);
        if (ndim == 1) return vector_str(offset, indent, f);
        std::vector<std::string> slices;
        const std::int64_t n = shape[dim];
        if (summarize && n > 2 * edge) {
            for (std::int64_t i = 0; i < edge; ++i)
                slices.push_back(tensor_str(dim + 1, offset + i * strides[dim], indent + 1, f));
            slices.push_back("...");
            for (std::int64_t i = n - edge; i < n; ++i)
                slices.push_back(tensor_str(dim + 1, offset + i * strides[dim], indent + 1, f));
        } else {
            for (std::int64_t i = 0; i < n; ++i)
                slices.push_back(tensor_str(dim + 1, offset + i * strides[dim], indent + 1, f));
        }
        const std::string sep =
            "," + std::string(ndim - 1, '\n') + std::string(static_cast<std::size_t>(indent + 1), ' ');
        std::string out = "[";
        for (std::size_t i = 0; i < slices.size(); ++i) out += (i ? sep : "") + slices[i];
        return out + "]";
    }
};

/// _add_suffixes: each suffix goes on the last line if it fits in linewidth, else on a new line.
std::string add_suffixes(const std::string& body, const std::vector<std::string>& suffixes, std::int64_t indent) {
    std::string out = body;
    auto newline = body.rfind('\n');
    std::int64_t last_line_len = static_cast<std::int64_t>(body.size()) -
                                 (newline == std::string::npos ? -1 : static_cast<std::int64_t>(newline)) + 1;
    for (const auto& suffix : suffixes) {
        const auto len = static_cast<std::int64_t>(suffix.size());
        if (last_line_len + len + 2 > options().linewidth) {
            out += ",\n" + std::string(static_cast<std::size_t>(indent), ' ') + suffix;
            last_line_len = indent + len;
        } else {
            out += ", " + suffix;
            last_line_len += len + 2;
        }
    }
    return out + ")";
}

}  // namespace

void set_printoptions(const PrintOptions& o) {
    if (o.precision && *o.precision < 0)
        fail("set_printoptions", "precision must be non-negative, got " + std::to_string(*o.precision));
    if (o.edgeitems && *o.edgeitems < 0)
        fail("set_printoptions", "edgeitems must be non-negative, got " + std::to_string(*o.edgeitems));
    Options& cur = options();
    if (o.profile) {
        if (*o.profile == "default")
            cur = Options{4, 1000, 3, 80, cur.sci_mode};
        else if (*o.profile == "short")
            cur = Options{2, 1000, 2, 80, cur.sci_mode};
        else if (*o.profile == "full")
            cur = Options{4, std::numeric_limits<std::int64_t>::max(), 3, 80, cur.sci_mode};
        else
            fail("set_printoptions", "unknown profile '" + *o.profile + "' (expected default, short or full)");
    }
    if (o.precision) cur.precision = *o.precision;
    if (o.threshold) cur.threshold = *o.threshold;
    if (o.edgeitems) cur.edgeitems = *o.edgeitems;
    if (o.linewidth) cur.linewidth = *o.linewidth;
    cur.sci_mode = o.sci_mode;
}

PrintOptions get_printoptions() {
    const Options& cur = options();
    PrintOptions o;
    o.precision = cur.precision;
    o.threshold = cur.threshold;
    o.edgeitems = cur.edgeitems;
    o.linewidth = cur.linewidth;
    o.sci_mode = cur.sci_mode;
    return o;
}

void reset_printoptions() {
    options() = Options{};
}

std::string to_string(const Tensor& tensor) {
    if (!tensor.defined()) return "[ Tensor (undefined) ]";
    const std::string prefix = "tensor(";
    const auto indent = static_cast<std::int64_t>(prefix.size());
    std::vector<std::string> suffixes;
    if (tensor.device() != kCPU) suffixes.push_back("device='" + to_string(tensor.device()) + "'");  // cuda:0

    std::string body;
    if (tensor.numel() == 0) {
        if (tensor.dim() != 1) suffixes.push_back("size=" + to_string(tensor.shape()));
        if (tensor.dtype() != kFloat32) suffixes.push_back("dtype=" + to_string(tensor.dtype()));
        body = "[]";
    } else {
        // PyTorch names every dtype but the default one, int64 and bool.
        if (tensor.dtype() != kFloat32 && tensor.dtype() != kInt64 && tensor.dtype() != kBool)
            suffixes.push_back("dtype=" + to_string(tensor.dtype()));
        Printer p;
        p.shape = tensor.shape().vec();
        p.strides = detail::contiguous_strides(tensor.shape());
        p.floating = tensor.is_floating_point();
        if (p.floating)
            p.values = tensor.to_vector<double>();
        else
            p.ints = tensor.to_vector<std::int64_t>();
        p.summarize = tensor.numel() > options().threshold;
        p.edge = options().edgeitems;
        std::vector<std::int64_t> shown;
        p.collect(0, 0, shown);
        auto measure = [&](const auto& all) {
            std::remove_cvref_t<decltype(all)> part;
            part.reserve(shown.size());
            for (auto i : shown) part.push_back(all[static_cast<std::size_t>(i)]);
            return Formatter(part);
        };
        Formatter f = p.floating ? measure(p.values) : measure(p.ints);
        p.boolean = tensor.dtype() == kBool;
        if (p.boolean)  // "True", or "False" when a shown value is false
            f.set_width(std::any_of(shown.begin(), shown.end(),
                                    [&](std::int64_t i) { return p.ints[static_cast<std::size_t>(i)] == 0; })
                            ? 5
                            : 4);
        body = p.tensor_str(0, 0, indent, f);
    }

    if (!tensor.is_leaf())
        suffixes.push_back("grad_fn=<" + tensor.grad_fn_name() + ">");
    else if (tensor.requires_grad())
        suffixes.push_back("requires_grad=True");
    return add_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) {
    return os << to_string(tensor);
}

}  // namespace xgrad
