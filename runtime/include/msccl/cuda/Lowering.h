//===- Lowering.h - runtime::LoweredPlan -> device structs of one rank -------------------===//
//
// Consumes the backend-neutral lowering of the runtime (msccl/runtime/Resolve.h: every entry
// resolved to a location and a byte range, channel ids gpu-level, pipelines flattened) and
// produces, per rank, the flat arrays of DevicePlan.h that the CUDA kernel interprets.
// Guarantees, when it returns:
//   * every id in the device ops is gpu-level and in range (channels, remote buffers, switch
//     channels, semaphores, barriers), and every op has the entries its handler reads;
//   * every byte an op can touch lies inside its buffer (local, peer or switch member),
//     packet-format regions counted at twice their payload offset (spec plan#7.2);
//   * the device limits of DevicePlan.h hold.
// Anything else is a LoweringError naming the rank, threadblock, op (JSON path) and field.
//
// The reference's defects (spec plan#11) are fixed as in the CPU executor
// (docs/runtime.md); the run-time ones (4, 5, 7, 18) are the kernel's and the executor's
// business (docs/cuda.md).
//
// Mirrors: mscclpp src/core/executor/execution_plan.cc (setupOperations: per-tb device plans).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"
#include "msccl/plan/Plan.h"
#include "msccl/runtime/Resolve.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace msccl::cuda {

/// A plan that cannot run on the CUDA executor at these sizes; what() says where and why.
class LoweringError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One rank's device plan plus the buffer sizes the executor must allocate.
struct LoweredRank {
  uint32_t rank = 0;
  uint64_t chunkBytes = 0;   ///< c (spec plan#3.2)
  uint64_t inputBytes = 0;   ///< S_in
  uint64_t outputBytes = 0;  ///< S_out
  uint64_t scratchBytes = 0; ///< whole allocation (x2 for packets, x2 double buffer)
  uint64_t scratchHalf = 0;  ///< SO of even-flag launches (0 without double buffering); a
                             ///< multiple of 16 (LL16 stores are 16-byte vectors)
  uint64_t reuseSlotBytes = 0; ///< reuse_resources slot SC (0 = off): pipeline windows of
                               ///< scratch entries wrap modulo SC (pipelineWindowBytes)
  /// By gpu-level remote buffer id: the owner's scratchHalf when the buffer is scratch, else 0.
  std::vector<uint64_t> remoteScratchHalf;
  /// By gpu-level switch channel, by member (plan order): the member's scratchHalf when the
  /// channel's buffer is scratch, else 0.
  std::vector<std::vector<uint64_t>> switchScratchHalf;
  uint32_t numThreadsPerBlock = 0;
  std::vector<DevThreadblock> threadblocks; ///< position = threadblock id; rankSlot = 0
  std::vector<DevOp> ops;                   ///< all threadblocks' ops, flattened
  std::vector<DevEntry> entries;
  uint32_t numMemoryChannels = 0, numPortChannels = 0, numSwitchChannels = 0;
  uint32_t numRemoteBuffers = 0, numSemaphores = 0;
  bool usesPackets = false; ///< some op reads or writes LL packets
};

/// Lowers rank `rank`. `defaultReduce` is the request's operator, used by reduce ops without
/// `reduce_op` (ExecuteRequest::reduceOp). Throws LoweringError (see the file comment).
LoweredRank lowerRank(const plan::Plan &plan, const runtime::ResolvedPlan &resolved,
                      const runtime::LoweredPlan &lowered, uint32_t rank, plan::ReduceOp defaultReduce);

/// resolvePlan + runtime::lowerPlan + lowerRank for every rank at message sizes S_in/S_out
/// (bytes) of `elementBytes`-byte elements (sizes that do not divide into equal chunks are cut
/// into uneven chunks of whole elements, runtime/UnevenChunks.h; 1 = no element constraint).
/// Throws runtime::ExecutionError (sizes, plan) or LoweringError.
std::vector<LoweredRank> lowerForDevice(const plan::Plan &plan, uint64_t inputBytes, uint64_t outputBytes,
                                        plan::ReduceOp defaultReduce = plan::ReduceOp::Sum, uint64_t elementBytes = 1);

} // namespace msccl::cuda
