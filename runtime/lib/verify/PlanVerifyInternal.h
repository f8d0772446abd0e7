//===- PlanVerifyInternal.h - The static verifier's state (private to runtime/lib/verify) --===//
//
// The symbolic machine of PlanVerify.cpp (setup, addresses, launches, verifyPlan),
// PlanVerifyStep.cpp (one op of one threadblock: its reads, writes and syncs) and
// PlanVerifyRun.cpp (the schedule, postconditions, deadlock reports). See PlanVerify.h.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/verify/PlanVerify.h"

#include "msccl/plan/OpTable.h"
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

namespace detail {

inline constexpr uint32_t kNone = UINT32_MAX;
/// A vector clock: per actor, the last tick known. Ticks are per-threadblock op numbers over all
/// launches (at most 64 ops per tb per launch, checkPlanShape), proxy op numbers and host events,
/// so 16 bits hold them; halving the clocks halves the verifier's memory and join time.
using Tick = uint16_t;
using Clock = std::vector<Tick>;
constexpr uint32_t kUninit = 0;  ///< Value id: never written since the kernel started.
constexpr uint32_t kGarbage = 1; ///< Value id: reduced with uninitialised data.

inline const char *bufferWord(BufferType t) {
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

/// Which of two racing ops is at fault (RaceBlame.cpp): `early` is the access that runs before
/// the synchronisation its threadblock already has, `culprit` the op to report at (the access, or
/// the wait/signal that lacks its nop or is relaxed), `fix` what to change. culprit == kNone:
/// no synchronisation in the program would order them; report as found.
struct RaceBlame {
  uint32_t early = kNone, culprit = kNone;
  uint32_t related = kNone; ///< The sync op the fix names (a note at its call), when not the culprit.
  std::string fix;
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
  /// A signal in flight: `data` is the release clock (empty for a relaxed signal); the
  /// signaller's host clock at its kernel start (Verifier::hostStart_[ctrlRank][ctrlLaunch]):
  /// that its kernel runs, so its earlier launches ended. Not copied per signal: it is the same
  /// for every signal of a launch, and `data` includes it.
  struct Msg {
    Clock data;
    uint32_t ctrlRank = kNone, ctrlLaunch = 0;
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
  std::vector<std::vector<Clock>> hostStart_; ///< [rank][launch]: the host clock at the kernel start.
  Values vals_;
  std::vector<uint32_t> plainVal_, pktVal_;
  /// Per address: the op (opRefs_ index) that last wrote its plain value, kNone for the host's
  /// values (inputs, cleared outputs), and the launch it ran in: a wrong postcondition value is
  /// reported at the op that put it there.
  std::vector<uint32_t> plainWriter_;
  std::vector<uint8_t> plainWriterLaunch_;
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
    joinTicks(into.data(), from.data(), from.size());
  }
  /// into[i] = max(into[i], from[i]) for i < n: the verifier's hot loop (most of its time at 64
  /// ranks goes to joining clocks of 8 K actors), 16 ticks per step with GCC/Clang vector
  /// extensions (any x86-64 or AArch64; `into` and `from` never overlap).
  static void joinTicks(Tick *__restrict into, const Tick *__restrict from, size_t n) {
    size_t i = 0;
#if defined(__GNUC__)
    typedef Tick V __attribute__((vector_size(32)));
    for (; i + 16 <= n; i += 16) {
      V a, b;
      __builtin_memcpy(&a, into + i, sizeof a);
      __builtin_memcpy(&b, from + i, sizeof b);
      a = a > b ? a : b;
      __builtin_memcpy(into + i, &a, sizeof a);
    }
#endif
    for (; i < n; ++i)
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
  /// join(into, releaseClock(tb, false)) without the copy.
  void joinRelease(Clock &into, const TbRun &tb) {
    join(into, clk(tb.actor));
    join(into, pending_[tb.actor]);
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
  RaceBlame blameRace(uint32_t opA, uint32_t opB) const;
  /// A memory or port channel a sync op `id` names: its type, gpu-level index and resolution.
  struct SyncChannel {
    ChannelType type;
    uint32_t index;
    const runtime::ResolvedChannel *channel;
  };
  /// The memory and port channels op `id` names (switch channels are not matched).
  std::vector<SyncChannel> syncChannels(uint32_t id) const;
  /// Ranks that sync op `id` signals or waits on (its memory and port channels' peers).
  std::vector<uint32_t> syncPeers(uint32_t id) const;
  /// The first op after position `from` of threadblock `actor` that has one of `traits` and
  /// syncs with rank `peer` (kNone when none); from = UINT32_MAX searches from the first op.
  uint32_t nextSyncWith(uint32_t actor, uint32_t from, OpTraits traits, uint32_t peer) const;
  /// Whether threadblock `actor` has a nop or barrier strictly between positions `from` and `to`.
  bool nopBetween(uint32_t actor, uint32_t from, uint32_t to) const;
  /// Scratch used as LL packets and as plain data in overlapping bytes (PacketFootprint.cpp).
  void checkPacketFootprints();
  // --- Execution -------------------------------------------------------------------------
  bool resolveEntry(const TbRun &tb, const Op &op, const BufferRef &ref, Ent &e) const;
  bool step(TbRun &tb);
  // One op (PlanVerifyStep.cpp): step() resolves a data op's entries, then calls the handler
  // its op table row names in the Verify column (PlanEnums.def: step<Verify>), each returning
  // false while the op is blocked (tb.blockedOn says on what).
  struct Step; ///< The op being stepped and the accessors its handlers share.
  bool resolveData(Step &s); ///< A data op's entries; false when reported or empty (op done).
  bool stepNop(Step &s);
  bool stepFlush(Step &s);
  bool stepPipeline(Step &s);
  bool stepBarrier(Step &s);
  bool stepSignal(Step &s);
  bool stepWait(Step &s);
  bool stepSemAcquire(Step &s);
  bool stepSemRelease(Step &s);
  bool stepPutGet(Step &s);
  bool stepCopyReduce(Step &s);
  bool stepSwitch(Step &s);
  bool stepPacketsOut(Step &s);
  bool stepPacketsIn(Step &s);
  bool stepReducePackets(Step &s);
  void startLaunch(uint32_t r);
  void endLaunch(uint32_t r);
  void checkPostcondition(uint32_t r);
  /// The ops that brought the plain value at address `a` there before its last writer, newest
  /// first (at most 6): each writer's source unit and that unit's writer, while the source still
  /// holds what the writer read (its value for a move, a part of it for a reduction).
  std::vector<OpRef> valueChain(uint64_t a) const;
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
  std::vector<std::pair<uint32_t, uint32_t>> opPos_; ///< Per op id: its threadblock (actor) and flat position.
};

} // namespace detail
} // namespace msccl::verify
