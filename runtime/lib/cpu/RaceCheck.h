//===- RaceCheck.h - Happens-before data-race checker of the CPU executor (private) -------===//
//
// Consumes the accesses and synchronisation events of the CPU executor's launches (CpuOps.cpp
// and CpuExecutor.cpp call it when CpuExecutorOptions::raceCheck is on); produces one
// diagnostic per data race a GPU could exhibit although the sequential CPU schedule happened to
// give the right answer.
//
// Model (spec plan#6.3, plan#8.1; docs/verification.md "The GPU model", the static verifier's
// model), ThreadSanitizer-style vector clocks. Actors: every threadblock (rank, tb), per
// threadblock its port-channel proxy lane, and per rank its host (the caller). Each actor has a
// vector clock over all actors; a threadblock's component counts its ops (a release names the
// ops before it, not the whole epoch). A threadblock's accesses belong to its current "sync
// epoch"; `nop` and `barrier` (__syncthreads) complete the epoch. Two accesses to overlapping bytes of
// which at least one writes race unless the earlier one happens-before the later one:
//  * same threadblock: a `nop`/`barrier` between them (accesses of one op never race);
//  * memory `signal` releases the signalling tb's completed (pre-`nop`) epochs plus what it had
//    acquired; the matching `wait` (the n-th wait consumes the n-th signal) acquires them, for
//    the whole block from its next `nop` on (other threads only see it after __syncthreads);
//    `rlxsignal`/`rlxwait` on memory channels order no data: they carry only the signalling
//    rank's kernel start (its host clock), i.e. that its earlier launches ended;
//  * port `put`/`pws`/`pwsf` are performed by the tb's proxy lane, which knows the tb's
//    completed epochs at the time of the put; a port `signal` (and the signal of `pws`)
//    also releases the proxy lane's puts; `flush` (and `pwsf`) acquires them back into the tb;
//  * `sem_release`/`sem_acquire` (release/acquire) and `barrier` order tbs of one rank;
//  * packets: a packet op that completes acquires the clocks its consumed packets were released
//    with (LL flags order each packet's payload) and releases its clock with the packets it
//    writes. Packet bytes are accesses too: rewriting a packet slot a consumer has not
//    provably read (LL scratch reused by the next launch without the double buffer) races.
// Launches (launch model on, CpuExecutorOptions::raceCheckLaunches): rank r's launch k+1 starts
// after its own launch k ended and after nothing else, however the CPU scheduler happens to
// interleave the ranks; shadow memory, signal FIFOs, semaphore and packet clocks persist across
// launches. At rank r's kernel start its host writes r's input and output (the caller may still
// write them), every tb of r starts from the host's clock; at r's kernel end the host joins the
// clocks of r's tbs (not of their proxy lanes: unflushed port puts may still be in flight) and
// reads r's output and input. Because the n-th wait of a channel pairs with its n-th signal in
// every schedule, the happens-before relation is the same in the lockstep CPU run as in any
// skewed GPU run, so checking it here checks every skew.
// Relaxed handshakes: in plans with rlxsignal/rlxwait every clock exists twice, strict (above)
// and "strong" (relaxed signal/wait treated as release/acquire). A pair unordered under strict rules but ordered under
// strong ones, one of whose accesses is a host's (kernel start/end), is a warning (the
// verifier's stance on relaxed exit handshakes), not a race.
// Launch model off: launch boundaries are full synchronisation (state reset per launch) and the
// host is not modelled.
//
// Shadow memory: one interval map over host addresses (so aliased in-place input/output
// buffers are one memory); each segment holds its last write and the reads since then that are
// not ordered before one another.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Resolve.h"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace msccl::runtime::cpu {

struct TbState;
struct RankState;

class RaceChecker {
public:
  using Clock = std::vector<uint32_t>;

  /// Gpu-level memory/port channel and semaphore counts of one rank.
  struct RankShape {
    size_t memoryChannels = 0, portChannels = 0, semaphores = 0;
  };
  /// Once per execute call, before the first launch. `numTbs`: threadblocks of a launch (the
  /// same every launch; TbState::actor is the index among them); `ranks` the ranks' buffers
  /// (kept by pointer: host accesses and report locations). `launchModel`: see above.
  /// `relaxed`: the plan has rlxsignal/rlxwait ops (else the strong clocks equal the strict
  /// ones and are not kept).
  void begin(uint32_t numTbs, const std::vector<RankShape> &shapes, const std::vector<RankState> &ranks,
             bool launchModel, bool relaxed);
  /// Launch `launch` (0-based) starts on every rank; `tbs` its threadblocks.
  void startLaunch(uint32_t launch, const std::vector<TbState> &tbs);
  /// Every rank's launch ended (all `tbs` done).
  void endLaunch(const std::vector<TbState> &tbs);

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
  /// The tb consumed the next signal of its own gpu-level channel `channel` (`data`: an acquire,
  /// false for memory rlxwait).
  void wait(const TbState &tb, plan::ChannelType ct, uint32_t channel, bool data);
  void semRelease(const TbState &tb, uint32_t id);
  void semAcquire(const TbState &tb, uint32_t id);
  void flush(const TbState &tb);
  /// Packet op `op` completed and read packets [addr, addr+bytes): it acquires their producers'
  /// clocks, then its read of the packet bytes is checked.
  void packetAcquire(const TbState &tb, const LoweredOp &op, const uint8_t *addr, uint64_t bytes);
  /// Packet op `op` completed and wrote packets [addr, addr+bytes) (by its port proxy with
  /// `proxy`): the write is checked against earlier readers of those bytes, then released.
  void packetRelease(const TbState &tb, const LoweredOp &op, bool proxy, const uint8_t *addr, uint64_t bytes);

  /// Races found so far (at most kMaxReports described) and their total count.
  const std::vector<std::string> &reports() const { return reports_; }
  uint64_t raceCount() const { return races_; }
  /// Relaxed-handshake races (warnings, at most kMaxReports described) and their count.
  const std::vector<std::string> &warnings() const { return warnings_; }
  uint64_t warningCount() const { return warningCount_; }
  static constexpr size_t kMaxReports = 8;

private:
  /// [0]: strict rules; [1]: relaxed signal/wait as release/acquire.
  using Clocks = std::array<Clock, 2>;
  struct Access {
    uint32_t actor = 0;
    uint32_t epoch = 0; ///< A tb's sync epoch (nops seen): same-tb accesses are ordered across a nop.
    uint32_t tick = 0;  ///< Other actors know this access when their clock of `actor` >= tick.
    uint32_t launch = 0;
    uint64_t serial = 0; ///< Dynamic op instance of the tb (accesses of one op never race).
    uint32_t rank = 0, tbId = 0; ///< The tb's rank and id (the host: its rank).
    const LoweredOp *op = nullptr; ///< Null: the host.
    size_t pc = 0;
    bool write = false;
    bool packet = false;
  };
  struct Segment {
    uintptr_t end = 0;
    bool hasWrite = false;
    Access write;
    std::vector<Access> reads;
  };
  /// A signal in flight: strict and strong release clocks, and the signaller's kernel start.
  struct Msg {
    Clocks data;
    Clock ctrl;
    bool relaxed = false;
  };

  uint32_t proxyOf(uint32_t actor) const { return actor + numTbs_; }
  uint32_t hostOf(uint32_t rank) const { return 2 * numTbs_ + rank; }
  bool isHost(uint32_t actor) const { return actor >= 2 * numTbs_; }
  void reset();
  static void join(Clock &into, const Clock &from);
  Clock releaseClock(int f, const TbState &tb, bool withCurrent) const;
  bool ordered(const Access &before, const Access &now, const Clock &clock) const;
  void split(uintptr_t at);
  Access tbAccess(const TbState &tb, const LoweredOp &op, bool proxy, bool write);
  /// Check `now` on bytes [addr, addr+len), which are bytes [offset, ...) of rank `bufRank`'s
  /// buffer `type`, and record it.
  void check(const Access &now, const uint8_t *addr, uint64_t len, uint32_t bufRank, plan::BufferType type,
             uint64_t offset);
  /// check() for an access known by address only (host and packet accesses).
  void checkAt(const Access &now, const uint8_t *addr, uint64_t len);
  void hostAccess(uint32_t rank, bool write, bool start);
  void report(const Access &other, const Access &now, std::string where, bool warning);
  std::string describe(const Access &a) const;

  bool launchModel_ = true;
  int fam_ = 2; ///< Clock families kept: 2 with the launch model and relaxed ops, else 1.
  uint32_t numTbs_ = 0, numRanks_ = 0, launch_ = 0;
  const std::vector<RankState> *ranks_ = nullptr;
  std::vector<RankShape> shapes_;
  std::vector<Clocks> clocks_;   ///< Per actor (tbs, proxy lanes, hosts): its two clocks.
  std::vector<Clocks> pending_;  ///< Per tb: acquired by one thread, effective at the next nop.
  /// Per tb: its clock component counts its ops over all launches (op k of a launch has tick
  /// base_ + k + 1), so a release names exactly the ops before it; epoch_ counts its nops.
  std::vector<uint32_t> base_, epoch_;
  uint32_t tick(const TbState &tb) const;
  std::vector<std::vector<std::deque<Msg>>> memFifo_, portFifo_; ///< [rank][channel].
  std::vector<std::vector<Clocks>> semClocks_;                    ///< [rank][semaphore].
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, Clocks> barrierClocks_; ///< (rank, id, generation).
  std::map<uintptr_t, Segment> shadow_;
  std::map<uintptr_t, std::pair<uintptr_t, Clocks>> packets_; ///< Packet bytes -> (end, producer clocks).
  std::vector<std::string> reports_, warnings_;
  std::set<std::tuple<uint32_t, size_t, uint32_t, size_t, bool>> reported_;
  uint64_t races_ = 0, warningCount_ = 0;
};

} // namespace msccl::runtime::cpu
