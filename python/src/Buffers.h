//===- Buffers.h - Python objects with a data pointer -> host memory views ---------------===//
//
// The module's execute functions take "anything with a data pointer": objects that export the
// buffer protocol (NumPy arrays, bytearray, memoryview, array.array), PyTorch tensors (through
// `data_ptr()`, `numel()`, `element_size()`, `dtype`, `device`, `is_contiguous()`), or a raw
// address given as an int together with an explicit byte count. hostView turns one into a
// HostView: the address, the byte count, the element type when the object says which (for the
// executor's reductions), and what keeps the memory alive while the view is used.
//
// Errors (raised as Python exceptions): TypeError for an object without a data pointer,
// ValueError for a non-contiguous array or tensor, a tensor not on the CPU where the backend
// needs host memory (the CPU backend), a read-only buffer where the function writes.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace msccl::python {

struct HostView {
  void *ptr = nullptr;
  size_t bytes = 0;
  std::optional<plan::DataType> dtype;  ///< From the object's element type, when it maps to one.
  std::string typeName;                 ///< The object's element type as Python spells it ("float32", "torch.int64").
  std::shared_ptr<void> keepAlive;      ///< A held Py_buffer (released when the view dies).
  std::string device = "cpu";           ///< A tensor's device type ("cuda": its memory is device memory).
  int deviceIndex = -1;                 ///< A CUDA tensor's device index.
};

/// The memory of `obj`. `writable`: the caller stores into it (read-only buffers are refused).
/// `bytes`: required for a raw address (an int), else optional; when given for an array or
/// tensor it must not exceed the object's size (the view then covers its first `bytes` bytes).
/// `what` names the argument in messages ("send", "recv"). `deviceMemory`: the backend takes
/// device memory (CUDA), so CUDA tensors are accepted (their data_ptr() is a device address);
/// else a tensor on another device than the CPU is refused naming the remedy.
HostView hostView(pybind11::handle obj, bool writable, std::optional<size_t> bytes, const char *what,
                  bool deviceMemory = false);

/// "float32" -> DataType::Float32 etc. (also "torch.float32", "float", "half", "bf16" spellings
/// as NumPy and PyTorch name them); nullopt when unknown.
std::optional<plan::DataType> parseDtype(const std::string &name);

/// A dtype argument: None, a string, a numpy.dtype, a torch.dtype (their str()).
std::optional<plan::DataType> dtypeArgument(pybind11::handle obj);

} // namespace msccl::python
