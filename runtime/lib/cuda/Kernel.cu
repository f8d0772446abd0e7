//===- Kernel.cu - The device-side plan interpreter ------------------------------------===//
//
// Consumes one DevLaunch (DevicePlan.h): the threadblocks of every rank placed on this GPU,
// each rank's DevRankContext (buffers, channels, semaphores, FIFO) and the launch's flag F.
// Block b runs threadblock threadblocks[b] of rank ranks[threadblocks[b].rankSlot]: every thread
// walks the same op list (spec plan#6.3); data ops stripe over all threads; sync ops are
// executed by thread j (mod blockDim.x) for channel/semaphore j; `nop` is __syncthreads; a pipeline runs its
// inner ops once per iteration with window offset i*unit_size (plan#8.6, windows clamped per entry).
// Guarantees: every wait is bounded (DeviceSync.cuh), so the launch always ends; a timed-out
// wait is reported through DevLaunch::abort.
//
// Run-time fixes of the reference's defects (spec plan#11): SO is added to every scratch
// access, local or remote, packet or plain (4), and a peer's or switch member's scratch uses
// that owner's SO (ranks' scratch sizes may differ); with reuse_resources, pipeline windows of
// scratch entries wrap modulo the slot size SC (plan#3.6, as the CPU executor); flush waits for
// the proxy to complete the listed port channels' requests (5); port sources use this rank's
// own buffers (7); flags and barrier counters belong to the executor's context, not the
// process (18). Waits claim their expected counter value atomically (several threadblocks may
// wait on one channel); repkt writes no packets (extra dst entries are ignored).
//
// Mirrors: mscclpp src/core/include/execution_kernel.hpp, src/core/executor/execution_kernel.cu.
//
//===------------------------------------------------------------------------------------===//
#include "DeviceData.cuh"
#include "LoweringInternal.h"
#if defined(__CUDACC__)
#include "KernelLaunch.h"
#endif

#include "msccl/plan/Plan.h"

namespace msccl::cuda::dev {

using plan::BufferType;
using plan::ChannelType;
using plan::OpType;
using plan::EntryAccess;
using plan::OpLength;
namespace optrait = plan::optrait;

/// Pipeline window of the current inner op (on = inside a pipeline).
struct Window {
  uint64_t delta = 0, unit = 0;
  bool on = false;
};

/// What one block keeps in shared memory (filled at the start of every launch): its rank's
/// context always; its ops, its entries and the rank's remote buffer bases when they fit
/// (otherwise those are read from global memory). Every op reads its descriptor, its entries
/// and the bases they name, and each PTX primitive's "memory" clobber makes the compiler
/// re-read them: from shared memory that costs a few cycles instead of an L2 round trip.
constexpr unsigned kCachedOps = 64, kCachedEntries = 256, kCachedRemotes = 64;
struct BlockCache {
  DevRankContext rc;
  DevOp ops[kCachedOps];
  DevEntry entries[kCachedEntries];
  char *remoteBases[kCachedRemotes];
  uint64_t remoteScratchHalf[kCachedRemotes];
};
static_assert(sizeof(DevRankContext) % 8 == 0 && sizeof(DevOp) % 8 == 0 && sizeof(DevEntry) % 8 == 0, "word copies");

/// Per-thread interpreter state of one block.
struct Exec {
  const DevRankContext *R;
  const DevEntry *entries; // entry e of an op is entries[e] (the shared copy is addressed so)
  char *input, *output, *scratch; // scratch includes SO
  uint64_t so;
  uint64_t slot; // reuse_resources SC (0 = off)
  bool even;     // even flag F: every scratch (ours, peers', members') uses its second half
  uint32_t flag;
  int dataType;
  bool ll16;
  Waiter w;

  /// The src entries of `op`, then its dst entries.
  __device__ const DevEntry *opEntries(const DevOp &op) const { return entries + op.entryBegin; }
  /// SO of the owner of remote entry `e` (0 unless its scratch on an even launch).
  __device__ uint64_t remoteSo(const DevEntry &e) const { return even ? R->remoteScratchHalf[e.id] : 0; }
  __device__ char *remoteBase(const DevEntry &e) const { return R->remoteBases[e.id] + remoteSo(e); }
  __device__ char *memberBase(const DevEntry &e, int m) const {
    const DevSwitchChannel &sc = R->switchChannels[e.id];
    return sc.bases[m] + (even ? sc.scratchHalf[m] : 0);
  }
  __device__ int members(const DevEntry &e) const { return (int)R->switchChannels[e.id].nMembers; }
  /// Base of a local or remote entry (switch entries use memberBase).
  __device__ char *base(const DevEntry &e) const {
    switch (e.base) {
    case (uint8_t)DevBase::Input: return input;
    case (uint8_t)DevBase::Output: return output;
    case (uint8_t)DevBase::Scratch: return scratch;
    case (uint8_t)DevBase::Remote: return remoteBase(e);
    default: return nullptr;
    }
  }
  /// Plain range of an entry inside the window: [off, off+len).
  __device__ void range(const DevEntry &e, const Window &win, uint64_t &off, uint64_t &len) const {
    off = e.offset;
    len = e.length;
    if (win.on)
      pipelineWindowBytes(e.offset, e.length, e.bufferType == (uint8_t)BufferType::Scratch, win.delta, win.unit, slot, off, len);
  }
};

// --- Sync ops -----------------------------------------------------------------------------

__device__ uint64_t fifoPush(Exec &x, uint32_t meta, uint64_t srcOff, uint64_t dstOff, uint64_t size) {
  const DevFifo &f = x.R->fifo;
  uint64_t idx = fetchAddRelaxed(f.head, 1);
  uint32_t n = 0;
  uint64_t deadline = 0, done;
  while (idx - (done = loadAcquireSys(f.completed)) >= f.capacity)
    if (!x.w.keepWaiting(n, deadline, f.completed, (uint32_t)done)) return idx;
  volatile DevProxyRequest *s = f.slots + (idx % f.capacity);
  s->srcOffset = srcOff;
  s->dstOffset = dstOff;
  s->size = size;
  s->meta = meta;
  storeReleaseSys(const_cast<uint32_t *>(&s->seq), (uint32_t)(idx + 1));
  return idx;
}

__device__ void fifoWait(Exec &x, uint64_t idx) {
  uint32_t n = 0;
  uint64_t deadline = 0, done;
  while ((done = loadAcquireSys(x.R->fifo.completed)) < idx + 1)
    if (!x.w.keepWaiting(n, deadline, x.R->fifo.completed, (uint32_t)done)) return;
}

__device__ void waitCounter(Exec &x, const uint64_t *inbound, uint64_t *expected, bool relaxed) {
  // Several threadblocks may wait on one channel: each claims its own expected value.
  uint64_t e = fetchAddRelaxed(expected, 1) + 1;
  uint32_t n = 0;
  uint64_t deadline = 0, v;
  while ((v = relaxed ? loadRelaxedSys(inbound) : loadAcquireSys(inbound)) < e)
    if (!x.w.keepWaiting(n, deadline, inbound, (uint32_t)v)) return;
}

/// Channel op.ids[j] of a sync op (thread j mod blockDim.x serves it).
__device__ void syncOne(Exec &x, const DevOp &op, unsigned j) {
  const bool relaxed = op.type == (uint8_t)OpType::RelaxedSignal || op.type == (uint8_t)OpType::RelaxedWait;
  const bool isSignal = op.type == (uint8_t)OpType::Signal || op.type == (uint8_t)OpType::RelaxedSignal;
  if (op.channelType == (uint8_t)ChannelType::Memory) {
    const DevMemoryChannel &ch = x.R->memoryChannels[op.ids[j]];
    if (op.type == (uint8_t)OpType::Flush) return;
    if (isSignal) relaxed ? addRelaxedSys(ch.outbound, 1) : addReleaseSys(ch.outbound, 1);
    else waitCounter(x, ch.inbound, ch.expected, relaxed);
  } else if (op.channelType == (uint8_t)ChannelType::Port) {
    const DevPortChannel &ch = x.R->portChannels[op.ids[j]];
    if (op.type == (uint8_t)OpType::Flush) fifoWait(x, fifoPush(x, proxyMeta(kProxySync, 0, op.ids[j], 0), 0, 0, 0));
    else if (isSignal) fifoPush(x, proxyMeta(kProxyFlag, 0, op.ids[j], 0), 0, 0, 0);
    else waitCounter(x, ch.inbound, ch.expected, false); // port waits are never relaxed
  }
}

__device__ void syncOp(Exec &x, const DevOp &op) {
  for (unsigned j = threadIdx.x; j < op.nIds; j += blockDim.x) syncOne(x, op, j);
}

__device__ void barrierOp(Exec &x, const DevOp &op) {
  __syncthreads();
  if (op.numThreadblocks > 1 && threadIdx.x == 0) {
    uint64_t *c = x.R->barrierCounters + op.barrierId;
    const uint64_t N = op.numThreadblocks;
    uint64_t target = (fetchAddAcqRelGpu(c, 1) / N + 1) * N;
    uint32_t n = 0;
    uint64_t deadline = 0, v;
    while ((v = loadAcquireGpu(c)) < target)
      if (!x.w.keepWaiting(n, deadline, c, (uint32_t)v)) break;
  }
  __syncthreads();
}

/// Semaphore op.ids[j] of a sem_acquire / sem_release.
__device__ void semOne(Exec &x, const DevOp &op, unsigned j) {
  int32_t *s = x.R->semaphores + op.ids[j];
  if (op.type == (uint8_t)OpType::SemRelease) {
    addReleaseGpu(s, 1);
    return;
  }
  int32_t old = fetchAddAcquireGpu(s, -1);
  if (old > 0) return;
  uint32_t n = 0;
  uint64_t deadline = 0;
  int32_t v;
  while ((v = loadAcquireGpu(s)) < old)
    if (!x.w.keepWaiting(n, deadline, s, (uint32_t)v)) return;
}

__device__ void semOp(Exec &x, const DevOp &op) {
  for (unsigned j = threadIdx.x; j < op.nIds; j += blockDim.x) semOne(x, op, j);
}

// --- Plain data ops -----------------------------------------------------------------------

/// put / pws / pwsf / get / copy / gstore over memory (or local) pointers.
__device__ void copyOp(Exec &x, const DevOp &op, const Window &win) {
  const DevEntry *src = x.opEntries(op), *dst = src + op.nSrc;
  const OpType t = (OpType)op.type;
  uint64_t so, sl, dof, dl;
  if (t == OpType::Copy || t == OpType::MultiStore) {
    x.range(src[0], win, so, sl);
    x.range(dst[0], win, dof, dl);
    char *d[kMaxPtrs];
    int nd = 0;
    if (t == OpType::Copy) d[nd++] = x.base(dst[0]) + dof;
    else
      for (int m = 0; m < x.members(dst[0]); ++m) d[nd++] = x.memberBase(dst[0], m) + dof;
    blockCopy(d, nd, x.base(src[0]) + so, sl);
    return;
  }
  if (t == OpType::Get) {
    for (int i = 0; i < op.nSrc; ++i) {
      x.range(src[i], win, so, sl);
      x.range(dst[i], win, dof, dl);
      char *d = x.base(dst[i]) + dof;
      blockCopy(&d, 1, x.base(src[i]) + so, sl);
    }
    return;
  }
  // put family over memory: pairs (src[i], dst[i]), length of dst[i].
  for (int i = 0; i < op.nDst; ++i) {
    x.range(src[i], win, so, sl);
    x.range(dst[i], win, dof, dl);
    char *d = x.base(dst[i]) + dof;
    blockCopy(&d, 1, x.base(src[i]) + so, dl);
  }
  if (op.nIds && (t == OpType::PutWithSignal || t == OpType::PutWithSignalAndFlush)) {
    __syncthreads();
    for (unsigned j = threadIdx.x; j < op.nIds && j < op.nDst; j += blockDim.x)
      addReleaseSys(x.R->memoryChannels[op.ids[j]].outbound, 1);
  }
}

/// put / pws / pwsf / ppkt over port channels: thread i (mod blockDim.x) pushes the request of
/// pair i.
__device__ void portPutOne(Exec &x, const DevOp &op, const Window &win, unsigned i) {
  const DevEntry *src = x.opEntries(op), *dst = src + op.nSrc;
  const OpType t = (OpType)op.type;
  uint64_t so, sl, dof, dl;
  const bool srcScratch = src[i].bufferType == (uint8_t)BufferType::Scratch;
  uint32_t kind = kProxyData;
  if (t == OpType::PutPackets) { // raw copy of an already packetised source region
    const uint64_t pkt = 2; // packets are twice their payload (LL16 and LL8)
    so = pkt * src[i].offset + (srcScratch ? x.so : 0);
    dof = pkt * dst[i].offset + x.remoteSo(dst[i]);
    dl = pkt * src[i].length;
  } else {
    x.range(src[i], win, so, sl);
    x.range(dst[i], win, dof, dl);
    so += srcScratch ? x.so : 0;
    dof += x.remoteSo(dst[i]);
    if (t != OpType::Put) kind |= kProxyFlag;
    if (t == OpType::PutWithSignalAndFlush) kind |= kProxySync;
  }
  uint64_t idx = fifoPush(x, proxyMeta(kind, src[i].bufferType, op.ids[i], dst[i].id), so, dof, dl);
  if (kind & kProxySync) fifoWait(x, idx);
}

__device__ void portPutOp(Exec &x, const DevOp &op, const Window &win) {
  for (unsigned i = threadIdx.x; i < op.nDst && i < op.nIds; i += blockDim.x) portPutOne(x, op, win, i);
}

/// The (DT, OP) instantiations chosen by dispatchReduce.
struct BlockReduceCall {
  char *const *d;
  int nd;
  const char *const *s;
  int ns;
  uint64_t len;
  template <int DT, int OP> __device__ void operator()() const { blockReduce<DT, OP>(d, nd, s, ns, len); }
};
template <bool LL16> struct PacketReduceCall {
  Waiter &w;
  const PacketIo &io;
  uint32_t flag;
  template <int DT, int OP> __device__ void operator()() const { packetLoop<LL16>(w, io, flag, Combine<DT, OP>()); }
};

/// re / res / rre / rres / glres / glre: sources folded left to right into every destination the
/// row says the op writes (plan::entryAccess: not re's entries past dst[0]).
__device__ void reduceOp(Exec &x, const DevOp &op, const Window &win) {
  const DevEntry *src = x.opEntries(op), *dst = src + op.nSrc;
  const char *s[kMaxPtrs];
  char *d[kMaxPtrs];
  int ns = 0, nd = 0;
  uint64_t off, len, o2, l2;
  x.range(src[0], win, off, len);
  const OpType t = (OpType)op.type;
  if (t == OpType::MultiLoadReduceStore || t == OpType::MultiLoadReduce) {
    for (int m = 0; m < x.members(src[0]); ++m) s[ns++] = x.memberBase(src[0], m) + off;
    x.range(dst[0], win, o2, l2);
    if (dst[0].base == (uint8_t)DevBase::Switch)
      for (int m = 0; m < x.members(dst[0]); ++m) d[nd++] = x.memberBase(dst[0], m) + o2;
    else
      d[nd++] = x.base(dst[0]) + o2;
  } else {
    s[ns++] = x.base(src[0]) + off;
    for (int j = 1; j < op.nSrc; ++j) {
      x.range(src[j], win, o2, l2);
      s[ns++] = x.base(src[j]) + o2;
    }
    for (int k = 0; k < op.nDst; ++k) {
      if (entryAccess(t, false, size_t(k)) == EntryAccess::None) continue; // re's extra entries, as MSCCL++
      x.range(dst[k], win, o2, l2);
      d[nd++] = x.base(dst[k]) + o2;
    }
  }
  if (len == 0 || ns == 0) return;
  if (ns == 1) {
    blockCopy(d, nd, s[0], len);
    return;
  }
  dispatchReduce(x.dataType, op.reduceOp, BlockReduceCall{d, nd, s, ns, len});
}

// --- Packet ops ---------------------------------------------------------------------------

/// A packet op over memory channels, its entries read from its row (plan::entryAccess): the
/// plain source and destination (at most one each), the packet sources and destinations (a
/// switch entry: every member's copy). PairsBySrc ops (ppkt) move each plain src[i] to packets
/// at dst[i]; reduces (the Reduce trait) combine the packet sources into the plain source.
template <bool LL16> __device__ void packetOpT(Exec &x, const DevOp &op) {
  const DevEntry *src = x.opEntries(op), *dst = src + op.nSrc;
  const OpType t = (OpType)op.type;
  auto pkt = [&](const DevEntry &e) { return x.base(e) + 2 * e.offset; };
  auto plainAt = [&](const DevEntry &e) { return x.base(e) + e.offset; };
  if (opRow(t).length == OpLength::PairsBySrc) { // ppkt: pairs (plain src[i] -> packets at peer dst[i])
    // The packets of all pairs as one index space over the block's threads: a small put to
    // each of many peers (an LL AllReduce's first step) takes one round, not one per peer.
    // Thread t walks (pair i, packet k) from t in steps of blockDim.x.
    using P = Packet<LL16>;
    uint64_t k = threadIdx.x;
    for (int i = 0; i < op.nDst; ++i) {
      const uint64_t cnt = src[i].length / P::kPayload;
      if (k >= cnt) {
        k -= cnt;
        continue;
      }
      const char *s = plainAt(src[i]);
      char *d = pkt(dst[i]);
      for (; k < cnt; k += blockDim.x) {
        uint32_t d0, d1;
        P::loadPlain(s, k, d0, d1);
        P::write(d, k, x.flag, d0, d1);
      }
      k -= cnt;
    }
    return;
  }
  PacketIo io;
  io.payloadBytes = src[0].length;
  for (int k = 0; k < op.nSrc; ++k) {
    const EntryAccess a = entryAccess(t, true, size_t(k));
    if (a == EntryAccess::Packets) io.pktSrc[io.nPktSrc++] = pkt(src[k]);
    else if (a == EntryAccess::Plain && !io.plainSrc) io.plainSrc = plainAt(src[k]);
  }
  for (int k = 0; k < op.nDst; ++k) {
    const EntryAccess a = entryAccess(t, false, size_t(k));
    if (a == EntryAccess::Plain && !io.plainDst) io.plainDst = plainAt(dst[k]);
    else if (a != EntryAccess::Packets) continue;
    else if (dst[k].base == (uint8_t)DevBase::Switch)
      for (int m = 0; m < x.members(dst[k]); ++m) io.pktDst[io.nPktDst++] = x.memberBase(dst[k], m) + 2 * dst[k].offset;
    else io.pktDst[io.nPktDst++] = pkt(dst[k]);
  }
  if (opHas(t, optrait::Reduce) && io.nPktSrc > 0) {
    dispatchReduce(x.dataType, op.reduceOp, PacketReduceCall<LL16>{x.w, io, x.flag});
    return;
  }
  packetLoop<LL16>(x.w, io, x.flag, NoCombine());
}

/// rppkt over port: wait for every packet of src[0], then thread j ships the raw packet region.
template <bool LL16> __device__ void portReadPutPacketsT(Exec &x, const DevOp &op) {
  const DevEntry *src = x.opEntries(op), *dst = src + op.nSrc;
  packetWaitAll<LL16>(x.w, x.base(src[0]) + 2 * src[0].offset, src[0].length, x.flag);
  __syncthreads();
  const uint64_t so = 2 * src[0].offset + (src[0].bufferType == (uint8_t)BufferType::Scratch ? x.so : 0);
  for (unsigned j = threadIdx.x; j < op.nDst && j < op.nIds; j += blockDim.x) {
    const uint64_t dof = 2 * dst[j].offset + x.remoteSo(dst[j]);
    fifoPush(x, proxyMeta(kProxyData, src[0].bufferType, op.ids[j], dst[j].id), so, dof, 2 * src[0].length);
  }
}

// --- Dispatch -----------------------------------------------------------------------------

// Handlers named by the op table's Cuda column (PlanEnums.def) that are not defined above.
__device__ void nopOp(Exec &, const DevOp &, const Window &) { __syncthreads(); }
__device__ void barrierOp(Exec &x, const DevOp &op, const Window &) { barrierOp(x, op); }
__device__ void syncOp(Exec &x, const DevOp &op, const Window &) { syncOp(x, op); }
__device__ void semOp(Exec &x, const DevOp &op, const Window &) { semOp(x, op); }
__device__ void pipelineOp(Exec &, const DevOp &, const Window &) {} // handled by the caller
__device__ void packetOp(Exec &x, const DevOp &op, const Window &) {
  x.ll16 ? packetOpT<true>(x, op) : packetOpT<false>(x, op);
}
__device__ void putOp(Exec &x, const DevOp &op, const Window &win) {
  if (op.channelType == (uint8_t)ChannelType::Port) portPutOp(x, op, win);
  else copyOp(x, op, win);
}
__device__ void putPacketsOp(Exec &x, const DevOp &op, const Window &win) {
  if (op.channelType == (uint8_t)ChannelType::Port) portPutOp(x, op, win);
  else packetOp(x, op, win);
}
__device__ void readPutPacketsOp(Exec &x, const DevOp &op, const Window &win) {
  if (op.channelType != (uint8_t)ChannelType::Port) packetOp(x, op, win);
  else if (x.ll16) portReadPutPacketsT<true>(x, op);
  else portReadPutPacketsT<false>(x, op);
}

/// Dispatch: one case per op table row, calling the row's Cuda handler.
__device__ void execOp(Exec &x, const DevOp &op, const Window &win) {
  switch ((OpType)op.type) {
#define MSCCL_OP(Enum, Json, Shape, Executable, Channels, Traits, Src, Dst, Length, Cpu, Cuda, ...)                \
  case OpType::Enum:                                                                                               \
    Cuda(x, op, win);                                                                                              \
    return;
#include "msccl/plan/PlanEnums.def"
  }
}

/// n bytes (a multiple of 8) from global memory to shared memory, striped over the block.
__device__ void loadToShared(void *dst, const void *src, uint64_t n) {
  for (uint64_t i = threadIdx.x; i < n / 8; i += blockDim.x) copyWord8(dst, src, i);
}

__global__ void MSCCL_LAUNCH_BOUNDS(kMaxThreadsPerBlock) planKernel(DevLaunch L) {
  const DevThreadblock tb = L.threadblocks[blockIdx.x];
  BlockCache &C = *static_cast<BlockCache *>(blockSharedBytes<sizeof(BlockCache)>());
  loadToShared(&C.rc, L.ranks + tb.rankSlot, sizeof(DevRankContext));
  __syncthreads();
  DevRankContext *R = &C.rc;
  const bool opsFit = tb.nOps <= kCachedOps, entriesFit = tb.nEntries <= kCachedEntries,
             remotesFit = R->numRemoteBuffers <= kCachedRemotes;
  if (opsFit) loadToShared(C.ops, R->ops + tb.opBegin, (uint64_t)tb.nOps * sizeof(DevOp));
  if (entriesFit) loadToShared(C.entries, R->entries + tb.entryBegin, (uint64_t)tb.nEntries * sizeof(DevEntry));
  if (remotesFit) {
    loadToShared(C.remoteBases, R->remoteBases, (uint64_t)R->numRemoteBuffers * sizeof(char *));
    loadToShared(C.remoteScratchHalf, R->remoteScratchHalf, (uint64_t)R->numRemoteBuffers * sizeof(uint64_t));
  }
  __syncthreads();
  if (threadIdx.x == 0 && remotesFit) {
    R->remoteBases = C.remoteBases;
    R->remoteScratchHalf = C.remoteScratchHalf;
  }
  __syncthreads();
  Exec x;
  x.R = R;
  // Entry e of an op lives at C.entries[e - tb.entryBegin]: the base is shifted so that ops
  // index it with their own entryBegin (address arithmetic only; nothing below the copy is read).
  x.entries = entriesFit ? reinterpret_cast<const DevEntry *>(reinterpret_cast<uintptr_t>(C.entries) -
                                                              (uintptr_t)tb.entryBegin * sizeof(DevEntry))
                         : R->entries;
  x.even = L.flag % 2 == 0;
  x.so = x.even ? R->scratchHalf : 0;
  x.slot = R->reuseSlotBytes;
  x.input = R->input;
  x.output = R->output;
  x.scratch = R->scratch ? R->scratch + x.so : nullptr;
  x.flag = L.flag;
  x.dataType = L.dataType;
  x.ll16 = L.packetType == (uint8_t)PacketType::LL16;
  x.w.abort = L.abort;
  x.w.timeoutNs = L.timeoutNs;
  x.w.rank = R->rank;
  x.w.tbId = tb.tbId;
  const DevOp *ops = opsFit ? C.ops : R->ops + tb.opBegin;
  for (uint32_t i = 0; i < tb.nOps;) {
    const DevOp &op = ops[i];
    x.w.opIndex = i;
    x.w.opType = op.type;
    if (op.type == (uint8_t)OpType::Pipeline) {
      Window win;
      win.on = true;
      win.unit = op.unitSize;
      for (uint32_t it = 0; it < op.nIterations; ++it) {
        win.delta = (uint64_t)it * op.unitSize;
        for (uint32_t k = 1; k <= op.nInner; ++k) {
          const DevOp &in = ops[i + k];
          x.w.opIndex = i + k;
          x.w.opType = in.type;
          execOp(x, in, win);
        }
      }
      i += 1 + op.nInner;
    } else {
      execOp(x, op, Window());
      ++i;
    }
  }
}

} // namespace msccl::cuda::dev

#if defined(__CUDACC__)
// The CUDA launch (CudaDeviceApi.cpp calls these); HostKernel.cpp launches planKernel on host
// threads instead.
namespace msccl::cuda::detail {

cudaError_t launchPlanKernel(const DevLaunch &launch, unsigned numBlocks, unsigned threadsPerBlock, cudaStream_t stream,
                             bool cooperative) {
  if (numBlocks == 0) return cudaSuccess;
  if (cooperative) {
    // Fails (cudaErrorCooperativeLaunchTooLarge) instead of hanging when the blocks cannot all
    // be resident at once.
    DevLaunch arg = launch;
    void *args[] = {&arg};
    return cudaLaunchCooperativeKernel(reinterpret_cast<const void *>(&dev::planKernel), dim3(numBlocks), dim3(threadsPerBlock),
                                       args, 0, stream);
  }
  dev::planKernel<<<numBlocks, threadsPerBlock, 0, stream>>>(launch);
  return cudaGetLastError();
}

cudaError_t planKernelBlocksPerSm(unsigned threadsPerBlock, int *blocksPerSm) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocksPerSm, dev::planKernel, (int)threadsPerBlock, 0);
}

} // namespace msccl::cuda::detail
#endif // __CUDACC__
