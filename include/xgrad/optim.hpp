// Everything under xgrad::optim: optimizers and learning-rate schedulers.
#pragma once

#include "xgrad/optim/adadelta.hpp"
#include "xgrad/optim/adagrad.hpp"
#include "xgrad/optim/adam.hpp"
#include "xgrad/optim/adamax.hpp"
#include "xgrad/optim/lr_scheduler.hpp"
#include "xgrad/optim/optimizer.hpp"
#include "xgrad/optim/rmsprop.hpp"
#include "xgrad/optim/sgd.hpp"

/// Optimizers and learning-rate schedulers (PyTorch's `torch.optim`), updating parameters in place.
namespace xgrad::optim {}
