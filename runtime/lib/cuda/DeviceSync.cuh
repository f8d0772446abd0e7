//===- DeviceSync.cuh - Bounded spinning of the interpreter's waits ----------------------===//
//
// The memory-model primitives (DevicePrimitives.cuh) state each ordering and scope:
//   * channel semaphores: release/relaxed adds and acquire/relaxed loads at system scope (the
//     peer may be another GPU; port counters live in host-mapped memory);
//   * rank-local semaphores and barrier counters: gpu scope;
//   * LL16 (16-byte: data0, flag, data1, flag) and LL8 (8-byte: data, flag) packets as single
//     vector stores/loads (spec plan#7.1).
// This header adds bounded spinning: every wait gives up after DevLaunch::timeoutNs (read from
// globalTimer) and records where it stopped in DevAbort, so a broken plan ends the launch
// instead of hanging it; once any wait gave up, all later waits of the launch give up at once.
//
// Mirrors: mscclpp include/mscclpp/{semaphore_device,packet_device,concurrency_device}.hpp.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "DevicePrimitives.cuh"

#include "msccl/cuda/DevicePlan.h"

#include <cstdint>

namespace msccl::cuda::dev {

/// Per-thread state of bounded waiting (see the file comment).
struct Waiter {
  DevAbort *abort;
  uint64_t timeoutNs;
  uint32_t rank, tbId, opIndex, opType;
  bool gaveUp = false;

  /// One spin iteration of a wait for the 32-bit `word` to change from `seen` (the value it
  /// had when the wait's condition was last found false); false = stop waiting. `n` counts
  /// the iterations.
  __device__ __forceinline__ bool keepWaiting(uint32_t &n, uint64_t &deadline, const void *word, uint32_t seen) {
    if (gaveUp) return false;
    spinPause(n, word, seen, deadline);
    if (++n % kSpinsPerTimerCheck != 0) return true;
    if (loadVolatile(&abort->aborted)) return giveUp(false);
    uint64_t now = globalTimer();
    if (deadline == 0) deadline = now + (timeoutNs ? timeoutNs : UINT64_MAX / 2);
    else if (timeoutNs && now > deadline) return giveUp(true);
    return true;
  }

  __device__ MSCCL_NOINLINE bool giveUp(bool first) {
    gaveUp = true;
    if (first && casRelaxed(&abort->aborted, 0u, 1u) == 0u) {
      abort->rank = rank;
      abort->tbId = tbId;
      abort->opIndex = opIndex;
      abort->opType = opType;
      fenceSys();
    }
    return false;
  }
};

} // namespace msccl::cuda::dev
