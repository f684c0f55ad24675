// The umbrella header: everything a training script needs.
#pragma once

#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/shape.hpp"
#include "xgrad/tensor.hpp"
