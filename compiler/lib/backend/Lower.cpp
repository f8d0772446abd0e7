//===- Lower.cpp - Processed IR -> plan::Plan (the to_dict methods of the DSL) ----------===//
#include "msccl/backend/Lower.h"

namespace msccl::backend {

using namespace msccl::ir;

namespace {
uint64_t u(int64_t v, const char *what) {
  if (v < 0) throw DslError(std::string("Negative ") + what + " " + std::to_string(v) + " cannot be written to the plan.");
  return uint64_t(v);
}

plan::BufferRef local(const LocalChunk &c) { return plan::BufferRef::local(c.type, u(c.index, "chunk index"), u(c.size, "chunk size")); }
plan::BufferRef remote(const RemoteChunk &c) { return plan::BufferRef::remote(c.bufferId, u(c.index, "chunk index"), u(c.size, "chunk size")); }
plan::BufferRef userChunk(const Chunk &c) {
  plan::BufferRef r = plan::BufferRef::local(c.buffer, u(c.index, "chunk index"), u(c.size, "chunk size"));
  r.rank = uint32_t(c.rank);
  return r;
}

plan::Op lowerOp(const Op &op) {
  plan::Op p;
  p.type = op.kind;
  switch (op.kind) {
  case OpKind::Nop:
    break;
  case OpKind::Barrier:
    p.barrierId = op.barrierId;
    p.numThreadblocks = op.numThreadblocks;
    break;
  case OpKind::SemAcquire: case OpKind::SemRelease:
    p.semaphoreIds = op.ids;
    break;
  case OpKind::Signal: case OpKind::Wait: case OpKind::RelaxedSignal: case OpKind::RelaxedWait: case OpKind::Flush:
    p.channelIds = op.syncChannelIds.toList();
    p.channelType = op.channelType;
    break;
  case OpKind::Copy: case OpKind::CopyPackets: case OpKind::UnpackPackets:
    for (auto &c : op.localSrc) p.src.push_back(local(c));
    for (auto &c : op.localDst) p.dst.push_back(local(c));
    if (op.tbg) p.tbg = plan::TbgInfo{op.tbg->tbId, op.tbg->tbgSize};
    break;
  case OpKind::Get:
    for (auto &c : op.remoteSrc) p.src.push_back(remote(c));
    for (auto &c : op.localDst) p.dst.push_back(local(c));
    p.channelIds = op.channelIds;
    p.channelType = op.channelType;
    if (op.tbg) p.tbg = plan::TbgInfo{op.tbg->tbId, op.tbg->tbgSize};
    break;
  case OpKind::Put: case OpKind::PutPackets: case OpKind::ReadPutPackets: case OpKind::PutWithSignal:
  case OpKind::PutWithSignalAndFlush:
    for (auto &c : op.localSrc) p.src.push_back(local(c));
    for (auto &c : op.remoteDst) p.dst.push_back(remote(c));
    if (op.channelType == ChannelType::Port) p.channelIds = op.channelIds; // memory puts omit them (Python)
    p.channelType = op.channelType;
    if (op.tbg) p.tbg = plan::TbgInfo{op.tbg->tbId, op.tbg->tbgSize};
    break;
  case OpKind::Reduce: case OpKind::ReducePackets: case OpKind::ReduceCopyPackets: case OpKind::ReduceSend:
  case OpKind::ReduceSendPackets: case OpKind::ReduceCopySendPackets: case OpKind::ReadReduce: case OpKind::ReadReduceSend:
    p.src.reserve(op.localSrc.size() + op.remoteSrc.size());
    for (auto &c : op.localSrc) p.src.push_back(local(c));
    for (auto &c : op.remoteSrc) p.src.push_back(remote(c));
    for (auto &c : op.localDst) p.dst.push_back(local(c));
    for (auto &c : op.localPktDst) p.dst.push_back(local(c));
    for (auto &c : op.remoteDst) p.dst.push_back(remote(c));
    if (op.channelType != ChannelType::None) p.channelType = op.channelType;
    p.reduceOp = op.reduceOp;
    if (op.tbg) p.tbg = plan::TbgInfo{op.tbg->tbId, op.tbg->tbgSize};
    break;
  case OpKind::MultiLoadReduce:
    p.glreBufferType = op.switchBuffer;
    p.glreBufferOffset = u(op.bufferOffset, "buffer offset");
    p.glreSize = u(op.switchSize, "size");
    p.glreDstChunk = userChunk(op.userChunk);
    p.channelIds = op.channelIds;
    p.channelType = op.channelType;
    p.reduceOp = op.reduceOp;
    break;
  case OpKind::MultiStore: case OpKind::MultiStorePackets:
    p.src.push_back(userChunk(op.userChunk));
    p.dst.push_back(plan::BufferRef::switchRef(op.channelIds.at(0), u(op.bufferOffset, "buffer offset"), u(op.switchSize, "size")));
    p.channelType = op.channelType;
    break;
  case OpKind::MultiLoadReduceStore:
    for (size_t i = 0; i < op.srcIndex.size(); ++i)
      p.src.push_back(plan::BufferRef::switchRef(op.channelIds.at(i), u(op.srcIndex[i], "index"), u(op.switchSize, "size")));
    // [BUG copied for parity] Python writes the source index into dst_buff.
    for (size_t i = 0; i < op.dstIndex.size(); ++i)
      p.dst.push_back(plan::BufferRef::switchRef(op.channelIds.at(i), u(op.srcIndex.at(i), "index"), u(op.switchSize, "size")));
    p.channelType = op.channelType;
    p.reduceOp = op.reduceOp;
    break;
  case OpKind::Pipeline:
    p.iterContext = plan::IterContext{u(op.unit, "unit"), u(op.numChunks, "num_chunks")};
    p.ops.reserve(op.ops.size());
    for (auto &inner : op.ops) p.ops.push_back(lowerOp(inner));
    break;
  }
  return p;
}
} // namespace

plan::Plan lowerToPlan(const ProgramIR &ir) {
  const auto &o = ir.options;
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
  plan.gpus.reserve(ir.gpus.size());
  for (auto &g : ir.gpus) {
    plan::Gpu pg;
    pg.id = g.id;
    pg.inputChunks = u(g.inputChunks, "chunk count");
    pg.outputChunks = u(g.outputChunks, "chunk count");
    pg.scratchChunks = u(g.scratchChunks, "chunk count");
    pg.threadblocks.reserve(g.threadblocks.size());
    for (auto &tb : g.threadblocks) {
      plan::Threadblock ptb;
      ptb.id = tb.id;
      ptb.ops.reserve(tb.ops.size());
      for (auto &op : tb.ops) ptb.ops.push_back(lowerOp(op));
      for (auto &c : tb.channels)
        if (!c.ids.empty()) ptb.channels.push_back(plan::TbChannels{c.type, c.ids});
      for (auto &r : tb.remoteBuffers) ptb.remoteBufferRefs.push_back(plan::RemoteBufferRefs{r.type, r.ids});
      pg.threadblocks.push_back(std::move(ptb));
    }
    for (auto t : g.channelTypeOrder) {
      plan::ChannelDecl d;
      d.channelType = t;
      d.connectedTo = t == ChannelType::Memory ? g.memoryConnectedTo : g.portConnectedTo;
      pg.channels.push_back(std::move(d));
    }
    for (auto &s : g.switchChannels) {
      plan::ChannelDecl d;
      d.channelType = ChannelType::Switch;
      d.bufferType = s.bufferType;
      plan::RankGroup rg;
      rg.size = uint32_t(s.ranks.size());
      for (auto r : s.ranks) rg.ranks.push_back(uint32_t(r));
      d.rankGroups.push_back(std::move(rg));
      pg.channels.push_back(std::move(d));
    }
    for (auto &rb : g.remoteBuffers) pg.remoteBuffers.push_back(plan::RemoteBuffer{uint32_t(rb.rank), rb.type, rb.accessChannelTypes});
    for (auto v : g.semaphores) pg.semaphores.push_back(plan::Semaphore{int32_t(v)});
    plan.gpus.push_back(std::move(pg));
  }
  return plan;
}

plan::Plan compile(const Program &program, const passes::PipelineOptions &opts) {
  return lowerToPlan(passes::runPipeline(program.ir(), opts));
}

} // namespace msccl::backend
