//===- Layout.cpp - Chunk -> byte arithmetic (spec plan#3) -------------------------------===//
//
// Consumes plan-level chunk counts and run-time message sizes; produces chunk sizes, entry byte
// ranges, tbg slices, pipeline iteration counts and scratch sizes. See Layout.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Layout.h"

#include "msccl/runtime/Counts.h"
#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace msccl::runtime {
using namespace msccl::plan;

uint64_t rangeCheckedSize(const Plan &plan, uint64_t inputBytes, uint64_t outputBytes) {
  return plan.collective == "allgather" ? outputBytes : inputBytes;
}

static uint64_t roundUp(uint64_t v, uint64_t a) { return a == 0 ? v : (v + a - 1) / a * a; }

ChunkLayout computeChunkLayout(const Plan &plan, uint32_t rank, uint64_t inputBytes, uint64_t outputBytes) {
  const Gpu &gpu = plan.gpus.at(rank);
  if (plan.variableSizes) // symbolic entries: CountsResolver first (Counts.h)
    throw ExecutionError(ErrorKind::InvalidSize, needsCountsMessage(plan));
  const uint64_t A = plan.bufferAlignment;
  if (A == 0)
    throw ExecutionError(ErrorKind::InvalidPlan, "buffer_alignment: must be greater than 0");
  const uint64_t Ni = gpu.inputChunks, No = gpu.outputChunks, Ns = gpu.scratchChunks;
  auto sizeError = [&](const std::string &what) {
    return ExecutionError(ErrorKind::InvalidSize,
                          "Input or output size is not aligned with buffer alignment or chunks: " + what);
  };
  // plan#3.2 step 1; zero-chunk buffers skip the divisibility test (plan#11.1).
  if (inputBytes % A != 0)
    throw sizeError("input size " + std::to_string(inputBytes) + " B is not a multiple of buffer_alignment " +
                    std::to_string(A));
  if (outputBytes % A != 0)
    throw sizeError("output size " + std::to_string(outputBytes) + " B is not a multiple of buffer_alignment " +
                    std::to_string(A));
  if (Ni != 0 && (inputBytes / A) % Ni != 0)
    throw sizeError("rank " + std::to_string(rank) + ": input size " + std::to_string(inputBytes) + " B is not " +
                    std::to_string(Ni) + " chunks (input_chunks) of a multiple of " + std::to_string(A) + " B");
  if (No != 0 && (outputBytes / A) % No != 0)
    throw sizeError("rank " + std::to_string(rank) + ": output size " + std::to_string(outputBytes) + " B is not " +
                    std::to_string(No) + " chunks (output_chunks) of a multiple of " + std::to_string(A) + " B");
  // Step 2.
  uint64_t m = rangeCheckedSize(plan, inputBytes, outputBytes);
  if (m < plan.minMessageSize || m > plan.maxMessageSize)
    throw ExecutionError(ErrorKind::InvalidSize,
                         "Input or output size is not within the valid range: " + std::to_string(m) +
                             " B is outside [min_message_size " + std::to_string(plan.minMessageSize) +
                             ", max_message_size " + std::to_string(plan.maxMessageSize) + "]");
  // Step 3.
  ChunkLayout layout;
  layout.alignment = A;
  layout.inputBytes = inputBytes;
  layout.outputBytes = outputBytes;
  if (Ni != 0 && No != 0) {
    if (inputBytes / Ni != outputBytes / No)
      throw ExecutionError(ErrorKind::InvalidSize,
                           "Size per chunks inconsistent: inputSize " + std::to_string(inputBytes) + " inputChunks " +
                               std::to_string(Ni) + " outputSize " + std::to_string(outputBytes) + " outputChunks " +
                               std::to_string(No) + " (rank " + std::to_string(rank) + ")");
    layout.chunkBytes = inputBytes / Ni;
    layout.hasChunkBytes = true;
  } else if (Ni != 0) {
    layout.chunkBytes = inputBytes / Ni;
    layout.hasChunkBytes = true;
  } else if (No != 0) {
    layout.chunkBytes = outputBytes / No;
    layout.hasChunkBytes = true;
  } else if (Ns != 0) {
    // Our extension: scratch-only plans (DSL unit tests) take their chunk size from S_in.
    if ((inputBytes / A) % Ns != 0)
      throw sizeError("rank " + std::to_string(rank) + ": plan has only scratch chunks; input size " +
                      std::to_string(inputBytes) + " B is not " + std::to_string(Ns) +
                      " chunks (scratch_chunks) of a multiple of " + std::to_string(A) + " B");
    layout.chunkBytes = inputBytes / Ns;
    layout.hasChunkBytes = true;
  }
  if (plan.reuseResources && Ns > 0) {
    uint64_t H = plan.useDoubleScratchBuffer ? (uint64_t(1) << 25) : (uint64_t(1) << 26);
    layout.reuseSlotBytes = roundUp((H + Ns - 1) / Ns, A);
  }
  return layout;
}

ByteRange entryBytes(const ChunkLayout &layout, BufferType type, uint64_t index, uint64_t size) {
  if (!layout.hasChunkBytes)
    throw ExecutionError(ErrorKind::InvalidSize, "Output or Input chunks must be greater than 0");
  const uint64_t c = layout.chunkBytes;
  ByteRange r;
  if (layout.offsets) {
    const std::vector<uint64_t> &at = layout.offsets->of(type);
    if (index >= at.size() || size > at.size() - 1 - index)
      throw ExecutionError(ErrorKind::InvalidPlan, "entry {index " + std::to_string(index) + ", size " +
                                                       std::to_string(size) + "} lies past the buffer's " +
                                                       std::to_string(at.empty() ? 0 : at.size() - 1) + " chunks");
    r.offset = at[index];
    r.length = at[index + size] - at[index];
    return r;
  }
  if (type == BufferType::Scratch && layout.reuseSlotBytes != 0 && layout.reuseSlotBytes < c)
    r.offset = index * layout.reuseSlotBytes;
  else
    r.offset = index * c;
  r.length = size * c;
  return r;
}

ByteRange tbgSlice(ByteRange range, const TbgInfo &tbg, uint64_t alignment) {
  if (tbg.tbgSize <= 1)
    return range;
  const uint64_t units = range.length / alignment;
  const uint64_t q = units / tbg.tbgSize, r = units % tbg.tbgSize;
  const uint64_t t = tbg.tbId;
  ByteRange out;
  out.offset = range.offset + (t * q + std::min<uint64_t>(t, r)) * alignment;
  out.length = (q + (t < r ? 1 : 0)) * alignment;
  return out;
}

uint64_t pipelineIterations(const ChunkLayout &layout, const IterContext &ctx) {
  if (ctx.unitSize == 0)
    throw ExecutionError(ErrorKind::InvalidPlan, "pipeline iter_context.unit_size must be greater than 0");
  if (!layout.hasChunkBytes)
    throw ExecutionError(ErrorKind::InvalidSize, "Output or Input chunks must be greater than 0");
  uint64_t total = ctx.numChunks * layout.chunkBytes;
  uint64_t n = (total + ctx.unitSize - 1) / ctx.unitSize;
  if (n > 65535)
    throw ExecutionError(ErrorKind::InvalidSize,
                         "pipeline needs " + std::to_string(n) + " iterations (num_chunks " +
                             std::to_string(ctx.numChunks) + " x chunk " + std::to_string(layout.chunkBytes) +
                             " B / unit_size " + std::to_string(ctx.unitSize) +
                             " B); the executor supports at most 65535");
  return n;
}

ByteRange pipelineWindow(uint64_t length, uint64_t iteration, uint64_t unitSize) {
  uint64_t delta = iteration * unitSize;
  if (delta >= length)
    return {length, 0};
  return {delta, std::min(length - delta, unitSize)};
}

uint64_t scratchBytes(const Plan &plan, uint32_t rank, const ChunkLayout &layout, bool usesPackets) {
  const Gpu &gpu = plan.gpus.at(rank);
  if (gpu.scratchChunks == 0 || !layout.hasChunkBytes)
    return 0;
  uint64_t per = layout.chunkBytes, chunks = gpu.scratchChunks;
  if (layout.reuseSlotBytes != 0)
    per = std::min(per, layout.reuseSlotBytes);
  if (layout.offsets && !layout.offsets->scratch.empty())
    per = layout.offsets->scratch.back(), chunks = 1; // uneven: the end of the last chunk
  const uint64_t factor = (plan.protocol == "LL" || usesPackets ? 2 : 1) * (plan.useDoubleScratchBuffer ? 2 : 1);
  uint64_t bytes = 0;
  const uint64_t limit = maxScratchBytes();
  if (__builtin_mul_overflow(per, chunks, &bytes) || __builtin_mul_overflow(bytes, factor, &bytes) ||
      roundUp(bytes, layout.alignment) > limit)
    throw ExecutionError(ErrorKind::InvalidSize,
                         "rank " + std::to_string(rank) + ": scratch of " + std::to_string(gpu.scratchChunks) +
                             " chunks (scratch_chunks) x " +
                             (chunks == 1 && gpu.scratchChunks != 1 ? "uneven sizes totalling " : "") +
                             std::to_string(per) + " B x " + std::to_string(factor) +
                             " is above the scratch limit of " + std::to_string(limit) +
                             " B (MSCCL_MAX_SCRATCH_BYTES)");
  return roundUp(bytes, layout.alignment);
}

uint64_t maxScratchBytes() {
  const char *e = std::getenv("MSCCL_MAX_SCRATCH_BYTES");
  if (!e || !*e) return kDefaultMaxScratchBytes;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(e, &end, 10);
  if (errno != 0 || !end || *end != '\0' || v == 0 || *e == '-' || *e == '+' || *e == ' ')
    throw ExecutionError(ErrorKind::Unsupported, std::string("MSCCL_MAX_SCRATCH_BYTES=\"") + e +
                                                         "\" is not a positive decimal byte count (unset it for the "
                                                         "default of 64 GiB)");
  return v;
}

} // namespace msccl::runtime
