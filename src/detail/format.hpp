// Text for error messages, shared by the ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xgrad/shape.hpp"

namespace xgrad::detail {

/// Sizes as PyTorch's messages write them: `[2, 3]`.
inline std::string size_list(const std::vector<std::int64_t>& sizes) {
    std::string s = "[";
    for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
    return s + "]";
}

/// A shape as PyTorch's messages write it: `[2, 5, 8, 8]`.
inline std::string size_list(const Shape& shape) {
    return size_list(shape.vec());
}

}  // namespace xgrad::detail
