//===- Replication.cpp - mirror of internal/gpu.py replicate_instances -------------------===//
#include "msccl/passes/Replication.h"

namespace msccl::passes {

using namespace msccl::ir;

namespace {
using Shift = InstanceShift;

void shiftOp(Op &op, const Shift &s) {
  for (auto &c : op.localSrc) c.index = s.buf(c.index, c.size);
  for (auto &c : op.localDst) c.index = s.buf(c.index, c.size);
  // localPktDst: not shifted (Python bug, copied for parity).
  for (auto &c : op.remoteSrc) c.index = s.buf(c.index, c.size);
  for (auto &c : op.remoteDst) c.index = s.buf(c.index, c.size);
  switch (op.kind) {
  case OpKind::SemAcquire: case OpKind::SemRelease:
    for (auto &i : op.ids) i = uint32_t(s.id(i));
    break;
  case OpKind::Barrier:
    op.barrierId = uint32_t(s.id(op.barrierId));
    break;
  case OpKind::Signal: case OpKind::Wait: case OpKind::RelaxedSignal: case OpKind::RelaxedWait: case OpKind::Flush:
    op.syncChannelIds = PySet::fromList(op.syncChannelIds.toList()); // deepcopy rebuild
    break;
  case OpKind::MultiLoadReduce: case OpKind::MultiStore: case OpKind::MultiStorePackets:
    op.bufferOffset = s.buf(op.bufferOffset, op.switchSize);
    op.userChunk.index = s.buf(op.userChunk.index, op.switchSize);
    break;
  case OpKind::MultiLoadReduceStore:
    for (auto &i : op.srcIndex) i = s.buf(i, op.switchSize);
    for (auto &i : op.dstIndex) i = s.buf(i, op.switchSize);
    break;
  case OpKind::Pipeline:
    for (auto &inner : op.ops) shiftOp(inner, s);
    break;
  default:
    break;
  }
}

template <class T> std::vector<T> repeatEach(const std::vector<T> &v, int64_t n) {
  std::vector<T> out;
  out.reserve(v.size() * size_t(n));
  for (auto &x : v)
    for (int64_t k = 0; k < n; ++k) out.push_back(x);
  return out;
}
} // namespace

void replicateInstances(ProgramIR &ir) {
  unpackOps(ir);
  const int64_t n = ir.options.instances;
  const bool interleaved = ir.options.replicationPolicy == ReplicationPolicy::Interleaved;
  for (auto &g : ir.gpus) {
    g.inputChunks *= n;
    g.outputChunks *= n;
    g.scratchChunks *= n;
    g.memoryConnectedTo = repeatEach(g.memoryConnectedTo, n);
    g.portConnectedTo = repeatEach(g.portConnectedTo, n);
    g.switchChannels = repeatEach(g.switchChannels, n);
    g.semaphores = repeatEach(g.semaphores, n);
    std::vector<ThreadBlockIR> tbs;
    tbs.reserve(g.threadblocks.size() * size_t(n));
    for (auto &orig : g.threadblocks) {
      for (auto &l : orig.channelLocal) l.clear();
      for (auto &l : orig.remoteLocal) l.clear();
      const uint32_t origId = orig.id;
      for (int64_t k = 0; k < n; ++k) {
        Shift s{n, k, interleaved};
        ThreadBlockIR tb;
        if (k + 1 == n) tb = std::move(orig);
        else tb = orig;
        tb.id = uint32_t(s.id(origId));
        for (auto &c : tb.channels)
          for (auto &id : c.ids) id = uint32_t(s.id(id));
        for (auto &op : tb.ops) shiftOp(op, s);
        tbs.push_back(std::move(tb));
      }
    }
    g.threadblocks = std::move(tbs);
  }
}

} // namespace msccl::passes
