// The library's version, compiled in, so that a program can compare it with the headers it was built with.
#include "xgrad/version.hpp"

namespace xgrad {

std::string_view version() noexcept {
    return XGRAD_VERSION_STRING;
}

}  // namespace xgrad
