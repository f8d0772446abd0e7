//===- IR.cpp - Registration helpers and the text printer of the IR ---------------------===//
#include "msccl/ir/IR.h"

#include <ostream>
#include <sstream>

namespace msccl::ir {

bool isDataSyncOp(OpKind k) {
  switch (k) {
  case OpKind::Signal: case OpKind::Wait: case OpKind::RelaxedSignal: case OpKind::RelaxedWait:
  case OpKind::Flush: case OpKind::SemAcquire: case OpKind::SemRelease:
    return true;
  default:
    return false;
  }
}

std::string_view opKindName(OpKind k) { return plan::opName(k); }

std::string_view syncTypeName(SyncType s) {
  switch (s) {
  case SyncType::None: return "none";
  case SyncType::Before: return "before";
  case SyncType::After: return "after";
  case SyncType::Both: return "both";
  }
  return "none";
}

namespace {
unsigned channelSlot(ChannelType t) {
  switch (t) {
  case ChannelType::Memory: return 0;
  case ChannelType::Port: return 1;
  default: return 2;
  }
}
} // namespace

// threadblock.py add_channel.
uint32_t ThreadBlockIR::addChannel(ChannelType type, uint32_t gpuId) {
  auto &lookup = channelLocal[channelSlot(type)];
  if (lookup.size() <= gpuId) lookup.resize(gpuId + 1, 0);
  if (lookup[gpuId]) return lookup[gpuId] - 1;
  TbChannelList *list = nullptr;
  for (auto &c : channels)
    if (c.type == type) list = &c;
  if (!list) {
    channels.push_back({type, {}});
    list = &channels.back();
  }
  list->ids.push_back(gpuId);
  lookup[gpuId] = uint32_t(list->ids.size());
  return uint32_t(list->ids.size() - 1);
}

// threadblock.py add_remote_buffer.
uint32_t ThreadBlockIR::addRemoteBuffer(ChannelType access, uint32_t gpuId) {
  auto &lookup = remoteLocal[channelSlot(access) & 1];
  if (lookup.size() <= gpuId) lookup.resize(gpuId + 1, 0);
  if (lookup[gpuId]) return lookup[gpuId] - 1;
  TbRemoteBufferList *list = nullptr;
  for (auto &r : remoteBuffers)
    if (r.type == access) list = &r;
  if (!list) {
    remoteBuffers.push_back({access, {}});
    list = &remoteBuffers.back();
  }
  list->ids.push_back(gpuId);
  lookup[gpuId] = uint32_t(list->ids.size());
  return uint32_t(list->ids.size() - 1);
}

ThreadBlockIR &GpuIR::tb(uint32_t t) {
  while (threadblocks.size() <= t) {
    threadblocks.emplace_back();
    threadblocks.back().id = uint32_t(threadblocks.size() - 1);
  }
  return threadblocks[t];
}

// gpu.py add_remote_buffer (table keyed by (remote rank, kind)).
uint32_t GpuIR::addRemoteBuffer(int64_t rank, BufferType type, ChannelType access) {
  size_t key = size_t(rank) * 3 + size_t(type);
  if (remoteLookup.size() <= key) remoteLookup.resize(key + 1, 0);
  if (!remoteLookup[key]) {
    remoteBuffers.push_back({rank, type, {}});
    remoteLookup[key] = int32_t(remoteBuffers.size());
  }
  uint32_t id = uint32_t(remoteLookup[key] - 1);
  auto &types = remoteBuffers[id].accessChannelTypes;
  bool seen = false;
  for (auto t : types) seen |= t == access;
  if (!seen) types.push_back(access);
  return id;
}

std::vector<const SourceContext *> SourceTable::frames(uint32_t source) const {
  std::vector<const SourceContext *> out;
  if (source == 0 || source >= ops.size()) return out;
  for (uint32_t c = ops[source].context; c != 0 && c < contexts.size(); c = contexts[c].parent) out.push_back(&contexts[c]);
  return out;
}

// --- Printer ---------------------------------------------------------------------------

namespace {
void printLocal(std::ostream &os, const LocalChunk &c) {
  os << plan::bufferTypeName(c.type) << '[' << c.index << ':' << c.index + c.size << ']';
}
void printRemote(std::ostream &os, const RemoteChunk &c) {
  os << "rb" << c.bufferId << ':' << plan::bufferTypeName(c.type) << '[' << c.index << ':' << c.index + c.size << ']';
}
template <class V> void printIds(std::ostream &os, const V &v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << ']';
}

void printOpTo(std::ostream &os, const Op &op) {
  os << opKindName(op.kind);
  switch (op.kind) {
  case OpKind::Nop: break;
  case OpKind::Barrier: os << " id=" << op.barrierId << " tbs=" << op.numThreadblocks; break;
  case OpKind::SemAcquire: case OpKind::SemRelease:
    os << " sem="; printIds(os, op.ids); os << " sync=" << syncTypeName(op.dataSync); break;
  case OpKind::Signal: case OpKind::Wait: case OpKind::RelaxedSignal: case OpKind::RelaxedWait:
  case OpKind::Flush:
    os << " ch=" << plan::channelTypeName(op.channelType); printIds(os, op.syncChannelIds.toList());
    os << " sync=" << syncTypeName(op.dataSync); break;
  case OpKind::MultiLoadReduce:
    os << " buf=" << plan::bufferTypeName(op.switchBuffer) << " off=" << op.bufferOffset << " size=" << op.switchSize
       << " dst=r" << op.userChunk.rank << ':' << plan::bufferTypeName(op.userChunk.buffer) << '[' << op.userChunk.index
       << ':' << op.userChunk.index + op.userChunk.size << "] sw="; printIds(os, op.channelIds);
    os << ' ' << plan::reduceOpName(op.reduceOp); break;
  case OpKind::MultiStore: case OpKind::MultiStorePackets:
    os << " src=r" << op.userChunk.rank << ':' << plan::bufferTypeName(op.userChunk.buffer) << '[' << op.userChunk.index
       << ':' << op.userChunk.index + op.userChunk.size << "] buf=" << plan::bufferTypeName(op.switchBuffer)
       << " off=" << op.bufferOffset << " size=" << op.switchSize << " sw="; printIds(os, op.channelIds); break;
  case OpKind::MultiLoadReduceStore:
    os << " buf=" << plan::bufferTypeName(op.switchBuffer) << " size=" << op.switchSize << " src="; printIds(os, op.srcIndex);
    os << " dst="; printIds(os, op.dstIndex); os << " sw="; printIds(os, op.channelIds);
    os << ' ' << plan::reduceOpName(op.reduceOp); break;
  case OpKind::Pipeline: os << " unit=" << op.unit << " num_chunks=" << op.numChunks; break;
  default: {
    os << " src=[";
    bool first = true;
    for (auto &c : op.localSrc) { os << (first ? "" : ","); printLocal(os, c); first = false; }
    for (auto &c : op.remoteSrc) { os << (first ? "" : ","); printRemote(os, c); first = false; }
    os << "] dst=[";
    first = true;
    for (auto &c : op.localDst) { os << (first ? "" : ","); printLocal(os, c); first = false; }
    for (auto &c : op.localPktDst) { os << (first ? "" : ",") << "pkt:"; printLocal(os, c); first = false; }
    for (auto &c : op.remoteDst) { os << (first ? "" : ","); printRemote(os, c); first = false; }
    os << ']';
    if (op.channelType != ChannelType::None) { os << " ch=" << plan::channelTypeName(op.channelType); printIds(os, op.channelIds); }
    bool reduction = op.kind == OpKind::Reduce || op.kind == OpKind::ReducePackets || op.kind == OpKind::ReduceCopyPackets ||
                     op.kind == OpKind::ReduceSend || op.kind == OpKind::ReduceSendPackets || op.kind == OpKind::ReduceCopySendPackets ||
                     op.kind == OpKind::ReadReduce || op.kind == OpKind::ReadReduceSend;
    if (reduction) os << ' ' << plan::reduceOpName(op.reduceOp);
    if (op.tbg) os << " tbg=" << op.tbg->tbId << '/' << op.tbg->tbgSize;
  }
  }
}

void printOps(std::ostream &os, const std::vector<Op> &ops, int indent) {
  for (auto &op : ops) {
    os << std::string(size_t(indent), ' ');
    printOpTo(os, op);
    os << '\n';
    if (op.kind == OpKind::Pipeline) printOps(os, op.ops, indent + 2);
  }
}
} // namespace

std::string printOp(const Op &op) {
  std::ostringstream os;
  printOpTo(os, op);
  return os.str();
}

void printIR(std::ostream &os, const ProgramIR &ir) {
  const auto &o = ir.options;
  os << "program " << (o.name ? *o.name : std::string("<none>")) << " collective=" << o.collective.name
     << " ranks=" << o.numRanks << " instances=" << o.instances << " protocol=" << o.protocol
     << (ir.processed ? " (processed)" : "") << '\n';
  for (auto &g : ir.gpus) {
    os << "rank " << g.id << ": input=" << g.inputChunks << " output=" << g.outputChunks << " scratch=" << g.scratchChunks << '\n';
    for (auto t : g.channelTypeOrder) {
      os << "  channels " << plan::channelTypeName(t) << " -> ";
      printIds(os, t == ChannelType::Memory ? g.memoryConnectedTo : g.portConnectedTo);
      os << '\n';
    }
    for (auto &s : g.switchChannels) {
      os << "  channels switch " << plan::bufferTypeName(s.bufferType) << " group ";
      printIds(os, s.ranks);
      os << '\n';
    }
    for (size_t i = 0; i < g.remoteBuffers.size(); ++i) {
      auto &rb = g.remoteBuffers[i];
      os << "  remote_buffer " << i << ": rank " << rb.rank << ' ' << plan::bufferTypeName(rb.type) << " via";
      for (auto t : rb.accessChannelTypes) os << ' ' << plan::channelTypeName(t);
      os << '\n';
    }
    if (!g.semaphores.empty()) { os << "  semaphores "; printIds(os, g.semaphores); os << '\n'; }
    for (auto &tb : g.threadblocks) {
      os << "  tb " << tb.id << ':';
      for (auto &c : tb.channels) { os << ' ' << plan::channelTypeName(c.type); printIds(os, c.ids); }
      for (auto &r : tb.remoteBuffers) { os << " rb." << plan::channelTypeName(r.type); printIds(os, r.ids); }
      os << '\n';
      if (tb.packed.empty()) printOps(os, tb.ops, 4);
      else printOps(os, allOps(tb), 4);
    }
  }
}

std::string printIR(const ProgramIR &ir) {
  std::ostringstream os;
  printIR(os, ir);
  return os.str();
}

} // namespace msccl::ir
