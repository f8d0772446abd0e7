//===- PlanVerify.cpp - Symbolic verification of an execution plan (issue 11 item 2) ----===//
//
// Consumes a Plan that checkPlanShape accepts; produces postcondition, deadlock and race
// findings. One symbolic execution at chunk granularity (units of 1/U chunk), over two or three
// launches per rank with per-rank kernel start/end events, with vector-clock happens-before.
// Op semantics follow runtime/lib/cpu/CpuOps.cpp; the sync rules follow RaceCheck.h. The model
// and its limits are in docs/verification.md. See PlanVerify.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/verify/PlanVerify.h"

#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Resolve.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

namespace msccl::verify {
using namespace msccl::plan;
using runtime::CollectiveKind;

namespace {

constexpr uint32_t kNone = UINT32_MAX;
/// A vector clock: per actor, the last tick known. Ticks are per-threadblock op numbers over all
/// launches (at most 64 ops per tb per launch, checkPlanShape), proxy op numbers and host events,
/// so 16 bits hold them; halving the clocks halves the verifier's memory and join time.
using Tick = uint16_t;
using Clock = std::vector<Tick>;
constexpr uint32_t kUninit = 0;  ///< Value id: never written since the kernel started.
constexpr uint32_t kGarbage = 1; ///< Value id: reduced with uninitialised data.

const char *bufferWord(BufferType t) {
  switch (t) {
  case BufferType::Input: return "input";
  case BufferType::Output: return "output";
  case BufferType::Scratch: return "scratch";
  }
  return "?";
}

/// Hash-consed multisets of contributions (sorted vectors).
struct Values {
  std::vector<std::vector<uint32_t>> sets{{}, {}};
  std::unordered_map<uint64_t, std::vector<uint32_t>> index;

  static uint64_t hash(const std::vector<uint32_t> &v) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t x : v)
      h = (h ^ x) * 1099511628211ull;
    return h ^ v.size();
  }
  uint32_t intern(std::vector<uint32_t> v) {
    uint64_t h = hash(v);
    auto &bucket = index[h];
    for (uint32_t id : bucket)
      if (sets[id] == v)
        return id;
    sets.push_back(std::move(v));
    bucket.push_back(uint32_t(sets.size() - 1));
    return uint32_t(sets.size() - 1);
  }
  uint32_t reduce(uint32_t a, uint32_t b) {
    if (a < 2 || b < 2)
      return kGarbage;
    std::vector<uint32_t> v;
    v.reserve(sets[a].size() + sets[b].size());
    std::merge(sets[a].begin(), sets[a].end(), sets[b].begin(), sets[b].end(), std::back_inserter(v));
    return intern(std::move(v));
  }
};

struct Access {
  uint32_t actor = kNone;
  uint32_t epoch = 0;   ///< The tb's sync epoch (nops seen): same-tb accesses are ordered across one.
  Tick tick = 0;        ///< Other actors know this access when their clock of `actor` >= tick.
  uint32_t op = kNone;  ///< Static op id (kNone: the host).
  uint8_t launch = 0;
  bool write = false;
};

struct Shadow {
  Access w;
  std::vector<Access> reads;
};

/// One op of a threadblock, flattened (a pipeline's inner ops follow it; the pipeline itself is
/// not executed: its body runs once over whole entries, docs/verification.md).
struct FlatOp {
  const Op *op = nullptr;
  uint32_t id = 0; ///< Static op id (index into Verifier::opRefs).
};

/// A resolved entry: which rank's buffer (or switch members), type, and unit range.
struct Ent {
  bool sw = false;
  uint32_t rank = 0;                    ///< Owner (not switch).
  const std::vector<uint32_t> *members = nullptr; ///< Switch members.
  BufferType type = BufferType::Input;
  uint64_t lo = 0, hi = 0;              ///< Units.
  uint64_t len() const { return hi - lo; }
};

struct TbRun {
  uint32_t rank = 0, tb = 0, actor = 0;
  std::vector<FlatOp> ops;
  size_t pc = 0;
  size_t cursor = 0;
  bool arrived = false;
  uint64_t barrierGen = 0;
  std::vector<int64_t> semOld;
  bool done = false;
  uint32_t serial = 0; ///< Ops executed (the op now running has tick serial + 1).
  uint32_t epoch = 0;  ///< Nops (and barriers) executed.
  std::string blockedOn;
};

struct BarrierState {
  uint32_t arrived = 0, expected = 0;
  uint64_t generation = 0;
  std::map<uint64_t, Clock> clocks; // generation -> joined clock
};

struct RankRun {
  uint32_t launch = 0;
  bool running = false;
  std::vector<uint32_t> tbs; ///< Indices into Verifier::tbs.
  std::vector<uint64_t> memSignals, memWaits, portSignals, portWaits;
  /// A signal in flight: `data` is the release clock (empty for a relaxed signal); `ctrl` the
  /// signaller's host clock: that its kernel runs, so its earlier launches ended.
  struct Msg {
    Clock data, ctrl;
  };
  std::vector<std::deque<Msg>> memFifo, portFifo;
  std::vector<int64_t> sems;
  std::vector<Clock> semClocks;
  std::map<uint32_t, BarrierState> barriers;
  uint64_t inBase = 0, outBase = 0, scrBase[2] = {0, 0};
  uint64_t inUnits = 0, outUnits = 0, scrUnits = 0;
  bool inAliasesOut = false; uint64_t inAliasOffset = 0;  ///< input unit j = output unit off + j
  bool outAliasesIn = false; uint64_t outAliasOffset = 0; ///< output unit j = input unit off + j
};

class Verifier {
public:
  Verifier(const Plan &plan, const VerifyOptions &opt, VerifyResult &res) : plan_(plan), opt_(opt), res_(res) {}
  void run();

private:
  const Plan &plan_;
  const VerifyOptions &opt_;
  VerifyResult &res_;
  runtime::ResolvedPlan resolved_;
  uint32_t n_ = 0, U_ = 1, L_ = 2;
  CollectiveKind kind_ = CollectiveKind::Other;
  bool inplace_ = false;
  std::vector<OpRef> opRefs_;
  std::vector<TbRun> tbs_;
  std::vector<RankRun> ranks_;
  uint32_t T_ = 0, N_ = 0;
  std::vector<Clock> clock_, pending_;
  std::vector<uint8_t> pendingDirty_; ///< Per tb: pending_ grew since the last nop.
  std::vector<uint32_t> hostSerial_;
  Values vals_;
  std::vector<uint32_t> plainVal_, pktVal_;
  std::vector<uint32_t> pktFlag_;
  std::vector<Shadow> plainShadow_, pktShadow_;
  std::vector<uint32_t> pktRel_;                 ///< Per packet unit: index into relPool_.
  std::vector<Clock> relPool_;   ///< Clocks released with packets.
  std::vector<uint32_t> lastRel_;                ///< Per actor: its last pooled clock.
  uint64_t space_ = 0;
  std::set<std::pair<uint32_t, uint32_t>> racePairs_;
  unsigned races_ = 0;
  bool postFailed_ = false;
  uint64_t inUnitsMax_ = 0;

  uint32_t proxyOf(uint32_t actor) const { return T_ + actor; }
  uint32_t hostOf(uint32_t rank) const { return 2 * T_ + rank; }

  // --- Setup ---------------------------------------------------------------------------
  bool setup();
  void flatten();
  // --- Clocks ----------------------------------------------------------------------------
  static void join(Clock &into, const Clock &from) {
    if (from.empty())
      return;
    if (into.size() < from.size())
      into.resize(from.size(), 0);
    for (size_t i = 0; i < from.size(); ++i)
      into[i] = std::max(into[i], from[i]);
  }
  Clock &clk(uint32_t a) {
    if (clock_[a].empty())
      clock_[a].assign(N_, 0);
    return clock_[a];
  }
  /// The clock a release by `tb` publishes: its completed epochs (every op before its last nop)
  /// and what it acquired; with `withCurrent` also the running op itself (pws, packets).
  Clock releaseClock(const TbRun &tb, bool withCurrent) {
    Clock c = clk(tb.actor);
    join(c, pending_[tb.actor]);
    if (withCurrent)
      c[tb.actor] = Tick(tb.serial + 1);
    return c;
  }
  /// A wait/acquire/flush by `tb`: the clock takes effect for the block at its next nop.
  void acquire(const TbRun &tb, const Clock &c) {
    join(pending_[tb.actor], c);
    pendingDirty_[tb.actor] = 1;
  }
  /// __syncthreads: the ops before complete an epoch; acquired clocks take effect.
  void nop(TbRun &tb) {
    auto &c = clk(tb.actor);
    c[tb.actor] = std::max<Tick>(c[tb.actor], Tick(tb.serial));
    tb.epoch++;
    if (pendingDirty_[tb.actor]) { // what was acquired since the last nop takes effect
      join(c, pending_[tb.actor]);
      pendingDirty_[tb.actor] = 0;
    }
  }
  // --- Memory ----------------------------------------------------------------------------
  uint64_t address(uint32_t rank, BufferType type, uint64_t unit, uint32_t launch, bool &ok) const;
  void access(const TbRun *tb, uint32_t actor, uint32_t opId, uint32_t launch, bool proxy, bool write, bool packet,
              uint32_t rank, BufferType type, uint64_t unit, uint64_t addr);
  void reportRace(const Access &other, const Access &now, uint32_t rank, BufferType type, uint64_t unit, bool packet);
  // --- Execution -------------------------------------------------------------------------
  bool resolveEntry(const TbRun &tb, const Op &op, const BufferRef &ref, Ent &e);
  bool step(TbRun &tb);
  void startLaunch(uint32_t r);
  void endLaunch(uint32_t r);
  void checkPostcondition(uint32_t r);
  void reportDeadlock();
  std::string describeValue(uint32_t v) const;
  std::string unitName(BufferType t, uint64_t unit) const;
  void fail(FindingKind k, const std::string &path, const std::string &msg, std::vector<OpRef> ops = {},
            bool warning = false) {
    Finding f;
    f.kind = k;
    f.warning = warning;
    f.path = path;
    f.message = msg;
    f.ops = std::move(ops);
    res_.findings.push_back(std::move(f));
  }
  OpRef ref(uint32_t opId, uint32_t launch) const {
    OpRef r = opRefs_[opId];
    r.launch = launch;
    return r;
  }
  std::string opText(uint32_t opId, const Op *op) const {
    const OpRef &r = opRefs_[opId];
    std::string s = "rank " + std::to_string(r.rank) + " tb " + std::to_string(r.tb) + " op " + std::to_string(r.op);
    if (r.inner >= 0)
      s += "." + std::to_string(r.inner);
    if (op)
      s += " (" + std::string(opName(op->type)) + ")";
    return s;
  }
  std::vector<const Op *> opPtr_;
};

// ----------------------------------------------------------------------------------------------

bool Verifier::setup() {
  n_ = uint32_t(plan_.gpus.size());
  kind_ = runtime::collectiveKind(plan_.collective);
  inplace_ = opt_.followInplace && plan_.inplace;
  L_ = plan_.useDoubleScratchBuffer ? 3 : 2;
  try {
    resolved_ = runtime::resolvePlan(plan_);
  } catch (const std::exception &e) {
    fail(FindingKind::Plan, "", e.what());
    return false;
  }
  // Units per chunk: lcm of the tbg sizes, so every tbg slice is whole units.
  uint64_t U = 1;
  std::vector<const Op *> stack;
  for (const Gpu &g : plan_.gpus)
    for (const Threadblock &tb : g.threadblocks)
      for (const Op &op : tb.ops) {
        stack.push_back(&op);
        for (const Op &in : op.ops)
          stack.push_back(&in);
      }
  for (const Op *op : stack)
    if (op->tbg && op->tbg->tbgSize > 1) {
      U = std::lcm(U, uint64_t(op->tbg->tbgSize));
      if (U > 4096) {
        fail(FindingKind::Unsupported, "", "threadblock-group sizes whose lcm exceeds 4096 are not supported");
        return false;
      }
    }
  U_ = uint32_t(U);
  res_.stats.ranks = n_;
  res_.stats.launches = L_;
  res_.stats.unitsPerChunk = U_;
  // Address space.
  ranks_.resize(n_);
  uint64_t a = 0;
  for (uint32_t r = 0; r < n_; ++r) {
    const Gpu &g = plan_.gpus[r];
    RankRun &rr = ranks_[r];
    rr.inUnits = g.inputChunks * U_;
    rr.outUnits = g.outputChunks * U_;
    rr.scrUnits = g.scratchChunks * U_;
    inUnitsMax_ = std::max(inUnitsMax_, rr.inUnits);
    rr.outBase = a;
    a += rr.outUnits;
    if (inplace_ && (kind_ == CollectiveKind::AllReduce || kind_ == CollectiveKind::AllToAll) &&
        g.inputChunks == g.outputChunks) {
      rr.inAliasesOut = true;
      rr.inAliasOffset = 0;
    } else if (inplace_ && kind_ == CollectiveKind::AllGather && g.outputChunks == uint64_t(n_) * g.inputChunks) {
      rr.inAliasesOut = true;
      rr.inAliasOffset = uint64_t(r) * rr.inUnits;
    }
    if (!rr.inAliasesOut) {
      rr.inBase = a;
      a += rr.inUnits;
    } else {
      rr.inBase = rr.outBase + rr.inAliasOffset;
    }
    if (inplace_ && kind_ == CollectiveKind::ReduceScatter && g.inputChunks == uint64_t(n_) * g.outputChunks) {
      // The output is input block r: give the output the input's addresses.
      rr.outAliasesIn = true;
      rr.outAliasOffset = uint64_t(r) * rr.outUnits;
      rr.outBase = rr.inBase + rr.outAliasOffset;
      // The output range allocated above is unused.
    }
    rr.scrBase[0] = a;
    a += rr.scrUnits;
    if (plan_.useDoubleScratchBuffer) {
      rr.scrBase[1] = a;
      a += rr.scrUnits;
    } else {
      rr.scrBase[1] = rr.scrBase[0];
    }
  }
  space_ = a;
  if (space_ > (uint64_t(1) << 28)) {
    fail(FindingKind::Unsupported, "", "the plan has more than 2^28 chunk units; too large to verify");
    return false;
  }
  plainVal_.assign(space_, kUninit);
  pktVal_.assign(space_, kUninit);
  pktFlag_.assign(space_, 0);
  plainShadow_.assign(space_, Shadow{});
  pktShadow_.assign(space_, Shadow{});
  pktRel_.assign(space_, kNone);
  flatten();
  // Channels and semaphores.
  for (uint32_t r = 0; r < n_; ++r) {
    RankRun &rr = ranks_[r];
    const auto &rg = resolved_.gpus[r];
    rr.memSignals.assign(rg.memoryChannels.size(), 0);
    rr.memWaits.assign(rg.memoryChannels.size(), 0);
    rr.portSignals.assign(rg.portChannels.size(), 0);
    rr.portWaits.assign(rg.portChannels.size(), 0);
    rr.memFifo.assign(rg.memoryChannels.size(), {});
    rr.portFifo.assign(rg.portChannels.size(), {});
    for (const Semaphore &s : plan_.gpus[r].semaphores)
      rr.sems.push_back(s.initValue);
    rr.semClocks.assign(plan_.gpus[r].semaphores.size(), {});
  }
  N_ = 2 * T_ + n_;
  clock_.assign(N_, {});
  pending_.assign(T_, {});
  pendingDirty_.assign(T_, 0);
  lastRel_.assign(N_, kNone);
  hostSerial_.assign(n_, 0);
  return true;
}

void Verifier::flatten() {
  for (uint32_t r = 0; r < n_; ++r) {
    const Gpu &g = plan_.gpus[r];
    for (uint32_t t = 0; t < g.threadblocks.size(); ++t) {
      TbRun tb;
      tb.rank = r;
      tb.tb = t;
      tb.actor = uint32_t(tbs_.size());
      const std::string base = "gpus[" + std::to_string(r) + "].threadblocks[" + std::to_string(t) + "].ops[";
      const auto &ops = g.threadblocks[t].ops;
      for (uint32_t k = 0; k < ops.size(); ++k) {
        auto add = [&](const Op &op, int inner, std::string path) {
          OpRef ref;
          ref.rank = int32_t(r);
          ref.tb = int32_t(t);
          ref.op = int32_t(k);
          ref.inner = inner;
          ref.path = std::move(path);
          opRefs_.push_back(std::move(ref));
          opPtr_.push_back(&op);
          tb.ops.push_back(FlatOp{&op, uint32_t(opRefs_.size() - 1)});
        };
        if (ops[k].type == OpType::Pipeline) {
          for (uint32_t j = 0; j < ops[k].ops.size(); ++j)
            add(ops[k].ops[j], int(j), base + std::to_string(k) + "].ops[" + std::to_string(j) + "]");
        } else {
          add(ops[k], -1, base + std::to_string(k) + "]");
        }
      }
      ranks_[r].tbs.push_back(tb.actor);
      tbs_.push_back(std::move(tb));
    }
  }
  T_ = uint32_t(tbs_.size());
}

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

std::string Verifier::unitName(BufferType t, uint64_t unit) const {
  std::string s = std::string(bufferWord(t)) + " chunk " + std::to_string(unit / U_);
  if (U_ > 1)
    s += " (part " + std::to_string(unit % U_) + " of " + std::to_string(U_) + ")";
  return s;
}

std::string Verifier::describeValue(uint32_t v) const {
  if (v == kUninit)
    return "nothing (never written in this launch)";
  if (v == kGarbage)
    return "a reduction with unwritten data";
  const auto &s = vals_.sets[v];
  const uint64_t iu = std::max<uint64_t>(inUnitsMax_, 1);
  // All contributions of one input unit: "the sum of input chunk c of ranks {..}".
  bool sameUnit = true;
  for (uint32_t x : s)
    if (x % iu != s[0] % iu)
      sameUnit = false;
  auto unitText = [&](uint64_t u) {
    std::string t = "input chunk " + std::to_string(u / U_);
    if (U_ > 1)
      t += " (part " + std::to_string(u % U_) + ")";
    return t;
  };
  if (s.size() == 1)
    return unitText(s[0] % iu) + " of rank " + std::to_string(s[0] / iu);
  std::string out;
  if (sameUnit) {
    out = "the sum of " + unitText(s[0] % iu) + " of ranks ";
    for (size_t i = 0; i < s.size() && i < 16; ++i)
      out += (i ? "," : "{") + std::to_string(s[i] / iu);
    out += s.size() > 16 ? ",...}" : "}";
    return out;
  }
  out = "the sum of ";
  for (size_t i = 0; i < s.size() && i < 8; ++i)
    out += (i ? " + " : "") + std::string("rank ") + std::to_string(s[i] / iu) + " " + unitText(s[i] % iu);
  if (s.size() > 8)
    out += " + ... (" + std::to_string(s.size()) + " terms)";
  return out;
}

void Verifier::reportRace(const Access &other, const Access &now, uint32_t rank, BufferType type, uint64_t unit,
                          bool packet) {
  ++races_;
  if (racePairs_.size() >= opt_.maxRaces)
    return;
  if (!racePairs_.insert({other.op, now.op}).second)
    return;
  auto who = [&](const Access &a) {
    if (a.op == kNone)
      return std::string("the host (rank ") + std::to_string(rank) + "'s kernel " +
             (a.write ? "start: the caller may write its buffers until then" : "end: the caller reads the result then") +
             ")";
    std::string s = opText(a.op, opPtr_[a.op]);
    if (a.actor >= T_ && a.actor < 2 * T_)
      s += " by its port proxy";
    s += " in launch " + std::to_string(a.launch);
    return s;
  };
  const bool sameRank = other.op != kNone && now.op != kNone && opRefs_[other.op].rank == opRefs_[now.op].rank;
  std::string missing;
  if (other.op == kNone || now.op == kNone)
    missing = "no handshake orders them (a peer may touch a rank's buffers only between an entry handshake with "
              "that rank and an exit handshake it waits for)";
  else if (other.actor == now.actor || (other.actor % T_) == (now.actor % T_))
    missing = (other.actor >= T_ || now.actor >= T_) ? "no flush (followed by a nop) after the port put"
                                                      : "no nop (__syncthreads) between them";
  else if (sameRank)
    missing = "no barrier, semaphore or signal/wait between the threadblocks";
  else
    missing = "no signal/wait (followed by a nop) between them";
  std::vector<OpRef> ops;
  if (now.op != kNone)
    ops.push_back(ref(now.op, now.launch));
  if (other.op != kNone)
    ops.push_back(ref(other.op, other.launch));
  fail(FindingKind::Race, now.op != kNone ? opRefs_[now.op].path : opRefs_[other.op].path,
       who(now) + (now.write ? " writes " : " reads ") + "rank " + std::to_string(rank) + "'s " +
           (packet ? "packets of " : "") + unitName(type, unit) + " while " + who(other) +
           (other.write ? " wrote" : " read") + " it: " + missing,
       std::move(ops));
}

void Verifier::access(const TbRun *tb, uint32_t actor, uint32_t opId, uint32_t launch, bool proxy, bool write,
                      bool packet, uint32_t rank, BufferType type, uint64_t unit, uint64_t addr) {
  res_.stats.accesses++;
  if (!opt_.races)
    return;
  Access now;
  now.op = opId;
  now.launch = uint8_t(launch);
  now.write = write;
  if (tb) {
    if (proxy) {
      now.actor = proxyOf(tb->actor);
      now.tick = clk(now.actor)[now.actor]; // advanced once per proxied op by the caller
    } else {
      now.actor = tb->actor;
      now.tick = Tick(tb->serial + 1);
      now.epoch = tb->epoch;
    }
  } else {
    now.actor = actor;
    now.tick = Tick(hostSerial_[rank]);
  }
  const Clock &c = clk(now.actor);
  auto ordered = [&](const Access &b) {
    if (b.actor == now.actor) // proxy lanes and the host are sequential; a tb needs a nop, or
      // to have acquired its own earlier op back through packets (a flag chain via a peer)
      return b.actor >= T_ || b.tick == now.tick || b.epoch < now.epoch || b.tick <= c[now.actor];
    return b.tick <= c[b.actor];
  };
  Shadow &s = (packet ? pktShadow_ : plainShadow_)[addr];
  if (s.w.actor != kNone && !ordered(s.w) && !(packet && !write))
    reportRace(s.w, now, rank, type, unit, packet);
  if (write) {
    for (const Access &rd : s.reads)
      if (!ordered(rd)) {
        reportRace(rd, now, rank, type, unit, packet);
        break;
      }
    s.reads.clear();
    s.w = now;
  } else {
    s.reads.erase(std::remove_if(s.reads.begin(), s.reads.end(), [&](const Access &rd) { return ordered(rd); }),
                  s.reads.end());
    s.reads.push_back(now);
  }
}

bool Verifier::resolveEntry(const TbRun &tb, const Op &op, const BufferRef &bref, Ent &e) {
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

void Verifier::startLaunch(uint32_t r) {
  RankRun &rr = ranks_[r];
  rr.running = true;
  const uint32_t h = hostOf(r);
  auto &hc = clk(h);
  hostSerial_[r]++;
  // The caller writes the input (and may reuse the output) before the kernel starts.
  bool ok;
  for (uint64_t u = 0; u < rr.inUnits; ++u) {
    uint64_t a = address(r, BufferType::Input, u, rr.launch, ok);
    access(nullptr, h, kNone, rr.launch, false, true, false, r, BufferType::Input, u, a);
    plainVal_[a] = vals_.intern({uint32_t(uint64_t(r) * inUnitsMax_ + u)});
  }
  for (uint64_t u = 0; u < rr.outUnits; ++u) {
    uint64_t a = address(r, BufferType::Output, u, rr.launch, ok);
    bool isInput = false;
    if (rr.inAliasesOut && u >= rr.inAliasOffset && u < rr.inAliasOffset + rr.inUnits)
      isInput = true;
    if (rr.outAliasesIn)
      isInput = true;
    if (isInput)
      continue;
    access(nullptr, h, kNone, rr.launch, false, true, false, r, BufferType::Output, u, a);
    plainVal_[a] = kUninit;
  }
  hc[h] = Tick(hostSerial_[r]);
  for (uint32_t t : rr.tbs) {
    TbRun &tb = tbs_[t];
    join(clk(tb.actor), hc);
    nop(tb);
    tb.pc = 0;
    tb.cursor = 0;
    tb.arrived = false;
    tb.done = tb.ops.empty();
  }
}

void Verifier::endLaunch(uint32_t r) {
  RankRun &rr = ranks_[r];
  const uint32_t h = hostOf(r);
  for (uint32_t t : rr.tbs) {
    Clock c = releaseClock(tbs_[t], true);
    join(clk(h), c);
  }
  hostSerial_[r]++;
  bool ok;
  for (uint64_t u = 0; u < rr.outUnits; ++u)
    access(nullptr, h, kNone, rr.launch, false, false, false, r, BufferType::Output, u,
           address(r, BufferType::Output, u, rr.launch, ok));
  if (!rr.inAliasesOut)
    for (uint64_t u = 0; u < rr.inUnits; ++u)
      access(nullptr, h, kNone, rr.launch, false, false, false, r, BufferType::Input, u,
             address(r, BufferType::Input, u, rr.launch, ok));
  clk(h)[h] = Tick(hostSerial_[r]);
  if (opt_.postcondition && !postFailed_)
    checkPostcondition(r);
  rr.running = false;
  rr.launch++;
}

void Verifier::checkPostcondition(uint32_t r) {
  if (kind_ == CollectiveKind::Other)
    return;
  const RankRun &rr = ranks_[r];
  const uint64_t out = rr.outUnits, in = rr.inUnits, iu = inUnitsMax_;
  auto contrib = [&](uint64_t rank, uint64_t unit) { return uint32_t(rank * iu + unit); };
  bool ok;
  for (uint64_t u = 0; u < out; ++u) {
    std::vector<uint32_t> exp;
    switch (kind_) {
    case CollectiveKind::AllReduce:
      if (in != out) goto shape;
      for (uint32_t s = 0; s < n_; ++s) exp.push_back(contrib(s, u));
      break;
    case CollectiveKind::AllGather:
      if (in == 0 || out != in * n_) goto shape;
      exp.push_back(contrib(u / in, u % in));
      break;
    case CollectiveKind::ReduceScatter:
      if (in != out * n_) goto shape;
      for (uint32_t s = 0; s < n_; ++s) exp.push_back(contrib(s, uint64_t(r) * out + u));
      break;
    case CollectiveKind::AllToAll: {
      if (in != out || out % (uint64_t(n_) * U_) != 0) goto shape;
      uint64_t block = out / n_;
      exp.push_back(contrib(u / block, uint64_t(r) * block + u % block));
      break;
    }
    case CollectiveKind::SendRecv:
      if (in != out) goto shape;
      exp.push_back(contrib((r + n_ - 1) % n_, u));
      break;
    case CollectiveKind::Other: return;
    }
    std::sort(exp.begin(), exp.end());
    {
      uint32_t got = plainVal_[address(r, BufferType::Output, u, rr.launch, ok)];
      if (got < 2 || vals_.sets[got] != exp) {
        postFailed_ = true;
        uint32_t want = vals_.intern(exp);
        fail(FindingKind::Postcondition, "gpus[" + std::to_string(r) + "]",
             std::string("at the end of launch ") + std::to_string(rr.launch) + ", rank " + std::to_string(r) + "'s " +
                 (rr.outAliasesIn ? "input (in-place) " : "") + unitName(BufferType::Output, u) + " holds " +
                 describeValue(got) + "; " + plan_.collective + " requires " + describeValue(want));
        return;
      }
    }
  }
  res_.postconditionChecked = true;
  return;
shape:
  postFailed_ = true;
  fail(FindingKind::Unsupported, "gpus[" + std::to_string(r) + "]",
       "rank " + std::to_string(r) + "'s chunk counts (input " + std::to_string(plan_.gpus[r].inputChunks) + ", output " +
           std::to_string(plan_.gpus[r].outputChunks) + ") do not have the shape of a " + plan_.collective +
           " over " + std::to_string(n_) + " ranks; the postcondition is not checked");
}

/// Executes the op at tb.pc; returns true when it completed.
bool Verifier::step(TbRun &tb) {
  const FlatOp &fo = tb.ops[tb.pc];
  const Op &op = *fo.op;
  RankRun &rr = ranks_[tb.rank];
  const uint32_t L = rr.launch;
  const ChannelType ct = op.channelType.value_or(ChannelType::None);
  const bool portProxy = ct == ChannelType::Port && (op.type == OpType::Put || op.type == OpType::PutWithSignal ||
                                                      op.type == OpType::PutWithSignalAndFlush ||
                                                      op.type == OpType::PutPackets);
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
    msg.ctrl = clk(hostOf(tb.rank));
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
    join(clk(p), releaseClock(tb, false));
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
          acquire(tb, msg.ctrl);
          if (ordersData)
            acquire(tb, msg.data);
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
        join(rr.semClocks.at(id), releaseClock(tb, false));
      rr.sems.at(id)++;
    }
    return true;
  case OpType::Pipeline:
    return true;
  default:
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
  default:
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
  default:
    break;
  }
  return true;
}

void Verifier::reportDeadlock() {
  // Who can unblock whom: a tb blocked on a channel waits for the tbs of the peer that signal
  // it; at a barrier, for the rank's tbs that have not arrived; on packets or a semaphore, for
  // any unfinished tb. Follow the first edge to a blocked tb until a tb repeats.
  std::vector<uint32_t> blocked;
  for (const TbRun &tb : tbs_)
    if (!tb.done && ranks_[tb.rank].running)
      blocked.push_back(tb.actor);
  if (blocked.empty())
    return;
  std::map<std::tuple<uint32_t, int, uint32_t>, std::vector<uint32_t>> signallers; // (rank, type, channel) -> tbs
  for (const TbRun &tb : tbs_) {
    const auto &rtb = resolved_.gpus[tb.rank].threadblocks[tb.tb];
    for (size_t i = tb.pc; i < tb.ops.size(); ++i) {
      const Op &op = *tb.ops[i].op;
      bool sig = op.type == OpType::Signal || op.type == OpType::RelaxedSignal || op.type == OpType::PutWithSignal ||
                 op.type == OpType::PutWithSignalAndFlush;
      if (!sig || !op.channelIds || !op.channelType)
        continue;
      int type = *op.channelType == ChannelType::Memory ? 0 : 1;
      const auto &table = type == 0 ? rtb.memoryChannels : rtb.portChannels;
      const auto &list = type == 0 ? resolved_.gpus[tb.rank].memoryChannels : resolved_.gpus[tb.rank].portChannels;
      for (uint32_t local : *op.channelIds)
        if (local < table.size() && table[local] < list.size() && list[table[local]].peerChannel != runtime::kNoChannel)
          signallers[{list[table[local]].peer, type, list[table[local]].peerChannel}].push_back(tb.actor);
    }
  }
  auto next = [&](uint32_t a) -> std::vector<uint32_t> {
    const TbRun &tb = tbs_[a];
    const Op &op = *tb.ops[tb.pc].op;
    std::vector<uint32_t> out;
    if (op.type == OpType::Wait || op.type == OpType::RelaxedWait) {
      int type = op.channelType == ChannelType::Memory ? 0 : 1;
      const auto &rtb = resolved_.gpus[tb.rank].threadblocks[tb.tb];
      const auto &table = type == 0 ? rtb.memoryChannels : rtb.portChannels;
      uint32_t local = (*op.channelIds)[tb.cursor];
      if (local < table.size())
        for (uint32_t s : signallers[{tb.rank, type, table[local]}])
          if (!tbs_[s].done)
            out.push_back(s);
    } else if (op.type == OpType::Barrier) {
      for (uint32_t s : ranks_[tb.rank].tbs)
        if (s != a && !tbs_[s].done && !tbs_[s].arrived)
          out.push_back(s);
    } else {
      for (uint32_t s : blocked)
        if (s != a)
          out.push_back(s);
    }
    return out;
  };
  // Find a cycle by walking from each blocked tb.
  std::vector<uint32_t> cycle;
  for (uint32_t start : blocked) {
    std::vector<uint32_t> path;
    std::map<uint32_t, size_t> seen;
    uint32_t cur = start;
    while (true) {
      if (seen.count(cur)) {
        cycle.assign(path.begin() + long(seen[cur]), path.end());
        break;
      }
      seen[cur] = path.size();
      path.push_back(cur);
      std::vector<uint32_t> nx = next(cur);
      std::vector<uint32_t> live;
      for (uint32_t x : nx)
        if (!tbs_[x].done && ranks_[tbs_[x].rank].running)
          live.push_back(x);
      if (live.empty()) {
        // Starved: nobody left can satisfy it.
        const TbRun &tb = tbs_[cur];
        const FlatOp &fo = tb.ops[tb.pc];
        bool launchWait = false;
        for (uint32_t x : nx)
          if (!ranks_[tbs_[x].rank].running)
            launchWait = true;
        fail(FindingKind::Deadlock, opRefs_[fo.id].path,
             opText(fo.id, fo.op) + " in launch " + std::to_string(ranks_[tb.rank].launch) + " " + tb.blockedOn +
                 (launchWait ? ", which only a later launch of the peer would send (one rank's kernel cannot wait "
                               "for another launch)"
                             : ", which no remaining operation of any rank sends"),
             {ref(fo.id, ranks_[tb.rank].launch)});
        return;
      }
      cur = live.front();
    }
    if (!cycle.empty())
      break;
  }
  std::string msg = "every schedule blocks: ";
  std::vector<OpRef> ops;
  for (size_t i = 0; i < cycle.size(); ++i) {
    const TbRun &tb = tbs_[cycle[i]];
    const FlatOp &fo = tb.ops[tb.pc];
    msg += (i ? "; " : "") + opText(fo.id, fo.op) + " " + tb.blockedOn;
    ops.push_back(ref(fo.id, ranks_[tb.rank].launch));
  }
  msg += " (a cycle of " + std::to_string(cycle.size()) + " waits, in launch " +
         std::to_string(ranks_[tbs_[cycle[0]].rank].launch) + ")";
  fail(FindingKind::Deadlock, ops.empty() ? "" : ops[0].path, msg, ops);
}

void Verifier::run() {
  if (!setup())
    return;
  // Channel and semaphore users: the verifier's all-schedules argument needs one waiting tb per
  // channel and per semaphore (docs/verification.md).
  {
    std::map<std::tuple<uint32_t, int, uint32_t>, std::set<uint32_t>> waiters;
    for (const TbRun &tb : tbs_) {
      const auto &rtb = resolved_.gpus[tb.rank].threadblocks[tb.tb];
      for (const FlatOp &fo : tb.ops) {
        const Op &op = *fo.op;
        if ((op.type == OpType::Wait || op.type == OpType::RelaxedWait) && op.channelIds && op.channelType) {
          int type = *op.channelType == ChannelType::Memory ? 0 : 1;
          const auto &table = type == 0 ? rtb.memoryChannels : rtb.portChannels;
          for (uint32_t c : *op.channelIds)
            if (c < table.size())
              waiters[{tb.rank, type, table[c]}].insert(tb.tb);
        }
        if (op.type == OpType::SemAcquire)
          for (uint32_t id : op.semaphoreIds)
            waiters[{tb.rank, 2, id}].insert(tb.tb);
      }
    }
    for (auto &[key, set] : waiters)
      if (set.size() > 1) {
        fail(FindingKind::Unsupported, "gpus[" + std::to_string(std::get<0>(key)) + "]",
             std::string("rank ") + std::to_string(std::get<0>(key)) + "'s " +
                 (std::get<1>(key) == 2 ? "semaphore " : std::get<1>(key) == 0 ? "memory channel " : "port channel ") +
                 std::to_string(std::get<2>(key)) + " is waited on by " + std::to_string(set.size()) +
                 " threadblocks: which wait a signal satisfies depends on the schedule, so the verdict below holds "
                 "for the schedule explored only",
             {}, true);
        break;
      }
  }
  for (uint32_t r = 0; r < n_; ++r)
    startLaunch(r);
  while (true) {
    bool progress = false, running = false;
    for (uint32_t r = 0; r < n_; ++r) {
      RankRun &rr = ranks_[r];
      if (!rr.running)
        continue;
      running = true;
      bool allDone = true;
      for (uint32_t t : rr.tbs) {
        TbRun &tb = tbs_[t];
        while (!tb.done) {
          if (!step(tb))
            break;
          res_.stats.opsExecuted++;
          progress = true;
          tb.serial++;
          tb.pc++;
          tb.cursor = 0;
          if (tb.pc >= tb.ops.size())
            tb.done = true;
        }
        if (!tb.done)
          allDone = false;
      }
      if (allDone) {
        endLaunch(r);
        progress = true;
        if (rr.launch < L_)
          startLaunch(r);
      }
    }
    if (!running)
      break;
    if (!progress) {
      reportDeadlock();
      break;
    }
  }
  res_.stats.races = races_;
  // Every launch must consume exactly the signals and semaphore releases it makes: a left-over
  // signal satisfies a wait of the next launch before its peer got there.
  bool finished = true;
  for (const RankRun &rr : ranks_)
    finished = finished && rr.launch >= L_;
  if (!finished)
    return;
  for (uint32_t r = 0; r < n_; ++r) {
    const RankRun &rr = ranks_[r];
    for (int type = 0; type < 2; ++type) {
      const auto &sig = type == 0 ? rr.memSignals : rr.portSignals;
      const auto &wt = type == 0 ? rr.memWaits : rr.portWaits;
      for (size_t c = 0; c < sig.size(); ++c)
        if (sig[c] != wt[c]) {
          fail(FindingKind::Race, "gpus[" + std::to_string(r) + "].channels",
               "unbalanced signals: rank " + std::to_string(r) + "'s " + (type == 0 ? "memory" : "port") +
                   " channel " + std::to_string(c) + " received " + std::to_string(sig[c]) + " signals but waited " +
                   std::to_string(wt[c]) + " times in " + std::to_string(L_) +
                   " launches: a left-over signal satisfies a later launch's wait before its peer gets there");
          return;
        }
    }
    for (size_t i = 0; i < rr.sems.size(); ++i)
      if (rr.sems[i] != plan_.gpus[r].semaphores[i].initValue) {
        fail(FindingKind::Race, "gpus[" + std::to_string(r) + "].semaphores[" + std::to_string(i) + "]",
             "unbalanced semaphore: rank " + std::to_string(r) + "'s semaphore " + std::to_string(i) + " ends " +
                 std::to_string(L_) + " launches at " + std::to_string(rr.sems[i]) + " instead of its initial value " +
                 std::to_string(plan_.gpus[r].semaphores[i].initValue) +
                 ": a later launch's acquire is satisfied by an earlier launch's release");
        return;
      }
  }
}

} // namespace

VerifyResult verifyPlan(const Plan &plan, const VerifyOptions &options) {
  VerifyResult res;
  res.findings = checkPlanShape(plan);
  if (!res.proven())
    return res;
  Verifier v(plan, options, res);
  v.run();
  bool races = false;
  for (const Finding &f : res.findings)
    races = races || (f.kind == FindingKind::Race && !f.warning);
  if (!races || !options.races || options.relaxedOrdersData)
    return res;
  // Which races would a release/acquire handshake remove? Those are only missing the data
  // ordering of a relaxed signal/wait (e.g. a relaxed exit handshake): warnings, not errors
  // (docs/verification.md, "relaxed handshakes").
  VerifyOptions strict = options;
  strict.relaxedOrdersData = true;
  VerifyResult again;
  Verifier v2(plan, strict, again);
  v2.run();
  auto key = [](const Finding &f) {
    std::string k;
    for (const OpRef &o : f.ops)
      k += o.path + "|";
    return k;
  };
  std::set<std::string> remaining;
  bool unattributed = false;
  for (const Finding &f : again.findings)
    if (f.kind == FindingKind::Race && !f.warning)
      remaining.insert(key(f));
  // Races beyond the report limit cannot be attributed: keep everything an error then.
  unattributed = again.findings.size() && remaining.size() >= options.maxRaces;
  // Only handshakes with a kernel's start or end (a race with the host) are downgraded: data
  // that one op hands to another through a relaxed signal/wait is a race.
  for (Finding &f : res.findings)
    if (f.kind == FindingKind::Race && !f.warning && !unattributed && f.ops.size() < 2 && !remaining.count(key(f))) {
      f.warning = true;
      f.message = "relaxed handshake: " + f.message +
                  " (a relaxed signal/wait is between them; it orders no data, so this holds only if the "
                  "hardware makes the stores visible before the relaxed signal)";
    }
  return res;
}

} // namespace msccl::verify
