//===- DeviceSync.cuh - Atomics, fences, LL packets and bounded spins (device only) -----===//
//
// The memory-model primitives of the interpreter, written as inline PTX so that each one
// states its ordering and scope exactly:
//   * channel semaphores: release/relaxed adds and acquire/relaxed loads at system scope (the
//     peer may be another GPU; port counters live in host-mapped memory);
//   * rank-local semaphores and barrier counters: gpu scope;
//   * LL16 (16-byte: data0, flag, data1, flag) and LL8 (8-byte: data, flag) packets as single
//     volatile vector stores/loads (spec plan#7.1);
//   * bounded spinning: every wait gives up after DevLaunch::timeoutNs (read from %globaltimer)
//     and records where it stopped in DevAbort, so a broken plan ends the launch instead of
//     hanging it; once any wait gave up, all later waits of the launch give up at once.
//
// Mirrors: mscclpp include/mscclpp/{semaphore_device,packet_device,concurrency_device}.hpp.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"

#include <cstdint>

namespace msccl::cuda::dev {

__device__ __forceinline__ void addReleaseSys(uint64_t *p, uint64_t v) {
  asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void addRelaxedSys(uint64_t *p, uint64_t v) {
  asm volatile("red.relaxed.sys.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t loadAcquireSys(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t loadRelaxedSys(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ int32_t fetchAddAcquireGpu(int32_t *p, int32_t v) {
  int32_t old;
  asm volatile("atom.acquire.gpu.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ void addReleaseGpu(int32_t *p, int32_t v) {
  asm volatile("red.release.gpu.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int32_t loadAcquireGpu(const int32_t *p) {
  int32_t v;
  asm volatile("ld.acquire.gpu.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t fetchAddAcqRelGpu(uint64_t *p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
__device__ __forceinline__ uint64_t loadAcquireGpu(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void storeReleaseSys(uint32_t *p, uint32_t v) {
  asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint64_t globalTimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// --- LL packets -------------------------------------------------------------------------
__device__ __forceinline__ void storeLL16(void *p, uint32_t d0, uint32_t d1, uint32_t flag) {
  asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d0), "r"(flag), "r"(d1), "r"(flag) : "memory");
}
__device__ __forceinline__ bool tryLoadLL16(const void *p, uint32_t flag, uint32_t &d0, uint32_t &d1) {
  uint32_t f0, f1;
  asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1) : "l"(p) : "memory");
  return f0 == flag && f1 == flag;
}
__device__ __forceinline__ void storeLL8(void *p, uint32_t d, uint32_t flag) {
  asm volatile("st.volatile.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(d), "r"(flag) : "memory");
}
__device__ __forceinline__ bool tryLoadLL8(const void *p, uint32_t flag, uint32_t &d) {
  uint32_t f;
  asm volatile("ld.volatile.v2.u32 {%0, %1}, [%2];" : "=r"(d), "=r"(f) : "l"(p) : "memory");
  return f == flag;
}

/// Per-thread state of bounded waiting (see the file comment).
struct Waiter {
  DevAbort *abort;
  uint64_t timeoutNs;
  uint32_t rank, tbId, opIndex, opType;
  bool gaveUp = false;

  /// One spin iteration of a wait; false = stop waiting. `n` counts the iterations.
  __device__ __forceinline__ bool keepWaiting(uint32_t &n, uint64_t &deadline) {
    if (gaveUp) return false;
    if ((++n & 1023u) != 0) return true;
    if (*(volatile uint32_t *)&abort->aborted) return giveUp(false);
    uint64_t now = globalTimer();
    if (deadline == 0) deadline = now + (timeoutNs ? timeoutNs : UINT64_MAX / 2);
    else if (timeoutNs && now > deadline) return giveUp(true);
    return true;
  }

  __device__ __noinline__ bool giveUp(bool first) {
    gaveUp = true;
    if (first && atomicCAS(&abort->aborted, 0u, 1u) == 0u) {
      abort->rank = rank;
      abort->tbId = tbId;
      abort->opIndex = opIndex;
      abort->opType = opType;
      __threadfence_system();
    }
    return false;
  }
};

} // namespace msccl::cuda::dev
