// vec_math's kernels for fma3<xsimd::avx2>, compiled with -mavx2 -mfma (Haswell, Zen and later).
// This file must hold nothing but this one instantiation (see vec_math_impl.hpp).
#include "kernels/cpu/vec_math_impl.hpp"

template const xgrad::kernels::cpu::detail::VecMathTable* xgrad::kernels::cpu::detail::TableFor::operator()(
    xsimd::fma3<xsimd::avx2>) const noexcept;
