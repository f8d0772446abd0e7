//===- Resolve.h - From tb-local ids to peers, buffers and byte ranges -------------------===//
//
// Two steps every backend needs before it can run a plan:
//  1. resolvePlan: plan -> ResolvedPlan. Builds the gpu-level channel lists (one channel per
//     `connected_to` element, one switch channel per rank group), pairs every memory/port channel
//     with its partner on the peer (the k-th channel of A toward B pairs with the k-th channel of
//     B toward A, plan#4.1), and turns each threadblock's `channels` / `remote_buffer_refs` into
//     tb-local -> gpu-level tables (plan#5).
//  2. lowerPlan: (plan, resolved, per-rank ChunkLayout) -> LoweredPlan. Flattens every
//     threadblock's ops (a pipeline is followed by its inner ops, as in the reference loader),
//     resolves every buffer entry to a location (local buffer / peer rank + buffer / switch
//     channel) and a byte range (chunk arithmetic + tbg split of Layout.h), and every op's
//     channel ids to gpu-level channels.
// Both assume a plan accepted by validatePlan (PlanValidate.h); an id that still resolves to
// nothing raises ExecutionError(InvalidPlan) naming the JSON path.
//
// Mirrors: mscclpp src/core/executor/execution_plan.cc (setupChannels, setupRemoteBuffers,
// setupOperations) and executor.cc (setupConnections: per-peer tags, unpaired channels).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/OpTable.h"
#include "msccl/plan/Plan.h"
#include "msccl/runtime/Layout.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace msccl::runtime {

constexpr uint32_t kNoChannel = std::numeric_limits<uint32_t>::max();

/// A gpu-level memory or port channel of one rank.
struct ResolvedChannel {
  uint32_t peer = 0;               ///< Rank at the other end.
  uint32_t occurrence = 0;         ///< k: this is the k-th channel of this type toward `peer`.
  uint32_t peerChannel = kNoChannel; ///< Gpu-level index of the partner channel on `peer`
                                   ///< (same type), kNoChannel when the peer declares none.
};

/// A gpu-level switch (NVLS) channel: one rank group of a switch entry.
struct ResolvedSwitch {
  plan::BufferType bufferType = plan::BufferType::Input;
  std::vector<uint32_t> ranks;     ///< Members, in the plan's order.
};

/// One threadblock's tb-local -> gpu-level tables.
struct ResolvedTb {
  std::vector<uint32_t> memoryChannels, portChannels, switchChannels;
  /// tb-local remote buffer p accessed through memory / port -> gpu-level remote_buffers index.
  std::vector<uint32_t> memoryBuffers, portBuffers;
};

struct ResolvedGpu {
  std::vector<ResolvedChannel> memoryChannels, portChannels;
  std::vector<ResolvedSwitch> switchChannels;
  std::vector<ResolvedTb> threadblocks; ///< By array position (= id for validated plans).
};

struct ResolvedPlan {
  std::vector<ResolvedGpu> gpus;
};

/// Step 1. Throws ExecutionError(InvalidPlan) for ids that resolve to nothing.
ResolvedPlan resolvePlan(const plan::Plan &plan);

/// Where a lowered buffer entry lives.
struct Location {
  enum class Kind : uint8_t { Local, Remote, Switch };
  Kind kind = Kind::Local;
  /// Buffer type: the entry's own for Local, the remote buffer's for Remote, the switch
  /// channel's buffer_type for Switch.
  plan::BufferType type = plan::BufferType::Input;
  uint32_t rank = 0;          ///< Owner rank for Remote; the op's rank for Local/Switch.
  uint32_t remoteBuffer = 0;  ///< Remote: gpu-level remote_buffers index.
  uint32_t switchChannel = 0; ///< Switch: gpu-level switch channel index.
};

/// A buffer entry after chunk arithmetic and the tbg split. `bytes` is the *payload* range
/// (plan#7.2): packet-format accesses address 2*offset in the buffer.
struct LoweredEntry {
  Location where;
  ByteRange bytes;
  uint64_t index = 0, size = 0; ///< The entry's chunk index/size, for diagnostics.
};

/// One op, flattened. Inner ops of a pipeline follow the pipeline op directly.
struct LoweredOp {
  plan::OpType type = plan::OpType::Nop;
  plan::ChannelType channelType = plan::ChannelType::None;
  /// Gpu-level channel index per op channel id (memory/port/switch table by channelType).
  std::vector<uint32_t> channels;
  std::vector<LoweredEntry> src, dst;
  std::vector<uint32_t> semaphores;     ///< sem_acquire / sem_release.
  uint32_t barrierId = 0, numThreadblocks = 0;
  bool hasReduceOp = false;
  plan::ReduceOp reduceOp = plan::ReduceOp::Sum; ///< The plan's reduce_op when hasReduceOp.
  // Pipeline op only.
  uint32_t pipelineOps = 0;             ///< Number of inner ops that follow.
  uint64_t pipelineIterations = 0;      ///< ceil(num_chunks * c / unit_size).
  uint64_t unitSize = 0;                ///< Bytes.
  bool inPipeline = false;              ///< An inner op of a pipeline.
  std::string path;                     ///< JSON path, e.g. "gpus[0].threadblocks[1].ops[3]".
};

struct LoweredTb {
  uint32_t id = 0;
  std::vector<LoweredOp> ops;
};

/// Where one threadblock is in its lowered op list, pipelines included: the program counter and,
/// inside a pipeline (its body is ops (pipeBegin, pipeEnd], run pipeIters times), the iteration.
/// Shared by the executors that step threadblocks op by op (the CPU executor, the MPI runner,
/// the performance model).
struct OpCursor {
  size_t pc = 0;
  bool done = false;
  bool inPipe = false;
  size_t pipeBegin = 0, pipeEnd = 0;
  uint64_t pipeIter = 0, pipeIters = 0, unitSize = 0;

  /// Moves to the next op that does work: past the end of a pipeline body (to its next iteration
  /// or beyond it) and into pipeline headers (empty pipelines are skipped); sets `done` at the end
  /// of `ops`. Returns how many pipeline headers it passed (each counts as one executed op).
  unsigned settle(const std::vector<LoweredOp> &ops);
};

struct LoweredGpu {
  ChunkLayout layout;
  std::vector<LoweredTb> threadblocks;
  uint64_t scratchBytes = 0;  ///< Whole scratch allocation (both halves with double buffering).
  /// SO of launches with an even flag F (plan#7.4): scratchBytes/2 with use_double_scratch_buffer,
  /// else 0; always a multiple of 16 (scratchBytes is grown when the halves would not be).
  /// Launches with an odd F use SO = 0.
  uint64_t scratchHalfOffset = 0;
  bool usesPackets = false;   ///< Any op of the rank reads or writes packets.
};

struct LoweredPlan {
  std::vector<LoweredGpu> gpus;
};

/// Step 2: lower every rank for message sizes S_in/S_out (bytes): equal chunks (Layout.h) where
/// the sizes divide, else uneven chunks of whole `elementBytes`-byte elements where the plan allows
/// them (UnevenChunks.h; the performance model, which moves no data, passes 1).
/// Throws ExecutionError(InvalidSize) from Layout.h / UnevenChunks.h and ExecutionError(InvalidPlan).
LoweredPlan lowerPlan(const plan::Plan &plan, const ResolvedPlan &resolved, uint64_t inputBytes,
                      uint64_t outputBytes, uint64_t elementBytes);
/// Step 2 with every rank's layout given (layouts[r] for rank r; a peer's entries use the peer's
/// layout when the layouts carry uneven offsets). Throws as lowerPlan.
LoweredPlan lowerPlanWith(const plan::Plan &plan, const ResolvedPlan &resolved, std::vector<ChunkLayout> layouts);

// The op predicates the runtime uses, from the op table (plan/OpTable.h).
using plan::honoursPipeline;
using plan::isPacketOp;

} // namespace msccl::runtime
