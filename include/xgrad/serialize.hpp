// Saving and loading tensors and modules: safetensors files (what PyTorch users share models in) and NumPy's .npy.
#pragma once

#include <map>
#include <string>

#include "xgrad/nn/module.hpp"

namespace xgrad {

/// The free-form `"__metadata__"` string map of a safetensors header, e.g. `{"format": "pt"}`.
using Metadata = std::map<std::string, std::string>;

/// Writes `tensors` to `path` in the safetensors format, replacing the file atomically.
///
/// The data is written to a temporary file next to `path`, flushed to disk, then renamed over
/// `path`: on any error the temporary is removed, the old file (if any) is left as it was, and an
/// exception is thrown (std::invalid_argument for tensors that cannot be saved — undefined, duplicate
/// or reserved names — and std::runtime_error for I/O failures). Tensors are stored as F32, F64 or
/// I64, in the given order except that wider elements come first so every tensor stays aligned.
///
/// ```cpp
/// xgrad::save_tensors({{"w", xgrad::randn({2, 3})}, {"step", xgrad::tensor(7.0, xgrad::kInt64)}},
///                     "state.safetensors", {{"format", "pt"}});
/// ```
void save_tensors(const nn::NamedTensors& tensors, const std::string& path, const Metadata& metadata = {});

/// Reads every tensor of a safetensors file into new CPU tensors, in the order of the file's header.
///
/// The whole file is validated first: header length, JSON syntax, dtypes (F32, F64 and I64; any
/// other dtype is an error naming the tensor), shapes, and data offsets that must tile the data
/// exactly. A malformed file throws std::invalid_argument naming the file and the problem; a file
/// that cannot be read throws std::runtime_error. The header's `"__metadata__"` goes to `*metadata`
/// when it is given.
///
/// ```cpp
/// for (auto& [name, t] : xgrad::load_tensors("state.safetensors")) std::cout << name << " " << t.shape() << "\n";
/// ```
nn::NamedTensors load_tensors(const std::string& path, Metadata* metadata = nullptr);

/// Saves a module's state_dict() to `path` as safetensors, under PyTorch's names (`0.weight`, `fc1.bias`).
///
/// The file opens in Python with `safetensors.torch.load_file` and loads into the same architecture
/// with `load_state_dict`; it is replaced atomically, as save_tensors() does.
///
/// ```cpp
/// xgrad::nn::Sequential model(xgrad::nn::Linear(5, 6), xgrad::nn::ReLU(), xgrad::nn::Linear(6, 2));
/// xgrad::save(model, "model.safetensors");
/// // Python: model.load_state_dict(safetensors.torch.load_file("model.safetensors"))
/// ```
void save(const nn::Module& module, const std::string& path);

/// Loads a safetensors file (written by save() or by PyTorch's `safetensors.torch.save_file`) into `module`.
///
/// Names, shapes and dtypes must match the module's state_dict(); with `strict` (the default),
/// missing and unexpected names are errors too. Everything is read and checked before any parameter
/// is written, so on error the module is unchanged and the exception names the file.
///
/// ```cpp
/// // Python: safetensors.torch.save_file(model.state_dict(), "model.safetensors")
/// xgrad::nn::Sequential model(xgrad::nn::Linear(5, 6), xgrad::nn::ReLU(), xgrad::nn::Linear(6, 2));
/// xgrad::load(model, "model.safetensors");
/// ```
void load(nn::Module& module, const std::string& path, bool strict = true);

/// Writes `tensor` to `path` as a NumPy `.npy` file, which `numpy.load` reads (`np.save`'s format).
///
/// The elements are stored little-endian as `<f4`, `<f8` or `<i8`, in row-major (C) order, or in
/// column-major order with `fortran_order` (the header says which; NumPy reads both). Any tensor may be
/// saved, a view or a CUDA tensor too; the header is byte for byte what NumPy 1.24 writes for the same
/// array. The file is replaced atomically, as save_tensors() does.
///
/// ```cpp
/// xgrad::save_npy(xgrad::randn({2, 3}), "x.npy");   // Python: x = numpy.load("x.npy")
/// ```
void save_npy(const Tensor& tensor, const std::string& path, bool fortran_order = false);

/// Reads a NumPy `.npy` file (format 1.0, 2.0 or 3.0) into a new contiguous CPU tensor.
///
/// The dtype must be float32, float64 or int64, in either byte order (`<f4`, `>f8` ...); C and
/// Fortran order are both read. The file is validated as load_tensors() validates safetensors: a
/// bounded header that must be the dict NumPy writes, a known dtype, and data of exactly the size the
/// shape needs. A malformed file, or an array xgrad cannot hold (another dtype, a structured one),
/// throws std::invalid_argument naming the file and the problem; a file that cannot be read throws
/// std::runtime_error.
///
/// ```cpp
/// // Python: numpy.save("y.npy", numpy.arange(6.0).reshape(2, 3))
/// xgrad::Tensor y = xgrad::load_npy("y.npy");   // float64, shape (2, 3)
/// ```
Tensor load_npy(const std::string& path);

}  // namespace xgrad
