//===- PlanVerifyRun.cpp - The static verifier: schedule, postconditions, deadlocks -------===//
//
// Verifier::run drives every rank's launches to the end; checkPostcondition compares each output
// chunk with the collective's definition; reportDeadlock names the cycle of waits
// (PlanVerifyInternal.h).
//
//===------------------------------------------------------------------------------------===//
#include "PlanVerifyInternal.h"

namespace msccl::verify::detail {
using namespace msccl::plan;
using runtime::CollectiveKind;

void Verifier::checkPostcondition(uint32_t r) {
  if (kind_ == CollectiveKind::Other)
    return;
  const RankRun &rr = ranks_[r];
  const uint64_t out = rr.outUnits, in = rr.inUnits, iu = inUnitsMax_;
  auto contrib = [&](uint64_t rank, uint64_t unit) { return uint32_t(rank * iu + unit); };
  bool ok;
  if (out > 0 && !runtime::outputShapeFits(kind_, n_, in, out, U_))
    goto shape;
  if (!runtime::outputDefinedOn(kind_, r)) { // Reduce: only the root's output is defined
    res_.postconditionChecked = true;
    return;
  }
  for (uint64_t u = 0; u < out; ++u) {
    // The definition of output unit u (Collectives.def Output).
    const runtime::OutputSource src = runtime::outputSource(kind_, n_, r, in, out, u);
    std::vector<uint32_t> exp;
    if (src.from == runtime::OutputSource::From::AllRanks)
      for (uint32_t s = 0; s < n_; ++s)
        exp.push_back(contrib(s, src.index));
    else
      exp.push_back(contrib(src.rank, src.index));
    std::sort(exp.begin(), exp.end());
    {
      const uint64_t a = address(r, BufferType::Output, u, rr.launch, ok);
      uint32_t got = plainVal_[a];
      if (got < 2 || vals_.sets[got] != exp) {
        postFailed_ = true;
        uint32_t want = vals_.intern(exp);
        // The op that wrote the wrong value is the one to blame (none: no op wrote it).
        std::vector<OpRef> at;
        std::string writer;
        if (plainWriter_[a] != kNone) {
          at.push_back(ref(plainWriter_[a], plainWriterLaunch_[a]));
          writer = " (written last by rank " + std::to_string(at[0].rank) + " tb " + std::to_string(at[0].tb) +
                   " op " + std::to_string(at[0].op) + ")";
          // The ops that brought the value there, newest first (notes at their calls). A value
          // that counts a contribution twice was made by a reduction: moves (put, get, copy) pass
          // values on unchanged, so such a finding goes to the newest op of the chain that
          // computes (a reduce); any other wrong value (a wrong or missing piece) to the last
          // writer, which put it there.
          std::vector<OpRef> chain = valueChain(a);
          if (!chain.empty()) {
            writer.pop_back();
            writer += "; the value came through";
            for (const OpRef &o : chain)
              writer += " rank " + std::to_string(o.rank) + " tb " + std::to_string(o.tb) + " op " +
                        std::to_string(o.op) + (&o == &chain.back() ? ")" : ",");
            at.insert(at.end(), chain.begin(), chain.end());
            auto computes = [&](const OpRef &o) {
              const auto &ops = plan_.gpus[size_t(o.rank)].threadblocks[size_t(o.tb)].ops;
              const Op &op = o.inner >= 0 ? ops[size_t(o.op)].ops[size_t(o.inner)] : ops[size_t(o.op)];
              return isReduceFamily(op.type) || isSwitchOp(op.type);
            };
            const auto &terms = vals_.sets[got];
            const bool twice = got >= 2 && std::adjacent_find(terms.begin(), terms.end()) != terms.end();
            auto fault = twice ? std::find_if(at.begin(), at.end(), computes) : at.begin();
            if (fault != at.end() && fault != at.begin())
              std::rotate(at.begin(), fault, fault + 1); // report there; the others stay notes
          }
        }
        fail(FindingKind::Postcondition, "gpus[" + std::to_string(r) + "]",
             std::string("at the end of launch ") + std::to_string(rr.launch) + ", rank " + std::to_string(r) + "'s " +
                 (rr.outAliasesIn ? "input (in-place) " : "") + unitName(BufferType::Output, u) + " holds " +
                 describeValue(got) + "; " + plan_.collective + " requires " + describeValue(want) + writer,
             std::move(at));
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
      bool sig = opHas(op.type, optrait::Signals);
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
    if (opHas(op.type, optrait::Waits)) {
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
        if (opHas(op.type, optrait::Waits) && op.channelIds && op.channelType) {
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

std::vector<OpRef> Verifier::valueChain(uint64_t a) const {
  std::vector<OpRef> chain;
  std::set<uint32_t> seen;
  uint32_t w = plainWriter_[a];
  seen.insert(w);
  for (int step = 0; step < 6 && w != kNone; ++step) {
    // Where did writer w read the value it wrote at address `a`? The source entry paired with the
    // destination entry holding `a` (put/get: the i-th pair; copy/reduce: the first source),
    // at the same unit offset.
    const TbRun &tb = tbs_[opPos_[w].first];
    const Op &op = *opPtr_[w];
    const uint32_t L = plainWriterLaunch_[a];
    std::optional<uint64_t> from;
    for (size_t i = 0; i < op.dst.size() && !from; ++i) {
      Ent d;
      if (!resolveEntry(tb, op, op.dst[i], d) || d.sw)
        continue;
      for (uint64_t k = 0; k < d.len() && !from; ++k) {
        bool ok = true;
        if (address(d.rank, d.type, d.lo + k, L, ok) != a || !ok)
          continue;
        Ent s;
        const size_t si = i < op.src.size() ? i : 0;
        if (op.src.empty() || !resolveEntry(tb, op, op.src[si], s) || s.sw ||
            k >= s.len())
          break;
        const uint64_t b = address(s.rank, s.type, s.lo + k, L, ok);
        if (ok && b != a)
          from = b;
      }
    }
    if (!from)
      break;
    // The source still holds what w read only if its value is w's (a move) or part of it (a
    // reduction); otherwise it was written after w read it, and the chain ends here.
    const uint32_t v = plainVal_[a], u = plainVal_[*from];
    const bool move = !isReduceFamily(op.type);
    bool same = move ? u == v : false;
    if (!move && u >= 2 && v >= 2) {
      const auto &part = vals_.sets[u], &whole = vals_.sets[v];
      same = std::includes(whole.begin(), whole.end(), part.begin(), part.end());
    }
    if (!same)
      break;
    a = *from;
    w = plainWriter_[a];
    if (w == kNone || !seen.insert(w).second)
      break;
    chain.push_back(ref(w, plainWriterLaunch_[a]));
  }
  return chain;
}

} // namespace msccl::verify::detail
