//===- Split.cpp - ncclCommSplit of libmsccl_nccl.so: sub-communicators with plans -------===//
//
// PyTorch makes its sub-groups (tensor-parallel, pipeline stages, ...) with ncclCommSplit of the
// world communicator. On one of our communicators the split is ours too, so the sub-communicator's
// size and layout select its plans: every rank gathers every rank's (color, key) over the parent;
// the ranks of one color, ordered by key and then by parent rank (NCCL's order), form the group,
// whose first member makes a unique id that the parent's second gather hands to the others; each
// member joins the group's bootstrap (collective within the group), and the real NCCL splits its
// own communicator alongside (collective over the parent, as NCCL's split is) for the calls that go
// to NCCL. NCCL_SPLIT_NOCOLOR joins no group (*newcomm = NULL). A communicator NCCL made alone is
// split by NCCL alone.
//
//===------------------------------------------------------------------------------------===//
#include "Shim.h"

#include "msccl/runtime/Communicator.h"

#include <algorithm>
#include <cstring>

#define MSCCL_EXPORT extern "C" __attribute__((visibility("default")))

using namespace msccl::nccl::shim;

namespace {

struct Choice {
  int32_t color, key;
};

/// The parent's real NCCL split (collective over the parent in NCCL): the sub-communicator for
/// fallbacks, or null with `why`.
ncclComm_t realSplit(Comm &parent, int color, int key, ncclConfig_t *config, std::string &why) {
  using SplitFn = ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
  auto f = parent.real ? realFn<SplitFn>("ncclCommSplit") : nullptr;
  if (!f) {
    why = parent.real ? "the real NCCL has no ncclCommSplit" : parent.realWhy;
    return nullptr;
  }
  ncclComm_t sub = nullptr;
  if (ncclResult_t rc = f(parent.real, color, key, &sub, config); rc != ncclSuccess) {
    why = realFailure("ncclCommSplit", rc);
    return nullptr;
  }
  return sub;
}

} // namespace

MSCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                        ncclConfig_t *config) {
  Comm *c = ours(comm);
  if (c && !c->comm) { // NCCL's communicator alone: NCCL's split alone
    auto f = realFn<ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *)>("ncclCommSplit");
    if (!f)
      return failWith(c, ncclInvalidUsage, "ncclCommSplit: no NCCL to split this communicator");
    return wrapNew(f(realOf(comm), color, key, newcomm, config), newcomm);
  }
  if (!c || !newcomm)
    return failWith(c, ncclInvalidArgument, "ncclCommSplit: not a communicator, or newcomm is null");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return failWith(c, ncclInvalidArgument, "ncclCommSplit: color " + std::to_string(color) +
                                                " is negative (NCCL_SPLIT_NOCOLOR is the only negative color)");
  *newcomm = nullptr;
  try {
    msccl::runtime::Communicator &rt = *c->comm->runtimeCommunicator();
    const Choice mine{color, key};
    auto all = rt.allGather(&mine, sizeof mine);
    std::vector<std::pair<std::pair<int32_t, int>, int>> members; // ((key, parent rank), parent rank)
    for (size_t r = 0; r < all.size(); ++r) {
      Choice ch;
      std::memcpy(&ch, all[r].data(), sizeof ch);
      if (color != NCCL_SPLIT_NOCOLOR && ch.color == color)
        members.push_back({{ch.key, int(r)}, int(r)});
    }
    std::sort(members.begin(), members.end());
    int newRank = -1;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i].second == c->rank)
        newRank = int(i);
    msccl::UniqueId id{};
    if (newRank == 0)
      id = msccl::Communicator::getUniqueId();
    auto ids = rt.allGather(&id, sizeof id);
    std::string realWhy;
    ncclComm_t realSub = realSplit(*c, color, key, config, realWhy);
    if (color == NCCL_SPLIT_NOCOLOR)
      return ncclSuccess;
    std::memcpy(&id, ids[size_t(members.front().second)].data(), sizeof id);
    auto sub = std::make_unique<Comm>();
    sub->rank = newRank;
    sub->size = int(members.size());
    sub->comm = msccl::Communicator::initRank(id, uint32_t(sub->size), uint32_t(newRank), c->comm->backend());
    sub->ranksPerNode = int(sub->comm->ranksPerNode());
    attachPlans(*sub, c->hostBuffers);
    sub->real = realSub;
    sub->realWhy = realWhy;
    if (infoLogging())
      logLine("rank %d: ncclCommSplit color %d key %d: rank %d of %d (%d ranks per node, NCCL fallback %s)", c->rank,
              color, key, newRank, sub->size, sub->ranksPerNode, realSub ? "ready" : "unavailable");
    *newcomm = reinterpret_cast<ncclComm_t>(sub.release());
    return ncclSuccess;
  } catch (const std::exception &e) {
    return failWith(c, ncclSystemError, std::string("ncclCommSplit: ") + e.what());
  }
}
