//===- SimModel.h - State of the discrete-event replay (internal to msccl_sim) -----------===//
//
// What Simulate.cpp (the event loop, sync ops, threadblock stepping) and SimData.cpp (data ops:
// activities, their byte demands on resources, max-min fair rates) share: resources,
// activities, op-instance records, threadblock and rank state, events, and the Sim class that
// holds them. See Simulate.cpp for the model.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/SimExecutor.h"

#include "msccl/runtime/Layout.h"
#include "msccl/runtime/Resolve.h"

#include <limits>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace msccl::runtime::sim::detail {
using namespace msccl::plan;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

struct Resource {
  uint8_t kind = 0;      // 0..4: link out, link in, hbm, nic out, nic in; 5: threadblock; 6: fabric link (tb = directed link)
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
  /// The next activity of a chain (a port put with signal whose entries share a channel: one
  /// chain per channel, one activity per entry: startData): started when this one's bytes are
  /// through. kNone: not chained, or a chain's last.
  uint32_t next = kNone;
  /// Index into Sim::joins_ of the op's count of chains still running: the threadblock
  /// continues when the last chain's last activity completes. kNone: not chained.
  uint32_t join = kNone;
  bool chained = false;    // not the op's first activity (its op's record started already)
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

/// Merges [b, e) into the interval map `m` (start -> end).
void addInterval(std::map<uint64_t, uint64_t> &m, uint64_t b, uint64_t e);
/// Whether [b, e) lies inside one interval of `m`.
bool covered(const std::map<uint64_t, uint64_t> &m, uint64_t b, uint64_t e);

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
  std::vector<uint32_t> joins_; // per chained op instance: its chains still running (Activity::join)
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
  uint32_t fabricBase_ = 0; // resource index of directed fabric link 0 (after the per-rank ones)
  /// Seconds for a flag or the first byte from rank a to rank b: the route's latency inside a
  /// node (intraLatencyUs without a fabric), the network's between nodes.
  double hop(uint32_t a, uint32_t b) const {
    if (node(a) != node(b))
      return topo_.netLatencyUs * 1e-6;
    return topo_.hopLatencyUs(a % topo_.gpusPerNode, b % topo_.gpusPerNode) * 1e-6;
  }

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
  // The Model column of the op table (PlanEnums.def): one handler per kind of timing.
  void modelInstant(TbState &s, const LoweredOp &op);
  void modelBarrier(TbState &s, const LoweredOp &op);
  void modelSignal(TbState &s, const LoweredOp &op);
  void modelWait(TbState &s, const LoweredOp &op);
  void modelSemRelease(TbState &s, const LoweredOp &op);
  void modelSemAcquire(TbState &s, const LoweredOp &op);
  void modelData(TbState &s, const LoweredOp &op);
  bool tryWait(TbState &s, const LoweredOp &op);
  bool trySem(TbState &s, const LoweredOp &op);
  bool packetsReady(TbState &s, const LoweredOp &op);
  void startData(TbState &s, const LoweredOp &op);
  Activity dataActivity(TbState &s, const LoweredOp &op, double &startDelay);
  void putSignals(const TbState &s, const LoweredOp &op, Activity &a, double delay);
  /// Records the op instance, adds `a` and starts it `startDelay` from now; returns its index.
  uint32_t startActivity(TbState &s, Activity &&a, double startDelay);
  /// Adds `a` (its weight: its largest demand) without starting it; returns its index.
  uint32_t addActivity(Activity &&a);
  /// Starts activity `id` at time `t` (an Ev::Start event).
  void startAt(uint32_t id, double t);
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
  // run()'s phases (Simulate.cpp): build the model, then per time step advance the transfers
  // and handle the due events; at the end check for deadlock and report.
  void build();
  void advance(double dt);
  void handle(const Event &e);
  void checkDeadlock() const;
  void resourceUse(SimReport &rep, double makespan) const;
  void criticalPath(SimReport &rep) const;
};

} // namespace msccl::runtime::sim::detail
