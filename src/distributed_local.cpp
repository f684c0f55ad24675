// The transport of a build without MPI: a world of one, where every collective leaves its data as it is.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "detail/comm.hpp"

namespace xgrad::detail::comm {

struct RequestState {};

bool built_with_mpi() {
    return false;
}
bool launched() {
    return false;
}
void init(int& rank, int& world_size) {
    rank = 0;
    world_size = 1;
}
void finalize() {}
bool finalized() {
    return false;
}
void barrier() {}
void abort(const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
}
void allreduce(void*, std::int64_t, DType, Op) {}
void broadcast(void*, std::int64_t, DType, int) {}
void allgather(const void* in, void* out, std::int64_t count, DType dtype) {
    if (in != out && count > 0) std::memcpy(out, in, static_cast<std::size_t>(count) * element_size(dtype));
}
void reduce_scatter(const void* in, void* out, std::int64_t count, DType dtype, Op) {
    if (in != out && count > 0) std::memcpy(out, in, static_cast<std::size_t>(count) * element_size(dtype));
}
Request iallreduce(void*, std::int64_t, DType, Op) {
    return nullptr;
}
void wait(const Request&) {}

}  // namespace xgrad::detail::comm
