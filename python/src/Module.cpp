//===- Module.cpp - The Python module msccl (pybind11) -------------------------------------===//
//
// Binds the C++ library for Python as `msccl._msccl`; python/msccl/__init__.py re-exports it and
// adds the pure-Python parts (Communicator.from_env). What is bound:
//   * Plan: an MSCCL++ execution plan (load, from_json, to_json, its metadata);
//   * compile(): a .msccl file, `stdlib:NAME` or source text to a Plan, in-process;
//   * execute_local(): every rank of a plan in this process on the CPU executor, on NumPy
//     arrays / tensors / buffers (one send and one receive buffer per rank);
//   * Communicator (one process per rank): from_mpi() (MPI_COMM_WORLD, also when mpi4py
//     initialised MPI), its rank, size and nodes, barrier().
// Errors become Python exceptions carrying the C++ message: msccl.CompileError (the rendered
// diagnostics), msccl.PlanError (the JSON path), msccl.ExecutionError (.kind, .diagnostics), all
// subclasses of msccl.Error (a RuntimeError); bad arguments raise TypeError / ValueError.
// Long calls (compile, execute, barrier) release the GIL.
//
//===------------------------------------------------------------------------------------===//
#include "Buffers.h"

#include "msccl/Version.h"
#include "msccl/driver/Driver.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Executor.h"
#ifdef MSCCL_PYTHON_HAVE_MPI
#include "msccl/runtime/Communicator.h"
#include <mpi.h>
#endif

#include <llvm/Support/raw_ostream.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fstream>
#include <sstream>

namespace py = pybind11;
using namespace msccl;
using msccl::python::HostView;

namespace {

// --- Exceptions ---------------------------------------------------------------------------------

PyObject *errorBase = nullptr, *compileError = nullptr, *planError = nullptr, *executionError = nullptr;

PyObject *makeException(py::module_ &m, const char *name, PyObject *base, const char *doc) {
  std::string qualified = std::string("msccl.") + name;
  PyObject *cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!cls)
    throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

[[noreturn]] void raiseCompileError(const std::string &message) {
  PyErr_SetString(compileError, message.c_str());
  throw py::error_already_set();
}

void translateExceptions(std::exception_ptr p) {
  try {
    if (p)
      std::rethrow_exception(p);
  } catch (const runtime::ExecutionError &e) {
    py::object cls = py::reinterpret_borrow<py::object>(executionError);
    py::object exc = cls(e.what());
    static const char *kinds[] = {"InvalidPlan", "InvalidSize", "Deadlock", "Misuse", "Unsupported", "Backend"};
    exc.attr("kind") = std::string(kinds[size_t(e.kind())]);
    exc.attr("summary") = e.summary();
    exc.attr("diagnostics") = py::cast(e.diagnostics());
    PyErr_SetObject(executionError, exc.ptr());
  } catch (const plan::PlanError &e) {
    PyErr_SetString(planError, e.what());
  }
}

// --- Arguments ----------------------------------------------------------------------------------

plan::ReduceOp reduceOpArgument(py::handle op) {
  if (op.is_none())
    return plan::ReduceOp::Sum;
  // Accept "sum"/"min"/"max" and enum-like objects (torch.distributed.ReduceOp.SUM prints as
  // "ReduceOp.SUM" or "<RedOpType.SUM: 0>").
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
    for (const char *name : {"SUM", "MIN", "MAX"})
      if (same(name)) {
        std::string n = name;
        for (char &c : n)
          c = char(std::tolower(static_cast<unsigned char>(c)));
        return *plan::parseReduceOp(n);
      }
  }
  std::string s = py::str(op);
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char *name : {"sum", "min", "max"}) {
    std::string n = name;
    bool match = s == n || (s.size() > n.size() + 1 && s.compare(s.size() - n.size(), n.size(), n) == 0 &&
                            s[s.size() - n.size() - 1] == '.') ||
                 s.find("." + n + ":") != std::string::npos;
    if (match)
      return *plan::parseReduceOp(n);
  }
  throw py::value_error("unsupported reduction '" + std::string(py::str(op)) + "': expected sum, min or max");
}

// The element type of an execute call: the explicit argument, else the buffers' own.
plan::DataType resolveDtype(py::handle dtype, const std::vector<const HostView *> &views) {
  if (auto d = python::dtypeArgument(dtype))
    return *d;
  for (const HostView *v : views)
    if (v->dtype)
      return *v->dtype;
  std::string seen = views.empty() ? "none" : views.front()->typeName;
  throw py::value_error("cannot tell the element type from the buffers (" + seen +
                        "): pass dtype= (float16, bfloat16, float32, int32, uint32 or uint8)");
}

// --- compile ------------------------------------------------------------------------------------

std::shared_ptr<plan::Plan> compileProgram(py::object file, py::object source, py::dict defines,
                                           std::vector<std::string> includeDirs, py::dict options,
                                           std::optional<int> instances, std::optional<std::string> protocol,
                                           std::optional<std::string> stdlibDir, bool verify) {
  driver::MscclcOptions mo;
  std::string text;
  if (!file.is_none() && !source.is_none())
    throw py::value_error("compile: give either a file or source=, not both");
  if (!file.is_none()) {
    mo.input = py::str(file); // also os.PathLike through str()
    if (mo.input.empty() || mo.input == "-")
      throw py::value_error("compile: empty file name");
  } else if (!source.is_none()) {
    text = source.cast<std::string>();
    mo.input = "-";
  } else {
    throw py::value_error("compile: give a .msccl file (or 'stdlib:NAME') or source=");
  }
  for (auto [k, v] : defines) {
    std::string value = py::isinstance<py::bool_>(v) ? (v.cast<bool>() ? "true" : "false") : std::string(py::str(v));
    mo.defines.push_back(std::string(py::str(k)) + "=" + value);
  }
  for (auto [k, v] : options) {
    std::string value = py::isinstance<py::bool_>(v) ? (v.cast<bool>() ? "true" : "false") : std::string(py::str(v));
    mo.optionOverrides.push_back(std::string(py::str(k)) + "=" + value);
  }
  mo.includeDirs = std::move(includeDirs);
  if (instances)
    mo.instances = std::to_string(*instances);
  if (protocol)
    mo.protocol = *protocol;
  if (stdlibDir)
    mo.stdlibDir = *stdlibDir;
  mo.noVerify = !verify;
  std::optional<plan::Plan> result;
  std::string errors;
  {
    py::gil_scoped_release release;
    std::istringstream in(text);
    llvm::raw_string_ostream err(errors);
    result = driver::compilePlan(mo, in, err);
    err.flush();
  }
  if (!result)
    raiseCompileError(errors.empty() ? "compile failed" : errors);
  return std::make_shared<plan::Plan>(std::move(*result));
}

// --- execute_local ------------------------------------------------------------------------------

py::dict executeLocal(const plan::Plan &plan, py::sequence sends, py::sequence recvs, py::object dtype,
                      py::object op, unsigned iterations) {
  size_t ranks = plan.gpus.size();
  if (size_t(py::len(sends)) != ranks || size_t(py::len(recvs)) != ranks)
    throw py::value_error("execute_local: the plan has " + std::to_string(ranks) + " ranks; got " +
                          std::to_string(py::len(sends)) + " send and " + std::to_string(py::len(recvs)) +
                          " receive buffers");
  std::vector<HostView> in, out;
  for (size_t r = 0; r < ranks; ++r) {
    std::string sName = "send[" + std::to_string(r) + "]", rName = "recv[" + std::to_string(r) + "]";
    in.push_back(python::hostView(sends[r], false, std::nullopt, sName.c_str()));
    out.push_back(python::hostView(recvs[r], true, std::nullopt, rName.c_str()));
  }
  for (size_t r = 1; r < ranks; ++r)
    if (in[r].bytes != in[0].bytes || out[r].bytes != out[0].bytes)
      throw py::value_error("execute_local: every rank's buffers must have the same sizes (rank 0: " +
                            std::to_string(in[0].bytes) + "/" + std::to_string(out[0].bytes) + " bytes, rank " +
                            std::to_string(r) + ": " + std::to_string(in[r].bytes) + "/" +
                            std::to_string(out[r].bytes) + ")");
  std::vector<const HostView *> all;
  for (auto &v : in)
    all.push_back(&v);
  runtime::ExecuteRequest req;
  req.plan = &plan;
  req.inputBytes = ranks ? in[0].bytes : 0;
  req.outputBytes = ranks ? out[0].bytes : 0;
  req.dataType = resolveDtype(dtype, all);
  req.reduceOp = reduceOpArgument(op);
  req.iterations = iterations;
  for (size_t r = 0; r < ranks; ++r)
    req.buffers.push_back({in[r].ptr, out[r].ptr});
  runtime::ExecuteResult res;
  {
    py::gil_scoped_release release;
    auto executor = runtime::makeCpuExecutor();
    res = executor->execute(req);
  }
  py::dict d;
  d["seconds"] = res.seconds;
  d["launches"] = res.launches;
  d["ops"] = res.opsExecuted;
  return d;
}

#ifdef MSCCL_PYTHON_HAVE_MPI
// The communicator of a Python program. When MPI was initialised by someone else (mpi4py), the
// C++ Communicator must not finalise it: it is then kept until the process ends and MPI is
// finalised by its owner (mpi4py's atexit hook).
struct PyCommunicator {
  std::shared_ptr<runtime::Communicator> comm;
};

std::shared_ptr<PyCommunicator> communicatorFromMpi() {
  int inited = 0;
  MPI_Initialized(&inited);
  std::unique_ptr<runtime::Communicator> c = runtime::Communicator::initWorld(nullptr, nullptr);
  auto out = std::make_shared<PyCommunicator>();
  if (inited)
    out->comm = std::shared_ptr<runtime::Communicator>(c.release(), [](runtime::Communicator *) {});
  else
    out->comm = std::shared_ptr<runtime::Communicator>(std::move(c));
  return out;
}
#endif

} // namespace

PYBIND11_MODULE(_msccl, m) {
  m.doc() = "msccl: compile .msccl collective algorithms to MSCCL++ execution plans and run them";
  m.attr("__version__") = MSCCL_VERSION;

  errorBase = makeException(m, "Error", PyExc_RuntimeError, "Base class of the errors msccl raises.");
  compileError = makeException(m, "CompileError", errorBase,
                               "A .msccl program did not compile; the message holds the rendered diagnostics.");
  planError = makeException(m, "PlanError", errorBase, "A malformed execution plan; the message names the JSON path.");
  executionError = makeException(m, "ExecutionError", errorBase,
                                 "An execution failed: .kind (InvalidPlan, InvalidSize, Deadlock, Misuse, "
                                 "Unsupported, Backend), .summary, .diagnostics (one line per problem).");
  py::register_exception_translator(&translateExceptions);

  // --- Plan ---
  py::class_<plan::Plan, std::shared_ptr<plan::Plan>>(m, "Plan", R"doc(
An MSCCL++ execution plan (JSON). Sizes are bytes; `num_ranks` is the number of gpus of the plan.
Mirrors mscclpp.ExecutionPlan (name, collective, min/max_message_size, is_in_place).)doc")
      .def_static("load", [](const std::string &path) { return std::make_shared<plan::Plan>(plan::readPlanFile(path)); },
                  py::arg("path"), "Read a plan file. Raises PlanError (with the JSON path of the problem).")
      .def_static("from_json", [](const std::string &text) { return std::make_shared<plan::Plan>(plan::parsePlan(text)); },
                  py::arg("text"), "Parse plan JSON text. Raises PlanError.")
      .def("to_json", [](const plan::Plan &p, int indent) { return plan::writePlan(p, indent); }, py::arg("indent") = 2,
           "The plan as MSCCL++ JSON text.")
      .def("save", [](const plan::Plan &p, const std::string &path) {
             std::ofstream os(path);
             if (!os)
               throw py::value_error("cannot write '" + path + "'");
             plan::writePlan(os, p);
           }, py::arg("path"), "Write the plan as JSON.")
      .def_property_readonly("name", [](const plan::Plan &p) { return p.name; })
      .def_property_readonly("collective", [](const plan::Plan &p) { return p.collective; })
      .def_property_readonly("protocol", [](const plan::Plan &p) { return p.protocol; })
      .def_property_readonly("num_ranks", [](const plan::Plan &p) { return p.gpus.size(); })
      .def_property_readonly("inplace", [](const plan::Plan &p) { return p.inplace; })
      .def_property_readonly("min_message_size", [](const plan::Plan &p) { return p.minMessageSize; })
      .def_property_readonly("max_message_size", [](const plan::Plan &p) { return p.maxMessageSize; })
      .def("__eq__", [](const plan::Plan &a, const plan::Plan &b) { return a == b; })
      .def("__repr__", [](const plan::Plan &p) {
        return "<msccl.Plan " + (p.name ? "'" + *p.name + "'" : std::string("(unnamed)")) + " " + p.collective + ", " +
               std::to_string(p.gpus.size()) + " ranks, " + p.protocol + (p.inplace ? ", in-place" : "") + ">";
      });

  // --- compile ---
  m.def("_compile_uncached", &compileProgram, py::arg("file") = py::none(), py::kw_only(), py::arg("source") = py::none(),
        py::arg("defines") = py::dict(), py::arg("include_dirs") = std::vector<std::string>{},
        py::arg("options") = py::dict(), py::arg("instances") = py::none(), py::arg("protocol") = py::none(),
        py::arg("stdlib_dir") = py::none(), py::arg("verify") = true,
        "Compile a .msccl program in-process as mscclc does (no cache). Raises CompileError.");

  // --- execute_local ---
  m.def("execute_local", &executeLocal, py::arg("plan"), py::arg("sends"), py::arg("recvs"), py::kw_only(),
        py::arg("dtype") = py::none(), py::arg("op") = py::none(), py::arg("iterations") = 1, R"doc(
Run every rank of `plan` in this process on the CPU executor: sends[r] / recvs[r] are rank r's
send and receive buffers (anything with a data pointer, host memory; every rank the same sizes, in
bytes the plan's message sizes). In-place: pass the same object (allreduce) or views into the
receive buffer, as NCCL does. dtype: the element type of reductions (default: the buffers');
op: "sum" (default), "min" or "max". Returns {"seconds", "launches", "ops"}.
Raises ExecutionError (.kind InvalidSize, Deadlock, Misuse, ...).)doc");

  m.def("data_types", [] {
    std::vector<std::string> names;
#define MSCCL_DATA_TYPE(Enum, Name, Bytes) names.push_back(Name);
#include "msccl/plan/PlanEnums.def"
    return names;
  }, "The element types the executors reduce.");

  // --- Communicator ---
#ifdef MSCCL_PYTHON_HAVE_MPI
  py::class_<PyCommunicator, std::shared_ptr<PyCommunicator>>(m, "Communicator", R"doc(
This process's rank of a job with one process per rank (mirrors mscclpp.Communicator).
Create it with Communicator.from_mpi() (MPI_COMM_WORLD; mpi4py's MPI works too: MPI is then left
for mpi4py to finalise) or Communicator.from_env() (see msccl.Communicator.from_env).
Ranks per node: MPI's shared-memory split, or MSCCL_RANKS_PER_NODE.)doc")
      .def_static("from_mpi", &communicatorFromMpi, "The communicator of MPI_COMM_WORLD (initialises MPI if needed).")
      .def_static("launched_by_mpi", &runtime::Communicator::launchedByMpi,
                  "Whether an MPI launcher (mpirun, srun) started this process.")
      .def_property_readonly("rank", [](const PyCommunicator &c) { return c.comm->rank(); })
      .def_property_readonly("size", [](const PyCommunicator &c) { return c.comm->size(); })
      .def_property_readonly("node", [](const PyCommunicator &c) { return c.comm->node(); })
      .def_property_readonly("num_nodes", [](const PyCommunicator &c) { return c.comm->numNodes(); })
      .def_property_readonly("ranks_per_node", [](const PyCommunicator &c) { return int(c.comm->nodeRanks().size()); })
      .def_property_readonly("node_ranks", [](const PyCommunicator &c) { return c.comm->nodeRanks(); })
      .def("describe_nodes", [](const PyCommunicator &c) { return c.comm->describeNodes(); })
      .def("barrier", [](PyCommunicator &c) {
        py::gil_scoped_release release;
        c.comm->barrier();
      }, "Wait until every rank arrives.")
      .def("__repr__", [](const PyCommunicator &c) {
        return "<msccl.Communicator rank " + std::to_string(c.comm->rank()) + " of " + std::to_string(c.comm->size()) +
               ", " + c.comm->describeNodes() + ">";
      });
#endif
}
