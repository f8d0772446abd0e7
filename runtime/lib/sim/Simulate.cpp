//===- Simulate.cpp - Discrete-event replay of a lowered plan on a topology --------------===//
//
// Consumes a validated plan, S_in/S_out and a Topology; produces a SimReport (SimExecutor.h).
// The plan is resolved and lowered by Resolve.h like every backend; each threadblock is a
// sequential process over its flattened ops (pipelines re-run their inner ops per window, as in
// the CPU executor). Data ops become activities with byte demands on resources (links, HBM,
// NICs, the threadblock's own throughput cap); after every change of the active set the rates
// are recomputed by progressive filling (max-min fairness, so no resource exceeds its capacity).
// Sync ops are fixed latencies and counters (signals per channel, semaphores, barriers, LL
// packet coverage of scratch ranges). Every op instance is recorded with the instance that
// released it, which gives the critical path. This file: the event loop, threadblock stepping
// and sync ops; SimData.cpp: data ops (activities, demands, rates); SimModel.h: their state.
//
//===------------------------------------------------------------------------------------===//
#include "SimModel.h"

#include "msccl/runtime/Collective.h"
#include "msccl/runtime/PlanValidate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace msccl::runtime::sim {
namespace detail {

std::string Sim::blockedOn(const TbState &s) const {
  switch (s.on) {
  case TbState::On::Nothing: break;
  case TbState::On::MemSignal:
  case TbState::On::PortSignal: {
    bool port = s.on == TbState::On::PortSignal;
    const RankState &rs = ranks_[s.rank];
    const auto &list = port ? rp_.gpus[s.rank].portChannels : rp_.gpus[s.rank].memoryChannels;
    uint32_t c = s.onIndex;
    return "waits for a signal on " + std::string(port ? "port" : "memory") + " channel " + std::to_string(c) +
           " from rank " + std::to_string(list[c].peer) + "; received " +
           std::to_string((port ? rs.portSig : rs.memSig)[c]) + " signals, " +
           std::to_string((port ? rs.portWait : rs.memWait)[c]) + " consumed";
  }
  case TbState::On::Semaphore:
    return "waits to acquire semaphore " + std::to_string(s.onIndex) + " (needs a sem_release)";
  case TbState::On::Packets:
    return "waits for LL packets in scratch bytes [" + std::to_string(s.onBegin) + ", " + std::to_string(s.onEnd) +
           ") of rank " + std::to_string(s.onRank) + " that no op has written";
  case TbState::On::Barrier: {
    auto it = ranks_[s.rank].barriers.find(s.onIndex);
    size_t arrived = it == ranks_[s.rank].barriers.end() ? 0 : it->second.arrived.size();
    uint32_t expected = it == ranks_[s.rank].barriers.end() ? 0 : it->second.expected;
    return "waits at barrier " + std::to_string(s.onIndex) + ": " + std::to_string(arrived) + " of " +
           std::to_string(expected) + " threadblocks arrived";
  }
  }
  return "cannot progress";
}

void Sim::settle(TbState &s) { s.settle(s.tb->ops); }

bool Sim::tryWait(TbState &s, const LoweredOp &op) {
  RankState &rs = ranks_[s.rank];
  bool port = op.channelType == ChannelType::Port;
  auto &sig = port ? rs.portSig : rs.memSig;
  auto &wt = port ? rs.portWait : rs.memWait;
  // All channels at once: consume only when every one has a signal (a wait op polls them all).
  for (uint32_t c : op.channels)
    if (sig[c] <= wt[c]) {
      block(s, key(s.rank, port ? PortSignal : MemSignal, c), port ? TbState::On::PortSignal : TbState::On::MemSignal, c);
      return false;
    }
  for (uint32_t c : op.channels)
    wt[c]++;
  return true;
}

bool Sim::trySem(TbState &s, const LoweredOp &op) {
  RankState &rs = ranks_[s.rank];
  for (uint32_t id : op.semaphores)
    if (rs.sems[id] <= 0) {
      block(s, key(s.rank, Semaphore, id), TbState::On::Semaphore, id);
      return false;
    }
  for (uint32_t id : op.semaphores)
    rs.sems[id]--;
  return true;
}

bool Sim::packetsReady(TbState &s, const LoweredOp &op) {
  if (!isPacketOp(op.type))
    return true;
  for (const LoweredEntry &e : op.src) {
    if (e.where.kind == Location::Kind::Switch || e.where.type != BufferType::Scratch)
      continue;
    uint32_t r = e.where.kind == Location::Kind::Remote ? e.where.rank : s.rank;
    ByteRange w = window(s, op, e);
    if (!covered(ranks_[r].packets[uint8_t(e.where.type)], w.offset, w.end())) {
      block(s, key(r, Packets, 0), TbState::On::Packets, 0, r, w.offset, w.end());
      return false;
    }
  }
  // The packets' arrival is what released the op.
  for (const LoweredEntry &e : op.src)
    if (e.where.kind != Location::Kind::Switch && e.where.type == BufferType::Scratch) {
      uint32_t r = e.where.kind == Location::Kind::Remote ? e.where.rank : s.rank;
      if (ranks_[r].lastPacketRec != kNone && ranks_[r].lastPacketTime >= s.opStart) {
        s.releaser = ranks_[r].lastPacketRec;
        s.releaseTime = ranks_[r].lastPacketTime;
      }
    }
  return true;
}
// --- One op: the handler its op table row names in the Model column (PlanEnums.def) ----------
// Each starts the op at now_, blocks the tb (s.blocked, and --ops_ so a retry is not counted
// twice) or schedules its finish.

// nop, flush: a flush's port transfers were modelled when the puts ran (their activity ends
// when the data arrives).
void Sim::modelInstant(TbState &s, const LoweredOp &) { finishAt(s, newRec(s, s.opStart), now_ + topo_.opUs * 1e-6); }

void Sim::modelBarrier(TbState &s, const LoweredOp &op) {
  const double opT = topo_.opUs * 1e-6;
  if (op.numThreadblocks <= 1) {
    finishAt(s, newRec(s, s.opStart), now_ + opT);
    return;
  }
  Barrier &b = ranks_[s.rank].barriers[op.barrierId];
  if (b.arrived.empty())
    b.expected = op.numThreadblocks;
  else if (b.expected != op.numThreadblocks)
    throw ExecutionError(ErrorKind::Misuse, where(s) + ": barrier " + std::to_string(op.barrierId) +
                                                " entered with num_threadblocks " +
                                                std::to_string(op.numThreadblocks) +
                                                " while other threadblocks entered it with " +
                                                std::to_string(b.expected));
  b.arrived.push_back(s.id);
  s.blocked = true;
  s.on = TbState::On::Barrier;
  s.onIndex = op.barrierId;
  if (b.arrived.size() == b.expected) {
    std::vector<uint32_t> list;
    list.swap(b.arrived);
    uint32_t last = newRec(s, s.opStart);
    for (uint32_t id : list) {
      TbState &t = tbs_[id];
      t.blocked = false;
      uint32_t rec = id == s.id ? last : newRec(t, t.opStart);
      if (id != s.id)
        recs_[rec].pred = last;
      finishAt(t, rec, now_ + topo_.barrierUs * 1e-6);
    }
  }
}

void Sim::modelSignal(TbState &s, const LoweredOp &op) {
  const double opT = topo_.opUs * 1e-6;
  uint32_t rec = newRec(s, s.opStart);
  if (op.channelType == ChannelType::Memory || op.channelType == ChannelType::Port) {
    bool port = op.channelType == ChannelType::Port;
    const auto &list = port ? rp_.gpus[s.rank].portChannels : rp_.gpus[s.rank].memoryChannels;
    for (uint32_t c : op.channels) {
      const ResolvedChannel &ch = list.at(c);
      if (ch.peerChannel == kNoChannel)
        throw ExecutionError(ErrorKind::Misuse, where(s) + ": signal on channel " + std::to_string(c) +
                                                    " to rank " + std::to_string(ch.peer) +
                                                    ", which declares no partner channel");
      double lat = hop(s.rank, ch.peer) + (port ? topo_.proxyUs * 1e-6 : 0);
      Event e{};
      e.t = now_ + opT + lat;
      e.kind = Ev::Signal;
      e.a = ch.peer;
      e.b = ch.peerChannel;
      e.ct = op.channelType;
      e.rec = rec;
      push(e);
    }
  }
  finishAt(s, rec, now_ + opT);
}

void Sim::modelWait(TbState &s, const LoweredOp &op) {
  const double opT = topo_.opUs * 1e-6;
  if (op.channelType == ChannelType::Memory || op.channelType == ChannelType::Port) {
    if (!tryWait(s, op)) {
      --ops_;
      return;
    }
  }
  finishAt(s, newRec(s, s.opStart), now_ + opT);
}

void Sim::modelSemRelease(TbState &s, const LoweredOp &op) {
  const double opT = topo_.opUs * 1e-6;
  uint32_t rec = newRec(s, s.opStart);
  for (uint32_t id : op.semaphores) {
    Event e{};
    e.t = now_ + opT + topo_.semaphoreUs * 1e-6;
    e.kind = Ev::Sem;
    e.a = s.rank;
    e.b = id;
    e.rec = rec;
    push(e);
  }
  finishAt(s, rec, now_ + opT);
}

void Sim::modelSemAcquire(TbState &s, const LoweredOp &op) {
  const double opT = topo_.opUs * 1e-6;
  if (!trySem(s, op)) {
    --ops_;
    return;
  }
  finishAt(s, newRec(s, s.opStart), now_ + opT);
}

// Packet and data ops (and a pipeline, lowered into them): wait for the packets they read,
// then move the bytes (SimData.cpp).
void Sim::modelData(TbState &s, const LoweredOp &op) {
  if (!packetsReady(s, op)) {
    --ops_;
    return;
  }
  startData(s, op);
}

// Run the tb from its current op until it blocks or an op takes time.
void Sim::step(TbState &s) {
  settle(s);
  if (s.done)
    return;
  const LoweredOp &op = s.tb->ops[s.pc];
  ++ops_;
  switch (op.type) {
#define MSCCL_OP(Enum, Json, Shape, Executable, Channels, Traits, Src, Dst, Length, Cpu, Cuda, Verify, Model)      \
  case OpType::Enum:                                                                                               \
    return model##Model(s, op);
#include "msccl/plan/PlanEnums.def"
  }
  throw ExecutionError(ErrorKind::Misuse, where(s) + ": op type " + std::to_string(unsigned(op.type)) +
                                              " is not in the op table");
}

void Sim::complete(uint32_t id) {
  Activity &a = acts_[id];
  a.active = false;
  recs_[a.rec].xferEnd = now_;
  for (const Demand &d : a.demands)
    res_[d.res].bytes += d.bytes;
  double end = now_ + a.endDelay;
  for (auto [peer, ch] : a.signals) {
    Event e{};
    e.t = now_ + a.signalDelay;
    e.kind = Ev::Signal;
    e.a = peer;
    e.b = ch;
    e.ct = a.signalType;
    e.rec = a.rec;
    push(e);
  }
  for (const auto &p : a.packets) {
    Event e{};
    e.t = now_ + p.delay;
    e.kind = Ev::Packet;
    e.a = p.rank;
    e.b = uint32_t(p.type);
    e.offset = p.offset;
    e.length = p.length;
    e.rec = a.rec;
    push(e);
  }
  if (a.next != kNone) { // a chain: the next entry's bytes follow at once
    startAt(a.next, now_);
    return;
  }
  if (a.join != kNone && --joins_[a.join] > 0)
    return; // another channel's chain of the op is still running
  finishAt(tbs_[a.tb], a.rec, end);
}

/// The model's resources (each rank's links, HBM and NIC, the fabric's links, one per
/// threadblock), the ranks' counters and the threadblocks' states.
void Sim::build() {
  const uint32_t n = uint32_t(plan_.gpus.size());
  for (uint32_t r = 0; r < n; ++r) {
    const double caps[kPerRank] = {topo_.intraGBps, topo_.intraGBps, topo_.hbmGBps, std::max(topo_.nicGBps, 1e-9),
                                   std::max(topo_.nicGBps, 1e-9)};
    for (uint8_t k = 0; k < kPerRank; ++k) {
      Resource x;
      x.kind = k;
      x.rank = r;
      x.cap = caps[k] * 1e9;
      res_.push_back(x);
    }
  }
  fabricBase_ = uint32_t(res_.size());
  for (uint32_t d = 0; d < 2 * topo_.fabric.links.size(); ++d) {
    Resource x;
    x.kind = 6;
    x.tb = d;
    x.cap = topo_.fabric.linkGBps(d) * 1e9;
    res_.push_back(x);
  }
  ranks_.resize(n);
  for (uint32_t r = 0; r < n; ++r) {
    const ResolvedGpu &g = rp_.gpus[r];
    ranks_[r].memSig.assign(g.memoryChannels.size(), 0);
    ranks_[r].memWait.assign(g.memoryChannels.size(), 0);
    ranks_[r].portSig.assign(g.portChannels.size(), 0);
    ranks_[r].portWait.assign(g.portChannels.size(), 0);
    for (size_t t = 0; t < lp_.gpus[r].threadblocks.size(); ++t) {
      TbState s;
      s.rank = r;
      s.id = uint32_t(tbs_.size());
      s.tb = &lp_.gpus[r].threadblocks[t];
      Resource tr;
      tr.kind = 5;
      tr.rank = r;
      tr.tb = s.tb->id;
      tr.cap = topo_.tbGBps * 1e9;
      tr.isTb = true;
      s.tbRes = uint32_t(res_.size());
      res_.push_back(tr);
      tbs_.push_back(s);
    }
  }
}

/// Moves every active transfer on by `dt` seconds at its rate and completes those that finish.
void Sim::advance(double dt) {
  // Progress of the transfers; completions.
  std::vector<uint32_t> done;
  if (!active_.empty()) {
    std::vector<uint32_t> keep;
    for (uint32_t id : active_) {
      Activity &a = acts_[id];
      a.remaining -= a.rate * dt;
      if (a.remaining <= 1e-9 || (a.rate > 0 && a.remaining / a.rate <= 1e-15 + 1e-12 * now_))
        done.push_back(id);
      else
        keep.push_back(id);
    }
    if (!done.empty()) {
      active_.swap(keep);
      setChanged_ = true;
    }
  }
  for (uint32_t id : done)
    complete(id);
}

/// One due event: a threadblock resumes, a signal, a semaphore release or packets land, a
/// transfer starts.
void Sim::handle(const Event &e) {
  switch (e.kind) {
  case Ev::Resume: {
    TbState &s = tbs_[e.a];
    s.lastRec = e.rec;
    s.releaser = kNone;
    s.pc++;
    s.opStart = now_;
    step(s);
    break;
  }
  case Ev::Signal: {
    RankState &rs = ranks_[e.a];
    (e.ct == ChannelType::Port ? rs.portSig : rs.memSig).at(e.b)++;
    wake(key(e.a, e.ct == ChannelType::Port ? PortSignal : MemSignal, e.b), e.rec, now_);
    break;
  }
  case Ev::Sem:
    ranks_[e.a].sems[e.b]++;
    wake(key(e.a, Semaphore, e.b), e.rec, now_);
    break;
  case Ev::Packet: {
    RankState &rs = ranks_[e.a];
    addInterval(rs.packets[e.b], e.offset, e.offset + e.length);
    rs.lastPacketRec = e.rec;
    rs.lastPacketTime = now_;
    wake(key(e.a, Packets, 0), e.rec, now_);
    break;
  }
  case Ev::Start: {
    Activity &a = acts_[e.a];
    if (!a.chained)
      recs_[a.rec].xferStart = now_;
    if (a.weight <= 0) {
      complete(e.a);
    } else {
      a.active = true;
      active_.push_back(e.a);
      setChanged_ = true;
    }
    break;
  }
  }
}

/// Throws Deadlock naming every threadblock that did not finish and what it waits for.
void Sim::checkDeadlock() const {
  std::vector<std::string> diags;
  for (const TbState &s : tbs_)
    if (!s.done)
      diags.push_back(where(s) + ": " + blockedOn(s));
  if (!diags.empty())
    throw ExecutionError(ErrorKind::Deadlock,
                         "deadlock: " + std::to_string(diags.size()) + " threadblock(s) cannot progress", diags);

}

/// What each resource carried, busiest first.
void Sim::resourceUse(SimReport &rep, double makespan) const {
  for (const Resource &r : res_) {
    if (r.bytes <= 0)
      continue;
    ResourceUse u;
    static const char *kinds[] = {" out", " in", "hbm", "nic out", "nic in"};
    std::string link = topo_.intraKind == "pcie" ? "pcie" : "nvlink";
    u.name = r.kind == 6 ? "link " + topo_.fabric.linkName(r.tb)
                         : "rank " + std::to_string(r.rank) + " " +
                               (r.kind == 5 ? "tb " + std::to_string(r.tb)
                                            : (r.kind < 2 ? link : std::string()) + kinds[r.kind]);
    u.bytes = r.bytes;
    u.capacityGBps = r.cap / 1e9;
    u.utilisation = makespan > 0 ? r.bytes / (r.cap * makespan) : 0;
    u.isThreadblock = r.isTb;
    rep.resources.push_back(u);
  }
  std::stable_sort(rep.resources.begin(), rep.resources.end(),
                   [](const ResourceUse &a, const ResourceUse &b) { return a.utilisation > b.utilisation; });
}

void Sim::criticalPath(SimReport &rep) const {
  // Back from the instance that ends last.
  uint32_t last = kNone;
  for (uint32_t i = 0; i < recs_.size(); ++i)
    if (last == kNone || recs_[i].end > recs_[last].end)
      last = i;
  std::vector<uint32_t> chain;
  for (uint32_t i = last; i != kNone && chain.size() <= recs_.size(); i = recs_[i].pred)
    chain.push_back(i);
  std::reverse(chain.begin(), chain.end());
  double prevEnd = 0;
  for (uint32_t i : chain) {
    const Rec &r = recs_[i];
    CriticalStep c;
    c.rank = r.rank;
    c.tb = r.tb;
    c.op = r.op;
    c.iteration = r.iter;
    c.name = "?";
    for (const LoweredTb &tb : lp_.gpus[r.rank].threadblocks)
      if (tb.id == r.tb)
        c.name = std::string(opName(tb.ops[r.op].type));
    c.startUs = r.start * 1e6;
    c.endUs = r.end * 1e6;
    c.transfer = r.transfer;
    double part = std::max(0.0, r.end - prevEnd);
    double moving = r.transfer ? std::min(part, std::max(0.0, r.xferEnd - std::max(r.xferStart, prevEnd))) : 0.0;
    rep.criticalTransferUs += moving * 1e6;
    rep.criticalLatencyUs += (part - moving) * 1e6;
    prevEnd = std::max(prevEnd, r.end);
    rep.criticalPath.push_back(c);
  }
}

SimReport Sim::run() {
  build();
  for (TbState &s : tbs_)
    step(s);

  double nextDone = kInf;
  while (true) {
    double te = events_.empty() ? kInf : events_.top().t;
    double t = std::min(te, nextDone);
    if (!(t < kInf))
      break;
    double dt = t - now_;
    now_ = t;
    advance(dt);
    const double horizon = now_ + 1e-15 + 1e-12 * now_;
    while (!events_.empty() && events_.top().t <= horizon) {
      Event e = events_.top();
      events_.pop();
      handle(e);
    }
    if (setChanged_) {
      recomputeRates();
      setChanged_ = false;
    }
    nextDone = kInf;
    for (uint32_t id : active_) {
      const Activity &a = acts_[id];
      if (a.rate > 0)
        nextDone = std::min(nextDone, now_ + a.remaining / a.rate);
    }
  }
  checkDeadlock();

  SimReport rep;
  const double makespan = now_;
  rep.seconds = makespan + topo_.launchUs * 1e-6;
  rep.ops = ops_;
  resourceUse(rep, makespan);
  criticalPath(rep);
  return rep;
}

} // namespace detail

using namespace msccl::plan;
using detail::Sim;

std::string SimReport::boundBy() const {
  char buf[512];
  std::string b = "nothing (no data moved)";
  for (const ResourceUse &u : resources) {
    std::snprintf(buf, sizeof buf, "%s (%.0f%% busy)", u.name.c_str(), u.utilisation * 100);
    b = buf;
    break;
  }
  double tot = criticalTransferUs + criticalLatencyUs;
  std::snprintf(buf, sizeof buf, "; critical path %zu ops: %.0f%% transfer, %.0f%% latency", criticalPath.size(),
                tot > 0 ? 100 * criticalTransferUs / tot : 0.0, tot > 0 ? 100 * criticalLatencyUs / tot : 0.0);
  return "busiest " + b + buf;
}

SimReport simulate(const Plan &plan, const Topology &topo, uint64_t inputBytes, uint64_t outputBytes,
                   PacketType packet, bool validate) {
  (void)packet; // LL16 and LL8 both carry one flag per payload word: twice the payload on the wire
  if (validate) {
    ValidateOptions vo;
    vo.allowGlre = true;
    vo.deviceLimits = false; // the model has no MSCCL++ per-threadblock table (mscclc --target)
    validatePlan(plan, vo);
  }
  if (plan.gpus.size() > topo.gpus())
    throw ExecutionError(ErrorKind::Unsupported, "the plan has " + std::to_string(plan.gpus.size()) +
                                                     " ranks; topology " + topo.name + " has " +
                                                     std::to_string(topo.gpus()) + " GPUs");
  ResolvedPlan rp = resolvePlan(plan);
  LoweredPlan lp = lowerPlan(plan, rp, inputBytes, outputBytes, 1); // the model moves no elements
  Sim sim(plan, topo, lp, rp);
  return sim.run();
}

} // namespace msccl::runtime::sim
