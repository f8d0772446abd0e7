//===- PlanVerify.cpp - Symbolic verification of an execution plan (issue 11 item 2) ----===//
//
// Consumes a Plan that checkPlanShape accepts; produces postcondition, deadlock and race
// findings. One symbolic execution at chunk granularity (units of 1/U chunk), over two or three
// launches per rank with per-rank kernel start/end events, with vector-clock happens-before.
// Op semantics follow runtime/lib/cpu/CpuOps.cpp; the sync rules follow RaceCheck.h. The model
// and its limits are in docs/verification.md. See PlanVerify.h.
//
//===------------------------------------------------------------------------------------===//
#include "PlanVerifyInternal.h"
#include "msccl/plan/Symbolic.h"

namespace msccl::verify::detail {
using namespace msccl::plan;
using runtime::CollectiveKind;
using runtime::InPlace;
using runtime::collectiveInPlace;

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
    const InPlace alias = inplace_ ? collectiveInPlace(kind_) : InPlace::Unknown; // Collectives.def
    if (alias == InPlace::Same && g.inputChunks == g.outputChunks) {
      rr.inAliasesOut = true;
      rr.inAliasOffset = 0;
    } else if (alias == InPlace::InputInOutput && g.outputChunks == uint64_t(n_) * g.inputChunks) {
      rr.inAliasesOut = true;
      rr.inAliasOffset = uint64_t(r) * rr.inUnits;
    }
    if (!rr.inAliasesOut) {
      rr.inBase = a;
      a += rr.inUnits;
    } else {
      rr.inBase = rr.outBase + rr.inAliasOffset;
    }
    if (alias == InPlace::OutputInInput && g.inputChunks == uint64_t(n_) * g.outputChunks) {
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
  plainWriter_.assign(space_, kNone);
  plainWriterLaunch_.assign(space_, 0);
  pktVal_.assign(space_, kUninit);
  pktFlag_.assign(space_, 0);
  plainShadow_.assign(space_, Shadow{});
  pktShadow_.assign(space_, Shadow{});
  pktRel_.assign(space_, kNone);
  flatten();
  checkPacketFootprints();
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
  // Every threadblock holds a clock of N_ ticks and a pending one: memory quadratic in the
  // threadblocks, so decided here, before any is allocated (issue: bounded resources).
  const unsigned __int128 clockBytes = (unsigned __int128)2 * T_ * N_ * sizeof(Tick);
  if (clockBytes > opt_.maxClockBytes) {
    fail(FindingKind::Unsupported, "",
         "the plan has " + std::to_string(T_) + " threadblocks over all ranks: verifying it needs " +
             std::to_string(uint64_t(clockBytes >> 20)) + " MiB of vector clocks, more than the limit of " +
             std::to_string(opt_.maxClockBytes >> 20) +
             " MiB (VerifyOptions::maxClockBytes); verify the same algorithm with fewer chunks or ranks");
    return false;
  }
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
          opPos_.push_back({tb.actor, uint32_t(tb.ops.size())});
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
  const std::string what = "rank " + std::to_string(rank) + "'s " + (packet ? "packets of " : "") + unitName(type, unit);
  std::vector<OpRef> ops;
  if (other.op != kNone && now.op != kNone) {
    // Report at the access that lacks its acquire (or the sync op that fails it), with the fix.
    const RaceBlame b = blameRace(other.op, now.op);
    if (b.culprit != kNone) {
      const Access &early = b.early == other.op ? other : now;
      const Access &late = &early == &other ? now : other;
      const uint32_t at = b.culprit;
      ops.push_back(ref(at, early.launch));
      if (at != early.op)
        ops.push_back(ref(early.op, early.launch));
      ops.push_back(ref(late.op, late.launch));
      if (b.related != kNone && b.related != at)
        ops.push_back(ref(b.related, b.early == other.op ? other.launch : now.launch));
      fail(FindingKind::Race, opRefs_[at].path,
           who(early) + (early.write ? " writes " : " reads ") + what + ", which " + who(late) +
               (late.write ? " writes" : " reads") + ", with nothing ordering them: " + missing + "; " + b.fix,
           std::move(ops));
      return;
    }
  }
  if (now.op != kNone)
    ops.push_back(ref(now.op, now.launch));
  if (other.op != kNone)
    ops.push_back(ref(other.op, other.launch));
  fail(FindingKind::Race, now.op != kNone ? opRefs_[now.op].path : opRefs_[other.op].path,
       who(now) + (now.write ? " writes " : " reads ") + what + " while " + who(other) +
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
    plainWriter_[a] = kNone;
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
    plainWriter_[a] = kNone;
  }
  hc[h] = Tick(hostSerial_[r]);
  if (opt_.races) {
    if (hostStart_.size() <= r)
      hostStart_.resize(n_);
    if (hostStart_[r].size() <= rr.launch)
      hostStart_[r].resize(rr.launch + 1);
    hostStart_[r][rr.launch] = hc;
  }
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
  for (uint32_t t : rr.tbs) { // join releaseClock(tb, true) without copying it
    const TbRun &tb = tbs_[t];
    Clock &hc = clk(h);
    join(hc, clk(tb.actor));
    join(hc, pending_[tb.actor]);
    hc[tb.actor] = std::max(hc[tb.actor], Tick(tb.serial + 1));
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


} // namespace msccl::verify::detail

namespace msccl::verify {
using namespace msccl::plan;
using detail::Verifier;

VerifyResult verifyPlan(const Plan &plan, const VerifyOptions &options) {
  if (plan.variableSizes) {
    // AllToAllV, for every count matrix: (1) every entry's index_expr/size_expr is the offset and
    // length of its block range under the layout (prefix sums of the counts; scratch slots B
    // apart) and every op's entries have the same length as affine forms; (2) the block-level
    // plan (one chunk per block) is a correct, race- and deadlock-free AllToAll. The layout maps
    // disjoint block ranges to disjoint element ranges and blocks are never split, so (1) + (2)
    // carry the proof to every matrix (docs/verification.md, "AllToAllV").
    std::vector<SymIssue> issues = checkAllToAllV(plan);
    if (!issues.empty()) {
      VerifyResult res;
      for (const SymIssue &i : issues) {
        Finding f;
        f.kind = FindingKind::Plan;
        f.path = i.path;
        f.message = "variable sizes: " + i.message;
        if (i.rank >= 0 && i.tb >= 0 && i.op >= 0) {
          OpRef o;
          o.rank = i.rank, o.tb = i.tb, o.op = i.op;
          o.path = "gpus[" + std::to_string(i.rank) + "].threadblocks[" + std::to_string(i.tb) + "].ops[" + std::to_string(i.op) + "]";
          f.ops.push_back(o);
        }
        res.findings.push_back(std::move(f));
      }
      return res;
    }
    return verifyPlan(blockImage(plan), options);
  }
  VerifyResult res;
  res.findings = checkPlanShape(plan, options.deviceLimits);
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
