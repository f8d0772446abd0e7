//===- RaceCheck.h - Happens-before data-race checker of the CPU executor (private) -------===//
//
// Consumes the accesses and synchronisation events of one CPU-executor launch (CpuOps.cpp calls
// it when CpuExecutorOptions::raceCheck is on); produces one diagnostic per data race a GPU
// could exhibit although the sequential CPU schedule happened to give the right answer.
//
// Model (spec plan#6.3, plan#8.1), ThreadSanitizer-style vector clocks. Actors: every
// threadblock (rank, tb) and, per threadblock, its port-channel proxy lane. Each actor has a
// vector clock over all actors. A threadblock's accesses belong to its current "sync epoch";
// `nop` and `barrier` (__syncthreads) complete the epoch. Two accesses to overlapping bytes of
// which at least one writes race unless the earlier one happens-before the later one:
//  * same threadblock: a `nop`/`barrier` between them (accesses of one op never race);
//  * memory `signal` releases the signalling tb's completed (pre-`nop`) epochs plus what it had
//    acquired; the matching `wait` (the n-th wait consumes the n-th signal) acquires them, for
//    the whole block from its next `nop` on (other threads only see it after __syncthreads);
//    `rlxsignal`/`rlxwait` on memory channels order no data;
//  * port `put`/`pws`/`pwsf` are performed by the tb's proxy lane, which knows the tb's
//    completed epochs at the time of the put; a port `signal` (and the signal of `pws`)
//    also releases the proxy lane's puts; `flush` (and `pwsf`) acquires them back into the tb;
//  * `sem_release`/`sem_acquire` (release/acquire) and `barrier` order tbs of one rank.
// Packet payloads are self-synchronising (flags) and are not checked; a packet op that completes
// acquires the clocks its consumed packets were released with (per op, not per packet) and
// releases its own clock with the packets it wrote. The plain side of packet ops (ppkt/cpkt
// sources, upkt/repkt destinations, ...) is checked. Switch ops access every member's
// buffer like any other access. Launch boundaries are full synchronisation (shadow state is
// reset per launch).
//
// Shadow memory: one interval map over host addresses (so aliased in-place input/output
// buffers are one memory); each segment holds its last write and the reads since then that are
// not ordered before one another.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Resolve.h"

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace msccl::runtime::cpu {

struct TbState;

class RaceChecker {
public:
  using Clock = std::vector<uint32_t>;

  /// Gpu-level memory/port channel and semaphore counts of one rank.
  struct RankShape {
    size_t memoryChannels = 0, portChannels = 0, semaphores = 0;
  };
  /// `tbs` are the launch's threadblocks; TbState::actor must be their index in that list.
  void beginLaunch(const std::vector<TbState> &tbs, const std::vector<RankShape> &ranks);

  /// A plain access by the tb's op (or, with `proxy`, by its port proxy lane) to bytes
  /// [addr, addr+len) which are bytes [offset, offset+len) of rank `bufRank`'s buffer `type`.
  void access(const TbState &tb, const LoweredOp &op, bool proxy, bool write, const uint8_t *addr, uint64_t len,
              uint32_t bufRank, plan::BufferType type, uint64_t offset);

  void nop(const TbState &tb);                               ///< __syncthreads (nop, barrier N<=1).
  void barrierArrive(const TbState &tb, uint32_t id, uint64_t generation);
  void barrierLeave(const TbState &tb, uint32_t id, uint64_t generation);
  /// signal to `peerChannel` (gpu-level, ChannelType memory/port) of rank `peer`. `data`: a
  /// release (false for memory rlxsignal). `withCurrent`: the signal of a memory pws, which
  /// follows its own put's stores.
  void signal(const TbState &tb, plan::ChannelType ct, uint32_t peer, uint32_t peerChannel, bool data,
              bool withCurrent);
  /// The tb consumed the next signal of its own gpu-level channel `channel`.
  void wait(const TbState &tb, plan::ChannelType ct, uint32_t channel, bool data);
  void semRelease(const TbState &tb, uint32_t id);
  void semAcquire(const TbState &tb, uint32_t id);
  void flush(const TbState &tb);
  /// A completed packet op read packets [addr, addr+bytes): it acquires their producers' clocks.
  void packetAcquire(const TbState &tb, const uint8_t *addr, uint64_t bytes);
  /// A completed packet op wrote packets [addr, addr+bytes) (by its port proxy with `proxy`).
  void packetRelease(const TbState &tb, bool proxy, const uint8_t *addr, uint64_t bytes);

  /// Races found since beginLaunch (at most kMaxReports described) and their total count.
  const std::vector<std::string> &reports() const { return reports_; }
  uint64_t raceCount() const { return races_; }
  static constexpr size_t kMaxReports = 8;

private:
  struct Access {
    uint32_t actor = 0, epoch = 0;
    uint64_t serial = 0;           ///< Dynamic op instance of the tb (accesses of one op never race).
    const TbState *tb = nullptr;
    const LoweredOp *op = nullptr;
    size_t pc = 0;
    bool write = false;
  };
  struct Segment {
    uintptr_t end = 0;
    bool hasWrite = false;
    Access write;
    std::vector<Access> reads;
  };

  uint32_t proxyOf(uint32_t actor) const { return actor + numTbs_; }
  void join(Clock &into, const Clock &from) const;
  Clock releaseClock(const TbState &tb, bool withCurrent) const;
  bool ordered(const Access &before, const Access &now, const Clock &clock) const;
  void split(uintptr_t at);
  void report(const Access &other, const Access &now, uintptr_t lo, uintptr_t hi, const uint8_t *addr,
              uint32_t bufRank, plan::BufferType type, uint64_t offset);

  uint32_t numTbs_ = 0;
  std::vector<Clock> clocks_;    ///< Per actor (tbs, then proxy lanes).
  std::vector<Clock> pending_;   ///< Per tb: acquired by one thread, effective at the next nop.
  std::vector<std::vector<std::deque<Clock>>> memFifo_, portFifo_; ///< [rank][channel]: released clocks.
  std::vector<std::vector<Clock>> semClocks_;                     ///< [rank][semaphore].
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, Clock> barrierClocks_; ///< (rank, id, generation).
  std::map<uintptr_t, Segment> shadow_;
  std::map<uintptr_t, std::pair<uintptr_t, Clock>> packets_; ///< Packet bytes -> (end, producer clock).
  std::vector<std::string> reports_;
  std::set<std::tuple<uint32_t, size_t, uint32_t, size_t>> reported_;
  uint64_t races_ = 0;
};

} // namespace msccl::runtime::cpu
