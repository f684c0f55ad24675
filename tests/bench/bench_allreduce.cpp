// All-reduce bandwidth of xgrad::distributed::all_reduce beside a raw MPI_Allreduce loop on the same
// buffer, 1 KiB to 64 MiB of float32, to show what xgrad adds over MPI (run under mpirun -np 2 by
// `meson compile -C build bench-allreduce`).
//
// Each size is timed in rounds that alternate raw MPI and xgrad (so that the shared machine's noise
// falls on both alike); a round is `iters` back-to-back all-reduces after a barrier, and the figure
// is the fastest round's time per all-reduce, as rank 0 measured it: on a machine shared with other
// work, load only ever adds time, and the fastest round is the best estimate of the cost itself
// (medians are printed too). Bandwidth is the NCCL-tests "bus
// bandwidth": bytes * 2 (n-1) / n per second, what each rank's link carries in a ring all-reduce.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "xgrad/xgrad.hpp"

namespace dist = xgrad::distributed;

int main() {
    dist::init();  // MPI_Init through xgrad
    const int rank = dist::rank(), world = dist::world_size();
    if (rank == 0)
        std::printf(
            "all_reduce (sum) of float32 on %d ranks: time per call, fastest round (medians in the last "
            "columns); bus bandwidth 2(n-1)/n * bytes / time\n%10s %12s %12s %10s %10s %10s %12s %12s\n",
            world, "bytes", "MPI us", "xgrad us", "MPI GB/s", "xgrad GB/s", "overhead", "MPI med", "xgrad med");
    for (std::int64_t bytes = 1024; bytes <= 64ll << 20; bytes *= 4) {
        const std::int64_t n = bytes / 4;
        xgrad::Tensor t = xgrad::ones({n});
        float* raw = t.data_ptr<float>();
        const int iters = static_cast<int>(std::clamp<std::int64_t>((32ll << 20) / bytes, 3, 500));
        const int rounds = bytes >= (16ll << 20) ? 5 : 9;
        std::vector<double> mpi_times, xgrad_times;
        for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
            for (int which = 0; which < 2; ++which) {
                MPI_Barrier(MPI_COMM_WORLD);
                double start = MPI_Wtime();
                for (int i = 0; i < iters; ++i) {
                    if (which == 0)
                        MPI_Allreduce(MPI_IN_PLACE, raw, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                    else
                        dist::all_reduce(t, dist::ReduceOp::kSum);
                }
                double per_call = (MPI_Wtime() - start) / iters;
                if (round > 0) (which == 0 ? mpi_times : xgrad_times).push_back(per_call);
                t.fill_(1.0);  // every round sums ones again (values double with each call)
            }
        }
        auto median = [](std::vector<double> v) {
            std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
            return v[v.size() / 2];
        };
        const double m = *std::min_element(mpi_times.begin(), mpi_times.end());
        const double x = *std::min_element(xgrad_times.begin(), xgrad_times.end());
        const double factor = 2.0 * (world - 1) / world;
        if (rank == 0)
            std::printf("%10lld %12.1f %12.1f %10.2f %10.2f %+9.1f%% %12.1f %12.1f\n", static_cast<long long>(bytes),
                        m * 1e6, x * 1e6, factor * bytes / m / 1e9, factor * bytes / x / 1e9, (x / m - 1) * 100,
                        median(mpi_times) * 1e6, median(xgrad_times) * 1e6);
    }
    dist::finalize();
    return 0;
}
