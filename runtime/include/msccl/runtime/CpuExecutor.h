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
};

/// A new CPU executor. Its memory is host memory (allocate() = zeroed aligned host memory).
std::unique_ptr<Executor> makeCpuExecutor(const CpuExecutorOptions &options = {});

} // namespace msccl::runtime
