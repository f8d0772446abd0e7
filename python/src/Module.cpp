//===- Module.cpp - The Python module msccl (pybind11 over libmsccl) -----------------------===//
//
// Binds libmsccl's C++ API (msccl/msccl.hpp) for Python as `msccl._msccl`;
// python/msccl/__init__.py re-exports it and adds the pure-Python parts. What is bound:
//   * Plan: an MSCCL++ execution plan (load, from_json, to_json, its metadata);
//   * compile(): a .msccl file, `stdlib:NAME` or source text (+ defines, options) to a Plan,
//     in-process, through the on-disk cache (MSCCL_CACHE_DIR);
//   * PlanRegistry: register (plans, files, directories) with what they are for, select,
//     explain, set_selector (a Python callable);
//   * Communicator: from_mpi() (MPI_COMM_WORLD, also when mpi4py initialised MPI),
//     init_rank(unique_id, world_size, rank) with get_unique_id(), from_env() (torchrun's
//     RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), local(world_size) (every rank in this process);
//   * Executor(comm).execute(send, recv, plan, ...) on anything with a data pointer (Buffers.h);
//     execute_local(plan, sends, recvs) runs every rank of a plan in this process.
// Errors become Python exceptions carrying the library's message (msccl.Error and its
// subclasses, see the module docstring); bad arguments raise TypeError / ValueError. Long calls
// (compile, execute, barrier) release the GIL.
//
//===------------------------------------------------------------------------------------===//
#include "Buffers.h"

#include "msccl/Version.h"
#include "msccl/msccl.hpp"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Elements.h"
#include "msccl/runtime/Executor.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <cstring>
#include <fstream>
#include <thread>

namespace py = pybind11;
using msccl::python::HostView;

namespace {

using PlanHolder = std::shared_ptr<msccl::plan::Plan>;

msccl::PlanPtr constPlan(const PlanHolder &p) {
  if (!p)
    throw py::value_error("plan is None");
  return p;
}
PlanHolder mutablePlan(const msccl::PlanPtr &p) { return std::const_pointer_cast<msccl::plan::Plan>(p); }

// --- Exceptions ---------------------------------------------------------------------------------

PyObject *errorBase, *compileError, *planError, *executionError, *argumentError, *noPlanError, *fileError;

PyObject *makeException(py::module_ &m, const char *name, PyObject *base, const char *doc) {
  std::string qualified = std::string("msccl.") + name;
  PyObject *cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!cls)
    throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

void raise(PyObject *cls, const std::string &message, const std::string &code, const std::string &kind,
           const std::vector<std::string> &diagnostics = {}) {
  py::object exc = py::reinterpret_borrow<py::object>(cls)(message);
  exc.attr("code") = code;
  exc.attr("kind") = kind;
  exc.attr("diagnostics") = py::cast(diagnostics);
  PyErr_SetObject(cls, exc.ptr());
}

void translateExceptions(std::exception_ptr p) {
  try {
    if (p)
      std::rethrow_exception(p);
  } catch (const msccl::Error &e) {
    using msccl::ErrorCode;
    PyObject *cls = executionError;
    switch (e.code()) {
    case ErrorCode::CompileError: cls = compileError; break;
    case ErrorCode::InvalidPlan: cls = planError; break;
    case ErrorCode::InvalidArgument: cls = argumentError; break;
    case ErrorCode::NoPlan: cls = noPlanError; break;
    case ErrorCode::System: cls = fileError; break;
    default: break;
    }
    static const char *kinds[] = {"Ok", "InvalidArgument", "CompileError", "NoPlan", "InvalidPlan", "InvalidSize",
                                  "Deadlock", "Misuse", "Unsupported", "Backend", "System", "Internal"};
    int c = int(e.code());
    raise(cls, e.what(), msccl::errorCodeName(e.code()), c >= 0 && c < 12 ? kinds[c] : "Internal");
  } catch (const msccl::runtime::ExecutionError &e) {
    raise(executionError, e.what(), "execution error", std::string(msccl::runtime::errorKindName(e.kind())),
          e.diagnostics());
  } catch (const msccl::plan::PlanError &e) {
    raise(planError, e.what(), "invalid plan", "InvalidPlan");
  }
}

// --- Arguments ----------------------------------------------------------------------------------

/// A call's reduction: the plan's op, and whether the result is then divided by the rank count
/// (avg: torch's ReduceOp.AVG, NCCL's ncclAvg; integers truncated as NCCL's SumPostDiv).
struct CallReduce {
  msccl::plan::ReduceOp op = msccl::plan::ReduceOp::Sum;
  bool average = false;
};

msccl::plan::ReduceOp reduceOpArgument(py::handle op);

CallReduce callReduceArgument(py::handle op) {
  if (op.is_none())
    return {};
  py::dict modules = py::module_::import("sys").attr("modules");
  bool avg = false;
  if (!py::isinstance<py::str>(op) && modules.contains("torch.distributed")) {
    py::object torchOps = modules["torch.distributed"].attr("ReduceOp");
    try {
      avg = py::hasattr(torchOps, "AVG") && op.equal(torchOps.attr("AVG"));
    } catch (py::error_already_set &) {
    }
  }
  std::string s = py::str(op);
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (avg || s == "avg" || (s.size() > 4 && s.compare(s.size() - 4, 4, ".avg") == 0) || s.find(".avg:") != std::string::npos)
    return {msccl::plan::ReduceOp::Sum, true};
  return {reduceOpArgument(op), false};
}

/// After an avg call: the `bytes` of `out` (host memory) divided by the plan's rank count.
/// 'avg': the sum divided by the rank count afterwards; in a host copy when the result is in
/// device memory (the CUDA backend), once `stream`, on which the call ran, has run it.
void applyAverage(const CallReduce &r, void *out, size_t bytes, msccl::plan::DataType dt, size_t ranks,
                  msccl::Executor &ex, bool deviceMemory, uintptr_t stream = 0) {
  if (!r.average)
    return;
  if (!deviceMemory) {
    msccl::runtime::divideElements(out, bytes / msccl::plan::dataTypeBytes(dt), dt, uint32_t(ranks));
    return;
  }
  std::vector<uint8_t> host(bytes);
  ex.copy(host.data(), out, bytes, reinterpret_cast<void *>(stream));
  msccl::runtime::divideElements(host.data(), bytes / msccl::plan::dataTypeBytes(dt), dt, uint32_t(ranks));
  ex.copy(out, host.data(), bytes);
}

/// The stream a call on CUDA tensors waits for when none is given: torch's current stream of
/// the tensor's device (as ProcessGroupNCCL and MSCCL++'s CustomizedComm use it).
uintptr_t currentTorchStream(const msccl::python::HostView &v) {
  if (v.device != "cuda")
    return 0;
  py::object cuda = py::module_::import("torch").attr("cuda");
  py::object stream = v.deviceIndex >= 0 ? cuda.attr("current_stream")(v.deviceIndex) : cuda.attr("current_stream")();
  return stream.attr("cuda_stream").cast<uintptr_t>();
}

msccl::plan::ReduceOp reduceOpArgument(py::handle op) {
  if (op.is_none())
    return msccl::plan::ReduceOp::Sum;
  // "sum"/"min"/"max", or enum-like objects: torch.distributed.ReduceOp.SUM prints as
  // "ReduceOp.SUM" (or "<RedOpType.SUM: 0>"), mpi4py's MPI.SUM has no name, so pass "sum".
  // torch.distributed.ReduceOp members compare equal to themselves but print as objects.
  py::dict modules = py::module_::import("sys").attr("modules");
  if (!py::isinstance<py::str>(op) && modules.contains("torch.distributed")) {
    py::object torchOps = modules["torch.distributed"].attr("ReduceOp");
    auto same = [&](const char *name) {
      try {
        return py::hasattr(torchOps, name) && op.equal(torchOps.attr(name));
      } catch (py::error_already_set &) {
        return false; // not a ReduceOp: torch's __eq__ refuses other types
      }
    };
    if (same("SUM"))
      return msccl::plan::ReduceOp::Sum;
    if (same("MIN"))
      return msccl::plan::ReduceOp::Min;
    if (same("MAX"))
      return msccl::plan::ReduceOp::Max;
  }
  std::string s = py::str(op);
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char *name : {"sum", "min", "max"}) {
    std::string n = name;
    bool suffix = s.size() > n.size() && s.compare(s.size() - n.size(), n.size(), n) == 0 &&
                  s[s.size() - n.size() - 1] == '.';
    if (s == n || suffix || s.find("." + n + ":") != std::string::npos)
      return *msccl::plan::parseReduceOp(n);
  }
  throw py::value_error("unsupported reduction '" + std::string(py::str(op)) + "': expected sum, min, max or avg");
}

// The element type of a call: the explicit argument, else the buffers' own.
msccl::plan::DataType resolveDtype(py::handle dtype, const std::vector<const HostView *> &views) {
  if (auto d = msccl::python::dtypeArgument(dtype))
    return *d;
  for (const HostView *v : views)
    if (v->dtype)
      return *v->dtype;
  std::string seen = views.empty() ? "none" : views.front()->typeName;
  throw py::value_error("cannot tell the element type from the buffers (" + seen +
                        "): pass dtype= (float16, bfloat16, float32, int32, uint32 or uint8)");
}

std::string valueText(py::handle v) {
  if (py::isinstance<py::bool_>(v))
    return v.cast<bool>() ? "true" : "false";
  return py::str(v);
}

std::optional<msccl::InPlace> inPlaceArgument(py::handle v) {
  if (v.is_none())
    return std::nullopt;
  if (py::isinstance<py::bool_>(v))
    return v.cast<bool>() ? msccl::InPlace::InPlace : msccl::InPlace::OutOfPlace;
  std::string s = py::str(v);
  if (s == "in-place" || s == "inplace")
    return msccl::InPlace::InPlace;
  if (s == "out-of-place")
    return msccl::InPlace::OutOfPlace;
  if (s == "both")
    return msccl::InPlace::Both;
  throw py::value_error("in_place: expected True, False, 'in-place', 'out-of-place' or 'both', got '" + s + "'");
}

const char *inPlaceName(msccl::InPlace p) {
  switch (p) {
  case msccl::InPlace::InPlace: return "in-place";
  case msccl::InPlace::OutOfPlace: return "out-of-place";
  case msccl::InPlace::Both: return "both";
  }
  return "?";
}

// --- compile ------------------------------------------------------------------------------------

msccl::CompileParams compileParams(py::dict defines, py::dict options) {
  msccl::CompileParams params;
  for (auto [k, v] : defines)
    params.defines.emplace_back(std::string(py::str(k)), valueText(v));
  for (auto [k, v] : options)
    params.options.emplace_back(std::string(py::str(k)), valueText(v));
  return params;
}

PlanHolder compileProgram(py::object file, py::object source, py::dict defines, std::vector<std::string> includeDirs,
                          py::dict options, std::optional<std::string> stdlibDir, bool verify, bool cache,
                          std::optional<std::string> cacheDir, py::object info) {
  if (!file.is_none() && !source.is_none())
    throw py::value_error("compile: give either a file or source=, not both");
  if (file.is_none() && source.is_none())
    throw py::value_error("compile: give a .msccl file (or 'stdlib:NAME') or source=");
  msccl::CompileParams params = compileParams(defines, options);
  params.includeDirs = std::move(includeDirs);
  if (stdlibDir)
    params.stdlibDir = *stdlibDir;
  params.noVerify = !verify;
  params.useCache = cache;
  if (cacheDir)
    params.cacheDir = *cacheDir;
  msccl::CompileInfo ci;
  msccl::PlanPtr plan;
  std::string path = file.is_none() ? "" : std::string(py::str(file));
  std::string text = source.is_none() ? "" : source.cast<std::string>();
  {
    py::gil_scoped_release release;
    plan = file.is_none() ? msccl::compileSource(text, params, "<source>", &ci) : msccl::compile(path, params, &ci);
  }
  if (!info.is_none()) {
    py::dict d = info.cast<py::dict>();
    d["cache_hit"] = ci.cacheHit;
    d["cache_repaired"] = ci.cacheRepaired;
    d["key"] = ci.key;
    d["cache_file"] = ci.cacheFile;
    d["sources"] = ci.sources;
  }
  return mutablePlan(plan);
}

// --- Registry -----------------------------------------------------------------------------------

// A registered plan as Python sees it: a copy (the registry may change afterwards).
struct PyRegisteredPlan {
  PlanHolder plan;
  msccl::PlanInfo info;
  size_t index = 0;
};

PyRegisteredPlan toPy(const msccl::RegisteredPlan &r) { return {mutablePlan(r.plan), r.info, r.index}; }

msccl::PlanInfo planInfo(std::optional<std::string> name, std::optional<std::string> collective,
                         std::optional<uint32_t> worldSize, std::optional<uint32_t> ranksPerNode,
                         std::optional<uint64_t> minBytes, std::optional<uint64_t> maxBytes, py::object inPlace,
                         std::vector<std::string> tags) {
  msccl::PlanInfo info;
  info.name = name.value_or("");
  info.collective = collective.value_or("");
  info.worldSize = worldSize.value_or(0);
  info.ranksPerNode = ranksPerNode.value_or(0);
  info.minBytes = minBytes;
  info.maxBytes = maxBytes;
  info.inPlace = inPlaceArgument(inPlace);
  info.tags = std::move(tags);
  return info;
}

msccl::SelectRequest requestFrom(py::object first, std::optional<uint64_t> messageBytes,
                                 std::optional<uint32_t> worldSize, std::optional<uint32_t> ranksPerNode,
                                 bool inPlace, std::vector<std::string> requiredTags,
                                 std::vector<std::string> preferredTags) {
  if (py::isinstance<msccl::SelectRequest>(first))
    return first.cast<msccl::SelectRequest>();
  if (first.is_none() || !messageBytes)
    throw py::type_error("expected a SelectRequest (comm.request(...)) or (collective, message_bytes, world_size=...)");
  msccl::SelectRequest r;
  r.collective = py::str(first);
  r.messageBytes = *messageBytes;
  if (!worldSize)
    throw py::type_error("world_size= is required (or pass comm.request(collective, bytes))");
  r.worldSize = *worldSize;
  r.ranksPerNode = ranksPerNode.value_or(0);
  r.inPlace = inPlace;
  r.requiredTags = std::move(requiredTags);
  r.preferredTags = std::move(preferredTags);
  return r;
}

#define MSCCL_REQUEST_ARGS                                                                                       \
  py::arg("request"), py::arg("message_bytes") = py::none(), py::kw_only(), py::arg("world_size") = py::none(),   \
      py::arg("ranks_per_node") = py::none(), py::arg("in_place") = false,                                        \
      py::arg("required_tags") = std::vector<std::string>{}, py::arg("preferred_tags") = std::vector<std::string>{}

// --- Communicator and Executor ------------------------------------------------------------------

// A Python Communicator. When MPI was initialised by someone else (mpi4py) before from_mpi(),
// the communicator must not finalise it while that owner still uses MPI: it is then kept alive
// until the process ends (its owner finalises MPI at exit).
struct PyCommunicator {
  std::shared_ptr<msccl::Communicator> comm;
};

std::vector<std::shared_ptr<msccl::Communicator>> &keptForever() {
  static auto *v = new std::vector<std::shared_ptr<msccl::Communicator>>; // never destroyed
  return *v;
}

bool mpiAlreadyInitialised() {
  // mpi4py imported (and initialised MPI, its default) before us.
  py::module_ sys = py::module_::import("sys");
  if (!sys.attr("modules").contains("mpi4py.MPI"))
    return false;
  py::object MPI = sys.attr("modules")["mpi4py.MPI"];
  return MPI.attr("Is_initialized")().cast<bool>() && !MPI.attr("Is_finalized")().cast<bool>();
}

msccl::Backend backendArgument(const std::string &b) {
  if (b == "cpu")
    return msccl::Backend::Cpu;
  if (b == "cuda")
    return msccl::Backend::Cuda;
  throw py::value_error("backend: expected 'cpu' or 'cuda', got '" + b + "'");
}

struct PyExecutor {
  std::shared_ptr<msccl::Executor> executor;
  std::shared_ptr<msccl::Communicator> comm;
};

msccl::PlanPtr planArgument(py::handle plan) {
  if (py::isinstance<PyRegisteredPlan>(plan))
    return constPlan(plan.cast<const PyRegisteredPlan &>().plan);
  if (py::isinstance<msccl::plan::Plan>(plan))
    return constPlan(plan.cast<PlanHolder>());
  throw py::type_error("plan: expected an msccl.Plan or a RegisteredPlan (from PlanRegistry.select), got " +
                       std::string(py::str(py::type::of(plan).attr("__name__"))));
}

/// AllToAllV counts: a list of n lists of n non-negative ints, or a 2-D NumPy array (elements;
/// row r = what rank r sends each peer), flattened row-major.
std::vector<uint64_t> countsArgument(py::handle counts) {
  std::vector<uint64_t> flat;
  if (!py::isinstance<py::sequence>(counts) && !py::hasattr(counts, "__iter__"))
    throw py::type_error("counts: expected an n x n matrix (list of lists or 2-D array of ints)");
  size_t n = py::len(counts), r = 0;
  for (py::handle row : counts) {
    if (!py::hasattr(row, "__len__") || size_t(py::len(row)) != n)
      throw py::value_error("counts: row " + std::to_string(r) + " does not have " + std::to_string(n) +
                            " entries (an n x n matrix, row r = elements rank r sends each peer)");
    size_t c = 0;
    for (py::handle v : row) {
      py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
      if (!i)
        throw py::type_error("counts[" + std::to_string(r) + "][" + std::to_string(c) + "]: not an integer");
      if (i < py::int_(0))
        throw py::value_error("counts[" + std::to_string(r) + "][" + std::to_string(c) + "] is negative");
      flat.push_back(i.cast<uint64_t>());
      ++c;
    }
    ++r;
  }
  return flat;
}

void executeOne(PyExecutor &ex, py::object send, py::object recv, py::object plan, py::object dtype, py::object op,
                std::optional<int> rank, std::optional<size_t> sendBytes, std::optional<size_t> recvBytes,
                uintptr_t stream, py::object counts) {
  msccl::PlanPtr p = planArgument(plan);
  const bool device = ex.comm->backend() == msccl::Backend::Cuda;
  HostView in = msccl::python::hostView(send, false, sendBytes, "send", device);
  HostView out = msccl::python::hostView(recv, true, recvBytes, "recv", device);
  if (!stream)
    stream = currentTorchStream(in.device == "cuda" ? in : out);
  msccl::plan::DataType dt = resolveDtype(dtype, {&in, &out});
  const CallReduce cr = callReduceArgument(op);
  int r = rank ? *rank : ex.comm->rank();
  if (r < 0)
    throw py::value_error("rank= is required on a local communicator (every rank in this process)");
  if (!counts.is_none()) {
    std::vector<uint64_t> m = countsArgument(counts);
    py::gil_scoped_release release;
    ex.executor->executeV(r, in.ptr, out.ptr, in.bytes, out.bytes, m, dt, p, reinterpret_cast<void *>(stream));
    return;
  }
  py::gil_scoped_release release;
  ex.executor->execute(r, in.ptr, out.ptr, in.bytes, out.bytes, dt, cr.op, p, reinterpret_cast<void *>(stream));
  applyAverage(cr, out.ptr, out.bytes, dt, p->gpus.size(), *ex.executor, device, stream);
}

// Every rank of `plan` in this process: a local communicator, one thread per rank.
void executeLocal(PlanHolder plan, py::sequence sends, py::sequence recvs, py::object dtype, py::object op) {
  msccl::PlanPtr p = constPlan(plan);
  size_t ranks = p->gpus.size();
  if (size_t(py::len(sends)) != ranks || size_t(py::len(recvs)) != ranks)
    throw py::value_error("execute_local: the plan has " + std::to_string(ranks) + " ranks; got " +
                          std::to_string(py::len(sends)) + " send and " + std::to_string(py::len(recvs)) +
                          " receive buffers");
  std::vector<HostView> in, out;
  for (size_t r = 0; r < ranks; ++r) {
    std::string s = "send[" + std::to_string(r) + "]", d = "recv[" + std::to_string(r) + "]";
    in.push_back(msccl::python::hostView(sends[r], false, std::nullopt, s.c_str()));
    out.push_back(msccl::python::hostView(recvs[r], true, std::nullopt, d.c_str()));
  }
  std::vector<const HostView *> all;
  for (auto &v : in)
    all.push_back(&v);
  msccl::plan::DataType dt = resolveDtype(dtype, all);
  const CallReduce cr = callReduceArgument(op);
  py::gil_scoped_release release;
  auto comm = msccl::Communicator::local(uint32_t(ranks));
  msccl::Executor executor(comm);
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        executor.execute(int(r), in[r].ptr, out[r].ptr, in[r].bytes, out[r].bytes, dt, cr.op, p);
        applyAverage(cr, out[r].ptr, out[r].bytes, dt, ranks, executor, false);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto &t : threads)
    t.join();
  for (auto &e : errors)
    if (e)
      std::rethrow_exception(e);
}

/// The exception classes (Error and its subclasses) and their translator.
void bindErrors(py::module_ &m) {
  errorBase = makeException(m, "Error", PyExc_RuntimeError,
                            "Base class of the errors msccl raises: .code (the library's error code name), .kind, "
                            ".diagnostics.");
  compileError = makeException(m, "CompileError", errorBase,
                               "A .msccl program did not compile; the message holds the rendered diagnostics.");
  planError = makeException(m, "PlanError", errorBase, "A malformed execution plan; the message names the JSON path.");
  {
    PyObject *bases = PyTuple_Pack(2, errorBase, PyExc_ValueError);
    argumentError = makeException(m, "ArgumentError", bases, "A bad argument (also a ValueError).");
    Py_DECREF(bases);
  }
  {
    PyObject *bases = PyTuple_Pack(2, errorBase, PyExc_OSError);
    fileError = makeException(m, "FileError", bases,
                              "A file-system failure: an unreadable plan or program, an unwritable cache (also an OSError).");
    Py_DECREF(bases);
  }
  noPlanError = makeException(m, "NoPlanError", errorBase, "No registered plan fits the request (the message explains).");
  executionError = makeException(m, "ExecutionError", errorBase,
                                 "An execution failed: .kind (InvalidSize, Deadlock, Misuse, Unsupported, Backend, "
                                 "...), .diagnostics (one line per problem).");
  py::register_exception_translator(&translateExceptions);
}

/// msccl.Plan, _compile and default_cache_dir.
void bindPlan(py::module_ &m) {
  py::class_<msccl::plan::Plan, PlanHolder>(m, "Plan", R"doc(
An MSCCL++ execution plan. Sizes are bytes; num_ranks is the number of gpus of the plan.
Mirrors mscclpp.ExecutionPlan (name, collective, min/max_message_size, is_in_place).)doc")
      .def_static("load", [](const std::string &path) { return mutablePlan(msccl::loadPlan(path)); }, py::arg("path"),
                  "Read a plan file (JSON). Raises PlanError naming the JSON path of the problem.")
      .def_static("from_json", [](const std::string &text) { return std::make_shared<msccl::plan::Plan>(msccl::plan::parsePlan(text)); },
                  py::arg("text"), "Parse plan JSON text. Raises PlanError.")
      .def("to_json", [](const msccl::plan::Plan &p, int indent) { return msccl::plan::writePlan(p, indent); },
           py::arg("indent") = 2, "The plan as MSCCL++ JSON text.")
      .def("save", [](const msccl::plan::Plan &p, const std::string &path) {
             std::ofstream os(path);
             if (!os)
               throw py::value_error("cannot write '" + path + "'");
             msccl::plan::writePlan(os, p);
           }, py::arg("path"), "Write the plan as JSON.")
      .def_property_readonly("name", [](const msccl::plan::Plan &p) { return p.name; })
      .def_property_readonly("collective", [](const msccl::plan::Plan &p) { return p.collective; })
      .def_property_readonly("protocol", [](const msccl::plan::Plan &p) { return p.protocol; })
      .def_property_readonly("num_ranks", [](const msccl::plan::Plan &p) { return p.gpus.size(); })
      .def_property_readonly("inplace", [](const msccl::plan::Plan &p) { return p.inplace; })
      .def_property_readonly("min_message_size", [](const msccl::plan::Plan &p) { return p.minMessageSize; })
      .def_property_readonly("max_message_size", [](const msccl::plan::Plan &p) { return p.maxMessageSize; })
      .def("__eq__", [](const msccl::plan::Plan &a, const msccl::plan::Plan &b) { return a == b; })
      .def("__repr__", [](const msccl::plan::Plan &p) {
        return "<msccl.Plan " + (p.name ? "'" + *p.name + "'" : std::string("(unnamed)")) + " " + p.collective + ", " +
               std::to_string(p.gpus.size()) + " ranks, " + p.protocol + (p.inplace ? ", in-place" : "") + ">";
      });

  m.def("_compile", &compileProgram, py::arg("file") = py::none(), py::kw_only(), py::arg("source") = py::none(),
        py::arg("defines") = py::dict(), py::arg("include_dirs") = std::vector<std::string>{},
        py::arg("options") = py::dict(), py::arg("stdlib_dir") = py::none(), py::arg("verify") = true,
        py::arg("cache") = true, py::arg("cache_dir") = py::none(), py::arg("info") = py::none());
  m.def("default_cache_dir", &msccl::defaultCacheDir,
        "The compile cache directory: $MSCCL_CACHE_DIR, else $XDG_CACHE_HOME/msccl, else ~/.cache/msccl.");
}

/// SelectRequest and RegisteredPlan: what PlanRegistry selects with and returns.
void bindSelection(py::module_ &m) {
  py::class_<msccl::SelectRequest>(m, "SelectRequest", "One call to choose a plan for (sizes in bytes).")
      .def(py::init([](std::string collective, uint64_t bytes, uint32_t worldSize, uint32_t rpn, bool inPlace,
                       std::vector<std::string> req, std::vector<std::string> pref) {
             msccl::SelectRequest r;
             r.collective = std::move(collective);
             r.messageBytes = bytes;
             r.worldSize = worldSize;
             r.ranksPerNode = rpn;
             r.inPlace = inPlace;
             r.requiredTags = std::move(req);
             r.preferredTags = std::move(pref);
             return r;
           }),
           py::arg("collective"), py::arg("message_bytes"), py::kw_only(), py::arg("world_size"),
           py::arg("ranks_per_node") = 0, py::arg("in_place") = false,
           py::arg("required_tags") = std::vector<std::string>{}, py::arg("preferred_tags") = std::vector<std::string>{})
      .def_readwrite("collective", &msccl::SelectRequest::collective)
      .def_readwrite("message_bytes", &msccl::SelectRequest::messageBytes)
      .def_readwrite("world_size", &msccl::SelectRequest::worldSize)
      .def_readwrite("ranks_per_node", &msccl::SelectRequest::ranksPerNode)
      .def_readwrite("in_place", &msccl::SelectRequest::inPlace)
      .def_readwrite("required_tags", &msccl::SelectRequest::requiredTags)
      .def_readwrite("preferred_tags", &msccl::SelectRequest::preferredTags)
      .def("__repr__", [](const msccl::SelectRequest &r) {
        return "<msccl.SelectRequest " + r.collective + " " + std::to_string(r.messageBytes) + " B, world size " +
               std::to_string(r.worldSize) + ", ranks per node " + std::to_string(r.ranksPerNode) +
               (r.inPlace ? ", in-place" : "") + ">";
      });

  py::class_<PyRegisteredPlan>(m, "RegisteredPlan", "A plan of a PlanRegistry with what it is registered for.")
      .def_property_readonly("plan", [](const PyRegisteredPlan &r) { return r.plan; })
      .def_property_readonly("name", [](const PyRegisteredPlan &r) { return r.info.name; })
      .def_property_readonly("collective", [](const PyRegisteredPlan &r) { return r.info.collective; })
      .def_property_readonly("world_size", [](const PyRegisteredPlan &r) { return r.info.worldSize; })
      .def_property_readonly("ranks_per_node", [](const PyRegisteredPlan &r) { return r.info.ranksPerNode; })
      .def_property_readonly("min_bytes", [](const PyRegisteredPlan &r) { return r.info.minBytes.value_or(0); })
      .def_property_readonly("max_bytes", [](const PyRegisteredPlan &r) { return r.info.maxBytes.value_or(UINT64_MAX); })
      .def_property_readonly("in_place", [](const PyRegisteredPlan &r) {
        return std::string(inPlaceName(r.info.inPlace.value_or(msccl::InPlace::OutOfPlace)));
      })
      .def_property_readonly("tags", [](const PyRegisteredPlan &r) { return r.info.tags; })
      .def_property_readonly("source", [](const PyRegisteredPlan &r) { return r.info.source; })
      .def_property_readonly("index", [](const PyRegisteredPlan &r) { return r.index; })
      .def("__repr__", [](const PyRegisteredPlan &r) {
        return "<msccl.RegisteredPlan '" + r.info.name + "' " + r.info.collective + ", world size " +
               std::to_string(r.info.worldSize) + ">";
      });
}

/// msccl.PlanRegistry.
void bindRegistry(py::module_ &m) {
  py::class_<msccl::PlanRegistry>(m, "PlanRegistry", R"doc(
Plans registered with what they are for; select() picks one per call (mirrors MSCCL++'s
ExecutionPlanRegistry). The default rule: among the plans that pass the hard filters (collective,
world size, ranks per node, message size inside [min_bytes, max_bytes], in-place support,
required tags), the most preferred tags, then the narrowest size range, then the first registered.
set_selector(fn) replaces the rule: fn(request, candidates) returns one of candidates or None.)doc")
      .def(py::init<>())
      .def("register", [](msccl::PlanRegistry &reg, py::object what, std::optional<std::string> name,
                          std::optional<std::string> collective, std::optional<uint32_t> worldSize,
                          std::optional<uint32_t> ranksPerNode, std::optional<uint64_t> minBytes,
                          std::optional<uint64_t> maxBytes, py::object inPlace, std::vector<std::string> tags,
                          py::dict defines, py::dict options) {
             msccl::PlanInfo info = planInfo(name, collective, worldSize, ranksPerNode, minBytes, maxBytes, inPlace,
                                             std::move(tags));
             if (py::isinstance<msccl::plan::Plan>(what)) {
               if (py::len(defines) || py::len(options))
                 throw py::value_error("register: defines/options apply to a .msccl file, not to a Plan");
               return toPy(reg.add(constPlan(what.cast<PlanHolder>()), info));
             }
             std::string path = py::str(py::module_::import("os").attr("fspath")(what));
             msccl::CompileParams params = compileParams(defines, options);
             py::gil_scoped_release release;
             return toPy(reg.addFile(path, info, params));
           },
           py::arg("plan"), py::kw_only(), py::arg("name") = py::none(), py::arg("collective") = py::none(),
           py::arg("world_size") = py::none(), py::arg("ranks_per_node") = py::none(),
           py::arg("min_bytes") = py::none(), py::arg("max_bytes") = py::none(), py::arg("in_place") = py::none(),
           py::arg("tags") = std::vector<std::string>{}, py::arg("defines") = py::dict(), py::arg("options") = py::dict(),
           "Register a Plan, or a plan file (.json) / program (.msccl, compiled through the cache with `defines` "
           "and `options`). Unset fields default to what the plan says. Raises ArgumentError (name taken, "
           "min_bytes > max_bytes, world size not the plan's).")
      .def("register_directory", [](msccl::PlanRegistry &reg, py::object dir, py::dict defines, py::dict options) {
             std::string path = py::str(py::module_::import("os").attr("fspath")(dir));
             msccl::CompileParams params = compileParams(defines, options);
             py::gil_scoped_release release;
             return reg.addDirectory(path, params);
           }, py::arg("directory"), py::kw_only(), py::arg("defines") = py::dict(), py::arg("options") = py::dict(),
           "Register every .json and .msccl file of a directory (sorted; .msccl compiled with `defines` and "
           "`options`); returns how many.")
      .def("remove", &msccl::PlanRegistry::remove, py::arg("name"))
      .def("plans", [](const msccl::PlanRegistry &reg) {
        std::vector<PyRegisteredPlan> out;
        for (const msccl::RegisteredPlan *r : reg.plans())
          out.push_back(toPy(*r));
        return out;
      }, "The registered plans, in registration order.")
      .def("__len__", [](const msccl::PlanRegistry &reg) { return reg.plans().size(); })
      .def("set_selector", [](msccl::PlanRegistry &reg, py::object fn) {
             if (fn.is_none()) {
               reg.setSelector({});
               return;
             }
             if (!PyCallable_Check(fn.ptr()))
               throw py::type_error("set_selector: expected a callable (request, candidates) -> candidate or None");
             reg.setSelector([fn](const msccl::SelectRequest &request,
                                  const std::vector<const msccl::RegisteredPlan *> &candidates)
                                 -> const msccl::RegisteredPlan * {
               py::gil_scoped_acquire gil;
               py::list list;
               for (const msccl::RegisteredPlan *c : candidates)
                 list.append(py::cast(toPy(*c)));
               py::object chosen = fn(request, list);
               if (chosen.is_none())
                 return nullptr;
               if (!py::isinstance<PyRegisteredPlan>(chosen))
                 throw py::type_error("the selector returned " +
                                      std::string(py::str(py::type::of(chosen).attr("__name__"))) +
                                      ", not one of its candidates (a RegisteredPlan) or None");
               size_t index = chosen.cast<const PyRegisteredPlan &>().index;
               for (const msccl::RegisteredPlan *c : candidates)
                 if (c->index == index)
                   return c;
               throw py::value_error("the selector returned '" + chosen.cast<const PyRegisteredPlan &>().info.name +
                                     "', which is not one of its candidates");
             });
           }, py::arg("selector"),
           "Install a selector fn(request, candidates) -> one of candidates or None (None here: back to the "
           "default rule). Exceptions it raises come out of select().")
      .def("select", [](const msccl::PlanRegistry &reg, py::object request, std::optional<uint64_t> bytes,
                        std::optional<uint32_t> ws, std::optional<uint32_t> rpn, bool inPlace,
                        std::vector<std::string> req, std::vector<std::string> pref) -> std::optional<PyRegisteredPlan> {
             const msccl::RegisteredPlan *r = reg.select(requestFrom(request, bytes, ws, rpn, inPlace, req, pref));
             if (!r)
               return std::nullopt;
             return toPy(*r);
           }, MSCCL_REQUEST_ARGS,
           "The chosen RegisteredPlan, or None. request: comm.request(collective, bytes, in_place=...) or a "
           "SelectRequest, or (collective, message_bytes, world_size=..., ...).")
      .def("select_or_raise", [](const msccl::PlanRegistry &reg, py::object request, std::optional<uint64_t> bytes,
                                 std::optional<uint32_t> ws, std::optional<uint32_t> rpn, bool inPlace,
                                 std::vector<std::string> req, std::vector<std::string> pref) {
             return toPy(reg.selectOrThrow(requestFrom(request, bytes, ws, rpn, inPlace, req, pref)));
           }, MSCCL_REQUEST_ARGS, "select(), raising NoPlanError with explain_text() when no plan fits.")
      .def("explain", [](const msccl::PlanRegistry &reg, py::object request, std::optional<uint64_t> bytes,
                         std::optional<uint32_t> ws, std::optional<uint32_t> rpn, bool inPlace,
                         std::vector<std::string> req, std::vector<std::string> pref) {
             py::list out;
             for (const msccl::Explanation &e : reg.explain(requestFrom(request, bytes, ws, rpn, inPlace, req, pref))) {
               py::dict d;
               d["name"] = e.plan ? e.plan->info.name : std::string();
               d["eligible"] = e.eligible;
               d["chosen"] = e.chosen;
               d["reason"] = e.reason;
               out.append(d);
             }
             return out;
           }, MSCCL_REQUEST_ARGS,
           "For every registered plan: {'name', 'eligible', 'chosen', 'reason'} (why it was or was not chosen).")
      .def("explain_text", [](const msccl::PlanRegistry &reg, py::object request, std::optional<uint64_t> bytes,
                              std::optional<uint32_t> ws, std::optional<uint32_t> rpn, bool inPlace,
                              std::vector<std::string> req, std::vector<std::string> pref) {
             return reg.explainText(requestFrom(request, bytes, ws, rpn, inPlace, req, pref));
           }, MSCCL_REQUEST_ARGS, "explain() as text, one line per plan.");
}

/// get_unique_id and msccl.Communicator.
void bindCommunicator(py::module_ &m) {
  // libmsccl's unique-id bootstrap (Communicator::getUniqueId / initRank; no MPI).
  m.def("get_unique_id", [] {
    msccl::UniqueId id;
    {
      py::gil_scoped_release release;
      id = msccl::Communicator::getUniqueId();
    }
    return py::bytes(id.internal, sizeof id.internal);
  }, "A new unique id (128 bytes) for Communicator.init_rank, as ncclGetUniqueId: make it in the process that "
     "will be rank 0 (it binds rank 0's TCP port on MSCCL_BOOTSTRAP_ADDR, default 127.0.0.1) and send it to all.");

  py::class_<PyCommunicator, std::shared_ptr<PyCommunicator>>(m, "Communicator", R"doc(
The ranks of a job (mirrors mscclpp.Communicator). One process per rank: from_mpi(),
init_rank(unique_id, world_size, rank), from_env() (torchrun's variables); or every rank in this
process: local(world_size). Ranks per node: MPI's shared-memory split, or MSCCL_RANKS_PER_NODE.)doc")
      .def_static("from_mpi", [](const std::string &backend) {
        bool foreign = mpiAlreadyInitialised();
        msccl::Backend b = backendArgument(backend);
        auto c = std::make_shared<PyCommunicator>();
        {
          py::gil_scoped_release release;
          c->comm = msccl::Communicator::mpi(nullptr, nullptr, b);
        }
        if (foreign)
          keptForever().push_back(c->comm);
        return c;
      }, py::kw_only(), py::arg("backend") = "cpu",
         "MPI_COMM_WORLD's communicator (initialises MPI unless mpi4py or another owner did). backend='cuda': "
         "plans run by the CUDA executor, one process per rank, on device memory (torch CUDA tensors).")
      .def_static("init_rank", [](py::bytes uid, uint32_t worldSize, uint32_t rank, const std::string &backend) {
        std::string s = uid;
        msccl::UniqueId id;
        if (s.size() != sizeof id.internal)
          throw py::value_error("unique id: expected " + std::to_string(sizeof id.internal) +
                                " bytes (from get_unique_id()), got " + std::to_string(s.size()));
        std::memcpy(id.internal, s.data(), s.size());
        msccl::Backend b = backendArgument(backend);
        auto c = std::make_shared<PyCommunicator>();
        py::gil_scoped_release release;
        c->comm = msccl::Communicator::initRank(id, worldSize, rank, b);
        return c;
      }, py::arg("unique_id"), py::arg("world_size"), py::arg("rank"), py::kw_only(), py::arg("backend") = "cpu",
         "Join the job of a unique id as `rank` of `world_size` (collective; as ncclCommInitRank).")
      .def_static("_from_environment", [](const std::string &backend) {
        msccl::Backend b = backendArgument(backend);
        auto c = std::make_shared<PyCommunicator>();
        py::gil_scoped_release release;
        c->comm = msccl::Communicator::fromEnvironment(b);
        return c;
      }, py::arg("backend") = "cpu")
      .def_static("local", [](uint32_t worldSize, uint32_t ranksPerNode, const std::string &backend) {
        auto c = std::make_shared<PyCommunicator>();
        c->comm = msccl::Communicator::local(worldSize, ranksPerNode, backendArgument(backend));
        return c;
      }, py::arg("world_size"), py::arg("ranks_per_node") = 0, py::kw_only(), py::arg("backend") = "cpu",
         "Every rank in this process: each rank's thread calls Executor.execute(..., rank=r).")
      .def_static("launched_by_mpi", &msccl::Communicator::launchedByMpi,
                  "Whether an MPI launcher (mpirun, srun) started this process.")
      .def_property_readonly("rank", [](const PyCommunicator &c) { return c.comm->rank(); },
                             "This process's rank (-1 for a local communicator).")
      .def_property_readonly("size", [](const PyCommunicator &c) { return c.comm->worldSize(); })
      .def_property_readonly("world_size", [](const PyCommunicator &c) { return c.comm->worldSize(); })
      .def_property_readonly("ranks_per_node", [](const PyCommunicator &c) { return c.comm->ranksPerNode(); })
      .def_property_readonly("is_local", [](const PyCommunicator &c) { return c.comm->isLocal(); })
      .def_property_readonly("backend", [](const PyCommunicator &c) { return std::string(msccl::backendName(c.comm->backend())); })
      .def("request", [](const PyCommunicator &c, const std::string &collective, uint64_t bytes, bool inPlace,
                         std::vector<std::string> req, std::vector<std::string> pref) {
             msccl::SelectRequest r = c.comm->request(collective, bytes, inPlace);
             r.requiredTags = std::move(req);
             r.preferredTags = std::move(pref);
             return r;
           }, py::arg("collective"), py::arg("message_bytes"), py::kw_only(), py::arg("in_place") = false,
           py::arg("required_tags") = std::vector<std::string>{}, py::arg("preferred_tags") = std::vector<std::string>{},
           "A SelectRequest with this communicator's world size and ranks per node (message_bytes: the "
           "nccl-tests size, max(send, recv) bytes).")
      .def("barrier", [](PyCommunicator &c) {
        if (c.comm->isLocal())
          throw py::value_error("barrier: a local communicator has no processes to wait for");
        py::gil_scoped_release release;
        c.comm->barrier();
      }, "Wait until every rank (process) arrives.")
      .def("__repr__", [](const PyCommunicator &c) {
        return "<msccl.Communicator " + (c.comm->isLocal() ? std::string("local") : "rank " + std::to_string(c.comm->rank())) +
               " of " + std::to_string(c.comm->worldSize()) + ", " + std::to_string(c.comm->ranksPerNode()) +
               " per node, " + msccl::backendName(c.comm->backend()) + ">";
      });
}

/// msccl.Executor, execute_local and data_types.
void bindExecutor(py::module_ &m) {
  py::class_<PyExecutor>(m, "Executor", R"doc(
Runs plans on a communicator's ranks (mirrors mscclpp.Executor). execute(send, recv, plan) on
this process's rank: send/recv are anything with a data pointer (NumPy arrays, torch CPU tensors,
buffers, or int addresses with send_bytes/recv_bytes); sizes in bytes default to the objects'.
In place as NCCL: the same object (allreduce), or views into one buffer.)doc")
      .def(py::init([](std::shared_ptr<PyCommunicator> c) {
             return PyExecutor{std::make_shared<msccl::Executor>(c->comm), c->comm};
           }), py::arg("comm"))
      .def("execute", &executeOne, py::arg("send"), py::arg("recv"), py::arg("plan"), py::kw_only(),
           py::arg("dtype") = py::none(), py::arg("op") = py::none(), py::arg("rank") = py::none(),
           py::arg("send_bytes") = py::none(), py::arg("recv_bytes") = py::none(), py::arg("stream") = 0,
           py::arg("counts") = py::none(),
           "Run `plan` for this rank (rank=: required on a local communicator). dtype: element type of "
           "reductions (default: the buffers'); op: 'sum' (default), 'min', 'max', 'avg' (the sum divided by "
           "the rank count afterwards, integers truncated as NCCL's ncclAvg) or torch's ReduceOp (AVG too). "
           "counts: AllToAllV (a plan with variable sizes, e.g. stdlib:alltoallv/allpairs): the full n x n "
           "matrix in elements (list of lists or 2-D NumPy array; row r = elements rank r sends each peer; "
           "the same on every rank); send holds row `rank` back to back, recv receives column `rank`. "
           "Collective. Raises ExecutionError (.kind InvalidSize, Deadlock, Misuse, ...), ArgumentError.")
      .def("set_timeout", [](PyExecutor &e, double s) { e.executor->setTimeout(s); }, py::arg("seconds"))
      .def("abort", [](PyExecutor &e) { e.executor->abort(); },
           "Stop every call of this executor at once, from any thread (a watchdog's ncclCommAbort): a call "
           "in progress raises ExecutionError (kind Misuse), later calls too. Local to this process.");

  m.def("execute_local", &executeLocal, py::arg("plan"), py::arg("sends"), py::arg("recvs"), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("op") = py::none(), R"doc(
Run every rank of `plan` in this process (a local communicator, one thread per rank):
sends[r] / recvs[r] are rank r's buffers (anything with a data pointer). dtype/op as Executor.execute.)doc");

  m.def("data_types", [] {
    std::vector<std::string> names;
#define MSCCL_DATA_TYPE(Enum, Name, Bytes) names.push_back(Name);
#include "msccl/plan/PlanEnums.def"
    return names;
  }, "The element types the executors reduce.");
}

} // namespace

PYBIND11_MODULE(_msccl, m) {
  m.doc() = "msccl: compile .msccl collective algorithms to MSCCL++ execution plans and run them";
  m.attr("__version__") = MSCCL_VERSION;
  m.attr("compiler_version") = msccl::compilerVersion();

  bindErrors(m);
  bindPlan(m);
  bindSelection(m);
  bindRegistry(m);
  bindCommunicator(m);
  bindExecutor(m);
}
