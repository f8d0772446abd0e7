//===- DeviceData.cuh - Block-wide copy, reduce and packet loops (device only) ----------===//
//
// The data-movement loops every data op of the interpreter is built from. All threads of the
// block cooperate: thread t handles vectors t, t+blockDim, ... (spec plan#6.3); no loop
// synchronises the block at its end (ordering between ops comes from the plan's nops).
//   blockCopy    one source -> several destinations (copy, put, get, gstore emulation),
//                16-byte vectors with four loads in flight when every pointer and the length
//                are 16-byte aligned, else 4-byte words, else (uneven chunks of 1- and 2-byte
//                elements, runtime/UnevenChunks.h) elements of the widest of 2 or 1 bytes.
//   blockReduce  sources folded left to right -> several destinations (re, res, rre, rres,
//                glres/glre emulation): d = s0 op s1 op ... (the CPU executor's order).
//   packetLoop   LL16/LL8 packets: optional plain source, packet sources (waited for with the
//                launch flag F), folded as p1 op p2 ... op plain (the reference's order), written
//                plain and/or as packets re-stamped with F.
//
// Mirrors: mscclpp include/mscclpp/copy_device.hpp, packet_device.hpp and the handlers of
// src/core/include/execution_kernel.hpp.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "DeviceReduce.cuh"
#include "DeviceSync.cuh"

namespace msccl::cuda::dev {

constexpr int kMaxPtrs = 16; // = kMaxEntriesPerSide = kMaxSwitchMembers

__device__ __forceinline__ bool aligned16(uintptr_t v) { return (v & 15u) == 0; }
__device__ __forceinline__ bool aligned4(uintptr_t v) { return (v & 3u) == 0; }
/// 2 or 1: the widest element size below 4 bytes that divides `any` (pointers and length or'ed).
__device__ __forceinline__ unsigned smallGrain(uintptr_t any) { return (any & 1u) == 0 ? 2 : 1; }

/// dst[k][0..n) = src[0..n) for every k < nd.
__device__ inline void blockCopy(char *const *dst, int nd, const char *src, uint64_t n) {
  if (n == 0 || nd == 0) return;
  const unsigned t = threadIdx.x, T = blockDim.x;
  uintptr_t any = (uintptr_t)src | n;
  for (int k = 0; k < nd; ++k) any |= (uintptr_t)dst[k];
  if (aligned16(any)) {
    const uint4 *s = reinterpret_cast<const uint4 *>(src);
    const uint64_t nv = n / 16;
    uint64_t i = t;
    for (; i + 3ull * T < nv; i += 4ull * T) {
      uint4 v0 = s[i], v1 = s[i + T], v2 = s[i + 2ull * T], v3 = s[i + 3ull * T];
      for (int k = 0; k < nd; ++k) {
        uint4 *d = reinterpret_cast<uint4 *>(dst[k]);
        d[i] = v0; d[i + T] = v1; d[i + 2ull * T] = v2; d[i + 3ull * T] = v3;
      }
    }
    for (; i < nv; i += T) {
      uint4 v = s[i];
      for (int k = 0; k < nd; ++k) reinterpret_cast<uint4 *>(dst[k])[i] = v;
    }
  } else if (aligned4(any)) {
    const uint32_t *s = reinterpret_cast<const uint32_t *>(src);
    for (uint64_t i = t; i < n / 4; i += T) {
      uint32_t v = s[i];
      for (int k = 0; k < nd; ++k) reinterpret_cast<uint32_t *>(dst[k])[i] = v;
    }
  } else {
    const unsigned g = smallGrain(any);
    for (uint64_t i = t; i < n / g; i += T) {
      uint32_t v = 0;
      memcpy(&v, src + i * g, g);
      for (int k = 0; k < nd; ++k) memcpy(dst[k] + i * g, &v, g);
    }
  }
}

/// dst[k][0..n) = src[0] op src[1] op ... op src[ns-1] for every k < nd (ns >= 1).
template <int DT, int OP>
__device__ void blockReduce(char *const *dst, int nd, const char *const *src, int ns, uint64_t n) {
  const unsigned t = threadIdx.x, T = blockDim.x;
  uintptr_t any = n;
  for (int k = 0; k < nd; ++k) any |= (uintptr_t)dst[k];
  for (int j = 0; j < ns; ++j) any |= (uintptr_t)src[j];
  if (aligned16(any)) {
    for (uint64_t i = t; i < n / 16; i += T) {
      uint4 acc = reinterpret_cast<const uint4 *>(src[0])[i];
      for (int j = 1; j < ns; ++j) {
        uint4 v = reinterpret_cast<const uint4 *>(src[j])[i];
        acc.x = combine<DT, OP>(acc.x, v.x);
        acc.y = combine<DT, OP>(acc.y, v.y);
        acc.z = combine<DT, OP>(acc.z, v.z);
        acc.w = combine<DT, OP>(acc.w, v.w);
      }
      for (int k = 0; k < nd; ++k) reinterpret_cast<uint4 *>(dst[k])[i] = acc;
    }
  } else if (aligned4(any)) {
    for (uint64_t i = t; i < n / 4; i += T) {
      uint32_t acc = reinterpret_cast<const uint32_t *>(src[0])[i];
      for (int j = 1; j < ns; ++j) acc = combine<DT, OP>(acc, reinterpret_cast<const uint32_t *>(src[j])[i]);
      for (int k = 0; k < nd; ++k) reinterpret_cast<uint32_t *>(dst[k])[i] = acc;
    }
  } else {
    // One 1- or 2-byte element per word, in its low lane (combine is lane-wise; the zero high
    // lanes are never stored).
    const unsigned g = smallGrain(any);
    for (uint64_t i = t; i < n / g; i += T) {
      uint32_t acc = 0;
      memcpy(&acc, src[0] + i * g, g);
      for (int j = 1; j < ns; ++j) {
        uint32_t v = 0;
        memcpy(&v, src[j] + i * g, g);
        acc = combine<DT, OP>(acc, v);
      }
      for (int k = 0; k < nd; ++k) memcpy(dst[k] + i * g, &acc, g);
    }
  }
}

/// Inputs and outputs of one packet loop. Packet regions are addressed at packet granularity
/// (packet i at region + i*sizeof(packet)); plain ones at payload granularity.
struct PacketIo {
  const char *plainSrc = nullptr;
  const char *pktSrc[kMaxPtrs];
  int nPktSrc = 0;
  char *plainDst = nullptr;
  char *pktDst[kMaxPtrs + 1];
  int nPktDst = 0;
  uint64_t payloadBytes = 0; ///< multiple of the packet payload (8 for LL16, 4 for LL8)
};

/// Packet width selection is a run-time value; LL16 carries 2 words, LL8 one.
template <bool LL16> struct Packet {
  static constexpr unsigned kBytes = LL16 ? 16 : 8, kPayload = LL16 ? 8 : 4;
  __device__ static bool read(Waiter &w, const char *region, uint64_t i, uint32_t flag, uint32_t &d0, uint32_t &d1) {
    const char *p = region + i * kBytes;
    uint32_t n = 0;
    uint64_t deadline = 0;
    uint32_t seen = 0;
    if constexpr (LL16) {
      while (!tryLoadLL16(p, flag, d0, d1, seen))
        if (!w.keepWaiting(n, deadline, p + 4, seen)) return false;
    } else {
      d1 = 0;
      while (!tryLoadLL8(p, flag, d0, seen))
        if (!w.keepWaiting(n, deadline, p + 4, seen)) return false;
    }
    return true;
  }
  __device__ static void write(char *region, uint64_t i, uint32_t flag, uint32_t d0, uint32_t d1) {
    if constexpr (LL16) storeLL16(region + i * kBytes, d0, d1, flag);
    else storeLL8(region + i * kBytes, d0, flag);
  }
  __device__ static void loadPlain(const char *p, uint64_t i, uint32_t &d0, uint32_t &d1) {
    const uint32_t *w = reinterpret_cast<const uint32_t *>(p + i * kPayload);
    d0 = w[0];
    d1 = LL16 ? w[1] : 0;
  }
  __device__ static void storePlain(char *p, uint64_t i, uint32_t d0, uint32_t d1) {
    uint32_t *w = reinterpret_cast<uint32_t *>(p + i * kPayload);
    w[0] = d0;
    if (LL16) w[1] = d1;
  }
};

/// No reduction (copy-like packet ops): only the first source is used.
struct NoCombine {
  __device__ uint32_t operator()(uint32_t a, uint32_t) const { return a; }
};
template <int DT, int OP> struct Combine {
  __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return combine<DT, OP>(a, b); }
};

template <bool LL16, class C>
__device__ void packetLoop(Waiter &w, const PacketIo &io, uint32_t flag, C cmb) {
  using P = Packet<LL16>;
  const uint64_t cnt = io.payloadBytes / P::kPayload;
  for (uint64_t i = threadIdx.x; i < cnt; i += blockDim.x) {
    uint32_t a0 = 0, a1 = 0;
    bool have = false;
    for (int j = 0; j < io.nPktSrc; ++j) {
      uint32_t b0 = 0, b1 = 0;
      P::read(w, io.pktSrc[j], i, flag, b0, b1);
      if (!have) { a0 = b0; a1 = b1; have = true; }
      else { a0 = cmb(a0, b0); a1 = cmb(a1, b1); }
    }
    if (io.plainSrc) {
      uint32_t b0, b1;
      P::loadPlain(io.plainSrc, i, b0, b1);
      if (!have) { a0 = b0; a1 = b1; }
      else { a0 = cmb(a0, b0); a1 = cmb(a1, b1); }
    }
    if (io.plainDst) P::storePlain(io.plainDst, i, a0, a1);
    for (int k = 0; k < io.nPktDst; ++k) P::write(io.pktDst[k], i, flag, a0, a1);
  }
}

/// Waits until every packet of `region` (payloadBytes of payload) carries `flag`.
template <bool LL16> __device__ void packetWaitAll(Waiter &w, const char *region, uint64_t payloadBytes, uint32_t flag) {
  using P = Packet<LL16>;
  for (uint64_t i = threadIdx.x; i < payloadBytes / P::kPayload; i += blockDim.x) {
    uint32_t d0, d1;
    if (!P::read(w, region, i, flag, d0, d1)) return;
  }
}

} // namespace msccl::cuda::dev
