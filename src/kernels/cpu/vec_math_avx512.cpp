// vec_math's kernels for avx512bw, compiled with -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx512vl -mfma
// (Skylake-X, Zen 4 and later). This file must hold nothing but this one instantiation (vec_math_impl.hpp).

// GCC 12's avx512fintrin.h builds its "undefined" operands from self-initialised variables, which
// -Wuninitialized reports wherever they are inlined: a header quirk, not a bug here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // GCC's name; clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/vec_math_impl.hpp"

template const xgrad::kernels::cpu::detail::VecMathTable* xgrad::kernels::cpu::detail::TableFor::operator()(
    xsimd::avx512bw) const noexcept;
#pragma GCC diagnostic pop
