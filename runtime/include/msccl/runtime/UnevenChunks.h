//===- UnevenChunks.h - Plans at every element count: chunks of unequal sizes ------------===//
//
// Consumes a plan, its ResolvedPlan and message sizes (S_in, S_out) that do not divide into the
// plan's equal chunks (plan#3.2 refuses them, as MSCCL++'s executor does); produces every rank's
// ChunkLayout with per-chunk byte offsets (Layout.h ChunkOffsets), which lowerPlan turns into the
// same LoweredPlan shape every backend already runs. No data is copied or padded.
//
// The cut. The caller's buffers are blocks of equal size fixed by the collective (Collectives.def
// InBlocks/OutBlocks: allreduce one block in and out; allgather n output blocks; reducescatter n
// input blocks; alltoall n of each). Each block holds K = chunks / blocks chunks, and chunk k
// sits at position w = k mod K of its block. A block of B bytes is cut in granules of
// q = min(buffer_alignment, the largest power of two dividing B) bytes (a multiple of the element
// size, which divides B); position w gets floor(u/K) granules, plus one for w < u mod K, where
// u = B/q. Plans with packet ops need q >= 8 (an LL16 payload).
//
// Why the result is the plan's own. An op moves or combines its entries element by element, so
// the plan does at uneven sizes what it does at equal ones (the verifier proved that) as long as
// every chunk the op pairs has the same size. Union-find over (rank, buffer, chunk) joins the
// t-th chunk of every entry of every op (a switch entry: that chunk on every member); input and
// output chunks carry their position w; a class holding two positions is refused, naming the op
// that joined them, and a scratch chunk takes its class's size (the largest when no input or
// output chunk reaches it). Switch entries on scratch must start at the same byte on every member.
// Checked once per size and per plan, in O(ranks x chunks + entry chunks) (docs/runtime.md).
//
// Refused (ExecutionError(InvalidSize), the even rule's reason first): collectives without a
// block rule (Other), scratch-only plans, reuse_resources with scratch, entries of one op with
// different chunk counts, conflicting positions, packet plans with q < 8, switch scratch offsets
// that differ, a size outside [min_message_size, max_message_size].
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Layout.h"
#include "msccl/runtime/Resolve.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msccl::runtime {

/// Why (S_in, S_out) do not divide into the plan's equal chunks (computeChunkLayout's message),
/// or nullopt when they do, or when the sizes fail for a reason uneven chunks cannot help
/// (symbolic plans, scratch-only plans, the size range: computeChunkLayout then says so).
std::optional<std::string> evenChunksRefusal(const plan::Plan &plan, uint64_t inputBytes, uint64_t outputBytes);

/// Every rank's layout with uneven chunks for (S_in, S_out) (bytes) of `elementBytes`-byte
/// elements (a block that is not whole elements is refused). `evenWhy` is the even rule's
/// refusal, quoted first when the uneven cut is refused too.
/// Throws ExecutionError(InvalidSize) with both reasons (see the header comment).
std::vector<ChunkLayout> unevenChunkLayouts(const plan::Plan &plan, const ResolvedPlan &resolved,
                                            uint64_t inputBytes, uint64_t outputBytes, uint64_t elementBytes,
                                            const std::string &evenWhy);

/// S_in/S_out for nccl-tests size S when S does not divide into the plan's equal chunks but the
/// uneven cut takes it for `elementBytes`-byte elements (checked in full: resolution, lowering and
/// the union-find); nullopt with `whyNot` (the even rule's reason and the uneven one) otherwise.
/// `evenWhy`: the even rule's.
std::optional<MessageSizes> unevenMessageSizes(const plan::Plan &plan, uint64_t size, uint64_t elementBytes,
                                               const std::string &evenWhy, std::string *whyNot);

} // namespace msccl::runtime
