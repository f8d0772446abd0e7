//===- msccl.hpp - Plans inside applications: compile, register and select, execute ------===//
//
// The one public C++ header of libmsccl (CMake target msccl::msccl). Three steps, as an
// application (a customized communicator) uses them:
//
//   1. compile: a .msccl program (a file, `stdlib:NAME`, or source text) plus parameters to an
//      execution plan, in-process (the mscclc driver, msccl/driver/Driver.h), through an on-disk
//      cache keyed by a hash of the source, the text of every file it imports, the parameters
//      and the compiler version ($MSCCL_CACHE_DIR, else $XDG_CACHE_HOME/msccl, else
//      ~/.cache/msccl). Mirrors: mscclpp python/mscclpp/language/utils.py + the DSL compiler's
//      JIT cache (`mscclpp.compile` with its cache directory).
//   2. PlanRegistry: plans registered with what they are for (collective, world size, ranks per
//      node, message-size range, in-place support, tags; each defaults to what the plan says);
//      select(request) picks one by the default rule or a user selector; explain(request) says
//      for every plan why it was or was not chosen. Mirrors: mscclpp ExecutionPlanRegistry and
//      its selector (include/mscclpp/algorithm.hpp, src/executor/execution_plan.cc).
//   3. Communicator + Executor::execute: runs a plan on one rank's buffers. A Communicator is
//      the job: every rank in this process (Communicator::local; each rank's thread calls
//      execute, the CPU or CUDA executor runs them together), one process per rank over MPI
//      (Communicator::mpi), or one process per rank bootstrapped from a unique id
//      (Communicator::initRank, as ncclGetUniqueId/ncclCommInitRank). Mirrors: mscclpp
//      include/mscclpp/executor.hpp (Executor::execute).
//
// Units: every size is in BYTES. A message size (SelectRequest::messageBytes, the plan's range)
// is the nccl-tests size S of docs/spec/plan-format.md: the buffer of allreduce/alltoall, the
// OUTPUT of allgather, the INPUT of reducescatter, i.e. max(sendBytes, recvBytes).
//
// Errors: every function throws msccl::Error (a std::runtime_error) with an ErrorCode and a
// message that says what was wrong; nothing aborts the process on bad input. Thread safety: a
// PlanRegistry may be read (select/explain) from many threads while nobody registers; a local
// Communicator's Executor is called from one thread per rank; an MPI Communicator from the
// thread that created it.
//
// The C API (msccl/msccl.h) mirrors this header function by function.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace msccl {

namespace runtime {
class Communicator;
}

// --- Errors ----------------------------------------------------------------------------------

/// Error codes, shared with the C API (msccl_result_t has the same values).
enum class ErrorCode : int {
  Ok = 0,
  InvalidArgument = 1, ///< A bad argument (null pointer, rank out of range, size mismatch, ...).
  CompileError = 2,    ///< The program did not compile; the message holds mscclc's diagnostics.
  NoPlan = 3,          ///< select() found no plan for the request (explain() says why).
  InvalidPlan = 4,     ///< A plan file that is not a valid plan, or a plan the job cannot run.
  InvalidSize = 5,     ///< The message size does not fit the plan (alignment, chunks, range).
  Deadlock = 6,        ///< The plan deadlocked (the message names the waiting threadblocks).
  Misuse = 7,          ///< Out-of-bounds access, unbalanced synchronisation, a failed peer rank.
  Unsupported = 8,     ///< Not available in this build or for this backend (e.g. CUDA without a GPU).
  Backend = 9,         ///< A backend failure (CUDA or MPI error, allocation failure).
  System = 10,         ///< A file-system failure (unreadable plan, cache directory not writable).
  Internal = 11,       ///< A bug in msccl.
};
/// "invalid argument", "compile error", ...
const char *errorCodeName(ErrorCode code);

class Error : public std::runtime_error {
public:
  Error(ErrorCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

private:
  ErrorCode code_;
};

/// A plan, shared between the registry, executors and the caller (immutable once made).
using PlanPtr = std::shared_ptr<const plan::Plan>;

// --- 1. compile ------------------------------------------------------------------------------

/// What mscclc's command line would say besides the input.
struct CompileParams {
  /// `-D NAME=VALUE`: values of the program's `param`s, in order.
  std::vector<std::pair<std::string, std::string>> defines;
  /// Drop the defines that name no param of the program instead of failing (defines meant for a
  /// directory of programs; PlanRegistry::addDirectory sets it). Part of the cache key.
  bool skipUnknownDefines = false;
  /// `--option NAME=VALUE`: program option overrides (instances, protocol, ...), in order.
  std::vector<std::pair<std::string, std::string>> options;
  /// `-I DIR`: import search directories, in order.
  std::vector<std::string> includeDirs;
  /// The stdlib directory ("" = mscclc's default: $MSCCL_STDLIB_PATH, the installed one, ...).
  std::string stdlibDir;
  /// Skip the plan checks and the static verifier (`--no-verify`). Part of the cache key.
  bool noVerify = false;
  /// mscclc's --target: "mscclpp" (the default, "" too: the MSCCL++ executor's per-threadblock
  /// limits of 64 ops and 16 channels or remote buffers of a type hold) or "msccl" (this
  /// project's executors only: no such limit). Anything else is Error(InvalidArgument). Part of
  /// the cache key when not the default.
  std::string target;
  /// Use the on-disk cache (read and write). False: always compile, write nothing.
  bool useCache = true;
  /// The cache directory; "" = defaultCacheDir().
  std::string cacheDir;
  /// The compiler version the cache key holds; "" = compilerVersion(). Tests inject another to
  /// check that a new compiler invalidates old entries.
  std::string compilerVersionOverride;
};

/// What a compile did (for tests, tools and benchmarks).
struct CompileInfo {
  bool cacheHit = false;     ///< The plan came from the cache (nothing was compiled).
  bool cacheRepaired = false;///< A cache entry existed but was corrupt; it was recompiled and replaced.
  std::string key;           ///< The cache key (64 hex digits, SHA-256), "" without the cache.
  std::string cacheFile;     ///< The entry's path, "" without the cache.
  std::vector<std::string> sources; ///< The files read: the main file, then each import.
  /// Why the cache directory was not used ("" when it was or the cache is off): it could not be
  /// created, or it is owned by another user or group/world-writable (a warning is printed once).
  std::string cacheRefused;
};

/// The cache directory used when CompileParams::cacheDir is empty: $MSCCL_CACHE_DIR, else
/// $XDG_CACHE_HOME/msccl, else $HOME/.cache/msccl, else /tmp/msccl-cache-<uid>. Created with mode
/// 0700; a directory owned by another user or writable by its group or others is not used.
std::string defaultCacheDir();

/// Where `msccl-tune --install` writes this machine's tuned plans (a plan directory with an index,
/// PlanRegistry::addDirectory) and where libmsccl_nccl.so looks when MSCCL_PLANS is unset:
/// $MSCCL_INSTALLED_PLANS, else $XDG_DATA_HOME/msccl/plans, else $HOME/.local/share/msccl/plans,
/// else "" (no home). Not created here; it may not exist.
std::string installedPlansDir();

/// The version of the compiler built into this library ("msccl 0.2.0 plan-format N ...").
std::string compilerVersion();

/// Compile `input`: a .msccl file path or `stdlib:NAME`. Throws Error(CompileError) with the
/// rendered diagnostics, Error(System) when the file cannot be read. Cache entries are written
/// atomically (temporary file + rename); an entry that fails its checksum or does not parse is
/// recompiled and replaced, never trusted. An unwritable or refused cache directory is not an
/// error (the plan is returned; info->cacheFile is then "", info->cacheRefused says why when the
/// directory was refused). Manifests are followed only to absolute .msccl regular files.
PlanPtr compile(const std::string &input, const CompileParams &params = {}, CompileInfo *info = nullptr);

/// The same for program text. `name` is the buffer's name in diagnostics; imports resolve as for
/// a file in the current directory, then in params.includeDirs, then in the stdlib.
PlanPtr compileSource(const std::string &source, const CompileParams &params = {},
                      const std::string &name = "<source>", CompileInfo *info = nullptr);

/// Read a plan file (MSCCL++ JSON). Throws Error(InvalidPlan) naming the JSON path,
/// Error(System) when unreadable.
PlanPtr loadPlan(const std::string &path);

/// A Broadcast or Reduce plan (written for root 0: plans have no root argument, as in MSCCL++)
/// for root `root`: the same plan with rank 0's program on `root` (plan::relabelRanks with
/// plan::rootPermutation; ranks of one node of `ranksPerNode` ranks stay on one node, 0 = one
/// node). Works for any plan whose collective's end state is the same under renaming the ranks
/// other than the root (broadcast, reduce). The result is a new plan: keep it (an executor
/// prepares each plan once). root 0 returns `plan` itself. A Reduce defines `recv` on the root
/// only: execute may write anything into other ranks' `recv` (NCCL leaves it alone and accepts
/// null there; libmsccl_nccl.so gives such ranks a buffer of its own).
/// Throws Error(InvalidArgument) for a null plan, root >= the plan's ranks or a ranksPerNode that
/// does not divide them; Error(InvalidPlan) for a plan sized by a count matrix (AllToAllV).
PlanPtr rootedPlan(const PlanPtr &plan, uint32_t root, uint32_t ranksPerNode = 0);

// --- 2. PlanRegistry -------------------------------------------------------------------------

/// In-place support of a plan. The plan's `inplace` says which one it was written for
/// (plan-format §10.5): true -> InPlace, false -> OutOfPlace. `Both` only when the caller knows.
enum class InPlace : uint8_t { OutOfPlace, InPlace, Both };

/// What a plan is registered for. Unset fields default to what the plan says.
struct PlanInfo {
  std::string name;                   ///< Unique in the registry; "" = the plan's name (else file stem / "plan-N").
  std::string collective;             ///< "" = plan.collective ("allreduce", "allgather", ...).
  uint32_t worldSize = 0;             ///< 0 = the plan's rank count.
  /// Ranks per node the plan is for; 0 = any layout the plan fits: every memory and switch
  /// channel (loads and stores) joins ranks of one node, ranks r and q sharing a node when
  /// r / k == q / k for k ranks per node.
  uint32_t ranksPerNode = 0;
  std::optional<uint64_t> minBytes;   ///< nullopt = plan.minMessageSize (bytes, inclusive).
  std::optional<uint64_t> maxBytes;   ///< nullopt = plan.maxMessageSize (bytes, inclusive).
  std::optional<InPlace> inPlace;     ///< nullopt = from plan.inplace.
  std::vector<std::string> tags;      ///< Free-form ("nvls", "low-latency", "v2", ...).
  std::string source;                 ///< Where it came from (file path, "compile:..."); informational.
};

/// A registered plan: its plan and its info with every default filled in.
struct RegisteredPlan {
  PlanPtr plan;
  PlanInfo info;  ///< collective, worldSize, minBytes, maxBytes, inPlace are set.
  size_t index = 0; ///< Registration order.
  /// Whether the plan's memory/switch channels stay inside nodes of `k` ranks (k = 0: any).
  bool fitsRanksPerNode(uint32_t k, std::string *whyNot = nullptr) const;
  std::vector<std::pair<uint32_t, uint32_t>> localPairs; ///< Rank pairs joined by memory/switch channels.
};

/// One call to choose a plan for.
struct SelectRequest {
  std::string collective;               ///< "allreduce", "allgather", "reducescatter", "alltoall", ...
  uint32_t worldSize = 0;
  uint32_t ranksPerNode = 0;            ///< 0 = all ranks on one node (= worldSize).
  uint64_t messageBytes = 0;            ///< nccl-tests size S (see the file comment).
  bool inPlace = false;
  std::vector<std::string> requiredTags;  ///< A plan must carry every one.
  std::vector<std::string> preferredTags; ///< More of these wins (after the hard filters).
};

/// A user selector: given the request and the plans that pass the hard filters (collective,
/// world size, ranks per node, size range, in-place, required tags), in registration order,
/// return the one to use, or nullptr for none. It must return one of `candidates`.
using Selector =
    std::function<const RegisteredPlan *(const SelectRequest &, const std::vector<const RegisteredPlan *> &candidates)>;

/// Why a plan was or was not chosen.
struct Explanation {
  const RegisteredPlan *plan = nullptr;
  bool eligible = false; ///< Passed the hard filters.
  bool chosen = false;
  std::string reason;    ///< "chosen: ...", "collective is allgather, not allreduce", ...
};

class PlanRegistry {
public:
  PlanRegistry();
  ~PlanRegistry();
  PlanRegistry(const PlanRegistry &) = delete;
  PlanRegistry &operator=(const PlanRegistry &) = delete;

  /// Register a plan. Throws Error(InvalidArgument) when the name is taken, the range is empty
  /// (min > max) or the world size disagrees with the plan's rank count.
  const RegisteredPlan &add(PlanPtr plan, PlanInfo info = {});
  /// Register a plan file (.json) or a program (.msccl, compiled with `params` through the
  /// cache). Throws as loadPlan/compile do.
  const RegisteredPlan &addFile(const std::string &path, PlanInfo info = {}, const CompileParams &params = {});
  /// Register every .json and .msccl file of `dir` (not recursive, sorted by name; files that
  /// define no program are skipped). `params.defines` apply to every program that declares the
  /// param (skipUnknownDefines: a define one program lacks is not an error for it). Returns how
  /// many were added. Throws on the first bad file.
  /// A directory with an index, `msccl-plans.json` = {"plans": [ENTRY, ...]}, registers the
  /// entries instead, in order: ENTRY = {"file": a file of the directory (required), "name",
  /// "defines": {PARAM: VALUE}, "options": {OPTION: VALUE} (after `params`' own), "min_bytes",
  /// "max_bytes", "in_place": "in"|"out"|"both", "tags": [...], "ranks_per_node"}; one file may
  /// appear in several entries (e.g. an in-place and an out-of-place build of one program).
  /// A malformed index throws Error(InvalidArgument) naming the file and the entry's JSON path.
  size_t addDirectory(const std::string &dir, const CompileParams &params = {});
  /// addDirectory that skips a file (or index entry) it cannot load instead of throwing, and
  /// appends "FILE: reason" to `skipped` for each (msccl-run --plans). A directory that cannot be
  /// read or a malformed index still throws.
  size_t addDirectory(const std::string &dir, const CompileParams &params, std::vector<std::string> *skipped);
  /// Remove the plan `name`; false when there is none.
  bool remove(const std::string &name);

  /// Plans in registration order.
  std::vector<const RegisteredPlan *> plans() const;
  const RegisteredPlan *find(const std::string &name) const;

  /// Install a selector (empty function: back to the default rule).
  void setSelector(Selector selector);

  /// The chosen plan, or nullptr when none fits. The default rule: among the plans that pass
  /// the hard filters (collective, world size, ranks per node, messageBytes inside
  /// [minBytes, maxBytes], in-place support, required tags), the one with the most preferred
  /// tags, then the narrowest size range (maxBytes - minBytes), then the first registered.
  /// Throws Error(InvalidArgument) when a selector returns a plan that is not a candidate.
  const RegisteredPlan *select(const SelectRequest &request) const;
  /// select(), throwing Error(NoPlan) with explainText() when nothing fits.
  const RegisteredPlan &selectOrThrow(const SelectRequest &request) const;
  /// One entry per registered plan, in registration order.
  std::vector<Explanation> explain(const SelectRequest &request) const;
  /// explain() as text: a header line with the request, then one line per plan.
  std::string explainText(const SelectRequest &request) const;
  /// explainText() on one line (its lines joined by "; ", runs of blanks squeezed), for log lines
  /// and table cells (the NCCL shim's MSCCL_DEBUG fallbacks, msccl-run's skipped rows).
  std::string explainLine(const SelectRequest &request) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --- 3. Communicator and Executor ------------------------------------------------------------

enum class Backend : uint8_t {
  Cpu,  ///< Host memory, the CPU executors (runtime/lib/cpu, runtime/lib/mpi).
  Cuda, ///< Device memory and a cudaStream_t (the CUDA executor; builds with CUDA only).
};
const char *backendName(Backend b); // "cpu", "cuda"

/// NCCL_UNIQUE_ID_BYTES.
struct UniqueId {
  char internal[128] = {};
};

class Communicator {
public:
  /// Every rank in this process: `worldSize` ranks (threads of the caller), `ranksPerNode` of
  /// them per (simulated) node (0 = all on one node). Each rank's thread calls
  /// Executor::execute; the call returns when every rank has called it and the plan ran.
  static std::shared_ptr<Communicator> local(uint32_t worldSize, uint32_t ranksPerNode = 0,
                                             Backend backend = Backend::Cpu);
  /// One process per rank, started by mpirun/srun: initialises MPI (runtime/Communicator.h;
  /// MSCCL_RANKS_PER_NODE honoured). libmsccl.so itself links no MPI: the first
  /// call loads the MPI bootstrap plugin libmsccl_bootstrap_mpi.so (from MSCCL_MPI_BOOTSTRAP_LIB,
  /// else beside libmsccl.so, else the loader's path). Throws Error(Unsupported) when the build
  /// has no MPI or the plugin cannot be loaded (the message says which file and why),
  /// Error(Backend) on an MPI failure.
  /// `backend`: as adopt's (Cuda: the CUDA executor with one process per rank).
  static std::shared_ptr<Communicator> mpi(int *argc = nullptr, char ***argv = nullptr, Backend backend = Backend::Cpu);
  /// True when an MPI launcher (mpirun, srun) started this process (its environment; MPI is
  /// not initialised).
  static bool launchedByMpi();
  /// Whether getUniqueId/initRank work in this build (ZeroMQ found when it was built).
  static bool haveUniqueIdBootstrap();
  /// One process per rank from a unique id made by getUniqueId() on one rank and passed to all
  /// (as ncclGetUniqueId / ncclCommInitRank). Collective over the `worldSize` processes. No MPI.
  /// Throws Error(Unsupported) in a build without the unique-id bootstrap, Error(Backend) when
  /// the rendezvous fails (ranks missing after MSCCL_BOOTSTRAP_TIMEOUT, bad id, rank out of range).
  static UniqueId getUniqueId();
  static std::shared_ptr<Communicator> initRank(const UniqueId &id, uint32_t worldSize, uint32_t rank,
                                                Backend backend = Backend::Cpu);
  /// One process per rank from torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR,
  /// MASTER_PORT; runtime::Communicator::initFromEnvironment): no MPI. Errors as initRank.
  static std::shared_ptr<Communicator> fromEnvironment(Backend backend = Backend::Cpu);
  /// Adopt a runtime communicator (one process per rank) made elsewhere. Backend::Cuda runs
  /// each rank's plans with the CUDA executor in its own process (cuda::CudaRankSession: peers'
  /// memory mapped by CUDA IPC; MSCCL_CUDA_DEVICE=host runs the same code on the host
  /// implementation of the device layer, for tests). Throws Error(Unsupported) when this build
  /// has no such backend (see supportsOneProcessPerRank).
  static std::shared_ptr<Communicator> adopt(std::unique_ptr<runtime::Communicator> comm,
                                             Backend backend = Backend::Cpu);
  /// Whether this build runs `backend` with one process per rank (Cpu: always; Cuda: when built
  /// with the CUDA executor).
  static bool supportsOneProcessPerRank(Backend backend);

  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  uint32_t worldSize() const;
  uint32_t ranksPerNode() const;    ///< Ranks of node 0 (nodes are equal in size).
  bool isLocal() const;             ///< All ranks in this process.
  /// This process's rank (one process per rank); -1 for a local communicator.
  int rank() const;
  Backend backend() const;
  /// The runtime communicator of a process-per-rank job (null for a local one).
  runtime::Communicator *runtimeCommunicator() const;
  /// Wait until every process of the job arrives (collective). Error(InvalidArgument) on a
  /// local communicator, Error(Backend) when the bootstrap fails.
  void barrier();

  /// Select with this communicator's world size and ranks per node filled in.
  SelectRequest request(const std::string &collective, uint64_t messageBytes, bool inPlace = false) const;

  struct Impl;
  Impl &impl() const { return *impl_; }

private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Executor {
public:
  explicit Executor(std::shared_ptr<Communicator> comm);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Run `plan` (fixed sizes; a plan with variable_sizes needs executeV) for `rank` on its
  /// buffers: `send` holds `sendBytes` bytes, `recv` receives
  /// `recvBytes` bytes (S_in and S_out of docs/spec/plan-format.md: allgather sends S/n and
  /// receives S, reducescatter the reverse, the others S and S). In place follows nccl-tests:
  /// allreduce/alltoall send == recv; allgather send == recv + rank*sendBytes; reducescatter
  /// recv == send + rank*recvBytes. `dtype`/`redop` are the element type and reduction.
  /// CPU backend: host memory, `stream` ignored. CUDA backend: device memory; the call waits
  /// for the work queued on `stream` (a cudaStream_t, null = the default stream), runs the plan
  /// and returns when it is done.
  /// A local communicator: one thread per rank calls this with the same plan, sizes, dtype and
  /// redop; it returns on every rank when the plan has run. One process per rank: every process
  /// calls it (collective).
  /// Throws Error: InvalidArgument (rank out of range, null buffer, sizes that do not match the
  /// plan or each other, ranks disagreeing), InvalidPlan (world size != plan ranks, a memory
  /// channel between nodes), InvalidSize, Deadlock, Misuse, Unsupported, Backend.
  void execute(int rank, const void *send, void *recv, size_t sendBytes, size_t recvBytes, plan::DataType dtype,
               plan::ReduceOp redop, const PlanPtr &plan, void *stream = nullptr);

  /// Copies `bytes` between buffers of this Executor's backend and host memory, in any direction
  /// (CPU: memmove; CUDA: cudaMemcpy with cudaMemcpyDefault), once the work queued on `stream`
  /// (a cudaStream_t; null: the legacy default stream) has run, returning when they have landed:
  /// for callers that post-process on the host the result of an execute on that stream, which
  /// on CUDA may still be running when execute returns (the NCCL shim's ncclAvg and PreMulSum,
  /// Python's op="avg"). Throws Error(Backend) on a CUDA error, Error(Unsupported) without the
  /// backend.
  void copy(void *dst, const void *src, size_t bytes, void *stream = nullptr);

  /// Reports, without waiting, a failure of work an earlier execute left running: on CUDA with
  /// one process per rank, execute returns once its launch is queued on the caller's stream, and
  /// a launch that later fails on the device (a wait that timed out: a peer that never came; an
  /// abort) would otherwise surface only at the next execute. Throws that Error (Deadlock,
  /// Misuse) once; returns when nothing failed or the work still runs. From any thread, also
  /// while another thread is in execute (NCCL's ncclCommGetAsyncError, which PyTorch's watchdog
  /// polls). Other backends return at once: their executes return when done.
  void pollError();

  /// AllToAllV: run a plan with variable_sizes (docs/spec/plan-format.md §10.8, e.g.
  /// stdlib:alltoallv/allpairs) for `rank` with the count matrix of this call.
  /// `counts` is the FULL n x n matrix, row-major, in ELEMENTS of `dtype` (runtime::CountMatrix):
  /// counts[r*n + p] = elements rank r sends to rank p; every rank passes the same matrix (a rank's
  /// puts land at offsets that depend on other ranks' counts; an MPI_Alltoallv-style caller
  /// all-gathers its send-counts row first). `send` holds this rank's blocks back to back in peer
  /// order (row `rank`: sum_p counts[rank][p] elements), `recv` receives block p at the prefix sum
  /// of column `rank` (sum_p counts[p][rank] elements); sendBytes/recvBytes are the buffers'
  /// capacities in bytes, at least those sums times the element size. Zero counts are allowed.
  /// The symbolic plan is resolved (runtime::CountsResolver) by a resolver built once per plan and
  /// kept in this Executor; per call only the matrix is evaluated. Collective as execute.
  /// Throws Error: InvalidArgument (a plan without variable_sizes — use execute —, counts not
  /// n*n for the plan's n ranks, buffers smaller than the row/column sums, null buffers, ranks
  /// disagreeing on the matrix), InvalidSize (a count beyond the plan's block_bound), and as execute.
  void executeV(int rank, const void *send, void *recv, size_t sendBytes, size_t recvBytes,
                const std::vector<uint64_t> &counts, plan::DataType dtype, const PlanPtr &plan,
                void *stream = nullptr);

  /// Seconds a local communicator's ranks wait for each other in execute before giving up with
  /// Error(Misuse) (a rank that never calls). Default 60; also DistributedOptions' launch timeout.
  void setTimeout(double seconds);

  /// Stop every call of this Executor at once, from any thread (NCCL's ncclCommAbort of a stuck
  /// call, as PyTorch's watchdog makes it): a call in progress in another thread throws
  /// Error(Misuse) within one round of its threadblocks, later calls throw Error(Misuse) at once.
  /// Local: no other rank is told. One process per rank: the sessions' shared memory is freed
  /// collectively, so after an abort destroy the Executor only where every rank does the same (or
  /// let the process end). A local communicator: later calls throw; nothing else changes.
  void abort();

  const std::shared_ptr<Communicator> &communicator() const { return comm_; }

private:
  std::shared_ptr<Communicator> comm_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace msccl
