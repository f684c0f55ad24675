// DistributedDataParallel: a module whose gradients are averaged over the ranks of a job during backward.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "xgrad/distributed.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn {

/// Options of DistributedDataParallel, with PyTorch's defaults.
struct DistributedDataParallelOptions {
    /// Gradients are all-reduced in buckets of about this many MiB (PyTorch's `bucket_cap_mb`).
    double bucket_cap_mb = 25.0;
    /// Copy rank 0's buffers to every rank before each forward (PyTorch's `broadcast_buffers`).
    bool broadcast_buffers = true;
};

namespace detail {
struct Reducer;
}

/// Data-parallel training (PyTorch's `DistributedDataParallel`): wraps a model whose copy runs on
/// every rank of the job, each on its own share of the batch.
///
/// Construction copies rank 0's parameters and buffers to every rank. `ddp(x)` runs the model. When
/// `loss.backward()` returns, every parameter's grad is the mean over ranks of the ranks' grads: the
/// gradients are all-reduced in buckets of `bucket_cap_mb`, each started (MPI_Iallreduce) as soon as
/// backward has produced all of its gradients, while backward goes on with the layers below, and
/// waited for before backward() returns. Parameters are named `module.<name>`, as in PyTorch; save
/// `ddp.module()` on rank 0 and load it on every rank.
///
/// ```cpp
/// dist::init();
/// nn::Sequential model(nn::Linear(2, 64), nn::ReLU(), nn::Linear(64, 3));
/// nn::DistributedDataParallel ddp(model);         // every rank now has rank 0's weights
/// optim::Adam opt(ddp.parameters());
/// Tensor loss = F::cross_entropy(ddp(x_shard), y_shard);
/// loss.backward();                                 // grads: the mean over ranks
/// opt.step();                                      // the same step on every rank
/// if (dist::rank() == 0) xgrad::save(model, "model.safetensors");
/// ```
///
/// Every rank must run the same backward passes on the same model. A parameter that got no gradient
/// on any rank gets a zero one (PyTorch would ask for `find_unused_parameters`). Modules with lazy
/// parameters must run once before being wrapped.
class DistributedDataParallel : public Module {
public:
    /// Wraps `module` (kept by reference: it must outlive this) and broadcasts rank 0's state.
    explicit DistributedDataParallel(Module& module, DistributedDataParallelOptions options = {});
    /// Removes the gradient hooks from the parameters.
    ~DistributedDataParallel() override;
    /// Not copyable: the hooks on the parameters belong to one wrapper.
    DistributedDataParallel(const DistributedDataParallel&) = delete;
    /// Not copyable.
    DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

    /// Runs the wrapped module (after broadcasting buffers, when asked to).
    Tensor forward(const Tensor& input) override;
    /// The wrapped module (what to save and load).
    Module& module() { return module_; }

    /// While alive, backward passes only accumulate gradients locally; the first backward after it
    /// ends all-reduces the accumulated sums (PyTorch's `no_sync()` context).
    ///
    /// ```cpp
    /// {
    ///     auto guard = ddp.no_sync();
    ///     F::mse_loss(ddp(x1), y1).backward();   // local only
    /// }
    /// F::mse_loss(ddp(x2), y2).backward();       // grads: mean over ranks of both micro-batches' sums
    /// ```
    class NoSync {
    public:
        /// Ends the no-sync scope.
        ~NoSync();
        /// Not copyable: one guard, one scope.
        NoSync(const NoSync&) = delete;
        /// Not copyable.
        NoSync& operator=(const NoSync&) = delete;

    private:
        friend class DistributedDataParallel;
        explicit NoSync(std::shared_ptr<detail::Reducer> reducer);
        std::shared_ptr<detail::Reducer> reducer_;
    };
    /// Starts a no-sync scope that lasts as long as the returned guard.
    [[nodiscard]] NoSync no_sync();

    /// How many buckets the gradients are all-reduced in.
    std::int64_t num_buckets() const;

    /// Prints as PyTorch: `DistributedDataParallel(\n  (module): ...)`.
    std::string name() const override { return "DistributedDataParallel"; }

private:
    Module& module_;
    DistributedDataParallelOptions options_;
    std::shared_ptr<detail::Reducer> reducer_;
};

}  // namespace xgrad::nn
