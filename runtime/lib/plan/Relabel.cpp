//===- Relabel.cpp - A plan with its ranks renamed ---------------------------------------------===//
#include "msccl/plan/Relabel.h"

#include "msccl/plan/PlanJson.h"

#include <stdexcept>
#include <string>

namespace msccl::plan {
namespace {

void renameEntry(BufferRef &ref, const std::vector<uint32_t> &newRank) {
  if (ref.rank && *ref.rank < newRank.size())
    ref.rank = newRank[*ref.rank];
}

void renameOp(Op &op, const std::vector<uint32_t> &newRank) {
  for (BufferRef &r : op.src)
    renameEntry(r, newRank);
  for (BufferRef &r : op.dst)
    renameEntry(r, newRank);
  renameEntry(op.glreDstChunk, newRank);
  for (Op &inner : op.ops)
    renameOp(inner, newRank);
}

uint32_t renamed(uint32_t rank, const std::vector<uint32_t> &newRank, const std::string &path) {
  if (rank >= newRank.size())
    throw PlanError(path, "rank " + std::to_string(rank) + " is not one of the plan's " +
                              std::to_string(newRank.size()) + " ranks");
  return newRank[rank];
}

} // namespace

Plan relabelRanks(const Plan &plan, const std::vector<uint32_t> &newRank) {
  const size_t n = plan.gpus.size();
  if (newRank.size() != n)
    throw PlanError("", "a renaming of " + std::to_string(newRank.size()) + " ranks for a plan of " +
                            std::to_string(n));
  std::vector<bool> seen(n, false);
  for (uint32_t r : newRank) {
    if (r >= n || seen[r])
      throw PlanError("", "the renaming is not a permutation of the plan's " + std::to_string(n) + " ranks");
    seen[r] = true;
  }
  if (plan.variableSizes)
    throw PlanError("variable_sizes", "a plan sized by a count matrix cannot have its ranks renamed");

  Plan out = plan;
  for (size_t g = 0; g < n; ++g) {
    const Gpu &from = plan.gpus[g];
    const std::string at = "gpus[" + std::to_string(g) + "]";
    Gpu gpu = from;
    gpu.id = renamed(from.id, newRank, at + ".id");
    for (size_t c = 0; c < gpu.channels.size(); ++c) {
      ChannelDecl &ch = gpu.channels[c];
      const std::string cat = at + ".channels[" + std::to_string(c) + "]";
      for (uint32_t &peer : ch.connectedTo)
        peer = renamed(peer, newRank, cat + ".connected_to");
      for (RankGroup &group : ch.rankGroups)
        for (uint32_t &member : group.ranks)
          member = renamed(member, newRank, cat + ".rank_groups");
    }
    for (size_t b = 0; b < gpu.remoteBuffers.size(); ++b)
      gpu.remoteBuffers[b].rank =
          renamed(gpu.remoteBuffers[b].rank, newRank, at + ".remote_buffers[" + std::to_string(b) + "].rank");
    for (Threadblock &tb : gpu.threadblocks)
      for (Op &op : tb.ops)
        renameOp(op, newRank);
    out.gpus[gpu.id] = std::move(gpu);
  }
  return out;
}

std::vector<uint32_t> rootPermutation(uint32_t nranks, uint32_t ranksPerNode, uint32_t root) {
  if (root >= nranks)
    throw std::invalid_argument("root " + std::to_string(root) + " is not one of " + std::to_string(nranks) +
                                " ranks");
  const uint32_t perNode = ranksPerNode == 0 ? nranks : ranksPerNode;
  if (nranks % perNode != 0)
    throw std::invalid_argument(std::to_string(perNode) + " ranks per node do not divide " +
                                std::to_string(nranks) + " ranks");
  const uint32_t nodes = nranks / perNode;
  std::vector<uint32_t> newRank(nranks);
  for (uint32_t r = 0; r < nranks; ++r) {
    const uint32_t node = (r / perNode + root / perNode) % nodes;
    const uint32_t local = (r % perNode + root % perNode) % perNode;
    newRank[r] = node * perNode + local;
  }
  return newRank;
}

} // namespace msccl::plan
