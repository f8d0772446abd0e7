//===- RaceBlame.cpp - Which of two racing ops is at fault, and the fix -------------------===//
//
// Consumes two ops the static verifier found racing (no happens-before between their accesses)
// and the plan's program text; produces the op a person should change (RaceBlame) and how. The
// verifier's schedule reports a race at whichever access ran second, which is often the correct
// one (a peer's put that its handshake ordered) while the fault is elsewhere: an access placed
// before the wait that would order it, a wait with no nop after it (data_sync = none) or relaxed,
// a signal with no nop before it or relaxed, a threadblock of a group that skips the wait its
// siblings have. Signals and waits are matched as the executors match them: the k-th wait on a
// channel consumes the k-th signal on its partner channel (memory and port channels; switch
// channels are not matched). When no rule applies to exactly one side, the race is reported as
// found (culprit kNone).
//
//===------------------------------------------------------------------------------------===//
#include "PlanVerifyInternal.h"

namespace msccl::verify::detail {
using namespace msccl::plan;

namespace {

/// nextSyncWith's `from` that searches from the first op (from + 1 wraps to 0).
constexpr uint32_t kFromStart = UINT32_MAX;

} // namespace

std::vector<Verifier::SyncChannel> Verifier::syncChannels(uint32_t id) const {
  const Op &op = *opPtr_[id];
  const OpRef &r = opRefs_[id];
  std::vector<SyncChannel> out;
  const ChannelType ct = op.channelType.value_or(ChannelType::None);
  if (!op.channelIds || (ct != ChannelType::Memory && ct != ChannelType::Port))
    return out;
  const auto &rg = resolved_.gpus[uint32_t(r.rank)];
  const auto &rtb = rg.threadblocks[uint32_t(r.tb)];
  const auto &table = ct == ChannelType::Memory ? rtb.memoryChannels : rtb.portChannels;
  const auto &chans = ct == ChannelType::Memory ? rg.memoryChannels : rg.portChannels;
  for (uint32_t local : *op.channelIds)
    if (local < table.size() && table[local] < chans.size())
      out.push_back({ct, table[local], &chans[table[local]]});
  return out;
}

std::vector<uint32_t> Verifier::syncPeers(uint32_t id) const {
  std::vector<uint32_t> peers;
  for (const SyncChannel &c : syncChannels(id))
    peers.push_back(c.channel->peer);
  return peers;
}

uint32_t Verifier::nextSyncWith(uint32_t actor, uint32_t from, OpTraits traits, uint32_t peer) const {
  const auto &ops = tbs_[actor].ops;
  for (uint32_t k = from + 1; k < ops.size(); ++k)
    if (opHas(ops[k].op->type, traits)) {
      const auto peers = syncPeers(ops[k].id);
      if (std::find(peers.begin(), peers.end(), peer) != peers.end())
        return ops[k].id;
    }
  return kNone;
}

bool Verifier::nopBetween(uint32_t actor, uint32_t from, uint32_t to) const {
  const auto &ops = tbs_[actor].ops;
  for (uint32_t k = from + 1; k < to && k < ops.size(); ++k)
    if (ops[k].op->type == OpType::Nop || ops[k].op->type == OpType::Barrier)
      return true;
  return false;
}

RaceBlame Verifier::blameRace(uint32_t a, uint32_t b) const {
  // Signals (and waits) per gpu-level channel of each rank, in program order: the k-th wait on a
  // channel consumes the k-th signal on its partner.
  using Key = std::tuple<uint32_t, ChannelType, uint32_t>; // rank, type, gpu-level channel
  std::map<Key, std::vector<uint32_t>> signals, waits;
  for (const TbRun &tb : tbs_)
    for (const FlatOp &f : tb.ops) {
      const bool sig = opHas(f.op->type, optrait::Signals), wt = opHas(f.op->type, optrait::Waits);
      if (sig || wt)
        for (const SyncChannel &c : syncChannels(f.id))
          (sig ? signals : waits)[Key{tb.rank, c.type, c.index}].push_back(f.id);
    }
  // The signals wait `w` consumes (one per channel of w).
  auto matches = [&](uint32_t w) {
    std::vector<uint32_t> out;
    for (const SyncChannel &c : syncChannels(w)) {
      if (c.channel->peerChannel == runtime::kNoChannel)
        continue;
      const auto &mine = waits[Key{uint32_t(opRefs_[w].rank), c.type, c.index}];
      const size_t k = size_t(std::find(mine.begin(), mine.end(), w) - mine.begin());
      const auto &theirs = signals[Key{c.channel->peer, c.type, c.channel->peerChannel}];
      if (k < theirs.size())
        out.push_back(theirs[k]);
    }
    return out;
  };
  // Whether signal `s` comes at or after access `y` in y's threadblock (it could release y).
  auto after = [&](uint32_t s, uint32_t y) {
    return opPos_[s].first == opPos_[y].first && opPos_[s].second >= opPos_[y].second;
  };
  auto at = [&](uint32_t id) { return opText(id, opPtr_[id]) + " at " + opRefs_[id].path; };

  // Rule 1: x runs before a wait of its own threadblock that would order y before it.
  auto waitAfter = [&](uint32_t x, uint32_t y) -> uint32_t {
    const auto [xa, xk] = opPos_[x];
    const uint32_t ry = tbs_[opPos_[y].first].rank;
    for (uint32_t w = nextSyncWith(xa, xk, optrait::Waits, ry); w != kNone;
         w = nextSyncWith(xa, opPos_[w].second, optrait::Waits, ry))
      for (uint32_t s : matches(w))
        if (after(s, y))
          return w;
    return kNone;
  };
  RaceBlame blame;
  const uint32_t wa = waitAfter(a, b), wb = waitAfter(b, a);
  if ((wa == kNone) != (wb == kNone)) {
    const uint32_t x = wa != kNone ? a : b, w = wa != kNone ? wa : wb;
    blame.early = blame.culprit = x;
    blame.related = w;
    blame.fix = "it runs before " + at(w) + ", which waits for the signal that orders it after the other op: move it "
                "after that wait";
    return blame;
  }
  // Rule 2: the last wait before x that is matched with a signal after y fails to order them.
  for (uint32_t x : {a, b}) {
    const uint32_t y = x == a ? b : a;
    const auto [xa, xk] = opPos_[x];
    const auto [ya, yk] = opPos_[y];
    const uint32_t ry = tbs_[ya].rank;
    for (uint32_t k = xk; k-- > 0;) {
      const uint32_t w = tbs_[xa].ops[k].id;
      if (!opHas(opPtr_[w]->type, optrait::Waits))
        continue;
      const auto peers = syncPeers(w);
      if (std::find(peers.begin(), peers.end(), ry) == peers.end())
        continue;
      for (uint32_t s : matches(w)) {
        if (!after(s, y))
          continue;
        blame.early = x;
        if (opHas(opPtr_[w]->type, optrait::Relaxed))
          blame.culprit = w, blame.related = s,
          blame.fix = "the wait that should order them (" + at(w) +
                      ") is relaxed and orders no data: make it a plain wait (relaxed = false)";
        else if (!nopBetween(xa, k, xk))
          blame.culprit = w, blame.related = s,
          blame.fix = "no nop follows the wait that should order them (" + at(w) +
                      ") before this op: give that wait data_sync = SyncType.after";
        else if (opHas(opPtr_[s]->type, optrait::Relaxed))
          blame.culprit = s, blame.related = w,
          blame.fix = "the signal that should order them (" + at(s) +
                      ") is relaxed and releases no data: make it a plain signal (relaxed = false)";
        else if (s != y && !nopBetween(ya, yk, opPos_[s].second))
          blame.culprit = s, blame.related = w,
          blame.fix = "no nop precedes the signal that should order them (" + at(s) +
                      ") after the other op: give that signal data_sync = SyncType.before";
        if (blame.culprit != kNone)
          return blame;
      }
      break; // only the last wait on that peer before x
    }
  }
  // Rule 3: x's threadblock never waits on y's rank while another threadblock of x's rank does,
  // for a signal after y (a threadblock group whose member skips the wait).
  for (uint32_t x : {a, b}) {
    const uint32_t y = x == a ? b : a;
    const auto [xa, xk] = opPos_[x];
    const uint32_t rx = tbs_[xa].rank, ry = tbs_[opPos_[y].first].rank;
    if (rx == ry || nextSyncWith(xa, kFromStart, optrait::Waits, ry) != kNone)
      continue;
    for (uint32_t sib : ranks_[rx].tbs) {
      if (sib == xa)
        continue;
      for (uint32_t w = nextSyncWith(sib, kFromStart, optrait::Waits, ry); w != kNone;
           w = nextSyncWith(sib, opPos_[w].second, optrait::Waits, ry))
        for (uint32_t s : matches(w))
          if (after(s, y)) {
            blame.early = blame.culprit = x;
            blame.related = w;
            blame.fix = "threadblock " + std::to_string(tbs_[sib].tb) + " of rank " + std::to_string(rx) +
                        " waits for the signal that orders it (" + at(w) + ") but this op's threadblock " +
                        std::to_string(tbs_[xa].tb) + " never waits on rank " + std::to_string(ry) +
                        ": every threadblock that touches the data must wait itself (a wait orders only its own "
                        "threadblock); add that wait to threadblock " + std::to_string(tbs_[xa].tb) + " before this op";
            return blame;
          }
    }
  }
  return blame;
}

} // namespace msccl::verify::detail
