// vec_math's kernels for sse2, compiled with no -m flags: runs on every x86-64 CPU.
// This file must hold nothing but this one instantiation (see vec_math_impl.hpp).
#include "kernels/cpu/vec_math_impl.hpp"

template const xgrad::kernels::cpu::detail::VecMathTable* xgrad::kernels::cpu::detail::TableFor::operator()(
    xsimd::sse2) const noexcept;
