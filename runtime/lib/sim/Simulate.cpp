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
// released it, which gives the critical path.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/SimExecutor.h"

#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Layout.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/Resolve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>

namespace msccl::runtime::sim {
using namespace msccl::plan;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

struct Resource {
  uint8_t kind = 0;      // 0..4: link out, link in, hbm, nic out, nic in; 5: threadblock
  uint32_t rank = 0, tb = 0;
  double cap = 0;        // bytes per second
  double bytes = 0;      // carried so far
  bool isTb = false;
  // Progressive-filling scratch.
  double coef = 0, used = 0;
  bool touched = false;
  std::vector<uint32_t> acts = {};
};

struct Demand {
  uint32_t res;
  double bytes;
};

struct Activity {
  uint32_t tb = kNone;     // the threadblock waiting for it
  std::vector<Demand> demands;
  double weight = 0;       // max demand (bytes)
  double remaining = 1;    // fraction of the op left
  double rate = 0;         // fraction per second
  double endDelay = 0;     // after the last byte: until the tb continues / signals land
  bool active = false;
  bool frozen = false;
  // Effects at completion.
  std::vector<std::pair<uint32_t, uint32_t>> signals; // (rank, gpu-level channel) on the peer
  ChannelType signalType = ChannelType::Memory;
  double signalDelay = 0;  // after the last byte: until its signals land
  struct PacketWrite {
    uint32_t rank;
    BufferType type;
    uint64_t offset, length;
    double delay;
  };
  std::vector<PacketWrite> packets;
  uint32_t rec = kNone;
};

struct Rec {
  uint32_t rank, tb, op;
  uint64_t iter;
  double start = 0, end = 0;
  uint32_t pred = kNone;
  bool transfer = false;
  double xferStart = 0, xferEnd = 0; // data ops: when the bytes started and stopped moving
};

struct TbState : OpCursor { // pc and pipeline position
  uint32_t rank = 0, id = 0;
  const LoweredTb *tb = nullptr;
  bool blocked = false;
  uint32_t lastRec = kNone;    // the previous op instance
  uint32_t releaser = kNone;   // the instance whose arrival unblocked the current op
  double releaseTime = 0;
  double opStart = 0;          // when the tb reached the current op
  // What the tb waits for (formatted only for a deadlock report).
  enum class On : uint8_t { Nothing, MemSignal, PortSignal, Semaphore, Packets, Barrier } on = On::Nothing;
  uint32_t onIndex = 0, onRank = 0;
  uint64_t onBegin = 0, onEnd = 0;
  uint32_t tbRes = kNone;
};

enum class Ev : uint8_t { Resume, Signal, Sem, Packet, Start };

struct Event {
  double t;
  uint64_t seq;
  Ev kind;
  uint32_t a = 0, b = 0, rec = kNone;
  // Packet: rank a, buffer type b, range.
  uint64_t offset = 0, length = 0;
  ChannelType ct = ChannelType::Memory;
  bool operator>(const Event &o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Barrier {
  uint32_t expected = 0;
  std::vector<uint32_t> arrived;
};

struct RankState {
  std::vector<uint64_t> memSig, memWait, portSig, portWait;
  std::map<uint32_t, int64_t> sems;
  std::map<uint32_t, Barrier> barriers;
  // LL packets written this launch, per buffer type: merged payload intervals start -> end.
  std::map<uint64_t, uint64_t> packets[3];
  uint32_t lastPacketRec = kNone;
  double lastPacketTime = 0;
};

void addInterval(std::map<uint64_t, uint64_t> &m, uint64_t b, uint64_t e) {
  if (b >= e)
    return;
  auto it = m.upper_bound(b);
  if (it != m.begin()) {
    auto p = std::prev(it);
    if (p->second >= b) {
      b = p->first;
      e = std::max(e, p->second);
      it = m.erase(p);
    }
  }
  while (it != m.end() && it->first <= e) {
    e = std::max(e, it->second);
    it = m.erase(it);
  }
  m[b] = e;
}

bool covered(const std::map<uint64_t, uint64_t> &m, uint64_t b, uint64_t e) {
  if (b >= e)
    return true;
  auto it = m.upper_bound(b);
  if (it == m.begin())
    return false;
  --it;
  return it->first <= b && it->second >= e;
}

class Sim {
public:
  Sim(const Plan &plan, const Topology &topo, const LoweredPlan &lp, const ResolvedPlan &rp)
      : plan_(plan), topo_(topo), lp_(lp), rp_(rp) {}

  SimReport run();

private:
  const Plan &plan_;
  const Topology &topo_;
  const LoweredPlan &lp_;
  const ResolvedPlan &rp_;
  std::vector<Resource> res_;
  std::vector<Activity> acts_;
  std::vector<uint32_t> active_;
  std::vector<TbState> tbs_;
  std::vector<RankState> ranks_;
  std::vector<Rec> recs_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  double now_ = 0;
  bool setChanged_ = false;
  uint64_t ops_ = 0;

  static constexpr uint32_t kPerRank = 5; // nvlink out, nvlink in, hbm, nic out, nic in
  uint32_t linkOut(uint32_t r) const { return r * kPerRank + 0; }
  uint32_t linkIn(uint32_t r) const { return r * kPerRank + 1; }
  uint32_t hbm(uint32_t r) const { return r * kPerRank + 2; }
  uint32_t nicOut(uint32_t r) const { return r * kPerRank + 3; }
  uint32_t nicIn(uint32_t r) const { return r * kPerRank + 4; }
  uint32_t node(uint32_t r) const { return r / topo_.gpusPerNode; }

  void push(Event e) {
    e.seq = seq_++;
    events_.push(e);
  }
  std::string where(const TbState &s) const {
    const LoweredOp &op = s.tb->ops[s.pc];
    return "rank " + std::to_string(s.rank) + " tb " + std::to_string(s.tb->id) + " op " + std::to_string(s.pc) +
           " (" + std::string(opName(op.type)) + ")";
  }
  [[noreturn]] void unsupported(const TbState &s, const std::string &msg) const {
    throw ExecutionError(ErrorKind::Unsupported, where(s) + ": " + msg + " on topology " + topo_.name);
  }

  ByteRange window(const TbState &s, const LoweredOp &op, const LoweredEntry &e) const {
    if (!op.inPipeline || !s.inPipe || !honoursPipeline(op.type))
      return e.bytes;
    ByteRange w = pipelineWindow(e.bytes.length, s.pipeIter, s.unitSize);
    uint64_t delta = w.offset;
    const ChunkLayout &layout = lp_.gpus[s.rank].layout;
    if (e.where.type == BufferType::Scratch && layout.reuseSlotBytes != 0)
      delta %= layout.reuseSlotBytes;
    return {e.bytes.offset + delta, w.length};
  }

  uint32_t newRec(const TbState &s, double start) {
    Rec r;
    r.rank = s.rank;
    r.tb = s.tb->id;
    r.op = uint32_t(s.pc);
    r.iter = s.inPipe ? s.pipeIter : 0;
    r.start = start;
    r.pred = s.lastRec;
    if (s.releaser != kNone && s.releaseTime >= start && (s.lastRec == kNone || s.releaseTime >= recs_[s.lastRec].end))
      r.pred = s.releaser;
    recs_.push_back(r);
    return uint32_t(recs_.size() - 1);
  }
  void finishAt(TbState &s, uint32_t rec, double t) {
    recs_[rec].end = t;
    Event e{};
    e.t = t;
    e.kind = Ev::Resume;
    e.a = s.id;
    e.rec = rec;
    push(e);
  }

  void settle(TbState &s);
  void step(TbState &s);
  bool tryWait(TbState &s, const LoweredOp &op);
  bool trySem(TbState &s, const LoweredOp &op);
  bool packetsReady(TbState &s, const LoweredOp &op);
  void startData(TbState &s, const LoweredOp &op);
  // Blocked threadblocks by what they wait for: (rank, counter kind, index).
  enum Waits : uint64_t { MemSignal, PortSignal, Semaphore, Packets };
  static uint64_t key(uint32_t rank, Waits kind, uint32_t index) {
    return (uint64_t(rank) << 34) | (uint64_t(kind) << 32) | index;
  }
  std::unordered_map<uint64_t, std::vector<uint32_t>> waiters_;
  void block(TbState &s, uint64_t k, TbState::On on, uint32_t index, uint32_t rank = 0, uint64_t b = 0,
             uint64_t e = 0) {
    s.blocked = true;
    s.on = on;
    s.onIndex = index;
    s.onRank = rank;
    s.onBegin = b;
    s.onEnd = e;
    waiters_[k].push_back(s.id);
  }
  std::string blockedOn(const TbState &s) const;
  void wake(uint64_t k, uint32_t rec, double t) {
    auto it = waiters_.find(k);
    if (it == waiters_.end() || it->second.empty())
      return;
    std::vector<uint32_t> list;
    list.swap(it->second);
    for (uint32_t id : list) {
      TbState &s = tbs_[id];
      if (!s.blocked)
        continue;
      s.blocked = false;
      s.releaser = rec;
      s.releaseTime = t;
      step(s);
    }
  }
  void recomputeRates();
  void complete(uint32_t a);
};

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

void Sim::startData(TbState &s, const LoweredOp &op) {
  Activity a;
  a.tb = s.id;
  const bool packetOp = isPacketOp(op.type);
  const bool port = op.channelType == ChannelType::Port;
  double startDelay = topo_.opUs * 1e-6;
  double tbBytes = 0; // the copy/reduce loop: one pass over the longest buffer entry (payload + flags)
  std::vector<Demand> &dem = a.demands; // few entries: linear merge
  auto add = [&](uint32_t r, double b) {
    for (Demand &d : dem)
      if (d.res == r) {
        d.bytes += b;
        return;
      }
    dem.push_back({r, b});
  };
  auto wire = [&](const LoweredEntry &e, uint64_t len) {
    bool pk = packetOp && (e.where.kind == Location::Kind::Switch || e.where.type == BufferType::Scratch);
    return double(len) * (pk ? 2.0 : 1.0);
  };
  const double eff = topo_.nvlsEfficiency;
  auto members = [&](const LoweredEntry &e) -> const std::vector<uint32_t> & {
    const ResolvedSwitch &sw = rp_.gpus[s.rank].switchChannels.at(e.where.switchChannel);
    if (!topo_.nvls)
      unsupported(s, "a switch channel (NVLS multimem) needs NVLS, which this topology lacks");
    for (uint32_t m : sw.ranks)
      if (node(m) != node(s.rank))
        unsupported(s, "switch channel members span NVLink domains (ranks " + std::to_string(s.rank) + " and " +
                           std::to_string(m) + ")");
    return sw.ranks;
  };
  // Remote endpoints: bytes from `from` to `to`.
  auto remote = [&](uint32_t from, uint32_t to, double b) {
    if (node(from) == node(to)) {
      // Memory channels over NVLink, or PCIe peer-to-peer: the writer's link out, the reader's in.
      add(linkOut(from), b);
      add(linkIn(to), b);
    } else {
      if (!port)
        unsupported(s, "a memory channel between rank " + std::to_string(from) + " and rank " + std::to_string(to) +
                           " crosses nodes (memory channels need one NVLink domain; use port channels)");
      if (topo_.nicGBps <= 0)
        unsupported(s, "a port channel between nodes needs a network");
      add(nicOut(from), b);
      add(nicIn(to), b);
    }
  };
  double hopDelay = 0;
  bool remoteRead = false, switchRead = false;
  for (const LoweredEntry &e : op.src) {
    ByteRange w = window(s, op, e);
    double b = wire(e, w.length);
    tbBytes = std::max(tbBytes, b);
    if (b == 0)
      continue;
    switch (e.where.kind) {
    case Location::Kind::Local: add(hbm(s.rank), b); break;
    case Location::Kind::Remote:
      remote(e.where.rank, s.rank, b);
      add(hbm(e.where.rank), b);
      remoteRead = true;
      break;
    case Location::Kind::Switch:
      for (uint32_t m : members(e)) {
        add(linkOut(m), b / eff);
        add(hbm(m), b);
      }
      add(linkIn(s.rank), b / eff);
      switchRead = true;
      break;
    }
  }
  for (const LoweredEntry &e : op.dst) {
    ByteRange w = window(s, op, e);
    double b = wire(e, w.length);
    tbBytes = std::max(tbBytes, b);
    uint32_t target = s.rank;
    if (b != 0) {
      switch (e.where.kind) {
      case Location::Kind::Local: add(hbm(s.rank), b); break;
      case Location::Kind::Remote:
        remote(s.rank, e.where.rank, b);
        add(hbm(e.where.rank), b);
        target = e.where.rank;
        break;
      case Location::Kind::Switch:
        add(linkOut(s.rank), b / eff);
        for (uint32_t m : members(e)) {
          add(linkIn(m), b / eff);
          add(hbm(m), b);
        }
        break;
      }
    }
    if (packetOp && e.where.type == BufferType::Scratch) {
      auto pushPacket = [&](uint32_t r) {
        double d = r == s.rank ? 0 : (node(r) == node(s.rank) ? topo_.intraLatencyUs : topo_.netLatencyUs) * 1e-6;
        a.packets.push_back({r, e.where.type, w.offset, w.length, d});
      };
      if (e.where.kind == Location::Kind::Switch) {
        for (uint32_t m : members(e))
          pushPacket(m);
      } else {
        pushPacket(target);
      }
    }
  }
  const double intra = topo_.intraLatencyUs * 1e-6;
  if (remoteRead)
    startDelay += port ? 0 : intra;
  if (switchRead)
    startDelay += 2 * intra; // multimem.ld_reduce: request to the switch and the reduced reply
  if (port) {
    startDelay += topo_.proxyUs * 1e-6;
    bool cross = false;
    for (const LoweredEntry &e : op.dst)
      if (e.where.kind == Location::Kind::Remote && node(e.where.rank) != node(s.rank))
        cross = true;
    hopDelay = cross ? topo_.netLatencyUs * 1e-6 : intra;
    a.endDelay = hopDelay; // a port put completes (and its signal lands) one hop after the last byte
  } else {
    // Copy/reduce loop of the threadblock.
    if (tbBytes > 0)
      add(s.tbRes, tbBytes);
  }
  if (op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush) {
    const auto &list = port ? rp_.gpus[s.rank].portChannels : rp_.gpus[s.rank].memoryChannels;
    for (size_t i = 0; i < op.dst.size() && i < op.channels.size(); ++i) {
      const ResolvedChannel &ch = list.at(op.channels[i]);
      if (ch.peerChannel == kNoChannel)
        throw ExecutionError(ErrorKind::Misuse, where(s) + ": signal to rank " + std::to_string(ch.peer) +
                                                    ", which declares no partner channel");
      a.signals.push_back({ch.peer, ch.peerChannel});
    }
    a.signalType = op.channelType;
    a.signalDelay = port ? a.endDelay : intra; // the signal follows the data over the link
  }
  for (const Demand &d : dem)
    a.weight = std::max(a.weight, d.bytes);
  a.rec = newRec(s, s.opStart);
  recs_[a.rec].transfer = a.weight > 0;
  uint32_t id = uint32_t(acts_.size());
  acts_.push_back(std::move(a));
  Event e{};
  e.t = now_ + startDelay;
  e.kind = Ev::Start;
  e.a = id;
  push(e);
}

// Run the tb from its current op until it blocks or an op takes time.
void Sim::step(TbState &s) {
  settle(s);
  if (s.done)
    return;
  const LoweredOp &op = s.tb->ops[s.pc];
  const double opT = topo_.opUs * 1e-6;
  ++ops_;
  switch (op.type) {
  case OpType::Nop:
  case OpType::Flush:
    finishAt(s, newRec(s, s.opStart), now_ + opT);
    return;
  case OpType::Barrier: {
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
    return;
  }
  case OpType::Signal:
  case OpType::RelaxedSignal: {
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
        double lat = node(ch.peer) == node(s.rank) ? topo_.intraLatencyUs : topo_.netLatencyUs;
        if (port)
          lat += topo_.proxyUs;
        Event e{};
        e.t = now_ + opT + lat * 1e-6;
        e.kind = Ev::Signal;
        e.a = ch.peer;
        e.b = ch.peerChannel;
        e.ct = op.channelType;
        e.rec = rec;
        push(e);
      }
    }
    finishAt(s, rec, now_ + opT);
    return;
  }
  case OpType::Wait:
  case OpType::RelaxedWait:
    if (op.channelType == ChannelType::Memory || op.channelType == ChannelType::Port) {
      if (!tryWait(s, op)) {
        --ops_;
        return;
      }
    }
    finishAt(s, newRec(s, s.opStart), now_ + opT);
    return;
  case OpType::SemRelease: {
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
    return;
  }
  case OpType::SemAcquire:
    if (!trySem(s, op)) {
      --ops_;
      return;
    }
    finishAt(s, newRec(s, s.opStart), now_ + opT);
    return;
  default:
    break;
  }
  if (!packetsReady(s, op)) {
    --ops_;
    return;
  }
  startData(s, op);
}

void Sim::recomputeRates() {
  std::vector<uint32_t> touched;
  for (uint32_t id : active_) {
    Activity &a = acts_[id];
    a.frozen = false;
    a.rate = 0;
    for (const Demand &d : a.demands) {
      Resource &r = res_[d.res];
      if (!r.touched) {
        r.touched = true;
        r.coef = r.used = 0;
        r.acts.clear();
        touched.push_back(d.res);
      }
      r.coef += d.bytes / a.weight;
      r.acts.push_back(id);
    }
  }
  size_t unfrozen = active_.size();
  while (unfrozen > 0) {
    double lambda = kInf;
    for (uint32_t r : touched) {
      const Resource &x = res_[r];
      if (x.coef > 1e-12)
        lambda = std::min(lambda, std::max(0.0, x.cap - x.used) / x.coef);
    }
    if (!(lambda < kInf))
      break;
    std::vector<uint32_t> sat;
    for (uint32_t r : touched) {
      const Resource &x = res_[r];
      if (x.coef > 1e-12 && std::max(0.0, x.cap - x.used) / x.coef <= lambda * (1 + 1e-9))
        sat.push_back(r);
    }
    for (uint32_t r : sat)
      for (uint32_t id : res_[r].acts) {
        Activity &a = acts_[id];
        if (a.frozen)
          continue;
        a.frozen = true;
        --unfrozen;
        a.rate = lambda / a.weight;
        for (const Demand &d : a.demands) {
          Resource &y = res_[d.res];
          y.used += a.rate * d.bytes;
          y.coef -= d.bytes / a.weight;
        }
      }
    for (uint32_t r : sat)
      res_[r].coef = 0; // saturated: nothing more fits
  }
  for (uint32_t r : touched)
    res_[r].touched = false;
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
  finishAt(tbs_[a.tb], a.rec, end);
}

SimReport Sim::run() {
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
    const double horizon = now_ + 1e-15 + 1e-12 * now_;
    while (!events_.empty() && events_.top().t <= horizon) {
      Event e = events_.top();
      events_.pop();
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

  std::vector<std::string> diags;
  for (const TbState &s : tbs_)
    if (!s.done)
      diags.push_back(where(s) + ": " + blockedOn(s));
  if (!diags.empty())
    throw ExecutionError(ErrorKind::Deadlock,
                         "deadlock: " + std::to_string(diags.size()) + " threadblock(s) cannot progress", diags);

  SimReport rep;
  const double makespan = now_;
  rep.seconds = makespan + topo_.launchUs * 1e-6;
  rep.ops = ops_;
  for (const Resource &r : res_) {
    if (r.bytes <= 0)
      continue;
    ResourceUse u;
    static const char *kinds[] = {" out", " in", "hbm", "nic out", "nic in"};
    std::string link = topo_.intraKind == "pcie" ? "pcie" : "nvlink";
    u.name = "rank " + std::to_string(r.rank) + " " +
             (r.kind == 5 ? "tb " + std::to_string(r.tb) : (r.kind < 2 ? link : std::string()) + kinds[r.kind]);
    u.bytes = r.bytes;
    u.capacityGBps = r.cap / 1e9;
    u.utilisation = makespan > 0 ? r.bytes / (r.cap * makespan) : 0;
    u.isThreadblock = r.isTb;
    rep.resources.push_back(u);
  }
  std::stable_sort(rep.resources.begin(), rep.resources.end(),
                   [](const ResourceUse &a, const ResourceUse &b) { return a.utilisation > b.utilisation; });
  // Critical path: back from the instance that ends last.
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
  return rep;
}

} // namespace

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
    validatePlan(plan, vo);
  }
  if (plan.gpus.size() > topo.gpus())
    throw ExecutionError(ErrorKind::Unsupported, "the plan has " + std::to_string(plan.gpus.size()) +
                                                     " ranks; topology " + topo.name + " has " +
                                                     std::to_string(topo.gpus()) + " GPUs");
  ResolvedPlan rp = resolvePlan(plan);
  LoweredPlan lp = lowerPlan(plan, rp, inputBytes, outputBytes);
  Sim sim(plan, topo, lp, rp);
  return sim.run();
}

} // namespace msccl::runtime::sim
