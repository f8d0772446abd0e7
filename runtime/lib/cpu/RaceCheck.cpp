//===- RaceCheck.cpp - Happens-before data-race checker of the CPU executor ---------------===//
//
// Consumes access and synchronisation events of the CPU executor's launches; produces race
// diagnostics naming both accesses (rank, tb, op index and name, JSON path, or a rank's host at
// its kernel start/end), the buffer and byte range, the launches and the missing
// synchronisation. See RaceCheck.h for the model.
//
//===------------------------------------------------------------------------------------===//
#include "RaceCheck.h"

#include "msccl/runtime/cpu/Machine.h"

#include <algorithm>

namespace msccl::runtime::cpu {
using namespace msccl::plan;

void RaceChecker::begin(uint32_t numTbs, const std::vector<RankShape> &shapes, const std::vector<RankState> &ranks,
                        bool launchModel, bool relaxed) {
  launchModel_ = launchModel;
  fam_ = launchModel && relaxed ? 2 : 1;
  numTbs_ = numTbs;
  numRanks_ = uint32_t(ranks.size());
  ranks_ = &ranks;
  shapes_ = shapes;
  reports_.clear();
  warnings_.clear();
  reported_.clear();
  races_ = warningCount_ = 0;
  reset();
}

void RaceChecker::reset() {
  const size_t n = 2 * size_t(numTbs_) + numRanks_;
  const Clocks zero{Clock(n, 0), fam_ == 2 ? Clock(n, 0) : Clock()};
  clocks_.assign(n, zero);
  pending_.assign(numTbs_, zero);
  base_.assign(numTbs_, 0);
  epoch_.assign(numTbs_, 0);
  memFifo_.assign(shapes_.size(), {});
  portFifo_.assign(shapes_.size(), {});
  semClocks_.assign(shapes_.size(), {});
  for (size_t r = 0; r < shapes_.size(); ++r) {
    memFifo_[r].resize(shapes_[r].memoryChannels);
    portFifo_[r].resize(shapes_[r].portChannels);
    semClocks_[r].assign(shapes_[r].semaphores, zero);
  }
  barrierClocks_.clear();
  shadow_.clear();
  packets_.clear();
}

void RaceChecker::startLaunch(uint32_t launch, const std::vector<TbState> &tbs) {
  launch_ = launch;
  if (!launchModel_) {
    if (launch > 0)
      reset(); // a launch boundary synchronises everything
    return;
  }
  // Rank r's kernel start: its host (the caller) writes r's buffers up to here; r's tbs start
  // from what the host knows (r's earlier launches), nothing else.
  for (uint32_t r = 0; r < numRanks_; ++r) {
    const uint32_t h = hostOf(r);
    for (int f = 0; f < fam_; ++f)
      clocks_[h][f][h]++;
    hostAccess(r, true, true);
  }
  for (const TbState &tb : tbs) {
    for (int f = 0; f < fam_; ++f) {
      join(clocks_[tb.actor][f], clocks_[hostOf(tb.rank)][f]);
      std::fill(pending_[tb.actor][f].begin(), pending_[tb.actor][f].end(), 0);
    }
    epoch_[tb.actor]++;
  }
}

uint32_t RaceChecker::tick(const TbState &tb) const { return base_[tb.actor] + uint32_t(tb.serial) + 1; }

void RaceChecker::endLaunch(const std::vector<TbState> &tbs) {
  if (!launchModel_)
    return;
  // Rank r's kernel end: every op of its tbs is complete (their proxy lanes' puts are not:
  // only a flush brings them back), then the host reads r's output and input.
  for (const TbState &tb : tbs) {
    for (int f = 0; f < fam_; ++f) {
      Clock &hc = clocks_[hostOf(tb.rank)][f];
      join(hc, clocks_[tb.actor][f]);
      join(hc, pending_[tb.actor][f]);
      hc[tb.actor] = std::max(hc[tb.actor], base_[tb.actor] + uint32_t(tb.serial)); // every op of the launch
    }
    base_[tb.actor] += uint32_t(tb.serial) + 1;
  }
  for (uint32_t r = 0; r < numRanks_; ++r) {
    const uint32_t h = hostOf(r);
    for (int f = 0; f < fam_; ++f)
      clocks_[h][f][h]++;
    hostAccess(r, false, false);
  }
}

void RaceChecker::hostAccess(uint32_t rank, bool write, bool start) {
  const RankState &rs = (*ranks_)[rank];
  Access now;
  now.actor = hostOf(rank);
  now.tick = clocks_[now.actor][0][now.actor];
  now.launch = launch_;
  now.rank = rank;
  now.pc = start ? 0 : 1;
  now.write = write;
  if (rs.input && rs.inputBytes)
    check(now, rs.input, rs.inputBytes, rank, BufferType::Input, 0);
  if (!rs.output || !rs.outputBytes)
    return;
  // The output's bytes outside the input's (byte ranges, not pointers: an in-place AllGather's
  // input is one block of its output, at offset 0 on rank 0).
  const uintptr_t out = uintptr_t(rs.output), outEnd = out + rs.outputBytes;
  const uintptr_t in = rs.input && rs.inputBytes ? uintptr_t(rs.input) : outEnd;
  const uintptr_t inEnd = rs.input && rs.inputBytes ? in + rs.inputBytes : outEnd;
  if (inEnd <= out || in >= outEnd) { // disjoint
    check(now, rs.output, rs.outputBytes, rank, BufferType::Output, 0);
    return;
  }
  if (in > out)
    check(now, rs.output, in - out, rank, BufferType::Output, 0);
  if (inEnd < outEnd)
    check(now, rs.output + (inEnd - out), outEnd - inEnd, rank, BufferType::Output, inEnd - out);
}

void RaceChecker::join(Clock &into, const Clock &from) {
  for (size_t i = 0; i < from.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

RaceChecker::Clock RaceChecker::releaseClock(int f, const TbState &tb, bool withCurrent) const {
  Clock c = clocks_[tb.actor][f];
  join(c, pending_[tb.actor][f]); // cumulativity: what the signalling thread acquired
  if (withCurrent)
    c[tb.actor] = tick(tb);
  return c;
}

void RaceChecker::nop(const TbState &tb) {
  for (int f = 0; f < fam_; ++f) {
    Clock &c = clocks_[tb.actor][f];
    c[tb.actor] = std::max(c[tb.actor], tick(tb) - 1); // the ops before this one completed
    join(c, pending_[tb.actor][f]);
  }
  epoch_[tb.actor]++;
}

void RaceChecker::barrierArrive(const TbState &tb, uint32_t id, uint64_t generation) {
  nop(tb);
  auto key = std::make_tuple(tb.rank, id, generation);
  auto it = barrierClocks_.find(key);
  if (it == barrierClocks_.end())
    barrierClocks_.emplace(key, clocks_[tb.actor]);
  else
    for (int f = 0; f < fam_; ++f)
      join(it->second[f], clocks_[tb.actor][f]);
}

void RaceChecker::barrierLeave(const TbState &tb, uint32_t id, uint64_t generation) {
  auto it = barrierClocks_.find(std::make_tuple(tb.rank, id, generation));
  if (it != barrierClocks_.end())
    for (int f = 0; f < fam_; ++f)
      join(clocks_[tb.actor][f], it->second[f]);
  nop(tb);
}

void RaceChecker::signal(const TbState &tb, ChannelType ct, uint32_t peer, uint32_t peerChannel, bool data,
                         bool withCurrent) {
  auto &fifo = (ct == ChannelType::Memory ? memFifo_ : portFifo_)[peer][peerChannel];
  Msg m;
  m.relaxed = !data;
  m.ctrl = clocks_[hostOf(tb.rank)][0]; // the signalling kernel runs: its earlier launches ended
  for (int f = 0; f < fam_; ++f) {
    if (f == 0 && !data)
      continue; // a relaxed signal orders no data
    m.data[f] = releaseClock(f, tb, withCurrent);
    if (ct == ChannelType::Port)
      join(m.data[f], clocks_[proxyOf(tb.actor)][f]); // the proxy signals after this tb's earlier puts
  }
  fifo.push_back(std::move(m));
}

void RaceChecker::wait(const TbState &tb, ChannelType ct, uint32_t channel, bool data) {
  auto &fifo = (ct == ChannelType::Memory ? memFifo_ : portFifo_)[tb.rank][channel];
  if (fifo.empty())
    return;
  const Msg &m = fifo.front();
  Clocks &p = pending_[tb.actor];
  if (launchModel_)
    join(p[0], m.ctrl);
  if (data && !m.relaxed)
    join(p[0], m.data[0]);
  if (fam_ == 2)
    join(p[1], m.data[1]);
  fifo.pop_front();
}

void RaceChecker::semRelease(const TbState &tb, uint32_t id) {
  for (int f = 0; f < fam_; ++f)
    join(semClocks_[tb.rank][id][f], releaseClock(f, tb, false));
}

void RaceChecker::semAcquire(const TbState &tb, uint32_t id) {
  for (int f = 0; f < fam_; ++f)
    join(pending_[tb.actor][f], semClocks_[tb.rank][id][f]);
}

void RaceChecker::flush(const TbState &tb) {
  for (int f = 0; f < fam_; ++f)
    join(pending_[tb.actor][f], clocks_[proxyOf(tb.actor)][f]);
}

void RaceChecker::packetAcquire(const TbState &tb, const LoweredOp &op, const uint8_t *addr, uint64_t bytes) {
  const uintptr_t lo = uintptr_t(addr), hi = lo + bytes;
  auto it = packets_.upper_bound(lo);
  if (it != packets_.begin())
    --it;
  for (; it != packets_.end() && it->first < hi; ++it)
    if (it->second.first > lo)
      for (int f = 0; f < fam_; ++f)
        join(clocks_[tb.actor][f], it->second.second[f]);
  if (launchModel_ && bytes) {
    Access now = tbAccess(tb, op, false, false);
    now.packet = true;
    checkAt(now, addr, bytes);
  }
}

void RaceChecker::packetRelease(const TbState &tb, const LoweredOp &op, bool proxy, const uint8_t *addr,
                                uint64_t bytes) {
  if (bytes == 0)
    return;
  if (launchModel_) { // rewriting a packet slot someone may not have read yet
    Access now = tbAccess(tb, op, proxy, true);
    now.packet = true;
    checkAt(now, addr, bytes);
  }
  const uintptr_t lo = uintptr_t(addr), hi = lo + bytes;
  Clocks c;
  for (int f = 0; f < fam_; ++f) {
    c[f] = releaseClock(f, tb, true);
    if (proxy)
      join(c[f], clocks_[proxyOf(tb.actor)][f]);
  }
  // Trim overlapping segments, then insert [lo, hi).
  auto it = packets_.upper_bound(lo);
  if (it != packets_.begin())
    --it;
  std::vector<std::pair<uintptr_t, std::pair<uintptr_t, Clocks>>> keep;
  while (it != packets_.end() && it->first < hi) {
    if (it->second.first <= lo) {
      ++it;
      continue;
    }
    if (it->first < lo)
      keep.push_back({it->first, {lo, it->second.second}});
    if (it->second.first > hi)
      keep.push_back({hi, {it->second.first, it->second.second}});
    it = packets_.erase(it);
  }
  for (auto &k : keep)
    packets_.insert(std::move(k));
  packets_.emplace(lo, std::make_pair(hi, std::move(c)));
}

bool RaceChecker::ordered(const Access &before, const Access &now, const Clock &clock) const {
  if (before.actor == now.actor)
    return before.actor >= numTbs_ || (before.launch == now.launch && before.serial == now.serial) ||
           before.epoch < now.epoch;
  return before.tick <= clock[before.actor];
}

void RaceChecker::split(uintptr_t at) {
  auto it = shadow_.upper_bound(at);
  if (it == shadow_.begin())
    return;
  --it;
  if (it->first < at && it->second.end > at) {
    Segment right = it->second;
    it->second.end = at;
    shadow_.emplace(at, std::move(right));
  }
}

static const char *bufferName(BufferType t) {
  switch (t) {
  case BufferType::Input: return "input";
  case BufferType::Output: return "output";
  case BufferType::Scratch: return "scratch";
  }
  return "?";
}

std::string RaceChecker::describe(const Access &a) const {
  if (isHost(a.actor))
    return "the host (rank " + std::to_string(a.rank) + "'s kernel " +
           (a.pc == 0 ? "start: the caller may write its buffers until then" : "end: the caller reads the result then") +
           ")";
  return "rank " + std::to_string(a.rank) + " tb " + std::to_string(a.tbId) + " op " + std::to_string(a.pc) + " (" +
         std::string(opName(a.op->type)) + (a.actor >= numTbs_ ? ", by the port proxy" : "") + ") at " + a.op->path;
}

void RaceChecker::report(const Access &other, const Access &now, std::string where, bool warning) {
  (warning ? warningCount_ : races_)++;
  auto key = std::make_tuple(other.actor, other.pc, now.actor, now.pc, warning);
  std::vector<std::string> &list = warning ? warnings_ : reports_;
  if (list.size() >= kMaxReports || !reported_.insert(key).second)
    return;
  const bool hostInvolved = isHost(other.actor) || isHost(now.actor);
  std::string missing;
  if (warning) {
    missing = "ordered only by a relaxed signal/wait (rlxsignal/rlxwait orders no data; use signal/wait for an exit "
              "handshake)";
  } else if (hostInvolved) {
    const Access &h = isHost(other.actor) ? other : now, &x = isHost(other.actor) ? now : other;
    const std::string R = std::to_string(h.rank);
    if (x.actor >= numTbs_ && x.rank == h.rank)
      missing = "with no flush: a port put must be flushed (`flush`, or `pwsf` for the last put) before rank " + R +
                "'s kernel ends, else the proxy may still read its source";
    else if (h.pc == 0)
      missing = "with no entry handshake: a peer may touch rank " + R +
                "'s input/output only after a signal/wait with rank " + R + " in the same launch";
    else
      missing = "with no exit handshake: every access to rank " + R + "'s buffers must happen before rank " + R +
                "'s kernel ends (a signal rank " + R + " waits for)";
  } else {
    uint32_t a = other.actor % numTbs_, b = now.actor % numTbs_;
    bool proxyInvolved = other.actor >= numTbs_ || now.actor >= numTbs_;
    if (other.launch != now.launch)
      missing = "with no signal/wait ordering the earlier launch's access before the later launch's (back-to-back "
                "launches: an exit handshake, or the double scratch buffer for packets)";
    else if (a == b && !proxyInvolved)
      missing = "with no nop (__syncthreads) between them in the same threadblock";
    else if (a == b)
      missing = "with no nop before the port put or flush (followed by a nop) after it";
    else if (other.rank == now.rank)
      missing = "with no barrier, semaphore or signal/wait between the threadblocks";
    else
      missing = "with no signal/wait (after a nop) between them";
  }
  std::string launches;
  if (launchModel_)
    launches = other.launch == now.launch
                   ? " (launch " + std::to_string(now.launch + 1) + ")"
                   : " (launches " + std::to_string(other.launch + 1) + " and " + std::to_string(now.launch + 1) + ")";
  list.push_back(std::string(warning ? "relaxed handshake: " : "data race: ") + describe(now) +
                 (now.write ? " writes " : " reads ") + where + " while " + describe(other) +
                 (other.write ? " wrote" : " read") + " it " + missing + launches);
}

RaceChecker::Access RaceChecker::tbAccess(const TbState &tb, const LoweredOp &op, bool proxy, bool write) {
  Access now;
  now.rank = tb.rank;
  now.tbId = tb.tb->id;
  now.op = &op;
  now.pc = tb.pc;
  now.serial = tb.serial;
  now.launch = launch_;
  now.write = write;
  if (proxy) {
    // The proxy performs the transfer after every completed epoch of its tb.
    uint32_t p = proxyOf(tb.actor);
    for (int f = 0; f < fam_; ++f) {
      join(clocks_[p][f], releaseClock(f, tb, false));
      clocks_[p][f][p]++;
    }
    now.actor = p;
    now.tick = clocks_[p][0][p];
  } else {
    now.actor = tb.actor;
    now.epoch = epoch_[tb.actor];
    now.tick = tick(tb);
  }
  return now;
}

void RaceChecker::access(const TbState &tb, const LoweredOp &op, bool proxy, bool write, const uint8_t *addr,
                         uint64_t len, uint32_t bufRank, BufferType type, uint64_t offset) {
  if (len == 0)
    return;
  check(tbAccess(tb, op, proxy, write), addr, len, bufRank, type, offset);
}

void RaceChecker::checkAt(const Access &now, const uint8_t *addr, uint64_t len) {
  const uintptr_t a = uintptr_t(addr);
  for (uint32_t r = 0; r < numRanks_; ++r) {
    const RankState &rs = (*ranks_)[r];
    const std::tuple<const uint8_t *, uint64_t, BufferType> bufs[] = {
        {rs.input, rs.inputBytes, BufferType::Input},
        {rs.output, rs.outputBytes, BufferType::Output},
        {rs.scratch, rs.scratchBytes, BufferType::Scratch}};
    for (const auto &[base, size, type] : bufs)
      if (base && a >= uintptr_t(base) && a < uintptr_t(base) + size) {
        check(now, addr, len, r, type, a - uintptr_t(base));
        return;
      }
  }
  check(now, addr, len, 0, BufferType::Scratch, 0); // not in a rank's buffers (cannot happen)
}

void RaceChecker::check(const Access &now, const uint8_t *addr, uint64_t len, uint32_t bufRank, BufferType type,
                        uint64_t offset) {
  if (len == 0)
    return;
  const Clock &clock = clocks_[now.actor][0], &strong = clocks_[now.actor][fam_ - 1];
  const uintptr_t lo = uintptr_t(addr), hi = lo + len;
  auto race = [&](const Access &other, uintptr_t from, uintptr_t to) {
    const bool warning = launchModel_ && (isHost(other.actor) || isHost(now.actor)) && ordered(other, now, strong);
    const uint64_t b = offset + (from - lo), e = b + (to - from);
    report(other, now,
           "rank " + std::to_string(bufRank) + "'s " + bufferName(type) + (now.packet || other.packet ? " packets" : "") +
               " [" + std::to_string(b) + ", " + std::to_string(e) + ")",
           warning);
  };
  split(lo);
  split(hi);
  // Check.
  for (auto it = shadow_.lower_bound(lo); it != shadow_.end() && it->first < hi; ++it) {
    Segment &s = it->second;
    // A packet read waits for its launch's flag: it is ordered after the packet write it reads.
    const bool flagged = now.packet && !now.write && s.write.packet;
    if (s.hasWrite && !flagged && !ordered(s.write, now, clock))
      race(s.write, it->first, s.end);
    if (now.write)
      for (const Access &r : s.reads)
        if (!ordered(r, now, clock))
          race(r, it->first, s.end);
  }
  // Update.
  if (now.write) {
    shadow_.erase(shadow_.lower_bound(lo), shadow_.lower_bound(hi));
    Segment s;
    s.end = hi;
    s.hasWrite = true;
    s.write = now;
    shadow_.emplace(lo, std::move(s));
    return;
  }
  uintptr_t cur = lo;
  auto addRead = [&](Segment &s) {
    std::vector<Access> keep;
    for (const Access &r : s.reads)
      if (!ordered(r, now, clock))
        keep.push_back(r);
    keep.push_back(now);
    s.reads = std::move(keep);
  };
  auto it = shadow_.lower_bound(lo);
  while (cur < hi) {
    if (it == shadow_.end() || it->first > cur) {
      uintptr_t gapEnd = (it == shadow_.end()) ? hi : std::min<uintptr_t>(hi, it->first);
      Segment s;
      s.end = gapEnd;
      s.reads.push_back(now);
      it = std::next(shadow_.emplace(cur, std::move(s)).first);
      cur = gapEnd;
      continue;
    }
    addRead(it->second);
    cur = it->second.end;
    ++it;
  }
}

} // namespace msccl::runtime::cpu
