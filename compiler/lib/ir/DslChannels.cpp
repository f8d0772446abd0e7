//===- DslChannels.cpp - MemoryChannel, PortChannel, SwitchChannel ----------------------===//
//
// Mirrors channel.py: argument checks in the Python order, then per tb: remote buffer
// registration, channel registration, op append (dsl#3.2).
//
//===------------------------------------------------------------------------------------===//
#include "DslImpl.h"

namespace msccl::ir {

namespace {
std::string s(int64_t v) { return std::to_string(v); }

void checkRanks(const Program &p, int64_t dst, int64_t src) {
  int64_t n = p.numRanks();
  if (src < 0 || src >= n) throw DslError("Source rank " + s(src) + " is out of bounds. Number of ranks: " + s(n));
  if (dst < 0 || dst >= n) throw DslError("Destination rank " + s(dst) + " is out of bounds. Number of ranks: " + s(n));
}

void checkSrcRank(const Chunk &src, int64_t srcRank) {
  if (src.rank != srcRank)
    throw DslError("Source chunk rank " + s(src.rank) + " does not match current channel source rank " + s(srcRank) + ".");
}
void checkDstRank(const Chunk &dst, int64_t dstRank) {
  if (dst.rank != dstRank)
    throw DslError("Dst chunk rank " + s(dst.rank) + " does not match current channel dst rank " + s(dstRank) + ".");
}
void checkSizes(const Chunk &dst, const Chunk &src) {
  if (dst.size != src.size)
    throw DslError("Destination chunk size " + s(dst.size) + " does not match source chunk size " + s(src.size) + ".");
}

/// One channel put-family / get op on tb `t` of rank `srcRank`: remote buffer, channel, op.
void emitTransfer(Program::Impl &im, OpKind kind, ChannelType ct, uint32_t channelId, int64_t srcRank,
                  const Chunk &local, const Chunk &remote, const TbTarget &t, bool isGet) {
  auto &g = im.gpu(srcRank);
  uint32_t rbGpu = g.addRemoteBuffer(remote.rank, remote.buffer, ct);
  uint32_t rbLocal = g.tb(t.tb).addRemoteBuffer(ct, rbGpu);
  uint32_t chLocal = g.tb(t.tb).addChannel(ct, channelId);
  Op &op = im.freshOp();
  op.kind = kind;
  if (isGet) {
    op.remoteSrc.push_back({remote.buffer, remote.index, remote.size, rbLocal});
    op.localDst.push_back({local.buffer, local.index, local.size});
  } else {
    op.localSrc.push_back({local.buffer, local.index, local.size});
    op.remoteDst.push_back({remote.buffer, remote.index, remote.size, rbLocal});
  }
  op.channelIds.push_back(chLocal);
  op.channelType = ct;
  op.tbg = t.tbg;
  im.addOperationCopy(srcRank, t.tb, op);
}

void emitSync(Program::Impl &im, OpKind kind, ChannelType ct, uint32_t channelId, int64_t srcRank, int64_t tb, SyncType ds) {
  uint32_t t = Program::Impl::checkTb(tb);
  uint32_t chLocal = im.gpu(srcRank).tb(t).addChannel(ct, channelId);
  Op &op = im.freshOp();
  op.kind = kind;
  op.syncChannelIds = PySet::single(chLocal);
  op.channelType = ct;
  op.dataSync = ds;
  im.addOperationCopy(srcRank, t, op);
}

// MemoryChannel/PortChannel read_put_packets (identical checks).
void readPutPackets(Program::Impl &im, ChannelType ct, uint32_t id, int64_t dstRank, int64_t srcRank, const Chunk &dst,
                    const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) {
  checkSrcRank(src, srcRank);
  if (src.buffer != BufferType::Scratch) throw DslError("Source chunk must be of type scratch.");
  checkDstRank(dst, dstRank);
  if (dst.buffer != BufferType::Scratch) throw DslError("Destination chunk must be of type scratch.");
  checkSizes(dst, src);
  for (auto &t : Program::Impl::resolveTbs(tb, g))
    emitTransfer(im, OpKind::ReadPutPackets, ct, id, srcRank, src, dst, t, false);
}
} // namespace

// --- Construction ------------------------------------------------------------------------
MemoryChannel Program::memoryChannel(int64_t dst, int64_t src) {
  checkRanks(*this, dst, src);
  auto &g = impl_->gpu(src);
  bool seen = false;
  for (auto t : g.channelTypeOrder) seen |= t == ChannelType::Memory;
  if (!seen) g.channelTypeOrder.push_back(ChannelType::Memory);
  impl_->grow(1);
  g.memoryChannelSource.push_back(impl_->currentSource());
  g.memoryConnectedTo.push_back(uint32_t(dst));
  return MemoryChannel(this, uint32_t(g.memoryConnectedTo.size() - 1), dst, src);
}

PortChannel Program::portChannel(int64_t dst, int64_t src) {
  checkRanks(*this, dst, src);
  auto &g = impl_->gpu(src);
  bool seen = false;
  for (auto t : g.channelTypeOrder) seen |= t == ChannelType::Port;
  if (!seen) g.channelTypeOrder.push_back(ChannelType::Port);
  impl_->grow(1);
  g.portChannelSource.push_back(impl_->currentSource());
  g.portConnectedTo.push_back(uint32_t(dst));
  return PortChannel(this, uint32_t(g.portConnectedTo.size() - 1), dst, src);
}

SwitchChannel Program::switchChannel(const std::vector<int64_t> &rankList, BufferType bufferType) {
  int64_t n = numRanks();
  for (int64_t r : rankList)
    if (r < 0 || r >= n) throw DslError("One or more ranks in " + pyList(rankList) + " are out of bounds. Number of ranks: " + s(n));
  impl_->grow(rankList.size());
  Impl::SwitchRec rec;
  rec.ranks = rankList;
  rec.bufferType = bufferType;
  for (int64_t r : rankList) {
    auto &g = impl_->gpu(r);
    rec.idOfRank[r] = uint32_t(g.switchChannels.size());
    g.switchChannels.push_back({bufferType, rankList});
  }
  impl_->switches.push_back(std::move(rec));
  return SwitchChannel(this, uint32_t(impl_->switches.size() - 1));
}

// --- MemoryChannel ---------------------------------------------------------------------
void MemoryChannel::signal(int64_t tb, SyncType ds, bool relaxed) const {
  auto &im = prog_->impl();
  emitSync(im, relaxed ? OpKind::RelaxedSignal : OpKind::Signal, ChannelType::Memory, id_, src_, tb, ds);
  im.countSignal(src_, dst_, ChannelType::Memory);
}

void MemoryChannel::wait(int64_t tb, SyncType ds, bool relaxed) const {
  auto &im = prog_->impl();
  emitSync(im, relaxed ? OpKind::RelaxedWait : OpKind::Wait, ChannelType::Memory, id_, src_, tb, ds);
  im.countWait(src_, dst_, ChannelType::Memory);
}

void MemoryChannel::get(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  if (dst.rank != src_)
    throw DslError("Source chunk rank " + s(dst.rank) + " does not match current channel source rank " + s(src_) + ".");
  checkDstRank(src, dst_);
  checkSizes(dst, src); // ours (channel.py's get does not compare them; put does)
  for (auto &t : Program::Impl::resolveTbs(tb, g))
    emitTransfer(prog_->impl(), OpKind::Get, ChannelType::Memory, id_, src_, dst, src, t, true);
}

void MemoryChannel::put(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  checkSrcRank(src, src_);
  checkDstRank(dst, dst_);
  checkSizes(dst, src);
  for (auto &t : Program::Impl::resolveTbs(tb, g))
    emitTransfer(prog_->impl(), OpKind::Put, ChannelType::Memory, id_, src_, src, dst, t, false);
}

void MemoryChannel::putPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  checkSrcRank(src, src_);
  checkDstRank(dst, dst_);
  if (dst.buffer != BufferType::Scratch) throw DslError("Destination chunk must be of type scratch.");
  checkSizes(dst, src);
  for (auto &t : Program::Impl::resolveTbs(tb, g))
    emitTransfer(prog_->impl(), OpKind::PutPackets, ChannelType::Memory, id_, src_, src, dst, t, false);
}

void MemoryChannel::readPutPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  msccl::ir::readPutPackets(prog_->impl(), ChannelType::Memory, id_, dst_, src_, dst, src, tb, g);
}

void MemoryChannel::reduce(const Chunk &localSrc, const std::vector<Chunk> &remoteSrcs, std::optional<int64_t> tb,
                           const ThreadBlockGroup *g, std::optional<Chunk> localDstOpt, ReduceOperationType reduceOp) const {
  const Chunk localDst = localDstOpt ? *localDstOpt : localSrc;
  if (localSrc.rank != src_)
    throw DslError("Destination chunk rank " + s(localSrc.rank) + " does not match current channel source rank " + s(src_) + ".");
  if (localDst.rank != src_) // ours (channel.py checks local_src_chunk only): the op runs and writes on the source rank
    throw DslError("Local destination chunk rank " + s(localDst.rank) + " does not match current channel source rank " +
                   s(src_) + ". MemoryChannel.reduce writes its result on the source rank: pass a chunk of rank " +
                   s(src_) + " (or leave out local_dst_chunk to reduce into local_src_chunk).");
  if (localSrc.size != localDst.size)
    throw DslError("Source chunk size " + s(localSrc.size) + " does not match destination chunk size " + s(localDst.size) + ".");
  for (auto &c : remoteSrcs) {
    if (c.rank != dst_)
      throw DslError("Source chunk rank " + s(c.rank) + " does not match current channel dst rank " + s(dst_) + ".");
    if (c.size != localSrc.size)
      throw DslError("Source chunk size " + s(c.size) + " does not match local source chunk size " + s(localSrc.size) + ".");
  }
  auto &im = prog_->impl();
  for (auto &t : Program::Impl::resolveTbs(tb, g)) {
    auto &gpu = im.gpu(src_);
    Op &op = im.freshOp();
    op.kind = remoteSrcs.empty() ? OpKind::Reduce : OpKind::ReadReduce;
    for (auto &c : remoteSrcs) {
      uint32_t rbGpu = gpu.addRemoteBuffer(c.rank, c.buffer, ChannelType::Memory);
      uint32_t rbLocal = gpu.tb(t.tb).addRemoteBuffer(ChannelType::Memory, rbGpu);
      op.remoteSrc.push_back({c.buffer, c.index, c.size, rbLocal});
    }
    op.channelIds.push_back(gpu.tb(t.tb).addChannel(ChannelType::Memory, id_));
    op.localSrc.push_back({localSrc.buffer, localSrc.index, localSrc.size});
    op.localDst.push_back({localDst.buffer, localDst.index, localDst.size});
    op.channelType = ChannelType::Memory;
    op.reduceOp = reduceOp;
    op.tbg = t.tbg;
    im.addOperationCopy(src_, t.tb, op);
  }
}

// --- PortChannel -------------------------------------------------------------------------
void PortChannel::signal(int64_t tb, SyncType ds) const {
  auto &im = prog_->impl();
  emitSync(im, OpKind::Signal, ChannelType::Port, id_, src_, tb, ds);
  im.countSignal(src_, dst_, ChannelType::Port);
}

void PortChannel::wait(int64_t tb, SyncType ds) const {
  auto &im = prog_->impl();
  emitSync(im, OpKind::Wait, ChannelType::Port, id_, src_, tb, ds);
  im.countWait(src_, dst_, ChannelType::Port);
}

void PortChannel::flush(int64_t tb, SyncType ds) const {
  emitSync(prog_->impl(), OpKind::Flush, ChannelType::Port, id_, src_, tb, ds);
}

namespace {
void portPut(Program::Impl &im, OpKind kind, uint32_t id, int64_t dstRank, int64_t srcRank, const Chunk &dst,
             const Chunk &src, int64_t tb) {
  checkSrcRank(src, srcRank);
  checkDstRank(dst, dstRank);
  if (kind == OpKind::PutPackets && dst.buffer != BufferType::Scratch) throw DslError("Destination chunk must be of type scratch.");
  checkSizes(dst, src);
  TbTarget t{Program::Impl::checkTb(tb), std::nullopt};
  emitTransfer(im, kind, ChannelType::Port, id, srcRank, src, dst, t, false);
  if (kind == OpKind::PutWithSignal || kind == OpKind::PutWithSignalAndFlush) im.countSignal(srcRank, dstRank, ChannelType::Port);
}
} // namespace

void PortChannel::put(const Chunk &dst, const Chunk &src, int64_t tb) const { portPut(prog_->impl(), OpKind::Put, id_, dst_, src_, dst, src, tb); }
void PortChannel::putWithSignal(const Chunk &dst, const Chunk &src, int64_t tb) const {
  portPut(prog_->impl(), OpKind::PutWithSignal, id_, dst_, src_, dst, src, tb);
}
void PortChannel::putWithSignalAndFlush(const Chunk &dst, const Chunk &src, int64_t tb) const {
  portPut(prog_->impl(), OpKind::PutWithSignalAndFlush, id_, dst_, src_, dst, src, tb);
}
void PortChannel::putPackets(const Chunk &dst, const Chunk &src, int64_t tb) const {
  portPut(prog_->impl(), OpKind::PutPackets, id_, dst_, src_, dst, src, tb);
}
void PortChannel::readPutPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  msccl::ir::readPutPackets(prog_->impl(), ChannelType::Port, id_, dst_, src_, dst, src, tb, g);
}

// --- SwitchChannel -------------------------------------------------------------------------
const std::vector<int64_t> &SwitchChannel::ranks() const { return prog_->impl().switches[index_].ranks; }
BufferType SwitchChannel::bufferType() const { return prog_->impl().switches[index_].bufferType; }

SwitchChannelRankView SwitchChannel::atRank(int64_t rank) const {
  auto &rec = prog_->impl().switches[index_];
  if (!rec.idOfRank.count(rank)) throw DslError("Rank " + s(rank) + " is not part of this SwitchChannel's rank group.");
  return SwitchChannelRankView(prog_, index_, rank);
}

namespace {
bool inGroup(const std::vector<int64_t> &ranks, int64_t r) {
  for (int64_t x : ranks)
    if (x == r) return true;
  return false;
}

void checkCapacity(Program::Impl &im, const Program::Impl::SwitchRec &rec, int64_t offset, int64_t size, bool scratchOnly) {
  if (offset < 0 || size < 0)
    throw DslError("Switch channel buffer_offset and size must be non-negative (got buffer_offset=" + s(offset) + ", size=" + s(size) + ").");
  const auto &c = im.ir.options.collective;
  for (int64_t r : rec.ranks) {
    int64_t cap;
    if (scratchOnly || rec.bufferType == BufferType::Scratch) cap = im.gpu(r).scratchChunks;
    else cap = rec.bufferType == BufferType::Input ? c.inputChunks : c.outputChunks;
    if (cap < offset + size)
      throw DslError("Buffer size " + s(cap) + " is smaller than required size " + s(offset + size) + " for rank " + s(r) + ".");
  }
}

void emitSwitch(Program::Impl &im, const Program::Impl::SwitchRec &rec, int64_t rank, int64_t tb, Op op) {
  uint32_t t = Program::Impl::checkTb(tb);
  uint32_t local = im.gpu(rank).tb(t).addChannel(ChannelType::Switch, rec.idOfRank.at(rank));
  op.channelIds.push_back(local);
  op.channelType = ChannelType::Switch;
  op.switchBuffer = rec.bufferType;
  im.addOperation(rank, t, std::move(op));
}
// The checks SwitchChannel reduce and broadcast share, in the Python order. Both say
// "Destination chunk" (broadcast too, for its source chunk: channel.py's wording).
void checkGroupChunk(Program::Impl &im, const Program::Impl::SwitchRec &rec, const Chunk &c, int64_t bufferOffset,
                     int64_t size) {
  if (!inGroup(rec.ranks, c.rank))
    throw DslError("Destination chunk rank " + s(c.rank) + " is not part of the rank group " + pyList(rec.ranks) + ".");
  if (c.size != size) throw DslError("Destination chunk size " + s(c.size) + " does not match the required size " + s(size) + ".");
  checkCapacity(im, rec, bufferOffset, size, false);
}
} // namespace

void SwitchChannelRankView::reduce(int64_t bufferOffset, int64_t size, const Chunk &dst, int64_t tb, ReduceOperationType reduceOp) const {
  auto &im = prog_->impl();
  auto &rec = im.switches[channel_];
  checkGroupChunk(im, rec, dst, bufferOffset, size);
  if (dst.rank != int64_t(rank_)) // ours: the op runs on the view's rank and writes its chunk there
    throw DslError("Destination chunk rank " + s(dst.rank) + " does not match the view's rank " + s(rank_) + ": at_rank(" +
                   s(rank_) + ").reduce runs on rank " + s(rank_) + " and writes a chunk of that rank.");
  Op op;
  op.kind = OpKind::MultiLoadReduce;
  op.bufferOffset = bufferOffset;
  op.switchSize = size;
  op.userChunk = dst;
  op.reduceOp = reduceOp;
  emitSwitch(im, rec, rank_, tb, std::move(op));
}

void SwitchChannelRankView::broadcast(const Chunk &src, int64_t bufferOffset, int64_t size, int64_t tb) const {
  auto &im = prog_->impl();
  auto &rec = im.switches[channel_];
  checkGroupChunk(im, rec, src, bufferOffset, size);
  if (src.rank != int64_t(rank_)) // ours: the op runs on the view's rank and reads its chunk there
    throw DslError("Source chunk rank " + s(src.rank) + " does not match the view's rank " + s(rank_) + ": at_rank(" +
                   s(rank_) + ").broadcast runs on rank " + s(rank_) + " and reads a chunk of that rank.");
  Op op;
  op.kind = OpKind::MultiStore;
  op.bufferOffset = bufferOffset;
  op.switchSize = size;
  op.userChunk = src;
  emitSwitch(im, rec, rank_, tb, std::move(op));
}

void SwitchChannelRankView::broadcastPackets(const Chunk &src, int64_t bufferOffset, int64_t size, int64_t tb) const {
  auto &im = prog_->impl();
  auto &rec = im.switches[channel_];
  if (!inGroup(rec.ranks, src.rank))
    throw DslError("Source chunk rank " + s(src.rank) + " is not part of the rank group " + pyList(rec.ranks) + ".");
  if (src.buffer != BufferType::Scratch) throw DslError("Source chunk must be of type scratch for the packet broadcast.");
  if (rec.bufferType != BufferType::Scratch) throw DslError("Destination buffer must be of type scratch for the packet broadcast.");
  if (src.size != size) throw DslError("Source chunk size " + s(src.size) + " does not match the required size " + s(size) + ".");
  if (src.rank != int64_t(rank_)) // ours, as broadcast
    throw DslError("Source chunk rank " + s(src.rank) + " does not match the view's rank " + s(rank_) + ": at_rank(" +
                   s(rank_) + ").broadcast_packets runs on rank " + s(rank_) + " and reads a chunk of that rank.");
  checkCapacity(im, rec, bufferOffset, size, true);
  Op op;
  op.kind = OpKind::MultiStorePackets;
  op.bufferOffset = bufferOffset;
  op.switchSize = size;
  op.userChunk = src;
  emitSwitch(im, rec, rank_, tb, std::move(op));
}

} // namespace msccl::ir
