// Everything under xgrad::nn: modules, layers, normalisation, functional forms and initialisation.
#pragma once

#include "xgrad/nn/activation.hpp"
#include "xgrad/nn/attention.hpp"
#include "xgrad/nn/batchnorm.hpp"
#include "xgrad/nn/container.hpp"
#include "xgrad/nn/conv.hpp"
#include "xgrad/nn/distance.hpp"
#include "xgrad/nn/distributed.hpp"
#include "xgrad/nn/embedding.hpp"
#include "xgrad/nn/flatten.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/init.hpp"
#include "xgrad/nn/linear.hpp"
#include "xgrad/nn/loss.hpp"
#include "xgrad/nn/module.hpp"
#include "xgrad/nn/normalization.hpp"
#include "xgrad/nn/pooling.hpp"
#include "xgrad/nn/utils.hpp"

/// Neural-network building blocks (PyTorch's `torch.nn`).
namespace xgrad::nn {
/// Stateless functions (PyTorch's `torch.nn.functional`); scripts alias it as `F`.
namespace functional {}
}  // namespace xgrad::nn
