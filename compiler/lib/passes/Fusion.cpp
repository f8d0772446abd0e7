//===- Fusion.cpp - Instruction fusion, mirror of internal/optimizer.py -----------------===//
#include "msccl/passes/Fusion.h"

namespace msccl::passes {

using namespace msccl::ir;

namespace {
bool isNopOrBarrier(const Op &op) { return op.kind == OpKind::Nop || op.kind == OpKind::Barrier; }

void clearBefore(Op &op) { op.dataSync = op.dataSync ^ (SyncType::Before & op.dataSync); }
void clearAfter(Op &op) { op.dataSync = op.dataSync ^ (SyncType::After & op.dataSync); }

/// The trimming condition a data-sync op on the left applies to its right neighbour.
bool rightProvidesBefore(const Op &next) {
  if (isDataSyncOp(next.kind) && has(next.dataSync, SyncType::Before)) return true;
  if (next.kind == OpKind::Pipeline && has(pipelineDataSync(next), SyncType::Before)) return true;
  return isNopOrBarrier(next);
}

// The op families of the fusion rules come from the op table (plan/OpTable.h).
using plan::isPutFamily;
using plan::isReduceFamily;

template <class V> void append(V &dst, const V &src) { dst.insert(dst.end(), src.begin(), src.end()); }

// ReduceOperation.__add__.
bool combineReduce(Op &acc, Op &next) {
  const OpKind a = acc.kind, b = next.kind;
  if (isReduceFamily(b)) {
    // dsl#fusion-F14
    if ((a == OpKind::Reduce || a == OpKind::ReducePackets || a == OpKind::ReadReduce) && a == b &&
        acc.localSrc[0] == next.localSrc[0] && acc.localDst == next.localDst && acc.channelType == next.channelType &&
        acc.reduceOp == next.reduceOp && acc.tbg == next.tbg) {
      acc.localSrc.insert(acc.localSrc.end(), next.localSrc.begin() + 1, next.localSrc.end());
      append(acc.remoteSrc, next.remoteSrc);
      append(acc.channelIds, next.channelIds);
      acc.localPktDst.clear();
      acc.remoteDst.clear();
      return true;
    }
    return false;
  }
  if (!isPutFamily(b) && b != OpKind::CopyPackets) return false;
  if (acc.tbg != next.tbg) return false;
  // dsl#fusion-F15
  if ((a == OpKind::Reduce || a == OpKind::ReduceSend || a == OpKind::ReadReduce || a == OpKind::ReadReduceSend) &&
      b == OpKind::Put && acc.localDst[0] == next.localSrc[0] && next.channelType == ChannelType::Memory) {
    append(acc.remoteDst, next.remoteDst);
    acc.localPktDst.clear();
    acc.channelType = ChannelType::Memory;
    acc.kind = acc.remoteSrc.empty() ? OpKind::ReduceSend : OpKind::ReadReduceSend;
    return true;
  }
  // dsl#fusion-F16
  if ((a == OpKind::ReducePackets || a == OpKind::ReduceSendPackets) && b == OpKind::PutPackets &&
      acc.localDst[0] == next.localSrc[0] && next.channelType == ChannelType::Memory) {
    append(acc.remoteDst, next.remoteDst);
    acc.localPktDst.clear();
    acc.channelType = ChannelType::Memory;
    acc.kind = OpKind::ReduceSendPackets;
    return true;
  }
  // dsl#fusion-F17
  if (a == OpKind::ReducePackets && b == OpKind::CopyPackets && acc.localDst[0] == next.localSrc[0]) {
    acc.localPktDst = next.localDst;
    acc.kind = OpKind::ReduceCopyPackets;
    return true;
  }
  // dsl#fusion-F18
  if ((a == OpKind::ReduceCopyPackets || a == OpKind::ReduceCopySendPackets) &&
      ((b == OpKind::PutPackets && acc.localDst[0] == next.localSrc[0]) ||
       (b == OpKind::ReadPutPackets && acc.localPktDst[0] == next.localSrc[0])) &&
      next.channelType == ChannelType::Memory) {
    append(acc.remoteDst, next.remoteDst);
    acc.channelType = ChannelType::Memory;
    acc.kind = OpKind::ReduceCopySendPackets;
    return true;
  }
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
bool combine(Op &acc, Op &next) {
  const OpKind a = acc.kind, b = next.kind;
  switch (a) {
  case OpKind::Nop: // SyncOperation.__add__
    if (b == OpKind::Nop) return true;                                    // dsl#fusion-F1
    if (b == OpKind::Barrier) { acc = std::move(next); return true; }     // dsl#fusion-F2
    if (b == OpKind::Pipeline && has(pipelineDataSync(next), SyncType::Before)) {
      acc = std::move(next);                                              // dsl#fusion-F3 (inner ops stay unfused)
      return true;
    }
    if (isDataSyncOp(b)) clearBefore(next);
    return false;
  case OpKind::Barrier:
    if (isDataSyncOp(b)) { clearBefore(next); return false; }
    return b == OpKind::Nop;                                              // dsl#fusion-F4
  case OpKind::Pipeline: {
    bool after = has(pipelineDataSync(acc), SyncType::After);
    if (after && isDataSyncOp(b)) { clearBefore(next); return false; }
    return after && b == OpKind::Nop;                                     // dsl#fusion-F5
  }
  case OpKind::SemAcquire: case OpKind::SemRelease:
    if (b == a) {                                                          // dsl#fusion-F6, dsl#fusion-F7
      append(acc.ids, next.ids);
      acc.dataSync = acc.dataSync | next.dataSync;
      return true;
    }
    if (rightProvidesBefore(next)) clearAfter(acc);
    return false;
  case OpKind::Signal: case OpKind::RelaxedSignal: case OpKind::Wait: case OpKind::RelaxedWait:
    if (b == a && acc.channelType == next.channelType && !acc.syncChannelIds.intersects(next.syncChannelIds)) { // dsl#fusion-F8, dsl#fusion-F9
      acc.syncChannelIds.unionWith(next.syncChannelIds);
      acc.dataSync = acc.dataSync | next.dataSync;
      return true;
    }
    if (rightProvidesBefore(next)) clearAfter(acc);
    return false;
  case OpKind::Flush:
    if (b == OpKind::Flush && acc.channelType == next.channelType) {      // dsl#fusion-F10
      acc.syncChannelIds.unionWith(next.syncChannelIds);
      acc.dataSync = acc.dataSync | next.dataSync;
      return true;
    }
    if (rightProvidesBefore(next)) clearAfter(acc);
    return false;
  case OpKind::Get:                                                       // dsl#fusion-F11
    if (b == OpKind::Get && acc.remoteSrc[0].size == next.remoteSrc[0].size && acc.channelType == next.channelType &&
        acc.tbg == next.tbg) {
      append(acc.remoteSrc, next.remoteSrc);
      append(acc.localDst, next.localDst);
      append(acc.channelIds, next.channelIds);
      return true;
    }
    return false;
  case OpKind::Put: case OpKind::PutPackets: case OpKind::PutWithSignal: case OpKind::PutWithSignalAndFlush: // dsl#fusion-F12
    if (b == a && acc.localSrc[0].size == next.localSrc[0].size && acc.channelType == next.channelType && acc.tbg == next.tbg) {
      append(acc.localSrc, next.localSrc);
      append(acc.remoteDst, next.remoteDst);
      append(acc.channelIds, next.channelIds);
      return true;
    }
    return false;
  case OpKind::ReadPutPackets:                                            // dsl#fusion-F13
    if (b == a && acc.localSrc == next.localSrc && acc.channelType == next.channelType && acc.tbg == next.tbg) {
      append(acc.remoteDst, next.remoteDst);
      append(acc.channelIds, next.channelIds);
      return true;
    }
    return false;
  case OpKind::MultiLoadReduce:                                           // dsl#fusion-F19
    if (b == OpKind::MultiStore && acc.switchBuffer == next.switchBuffer && acc.switchSize == next.switchSize &&
        acc.userChunk == next.userChunk && acc.channelIds == next.channelIds && acc.channelType == next.channelType) {
      acc.kind = OpKind::MultiLoadReduceStore;
      acc.srcIndex = {acc.bufferOffset};
      acc.dstIndex = {next.bufferOffset};
      return true;
    }
    return false;
  // The reduce family combines (isReduceFamily: combineReduce); copy, cpkt, upkt, gstore, gstorepkt, glres do not.
  case OpKind::Copy: case OpKind::CopyPackets: case OpKind::UnpackPackets: case OpKind::Reduce:
  case OpKind::ReducePackets: case OpKind::ReduceCopyPackets: case OpKind::ReduceSend:
  case OpKind::ReduceSendPackets: case OpKind::ReduceCopySendPackets: case OpKind::ReadReduce:
  case OpKind::ReadReduceSend: case OpKind::MultiLoadReduceStore: case OpKind::MultiStore:
  case OpKind::MultiStorePackets:
    if (isReduceFamily(a)) return combineReduce(acc, next);
    return false; // copy, cpkt, upkt, gstore, gstorepkt, glres
  }
  return false; // not an OpKind value (every enumerator has its case above)
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
    if (cur.kind == OpKind::Pipeline) fuseOperations(cur.ops);
    size_t j = i + 1;
    while (j < n && combineOps(cur, ops[j])) ++j;
    ++w;
    i = j;
  }
  ops.erase(ops.begin() + std::ptrdiff_t(w), ops.end());
}


} // namespace msccl::passes
