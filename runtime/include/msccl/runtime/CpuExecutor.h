//===- CpuExecutor.h - The CPU reference executor ----------------------------------------===//
//
// Runs every rank of a plan in one process on host memory (backend name "cpu"). A deterministic
// single-threaded scheduler drives one state machine per (rank, threadblock): each step runs the
// threadblock's current op, which either completes, makes partial progress (packet-consuming ops
// keep a cursor and consume packets one by one as they arrive, like GPU threads; multi-channel
// waits and semaphore acquires keep a cursor over their ids) or blocks and is retried later.
// Threadblocks therefore make progress concurrently without any deadlock a GPU would not have.
// When a full round over all unfinished threadblocks makes no progress, the launch stops with
// ExecutionError(Deadlock) listing EVERY blocked threadblock (rank, tb, op index, op name, JSON
// path, and what it waits for: channel/peer/counts, semaphore value, barrier arrivals, packet
// index/range/flag). It never hangs: every step either progresses or blocks, and progress is
// bounded by the plan.
// Misuse is reported as ExecutionError(Misuse) naming rank/tb/op: out-of-bounds buffer
// accesses (every access is checked against the rank's input/output/scratch sizes), semaphores
// not back at their init value or channels with signals not matched by waits at the end of a
// launch, inconsistent barrier sizes; with CpuExecutorOptions::raceCheck, data races a GPU
// could exhibit (happens-before checker, runtime/lib/cpu/RaceCheck.h).
// Semantics follow spec plan#6 to plan#8 with the intended meaning where plan#11 lists a defect of the
// reference; docs/runtime.md lists every choice.
//
// Mirrors: mscclpp src/core/include/execution_kernel.hpp (per-op semantics),
// include/mscclpp/packet_device.hpp (LL16/LL8 layouts), src/core/executor/executor.cc.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Executor.h"

#include <memory>

namespace msccl::runtime {

struct CpuExecutorOptions {
  /// Last-resort wall-clock bound per execute call in seconds (0 = none). The scheduler detects
  /// deadlocks by itself; this only guards against a runaway plan (e.g. billions of ops).
  double timeLimitSeconds = 0;
  /// Check every launch for data races a GPU could exhibit (spec plan#6.3): accesses to the
  /// same bytes, at least one a write, not ordered by nop/barrier within a threadblock, by
  /// signal->wait (release/acquire) between ranks, by barrier/semaphores between threadblocks
  /// of a rank, or by flush/port signal for port puts. Races raise ExecutionError(Misuse) at
  /// the end of the launch, one diagnostic per racing op pair (first 8) naming both accesses,
  /// the buffer and byte range. Slower (vector clocks + an interval map over all bytes touched).
  /// See docs/runtime.md "Race checking".
  bool raceCheck = false;
  /// With raceCheck: the launch model of the static verifier (docs/verification.md "The GPU
  /// model"), on by default. Each rank's launch k+1 follows only its own launch k (stream order);
  /// shadow state and signal clocks are kept across launches; each rank's host writes its input
  /// and output at every kernel start and reads them at every kernel end. So missing entry/exit
  /// handshakes, back-to-back launches overwriting a peer's scratch it still reads, port puts
  /// not flushed before the kernel ends and LL scratch reused across launches are races. Races
  /// that only a relaxed signal/wait leaves unordered with a kernel start/end are warnings
  /// (ExecuteResult::warnings), as in the verifier. False: every launch boundary is a full
  /// synchronisation of all ranks (shadow state reset per launch) and the host is not modelled,
  /// which checks one kernel's internal synchronisation only (hand-written single-kernel tests).
  bool raceCheckLaunches = true;
};

/// A new CPU executor. Its memory is host memory (allocate() = zeroed aligned host memory).
std::unique_ptr<Executor> makeCpuExecutor(const CpuExecutorOptions &options = {});

} // namespace msccl::runtime
