// cuBLAS is loaded at the first CUDA product, not when a program starts (src/kernels/cuda/matmul.cpp):
// its libcublasLt costs half a second and 200 MB at start-up. Runs without a GPU (loading needs none).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "../src/kernels/cuda/runtime.hpp"
#include "xgrad/xgrad.hpp"

namespace {

bool mapped(const std::string& library) {
    std::ifstream maps("/proc/self/maps");
    std::stringstream text;
    text << maps.rdbuf();
    return text.str().find(library) != std::string::npos;
}

}  // namespace

TEST_CASE("cuBLAS stays out of a program until its first CUDA product, and then loads") {
    // A CPU program's whole life: tensors, a product, a backward pass, the CUDA queries.
    xgrad::Tensor w = xgrad::randn({4, 3}).requires_grad_();
    xgrad::matmul(xgrad::randn({2, 4}), w).sum().backward();
    CHECK(w.grad().defined());
    (void)xgrad::cuda::is_available();
    CHECK_FALSE(mapped("libcublas"));
    CHECK(xgrad::kernels::cuda::load_cublas() == "success");
    CHECK(mapped("libcublas.so"));
    CHECK(mapped("libcublasLt.so"));
    CHECK(xgrad::kernels::cuda::load_cublas() == "success");  // loaded once, kept
}
