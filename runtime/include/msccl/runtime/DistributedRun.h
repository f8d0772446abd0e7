//===- DistributedRun.h - Run a plan with one process per rank (MPI) ---------------------===//
//
// Consumes a Communicator (Communicator.h) whose size equals the plan's rank count, a plan, an
// nccl-tests size S and the same RunOptions as runCollective (Verify.h); every process runs
// its own rank of the plan on the CPU, for real:
//   * its input, output and scratch buffers and its signal words live in a NodeSharedMemory
//     segment that its node peers map: memory channels and switch channels (every member must
//     be on the node) load and store there directly, like CUDA IPC and multimem;
//   * port channels go through a proxy (this process's main thread) that moves data with MPI
//     one-sided puts, flushes and atomic adds, to any rank of any node, like MSCCL++'s proxy;
//   * every threadblock is a thread, with the op semantics of the CPU executor (CpuOps.cpp)
//     and the memory orders the ops promise; waiting threads spin briefly, then yield, then
//     sleep;
//   * launches are separated by a barrier (then every rank checks its semaphores and channel
//     counters, as the CPU executor does, and the ranks agree on the outcome).
// Each rank fills and verifies its own buffers; the returned report is the same on every rank:
// wrong elements summed over ranks, time per launch the maximum over ranks.
//
// Errors (the same ExecutionError kinds as runCollective, thrown on every rank): plan rank
// count != world size (InvalidPlan), a memory/switch channel between nodes (InvalidPlan, with
// the JSON path), a launch that does not finish within `timeoutSeconds` (Deadlock: this rank's
// threadblocks, each with its op, JSON path and what it waits for), a misuse on any rank
// (Misuse on that rank; the others stop and report which rank failed). When the ranks cannot
// even agree on the failure within the timeout (a rank died or hangs inside MPI), this rank
// prints its report to stderr and aborts the whole job (MPI_Abort): no process stays behind.
//
// Mirrors: mscclpp src/executor/executor.cc (one process per GPU) and src/proxy.cc.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Verify.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msccl::runtime {

struct DistributedOptions {
  double timeoutSeconds = 60; ///< Per launch; then the per-rank report (ErrorKind::Deadlock).
};

/// This process's rank of a plan set up for repeated executes at one size, on some device
/// implementation, over a Communicator: what runCollectiveRanks drives. Implementations:
/// DistributedSession (the CPU, below) and cuda::CudaRankSession (CUDA and the host
/// implementation of the device code). Construction and destruction are collective.
class RankSession {
public:
  virtual ~RankSession();
  /// The message sizes, reduce op and in-place-ness of the run (startRun's report).
  virtual const RunReport &start() const = 0;
  /// Collective: `fill` writes this rank's S_in input bytes (host memory), then `warmup` +
  /// `iterations` launches run, every launch from this input. Returns the seconds of the timed
  /// launches, the maximum over ranks. Throws ExecutionError (Deadlock, Misuse, Backend, ...)
  /// the same on every rank.
  virtual double execute(const std::function<void(uint8_t *input)> &fill, unsigned warmup, unsigned iterations) = 0;
  /// This rank's output after execute (S_out bytes, host memory), valid until the next execute.
  virtual const uint8_t *output() const = 0;
  /// One application call (libmsccl's Executor, the NCCL shim): `sendBytes` (<= S_in) input
  /// bytes from `send`, the next launch, `recvBytes` (<= S_out) output bytes to `recv` (fewer
  /// than S_in/S_out: an AllToAllV rank's own row and column of a padded plan). The buffers are the
  /// backend's memory (host memory for "cpu"; device or host memory for the CUDA backends,
  /// copied with cudaMemcpyDefault); they may alias as the in-place conventions say. On a GPU
  /// the copies and the launch are enqueued on the caller's `stream` (cudaStream_t; null: the
  /// legacy default stream) and the call returns: `recv` holds the result once that stream has
  /// run it (CudaRankSession.h); elsewhere the call returns when `recv` holds it. Not a collective round
  /// per se, but every rank makes the same calls in the same order. Errors as execute's; after a
  /// failed call the session (and its communicator) refuse later calls.
  virtual void call(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *stream) = 0;
  /// Stop this rank's call in progress from any thread (it throws ExecutionError(Misuse) or
  /// Deadlock soon after) and refuse later ones; local: no other rank is told (ncclCommAbort).
  virtual void abort() = 0;
  /// Throws, once, what an earlier call that returned before its work ran (a stream-ordered
  /// launch on a GPU) ended with, if it has run and failed (Deadlock: a device-side wait timed
  /// out; Misuse: aborted); returns at once otherwise (nothing failed, or it still runs). Never
  /// waits. From any thread, also while another calls `call` (NCCL's ncclCommGetAsyncError, which
  /// PyTorch's watchdog polls). Sessions whose calls return when done have nothing to report.
  virtual void poll() {}
};

/// RankSession::call's argument check, for every implementation: throws ExecutionError(Misuse)
/// naming both when `sendBytes`/`recvBytes` exceed the session's S_in/S_out (`sizes`).
void checkCallBytes(const MessageSizes &sizes, size_t sendBytes, size_t recvBytes);

/// Opens `plan` at options.size for this process's rank (collective; throws what the session's
/// constructor throws).
using RankSessionFactory = std::function<std::unique_ptr<RankSession>(Communicator &comm, const plan::Plan &plan,
                                                                      const RunOptions &options,
                                                                      const DistributedOptions &dist)>;
/// Register a one-process-per-rank backend under `name` (the executor names: "cpu", "cuda",
/// "cuda-host", ...); replaces an earlier one of that name. "cpu" is always registered.
void registerRankBackend(const std::string &name, const std::string &description, RankSessionFactory factory);
/// Names of the registered one-process-per-rank backends, sorted.
std::vector<std::string> registeredRankBackends();
/// Opens a session of backend `name`. Throws ExecutionError(Unsupported) naming the registered
/// ones when there is none by that name.
std::unique_ptr<RankSession> openRankSession(const std::string &name, Communicator &comm, const plan::Plan &plan,
                                             const RunOptions &options, const DistributedOptions &dist = {});
/// registerCudaRankBackends() - msccl_cuda_ranks (only with the CUDA executor): "cuda",
/// "cuda-host" and the other CUDA executor names (CudaRankSession.h). registerBuiltRankBackends()
/// (msccl_backends) registers every one this build has.
void registerCudaRankBackends();
void registerBuiltRankBackends();

/// Run and verify `plan` at size `options.size` with one rank per process on backend `name`
/// (runCollectiveDistributed with "cpu"). Collective: every process calls it with the same
/// plan, options and backend. AllToAllV plans resolve their count matrix first.
RunReport runCollectiveRanks(const std::string &name, Communicator &comm, const plan::Plan &plan,
                             const RunOptions &options, const DistributedOptions &dist = {});

/// A plan set up for repeated executes at one size with one rank per process: validation,
/// resolution, lowering, the shared segments and the threadblock threads are made once by the
/// constructor (collective; throws what runCollectiveDistributed throws before running), each
/// execute starts from fresh state (zeroed scratch, signals and semaphores, flags from 1) with
/// this rank's input written by `fill`. runCollectiveDistributed and libmsccl's Executor
/// (api/, one process per rank) both run plans through it. The destructor is collective too
/// (a barrier, then the segments are freed): every rank destroys its session in the same order.
class DistributedSession final : public RankSession {
public:
  /// Uses options.size, dataType, reduceOp, inPlace, packetType and planValidated.
  DistributedSession(Communicator &comm, const plan::Plan &plan, const RunOptions &options,
                     const DistributedOptions &dist = {});
  ~DistributedSession() override;
  DistributedSession(const DistributedSession &) = delete;
  DistributedSession &operator=(const DistributedSession &) = delete;

  const RunReport &start() const override;
  double execute(const std::function<void(uint8_t *input)> &fill, unsigned warmup, unsigned iterations) override;
  /// One application call (libmsccl's Executor): the next launch of this session, with no
  /// collective round between calls. The first call starts from zeroed memory after a barrier,
  /// as execute does; later ones carry the state over as the launches of one execute do (signal
  /// counts, LL flags, the double-scratch half), with this rank's input written by `fill` just
  /// before its launch, as a host writes between two kernels (the plans the verifier proves order
  /// that with their ready handshake). A failed or timed-out launch sets every other rank's abort
  /// word and throws here (ExecutionError Misuse/Deadlock); a rank whose launch had finished
  /// refuses its next call (Misuse) and the communicator is stopped. Use one of execute and
  /// executeNext per session.
  void executeNext(const std::function<void(uint8_t *input)> &fill);
  /// executeNext with `send` copied in and the output copied to `recv` (host memory).
  void call(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *stream) override;
  /// Stop this rank's launch in progress (from any thread; it throws ExecutionError(Misuse)
  /// within one round of its threadblocks) and refuse later ones: sets this rank's own abort
  /// word. Local: no other rank is told, nothing is freed (NCCL's ncclCommAbort of a stuck call).
  void abort() override;
  /// This rank's output (S_out bytes), valid until the next execute.
  const uint8_t *output() const override;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

/// Run and verify `plan` at size `options.size` with one rank per process. Collective: every
/// process calls it with the same plan and options.
RunReport runCollectiveDistributed(Communicator &comm, const plan::Plan &plan, const RunOptions &options,
                                   const DistributedOptions &dist = {});

} // namespace msccl::runtime
