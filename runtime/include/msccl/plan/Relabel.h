//===- Relabel.h - A plan with its ranks renamed ---------------------------------------------===//
//
// A plan is a program per rank; renaming the ranks (a permutation) gives a plan that does the
// same with other ranks in each role. The NCCL shim uses it for rooted collectives: plans are
// written for root 0 (MSCCL++'s plans have no root argument), and a Broadcast from root r or a
// Reduce to root r runs the root-0 plan with rank 0's program on rank r (rootPermutation).
// Nothing of MSCCL++ mirrors this; NCCL passes the root to its kernels instead.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstdint>
#include <vector>

namespace msccl::plan {

/// The plan in which rank `newRank[r]` runs what rank r of `plan` runs: gpu ids, every peer named
/// in a channel declaration (`connected_to`, switch `rank_groups`), `remote_buffers` ranks and the
/// `rank` keys of local entries are renamed; the gpus are listed in their new rank order. Channel,
/// semaphore and buffer indices are per gpu and stay as they are, so the pairing of channels
/// (by order between two ranks) is kept. `newRank` must be a permutation of 0..gpus-1.
/// Throws PlanError: "" when `newRank` is not such a permutation, "variable_sizes" for a plan
/// sized by a count matrix (its expressions name ranks; renaming them is not implemented).
Plan relabelRanks(const Plan &plan, const std::vector<uint32_t> &newRank);

/// The renaming that puts rank 0's program on `root` among `nranks` ranks in nodes of
/// `ranksPerNode` consecutive ranks (0 or nranks: one node): node k becomes node
/// (k + node of root) mod nodes and local rank l becomes (l + local rank of root) mod
/// ranksPerNode, so ranks that share a node still share one (memory channels stay inside nodes).
/// newRank[0] == root. Throws std::invalid_argument when root >= nranks or ranksPerNode does not
/// divide nranks.
std::vector<uint32_t> rootPermutation(uint32_t nranks, uint32_t ranksPerNode, uint32_t root);

} // namespace msccl::plan
