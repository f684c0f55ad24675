// Printing tensors exactly as PyTorch's Python repr does, with torch.set_printoptions' knobs.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "xgrad/tensor.hpp"

namespace xgrad {

/// What `set_printoptions` changes; an empty field leaves that option as it is, except sci_mode.
///
/// ```cpp
/// xgrad::set_printoptions({.precision = 4, .sci_mode = false});
/// ```
struct PrintOptions {
    std::optional<int> precision{};           ///< Digits after the point (default 4).
    std::optional<std::int64_t> threshold{};  ///< Summarise (`...`) tensors with more elements (default 1000).
    std::optional<std::int64_t> edgeitems{};  ///< Items kept at each end of a summarised dimension (default 3).
    std::optional<int> linewidth{};           ///< Characters per line before wrapping (default 80).
    /// true or false forces scientific notation on or off; empty means chosen per tensor. As in
    /// PyTorch, every set_printoptions call sets it, so leaving it empty makes it automatic again.
    std::optional<bool> sci_mode{};
    /// "default", "short" (precision 2, edgeitems 2) or "full" (never summarise), applied before the
    /// other fields.
    std::optional<std::string> profile{};
};

/// Changes how tensors print, as `torch.set_printoptions`; throws std::invalid_argument for a
/// negative precision or edgeitems, or an unknown profile.
void set_printoptions(const PrintOptions& options);
/// The options in force (every field set but sci_mode, which is empty when automatic, and profile).
PrintOptions get_printoptions();
/// Restores PyTorch's defaults: precision 4, threshold 1000, edgeitems 3, linewidth 80, automatic sci_mode.
void reset_printoptions();

/// Prints what Python's `repr(tensor)` prints in PyTorch 1.13, suffixes included.
///
/// ```cpp
/// xgrad::manual_seed(123);
/// std::cout << xgrad::randn({2, 5});
/// // tensor([[-0.1115,  0.1204, -0.3696, -0.2404, -1.1969],
/// //         [ 0.2093, -0.9724, -0.7550,  0.3239, -0.1085]])
/// ```
std::ostream& operator<<(std::ostream& os, const Tensor& tensor);
/// The text `operator<<` prints.
std::string to_string(const Tensor& tensor);

}  // namespace xgrad
