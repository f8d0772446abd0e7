//===- Lower.cpp - Processed IR -> plan::Plan (the to_dict methods of the DSL) ----------===//
#include "msccl/backend/Lower.h"
#include "msccl/plan/OpTable.h"

#include <stdexcept>

#include "msccl/passes/Pipeline.h"
#include "msccl/passes/Replication.h"

namespace msccl::backend {

using namespace msccl::ir;

namespace {
/// op.channelIds[i], throwing std::out_of_range with std::vector::at's message when absent.
uint32_t channelAt(const ChannelIdList &ids, size_t i) {
  if (i >= ids.size())
    throw std::out_of_range("vector::_M_range_check: __n (which is " + std::to_string(i) + ") >= this->size() (which is " +
                            std::to_string(ids.size()) + ")");
  return ids[i];
}

uint64_t u(int64_t v, const char *what) {
  if (v < 0) throw DslError(std::string("Negative ") + what + " " + std::to_string(v) + " cannot be written to the plan.");
  return uint64_t(v);
}

/// How lowering maps ids and chunk indices: identity for a processed (replicated) IR, or the
/// InstanceShift of one instance while replicating (then signal/wait/flush id sets are also
/// rebuilt from their iteration order, as copy.deepcopy does in replicate_instances).
struct Mapping {
  passes::InstanceShift shift;
  bool replicate = false;
};

plan::BufferRef local(const LocalChunk &c, const Mapping &m) {
  return plan::BufferRef::local(c.type, u(m.shift.buf(c.index, c.size), "chunk index"), u(c.size, "chunk size"));
}
/// The packet-copy destination of recpkt/recspkt: never shifted (Python bug, copied for parity).
plan::BufferRef localUnshifted(const LocalChunk &c) {
  return plan::BufferRef::local(c.type, u(c.index, "chunk index"), u(c.size, "chunk size"));
}
plan::BufferRef remote(const RemoteChunk &c, const Mapping &m) {
  return plan::BufferRef::remote(c.bufferId, u(m.shift.buf(c.index, c.size), "chunk index"), u(c.size, "chunk size"));
}
plan::BufferRef userChunk(const Chunk &c, int64_t index) {
  plan::BufferRef r = plan::BufferRef::local(c.buffer, u(index, "chunk index"), u(c.size, "chunk size"));
  r.rank = uint32_t(c.rank);
  return r;
}

plan::Op lowerOp(const Op &op, const Mapping &m);

/// A data op's entries, channel, reduction and threadblock group, by its table row: local
/// sources first (shifted), then remote ones; local, packet (never shifted: Python's bug, copied
/// for parity) and remote destinations. channel_ids as the Python DSL writes them: a put names
/// them over port channels only, a get always, a reduce never.
void lowerDataOp(const Op &op, const Mapping &m, plan::Op &p) {
  p.src.reserve(op.localSrc.size() + op.remoteSrc.size());
  for (auto &c : op.localSrc) p.src.push_back(local(c, m));
  for (auto &c : op.remoteSrc) p.src.push_back(remote(c, m));
  for (auto &c : op.localDst) p.dst.push_back(local(c, m));
  for (auto &c : op.localPktDst) p.dst.push_back(localUnshifted(c));
  for (auto &c : op.remoteDst) p.dst.push_back(remote(c, m));
  const bool names = plan::isPutFamily(op.kind) ? op.channelType == ChannelType::Port
                                                 : !plan::isReduceFamily(op.kind) && !op.remoteSrc.empty();
  if (names) p.channelIds = std::vector<uint32_t>(op.channelIds.begin(), op.channelIds.end());
  if (op.channelType != ChannelType::None) p.channelType = op.channelType;
  if (plan::isReduceFamily(op.kind)) p.reduceOp = op.reduceOp;
  if (op.tbg) p.tbg = plan::TbgInfo{op.tbg->tbId, op.tbg->tbgSize};
}

/// A switch-channel op (glre, glres, gstore, gstorepkt), by its shape and Reduce trait.
void lowerSwitchOp(const Op &op, const Mapping &m, plan::Op &p) {
  p.channelType = op.channelType;
  if (plan::opShape(op.kind) == plan::OpShape::GroupLoadReduce) { // glre: into one user chunk
    p.glreBufferType = op.switchBuffer;
    p.glreBufferOffset = u(m.shift.buf(op.bufferOffset, op.switchSize), "buffer offset");
    p.glreSize = u(op.switchSize, "size");
    p.glreDstChunk = userChunk(op.userChunk, m.shift.buf(op.userChunk.index, op.switchSize));
    p.channelIds = std::vector<uint32_t>(op.channelIds.begin(), op.channelIds.end());
    p.reduceOp = op.reduceOp;
  } else if (plan::opHas(op.kind, plan::optrait::Reduce)) { // glres
    for (size_t i = 0; i < op.srcIndex.size(); ++i)
      p.src.push_back(plan::BufferRef::switchRef(channelAt(op.channelIds, i), u(m.shift.buf(op.srcIndex[i], op.switchSize), "index"), u(op.switchSize, "size")));
    // [BUG copied for parity] Python writes the source index into dst_buff (fusion across
    // switch channels requires the offsets to be equal).
    const ChannelIdList &dstChannels = op.dstChannelIds.empty() ? op.channelIds : op.dstChannelIds;
    for (size_t i = 0; i < op.dstIndex.size(); ++i)
      p.dst.push_back(plan::BufferRef::switchRef(channelAt(dstChannels, i), u(m.shift.buf(op.srcIndex.at(i), op.switchSize), "index"), u(op.switchSize, "size")));
    p.reduceOp = op.reduceOp;
  } else { // gstore, gstorepkt: from one user chunk
    p.src.push_back(userChunk(op.userChunk, m.shift.buf(op.userChunk.index, op.switchSize)));
    p.dst.push_back(plan::BufferRef::switchRef(channelAt(op.channelIds, 0), u(m.shift.buf(op.bufferOffset, op.switchSize), "buffer offset"),
                                               u(op.switchSize, "size")));
  }
}

/// One op of the IR into a plan op, by its table shape.
plan::Op lowerOp(const Op &op, const Mapping &m) {
  plan::Op p;
  p.type = op.kind;
  if (plan::isSwitchOp(op.kind)) {
    lowerSwitchOp(op, m, p);
    return p;
  }
  switch (plan::opShape(op.kind)) {
  case plan::OpShape::Nop:
    break;
  case plan::OpShape::Barrier:
    p.barrierId = uint32_t(m.shift.id(op.barrierId));
    p.numThreadblocks = op.numThreadblocks;
    break;
  case plan::OpShape::Sem:
    p.semaphoreIds.reserve(op.ids.size());
    for (auto id : op.ids) p.semaphoreIds.push_back(uint32_t(m.shift.id(id)));
    break;
  case plan::OpShape::Sync:
    p.channelIds = m.replicate ? PySet::fromList(op.syncChannelIds.toList()).toList() : op.syncChannelIds.toList();
    p.channelType = op.channelType;
    break;
  case plan::OpShape::Data:
    lowerDataOp(op, m, p);
    break;
  case plan::OpShape::Pipeline:
    p.iterContext = plan::IterContext{u(op.unit, "unit"), u(op.numChunks, "num_chunks")};
    p.ops.reserve(op.ops.size());
    for (auto &inner : op.ops) p.ops.push_back(lowerOp(inner, m));
    break;
  case plan::OpShape::GroupLoadReduce:
    lowerSwitchOp(op, m, p);
    break;
  }
  return p;
}

OpSourceEntry sourceEntry(const Op &op) {
  OpSourceEntry e;
  e.source = op.source;
  e.fused = op.fusedSources;
  e.inner.reserve(op.ops.size());
  for (auto &inner : op.ops) e.inner.push_back(sourceEntry(inner));
  return e;
}

/// One GPU: `n` instances of each threadblock (n = 1, identity mapping, for a processed IR).
/// `sources`, when given, gets the source entries of every plan threadblock's ops.
plan::Gpu lowerGpuImpl(const GpuIR &g, int64_t n, bool interleaved, bool replicate,
                       std::vector<std::vector<OpSourceEntry>> *sources) {
  plan::Gpu pg;
  pg.id = g.id;
  pg.inputChunks = u(g.inputChunks * n, "chunk count");
  pg.outputChunks = u(g.outputChunks * n, "chunk count");
  pg.scratchChunks = u(g.scratchChunks * n, "chunk count");
  pg.threadblocks.reserve(g.threadblocks.size() * size_t(n > 0 ? n : 0));
  for (auto &tb : g.threadblocks) {
    std::vector<Op> decoded; // only for an IR whose ops are still packed
    if (!tb.packed.empty()) decoded = allOps(tb);
    const std::vector<Op> &ops = tb.packed.empty() ? tb.ops : decoded;
    std::vector<OpSourceEntry> entries;
    if (sources) {
      entries.reserve(ops.size());
      for (auto &op : ops) entries.push_back(sourceEntry(op));
    }
    for (int64_t k = 0; k < n; ++k) {
      if (sources) sources->push_back(entries); // instances share their op's location
      Mapping m{passes::InstanceShift{n, k, interleaved}, replicate};
      plan::Threadblock ptb;
      ptb.id = uint32_t(m.shift.id(tb.id));
      ptb.ops.reserve(ops.size());
      for (auto &op : ops) {
        try {
          ptb.ops.push_back(lowerOp(op, m));
        } catch (const DslError &e) {
          if (e.source()) throw;
          throw DslError(e.what(), op.source); // report it at the op's .msccl call
        }
      }
      for (auto &c : tb.channels) {
        if (c.ids.empty()) continue;
        plan::TbChannels pc{c.type, {}};
        pc.channelIds.reserve(c.ids.size());
        for (auto id : c.ids) pc.channelIds.push_back(uint32_t(m.shift.id(id)));
        ptb.channels.push_back(std::move(pc));
      }
      for (auto &r : tb.remoteBuffers) ptb.remoteBufferRefs.push_back(plan::RemoteBufferRefs{r.type, r.ids});
      pg.threadblocks.push_back(std::move(ptb));
    }
  }
  auto repeat = [n](const auto &v, auto &&f) {
    for (auto &x : v)
      for (int64_t k = 0; k < n; ++k) f(x);
  };
  for (auto t : g.channelTypeOrder) {
    plan::ChannelDecl d;
    d.channelType = t;
    repeat(t == ChannelType::Memory ? g.memoryConnectedTo : g.portConnectedTo, [&](uint32_t r) { d.connectedTo.push_back(r); });
    pg.channels.push_back(std::move(d));
  }
  repeat(g.switchChannels, [&](const SwitchChannelDecl &s) {
    plan::ChannelDecl d;
    d.channelType = ChannelType::Switch;
    d.bufferType = s.bufferType;
    plan::RankGroup rg;
    rg.size = uint32_t(s.ranks.size());
    for (auto r : s.ranks) rg.ranks.push_back(uint32_t(r));
    d.rankGroups.push_back(std::move(rg));
    pg.channels.push_back(std::move(d));
  });
  for (auto &rb : g.remoteBuffers) pg.remoteBuffers.push_back(plan::RemoteBuffer{uint32_t(rb.rank), rb.type, rb.accessChannelTypes});
  repeat(g.semaphores, [&](int64_t v) { pg.semaphores.push_back(plan::Semaphore{int32_t(v)}); });
  return pg;
}
} // namespace

plan::Plan planHeader(const ProgramOptions &o) {
  plan::Plan plan;
  plan.name = o.name;
  plan.collective = o.collective.name;
  plan.protocol = o.protocol;
  plan.inplace = o.collective.inplace;
  plan.reuseResources = o.reuseResources;
  plan.numThreadsPerBlock = uint32_t(o.numThreadsPerBlock);
  plan.useDoubleScratchBuffer = o.useDoubleScratchBuffer;
  plan.bufferAlignment = uint64_t(o.bufferAlignment);
  plan.minMessageSize = o.minMessageSize;
  plan.maxMessageSize = o.maxMessageSize;
  if (o.collective.variable) // sizes come from deriveAllToAllV once the whole plan is lowered
    plan.variableSizes = plan::VariableSizes{"matrix", uint64_t(o.collective.maxBlock)};
  return plan;
}

plan::Gpu lowerGpu(const GpuIR &gpu, SourceMap *sources) {
  return lowerGpuImpl(gpu, 1, false, false, sources ? &sources->gpu(gpu.id) : nullptr);
}

plan::Gpu lowerGpuReplicated(const ProgramOptions &options, const GpuIR &gpu, SourceMap *sources) {
  return lowerGpuImpl(gpu, options.instances, options.replicationPolicy == ReplicationPolicy::Interleaved, true,
                      sources ? &sources->gpu(gpu.id) : nullptr);
}

plan::Plan lowerToPlan(const ProgramIR &ir, SourceMap *sources) {
  plan::Plan plan = planHeader(ir.options);
  plan.gpus.reserve(ir.gpus.size());
  for (auto &g : ir.gpus) plan.gpus.push_back(lowerGpu(g, sources));
  if (sources) sources->setSources(ir.sources);
  return plan;
}

plan::Plan compile(const Program &program, const passes::PipelineOptions &opts, SourceMap *sources) {
  ProgramIR ir = program.ir(); // the program stays as it was: compiling twice gives the same plan
  passes::checkProgram(ir, opts);
  plan::Plan plan = planHeader(ir.options);
  plan.gpus.reserve(ir.gpus.size());
  for (auto &g : ir.gpus) { // the streamed path's calls (StreamCompile.cpp), kept in memory
    passes::runGpuPasses(ir, g, opts);
    plan.gpus.push_back(lowerGpuReplicated(ir.options, g, sources));
  }
  if (sources) sources->setSources(ir.sources);
  return plan;
}

} // namespace msccl::backend
