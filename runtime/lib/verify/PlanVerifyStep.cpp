//===- PlanVerifyStep.cpp - The static verifier: one op of one threadblock ----------------===//
//
// Verifier::step: the reads, writes and synchronisation of one op, with the address and entry
// resolution it calls for every access (one unit, so they inline: PlanVerifyInternal.h). step
// resolves the op (Verifier::Step) and calls the handler its op table row names in the Verify
// column (PlanEnums.def): synchronisation (barrier, signal, wait, flush, semaphores), plain data
// (put/get, copy/reduce, switch ops) and packets (out, in, reduce). The switch is expanded from
// the table, so a new row without a Verify handler, or naming one this file lacks, does not
// build; an op code outside the table is reported as unsupported, never passed silently.
//
//===------------------------------------------------------------------------------------===//
#include "PlanVerifyInternal.h"

namespace msccl::verify::detail {
using namespace msccl::plan;
using runtime::CollectiveKind;

uint64_t Verifier::address(uint32_t rank, BufferType type, uint64_t unit, uint32_t launch, bool &ok) const {
  const RankRun &rr = ranks_[rank];
  ok = true;
  switch (type) {
  case BufferType::Input:
    if (unit >= rr.inUnits) break;
    return rr.inBase + unit;
  case BufferType::Output:
    if (unit >= rr.outUnits) break;
    return rr.outBase + unit;
  case BufferType::Scratch:
    if (unit >= rr.scrUnits) break;
    return rr.scrBase[launch % 2] + unit;
  }
  ok = false;
  return 0;
}

bool Verifier::resolveEntry(const TbRun &tb, const Op &op, const BufferRef &bref, Ent &e) const {
  const Gpu &gpu = plan_.gpus[tb.rank];
  const auto &rtb = resolved_.gpus[tb.rank].threadblocks[tb.tb];
  e.rank = tb.rank;
  switch (bref.loc) {
  case BufferRef::Loc::Local: e.type = bref.type; break;
  case BufferRef::Loc::Remote: {
    ChannelType ct = op.channelType.value_or(ChannelType::None);
    const auto *table = ct == ChannelType::Memory ? &rtb.memoryBuffers : ct == ChannelType::Port ? &rtb.portBuffers : nullptr;
    if (!table || bref.id >= table->size() || (*table)[bref.id] >= gpu.remoteBuffers.size())
      return false;
    const RemoteBuffer &rb = gpu.remoteBuffers[(*table)[bref.id]];
    e.rank = rb.rank;
    e.type = rb.type;
    break;
  }
  case BufferRef::Loc::Switch: {
    if (bref.id >= rtb.switchChannels.size())
      return false;
    const auto &sw = resolved_.gpus[tb.rank].switchChannels.at(rtb.switchChannels[bref.id]);
    e.sw = true;
    e.members = &sw.ranks;
    e.type = sw.bufferType;
    break;
  }
  }
  e.lo = bref.index * U_;
  e.hi = (bref.index + bref.size) * U_;
  if (op.tbg && op.tbg->tbgSize > 1) {
    uint64_t len = e.hi - e.lo, G = op.tbg->tbgSize, t = op.tbg->tbId;
    e.hi = e.lo + (t + 1) * len / G;
    e.lo = e.lo + t * len / G;
  }
  return true;
}

/// The op that step() runs and what its handlers share: where it runs, its channel type, its
/// resolved entries (data ops) and the accessors the handlers read and write memory and signal
/// through (each access is recorded for the race checker).
struct Verifier::Step {
  Verifier &ver;
  TbRun &tb;
  const FlatOp &fo;
  const Op &op;
  RankRun &rr;
  const uint32_t L; ///< The launch.
  const ChannelType ct;
  const bool portProxy; ///< Over a port channel the host proxy moves the data.
  const std::vector<uint32_t> &chanTable;
  std::vector<Ent> src, dst;
  uint32_t relIdx = kNone; ///< Packet ops: this op's released clock (relPool_), made at its first packet write.

  Step(Verifier &v, TbRun &t)
      : ver(v), tb(t), fo(t.ops[t.pc]), op(*fo.op), rr(v.ranks_[t.rank]), L(rr.launch),
        ct(op.channelType.value_or(ChannelType::None)), portProxy(ct == ChannelType::Port && isProxyOp(op.type)),
        chanTable(ct == ChannelType::Memory ? v.resolved_.gpus[t.rank].threadblocks[t.tb].memoryChannels
                                            : v.resolved_.gpus[t.rank].threadblocks[t.tb].portChannels) {}

  uint32_t owner(const Ent &e) const { return e.rank; }
  uint32_t gpuChannel(uint32_t local) const { return local < chanTable.size() ? chanTable[local] : kNone; }
  /// The flag a packet written in this launch carries.
  uint32_t flag() const { return L + 1; }
  const std::vector<runtime::ResolvedChannel> &channels() const {
    return ct == ChannelType::Memory ? ver.resolved_.gpus[tb.rank].memoryChannels
                                     : ver.resolved_.gpus[tb.rank].portChannels;
  }
  void entries(const std::vector<BufferRef> &v, std::vector<Ent> &out, bool &ok) {
    for (const BufferRef &b : v) {
      Ent e;
      if (!ver.resolveEntry(tb, op, b, e))
        ok = false;
      out.push_back(e);
    }
  }
  void oob(const Ent &e, uint32_t rank) {
    ver.fail(FindingKind::Plan, ver.opRefs_[fo.id].path,
             ver.opText(fo.id, &op) + " accesses rank " + std::to_string(rank) + "'s " + bufferWord(e.type) +
                 " chunks [" + std::to_string(e.lo / ver.U_) + ", " + std::to_string((e.hi + ver.U_ - 1) / ver.U_) +
                 ") outside the buffer",
             {ver.ref(fo.id, L)});
  }
  /// Plain read/write of unit k of entry e on rank `rank`.
  uint64_t plainAddr(const Ent &e, uint32_t rank, uint64_t k, bool write, bool proxy, bool &good) {
    uint64_t a = ver.address(rank, e.type, e.lo + k, L, good);
    if (!good)
      return 0;
    ver.access(&tb, tb.actor, fo.id, L, proxy, write, false, rank, e.type, e.lo + k, a);
    if (write) { // every plain write goes through here: remember who wrote the value
      ver.plainWriter_[a] = fo.id;
      ver.plainWriterLaunch_[a] = uint8_t(L);
    }
    return a;
  }
  uint64_t pktAddr(const Ent &e, uint32_t rank, uint64_t k, bool write, bool proxy, bool &good) {
    uint64_t a = ver.address(rank, e.type, e.lo + k, L, good);
    if (!good)
      return 0;
    ver.access(&tb, tb.actor, fo.id, L, proxy, write, true, rank, e.type, e.lo + k, a);
    return a;
  }
  void signalOne(uint32_t local, bool data, bool withCurrent);
  void proxyBegin() {
    if (!portProxy || !ver.opt_.races)
      return;
    uint32_t p = ver.proxyOf(tb.actor);
    ver.joinRelease(ver.clk(p), tb);
    ver.clk(p)[p]++;
  }
  /// Whether every packet of `e` carries this launch's flag (else tb.blockedOn says which not).
  bool readyAll(const Ent &e);
  bool pktRead(const Ent &e, uint64_t k, uint32_t &v);
  bool pktWrite(const Ent &e, uint32_t rank, uint64_t k, uint32_t v, bool proxy);
  bool plainRead(const Ent &e, uint64_t k, uint32_t &v) {
    bool good = true;
    uint64_t a = plainAddr(e, owner(e), k, false, false, good);
    if (!good) { oob(e, owner(e)); return false; }
    v = ver.plainVal_[a];
    return true;
  }
  bool plainWrite(const Ent &e, uint64_t k, uint32_t v) {
    bool good = true;
    uint64_t a = plainAddr(e, owner(e), k, true, false, good);
    if (!good) { oob(e, owner(e)); return false; }
    ver.plainVal_[a] = v;
    return true;
  }
};

void Verifier::Step::signalOne(uint32_t local, bool data, bool withCurrent) {
  if (ct != ChannelType::Memory && ct != ChannelType::Port)
    return;
  uint32_t c = gpuChannel(local);
  const auto &list = channels();
  if (c == kNone || c >= list.size() || list[c].peerChannel == runtime::kNoChannel) {
    ver.fail(FindingKind::Deadlock, ver.opRefs_[fo.id].path,
             ver.opText(fo.id, &op) + " signals a channel whose peer declares no partner channel",
             {ver.ref(fo.id, L)});
    return;
  }
  RankRun &peer = ver.ranks_[list[c].peer];
  (ct == ChannelType::Memory ? peer.memSignals : peer.portSignals)[list[c].peerChannel]++;
  auto &fifo = (ct == ChannelType::Memory ? peer.memFifo : peer.portFifo)[list[c].peerChannel];
  if (!ver.opt_.races) {
    fifo.emplace_back();
    return;
  }
  RankRun::Msg msg;
  // Even a relaxed signal is sent by a running kernel: it tells that this rank's kernel has
  // started (its host clock), so relaxed entry handshakes work.
  msg.ctrlRank = tb.rank;
  msg.ctrlLaunch = rr.launch;
  if (data || ver.opt_.relaxedOrdersData) {
    msg.data = ver.releaseClock(tb, withCurrent);
    if (ct == ChannelType::Port)
      join(msg.data, ver.clk(ver.proxyOf(tb.actor)));
  }
  fifo.push_back(std::move(msg));
}

bool Verifier::Step::readyAll(const Ent &e) {
  for (uint64_t k = 0; k < e.len(); ++k) {
    bool g;
    uint64_t a = ver.address(owner(e), e.type, e.lo + k, L, g);
    if (!g)
      return true; // reported when accessed
    if (ver.pktFlag_[a] != flag()) {
      tb.blockedOn = "waits for packets of rank " + std::to_string(owner(e)) + "'s " +
                     ver.unitName(e.type, e.lo + k) + " (launch " + std::to_string(L) + ")";
      return false;
    }
  }
  return true;
}

bool Verifier::Step::pktRead(const Ent &e, uint64_t k, uint32_t &v) {
  bool g;
  uint64_t a = pktAddr(e, owner(e), k, false, false, g);
  if (!g) { oob(e, owner(e)); return false; }
  // The packet's flag orders its payload: acquire the writer's clock.
  const Access &w = ver.pktShadow_[a].w;
  if (ver.opt_.races && w.actor != kNone && ver.pktRel_[a] != kNone) {
    // Flags order each packet's payload: the reader acquires the clock the writer released
    // with it (at once, per op, as RaceCheck.h), including what the writer had acquired.
    join(ver.clk(tb.actor), ver.relPool_[ver.pktRel_[a]]);
  }
  v = ver.pktVal_[a];
  return true;
}

bool Verifier::Step::pktWrite(const Ent &e, uint32_t rank, uint64_t k, uint32_t v, bool proxy) {
  bool g;
  uint64_t a = pktAddr(e, rank, k, true, proxy, g);
  if (!g) { oob(e, rank); return false; }
  ver.pktVal_[a] = v;
  ver.pktFlag_[a] = flag();
  if (ver.opt_.races) {
    if (relIdx == kNone) {
      Clock c = ver.releaseClock(tb, true);
      if (proxy)
        join(c, ver.clk(ver.proxyOf(tb.actor)));
      uint32_t &last = ver.lastRel_[tb.actor];
      if (last != kNone && ver.relPool_[last] == c)
        relIdx = last;
      else {
        ver.relPool_.push_back(std::move(c));
        relIdx = last = uint32_t(ver.relPool_.size() - 1);
      }
    }
    ver.pktRel_[a] = relIdx;
  }
  return true;
}

// --- The dispatch: the op table's Verify column (PlanEnums.def) ------------------------------

bool Verifier::stepNop(Step &s) {
  nop(s.tb);
  return true;
}
bool Verifier::stepFlush(Step &s) {
  if (opt_.races)
    acquire(s.tb, clk(proxyOf(s.tb.actor)));
  return true;
}
bool Verifier::stepPipeline(Step &) { return true; } // lowered into its ops (plan#8.6)

bool Verifier::step(TbRun &tb) {
  Step s(*this, tb);
  // Data ops resolve their entries first: the handlers see them in s.src / s.dst.
  if (opHas(s.op.type, optrait::Data) && !resolveData(s))
    return true;
  switch (s.op.type) {
#define MSCCL_OP(Enum, Json, Shape, Executable, Channels, Traits, Src, Dst, Length, Cpu, Cuda, Verify, ...)        \
  case OpType::Enum:                                                                                               \
    return step##Verify(s);
#include "msccl/plan/PlanEnums.def"
  }
  // An op type outside the table (a corrupt value): never a silent no-op, so the plan is not
  // proven.
  fail(FindingKind::Unsupported, opRefs_[s.fo.id].path,
       "the static verifier has no model of op `" + std::string(opName(s.op.type)) +
           "`: its reads, writes and syncs are not checked, so the plan is not proven",
       {ref(s.fo.id, s.L)});
  return true;
}

bool Verifier::resolveData(Step &s) {
  const Op &op = s.op;
  bool ok = true;
  if (op.type == OpType::MultiLoadReduce) {
    BufferRef b = BufferRef::switchRef(op.channelIds && !op.channelIds->empty() ? op.channelIds->front() : 0,
                                       op.glreBufferOffset, op.glreSize);
    Ent e;
    ok = resolveEntry(s.tb, op, b, e);
    s.src.push_back(e);
    BufferRef d = op.glreDstChunk;
    d.loc = BufferRef::Loc::Local;
    e = Ent{};
    ok = resolveEntry(s.tb, op, d, e) && ok;
    s.dst.push_back(e);
  } else {
    s.entries(op.src, s.src, ok);
    s.entries(op.dst, s.dst, ok);
  }
  if (!ok) {
    fail(FindingKind::Plan, opRefs_[s.fo.id].path, opText(s.fo.id, &op) + " names a buffer that resolves to nothing",
         {ref(s.fo.id, s.L)});
    return false;
  }
  return !s.src.empty() && !s.dst.empty(); // validated shapes always have both
}

// --- Synchronisation ---------------------------------------------------------------------------

bool Verifier::stepBarrier(Step &s) {
  TbRun &tb = s.tb;
  const Op &op = s.op;
  if (op.numThreadblocks <= 1) {
    nop(tb);
    return true;
  }
  BarrierState &b = s.rr.barriers[op.barrierId];
  if (!tb.arrived) {
    if (b.arrived == 0)
      b.expected = op.numThreadblocks;
    tb.arrived = true;
    tb.barrierGen = b.generation;
    nop(tb);
    join(b.clocks[b.generation], clk(tb.actor));
    if (++b.arrived == b.expected) {
      b.arrived = 0;
      b.generation++;
    }
  }
  if (b.generation == tb.barrierGen) {
    tb.blockedOn = "waits at barrier " + std::to_string(op.barrierId) + " (" + std::to_string(b.arrived) + " of " +
                   std::to_string(b.expected) + " threadblocks arrived)";
    return false;
  }
  join(clk(tb.actor), b.clocks[tb.barrierGen]);
  nop(tb);
  tb.arrived = false;
  return true;
}

bool Verifier::stepSignal(Step &s) {
  if (s.op.channelIds)
    for (uint32_t c : *s.op.channelIds)
      s.signalOne(c, s.ct == ChannelType::Port || s.op.type != OpType::RelaxedSignal, false);
  return true;
}

bool Verifier::stepWait(Step &s) {
  TbRun &tb = s.tb;
  const Op &op = s.op;
  RankRun &rr = s.rr;
  const ChannelType ct = s.ct;
  if (ct != ChannelType::Memory && ct != ChannelType::Port)
    return true;
  auto &sig = ct == ChannelType::Memory ? rr.memSignals : rr.portSignals;
  auto &wt = ct == ChannelType::Memory ? rr.memWaits : rr.portWaits;
  auto &fifo = ct == ChannelType::Memory ? rr.memFifo : rr.portFifo;
  const auto &list = s.channels();
  const size_t nch = op.channelIds ? op.channelIds->size() : 0;
  while (tb.cursor < nch) {
    uint32_t c = s.gpuChannel((*op.channelIds)[tb.cursor]);
    if (c == kNone || c >= sig.size())
      return true;
    if (sig[c] > wt[c]) {
      wt[c]++;
      if (!fifo[c].empty()) {
        const RankRun::Msg &msg = fifo[c].front();
        const bool ordersData = ct == ChannelType::Port || op.type != OpType::RelaxedWait || opt_.relaxedOrdersData;
        // A relaxed wait acquires no data, only that the peer's kernel runs (docs/verification.md).
        if (ordersData && !msg.data.empty())
          acquire(tb, msg.data); // includes the signaller's kernel start
        else if (msg.ctrlRank != kNone)
          acquire(tb, hostStart_[msg.ctrlRank][msg.ctrlLaunch]);
        fifo[c].pop_front();
      }
      tb.cursor++;
      continue;
    }
    tb.blockedOn = "waits for a signal on " + std::string(channelTypeName(ct)) + " channel " + std::to_string(c) +
                   " from rank " + std::to_string(list[c].peer) + " (received " + std::to_string(sig[c]) +
                   ", consumed " + std::to_string(wt[c]) + ")";
    return false;
  }
  tb.cursor = 0;
  return true;
}

bool Verifier::stepSemAcquire(Step &s) {
  TbRun &tb = s.tb;
  const Op &op = s.op;
  RankRun &rr = s.rr;
  if (!tb.arrived) {
    tb.arrived = true;
    tb.semOld.clear();
    for (uint32_t id : op.semaphoreIds)
      tb.semOld.push_back(rr.sems.at(id)--);
    tb.cursor = 0;
  }
  while (tb.cursor < op.semaphoreIds.size()) {
    uint32_t id = op.semaphoreIds[tb.cursor];
    int64_t old = tb.semOld[tb.cursor];
    if (old > 0 || rr.sems[id] >= old) {
      tb.cursor++;
      continue;
    }
    tb.blockedOn = "waits to acquire semaphore " + std::to_string(id);
    return false;
  }
  for (uint32_t id : op.semaphoreIds)
    acquire(tb, rr.semClocks[id]);
  tb.cursor = 0;
  tb.arrived = false;
  return true;
}

bool Verifier::stepSemRelease(Step &s) {
  for (uint32_t id : s.op.semaphoreIds) {
    if (opt_.races)
      joinRelease(s.rr.semClocks.at(id), s.tb);
    s.rr.sems.at(id)++;
  }
  return true;
}

// --- Plain data --------------------------------------------------------------------------------

bool Verifier::stepPutGet(Step &s) {
  const Op &op = s.op;
  const std::vector<Ent> &src = s.src, &dst = s.dst;
  bool good = true;
  s.proxyBegin();
  const bool isGet = op.type == OpType::Get;
  const size_t n = isGet ? src.size() : dst.size();
  for (size_t i = 0; i < n && i < src.size() && i < dst.size(); ++i) {
    uint64_t len = isGet ? src[i].len() : dst[i].len();
    std::vector<uint32_t> tmp(len);
    for (uint64_t k = 0; k < len; ++k) {
      uint64_t a = s.plainAddr(src[i], s.owner(src[i]), k, false, s.portProxy, good);
      if (!good) { s.oob(src[i], s.owner(src[i])); return true; }
      tmp[k] = plainVal_[a];
    }
    for (uint64_t k = 0; k < len; ++k) {
      uint64_t a = s.plainAddr(dst[i], s.owner(dst[i]), k, true, s.portProxy, good);
      if (!good) { s.oob(dst[i], s.owner(dst[i])); return true; }
      plainVal_[a] = tmp[k];
    }
    if ((op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush) && op.channelIds &&
        i < op.channelIds->size())
      s.signalOne((*op.channelIds)[i], true, s.ct == ChannelType::Memory);
  }
  if (op.type == OpType::PutWithSignalAndFlush && s.ct == ChannelType::Port && opt_.races)
    acquire(s.tb, clk(proxyOf(s.tb.actor)));
  return true;
}

bool Verifier::stepCopyReduce(Step &s) {
  const std::vector<Ent> &src = s.src, &dst = s.dst;
  bool good = true;
  const uint64_t len = src[0].len();
  std::vector<uint32_t> acc(len, kUninit);
  for (size_t j = 0; j < src.size(); ++j)
    for (uint64_t k = 0; k < len; ++k) {
      uint64_t a = s.plainAddr(src[j], s.owner(src[j]), k, false, false, good);
      if (!good) { s.oob(src[j], s.owner(src[j])); return true; }
      acc[k] = j == 0 ? plainVal_[a] : vals_.reduce(acc[k], plainVal_[a]);
    }
  for (size_t j = 0; j < dst.size(); ++j)
    for (uint64_t k = 0; k < len; ++k) {
      uint64_t a = s.plainAddr(dst[j], s.owner(dst[j]), k, true, false, good);
      if (!good) { s.oob(dst[j], s.owner(dst[j])); return true; }
      plainVal_[a] = acc[k];
    }
  return true;
}

/// Switch (NVLS) ops: load (and reduce) from every member or one rank, store to every member.
bool Verifier::stepSwitch(Step &s) {
  bool good = true;
  const Ent &se = s.src[0];
  const uint64_t len = se.len();
  std::vector<uint32_t> acc(len, kUninit);
  std::vector<uint32_t> srcRanks = se.sw ? *se.members : std::vector<uint32_t>{se.rank};
  if (s.op.type == OpType::MultiStore)
    srcRanks = {se.rank};
  for (size_t j = 0; j < srcRanks.size(); ++j)
    for (uint64_t k = 0; k < len; ++k) {
      uint64_t a = s.plainAddr(se, srcRanks[j], k, false, false, good);
      if (!good) { s.oob(se, srcRanks[j]); return true; }
      acc[k] = j == 0 ? plainVal_[a] : vals_.reduce(acc[k], plainVal_[a]);
    }
  const Ent &de = s.dst[0];
  std::vector<uint32_t> dstRanks = de.sw ? *de.members : std::vector<uint32_t>{de.rank};
  for (uint32_t r : dstRanks)
    for (uint64_t k = 0; k < len; ++k) {
      uint64_t a = s.plainAddr(de, r, k, true, false, good);
      if (!good) { s.oob(de, r); return true; }
      plainVal_[a] = acc[k];
    }
  return true;
}

// --- Packets -----------------------------------------------------------------------------------

/// Plain data out as packets (copy or put to peers).
bool Verifier::stepPacketsOut(Step &s) {
  const std::vector<Ent> &src = s.src, &dst = s.dst;
  s.proxyBegin();
  const size_t n = s.op.type == OpType::CopyPackets ? 1 : std::min(src.size(), dst.size());
  for (size_t i = 0; i < n; ++i)
    for (uint64_t k = 0; k < src[i].len(); ++k) {
      uint32_t v;
      if (!s.plainRead(src[i], k, v) || !s.pktWrite(dst[i], s.owner(dst[i]), k, v, s.portProxy))
        return true;
    }
  return true;
}

/// Packets in: unpacked to plain data, forwarded as packets to peers or to switch members.
bool Verifier::stepPacketsIn(Step &s) {
  const std::vector<Ent> &src = s.src, &dst = s.dst;
  const OpType type = s.op.type;
  if (!s.readyAll(src[0]))
    return false;
  for (uint64_t k = 0; k < src[0].len(); ++k) {
    uint32_t v;
    if (!s.pktRead(src[0], k, v))
      return true;
    if (type == OpType::UnpackPackets) {
      if (!s.plainWrite(dst[0], k, v))
        return true;
    } else if (type == OpType::ReadPutPackets) {
      for (const Ent &d : dst)
        if (!s.pktWrite(d, s.owner(d), k, v, false))
          return true;
    } else {
      std::vector<uint32_t> members = dst[0].sw ? *dst[0].members : std::vector<uint32_t>{dst[0].rank};
      for (uint32_t r : members)
        if (!s.pktWrite(dst[0], r, k, v, false))
          return true;
    }
  }
  return true;
}

/// src[0] plain plus packet sources, reduced into dst[0]; the copy and send forms also write
/// the sum as packets (dst[1] locally, the rest to peers).
bool Verifier::stepReducePackets(Step &s) {
  const std::vector<Ent> &src = s.src, &dst = s.dst;
  const OpType type = s.op.type;
  for (size_t j = 1; j < src.size(); ++j)
    if (!s.readyAll(src[j]))
      return false;
  const uint64_t len = src[0].len();
  size_t firstRemote = 1;
  std::vector<const Ent *> outPk;
  if (type == OpType::ReduceCopyPackets || type == OpType::ReduceCopySendPackets) {
    if (dst.size() >= 2)
      outPk.push_back(&dst[1]);
    firstRemote = 2;
  }
  if (type == OpType::ReduceSendPackets || type == OpType::ReduceCopySendPackets)
    for (size_t j = firstRemote; j < dst.size(); ++j)
      outPk.push_back(&dst[j]);
  for (uint64_t k = 0; k < len; ++k) {
    uint32_t acc;
    if (!s.plainRead(src[0], k, acc))
      return true;
    for (size_t j = 1; j < src.size(); ++j) {
      uint32_t v;
      if (!s.pktRead(src[j], k, v))
        return true;
      acc = vals_.reduce(acc, v);
    }
    if (!s.plainWrite(dst[0], k, acc))
      return true;
    for (const Ent *d : outPk)
      if (!s.pktWrite(*d, s.owner(*d), k, acc, false))
        return true;
  }
  return true;
}

} // namespace msccl::verify::detail
