// The NCCL transport under xgrad::distributed (src/distributed_nccl.cpp), on one GPU in a world of one
// rank: every collective runs through NCCL on device memory, queued between the kernels that write and
// read its buffers. Needs a GPU (exit 77, meson's SKIP, without one). The multi-rank checks are in
// tests/mpi/test_mpi.cpp; usable()'s verdict on the ranks' identities is tested in test_distributed.cpp.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../src/detail/comm.hpp"
#include "../src/detail/tensor_impl.hpp"
#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
namespace nccl = xgrad::detail::comm::nccl;
using xgrad::detail::comm::Op;

namespace {

void* data(const Tensor& t) {
    return static_cast<char*>(t.impl()->storage->data) +
           t.impl()->offset * static_cast<std::int64_t>(xgrad::element_size(t.dtype()));
}

// Values made by a kernel just before the collective, so that the collective must follow it on the stream.
Tensor values(std::int64_t n, xgrad::DType dtype) {
    return (xgrad::arange(static_cast<double>(n),
                          xgrad::TensorOptions{.dtype = xgrad::kFloat64, .device = xgrad::kCUDA}) *
                3 -
            7)
        .to(dtype);
}

}  // namespace

TEST_CASE("every collective through NCCL in a world of one, in each dtype") {
    const int device = 0;
    REQUIRE(nccl::built());
    REQUIRE(nccl::usable(device, /*rank=*/0, /*world_size=*/1));
    for (auto dtype : {xgrad::kFloat32, xgrad::kFloat64, xgrad::kInt64, xgrad::kInt32, xgrad::kUInt8}) {
        INFO("dtype " << xgrad::to_string(dtype));
        const Tensor expected = values(1000, dtype).cpu();
        for (Op op : {Op::kSum, Op::kMax, Op::kMin}) {  // one rank: the reduction is its own tensor
            Tensor t = values(1000, dtype);
            nccl::allreduce(data(t), t.numel(), dtype, op, device);
            CHECK(xgrad::equal(t.cpu(), expected));
        }
        Tensor b = values(1000, dtype);
        nccl::broadcast(data(b), b.numel(), dtype, /*root=*/0, device);
        CHECK(xgrad::equal(b.cpu(), expected));

        // Out of place, into the middle of a larger buffer: only the block is written.
        Tensor out = xgrad::zeros({1200}, xgrad::TensorOptions{.dtype = dtype, .device = xgrad::kCUDA});
        Tensor block = out.narrow(0, 100, 1000);
        nccl::allgather(data(values(1000, dtype)), data(block), 1000, dtype, device);
        CHECK(xgrad::equal(block.cpu(), expected));
        CHECK(out.narrow(0, 0, 100).cpu().to(xgrad::kFloat64).abs().sum().item<double>() == 0.0);
        CHECK(out.narrow(0, 1100, 100).cpu().to(xgrad::kFloat64).abs().sum().item<double>() == 0.0);

        Tensor scattered = xgrad::zeros({1000}, xgrad::TensorOptions{.dtype = dtype, .device = xgrad::kCUDA});
        nccl::reduce_scatter(data(values(1000, dtype)), data(scattered), 1000, dtype, Op::kSum, device);
        CHECK(xgrad::equal(scattered.cpu(), expected));
    }
    // The collective is queued, not waited for: a kernel after it sees its result.
    Tensor t = values(1 << 20, xgrad::kFloat32);
    nccl::allreduce(data(t), t.numel(), xgrad::kFloat32, Op::kSum, device);
    CHECK((t * 2).sum().item<double>() == doctest::Approx(values(1 << 20, xgrad::kFloat32).sum().item<double>() * 2));
    // The verdict is kept: asking again makes no second communicator.
    CHECK(nccl::usable(device, 0, 1));
    nccl::finalize(/*at_exit=*/false);
}

TEST_CASE("an empty tensor is a no-op") {
    REQUIRE(nccl::usable(0, 0, 1));
    Tensor e = xgrad::zeros({0}, xgrad::kCUDA);
    nccl::allreduce(data(e), 0, xgrad::kFloat32, Op::kSum, 0);
    CHECK(e.numel() == 0);
    nccl::finalize(/*at_exit=*/false);
}

int main(int argc, char** argv) {
    if (!xgrad::cuda::is_available()) {
        std::printf("no CUDA device: skipped\n");
        return 77;  // meson's exit code for a skipped test
    }
    doctest::Context context(argc, argv);
    return context.run();
}
