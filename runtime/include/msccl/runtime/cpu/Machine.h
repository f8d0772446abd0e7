//===- cpu/Machine.h - The CPU machine: state of one launch and its op semantics -----------===//
//
// The internal interface of the CPU reference machine (library msccl_cpu), for the two
// executors that drive it and nothing else: the one-process CPU executor (runtime/lib/cpu/
// CpuExecutor.cpp, a deterministic scheduler) and the one-process-per-rank runner
// (runtime/lib/mpi/DistributedRun.cpp, a thread per threadblock). It holds what the op
// semantics (CpuOps.cpp: stepOp and the functions below) act on: per-rank buffers, channel
// counters, semaphores and barriers, and per-threadblock program state (pc, pipeline
// iteration, op cursor). Installed with the runtime headers, but not a stable API.
//
// The same machine serves the one-process simulation (CpuExecutor.cpp: every rank's memory is
// in this process, one scheduler thread) and the one-process-per-rank MPI executor
// (runtime/lib/mpi: this process runs one rank's threadblocks as concurrent threads; node peers'
// buffers and signal words are mapped shared memory; ranks of other nodes are not mapped and are
// reached only through a PortTransport). Counters, semaphores and LL packets are therefore
// accessed with atomics and the memory orders the ops promise (release signal, acquire wait,
// relaxed forms relaxed).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Resolve.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace msccl::runtime::cpu {

struct Barrier {
  uint32_t arrived = 0;
  uint32_t expected = 0;
  uint64_t generation = 0;
};

/// Zero-filled bytes from calloc. Large blocks are fresh pages the OS maps (as zeros) on first
/// touch, so scratch a launch never touches - the other half of a double buffer, the packet
/// area of a plain plan - costs no resident memory, unlike a zero-filled std::vector.
class ZeroedBytes {
public:
  ZeroedBytes() = default;
  /// Throws std::bad_alloc when the memory is not available.
  explicit ZeroedBytes(size_t bytes) : p_(static_cast<uint8_t *>(std::calloc(bytes ? bytes : 1, 1))), n_(bytes) {
    if (!p_)
      throw std::bad_alloc();
  }
  uint8_t *data() const { return p_.get(); }
  size_t size() const { return n_; }

private:
  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> p_;
  size_t n_ = 0;
};

/// A run of 64-bit counters (signal/wait counts, semaphores) somewhere in memory: a vector of
/// this process or a shared-memory window. Accessed atomically.
template <class T> struct Words {
  T *p = nullptr;
  size_t n = 0;
  size_t size() const { return n; }
  T load(size_t i, int order = __ATOMIC_ACQUIRE) const { return __atomic_load_n(p + i, order); }
  T add(size_t i, T v, int order = __ATOMIC_RELEASE) { return __atomic_fetch_add(p + i, v, order); }
  bool casIncrement(size_t i, T expected) {
    return __atomic_compare_exchange_n(p + i, &expected, expected + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
};

struct RankState {
  bool mapped = true;             ///< False: another node's rank; only PortTransport reaches it.
  uint8_t *input = nullptr;
  uint64_t inputBytes = 0;
  uint8_t *output = nullptr;
  uint64_t outputBytes = 0;
  uint8_t *scratch = nullptr;     ///< Whole scratch (both halves when double buffered).
  uint64_t scratchBytes = 0;
  uint64_t scratchHalf = 0;       ///< Bytes of one half (= scratchBytes if not doubled).
  uint64_t scratchOffset = 0;     ///< SO of the current launch.
  Words<uint64_t> memSignals, memWaits, portSignals, portWaits; ///< Per gpu-level channel.
  /// Threads of this rank asleep on one of its signal words (a futex, Machine::wakeWaiters): a
  /// signaller wakes the word only when this count is not 0 (null: always wakes).
  uint64_t *sleepers = nullptr;
  Words<int64_t> semaphores;
  std::vector<int64_t> semaphoreInit;
  std::vector<Barrier> barriers;
  ZeroedBytes scratchStorage;     ///< Owner of `scratch` (one-process executor): calloc, so
                                  ///< scratch a launch never touches costs no resident memory.
  std::vector<uint64_t> counterStorage; ///< Owner of the counters (one-process executor).
  std::vector<int64_t> semaphoreStorage;
};

struct TbState;

/// Where port-channel ops go when ranks live in different processes (the port proxy of the MPI
/// executor). Without one (the one-process executor), port puts and signals store directly.
/// Calls come from threadblock threads; each tb's requests are executed in issue order.
class PortTransport {
public:
  virtual ~PortTransport() = default;
  /// Queue a put of `bytes` bytes from local memory `src` to rank `dstRank`'s buffer `type` at
  /// byte `offset` (scratch offsets include the launch's half). `owned`, when non-null, is a
  /// staging copy the transport takes over (src points into it).
  virtual void put(const TbState &tb, uint32_t dstRank, plan::BufferType type, uint64_t offset, const uint8_t *src,
                   uint64_t bytes, std::vector<uint8_t> *owned) = 0;
  /// Queue one signal on `peer`'s port channel `peerChannel`, ordered after this tb's puts.
  virtual void signal(const TbState &tb, uint32_t peer, uint32_t peerChannel) = 0;
  /// True when every request this tb queued has completed at its target.
  virtual bool flushed(const TbState &tb) = 0;
  /// What this tb's unfinished requests are (for a report on a blocked flush).
  virtual std::string describePending(const TbState &tb) = 0;
};

enum class Step : uint8_t { Done, Progress, Blocked };

/// What a blocked op waits for: recorded as plain values on every failed step (a wait spins on
/// it), rendered as text only for a report (blockedLine), with the counters as they are then.
struct BlockedOn {
  enum class Kind : uint8_t { None, Signal, Packet, Barrier, Semaphore, PortFlush };
  Kind kind = Kind::None;
  plan::ChannelType channelType = plan::ChannelType::None; ///< Signal
  uint32_t id = 0;                 ///< Signal: gpu-level channel; Barrier: barrier id; Semaphore: id
  uint64_t index = 0, count = 0;   ///< Packet: packet index of count
  const LoweredEntry *entry = nullptr; ///< Packet: the entry it reads
  const char *side = "";           ///< Packet: "src_buff"
  size_t entryIndex = 0;           ///< Packet: position of the entry in its side
};

/// One threadblock of a launch: where it is (OpCursor: pc, pipeline iteration) and the progress
/// of its current op.
struct TbState : OpCursor {
  uint32_t rank = 0, tbIndex = 0;
  uint32_t actor = 0;             ///< Index among the launch's threadblocks (race checker).
  uint64_t serial = 0;            ///< Dynamic op instances completed so far (race checker).
  const LoweredTb *tb = nullptr;
  // Progress of the current op.
  uint64_t cursor = 0;
  bool arrived = false;
  uint64_t barrierGeneration = 0;
  std::vector<int64_t> semOld;    ///< sem_acquire: value each id had when this tb decremented it.
  BlockedOn blocked;              ///< Why the current op is blocked (for deadlock reports).
  /// A blocked wait on a signal counter: its low 32 bits and the value seen, so a thread can
  /// sleep on it (futex) until a signaller wakes it (Machine::wakeWaiters). Null otherwise.
  const uint32_t *waitWord = nullptr;
  uint32_t waitValue = 0;
  bool waitWoken = true; ///< False for port signals (they arrive through the network, unannounced).
};

class RaceChecker;

struct Machine {
  const plan::Plan *plan = nullptr;
  const ResolvedPlan *resolved = nullptr;
  const LoweredPlan *lowered = nullptr;
  plan::DataType dataType = plan::DataType::Float32;
  plan::ReduceOp reduceOp = plan::ReduceOp::Sum;
  PacketType packetType = PacketType::LL16;
  uint32_t flag = 0;               ///< LL flag F of the current launch.
  std::vector<RankState> ranks;
  uint64_t opsExecuted = 0;
  RaceChecker *race = nullptr; ///< Non-null when CpuExecutorOptions::raceCheck is on.
  PortTransport *port = nullptr; ///< Non-null in the MPI executor.
  /// Memory-channel signals wake threads sleeping on the counter (futex; the MPI executor,
  /// where waiters sleep instead of being polled by a scheduler).
  bool wakeWaiters = false;
  std::mutex barrierMutex;       ///< Barriers of concurrently running threadblocks.
};

/// Run one step of the tb's current op `op` (never a pipeline op). Throws ExecutionError(Misuse).
Step stepOp(Machine &m, TbState &tb, const LoweredOp &op);

/// "rank R tb T op K (name) at PATH" for messages.
std::string opWhere(const TbState &tb, const LoweredOp &op);

/// A fresh state for threadblock `t` of rank `r` (pc 0; done when it has no ops).
TbState makeTbState(const Machine &m, uint32_t r, uint32_t t, uint32_t actor);
/// Advance pc over pipeline bookkeeping to the next runnable op, or mark the tb done.
void settleTb(Machine &m, TbState &s);
/// The current op completed: reset its progress and move to the next op (then call settleTb).
void finishOp(Machine &m, TbState &s);
/// One report line for a tb that has not finished: "rank R tb T op K (name) at PATH
/// [(pipeline iteration i of n)]: waits for ...".
std::string blockedLine(const Machine &m, const TbState &s);
/// End-of-launch balance problems of rank `r` (semaphores off their init value, channels whose
/// signals and waits differ), one line each.
std::vector<std::string> balanceProblems(const Machine &m, uint32_t r);

} // namespace msccl::runtime::cpu
