# Writes the .npy files that test_serialize.cpp reads with xgrad::load_npy and compares with
# xgrad::save_npy's output, byte for byte.
#
# Run from the repository root with Debian's NumPy (python3-numpy, 1.24):
#     /usr/bin/python3 tests/golden/gen_npy.py
# The values follow formulas the C++ test repeats (arange, scaled by powers of two so that every value
# is exact in float32), so no text file of expected values is needed.
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def save(name, array, version=None):
    """np.save's bytes, or numpy.lib.format.write_array's for an explicit format version."""
    with open(path(name), "wb") as f:
        np.lib.format.write_array(f, array, version=version, allow_pickle=False)


# Read, and written identically by xgrad: C order, Fortran order, int64, 0-d, empty.
save("npy_f4_c.npy", (np.arange(6, dtype=np.float32) * 0.5 - 1.25).reshape(2, 3))
save("npy_f8_fortran.npy", np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4) / 8))
save("npy_i8.npy", np.array([-(2**62), -1, 0, 1, 2**40 + 1], dtype=np.int64))
save("npy_f8_scalar.npy", np.array(3.5, dtype=np.float64))
save("npy_f4_empty.npy", np.zeros((0, 3), dtype=np.float32))
# Read only: big-endian data, format 2.0, a Fortran-ordered 3-d array.
save("npy_f8_big_endian.npy", (np.arange(4, dtype=np.float64).reshape(2, 2) - 1.5).astype(">f8"))
save("npy_f4_v2.npy", np.arange(8, dtype=np.float32).reshape(2, 2, 2) / 4, version=(2, 0))
save("npy_i8_fortran_3d.npy", np.asfortranarray(np.arange(24, dtype=np.int64).reshape(2, 3, 4)))
# Read and written identically: int32, uint8 and bool.
save("npy_i4.npy", np.arange(3, dtype=np.int32) - 1)
save("npy_u1.npy", np.array([0, 1, 200, 255], dtype=np.uint8))
save("npy_b1.npy", np.array([[True, False, True], [False, False, True]]))
# Refused: a dtype xgrad does not have, and a structured dtype.
save("npy_f2.npy", np.arange(3, dtype=np.float16))
save("npy_structured.npy", np.zeros(2, dtype=[("x", "<f4"), ("y", "<i8")]))

for name in sorted(os.listdir(HERE)):
    if name.startswith("npy_") and name.endswith(".npy"):
        a = np.load(path(name))
        print(f"{name}: {a.dtype.str} {a.shape} fortran={a.flags.f_contiguous and not a.flags.c_contiguous}")
