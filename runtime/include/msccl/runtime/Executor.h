//===- Executor.h - The backend-neutral executor interface -------------------------------===//
//
// An executor runs one MSCCL++ execution plan (msccl/plan/Plan.h) for ALL of its ranks at once:
// the caller hands it one input and one output buffer per rank, the per-rank message sizes in
// bytes, the element type, the reduction operator, the LL packet width and an iteration count.
// Backends:
//   "cpu"  - the CPU reference executor (msccl_cpu, CpuExecutor.h): all ranks simulated in one
//            process on host memory; detects deadlocks and misuse.
//   "cuda" - the CUDA executor (msccl_cuda, owned by the cuda area): all ranks on the device(s).
// Backends register a factory by name in the process-wide registry below; drivers (msccl-run,
// tests, benchmarks) create them by name. Buffers are allocated and filled through the backend
// (allocate/upload/download), so a driver never needs to know whether memory is host or device.
//
// The semantics every backend implements are those of docs/spec/plan-format.md, with
// the choices on the reference's defects documented in docs/runtime.md. The arithmetic shared by
// all backends (chunk -> bytes, tbg split, pipeline iterations, scratch size) is in Layout.h, the
// resolution of tb-local ids to peers and buffers in Resolve.h, the semantic plan checks in
// PlanValidate.h.
//
// Mirrors: mscclpp include/mscclpp/executor.hpp (Executor::execute, PacketType) and
// src/core/executor/executor.cc.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::runtime {

/// LL packet width (spec plan#7.1), a run-time argument like in MSCCL++ (`PacketType`).
///  LL16: 16-byte packets `data0, flag, data1, flag` carrying 8 payload bytes.
///  LL8:  8-byte packets `data, flag` carrying 4 payload bytes.
enum class PacketType : uint8_t { LL16, LL8 };
std::string_view packetTypeName(PacketType p); // "LL16" "LL8"

/// What kind of failure an ExecutionError reports.
enum class ErrorKind : uint8_t {
  InvalidPlan,  ///< Semantic plan error (PlanValidate.h); every diagnostic names a JSON path.
  InvalidSize,  ///< Message size rejected (plan#3.2: alignment, chunk divisibility, size range).
  Deadlock,     ///< No threadblock can progress; one diagnostic per blocked threadblock.
  Misuse,       ///< Out-of-bounds access, unbalanced semaphores/channels at the end, ...
  Unsupported,  ///< The backend cannot run this plan/argument (e.g. uint8 glres, not built).
  Backend,      ///< A backend failure (CUDA error, allocation failure, ...).
};
std::string_view errorKindName(ErrorKind k);

/// Error raised by every executor entry point. `diagnostics()` holds one line per problem
/// (for a deadlock: one per blocked threadblock, "rank R tb T op K (name): waits for ...");
/// `what()` is a summary line followed by the diagnostics, one per line.
class ExecutionError : public std::runtime_error {
public:
  ExecutionError(ErrorKind kind, std::string summary, std::vector<std::string> diagnostics = {});
  ErrorKind kind() const { return kind_; }
  const std::string &summary() const { return summary_; }
  const std::vector<std::string> &diagnostics() const { return diagnostics_; }

private:
  ErrorKind kind_;
  std::string summary_;
  std::vector<std::string> diagnostics_;
};

/// Opaque backend memory (host memory for "cpu", device memory for "cuda").
struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// The buffers of one rank for one execute call. Pointers are backend memory obtained from
/// Executor::allocate (possibly offset into it). In-place calls alias them, following the
/// nccl-tests conventions (spec plan#10.5):
///   allreduce/alltoall/sendrecv: input == output;
///   allgather:     input  = output + rank * inputBytes;
///   reducescatter: output = input  + rank * outputBytes.
struct RankBuffers {
  void *input = nullptr;  ///< The user send buffer ("i"), inputBytes long.
  void *output = nullptr; ///< The user receive buffer ("o"), outputBytes long.
};

/// One execute call: the plan for all ranks plus the run-time arguments of MSCCL++'s
/// Executor::execute (sendBuffSize, recvBuffSize, dataType, packetType).
struct ExecuteRequest {
  const plan::Plan *plan = nullptr;
  std::vector<RankBuffers> buffers;  ///< One per rank: buffers[r] for plan->gpus[r].
  uint64_t inputBytes = 0;           ///< S_in, the same for every rank (bytes).
  uint64_t outputBytes = 0;          ///< S_out, the same for every rank (bytes).
  plan::DataType dataType = plan::DataType::Float32; ///< Element type of reductions.
  /// Reduction operator. The reference always sums (plan#11.15); we honour min/max. When a reduce
  /// op of the plan carries `reduce_op`, the plan's value wins for that op (see docs/runtime.md).
  plan::ReduceOp reduceOp = plan::ReduceOp::Sum;
  PacketType packetType = PacketType::LL16;
  /// Number of launches. Each launch advances the LL flag F (plan#7.3) and the double-scratch
  /// half (plan#7.4); scratch, semaphores and channel counters persist between the launches of one
  /// call, as they do across the reference's execute calls on one context.
  unsigned iterations = 1;
  /// Launches run before the timed ones (same effects on buffers and flags as `iterations`).
  unsigned warmupIterations = 0;
  /// The caller has already run validatePlan (PlanValidate.h) on `plan` with allowGlre and it
  /// passed: execute skips it (msccl-run validates once before a sweep, not once per size).
  bool planValidated = false;
};

/// What an execute call measured.
struct ExecuteResult {
  double seconds = 0;        ///< Wall time of the `iterations` timed launches, total.
  unsigned launches = 0;     ///< warmupIterations + iterations.
  uint64_t opsExecuted = 0;  ///< Ops completed over all ranks/tbs/launches (0 if unknown).
  /// Findings that do not fail the run (the CPU race checker's relaxed-handshake races), one line each.
  std::vector<std::string> warnings;
};

/// A backend. Implementations must be usable for many execute calls in sequence; they are not
/// required to be thread-safe.
class Executor {
public:
  virtual ~Executor();
  /// Registry name ("cpu", "cuda").
  virtual std::string_view name() const = 0;
  /// One-line description of the machine it runs on (e.g. "CPU reference (simulated ranks)").
  virtual std::string description() const = 0;

  /// Allocate `bytes` of backend memory, zero-filled. Throws ExecutionError(Backend).
  virtual DeviceBuffer allocate(size_t bytes) = 0;
  virtual void release(DeviceBuffer &buffer) = 0;
  /// Copy host -> backend memory (`dst` is inside an allocation) and back.
  virtual void upload(void *dst, const void *src, size_t bytes) = 0;
  virtual void download(void *dst, const void *src, size_t bytes) = 0;
  /// Whether execute() moves data. A model that only predicts time (the "sim" backend) returns
  /// false: runCollective (Verify.h) then neither fills inputs nor verifies outputs.
  virtual bool movesData() const { return true; }

  /// Run the plan. Validates the plan (PlanValidate.h) and the sizes (Layout.h) first.
  /// Throws ExecutionError: InvalidPlan, InvalidSize, Deadlock, Misuse, Unsupported, Backend.
  virtual ExecuteResult execute(const ExecuteRequest &request) = 0;

  /// Wait until the work the caller queued on `stream` (a cudaStream_t for the CUDA backends,
  /// nullptr = the legacy default stream) has finished, so that a plan reads what the caller's
  /// kernels wrote. Backends without caller streams (cpu, sim, the host device) do nothing.
  /// Throws ExecutionError(Backend).
  virtual void synchronizeStream(void *stream) { (void)stream; }
};

// --- Registry -------------------------------------------------------------------------------

/// What a driver asks of a backend; each factory reads the fields that apply to it.
struct BackendOptions {
  bool raceCheck = false; ///< cpu: the happens-before race checker (CpuExecutorOptions::raceCheck).
  std::string topology;   ///< sim: a topology name or file (SimExecutor.h); "" = hgx-h100.
};

using ExecutorFactory = std::function<std::unique_ptr<Executor>(const BackendOptions &)>;

/// Register a backend under `name` (replaces an earlier one with that name).
void registerExecutor(const std::string &name, const std::string &description, ExecutorFactory factory);
/// Names of the registered backends, sorted.
std::vector<std::string> registeredExecutors();
/// Whether a backend named `name` is registered.
bool hasExecutor(const std::string &name);
/// Create backend `name` with `options`. Throws ExecutionError(Unsupported) naming the
/// registered backends when there is none by that name (e.g. "cuda" in a build without CUDA),
/// and whatever the factory throws (e.g. sim::TopologyError for an unknown topology).
std::unique_ptr<Executor> createExecutor(const std::string &name, const BackendOptions &options = {});

/// Registration functions of the backends. Each is defined by its backend library and is
/// idempotent:
///   registerCpuExecutor()  - msccl_cpu  (always built)
///   registerSimExecutor()  - msccl_sim  (always built)
///   registerCudaExecutor() - msccl_cuda (only when CMake `TARGET msccl_cuda` exists)
void registerCpuExecutor();
void registerSimExecutor();
void registerCudaExecutor();
/// Every backend this build has: what drivers (msccl-run, libmsccl) call, so that they name no
/// backend at compile time. Defined by the library msccl_backends (runtime/lib/backends), whose
/// table of registration calls CMake writes from the backend libraries it built.
void registerBuiltExecutors();

} // namespace msccl::runtime
