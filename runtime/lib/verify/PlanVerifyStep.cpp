//===- PlanVerifyStep.cpp - The static verifier: one op of one threadblock ----------------===//
//
// Verifier::step: the reads, writes and synchronisation of one op, with the address and entry
// resolution it calls for every access (one unit, so they inline: PlanVerifyInternal.h).
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

bool Verifier::step(TbRun &tb) {
  const FlatOp &fo = tb.ops[tb.pc];
  const Op &op = *fo.op;
  RankRun &rr = ranks_[tb.rank];
  const uint32_t L = rr.launch;
  const ChannelType ct = op.channelType.value_or(ChannelType::None);
  const bool portProxy = ct == ChannelType::Port && isProxyOp(op.type);
  bool ok = true;
  auto entries = [&](const std::vector<BufferRef> &v, std::vector<Ent> &out) {
    for (const BufferRef &b : v) {
      Ent e;
      if (!resolveEntry(tb, op, b, e))
        ok = false;
      out.push_back(e);
    }
  };
  const std::vector<uint32_t> &chanTable =
      ct == ChannelType::Memory ? resolved_.gpus[tb.rank].threadblocks[tb.tb].memoryChannels
                                : resolved_.gpus[tb.rank].threadblocks[tb.tb].portChannels;
  auto gpuChannel = [&](uint32_t local) { return local < chanTable.size() ? chanTable[local] : kNone; };
  auto oob = [&](const Ent &e, uint32_t rank) {
    fail(FindingKind::Plan, opRefs_[fo.id].path,
         opText(fo.id, &op) + " accesses rank " + std::to_string(rank) + "'s " + bufferWord(e.type) + " chunks [" +
             std::to_string(e.lo / U_) + ", " + std::to_string((e.hi + U_ - 1) / U_) + ") outside the buffer",
         {ref(fo.id, L)});
  };
  // Plain read/write of unit k of entry e on rank `rank`.
  auto plainAddr = [&](const Ent &e, uint32_t rank, uint64_t k, bool write, bool proxy, bool &good) -> uint64_t {
    uint64_t a = address(rank, e.type, e.lo + k, L, good);
    if (!good)
      return 0;
    access(&tb, tb.actor, fo.id, L, proxy, write, false, rank, e.type, e.lo + k, a);
    if (write) { // every plain write goes through here: remember who wrote the value
      plainWriter_[a] = fo.id;
      plainWriterLaunch_[a] = uint8_t(L);
    }
    return a;
  };
  auto pktAddr = [&](const Ent &e, uint32_t rank, uint64_t k, bool write, bool proxy, bool &good) -> uint64_t {
    uint64_t a = address(rank, e.type, e.lo + k, L, good);
    if (!good)
      return 0;
    access(&tb, tb.actor, fo.id, L, proxy, write, true, rank, e.type, e.lo + k, a);
    return a;
  };
  auto signalOne = [&](uint32_t local, bool data, bool withCurrent) {
    if (ct != ChannelType::Memory && ct != ChannelType::Port)
      return;
    uint32_t c = gpuChannel(local);
    const auto &list = ct == ChannelType::Memory ? resolved_.gpus[tb.rank].memoryChannels : resolved_.gpus[tb.rank].portChannels;
    if (c == kNone || c >= list.size() || list[c].peerChannel == runtime::kNoChannel) {
      fail(FindingKind::Deadlock, opRefs_[fo.id].path,
           opText(fo.id, &op) + " signals a channel whose peer declares no partner channel", {ref(fo.id, L)});
      return;
    }
    RankRun &peer = ranks_[list[c].peer];
    (ct == ChannelType::Memory ? peer.memSignals : peer.portSignals)[list[c].peerChannel]++;
    auto &fifo = (ct == ChannelType::Memory ? peer.memFifo : peer.portFifo)[list[c].peerChannel];
    if (!opt_.races) {
      fifo.emplace_back();
      return;
    }
    RankRun::Msg msg;
    // Even a relaxed signal is sent by a running kernel: it tells that this rank's kernel has
    // started (its host clock), so relaxed entry handshakes work.
    msg.ctrlRank = tb.rank;
    msg.ctrlLaunch = rr.launch;
    if (data || opt_.relaxedOrdersData) {
      msg.data = releaseClock(tb, withCurrent);
      if (ct == ChannelType::Port)
        join(msg.data, clk(proxyOf(tb.actor)));
    }
    fifo.push_back(std::move(msg));
  };
  auto proxyBegin = [&]() {
    if (!portProxy || !opt_.races)
      return;
    uint32_t p = proxyOf(tb.actor);
    joinRelease(clk(p), tb);
    clk(p)[p]++;
  };
  const bool reader = true;
  (void)reader;
  std::vector<Ent> src, dst;
  switch (op.type) {
  case OpType::Nop:
    nop(tb);
    return true;
  case OpType::Barrier: {
    if (op.numThreadblocks <= 1) {
      nop(tb);
      return true;
    }
    BarrierState &b = rr.barriers[op.barrierId];
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
  case OpType::Signal:
  case OpType::RelaxedSignal:
    if (op.channelIds)
      for (uint32_t c : *op.channelIds)
        signalOne(c, ct == ChannelType::Port || op.type != OpType::RelaxedSignal, false);
    return true;
  case OpType::Wait:
  case OpType::RelaxedWait: {
    if (ct != ChannelType::Memory && ct != ChannelType::Port)
      return true;
    auto &sig = ct == ChannelType::Memory ? rr.memSignals : rr.portSignals;
    auto &wt = ct == ChannelType::Memory ? rr.memWaits : rr.portWaits;
    auto &fifo = ct == ChannelType::Memory ? rr.memFifo : rr.portFifo;
    const auto &list = ct == ChannelType::Memory ? resolved_.gpus[tb.rank].memoryChannels : resolved_.gpus[tb.rank].portChannels;
    const size_t nch = op.channelIds ? op.channelIds->size() : 0;
    while (tb.cursor < nch) {
      uint32_t c = gpuChannel((*op.channelIds)[tb.cursor]);
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
  case OpType::Flush:
    if (opt_.races)
      acquire(tb, clk(proxyOf(tb.actor)));
    return true;
  case OpType::SemAcquire: {
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
  case OpType::SemRelease:
    for (uint32_t id : op.semaphoreIds) {
      if (opt_.races)
        joinRelease(rr.semClocks.at(id), tb);
      rr.sems.at(id)++;
    }
    return true;
  case OpType::Pipeline:
    return true;
  // Data and packet ops: below.
  case OpType::Put: case OpType::PutPackets: case OpType::ReadPutPackets: case OpType::PutWithSignal:
  case OpType::PutWithSignalAndFlush: case OpType::Get: case OpType::Copy: case OpType::CopyPackets:
  case OpType::UnpackPackets: case OpType::Reduce: case OpType::ReducePackets: case OpType::ReduceCopyPackets:
  case OpType::ReduceSend: case OpType::ReduceSendPackets: case OpType::ReduceCopySendPackets:
  case OpType::ReadReduce: case OpType::ReadReduceSend: case OpType::MultiLoadReduceStore:
  case OpType::MultiStore: case OpType::MultiStorePackets: case OpType::MultiLoadReduce:
    break;
  }
  // Data ops.
  if (op.type == OpType::MultiLoadReduce) {
    BufferRef s = BufferRef::switchRef(op.channelIds && !op.channelIds->empty() ? op.channelIds->front() : 0,
                                       op.glreBufferOffset, op.glreSize);
    Ent e;
    ok = resolveEntry(tb, op, s, e);
    src.push_back(e);
    BufferRef d = op.glreDstChunk;
    d.loc = BufferRef::Loc::Local;
    e = Ent{};
    ok = resolveEntry(tb, op, d, e) && ok;
    dst.push_back(e);
  } else {
    entries(op.src, src);
    entries(op.dst, dst);
  }
  if (!ok) {
    fail(FindingKind::Plan, opRefs_[fo.id].path, opText(fo.id, &op) + " names a buffer that resolves to nothing",
         {ref(fo.id, L)});
    return true;
  }
  const bool needSrc = op.type != OpType::Nop;
  if (needSrc && (src.empty() || dst.empty()))
    return true; // validated shapes always have both
  auto owner = [&](const Ent &e) { return e.rank; };
  bool good = true;
  switch (op.type) {
  case OpType::Put:
  case OpType::PutWithSignal:
  case OpType::PutWithSignalAndFlush:
  case OpType::Get: {
    proxyBegin();
    const bool isGet = op.type == OpType::Get;
    const size_t n = isGet ? src.size() : dst.size();
    for (size_t i = 0; i < n && i < src.size() && i < dst.size(); ++i) {
      uint64_t len = isGet ? src[i].len() : dst[i].len();
      std::vector<uint32_t> tmp(len);
      for (uint64_t k = 0; k < len; ++k) {
        uint64_t a = plainAddr(src[i], owner(src[i]), k, false, portProxy, good);
        if (!good) { oob(src[i], owner(src[i])); return true; }
        tmp[k] = plainVal_[a];
      }
      for (uint64_t k = 0; k < len; ++k) {
        uint64_t a = plainAddr(dst[i], owner(dst[i]), k, true, portProxy, good);
        if (!good) { oob(dst[i], owner(dst[i])); return true; }
        plainVal_[a] = tmp[k];
      }
      if ((op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush) && op.channelIds &&
          i < op.channelIds->size())
        signalOne((*op.channelIds)[i], true, ct == ChannelType::Memory);
    }
    if (op.type == OpType::PutWithSignalAndFlush && ct == ChannelType::Port && opt_.races)
      acquire(tb, clk(proxyOf(tb.actor)));
    return true;
  }
  case OpType::Copy:
  case OpType::Reduce:
  case OpType::ReduceSend:
  case OpType::ReadReduce:
  case OpType::ReadReduceSend: {
    const uint64_t len = src[0].len();
    std::vector<uint32_t> acc(len, kUninit);
    for (size_t j = 0; j < src.size(); ++j)
      for (uint64_t k = 0; k < len; ++k) {
        uint64_t a = plainAddr(src[j], owner(src[j]), k, false, false, good);
        if (!good) { oob(src[j], owner(src[j])); return true; }
        acc[k] = j == 0 ? plainVal_[a] : vals_.reduce(acc[k], plainVal_[a]);
      }
    for (size_t j = 0; j < dst.size(); ++j)
      for (uint64_t k = 0; k < len; ++k) {
        uint64_t a = plainAddr(dst[j], owner(dst[j]), k, true, false, good);
        if (!good) { oob(dst[j], owner(dst[j])); return true; }
        plainVal_[a] = acc[k];
      }
    return true;
  }
  case OpType::MultiLoadReduceStore:
  case OpType::MultiLoadReduce:
  case OpType::MultiStore: {
    const Ent &se = src[0];
    const uint64_t len = se.len();
    std::vector<uint32_t> acc(len, kUninit);
    std::vector<uint32_t> srcRanks = se.sw ? *se.members : std::vector<uint32_t>{se.rank};
    if (op.type == OpType::MultiStore)
      srcRanks = {se.rank};
    for (size_t j = 0; j < srcRanks.size(); ++j)
      for (uint64_t k = 0; k < len; ++k) {
        uint64_t a = plainAddr(se, srcRanks[j], k, false, false, good);
        if (!good) { oob(se, srcRanks[j]); return true; }
        acc[k] = j == 0 ? plainVal_[a] : vals_.reduce(acc[k], plainVal_[a]);
      }
    const Ent &de = dst[0];
    std::vector<uint32_t> dstRanks = de.sw ? *de.members : std::vector<uint32_t>{de.rank};
    for (uint32_t r : dstRanks)
      for (uint64_t k = 0; k < len; ++k) {
        uint64_t a = plainAddr(de, r, k, true, false, good);
        if (!good) { oob(de, r); return true; }
        plainVal_[a] = acc[k];
      }
    return true;
  }
  // Packet ops: the next switch.
  case OpType::Nop: case OpType::Barrier: case OpType::PutPackets: case OpType::ReadPutPackets:
  case OpType::CopyPackets: case OpType::UnpackPackets: case OpType::Signal: case OpType::Wait:
  case OpType::Flush: case OpType::ReducePackets: case OpType::ReduceCopyPackets:
  case OpType::ReduceSendPackets: case OpType::ReduceCopySendPackets: case OpType::RelaxedSignal:
  case OpType::RelaxedWait: case OpType::Pipeline: case OpType::SemRelease: case OpType::SemAcquire:
  case OpType::MultiStorePackets:
    break;
  }
  // Packet ops. A packet op runs when every packet it reads carries this launch's flag.
  const uint32_t flag = L + 1;
  uint32_t relIdx = kNone; // this op's released clock (relPool_), made at its first packet write
  auto readyAll = [&](const Ent &e) {
    for (uint64_t k = 0; k < e.len(); ++k) {
      bool g;
      uint64_t a = address(owner(e), e.type, e.lo + k, L, g);
      if (!g)
        return true; // reported when accessed
      if (pktFlag_[a] != flag) {
        tb.blockedOn = "waits for packets of rank " + std::to_string(owner(e)) + "'s " + unitName(e.type, e.lo + k) +
                       " (launch " + std::to_string(L) + ")";
        return false;
      }
    }
    return true;
  };
  auto pktRead = [&](const Ent &e, uint64_t k, uint32_t &v) -> bool {
    bool g;
    uint64_t a = pktAddr(e, owner(e), k, false, false, g);
    if (!g) { oob(e, owner(e)); return false; }
    // The packet's flag orders its payload: acquire the writer's clock.
    const Access &w = pktShadow_[a].w;
    if (opt_.races && w.actor != kNone && pktRel_[a] != kNone) {
      // Flags order each packet's payload: the reader acquires the clock the writer released
      // with it (at once, per op, as RaceCheck.h), including what the writer had acquired.
      join(clk(tb.actor), relPool_[pktRel_[a]]);
    }
    v = pktVal_[a];
    return true;
  };
  auto pktWrite = [&](const Ent &e, uint32_t rank, uint64_t k, uint32_t v, bool proxy) -> bool {
    bool g;
    uint64_t a = pktAddr(e, rank, k, true, proxy, g);
    if (!g) { oob(e, rank); return false; }
    pktVal_[a] = v;
    pktFlag_[a] = flag;
    if (opt_.races) {
      if (relIdx == kNone) {
        Clock c = releaseClock(tb, true);
        if (proxy)
          join(c, clk(proxyOf(tb.actor)));
        uint32_t &last = lastRel_[tb.actor];
        if (last != kNone && relPool_[last] == c)
          relIdx = last;
        else {
          relPool_.push_back(std::move(c));
          relIdx = last = uint32_t(relPool_.size() - 1);
        }
      }
      pktRel_[a] = relIdx;
    }
    return true;
  };
  auto plainRead = [&](const Ent &e, uint64_t k, uint32_t &v) -> bool {
    uint64_t a = plainAddr(e, owner(e), k, false, false, good);
    if (!good) { oob(e, owner(e)); return false; }
    v = plainVal_[a];
    return true;
  };
  auto plainWrite = [&](const Ent &e, uint64_t k, uint32_t v) -> bool {
    uint64_t a = plainAddr(e, owner(e), k, true, false, good);
    if (!good) { oob(e, owner(e)); return false; }
    plainVal_[a] = v;
    return true;
  };
  switch (op.type) {
  case OpType::CopyPackets:
  case OpType::PutPackets: {
    proxyBegin();
    const size_t n = op.type == OpType::CopyPackets ? 1 : std::min(src.size(), dst.size());
    for (size_t i = 0; i < n; ++i)
      for (uint64_t k = 0; k < src[i].len(); ++k) {
        uint32_t v;
        if (!plainRead(src[i], k, v) || !pktWrite(dst[i], owner(dst[i]), k, v, portProxy))
          return true;
      }
    return true;
  }
  case OpType::UnpackPackets:
  case OpType::ReadPutPackets:
  case OpType::MultiStorePackets: {
    if (!readyAll(src[0]))
      return false;
    for (uint64_t k = 0; k < src[0].len(); ++k) {
      uint32_t v;
      if (!pktRead(src[0], k, v))
        return true;
      if (op.type == OpType::UnpackPackets) {
        if (!plainWrite(dst[0], k, v))
          return true;
      } else if (op.type == OpType::ReadPutPackets) {
        for (const Ent &d : dst)
          if (!pktWrite(d, owner(d), k, v, false))
            return true;
      } else {
        std::vector<uint32_t> members = dst[0].sw ? *dst[0].members : std::vector<uint32_t>{dst[0].rank};
        for (uint32_t r : members)
          if (!pktWrite(dst[0], r, k, v, false))
            return true;
      }
    }
    return true;
  }
  case OpType::ReducePackets:
  case OpType::ReduceCopyPackets:
  case OpType::ReduceSendPackets:
  case OpType::ReduceCopySendPackets: {
    for (size_t j = 1; j < src.size(); ++j)
      if (!readyAll(src[j]))
        return false;
    const uint64_t len = src[0].len();
    size_t firstRemote = 1;
    std::vector<const Ent *> outPk;
    if (op.type == OpType::ReduceCopyPackets || op.type == OpType::ReduceCopySendPackets) {
      if (dst.size() >= 2)
        outPk.push_back(&dst[1]);
      firstRemote = 2;
    }
    if (op.type == OpType::ReduceSendPackets || op.type == OpType::ReduceCopySendPackets)
      for (size_t j = firstRemote; j < dst.size(); ++j)
        outPk.push_back(&dst[j]);
    for (uint64_t k = 0; k < len; ++k) {
      uint32_t acc;
      if (!plainRead(src[0], k, acc))
        return true;
      for (size_t j = 1; j < src.size(); ++j) {
        uint32_t v;
        if (!pktRead(src[j], k, v))
          return true;
        acc = vals_.reduce(acc, v);
      }
      if (!plainWrite(dst[0], k, acc))
        return true;
      for (const Ent *d : outPk)
        if (!pktWrite(*d, owner(*d), k, acc, false))
          return true;
    }
    return true;
  }
  // Modelled above (not packet ops), or not at all: the fail below.
  case OpType::Nop: case OpType::Barrier: case OpType::Put: case OpType::PutWithSignal:
  case OpType::PutWithSignalAndFlush: case OpType::Get: case OpType::Copy: case OpType::Signal:
  case OpType::Wait: case OpType::Flush: case OpType::Reduce: case OpType::ReduceSend: case OpType::ReadReduce:
  case OpType::ReadReduceSend: case OpType::MultiLoadReduceStore: case OpType::RelaxedSignal:
  case OpType::RelaxedWait: case OpType::Pipeline: case OpType::SemRelease: case OpType::SemAcquire:
  case OpType::MultiStore: case OpType::MultiLoadReduce:
    break;
  }
  // No case above modelled the op: never a silent no-op (a new op row of PlanEnums.def reaches
  // here until the verifier learns it), so the plan is not proven.
  fail(FindingKind::Unsupported, opRefs_[fo.id].path,
       "the static verifier has no model of op `" + std::string(opName(op.type)) +
           "`: its reads, writes and syncs are not checked, so the plan is not proven",
       {ref(fo.id, L)});
  return true;
}

} // namespace msccl::verify::detail
