//===- DevicePrimitives.cuh - Every primitive the interpreter asks of the machine ---------===//
//
// The one small header between the device code (Kernel.cu, DeviceSync.cuh, DeviceData.cuh,
// DeviceReduce.cuh) and the machine it runs on, in two implementations with the same names and
// the same memory orders:
//   * CUDA (nvcc, __CUDACC__): inline PTX, so that each primitive states its ordering and scope
//     exactly; the CUDA built-ins (threadIdx, __syncthreads, atomicAdd, ...) are nvcc's own.
//   * host (any C++20 compiler; HostKernel.cpp): a launch runs each threadblock as a group of
//     host threads (HostKernel.cpp), so threadIdx/blockIdx/blockDim are thread-local,
//     __syncthreads is a barrier of the block's threads, and each PTX primitive is a
//     std::atomic_ref operation with the same order (release/acquire/relaxed; sys and gpu
//     scope are both the host's coherence domain). LL16 packets are written and read as one
//     16-byte unit (atomic_ref<unsigned __int128>), LL8 ones as one 8-byte unit, as on the GPU.
//     A spinning thread yields its core a few times, then parks on the word it waits for until
//     a writer changes it (thousands of host threads share a few cores), and checks its
//     deadline on every iteration.
// The primitives:
//   addReleaseSys/addRelaxedSys, loadAcquireSys/loadRelaxedSys    channel counters (u64, sys)
//   fetchAddAcquireGpu, addReleaseGpu, loadAcquireGpu (s32)       semaphores (gpu)
//   fetchAddAcqRelGpu, loadAcquireGpu (u64)                       barrier counters (gpu)
//   storeReleaseSys (u32)                                         FIFO sequence numbers
//   fetchAddRelaxed (u64), casRelaxed (u32), loadVolatile (u32)   FIFO head, abort record
//   fenceSys                                                      __threadfence_system
//   storeLL16/tryLoadLL16, storeLL8/tryLoadLL8                    LL packets (spec plan#7.1)
//   globalTimer                                                   %globaltimer (ns)
//   spinPause(n, word, seen, nsLeft), kSpinsPerTimerCheck         bounded spinning (Waiter)
//   vadd4/vminu4/vmaxu4, wordAsFloat/floatAsWord, min/max         reduction lanes
//   blockSharedBytes<N>, copyWord8                                 shared memory of the block
//
// Mirrors: mscclpp include/mscclpp/{atomic_device,poll_device,packet_device}.hpp; NCCL's
// src/device/op128.h.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstdint>

#if defined(__CUDACC__)

#define MSCCL_NOINLINE __noinline__
#define MSCCL_LAUNCH_BOUNDS(n) __launch_bounds__(n)

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
__device__ __forceinline__ uint64_t fetchAddRelaxed(uint64_t *p, uint64_t v) {
  return atomicAdd(reinterpret_cast<unsigned long long *>(p), (unsigned long long)v);
}
__device__ __forceinline__ uint32_t casRelaxed(uint32_t *p, uint32_t expected, uint32_t desired) {
  return atomicCAS(p, expected, desired);
}
__device__ __forceinline__ uint32_t loadVolatile(const uint32_t *p) { return *(const volatile uint32_t *)p; }
__device__ __forceinline__ void fenceSys() { __threadfence_system(); }
__device__ __forceinline__ uint64_t globalTimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// --- Shared memory of the block -------------------------------------------------------------
/// N bytes (16-byte aligned) that every thread of the block sees at the same address
/// (static __shared__ memory; one array per N).
template <unsigned N> __device__ __forceinline__ void *blockSharedBytes() {
  __shared__ alignas(16) unsigned char bytes[N];
  return bytes;
}
/// Word i (8 bytes) of `src` to word i of `dst` (both 8-byte aligned).
__device__ __forceinline__ void copyWord8(void *dst, const void *src, uint64_t i) {
  static_cast<uint64_t *>(dst)[i] = static_cast<const uint64_t *>(src)[i];
}

// --- LL packets -------------------------------------------------------------------------
__device__ __forceinline__ void storeLL16(void *p, uint32_t d0, uint32_t d1, uint32_t flag) {
  asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d0), "r"(flag), "r"(d1), "r"(flag) : "memory");
}
__device__ __forceinline__ bool tryLoadLL16(const void *p, uint32_t flag, uint32_t &d0, uint32_t &d1, uint32_t &seen) {
  uint32_t f1;
  asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(d0), "=r"(seen), "=r"(d1), "=r"(f1) : "l"(p) : "memory");
  return seen == flag && f1 == flag;
}
__device__ __forceinline__ void storeLL8(void *p, uint32_t d, uint32_t flag) {
  asm volatile("st.volatile.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(d), "r"(flag) : "memory");
}
__device__ __forceinline__ bool tryLoadLL8(const void *p, uint32_t flag, uint32_t &d, uint32_t &seen) {
  asm volatile("ld.volatile.v2.u32 {%0, %1}, [%2];" : "=r"(d), "=r"(seen) : "l"(p) : "memory");
  return seen == flag;
}

// --- Spinning ---------------------------------------------------------------------------
/// A spinning thread reads the clock once per this many iterations.
constexpr uint32_t kSpinsPerTimerCheck = 1024;
/// One iteration of a wait for `word` (32 bits) to change from `seen` (`deadline`: globalTimer
/// value at which the wait gives up, 0 = not yet known): the GPU just spins.
__device__ __forceinline__ void spinPause(uint32_t, const void *, uint32_t, uint64_t) {}

// --- Reduction lanes ---------------------------------------------------------------------
__device__ __forceinline__ uint32_t vadd4(uint32_t a, uint32_t b) { return __vadd4(a, b); }
__device__ __forceinline__ uint32_t vminu4(uint32_t a, uint32_t b) { return __vminu4(a, b); }
__device__ __forceinline__ uint32_t vmaxu4(uint32_t a, uint32_t b) { return __vmaxu4(a, b); }
__device__ __forceinline__ float wordAsFloat(uint32_t w) { return __uint_as_float(w); }
__device__ __forceinline__ uint32_t floatAsWord(float f) { return __float_as_uint(f); }

} // namespace msccl::cuda::dev

#else // host threads

#include <vector_types.h> // uint4 (a plain struct of four 32-bit words, 16-byte aligned)

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

// CUDA's host_defines.h (through vector_types.h) defines __device__, __global__ (empty) and
// __forceinline__ for a host compiler. __noinline__ must stay undefined: libstdc++ spells
// __attribute__((__noinline__)).
#ifndef __device__
#define __device__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
#define MSCCL_NOINLINE __attribute__((noinline))
#define MSCCL_LAUNCH_BOUNDS(n)

// The host build's device code lives in msccl::cuda::host_threads::dev (an inline namespace:
// the source still says msccl::cuda::dev), so its symbols never meet the ones nvcc's host pass
// emits for Kernel.cu when both are linked into one library.
namespace msccl::cuda {
inline namespace host_threads {
namespace dev {}
} // namespace host_threads
} // namespace msccl::cuda

namespace msccl::cuda::dev {

/// threadIdx / blockIdx / blockDim of the calling host thread (set by HostKernel.cpp).
struct HostDim3 {
  unsigned x = 0, y = 0, z = 0;
};
/// The threads of one block share this: __syncthreads is its barrier.
struct HostBlock {
  explicit HostBlock(unsigned threads) : barrier(threads) {}
  std::barrier<> barrier;
  static constexpr unsigned kSharedBytes = 16384; ///< what blockSharedBytes may hand out
  alignas(64) unsigned char shared[kSharedBytes];
};
inline thread_local HostDim3 threadIdx, blockIdx, blockDim;
inline thread_local HostBlock *tlsBlock = nullptr;

inline void __syncthreads() { tlsBlock->barrier.arrive_and_wait(); }

template <class T> inline std::atomic_ref<T> at(T *p) { return std::atomic_ref<T>(*p); }
template <class T> inline std::atomic_ref<T> at(const T *p) { return std::atomic_ref<T>(*const_cast<T *>(p)); }

// --- Parking: a waiting host thread sleeps on the 32-bit word it waits for (a futex) ---------
// A writer of such a word calls wakeWord after its store; waiters are counted per hashed
// bucket so that a store nobody waits for costs a fence and a load. No wake-up is lost: the
// waiter counts itself and fences before the kernel compares the word with the value it saw,
// the writer fences between its store and reading the count (see HostKernel.cpp).
void wakeWord(const void *word);
/// Sleeps while `word` still holds `seen`, at most `maxNs`.
void parkWord(const void *word, uint32_t seen, uint64_t maxNs);
/// The 32-bit word of a 64-bit counter that changes with every increment (little-endian).
inline const void *lowWord(const uint64_t *p) { return p; }

inline void addReleaseSys(uint64_t *p, uint64_t v) {
  at(p).fetch_add(v, std::memory_order_release);
  wakeWord(p);
}
inline void addRelaxedSys(uint64_t *p, uint64_t v) {
  at(p).fetch_add(v, std::memory_order_relaxed);
  wakeWord(p);
}
inline uint64_t loadAcquireSys(const uint64_t *p) { return at(p).load(std::memory_order_acquire); }
inline uint64_t loadRelaxedSys(const uint64_t *p) { return at(p).load(std::memory_order_relaxed); }
inline int32_t fetchAddAcquireGpu(int32_t *p, int32_t v) {
  int32_t old = at(p).fetch_add(v, std::memory_order_acquire);
  wakeWord(p);
  return old;
}
inline void addReleaseGpu(int32_t *p, int32_t v) {
  at(p).fetch_add(v, std::memory_order_release);
  wakeWord(p);
}
inline int32_t loadAcquireGpu(const int32_t *p) { return at(p).load(std::memory_order_acquire); }
inline uint64_t fetchAddAcqRelGpu(uint64_t *p, uint64_t v) {
  uint64_t old = at(p).fetch_add(v, std::memory_order_acq_rel);
  wakeWord(p);
  return old;
}
inline uint64_t loadAcquireGpu(const uint64_t *p) { return at(p).load(std::memory_order_acquire); }
inline void storeReleaseSys(uint32_t *p, uint32_t v) { at(p).store(v, std::memory_order_release); }
inline uint64_t fetchAddRelaxed(uint64_t *p, uint64_t v) { return at(p).fetch_add(v, std::memory_order_relaxed); }
inline uint32_t casRelaxed(uint32_t *p, uint32_t expected, uint32_t desired) {
  at(p).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected; // the old value, as atomicCAS
}
inline uint32_t loadVolatile(const uint32_t *p) { return at(p).load(std::memory_order_relaxed); }
inline void fenceSys() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline uint64_t globalTimer() {
  return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --- Shared memory of the block: HostBlock::shared ------------------------------------------
template <unsigned N> inline void *blockSharedBytes() {
  static_assert(N <= HostBlock::kSharedBytes, "HostBlock::kSharedBytes is too small");
  return tlsBlock->shared;
}
inline void copyWord8(void *dst, const void *src, uint64_t i) {
  std::memcpy(static_cast<char *>(dst) + 8 * i, static_cast<const char *>(src) + 8 * i, 8);
}

// --- LL packets: one atomic unit each (a packet is never seen half written) ---------------
using Packet128 = unsigned __int128;
// A waiter watches the packet's first flag word (bytes 4..7 of LL16 and of LL8).
inline void storeLL16(void *p, uint32_t d0, uint32_t d1, uint32_t flag) {
  const uint32_t w[4] = {d0, flag, d1, flag};
  Packet128 v;
  std::memcpy(&v, w, 16);
  at(static_cast<Packet128 *>(p)).store(v, std::memory_order_relaxed);
  wakeWord(static_cast<char *>(p) + 4);
}
inline bool tryLoadLL16(const void *p, uint32_t flag, uint32_t &d0, uint32_t &d1, uint32_t &seen) {
  Packet128 v = at(static_cast<const Packet128 *>(p)).load(std::memory_order_relaxed);
  uint32_t w[4];
  std::memcpy(w, &v, 16);
  d0 = w[0];
  d1 = w[2];
  seen = w[1];
  return w[1] == flag && w[3] == flag;
}
inline void storeLL8(void *p, uint32_t d, uint32_t flag) {
  at(static_cast<uint64_t *>(p)).store((uint64_t)flag << 32 | d, std::memory_order_relaxed);
  wakeWord(static_cast<char *>(p) + 4);
}
inline bool tryLoadLL8(const void *p, uint32_t flag, uint32_t &d, uint32_t &seen) {
  uint64_t v = at(static_cast<const uint64_t *>(p)).load(std::memory_order_relaxed);
  d = (uint32_t)v;
  seen = (uint32_t)(v >> 32);
  return seen == flag;
}

// --- Spinning: yield the core a few times, then park on the word until it changes (or the
// deadline nears: at most 50 ms, so that an abort is noticed); the deadline is checked on every
// iteration.
constexpr uint32_t kSpinsPerTimerCheck = 1;
inline void spinPause(uint32_t n, const void *word, uint32_t seen, uint64_t deadline) {
  if (n < 4) {
    std::this_thread::yield();
    return;
  }
  constexpr uint64_t kMaxPark = 50000000ull; // ns
  const uint64_t now = globalTimer();
  const uint64_t left = deadline == 0 ? kMaxPark : deadline > now ? deadline - now : 0;
  if (left) parkWord(word, seen, left < kMaxPark ? left : kMaxPark);
}

// --- Reduction lanes (the CUDA SIMD intrinsics' definitions: four unsigned bytes) ----------
inline uint32_t bytewise(uint32_t a, uint32_t b, int op) {
  uint32_t r = 0;
  for (int k = 0; k < 32; k += 8) {
    uint32_t x = (a >> k) & 0xffu, y = (b >> k) & 0xffu;
    uint32_t z = op == 0 ? (x + y) & 0xffu : op == 1 ? std::min(x, y) : std::max(x, y);
    r |= z << k;
  }
  return r;
}
inline uint32_t vadd4(uint32_t a, uint32_t b) { return bytewise(a, b, 0); }
inline uint32_t vminu4(uint32_t a, uint32_t b) { return bytewise(a, b, 1); }
inline uint32_t vmaxu4(uint32_t a, uint32_t b) { return bytewise(a, b, 2); }
inline float wordAsFloat(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
inline uint32_t floatAsWord(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}
using std::max;
using std::min;

} // namespace msccl::cuda::dev

#endif
