//===- Group.cpp - ncclGroupStart/ncclGroupEnd of libmsccl_nccl.so -----------------------===//
//
// As NCCL: nothing starts before the outermost ncclGroupEnd (nested groups count); every call of
// the group (a collective, ncclSend, ncclRecv) is recorded (Shim.h nowOrAtGroupEnd). There:
//  1. each communicator's ncclSend/ncclRecv set is offered to PointToPoint.h: when every rank's
//     set is one send and one receive per rank, it runs as one AllToAll plan (equal counts) or
//     AllToAllV plan (the count matrix the ranks agreed on) when one is registered, and its calls
//     are dropped;
//  2. every other call runs in the order it was made, as it would outside a group: a planned
//     collective runs its plan, a forwarded call goes to the real NCCL inside one real
//     ncclGroupStart/ncclGroupEnd, so NCCL groups the forwarded calls as the application did.
// Every rank makes the same calls in the same order (NCCL's rule) and each choice of plan or NCCL
// depends only on the call (or on what all ranks agreed), so every rank runs the same plans in the
// same order: no mix of planned and forwarded calls deadlocks.
//
//===------------------------------------------------------------------------------------===//
#include "Shim.h"

#include "msccl/runtime/Communicator.h"

#include <algorithm>
#include <cstdlib>

#define MSCCL_EXPORT extern "C" __attribute__((visibility("default")))

namespace msccl::nccl::shim {

thread_local int tGroupDepth = 0;
thread_local std::vector<Deferred> tDeferred;

namespace {

/// Seconds a rank waits for a partner's answer: MSCCL_TIMEOUT, else 300.
double agreementDeadline() {
  double secs = 300;
  if (const char *t = std::getenv("MSCCL_TIMEOUT"); t && *t) {
    char *end = nullptr;
    double v = std::strtod(t, &end);
    if (end && *end == '\0' && v > 0)
      secs = v;
  }
  return runtime::monotonicSeconds() + secs;
}

/// The plan for an agreed count matrix: AllToAll when every count is equal, else AllToAllV.
const RegisteredPlan *allToAllPlan(Comm &c, const std::vector<uint64_t> &matrix, const AllToAllSide &side,
                                   bool &variable, std::string &why) {
  std::string error;
  auto reg = registry(error);
  if (!reg) {
    why = error;
    return nullptr;
  }
  const uint64_t first = matrix.empty() ? 0 : matrix[0];
  const bool equal = std::all_of(matrix.begin(), matrix.end(), [&](uint64_t v) { return v == first; });
  if (equal) {
    SelectRequest req = c.comm->request("alltoall", first * side.elementBytes * uint64_t(c.size),
                                        side.sendBase == side.recvBase);
    if (const RegisteredPlan *p = reg->select(req)) {
      variable = false;
      return p;
    }
    why = "no alltoall plan: " + reg->explainLine(req);
  }
  SelectRequest req = c.comm->request("alltoallv", 0, false);
  if (const RegisteredPlan *p = reg->select(req)) {
    variable = true;
    return p;
  }
  why += std::string(why.empty() ? "" : "; ") + "no alltoallv plan: " + reg->explainLine(req);
  return nullptr;
}

/// Step 1 for the send/recv calls of `c` (indices into `calls`); true when a plan ran them.
bool runSendRecvSet(Comm &c, std::vector<Deferred> &calls, const std::vector<size_t> &mine, ncclResult_t &rc) {
  std::vector<P2pCall> p2p;
  for (size_t i : mine)
    p2p.push_back(calls[i].p2p);
  AllToAllSide side = allToAllSide(p2p, c.size);
  plan::DataType dt{};
  size_t es = 0;
  if (side.complete && !dataType(ncclDataType_t(side.type), dt, es))
    side.complete = false, side.whyNot = std::string("element type ") + typeName(ncclDataType_t(side.type)) +
                                         " has no plan executor";
  if (side.complete && !c.executor)
    side.complete = false, side.whyNot = c.noPlansWhy;
  std::string why;
  std::optional<std::vector<uint64_t>> matrix;
  try {
    matrix = agreeAllToAll(*c.mailbox, side, c.rank, c.size, agreementDeadline(), why);
  } catch (const std::exception &e) {
    rc = failWith(&c, ncclSystemError, std::string("ncclGroupEnd: ") + e.what());
    return true;
  }
  bool variable = false;
  const RegisteredPlan *plan = matrix ? allToAllPlan(c, *matrix, side, variable, why) : nullptr;
  if (!plan) {
    if (infoLogging())
      logLine("rank %d: ncclGroupEnd: %zu send/recv call(s): NCCL (%s)", c.rank, mine.size(), why.c_str());
    return false;
  }
  uint64_t sent = 0, received = 0;
  for (size_t p = 0; p < side.sendCounts.size(); ++p)
    sent += side.sendCounts[p], received += side.recvCounts[p];
  void *stream = reinterpret_cast<void *>(calls[mine.front()].stream);
  try {
    if (variable)
      c.executor->executeV(c.rank, side.sendBase, side.recvBase, sent * es, received * es, *matrix, dt, plan->plan,
                           stream);
    else
      c.executor->execute(c.rank, side.sendBase, side.recvBase, sent * es, received * es, dt, plan::ReduceOp::Sum,
                          plan->plan, stream);
  } catch (const std::exception &e) {
    rc = failWith(&c, ncclInternalError, "ncclGroupEnd: send/recv set with plan " + plan->info.name + ": " + e.what());
    return true;
  }
  if (infoLogging())
    logLine("rank %d: ncclGroupEnd: %zu send/recv call(s) %s: plan %s (%s)", c.rank, mine.size(),
            variable ? "as an AllToAllV" : "as an AllToAll", plan->info.name.c_str(), plan->info.source.c_str());
  return true;
}

} // namespace
} // namespace msccl::nccl::shim

using namespace msccl::nccl::shim;

MSCCL_EXPORT ncclResult_t ncclGroupStart() {
  ++tGroupDepth;
  return ncclSuccess;
}

MSCCL_EXPORT ncclResult_t ncclGroupEnd() {
  if (tGroupDepth == 0)
    return failWith(nullptr, ncclInvalidUsage, "ncclGroupEnd: no group is open (ncclGroupStart)");
  if (--tGroupDepth > 0)
    return ncclSuccess;
  std::vector<Deferred> calls = std::move(tDeferred);
  tDeferred.clear();
  ncclResult_t rc = ncclSuccess;
  std::vector<bool> done(calls.size(), false);
  // 1. Send/recv sets, communicator by communicator in the order of their first call.
  std::vector<Comm *> comms;
  for (const Deferred &d : calls)
    if (d.p2pComm && d.p2pComm->mailbox && std::find(comms.begin(), comms.end(), d.p2pComm) == comms.end())
      comms.push_back(d.p2pComm);
  for (Comm *c : comms) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < calls.size(); ++i)
      if (calls[i].p2pComm == c)
        mine.push_back(i);
    ncclResult_t r = ncclSuccess;
    if (runSendRecvSet(*c, calls, mine, r))
      for (size_t i : mine)
        done[i] = true;
    if (rc == ncclSuccess)
      rc = r;
  }
  // 2. The rest in order; the forwarded ones as one real NCCL group.
  const bool forwarding = std::find(done.begin(), done.end(), false) != done.end();
  using Group = ncclResult_t (*)();
  Group start = forwarding ? realFn<Group>("ncclGroupStart") : nullptr;
  Group end = start ? realFn<Group>("ncclGroupEnd") : nullptr;
  if (start && end && start() != ncclSuccess)
    start = end = nullptr;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (done[i])
      continue;
    ncclResult_t r = calls[i].run();
    if (rc == ncclSuccess && r != ncclSuccess)
      rc = r;
  }
  if (start && end) {
    ncclResult_t r = end();
    if (rc == ncclSuccess)
      rc = r;
  }
  return rc;
}
