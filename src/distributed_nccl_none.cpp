// A build without NCCL: collectives on CUDA tensors stage through host memory and the transport.
#include "detail/comm.hpp"
#include "detail/tensor_impl.hpp"

namespace xgrad::detail::comm::nccl {

namespace {

[[noreturn]] void unreachable(const char* call) {
    fail(call, "this build of xgrad has no NCCL");
}

}  // namespace

bool built() {
    return false;
}
bool usable(int, int, int) {
    return false;
}
void allreduce(void*, std::int64_t, DType, Op, int) {
    unreachable("ncclAllReduce");
}
void broadcast(void*, std::int64_t, DType, int, int) {
    unreachable("ncclBroadcast");
}
void allgather(const void*, void*, std::int64_t, DType, int) {
    unreachable("ncclAllGather");
}
void reduce_scatter(const void*, void*, std::int64_t, DType, Op, int) {
    unreachable("ncclReduceScatter");
}
void finalize(bool) {}

}  // namespace xgrad::detail::comm::nccl
