//===- RaceCheck.cpp - Happens-before data-race checker of the CPU executor ---------------===//
//
// Consumes access and synchronisation events of one launch; produces race diagnostics naming
// both accesses (rank, tb, op index and name, JSON path), the buffer and byte range, and the
// missing synchronisation. See RaceCheck.h for the model.
//
//===------------------------------------------------------------------------------------===//
#include "RaceCheck.h"

#include "CpuMachine.h"

#include <algorithm>

namespace msccl::runtime::cpu {
using namespace msccl::plan;

void RaceChecker::beginLaunch(const std::vector<TbState> &tbs, const std::vector<RankShape> &ranks) {
  numTbs_ = uint32_t(tbs.size());
  clocks_.assign(2 * size_t(numTbs_), Clock(2 * size_t(numTbs_), 0));
  pending_.assign(numTbs_, Clock(2 * size_t(numTbs_), 0));
  memFifo_.assign(ranks.size(), {});
  portFifo_.assign(ranks.size(), {});
  semClocks_.assign(ranks.size(), {});
  for (size_t r = 0; r < ranks.size(); ++r) {
    memFifo_[r].resize(ranks[r].memoryChannels);
    portFifo_[r].resize(ranks[r].portChannels);
    semClocks_[r].assign(ranks[r].semaphores, Clock(2 * size_t(numTbs_), 0));
  }
  barrierClocks_.clear();
  shadow_.clear();
  packets_.clear();
  reports_.clear();
  reported_.clear();
  races_ = 0;
}

void RaceChecker::join(Clock &into, const Clock &from) const {
  for (size_t i = 0; i < into.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

RaceChecker::Clock RaceChecker::releaseClock(const TbState &tb, bool withCurrent) const {
  Clock c = clocks_[tb.actor];
  join(c, pending_[tb.actor]); // cumulativity: what the signalling thread acquired
  if (withCurrent)
    c[tb.actor]++;
  return c;
}

void RaceChecker::nop(const TbState &tb) {
  Clock &c = clocks_[tb.actor];
  c[tb.actor]++;
  join(c, pending_[tb.actor]);
}

void RaceChecker::barrierArrive(const TbState &tb, uint32_t id, uint64_t generation) {
  nop(tb);
  auto key = std::make_tuple(tb.rank, id, generation);
  auto it = barrierClocks_.find(key);
  if (it == barrierClocks_.end())
    barrierClocks_.emplace(key, clocks_[tb.actor]);
  else
    join(it->second, clocks_[tb.actor]);
}

void RaceChecker::barrierLeave(const TbState &tb, uint32_t id, uint64_t generation) {
  auto it = barrierClocks_.find(std::make_tuple(tb.rank, id, generation));
  if (it != barrierClocks_.end())
    join(clocks_[tb.actor], it->second);
  nop(tb);
}

void RaceChecker::signal(const TbState &tb, ChannelType ct, uint32_t peer, uint32_t peerChannel, bool data,
                         bool withCurrent) {
  auto &fifo = (ct == ChannelType::Memory ? memFifo_ : portFifo_)[peer][peerChannel];
  if (!data) {
    fifo.emplace_back();
    return;
  }
  Clock c = releaseClock(tb, withCurrent);
  if (ct == ChannelType::Port)
    join(c, clocks_[proxyOf(tb.actor)]); // the proxy signals after this tb's earlier puts
  fifo.push_back(std::move(c));
}

void RaceChecker::wait(const TbState &tb, ChannelType ct, uint32_t channel, bool data) {
  auto &fifo = (ct == ChannelType::Memory ? memFifo_ : portFifo_)[tb.rank][channel];
  if (fifo.empty())
    return;
  if (data && !fifo.front().empty())
    join(pending_[tb.actor], fifo.front());
  fifo.pop_front();
}

void RaceChecker::semRelease(const TbState &tb, uint32_t id) { join(semClocks_[tb.rank][id], releaseClock(tb, false)); }

void RaceChecker::semAcquire(const TbState &tb, uint32_t id) { join(pending_[tb.actor], semClocks_[tb.rank][id]); }

void RaceChecker::flush(const TbState &tb) { join(pending_[tb.actor], clocks_[proxyOf(tb.actor)]); }

void RaceChecker::packetAcquire(const TbState &tb, const uint8_t *addr, uint64_t bytes) {
  const uintptr_t lo = uintptr_t(addr), hi = lo + bytes;
  auto it = packets_.upper_bound(lo);
  if (it != packets_.begin())
    --it;
  for (; it != packets_.end() && it->first < hi; ++it)
    if (it->second.first > lo)
      join(clocks_[tb.actor], it->second.second);
}

void RaceChecker::packetRelease(const TbState &tb, bool proxy, const uint8_t *addr, uint64_t bytes) {
  if (bytes == 0)
    return;
  const uintptr_t lo = uintptr_t(addr), hi = lo + bytes;
  Clock c = releaseClock(tb, true);
  if (proxy)
    join(c, clocks_[proxyOf(tb.actor)]);
  // Trim overlapping segments, then insert [lo, hi).
  auto it = packets_.upper_bound(lo);
  if (it != packets_.begin())
    --it;
  std::vector<std::pair<uintptr_t, std::pair<uintptr_t, Clock>>> keep;
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
    return before.actor >= numTbs_ || before.serial == now.serial || before.epoch <= clock[now.actor];
  return before.epoch <= clock[before.actor];
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

static std::string describe(const TbState &tb, size_t pc, const LoweredOp &op, bool proxy) {
  return "rank " + std::to_string(tb.rank) + " tb " + std::to_string(tb.tb->id) + " op " + std::to_string(pc) + " (" +
         std::string(opName(op.type)) + (proxy ? ", by the port proxy" : "") + ") at " + op.path;
}

void RaceChecker::report(const Access &other, const Access &now, uintptr_t lo, uintptr_t hi, const uint8_t *addr,
                         uint32_t bufRank, BufferType type, uint64_t offset) {
  ++races_;
  auto key = std::make_tuple(other.actor, other.pc, now.actor, now.pc);
  if (reports_.size() >= kMaxReports || !reported_.insert(key).second)
    return;
  uint32_t a = other.actor % numTbs_, b = now.actor % numTbs_;
  bool proxyInvolved = other.actor >= numTbs_ || now.actor >= numTbs_;
  std::string missing;
  if (a == b && !proxyInvolved)
    missing = "with no nop (__syncthreads) between them in the same threadblock";
  else if (a == b)
    missing = "with no nop before the port put or flush (followed by a nop) after it";
  else if (other.tb->rank == now.tb->rank)
    missing = "with no barrier, semaphore or signal/wait between the threadblocks";
  else
    missing = "with no signal/wait (after a nop) between them";
  uint64_t from = offset + (lo - uintptr_t(addr)), to = from + (hi - lo);
  reports_.push_back("data race: " + describe(*now.tb, now.pc, *now.op, now.actor >= numTbs_) +
                     (now.write ? " writes " : " reads ") + "rank " + std::to_string(bufRank) + "'s " +
                     bufferName(type) + " [" + std::to_string(from) + ", " + std::to_string(to) + ") while " +
                     describe(*other.tb, other.pc, *other.op, other.actor >= numTbs_) +
                     (other.write ? " wrote" : " read") + " it " + missing);
}

void RaceChecker::access(const TbState &tb, const LoweredOp &op, bool proxy, bool write, const uint8_t *addr,
                         uint64_t len, uint32_t bufRank, BufferType type, uint64_t offset) {
  if (len == 0)
    return;
  Access now;
  now.tb = &tb;
  now.op = &op;
  now.pc = tb.pc;
  now.serial = tb.serial;
  now.write = write;
  if (proxy) {
    // The proxy performs the transfer after every completed epoch of its tb.
    uint32_t p = proxyOf(tb.actor);
    join(clocks_[p], releaseClock(tb, false));
    now.actor = p;
    now.epoch = ++clocks_[p][p];
  } else {
    now.actor = tb.actor;
    now.epoch = clocks_[tb.actor][tb.actor] + 1;
  }
  const Clock &clock = clocks_[now.actor];
  const uintptr_t lo = uintptr_t(addr), hi = lo + len;
  split(lo);
  split(hi);
  // Check.
  for (auto it = shadow_.lower_bound(lo); it != shadow_.end() && it->first < hi; ++it) {
    Segment &s = it->second;
    if (s.hasWrite && !ordered(s.write, now, clock))
      report(s.write, now, it->first, s.end, addr, bufRank, type, offset);
    if (write)
      for (const Access &r : s.reads)
        if (!ordered(r, now, clock))
          report(r, now, it->first, s.end, addr, bufRank, type, offset);
  }
  // Update.
  if (write) {
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
