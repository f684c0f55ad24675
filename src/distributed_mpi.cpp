// The MPI transport of xgrad::distributed (built when meson finds MPI): thin calls into MPI_COMM_WORLD.
#define OMPI_SKIP_MPICXX 1  // the C API only: no deprecated C++ bindings in xgrad's objects
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "detail/comm.hpp"
#include "detail/tensor_impl.hpp"

namespace xgrad::detail::comm {

namespace {

MPI_Datatype mpi_type(DType dtype) {
    switch (dtype) {
        case kFloat32:
            return MPI_FLOAT;
        case kFloat64:
            return MPI_DOUBLE;
        case kInt64:
            return MPI_INT64_T;
        case kInt32:
            return MPI_INT32_T;
        case kUInt8:
        case kBool:  // moved as bytes; the reducing collectives refuse bool
            return MPI_UINT8_T;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(Op op) {
    switch (op) {
        case Op::kSum:
            return MPI_SUM;
        case Op::kMax:
            return MPI_MAX;
        case Op::kMin:
            return MPI_MIN;
    }
    return MPI_OP_NULL;
}

void check(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    fail(call, std::string(text, static_cast<std::size_t>(length)));
}

// MPI counts are int: larger buffers go in chunks of 2^30 elements.
constexpr std::int64_t kChunk = std::int64_t{1} << 30;

template <typename F>
void chunked(std::int64_t count, F&& f) {
    for (std::int64_t start = 0; start < count || (count == 0 && start == 0); start += kChunk) {
        f(start, static_cast<int>(std::min(kChunk, count - start)));
        if (count == 0) break;
    }
}

char* at(void* buf, std::int64_t element, DType dtype) {
    return static_cast<char*>(buf) + element * static_cast<std::int64_t>(element_size(dtype));
}

}  // namespace

struct RequestState {
    std::vector<MPI_Request> requests;
};

bool built_with_mpi() {
    return true;
}

bool launched() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
        if (std::getenv(var)) return true;
    return false;
}

void init(int& rank, int& world_size) {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
        int provided = 0;  // collectives are called from the thread that runs backward(), one at a time
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    }
    // Errors come back as codes that check() turns into exceptions, rather than ending the job silently.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size");
}

void finalize() {
    int ready = 0, done = 0;
    MPI_Initialized(&ready);
    MPI_Finalized(&done);
    if (ready && !done) MPI_Finalize();
}

bool finalized() {
    int done = 0;
    MPI_Finalized(&done);
    return done != 0;
}

void barrier() {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void abort(const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this is for the compiler
}

void allreduce(void* buf, std::int64_t count, DType dtype, Op op) {
    chunked(count, [&](std::int64_t start, int n) {
        check(MPI_Allreduce(MPI_IN_PLACE, at(buf, start, dtype), n, mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD),
              "MPI_Allreduce");
    });
}

void broadcast(void* buf, std::int64_t count, DType dtype, int root) {
    chunked(count, [&](std::int64_t start, int n) {
        check(MPI_Bcast(at(buf, start, dtype), n, mpi_type(dtype), root, MPI_COMM_WORLD), "MPI_Bcast");
    });
}

void allgather(const void* in, void* out, std::int64_t count, DType dtype) {
    if (count > INT_MAX) fail("all_gather", "more than 2^31 - 1 elements per rank");
    check(MPI_Allgather(in, static_cast<int>(count), mpi_type(dtype), out, static_cast<int>(count), mpi_type(dtype),
                        MPI_COMM_WORLD),
          "MPI_Allgather");
}

void reduce_scatter(const void* in, void* out, std::int64_t count, DType dtype, Op op) {
    if (count > INT_MAX) fail("reduce_scatter", "more than 2^31 - 1 elements per rank");
    check(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD),
          "MPI_Reduce_scatter_block");
}

Request iallreduce(void* buf, std::int64_t count, DType dtype, Op op) {
    auto request = std::make_shared<RequestState>();
    chunked(count, [&](std::int64_t start, int n) {
        MPI_Request r;
        check(MPI_Iallreduce(MPI_IN_PLACE, at(buf, start, dtype), n, mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD, &r),
              "MPI_Iallreduce");
        request->requests.push_back(r);
    });
    return request;
}

void wait(const Request& request) {
    if (!request) return;
    check(MPI_Waitall(static_cast<int>(request->requests.size()), request->requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
    request->requests.clear();
}

}  // namespace xgrad::detail::comm
