// The umbrella header: everything a training script needs.
#pragma once

#include "xgrad/autograd.hpp"
#include "xgrad/cuda.hpp"
#include "xgrad/distributed.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/nn/init.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/optim.hpp"
#include "xgrad/parallel.hpp"
#include "xgrad/print.hpp"
#include "xgrad/random.hpp"
#include "xgrad/serialize.hpp"
#include "xgrad/shape.hpp"
#include "xgrad/tensor.hpp"
#include "xgrad/version.hpp"

/// xgrad's public API: tensors, autograd, factories and operations (PyTorch's `torch.*`).
namespace xgrad {
/// Gradient checking (PyTorch's `torch.autograd`).
namespace autograd {}
/// Device queries (PyTorch's `torch.cuda`).
namespace cuda {}
}  // namespace xgrad
