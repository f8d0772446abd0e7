//===- Layout.h - Chunk -> byte arithmetic shared by every backend -----------------------===//
//
// Consumes a plan, a rank and the message sizes (S_in, S_out) in bytes; produces the rank's
// chunk size in bytes and the byte ranges of buffer entries, thread-block-group slices, pipeline
// windows and the scratch size. Guarantees: every range returned is in bytes and a multiple of
// buffer_alignment (A); sizes that do not divide are rejected with the reference's error texts
// (spec plan#3.2) as ExecutionError(InvalidSize), never padded or truncated.
//
// Mirrors: mscclpp src/core/executor/execution_plan.cc (getOffset, calcOffset, getNChunkSize,
// checkMessageSize, calScratchBufferSize, tbg handling) and executor.cc (scratch sizing).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace msccl::runtime {

/// A byte range inside one buffer.
struct ByteRange {
  uint64_t offset = 0; ///< Bytes from the buffer's start.
  uint64_t length = 0; ///< Bytes.
  uint64_t end() const { return offset + length; }
};

/// Byte offset of every chunk of one rank's buffers when chunks differ in size (UnevenChunks.h):
/// `input[k]` is where input chunk k starts, `input[input_chunks]` the bytes in use; the same for
/// output and scratch.
struct ChunkOffsets {
  std::vector<uint64_t> input, output, scratch;
  const std::vector<uint64_t> &of(plan::BufferType type) const {
    return type == plan::BufferType::Input ? input : type == plan::BufferType::Output ? output : scratch;
  }
};

/// The chunk size of one rank for one (S_in, S_out).
struct ChunkLayout {
  uint64_t alignment = 16;  ///< A = buffer_alignment (bytes).
  uint64_t chunkBytes = 0;  ///< c (bytes); 0 when the rank has no chunk size (all counts 0).
  bool hasChunkBytes = false;
  /// reuse_resources slot size SC (plan#3.6) in bytes; 0 when the plan does not reuse resources
  /// or has no scratch. Scratch entries use k*SC instead of k*c when SC < c.
  uint64_t reuseSlotBytes = 0;
  uint64_t inputBytes = 0, outputBytes = 0; ///< S_in, S_out.
  /// Set when the sizes do not divide into equal chunks (our extension, UnevenChunks.h): chunk k
  /// of a buffer is bytes [offsets[k], offsets[k+1]); `chunkBytes` is then the largest chunk of
  /// any rank (pipeline iteration counts) and `alignment` the granule every chunk is a multiple of.
  std::shared_ptr<const ChunkOffsets> offsets;
};

/// Check the message size against the plan (plan#3.2 steps 1-2) and compute rank `rank`'s chunk
/// size (step 3), for every rank with the same S_in/S_out.
/// Deviations from the reference (docs/runtime.md): a buffer whose chunk count is 0 skips the
/// divisibility test (plan#11.1); when input_chunks and output_chunks are both 0 the chunk size is
/// S_in / scratch_chunks if scratch_chunks > 0 (so the DSL's scratch-only unit tests run), and
/// otherwise the rank has no chunk size (an op that needs one then fails at resolution).
/// Throws ExecutionError(InvalidSize) with the reference's messages:
///  "Input or output size is not aligned with buffer alignment or chunks",
///  "Input or output size is not within the valid range",
///  "Size per chunks inconsistent: ...".
ChunkLayout computeChunkLayout(const plan::Plan &plan, uint32_t rank, uint64_t inputBytes, uint64_t outputBytes);

/// The message size the range check uses: S_out for collective "allgather", else S_in.
uint64_t rangeCheckedSize(const plan::Plan &plan, uint64_t inputBytes, uint64_t outputBytes);

/// Byte range of entry {index, size} in a buffer of type `type` (plan#3.3): offset index*c and
/// length size*c; for scratch in reuse mode with SC < c the offset is index*SC; with uneven chunks
/// (layout.offsets) [offsets[index], offsets[index+size]).
/// Throws ExecutionError(InvalidSize) "Output or Input chunks must be greater than 0" when the
/// rank has no chunk size, ExecutionError(InvalidPlan) when an uneven entry lies past the buffer's
/// chunks.
ByteRange entryBytes(const ChunkLayout &layout, plan::BufferType type, uint64_t index, uint64_t size);

/// Thread-block-group slice (plan#3.3, tbg_info): member t of G gets the t-th piece of `range` cut at
/// A granularity; the first (units % G) members get one extra unit. Members may get 0 bytes.
ByteRange tbgSlice(ByteRange range, const plan::TbgInfo &tbg, uint64_t alignment);

/// Pipeline iteration count (plan#3.4): ceil(num_chunks * c / unit_size).
/// Throws ExecutionError(InvalidPlan) when unit_size is 0 and InvalidSize when the count exceeds
/// 65535 (the reference truncates it to 16 bits).
uint64_t pipelineIterations(const ChunkLayout &layout, const plan::IterContext &ctx);

/// The window of an entry of length `length` in pipeline iteration `iteration` of unit size U:
/// [i*U, i*U + min(length - i*U, U)), clipped to empty when i*U >= length (the reference wraps
/// and runs out of bounds, plan#11.14). `length` is in bytes; the result is relative to the entry.
ByteRange pipelineWindow(uint64_t length, uint64_t iteration, uint64_t unitSize);

/// Scratch bytes a rank needs (plan#3.5) for the given layout (with uneven chunks: the end of its
/// last scratch chunk), with the LL doubling when
/// protocol == "LL" or the plan uses packet ops on scratch (our choice, docs/runtime.md), and the
/// double-scratch doubling; rounded up to A. With reuse_resources the slot size bounds it.
/// `usesPackets`: whether any op of the rank reads or writes packets.
/// Throws ExecutionError(InvalidSize) naming scratch_chunks when the size overflows 64 bits or
/// exceeds maxScratchBytes(), before anything is allocated.
uint64_t scratchBytes(const plan::Plan &plan, uint32_t rank, const ChunkLayout &layout, bool usesPackets);

/// Default limit on one rank's scratch allocation: 64 GiB (more than an H200's memory per rank
/// that a plan may sensibly ask for; a plan asking more is hostile or broken).
constexpr uint64_t kDefaultMaxScratchBytes = uint64_t(64) << 30;
/// The limit in force: MSCCL_MAX_SCRATCH_BYTES (a positive decimal byte count) when set, else
/// kDefaultMaxScratchBytes. Throws ExecutionError(Unsupported) naming the variable when it is
/// set to anything else (as MSCCL_TIMEOUT and MSCCL_BOOTSTRAP_TIMEOUT refuse theirs).
uint64_t maxScratchBytes();

} // namespace msccl::runtime
