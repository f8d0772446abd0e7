//===- Buffers.cpp - Python objects with a data pointer -> host memory views -------------===//
//
// Consumes a Python object (buffer protocol, tensor with data_ptr(), or an int address);
// produces a HostView. See Buffers.h.
//
//===------------------------------------------------------------------------------------===//
#include "Buffers.h"

#include <algorithm>
#include <cctype>

namespace py = pybind11;

namespace msccl::python {

std::optional<plan::DataType> parseDtype(const std::string &raw) {
  std::string name = raw;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (name.rfind("torch.", 0) == 0)
    name = name.substr(6);
  if (name.rfind("numpy.", 0) == 0)
    name = name.substr(6);
  if (auto d = plan::parseDataType(name))
    return d;
  if (name == "float" || name == "f4" || name == "<f4")
    return plan::DataType::Float32;
  if (name == "half" || name == "f2" || name == "<f2")
    return plan::DataType::Float16;
  if (name == "bf16")
    return plan::DataType::BFloat16;
  if (name == "int" || name == "i4" || name == "<i4")
    return plan::DataType::Int32;
  if (name == "u4" || name == "<u4")
    return plan::DataType::UInt32;
  if (name == "u1" || name == "|u1")
    return plan::DataType::UInt8;
  return std::nullopt;
}

std::optional<plan::DataType> dtypeArgument(py::handle obj) {
  if (obj.is_none())
    return std::nullopt;
  std::string s = py::str(obj);
  auto d = parseDtype(s);
  if (!d)
    throw py::value_error("unknown dtype '" + s +
                          "': expected float16, bfloat16, float32, int32, uint32 or uint8 (a string, numpy.dtype or torch.dtype)");
  return d;
}

namespace {

// Element type of a buffer-protocol format with its item size ("f" 4 -> float32).
std::optional<plan::DataType> dtypeOfFormat(const std::string &format, size_t itemsize) {
  std::string f = format;
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@' || f[0] == '!' || f[0] == '>'))
    f = f.substr(1);
  if (f.size() != 1)
    return std::nullopt;
  switch (f[0]) {
  case 'f': return itemsize == 4 ? std::optional(plan::DataType::Float32) : std::nullopt;
  case 'e': return itemsize == 2 ? std::optional(plan::DataType::Float16) : std::nullopt;
  case 'B': return itemsize == 1 ? std::optional(plan::DataType::UInt8) : std::nullopt;
  case 'i': case 'l': case 'q':
    return itemsize == 4 ? std::optional(plan::DataType::Int32) : std::nullopt;
  case 'I': case 'L': case 'Q':
    return itemsize == 4 ? std::optional(plan::DataType::UInt32) : std::nullopt;
  default: return std::nullopt;
  }
}

void checkBytes(HostView &v, std::optional<size_t> bytes, const char *what) {
  if (!bytes)
    return;
  if (*bytes > v.bytes)
    throw py::value_error(std::string(what) + ": " + std::to_string(*bytes) + " bytes asked of a buffer of " +
                          std::to_string(v.bytes) + " bytes");
  v.bytes = *bytes;
}

} // namespace

HostView hostView(py::handle obj, bool writable, std::optional<size_t> bytes, const char *what, bool deviceMemory) {
  HostView v;
  // A raw address: an int (what `tensor.data_ptr()` or `array.ctypes.data` return).
  if (py::isinstance<py::int_>(obj) && !py::isinstance<py::bool_>(obj)) {
    if (!bytes)
      throw py::type_error(std::string(what) + ": a raw address (int) needs its size in bytes");
    v.ptr = reinterpret_cast<void *>(obj.cast<uintptr_t>());
    v.bytes = *bytes;
    if (!v.ptr && v.bytes)
      throw py::value_error(std::string(what) + ": null address");
    return v;
  }
  // A tensor (PyTorch and look-alikes): data_ptr() and friends.
  if (py::hasattr(obj, "data_ptr") && py::hasattr(obj, "element_size") && py::hasattr(obj, "numel")) {
    if (py::hasattr(obj, "device")) {
      std::string device = py::str(obj.attr("device").attr("type"));
      if (device != "cpu" && !(device == "cuda" && deviceMemory))
        throw py::value_error(std::string(what) + ": the tensor is on device '" + device + "'; " +
                              (device == "cuda" ? "this communicator's backend is cpu, which needs host memory "
                                                  "(tensor.cpu(), or a communicator with backend='cuda')"
                                                : "the backends take host or CUDA memory"));
      v.device = device;
      py::object index = obj.attr("device").attr("index");
      if (!index.is_none())
        v.deviceIndex = index.cast<int>();
    }
    if (py::hasattr(obj, "is_contiguous") && !obj.attr("is_contiguous")().cast<bool>())
      throw py::value_error(std::string(what) + ": the tensor is not contiguous (tensor.contiguous())");
    v.ptr = reinterpret_cast<void *>(obj.attr("data_ptr")().cast<uintptr_t>());
    v.bytes = obj.attr("numel")().cast<size_t>() * obj.attr("element_size")().cast<size_t>();
    if (py::hasattr(obj, "dtype")) {
      v.typeName = py::str(obj.attr("dtype"));
      v.dtype = parseDtype(v.typeName);
    }
    checkBytes(v, bytes, what);
    return v;
  }
  // The buffer protocol (NumPy arrays, bytearray, memoryview, array.array).
  if (PyObject_CheckBuffer(obj.ptr())) {
    auto buffer = std::shared_ptr<Py_buffer>(new Py_buffer{}, [](Py_buffer *b) {
      if (b->obj) {
        py::gil_scoped_acquire gil;
        PyBuffer_Release(b);
      }
      delete b;
    });
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), buffer.get(), flags) != 0) {
      PyErr_Clear();
      // Say why: read-only, or not contiguous.
      Py_buffer probe{};
      if (PyObject_GetBuffer(obj.ptr(), &probe, PyBUF_C_CONTIGUOUS) == 0) {
        PyBuffer_Release(&probe);
        throw py::value_error(std::string(what) + ": the buffer is read-only, but the result is written into it");
      }
      PyErr_Clear();
      throw py::value_error(std::string(what) + ": the buffer is not C-contiguous (numpy.ascontiguousarray)");
    }
    v.ptr = buffer->buf;
    v.bytes = size_t(buffer->len);
    std::string format = buffer->format ? buffer->format : "B";
    v.dtype = dtypeOfFormat(format, size_t(buffer->itemsize));
    v.typeName = py::hasattr(obj, "dtype") ? std::string(py::str(obj.attr("dtype"))) : "format '" + format + "'";
    v.keepAlive = buffer;
    checkBytes(v, bytes, what);
    return v;
  }
  throw py::type_error(std::string(what) + ": expected an object with a data pointer (a NumPy array or other buffer, "
                       "a tensor with data_ptr(), or an int address with its size), got " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
}

} // namespace msccl::python
