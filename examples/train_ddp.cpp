// Data-parallel training: train_layernorm's MLP with LayerNorm on the three spirals, with every rank
// of an MPI job training on its own share of each batch (nn::DistributedDataParallel).
//
//   mpirun -np 2 build/examples/train_ddp [--steps N] [--batch B] [--bucket-mb MB]
//   build/examples/train_ddp                 (without mpirun: a world of one, the same program)
//
// The data set (8192 points, the same on every rank) is split by dist::DistributedSampler, reshuffled
// each epoch; each step every rank takes the next B / world_size of its indices, so the global batch
// is B whatever the number of ranks, and the model follows the same trajectory (up to the order of
// floating-point additions). Each rank prints its throughput; the final losses, all-reduced, are the
// same on every rank.
#include <xgrad/xgrad.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <vector>

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;
namespace dist = xgrad::distributed;

namespace {

constexpr int kClasses = 3;
constexpr std::int64_t kTrainSize = 8192;

struct Data {
    std::vector<float> xy;          // (N, 2)
    std::vector<std::int64_t> cls;  // (N)
};

// N points on three interleaved spiral arms (train_layernorm's data).
Data spirals(std::int64_t n, std::uint64_t seed) {
    xgrad::Generator gen(seed);
    auto t = xgrad::rand({n}, {}, &gen).to_vector<double>();
    auto c = xgrad::randint(kClasses, {n}, xgrad::kInt64, &gen).to_vector<std::int64_t>();
    auto noise = xgrad::randn({n}, {}, &gen).to_vector<double>();
    Data d{std::vector<float>(2 * n), c};
    for (std::int64_t i = 0; i < n; ++i) {
        double angle = 2 * std::numbers::pi * c[i] / kClasses + 3 * std::numbers::pi * t[i] + 0.2 * noise[i];
        d.xy[2 * i] = static_cast<float>(t[i] * std::cos(angle));
        d.xy[2 * i + 1] = static_cast<float>(t[i] * std::sin(angle));
    }
    return d;
}

// The rows `idx[from, from + n)` of the data set as a batch.
std::pair<Tensor, Tensor> rows(const Data& d, const std::vector<std::int64_t>& idx, std::size_t from, std::int64_t n) {
    std::vector<float> xy(2 * n);
    std::vector<std::int64_t> c(n);
    for (std::int64_t k = 0; k < n; ++k) {
        auto i = static_cast<std::size_t>(idx[from + k]);
        xy[2 * k] = d.xy[2 * i];
        xy[2 * k + 1] = d.xy[2 * i + 1];
        c[k] = d.cls[i];
    }
    return {xgrad::from_vector(xy, {n, 2}), xgrad::from_vector(c, {n}, xgrad::kInt64)};
}

// 8 blocks Linear(128) → LayerNorm → ReLU, then Linear(128, 3): train_layernorm's "layernorm" model.
nn::Sequential make_mlp() {
    xgrad::manual_seed(0);
    nn::Sequential mlp;
    std::int64_t in = 2;
    for (int i = 0; i < 8; ++i) {
        mlp.push_back(nn::Linear(in, 128));
        mlp.push_back(nn::LayerNorm({128}));
        mlp.push_back(nn::ReLU());
        in = 128;
    }
    mlp.push_back(nn::Linear(in, kClasses));
    return mlp;
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 300;
    std::int64_t batch = 128;
    double bucket_mb = 25.0;
    CLI::App app{"Data-parallel training of an MLP on three spirals; run with mpirun -np N"};
    app.add_option("--steps", steps, "optimizer steps")->check(CLI::PositiveNumber);
    app.add_option("--batch", batch, "global batch size (split between the ranks)")->check(CLI::PositiveNumber);
    app.add_option("--bucket-mb", bucket_mb, "DDP bucket size in MiB")->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);

    dist::init();
    const int rank = dist::rank(), world = dist::world_size();
    if (batch % world != 0) dist::abort("--batch " + std::to_string(batch) + " is not a multiple of the world size");
    const std::int64_t local = batch / world;

    const Data train = spirals(kTrainSize, 1);
    const Data held_out = spirals(3000, 2);
    nn::Sequential model = make_mlp();
    nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = bucket_mb});
    optim::Adam opt(ddp.parameters(), {.lr = 1e-3});
    dist::DistributedSampler sampler(kTrainSize, /*shuffle=*/true, /*seed=*/0);

    std::int64_t epoch = 0;
    sampler.set_epoch(epoch);
    std::vector<std::int64_t> mine = sampler.indices();
    std::size_t next = 0;
    Tensor loss;
    dist::barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int step = 1; step <= steps; ++step) {
        if (next + local > mine.size()) {  // a new epoch: a new shuffle
            sampler.set_epoch(++epoch);
            mine = sampler.indices();
            next = 0;
        }
        auto [x, y] = rows(train, mine, next, local);
        next += static_cast<std::size_t>(local);
        opt.zero_grad();
        loss = F::cross_entropy(ddp(x), y);
        loss.backward();  // returns with every grad averaged over the ranks
        opt.step();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d of %d: %d steps of %lld samples in %.2f s: %.1f steps/s, %.0f samples/s on this rank\n", rank,
                world, steps, static_cast<long long>(local), seconds, steps / seconds, steps * local / seconds);
    std::fflush(stdout);

    // The last batch's loss over the global batch, and the held-out loss (the same model on every rank).
    Tensor last = loss.detach().clone();
    dist::all_reduce(last, dist::ReduceOp::kAvg);
    xgrad::NoGradGuard no_grad;
    std::vector<std::int64_t> all(3000);
    for (std::int64_t i = 0; i < 3000; ++i) all[static_cast<std::size_t>(i)] = i;
    auto [hx, hy] = rows(held_out, all, 0, 3000);
    double eval = F::cross_entropy(model(hx), hy).item<double>();
    dist::barrier();
    std::printf("rank %d of %d: final batch loss %.4f, held-out loss %.4f\n", rank, world, last.item<double>(), eval);
    dist::finalize();
    return 0;
}
