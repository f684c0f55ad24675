// Checks xgrad::distributed in a world of one (no mpirun): DistributedSampler against PyTorch's, the
// collectives as identities, argument errors, DDP's wrapper, and the engine's post-accumulate hook
// that DDP starts its all-reduces from. The multi-rank checks are in tests/mpi/.
#include <doctest/doctest.h>

#include "../src/detail/comm.hpp"         // NCCL's verdict on the ranks' GPUs
#include "../src/detail/tensor_impl.hpp"  // the engine's post-accumulate hook and backward callbacks
#include "golden.hpp"

#include <string>
#include <vector>

#include "xgrad/xgrad.hpp"

using xgrad::Tensor;
namespace dist = xgrad::distributed;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;

TEST_CASE("distributed: a program not started by mpirun is a world of one") {
    dist::init();
    dist::init();  // twice is fine
    CHECK(dist::is_initialized());
    CHECK(dist::rank() == 0);
    CHECK(dist::world_size() == 1);
    dist::barrier();
}

TEST_CASE("distributed: in a world of one every collective leaves the values as they are") {
    dist::init();
    for (auto op : {dist::ReduceOp::kSum, dist::ReduceOp::kAvg, dist::ReduceOp::kMax, dist::ReduceOp::kMin}) {
        Tensor t = xgrad::tensor({1.5, -2.0, 3.25});
        dist::all_reduce(t, op);
        CHECK(t.to_vector<double>() == std::vector<double>{1.5, -2.0, 3.25});
    }
    Tensor i = xgrad::from_vector(std::vector<std::int64_t>{4, 5}, {2}, xgrad::kInt64);
    dist::all_reduce(i, dist::ReduceOp::kMax);
    dist::broadcast(i, 0);
    CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 5});

    Tensor in = xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}}).transpose(0, 1);  // not contiguous
    std::vector<Tensor> outs{xgrad::zeros({2, 2})};
    dist::all_gather(outs, in);
    CHECK(outs[0].to_vector<double>() == std::vector<double>{1, 3, 2, 4});
    Tensor gathered = xgrad::zeros({2, 2});
    dist::all_gather_into_tensor(gathered, in);
    CHECK(gathered.to_vector<double>() == std::vector<double>{1, 3, 2, 4});
    Tensor out = xgrad::zeros({2, 2});
    dist::reduce_scatter(out, {in}, dist::ReduceOp::kSum);
    CHECK(out.to_vector<double>() == std::vector<double>{1, 3, 2, 4});
    Tensor out2 = xgrad::zeros({2});
    dist::reduce_scatter_tensor(out2, xgrad::tensor({7.0, 8.0}));
    CHECK(out2.to_vector<double>() == std::vector<double>{7, 8});
}

TEST_CASE("distributed: bad arguments name the collective") {
    dist::init();
    Tensor i = xgrad::zeros({3}, xgrad::kInt64);
    CHECK(golden::invalid_argument_of([&] { dist::all_reduce(i, dist::ReduceOp::kAvg); }) ==
          "all_reduce: ReduceOp::kAvg needs a floating-point tensor, got torch.int64");
    Tensor t = xgrad::zeros({3});
    CHECK(golden::invalid_argument_of([&] { dist::broadcast(t, 1); }) ==
          "broadcast: root 1 is not a rank of a world of 1");
    std::vector<Tensor> two{xgrad::zeros({3}), xgrad::zeros({3})};
    CHECK(golden::invalid_argument_of([&] { dist::all_gather(two, t); }) ==
          "all_gather: expected 1 output tensors (one per rank), got 2");
    std::vector<Tensor> wrong{xgrad::zeros({2})};
    CHECK(golden::invalid_argument_of([&] { dist::all_gather(wrong, t); }) ==
          "all_gather: output 0 has shape (2,) and dtype float32 but the input has shape (3,) and dtype float32");
    Tensor big = xgrad::zeros({4});
    CHECK(golden::invalid_argument_of([&] { dist::all_gather_into_tensor(big, t); }) ==
          "all_gather_into_tensor: the output has shape (4,) and dtype float32 but needs 1 times the input's elements "
          "(input has shape (3,) and dtype float32)");
    CHECK(golden::invalid_argument_of([&] { dist::reduce_scatter_tensor(t, big); }) ==
          "reduce_scatter_tensor: the input has shape (4,) and dtype float32 but needs 1 times the output's elements "
          "(output has shape (3,) and dtype float32)");
    Tensor undefined;
    CHECK(golden::invalid_argument_of([&] { dist::all_reduce(undefined); }).find("all_reduce") == 0);
}

TEST_CASE("distributed: DistributedSampler gives PyTorch's shares") {
    struct Case {
        std::int64_t size;
        bool shuffle;
        std::uint64_t seed;
        std::int64_t epoch;
        bool drop_last;
        int replicas;
    };
    // The cases of tests/golden/gen_distributed.py.
    const Case cases[] = {{10, true, 0, 0, false, 2},      {10, true, 0, 1, false, 2}, {1000, true, 0, 0, false, 2},
                          {1000, true, 1234, 7, false, 3}, {7, true, 5, 2, false, 3},  {2, true, 0, 0, false, 5},
                          {7, false, 0, 0, false, 3},      {7, true, 3, 1, true, 3},   {1, true, 0, 0, true, 2},
                          {5003, true, 42, 3, false, 4}};
    const auto& g = golden::load("distributed.txt");
    int checked = 0;
    for (const Case& c : cases)
        for (int rank = 0; rank < c.replicas; ++rank) {
            std::string name = "sampler." + std::to_string(c.size) + "." + std::to_string(int(c.shuffle)) + "." +
                               std::to_string(c.seed) + "." + std::to_string(c.epoch) + "." +
                               std::to_string(int(c.drop_last)) + "." + std::to_string(c.replicas) + "." +
                               std::to_string(rank);
            INFO(name);
            dist::DistributedSampler s(c.size, c.shuffle, c.seed, c.drop_last, c.replicas, rank);
            s.set_epoch(c.epoch);
            auto mine = s.indices();
            CHECK(static_cast<std::int64_t>(mine.size()) == s.num_samples());
            CHECK(mine == g.at(name).to_vector<std::int64_t>());
            ++checked;
        }
    CHECK(checked == 29);
    // In a world of one, the default rank and world give everything.
    dist::DistributedSampler all(10, false);
    CHECK(all.indices() == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    // torch: Invalid rank 3, rank should be in the interval [0, 2] (recorded in distributed.txt)
    CHECK(golden::invalid_argument_of([] { dist::DistributedSampler(10, true, 0, false, 3, 3); }) ==
          "DistributedSampler: Invalid rank 3, rank should be in the interval [0, 2]");
}

TEST_CASE("DistributedDataParallel: in a world of one it is the model, named module.<name>") {
    dist::init();
    xgrad::manual_seed(0);
    nn::Sequential model(nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 2));
    nn::Sequential twin = model;  // shares parameters: the reference computes on copies below
    nn::DistributedDataParallel ddp(model);
    auto names = ddp.named_parameters();
    REQUIRE(names.size() == 4);
    CHECK(names[0].first == "module.0.weight");
    CHECK(names[3].first == "module.2.bias");
    CHECK(ddp.num_buckets() == 0);  // nothing to reduce with one rank
    Tensor x = xgrad::randn({5, 3});
    CHECK(ddp(x).to_vector<float>() == model(x).to_vector<float>());
    F::mse_loss(ddp(x), xgrad::zeros({5, 2})).backward();
    Tensor g = model.parameters()[0].grad().clone();
    model.zero_grad();
    F::mse_loss(twin(x), xgrad::zeros({5, 2})).backward();
    CHECK(g.to_vector<float>() == model.parameters()[0].grad().to_vector<float>());
}

TEST_CASE("DistributedDataParallel: lazy parameters are refused, as in PyTorch") {
    nn::Sequential lazy(nn::Linear(3, 4), nn::LayerNorm(1));
    CHECK(golden::invalid_argument_of([&] { nn::DistributedDataParallel ddp(lazy); }) ==
          "DistributedDataParallel: Modules with uninitialized parameters can't be used with "
          "`DistributedDataParallel`. Run a dummy forward pass to correctly initialize the modules");
}

TEST_CASE("autograd: a post-accumulate hook runs once, after the leaf's last gradient of the pass") {
    Tensor w = xgrad::tensor({1.0, 2.0}).requires_grad_(true);
    std::vector<std::vector<double>> seen;
    std::vector<std::string> events;
    auto hook = std::make_shared<xgrad::detail::PostAccumulateHook>();
    hook->fn = [&] {
        seen.push_back(w.grad().to_vector<double>());
        events.push_back("hook");
        xgrad::detail::queue_backward_callback([&](bool completed) { events.push_back(completed ? "end" : "failed"); });
    };
    w.impl()->post_accumulate_hook = hook;
    ++xgrad::detail::hooked_leaves;

    ((w * 3.0).sum() + (w * w).sum()).backward();  // w reaches the leaf along two edges
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == std::vector<double>{5.0, 7.0});  // 3 + 2w: both gradients are in
    CHECK(events == std::vector<std::string>{"hook", "end"});

    w.backward(xgrad::tensor({1.0, 1.0}));  // a leaf's own backward: no walk, the hook runs at once
    CHECK(seen.size() == 2);
    CHECK(seen[1] == std::vector<double>{6.0, 8.0});

    w.impl()->post_accumulate_hook.reset();
    --xgrad::detail::hooked_leaves;
    (w * 2.0).sum().backward();
    CHECK(seen.size() == 2);
}

TEST_CASE("NCCL's verdict: only when every rank has a GPU of its own and none sets XGRAD_DISTRIBUTED_NCCL=0") {
    namespace nccl = xgrad::detail::comm::nccl;
    CHECK(nccl::accepts({"node0|0000:17:00.0|1"}));
    CHECK(nccl::accepts({"node0|0000:17:00.0|1", "node0|0000:18:00.0|1"}));
    CHECK(nccl::accepts({"node0|0000:17:00.0|1", "node1|0000:17:00.0|1"}));        // same slot, another machine
    CHECK_FALSE(nccl::accepts({"node0|0000:17:00.0|1", "node0|0000:17:00.0|1"}));  // two ranks on one GPU
    CHECK_FALSE(nccl::accepts({"node0|0000:17:00.0|1", "node1|0000:18:00.0|0"}));  // one rank said no
    CHECK_FALSE(nccl::accepts({"node0|0000:17:00.0|1", "node1|0000:18:00.0|1", "node0|0000:17:00.0|1"}));
    CHECK_FALSE(nccl::accepts({"garbled"}));
}
