//===- CpuMachine.h - State of one CPU-executor launch (private) -------------------------===//
//
// The simulated machine the CPU executor's scheduler (CpuExecutor.cpp) drives and the op
// semantics (CpuOps.cpp) act on: per-rank buffers, channel counters, semaphores and barriers,
// and per-threadblock program state (pc, pipeline iteration, op cursor).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Resolve.h"

#include <cstdint>
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

struct RankState {
  uint8_t *input = nullptr;
  uint64_t inputBytes = 0;
  uint8_t *output = nullptr;
  uint64_t outputBytes = 0;
  ZeroedBytes scratch;            ///< Whole scratch (both halves when double buffered).
  uint64_t scratchHalf = 0;       ///< Bytes of one half (= scratch.size() if not doubled).
  uint64_t scratchOffset = 0;     ///< SO of the current launch.
  std::vector<uint64_t> memSignals, memWaits, portSignals, portWaits; ///< Per gpu-level channel.
  std::vector<int64_t> semaphores;
  std::vector<int64_t> semaphoreInit;
  std::vector<Barrier> barriers;
};

enum class Step : uint8_t { Done, Progress, Blocked };

struct TbState {
  uint32_t rank = 0, tbIndex = 0;
  uint32_t actor = 0;             ///< Index among the launch's threadblocks (race checker).
  uint64_t serial = 0;            ///< Dynamic op instances completed so far (race checker).
  const LoweredTb *tb = nullptr;
  size_t pc = 0;
  bool done = false;
  // Pipeline being executed (pc is inside [pipeBegin, pipeEnd)).
  bool inPipe = false;
  size_t pipeBegin = 0, pipeEnd = 0;
  uint64_t pipeIter = 0, pipeIters = 0, unitSize = 0;
  // Progress of the current op.
  uint64_t cursor = 0;
  bool arrived = false;
  uint64_t barrierGeneration = 0;
  std::vector<int64_t> semOld;    ///< sem_acquire: value each id had when this tb decremented it.
  std::string blockedOn;          ///< Why the current op is blocked (for deadlock reports).
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
  std::vector<uint8_t> tmp;        ///< Reduction scratch.
  uint64_t opsExecuted = 0;
  RaceChecker *race = nullptr; ///< Non-null when CpuExecutorOptions::raceCheck is on.
};

/// Run one step of the tb's current op `op` (never a pipeline op). Throws ExecutionError(Misuse).
Step stepOp(Machine &m, TbState &tb, const LoweredOp &op);

/// "rank R tb T op K (name) at PATH" for messages.
std::string opWhere(const TbState &tb, const LoweredOp &op);

} // namespace msccl::runtime::cpu
