//===- Fusion.cpp - Instruction fusion, mirror of internal/optimizer.py -----------------===//
//
// The rules F1-F19 of dsl#fusion-rules (the __add__ methods of Python's operations.py) and the
// flag trimming, chosen by what the op table (plan/OpTable.h) says the accumulated op is, never
// by a list of op kinds: its shape picks the sync rules (nop, barrier, pipeline; semaphore and
// channel sync ops merge with their own kind); a data op's traits and entry roles pick the data
// rules (a get or put with one entry pair per peer, F11/F12; a put relaying one source, F13; a
// local reduce, F14-F18, whose ReduceForm says what it merges and which op it becomes; the
// unfused switch reduce, F19). Copies and the other switch ops fuse with nothing.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/passes/Fusion.h"
#include "msccl/plan/OpTable.h"

#include <stdexcept>

namespace msccl::passes {

using namespace msccl::ir;

namespace {
using plan::isPutFamily;
using plan::isReduceFamily;
using plan::OpShape;
namespace optrait = plan::optrait;
namespace oprole = plan::oprole;

bool hasShape(const Op &op, OpShape s) { return plan::opShape(op.kind) == s; }
bool isNopOrBarrier(const Op &op) { return hasShape(op, OpShape::Nop) || hasShape(op, OpShape::Barrier); }

void clearBefore(Op &op) { op.dataSync = op.dataSync ^ (SyncType::Before & op.dataSync); }
void clearAfter(Op &op) { op.dataSync = op.dataSync ^ (SyncType::After & op.dataSync); }

/// The trimming condition a data-sync op on the left applies to its right neighbour.
bool rightProvidesBefore(const Op &next) {
  if (isDataSyncOp(next.kind) && has(next.dataSync, SyncType::Before)) return true;
  if (hasShape(next, OpShape::Pipeline) && has(pipelineDataSync(next), SyncType::Before)) return true;
  return isNopOrBarrier(next);
}

template <class V> void append(V &dst, const V &src) { dst.insert(dst.end(), src.begin(), src.end()); }

/// The location (oprole::L, R, ...) of entry 0 of the src (`isSrc`) or dst side of `k`'s row.
plan::EntryRole firstLocation(OpKind k, bool isSrc) {
  const plan::OpRow r = plan::opRow(k);
  return (isSrc ? r.src : r.dst).first & oprole::LocMask;
}

/// The one op of the table that satisfies `pred`; where the result is a constant, a table with
/// no such op or several does not compile.
template <class Pred> constexpr OpKind onlyOp(Pred pred) {
  unsigned found = plan::kNumOpTypes;
  for (unsigned i = 0; i < plan::kNumOpTypes; ++i)
    if (pred(OpKind(i))) {
      if (found != plan::kNumOpTypes) throw std::logic_error("two ops of the table fit");
      found = i;
    }
  if (found == plan::kNumOpTypes) throw std::logic_error("no op of the table fits");
  return OpKind(found);
}

/// glres: the switch reduce whose destination is the switch (glre's is a local chunk).
constexpr OpKind kSwitchReduceStore = onlyOp([](OpKind k) {
  return plan::isSwitchOp(k) && plan::opHas(k, optrait::Reduce) &&
         (plan::opRow(k).dst.first & oprole::LocMask) == oprole::S;
});

/// Whether `k` turns local data into local packets (cpkt): a plain data op (no put, reduce or
/// switch) from local data whose dst_buff[0] is local packets.
bool packsLocally(OpKind k) {
  const plan::OpRow r = plan::opRow(k);
  return plan::opHas(k, optrait::Data) && !plan::opHas(k, optrait::Put | optrait::Reduce | optrait::Switch) &&
         r.src.first == oprole::L && r.dst.first == (oprole::L | oprole::Pkt);
}

/// dsl#fusion-F15, F16, F18: a local reduce, then a put of its result over a memory channel (a put
/// that neither signals nor flushes, plain after a plain reduce, of packets after a packet
/// reduce), becomes the reduce's sending form (re, res -> res; rre, rres -> rres; repkt, respkt
/// -> respkt; recpkt, recspkt -> recspkt). The put reads the reduce's dst_buff[0] or, when it
/// reads packets (rppkt), the reduce's packet copy.
bool combineReduceSend(Op &acc, Op &next, plan::ReduceForm form) {
  const OpKind b = next.kind;
  if (plan::opHas(b, optrait::Signals | optrait::Flushes) || plan::isPacketOp(b) != form.packet) return false;
  if (next.channelType != ChannelType::Memory) return false;
  const bool readsPackets = (plan::opRow(b).src.first & oprole::Pkt) != 0;
  if (readsPackets ? !form.copy || acc.localPktDst[0] != next.localSrc[0] : acc.localDst[0] != next.localSrc[0])
    return false;
  plan::ReduceForm sends = form;
  sends.send = true;
  const std::optional<OpKind> fused = plan::reduceOfForm(sends);
  if (!fused) return false;
  append(acc.remoteDst, next.remoteDst);
  if (!form.copy) acc.localPktDst.clear();
  acc.channelType = ChannelType::Memory;
  acc.kind = *fused;
  return true;
}

// ReduceOperation.__add__: a local reduce merges more sources of its own kind or becomes the
// reduce of another form (plan::ReduceForm).
bool combineReduce(Op &acc, Op &next) {
  const OpKind a = acc.kind, b = next.kind;
  const plan::ReduceForm form = plan::reduceForm(a);
  if (isReduceFamily(b)) {
    // dsl#fusion-F14: a reduce that writes only its accumulator (re, repkt, rre)
    if (!form.copy && !form.send && a == b && acc.localSrc[0] == next.localSrc[0] && acc.localDst == next.localDst &&
        acc.channelType == next.channelType && acc.reduceOp == next.reduceOp && acc.tbg == next.tbg) {
      acc.localSrc.insert(acc.localSrc.end(), next.localSrc.begin() + 1, next.localSrc.end());
      append(acc.remoteSrc, next.remoteSrc);
      append(acc.channelIds, next.channelIds);
      acc.localPktDst.clear();
      acc.remoteDst.clear();
      return true;
    }
    return false;
  }
  if (!isPutFamily(b) && !packsLocally(b)) return false;
  if (acc.tbg != next.tbg) return false;
  if (isPutFamily(b)) return combineReduceSend(acc, next, form);
  // dsl#fusion-F17: a packet reduce that writes only its accumulator (repkt), then a packet copy
  // of its result (cpkt) -> the copying form (recpkt)
  if (form == plan::ReduceForm{/*remote=*/false, /*packet=*/true} && acc.localDst[0] == next.localSrc[0]) {
    plan::ReduceForm copies = form;
    copies.copy = true;
    if (const std::optional<OpKind> fused = plan::reduceOfForm(copies)) {
      acc.localPktDst = next.localDst;
      acc.kind = *fused;
      return true;
    }
  }
  return false;
}

/// dsl#fusion-F11, F12: a get or put names one (source, destination) pair per peer (a side of its
/// row has one entry per entry of the other); the next op of its kind with a first source of
/// the same size, on the same channel type and tbg, adds its pairs and channels.
bool combinePairs(Op &acc, Op &next) {
  const bool remoteSrc = firstLocation(acc.kind, true) == oprole::R;
  const bool remoteDst = firstLocation(acc.kind, false) == oprole::R;
  if (next.kind != acc.kind) return false;
  const int64_t accSize = remoteSrc ? acc.remoteSrc[0].size : acc.localSrc[0].size;
  const int64_t nextSize = remoteSrc ? next.remoteSrc[0].size : next.localSrc[0].size;
  if (accSize != nextSize || acc.channelType != next.channelType || acc.tbg != next.tbg) return false;
  if (remoteSrc) append(acc.remoteSrc, next.remoteSrc);
  else append(acc.localSrc, next.localSrc);
  if (remoteDst) append(acc.remoteDst, next.remoteDst);
  else append(acc.localDst, next.localDst);
  append(acc.channelIds, next.channelIds);
  return true;
}

/// dsl#fusion-F13: a put that relays its one source to every peer (rppkt) takes the next op of
/// its kind with the same sources, channel type and tbg: its destinations and channels.
bool combineRelay(Op &acc, Op &next) {
  if (next.kind != acc.kind || acc.localSrc != next.localSrc || acc.channelType != next.channelType || acc.tbg != next.tbg)
    return false;
  append(acc.remoteDst, next.remoteDst);
  append(acc.channelIds, next.channelIds);
  return true;
}

/// A data op, by its traits and entry roles.
bool combineData(Op &acc, Op &next) {
  const OpKind a = acc.kind;
  if (plan::isSwitchOp(a)) return false; // glres, gstore, gstorepkt
  if (isReduceFamily(a)) return combineReduce(acc, next);
  const plan::OpRow row = plan::opRow(a);
  if (row.src.min == oprole::PerOther || row.dst.min == oprole::PerOther) return combinePairs(acc, next);
  if (isPutFamily(a)) return combineRelay(acc, next);
  return false; // copy, cpkt, upkt
}

/// dsl#fusion-F19: the unfused switch reduce (glre, the GroupLoadReduce shape), then a plain store
/// of its result to the switch (gstore: a switch op that neither reduces nor writes packets) of
/// the same buffer, size, chunk and channels -> the switch reduce-store (glres).
/// Beyond the Python DSL: a reduce from one switch channel and the store of its result through
/// another (an out-of-place NVLS AllReduce: reduce the inputs, multicast into the outputs) at the
/// same offset fuse too, the store's channels in dstChannelIds, when the reduce's destination is
/// this rank's chunk of the store's buffer at that offset (the multicast store writes it, so
/// nothing the pair wrote goes missing). MSCCL++ leaves that pair unfused, a glre its loader
/// rejects, so no program it runs changes.
bool combineGroupLoadReduce(Op &acc, Op &next) {
  const OpKind b = next.kind;
  if (!plan::isSwitchOp(b) || plan::opHas(b, optrait::Reduce | optrait::Packet)) return false;
  if (acc.switchSize != next.switchSize || acc.userChunk != next.userChunk || acc.channelType != next.channelType)
    return false;
  const bool sameChannels = acc.switchBuffer == next.switchBuffer && acc.channelIds == next.channelIds;
  if (!sameChannels && (acc.bufferOffset != next.bufferOffset || acc.userChunk.buffer != next.switchBuffer ||
                        acc.userChunk.index != next.bufferOffset || acc.userChunk.size != next.switchSize))
    return false;
  acc.kind = kSwitchReduceStore;
  acc.srcIndex = {acc.bufferOffset};
  acc.dstIndex = {next.bufferOffset};
  if (!sameChannels) acc.dstChannelIds = next.channelIds;
  return true;
}

/// SemaphoreOperation, SignalOperation, WaitOperation and FlushOperation.__add__ (dsl#fusion-F6
/// to F10): a semaphore op merges with the next op of its kind; a channel sync op with the next
/// op of its kind on the same channel type (a signal or wait only when their channel sets are
/// disjoint, a flush also when they overlap). Otherwise it drops `after` when the next op
/// provides `before`.
bool combineDataSync(Op &acc, Op &next) {
  if (next.kind == acc.kind && hasShape(acc, OpShape::Sem)) { // dsl#fusion-F6, dsl#fusion-F7
    append(acc.ids, next.ids);
    acc.dataSync = acc.dataSync | next.dataSync;
    return true;
  }
  if (next.kind == acc.kind && hasShape(acc, OpShape::Sync) && acc.channelType == next.channelType &&
      (!plan::opHas(acc.kind, optrait::Signals | optrait::Waits) ||
       !acc.syncChannelIds.intersects(next.syncChannelIds))) { // dsl#fusion-F8, dsl#fusion-F9, dsl#fusion-F10
    acc.syncChannelIds.unionWith(next.syncChannelIds);
    acc.dataSync = acc.dataSync | next.dataSync;
    return true;
  }
  if (rightProvidesBefore(next)) clearAfter(acc);
  return false;
}
} // namespace

SyncType pipelineDataSync(const Op &p) {
  SyncType r = SyncType::None;
  if (p.ops.empty()) return r;
  auto check = [](const Op &op, SyncType which) {
    SyncType s = SyncType::None;
    if (isNopOrBarrier(op)) s = s | SyncType::Before; // bug dsl#8.2.5: also for the last op
    if (isDataSyncOp(op.kind)) s = s | (which & op.dataSync);
    return s;
  };
  r = r | check(p.ops.front(), SyncType::Before);
  r = r | check(p.ops.back(), SyncType::After);
  return r;
}

namespace {
/// One pair, by the accumulated op's shape (the sync rules) or its traits and roles (data ops).
bool combine(Op &acc, Op &next) {
  switch (plan::opShape(acc.kind)) {
  case OpShape::Nop: // SyncOperation.__add__
    if (hasShape(next, OpShape::Nop)) return true;                            // dsl#fusion-F1
    if (hasShape(next, OpShape::Barrier)) { acc = std::move(next); return true; } // dsl#fusion-F2
    if (hasShape(next, OpShape::Pipeline) && has(pipelineDataSync(next), SyncType::Before)) {
      acc = std::move(next);                                                  // dsl#fusion-F3 (inner ops stay unfused)
      return true;
    }
    if (isDataSyncOp(next.kind)) clearBefore(next);
    return false;
  case OpShape::Barrier:
    if (isDataSyncOp(next.kind)) { clearBefore(next); return false; }
    return hasShape(next, OpShape::Nop);                                      // dsl#fusion-F4
  case OpShape::Pipeline: {
    bool after = has(pipelineDataSync(acc), SyncType::After);
    if (after && isDataSyncOp(next.kind)) { clearBefore(next); return false; }
    return after && hasShape(next, OpShape::Nop);                             // dsl#fusion-F5
  }
  case OpShape::Sem:
  case OpShape::Sync:
    return combineDataSync(acc, next);
  case OpShape::Data:
    return combineData(acc, next);
  case OpShape::GroupLoadReduce:
    return combineGroupLoadReduce(acc, next);
  }
  return false; // not an OpShape value (every enumerator has its case above)
}

} // namespace

bool combineOps(Op &acc, Op &next) {
  // Locations: the fused op keeps the first op's source and records the merged ones in order
  // (also when the merged op replaces the accumulated one, F2/F3). `next` is an original op:
  // nothing was merged into it yet.
  const uint32_t first = acc.source, merged = next.source;
  SourceIdList fused = std::move(acc.fusedSources);
  acc.fusedSources.clear();
  const bool combined = combine(acc, next);
  if (combined) acc.source = first;
  acc.fusedSources = std::move(fused);
  if (combined) acc.fusedSources.push_back(merged);
  return combined;
}

void fuseOperations(std::vector<Op> &ops) {
  // In place: fused op number w is built in ops[w] (w <= i, so no unread op is overwritten).
  size_t i = 0, w = 0, n = ops.size();
  while (i < n) {
    if (w != i) ops[w] = std::move(ops[i]);
    Op &cur = ops[w];
    if (hasShape(cur, OpShape::Pipeline)) fuseOperations(cur.ops);
    size_t j = i + 1;
    while (j < n && combineOps(cur, ops[j])) ++j;
    ++w;
    i = j;
  }
  ops.erase(ops.begin() + std::ptrdiff_t(w), ops.end());
}


} // namespace msccl::passes
