// libFuzzer target for the .npy loader: any bytes either load or throw xgrad's clear error;
// never a crash, a leak, a hang or a huge allocation. Built with -Dfuzz=enabled (clang); `.ci/run`
// runs it for a bounded time, `meson compile -C <dir> fuzz-npy` for longer.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "xgrad/serialize.hpp"
#include "xgrad/tensor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The loader reads a path: an in-memory file keeps the disk out of the loop.
    static const int fd = ::memfd_create("xgrad-fuzz", MFD_CLOEXEC);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
    try {
        const xgrad::Tensor t = xgrad::load_npy(path);
        (void)t.numel();
    } catch (const std::invalid_argument&) {
        // a malformed file: the expected outcome for most inputs
    } catch (const std::runtime_error&) {
        // an I/O error or an OutOfMemoryError: also a clear, catchable error
    }
    return 0;
}
