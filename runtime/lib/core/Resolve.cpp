//===- Resolve.cpp - tb-local ids -> peers, buffers and byte ranges ----------------------===//
//
// Consumes a validated Plan; produces the ResolvedPlan (gpu-level channels paired with their
// peers, tb-local tables) and, per message size, the LoweredPlan (flattened ops with every entry
// resolved to a location and a byte range). See Resolve.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Resolve.h"

#include "msccl/runtime/Executor.h"
#include "msccl/runtime/UnevenChunks.h"

#include <map>

namespace msccl::runtime {
using namespace msccl::plan;

static ExecutionError planError(const std::string &path, const std::string &msg) {
  return ExecutionError(ErrorKind::InvalidPlan, path + ": " + msg);
}

ResolvedPlan resolvePlan(const Plan &plan) {
  ResolvedPlan out;
  const size_t nranks = plan.gpus.size();
  out.gpus.resize(nranks);
  // Gpu-level channel lists, with per-peer occurrence numbers.
  for (size_t r = 0; r < nranks; ++r) {
    const Gpu &gpu = plan.gpus[r];
    ResolvedGpu &rg = out.gpus[r];
    std::map<uint32_t, uint32_t> memCount, portCount;
    for (const ChannelDecl &decl : gpu.channels) {
      if (decl.channelType == ChannelType::Memory || decl.channelType == ChannelType::Port) {
        auto &list = decl.channelType == ChannelType::Memory ? rg.memoryChannels : rg.portChannels;
        auto &count = decl.channelType == ChannelType::Memory ? memCount : portCount;
        for (uint32_t peer : decl.connectedTo)
          list.push_back(ResolvedChannel{peer, count[peer]++, kNoChannel});
      } else if (decl.channelType == ChannelType::Switch) {
        for (const RankGroup &g : decl.rankGroups)
          rg.switchChannels.push_back(ResolvedSwitch{decl.bufferType, g.ranks});
      }
    }
  }
  // Pairing: the k-th channel of A toward B <-> the k-th channel of B toward A.
  for (size_t r = 0; r < nranks; ++r) {
    for (int type = 0; type < 2; ++type) {
      auto &list = type == 0 ? out.gpus[r].memoryChannels : out.gpus[r].portChannels;
      for (ResolvedChannel &ch : list) {
        if (ch.peer >= nranks)
          continue;
        auto &peerList = type == 0 ? out.gpus[ch.peer].memoryChannels : out.gpus[ch.peer].portChannels;
        for (size_t q = 0; q < peerList.size(); ++q)
          if (peerList[q].peer == r && peerList[q].occurrence == ch.occurrence) {
            ch.peerChannel = uint32_t(q);
            break;
          }
      }
    }
  }
  // Threadblock tables.
  for (size_t r = 0; r < nranks; ++r) {
    const Gpu &gpu = plan.gpus[r];
    ResolvedGpu &rg = out.gpus[r];
    for (const Threadblock &tb : gpu.threadblocks) {
      ResolvedTb rtb;
      for (const TbChannels &c : tb.channels) {
        auto &dst = c.channelType == ChannelType::Memory ? rtb.memoryChannels
                    : c.channelType == ChannelType::Port ? rtb.portChannels
                                                         : rtb.switchChannels;
        if (c.channelType == ChannelType::None)
          continue;
        dst.insert(dst.end(), c.channelIds.begin(), c.channelIds.end());
      }
      for (const RemoteBufferRefs &ref : tb.remoteBufferRefs) {
        if (ref.accessChannelType == ChannelType::Memory)
          rtb.memoryBuffers.insert(rtb.memoryBuffers.end(), ref.remoteBufferIds.begin(), ref.remoteBufferIds.end());
        else if (ref.accessChannelType == ChannelType::Port)
          rtb.portBuffers.insert(rtb.portBuffers.end(), ref.remoteBufferIds.begin(), ref.remoteBufferIds.end());
      }
      rg.threadblocks.push_back(std::move(rtb));
    }
  }
  return out;
}

namespace {
struct Lowerer {
  const Plan &plan;
  const ResolvedPlan &resolved;
  uint32_t rank;
  const std::vector<ChunkLayout> &layouts;
  const ChunkLayout &layout; // layouts[rank]
  const ResolvedTb &tb;
  bool usesPackets = false;

  /// The JSON path of an entry, made only for an error: `op` + field (+ "[index]" when >= 0).
  struct EntryPath {
    const std::string &op;
    const char *field;
    long index;
    std::string str() const { return op + field + (index >= 0 ? "[" + std::to_string(index) + "]" : std::string()); }
    friend std::string operator+(const EntryPath &p, const char *s) { return p.str() + s; }
  };

  LoweredEntry entry(const BufferRef &ref, const Op &op, const EntryPath &path) {
    LoweredEntry e;
    e.index = ref.index;
    e.size = ref.size;
    e.where.rank = rank;
    const Gpu &gpu = plan.gpus[rank];
    switch (ref.loc) {
    case BufferRef::Loc::Local:
      e.where.kind = Location::Kind::Local;
      e.where.type = ref.type;
      break;
    case BufferRef::Loc::Remote: {
      ChannelType ct = op.channelType.value_or(ChannelType::None);
      const std::vector<uint32_t> *table = ct == ChannelType::Memory ? &tb.memoryBuffers
                                           : ct == ChannelType::Port ? &tb.portBuffers
                                                                     : nullptr;
      if (!table)
        throw planError(path + ".buffer_id", "Invalid channel type: a remote entry needs channel_type memory or port");
      if (ref.id >= table->size())
        throw planError(path + ".buffer_id", "remote buffer " + std::to_string(ref.id) + " out of range");
      uint32_t g = (*table)[ref.id];
      if (g >= gpu.remoteBuffers.size())
        throw planError(path + ".buffer_id", "gpu-level remote buffer " + std::to_string(g) + " out of range");
      e.where.kind = Location::Kind::Remote;
      e.where.remoteBuffer = g;
      e.where.rank = gpu.remoteBuffers[g].rank;
      e.where.type = gpu.remoteBuffers[g].type;
      break;
    }
    case BufferRef::Loc::Switch: {
      if (ref.id >= tb.switchChannels.size())
        throw planError(path + ".switch_channel_id", "switch channel " + std::to_string(ref.id) + " out of range");
      uint32_t g = tb.switchChannels[ref.id];
      const auto &sw = resolved.gpus[rank].switchChannels;
      if (g >= sw.size())
        throw planError(path + ".switch_channel_id", "gpu-level switch channel " + std::to_string(g) + " out of range");
      e.where.kind = Location::Kind::Switch;
      e.where.switchChannel = g;
      e.where.type = sw[g].bufferType;
      break;
    }
    }
    // Uneven chunks differ between ranks' scratch: a peer's entry is where the peer has it.
    const ChunkLayout &owner = layout.offsets ? layouts.at(e.where.rank) : layout;
    e.bytes = entryBytes(owner, e.where.type, ref.index, ref.size);
    if (op.tbg)
      e.bytes = tbgSlice(e.bytes, *op.tbg, layout.alignment);
    // The reference stores offsets and lengths as uint32 (plan#9); packet regions double them.
    const uint64_t limit = isPacketOp(op.type) ? (uint64_t(1) << 31) : (uint64_t(1) << 32);
    if (e.bytes.end() > limit)
      throw ExecutionError(ErrorKind::InvalidSize,
                           path.str() + ": bytes [" + std::to_string(e.bytes.offset) + ", " + std::to_string(e.bytes.end()) +
                               ") reach past 4 GiB, which the executor's 32-bit offsets cannot address");
    return e;
  }

  void lowerOp(const Op &op, const std::string &path, bool inPipeline, std::vector<LoweredOp> &out) {
    LoweredOp lo;
    lo.type = op.type;
    lo.path = path;
    lo.inPipeline = inPipeline;
    lo.channelType = op.channelType.value_or(ChannelType::None);
    if (isPacketOp(op.type))
      usesPackets = true;
    if (op.channelIds) {
      const std::vector<uint32_t> *table = lo.channelType == ChannelType::Memory ? &tb.memoryChannels
                                           : lo.channelType == ChannelType::Port ? &tb.portChannels
                                           : lo.channelType == ChannelType::Switch ? &tb.switchChannels
                                                                                   : nullptr;
      for (size_t j = 0; j < op.channelIds->size(); ++j) {
        uint32_t id = (*op.channelIds)[j];
        if (!table) {
          lo.channels.push_back(id);
          continue;
        }
        if (id >= table->size())
          throw planError(path + ".channel_ids[" + std::to_string(j) + "]",
                          "channel " + std::to_string(id) + " out of range");
        lo.channels.push_back((*table)[id]);
      }
    }
    if (op.reduceOp) {
      lo.hasReduceOp = true;
      lo.reduceOp = *op.reduceOp;
    }
    lo.semaphores = op.semaphoreIds;
    lo.barrierId = op.barrierId;
    lo.numThreadblocks = op.numThreadblocks;
    if (op.type == OpType::MultiLoadReduce) {
      // glre: load-reduce `size` chunks at `buffer_offset` of the switch channel's buffer, store
      // to the local dst_chunk. Lowered as src = [switch entry], dst = [local entry].
      if (lo.channels.empty())
        throw planError(path + ".channel_ids", "glre needs one switch channel");
      BufferRef s = BufferRef::switchRef(op.channelIds->front(), op.glreBufferOffset, op.glreSize);
      lo.src.push_back(entry(s, op, EntryPath{path, ".channel_ids", 0}));
      BufferRef d = op.glreDstChunk;
      d.loc = BufferRef::Loc::Local;
      lo.dst.push_back(entry(d, op, EntryPath{path, ".dst_chunk", -1}));
    } else {
      for (size_t j = 0; j < op.src.size(); ++j)
        lo.src.push_back(entry(op.src[j], op, EntryPath{path, ".src_buff", long(j)}));
      for (size_t j = 0; j < op.dst.size(); ++j)
        lo.dst.push_back(entry(op.dst[j], op, EntryPath{path, ".dst_buff", long(j)}));
    }
    if (op.type == OpType::Pipeline) {
      lo.unitSize = op.iterContext.unitSize;
      try {
        lo.pipelineIterations = pipelineIterations(layout, op.iterContext);
      } catch (const ExecutionError &e) {
        throw ExecutionError(e.kind(), path + ".iter_context: " + e.summary());
      }
      lo.pipelineOps = uint32_t(op.ops.size());
      out.push_back(std::move(lo));
      for (size_t j = 0; j < op.ops.size(); ++j)
        lowerOp(op.ops[j], path + ".ops[" + std::to_string(j) + "]", true, out);
      return;
    }
    out.push_back(std::move(lo));
  }
};
} // namespace

LoweredPlan lowerPlan(const Plan &plan, const ResolvedPlan &resolved, uint64_t inputBytes, uint64_t outputBytes,
                      uint64_t elementBytes) {
  std::vector<ChunkLayout> layouts;
  if (auto why = evenChunksRefusal(plan, inputBytes, outputBytes)) {
    // Our extension: cut the sizes into uneven chunks where the plan allows it (UnevenChunks.h).
    layouts = unevenChunkLayouts(plan, resolved, inputBytes, outputBytes, elementBytes, *why);
  } else {
    for (uint32_t r = 0; r < plan.gpus.size(); ++r)
      layouts.push_back(computeChunkLayout(plan, r, inputBytes, outputBytes));
  }
  return lowerPlanWith(plan, resolved, std::move(layouts));
}

LoweredPlan lowerPlanWith(const Plan &plan, const ResolvedPlan &resolved, std::vector<ChunkLayout> layouts) {
  if (layouts.size() != plan.gpus.size())
    throw ExecutionError(ErrorKind::InvalidPlan, "lowerPlanWith: " + std::to_string(layouts.size()) +
                                                     " layouts for a plan of " + std::to_string(plan.gpus.size()) +
                                                     " ranks");
  LoweredPlan out;
  out.gpus.resize(plan.gpus.size());
  for (uint32_t r = 0; r < plan.gpus.size(); ++r) {
    LoweredGpu &lg = out.gpus[r];
    lg.layout = layouts[r];
    const Gpu &gpu = plan.gpus[r];
    bool usesPackets = false;
    for (size_t t = 0; t < gpu.threadblocks.size(); ++t) {
      Lowerer lw{plan, resolved, r, layouts, lg.layout, resolved.gpus[r].threadblocks.at(t)};
      LoweredTb ltb;
      ltb.id = gpu.threadblocks[t].id;
      const std::string base = "gpus[" + std::to_string(r) + "].threadblocks[" + std::to_string(t) + "].ops[";
      for (size_t k = 0; k < gpu.threadblocks[t].ops.size(); ++k)
        lw.lowerOp(gpu.threadblocks[t].ops[k], base + std::to_string(k) + "]", false, ltb.ops);
      usesPackets = usesPackets || lw.usesPackets;
      lg.threadblocks.push_back(std::move(ltb));
    }
    lg.usesPackets = usesPackets;
    lg.scratchBytes = scratchBytes(plan, r, lg.layout, usesPackets);
    lg.scratchHalfOffset = 0;
    if (plan.useDoubleScratchBuffer) {
      // The second half starts 16-byte aligned (LL16 packets are 16-byte vector stores); the
      // allocation is both halves.
      lg.scratchHalfOffset = (lg.scratchBytes / 2 + lg.scratchBytes % 2 + 15) / 16 * 16;
      lg.scratchBytes = 2 * lg.scratchHalfOffset;
    }
  }
  return out;
}

unsigned OpCursor::settle(const std::vector<LoweredOp> &ops) {
  unsigned headers = 0;
  for (;;) {
    if (inPipe && pc == pipeEnd) {
      if (++pipeIter < pipeIters)
        pc = pipeBegin;
      else
        inPipe = false;
      continue;
    }
    if (pc >= ops.size()) {
      done = true;
      return headers;
    }
    const LoweredOp &op = ops[pc];
    if (op.type != OpType::Pipeline)
      return headers;
    ++headers;
    pipeBegin = pc + 1;
    pipeEnd = pc + 1 + op.pipelineOps;
    pipeIters = op.pipelineIterations;
    pipeIter = 0;
    unitSize = op.unitSize;
    if (pipeIters == 0 || op.pipelineOps == 0) {
      pc = pipeEnd;
    } else {
      inPipe = true;
      pc = pipeBegin;
    }
  }
}

} // namespace msccl::runtime
