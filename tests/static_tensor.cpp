// Tensors in static storage are destroyed after main returns, in an order C++ does not fix against
// xgrad's own statics: the large-block cache must still be there for them (the AddressSanitizer run
// in .ci/run reports a use after free if it is not). Exits 0 when the values are right.
#include "xgrad/xgrad.hpp"

xgrad::Tensor g_big = xgrad::ones({1 << 15});  // 128 KiB: freed into the block cache at exit

int main() {
    static xgrad::Tensor local = xgrad::full({1 << 16}, 2.0);  // 256 KiB, a function-local static
    xgrad::Tensor scratch = xgrad::zeros({1 << 16});           // goes back to the cache before the statics
    const float sum = g_big.sum().item<float>() + local.sum().item<float>() + scratch.sum().item<float>();
    return sum == 32768.0f + 131072.0f ? 0 : 1;
}
