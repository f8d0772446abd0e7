//===- Lowering.cpp - runtime::LoweredPlan -> device structs of one rank ----------------===//
//
// Consumes the runtime's resolved and lowered plan; produces LoweredRank (DevicePlan.h arrays)
// per rank. The per-op entry roles (which entries are packets, which locations an op needs)
// are in OpShapes.cpp; this file translates, places threadblocks by id, and checks ids,
// device limits and bounds.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/cuda/Lowering.h"
#include "LoweringInternal.h"

#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <sstream>

namespace msccl::cuda {

using namespace msccl::plan;
namespace rt = msccl::runtime;

namespace {

class RankLowering {
public:
  RankLowering(const Plan &plan, const rt::ResolvedPlan &resolved, const rt::LoweredPlan &lowered, uint32_t rank,
               ReduceOp defaultReduce)
      : plan_(plan), gpu_(plan.gpus[rank]), rg_(resolved.gpus[rank]), lg_(lowered.gpus[rank]), lowered_(lowered),
        defaultReduce_(defaultReduce) {
    out_.rank = rank;
  }

  LoweredRank run() {
    out_.chunkBytes = lg_.layout.chunkBytes;
    out_.inputBytes = lg_.layout.inputBytes;
    out_.outputBytes = lg_.layout.outputBytes;
    out_.scratchBytes = lg_.scratchBytes;
    out_.scratchHalf = lg_.scratchHalfOffset;
    if (out_.scratchHalf % 16) fail("scratch half offset " + std::to_string(out_.scratchHalf) + " is not a multiple of 16 bytes");
    out_.reuseSlotBytes = lg_.layout.reuseSlotBytes;
    out_.usesPackets = lg_.usesPackets;
    if (plan_.numThreadsPerBlock == 0 || plan_.numThreadsPerBlock > kMaxThreadsPerBlock)
      fail("num_threads_per_block " + std::to_string(plan_.numThreadsPerBlock) + " must be in 1..1024");
    out_.numThreadsPerBlock = plan_.numThreadsPerBlock;
    out_.numMemoryChannels = rg_.memoryChannels.size();
    out_.numPortChannels = rg_.portChannels.size();
    out_.numSwitchChannels = rg_.switchChannels.size();
    out_.numRemoteBuffers = gpu_.remoteBuffers.size();
    out_.numSemaphores = gpu_.semaphores.size();
    if (out_.numPortChannels > kMaxPortChannels) fail("more than 1024 port channels");
    if (out_.numRemoteBuffers > kMaxRemoteBuffers) fail("more than 16384 remote buffers");
    if (out_.numSemaphores > kMaxSemaphores) fail("more than 256 semaphores");
    for (const rt::ResolvedSwitch &sw : rg_.switchChannels) {
      if (sw.ranks.size() > kMaxSwitchMembers)
        fail("switch channel group of " + std::to_string(sw.ranks.size()) + " ranks exceeds " + std::to_string(kMaxSwitchMembers));
      std::vector<uint64_t> halves;
      for (uint32_t r : sw.ranks) {
        if (r >= plan_.gpus.size()) fail("switch channel group names rank " + std::to_string(r) + " outside the plan");
        halves.push_back(ownerHalf(r, sw.bufferType));
      }
      out_.switchScratchHalf.push_back(std::move(halves));
    }
    // A peer's scratch is addressed with the peer's own half (its scratch size may differ).
    for (const RemoteBuffer &rb : gpu_.remoteBuffers) {
      if (rb.rank >= plan_.gpus.size()) fail("remote buffer names rank " + std::to_string(rb.rank) + " outside the plan");
      out_.remoteScratchHalf.push_back(ownerHalf(rb.rank, rb.type));
    }
    placeThreadblocks();
    return std::move(out_);
  }

private:
  [[noreturn]] void fail(const std::string &msg) const {
    std::ostringstream os;
    os << "rank " << out_.rank;
    if (!path_.empty()) os << " (" << path_ << ")";
    os << ": " << msg;
    throw LoweringError(os.str());
  }

  void placeThreadblocks() {
    const size_t n = lg_.threadblocks.size();
    std::vector<const rt::LoweredTb *> byId(n, nullptr);
    for (const rt::LoweredTb &tb : lg_.threadblocks) {
      if (tb.id >= n || byId[tb.id])
        fail("threadblock ids must be 0.." + std::to_string(n - 1) + " without repeats (found id " + std::to_string(tb.id) + ")");
      byId[tb.id] = &tb;
    }
    out_.threadblocks.resize(n);
    for (size_t b = 0; b < n; ++b) {
      DevThreadblock &d = out_.threadblocks[b];
      d.tbId = b;
      d.opBegin = out_.ops.size();
      d.entryBegin = out_.entries.size();
      for (const rt::LoweredOp &op : byId[b]->ops) {
        path_ = op.path;
        lowerOp(op);
      }
      path_.clear();
      d.nOps = out_.ops.size() - d.opBegin;
      d.nEntries = out_.entries.size() - d.entryBegin;
      if (d.nOps > kMaxOpsPerThreadblock) fail("threadblock " + std::to_string(b) + " has more than 65535 ops");
    }
  }

  /// SO of even-flag launches of rank r's buffer `t` (0 unless scratch with double buffering).
  uint64_t ownerHalf(uint32_t r, BufferType t) const {
    return t == BufferType::Scratch ? lowered_.gpus[r].scratchHalfOffset : 0;
  }

  /// Accessible bytes of buffer `t` of rank `r` (one scratch half with double buffering).
  uint64_t bufferSize(uint32_t r, BufferType t) const {
    const rt::LoweredGpu &g = lowered_.gpus[r];
    if (t == BufferType::Input) return g.layout.inputBytes;
    if (t == BufferType::Output) return g.layout.outputBytes;
    return plan_.useDoubleScratchBuffer ? g.scratchHalfOffset : g.scratchBytes;
  }

  DevEntry lowerEntry(const rt::LoweredEntry &le) {
    DevEntry e;
    e.offset = le.bytes.offset;
    e.length = le.bytes.length;
    e.bufferType = (uint8_t)le.where.type;
    switch (le.where.kind) {
    case rt::Location::Kind::Local: e.base = (uint8_t)le.where.type; break;
    case rt::Location::Kind::Remote:
      if (le.where.remoteBuffer >= gpu_.remoteBuffers.size()) fail("remote buffer out of range");
      e.base = (uint8_t)DevBase::Remote;
      e.id = le.where.remoteBuffer;
      break;
    case rt::Location::Kind::Switch:
      if (le.where.switchChannel >= rg_.switchChannels.size()) fail("switch channel out of range");
      e.base = (uint8_t)DevBase::Switch;
      e.id = le.where.switchChannel;
      break;
    }
    return e;
  }

  uint64_t targetSize(const DevEntry &e) const {
    BufferType t = (BufferType)e.bufferType;
    if (e.base <= (uint8_t)DevBase::Scratch) return bufferSize(out_.rank, t);
    if (e.base == (uint8_t)DevBase::Remote) return bufferSize(gpu_.remoteBuffers[e.id].rank, t);
    uint64_t m = UINT64_MAX;
    for (uint32_t r : rg_.switchChannels[e.id].ranks) m = std::min(m, bufferSize(r, t));
    return m;
  }

  /// End of the bytes a plain entry touches: offset + length, or, for a scratch entry of an op
  /// inside a pipeline with reuse_resources, the furthest end of its wrapped windows.
  uint64_t plainEnd(const DevEntry &e, bool windowed) const {
    if (!windowed || e.bufferType != (uint8_t)BufferType::Scratch || out_.reuseSlotBytes == 0) return e.offset + e.length;
    uint64_t end = e.offset;
    for (uint64_t it = 0; it < pipeIterations_; ++it) {
      uint64_t off = 0, len = 0;
      pipelineWindowBytes(e.offset, e.length, true, it * pipeUnit_, pipeUnit_, out_.reuseSlotBytes, off, len);
      if (len == 0) break;
      end = std::max(end, off + len);
    }
    return end;
  }

  void checkBounds(const DevEntry &e, bool packets, bool windowed, const char *side, size_t k) {
    if (packets && (e.offset % 8 || e.length % 8))
      fail(std::string(side) + "[" + std::to_string(k) + "]: packet payload offset " + std::to_string(e.offset) + " and length " +
           std::to_string(e.length) + " must be multiples of 8 bytes");
    uint64_t end = packets ? 2 * (e.offset + e.length) : plainEnd(e, windowed);
    uint64_t size = targetSize(e);
    if (e.length && end > size) {
      static const char *names[] = {"input", "output", "scratch"};
      std::ostringstream os;
      os << side << "[" << k << "]: bytes [" << (packets ? 2 * e.offset : e.offset) << ", " << end << ")"
         << (packets ? " (packets)" : "") << " exceed the "
         << (e.base == (uint8_t)DevBase::Remote ? "peer's " : e.base == (uint8_t)DevBase::Switch ? "switch group's " : "")
         << names[e.bufferType % 3] << " buffer of " << size << " bytes";
      fail(os.str());
    }
  }

  void setIds(DevOp &d, const std::vector<uint32_t> &ids, unsigned limit, const char *what) {
    if (ids.size() > kMaxIdsPerOp) fail(std::string("more than 16 ") + what);
    for (uint32_t id : ids)
      if (id >= limit) fail(std::string(what) + " " + std::to_string(id) + " out of range (rank has " + std::to_string(limit) + ")");
    d.nIds = ids.size();
    std::copy(ids.begin(), ids.end(), d.ids);
  }

  unsigned channelCount(ChannelType ct) const {
    return ct == ChannelType::Memory ? out_.numMemoryChannels
           : ct == ChannelType::Port ? out_.numPortChannels
           : ct == ChannelType::Switch ? out_.numSwitchChannels : 0;
  }

  void lowerOp(const rt::LoweredOp &op) {
    DevOp d;
    d.type = (uint8_t)op.type;
    d.channelType = (uint8_t)op.channelType;
    d.reduceOp = (uint8_t)(op.hasReduceOp ? op.reduceOp : defaultReduce_);
    const ChannelType ct = op.channelType;
    switch (opShape(op.type)) {
    case OpShape::Nop: break;
    case OpShape::Sync:
      if (ct == ChannelType::Memory || ct == ChannelType::Port) setIds(d, op.channels, channelCount(ct), "channel id");
      if (op.type == OpType::Flush && ct != ChannelType::Port) d.nIds = 0; // only port channels flush
      break;
    case OpShape::Sem: setIds(d, op.semaphores, out_.numSemaphores, "semaphore id"); break;
    case OpShape::Barrier:
      if (op.barrierId >= kMaxBarriers) fail("barrier_id " + std::to_string(op.barrierId) + " must be < 16");
      if (op.numThreadblocks == 0 || op.numThreadblocks > lg_.threadblocks.size())
        fail("barrier num_threadblocks " + std::to_string(op.numThreadblocks) + " must be in 1.." + std::to_string(lg_.threadblocks.size()));
      d.barrierId = op.barrierId;
      d.numThreadblocks = op.numThreadblocks;
      break;
    case OpShape::Pipeline:
      if (op.unitSize == 0 || op.unitSize % 4 != 0)
        fail("pipeline unit_size " + std::to_string(op.unitSize) + " must be a positive multiple of 4 bytes");
      if (op.pipelineIterations > UINT32_MAX) fail("pipeline has more than 2^32 iterations");
      if (op.pipelineOps > 65535) fail("pipeline has more than 65535 ops");
      d.nIterations = op.pipelineIterations;
      d.unitSize = op.unitSize;
      pipeIterations_ = op.pipelineIterations;
      pipeUnit_ = op.unitSize;
      d.nInner = op.pipelineOps;
      break;
    case OpShape::Data:
    case OpShape::GroupLoadReduce: {
      if (op.src.size() > kMaxEntriesPerSide || op.dst.size() > kMaxEntriesPerSide) fail("more than 16 src or dst entries");
      if (ct == ChannelType::Port) setIds(d, op.channels, out_.numPortChannels, "channel id");
      // pws/pwsf over memory: a put, then a release signal per listed channel (as the CPU executor).
      if (ct == ChannelType::Memory && (op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush))
        setIds(d, op.channels, out_.numMemoryChannels, "channel id");
      d.entryBegin = out_.entries.size();
      d.nSrc = op.src.size();
      d.nDst = op.dst.size();
      std::vector<DevEntry> src, dst;
      for (const rt::LoweredEntry &e : op.src) src.push_back(lowerEntry(e));
      for (const rt::LoweredEntry &e : op.dst) dst.push_back(lowerEntry(e));
      std::string why = checkOpShape(op.type, ct, src, dst, d.nIds);
      if (!why.empty()) fail(why);
      const bool windowed = op.inPipeline && rt::honoursPipeline(op.type);
      for (size_t k = 0; k < src.size(); ++k) checkBounds(src[k], entryIsPacket(op.type, ct, true, k), windowed, "src_buff", k);
      for (size_t k = 0; k < dst.size(); ++k) checkBounds(dst[k], entryIsPacket(op.type, ct, false, k), windowed, "dst_buff", k);
      out_.entries.insert(out_.entries.end(), src.begin(), src.end());
      out_.entries.insert(out_.entries.end(), dst.begin(), dst.end());
      break;
    }
    }
    out_.ops.push_back(d);
  }

  const Plan &plan_;
  const Gpu &gpu_;
  const rt::ResolvedGpu &rg_;
  const rt::LoweredGpu &lg_;
  const rt::LoweredPlan &lowered_;
  ReduceOp defaultReduce_;
  LoweredRank out_;
  std::string path_;
  uint64_t pipeIterations_ = 0, pipeUnit_ = 0; ///< the pipeline whose inner ops are being lowered
};

} // namespace

LoweredRank lowerRank(const Plan &plan, const rt::ResolvedPlan &resolved, const rt::LoweredPlan &lowered, uint32_t rank,
                      ReduceOp defaultReduce) {
  if (rank >= plan.gpus.size() || rank >= resolved.gpus.size() || rank >= lowered.gpus.size())
    throw LoweringError("rank " + std::to_string(rank) + " is not in the plan (" + std::to_string(plan.gpus.size()) + " gpus)");
  RankLowering l(plan, resolved, lowered, rank, defaultReduce);
  return l.run();
}

std::vector<LoweredRank> lowerForDevice(const Plan &plan, uint64_t inputBytes, uint64_t outputBytes, ReduceOp defaultReduce,
                                        uint64_t elementBytes) {
  if (plan.gpus.empty()) throw LoweringError("the plan has no gpus");
  rt::ResolvedPlan resolved = rt::resolvePlan(plan);
  rt::LoweredPlan lowered = rt::lowerPlan(plan, resolved, inputBytes, outputBytes, elementBytes);
  std::vector<LoweredRank> out;
  for (uint32_t r = 0; r < plan.gpus.size(); ++r) out.push_back(lowerRank(plan, resolved, lowered, r, defaultReduce));
  return out;
}

} // namespace msccl::cuda
