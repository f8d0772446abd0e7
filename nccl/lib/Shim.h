//===- Shim.h - What the files of libmsccl_nccl.so share (private to nccl/lib) ------------===//
//
// Interpose.cpp: the real NCCL (dlopen), our communicator, the plan registry, the collectives and
// the forwarded calls. Group.cpp: ncclGroupStart/ncclGroupEnd and the send/recv sets that run as
// an AllToAll(V) plan (PointToPoint.h). Nothing here leaves the library (hidden visibility).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <nccl.h>

#include "PointToPoint.h"
#include "msccl/msccl.hpp"

#include <cstdint>
#include <functional>
#include <atomic>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

namespace msccl::nccl::shim {

// --- The real NCCL (Interpose.cpp) -----------------------------------------------------------

/// The real NCCL (MSCCL_NCCL_LIB_PATH, default libnccl.so.2), loaded once; null when it is not.
void *realHandle();
/// Symbol `name` of the real NCCL, or null.
void *realSymbol(const char *name);
template <class F> F realFn(const char *name) { return reinterpret_cast<F>(realSymbol(name)); }
/// "the real NCCL's `api` failed with error N (ncclGetErrorString's text): ncclGetLastError's
/// text" (RealInit.cpp), each part where the real NCCL has it.
std::string realFailure(const char *api, ncclResult_t rc);

// --- Our communicator ------------------------------------------------------------------------

constexpr uint64_t kCommMagic = 0x6d7363636c636f6dull; // "msccl com"

struct Comm {
  uint64_t magic = kCommMagic;
  ncclComm_t real = nullptr;                      // the real NCCL's communicator (may be null)
  std::shared_ptr<msccl::Communicator> comm;      // null: forward-only (ncclCommInitAll, split)
  std::unique_ptr<msccl::Executor> executor;      // null: no plan runs here (noPlansWhy)
  std::string noPlansWhy;
  std::string realWhy;                            // why `real` is null (its init failed), for fallbacks
  int rank = 0, size = 1, ranksPerNode = 0, device = 0;
  bool hostBuffers = false;                       // MSCCL_BACKEND=cpu: the call's buffers are host memory
  std::string lastError;
  // A planned call that failed while running, or after it returned (a stream-ordered launch the
  // executor's pollError reports); read and set from PyTorch's watchdog thread too.
  std::atomic<ncclResult_t> asyncError{ncclSuccess};
  std::unique_ptr<Mailbox> mailbox;               // send/recv sets (PointToPoint.h); freed before `comm`
  /// Broadcast/Reduce plans renamed for a root other than 0 (msccl::rootedPlan), by (plan, root).
  std::map<std::pair<const plan::Plan *, int>, msccl::PlanPtr> rootedPlans;
  std::mutex rootedMutex;
  std::vector<uint8_t> reduceSink;                // a non-root rank's ncclReduce output (never the user's)
};

/// Make `c.real` (c.comm, c.rank and c.size set) from rank 0's real NCCL id, null when rank 0 has
/// none (then no rank tries). Collective over c.comm. Where it fails, c.realWhy says why with what
/// to do; rank 0 says every rank's reason on stderr, each once per process (RealInit.cpp).
void initReal(Comm &c, const ncclUniqueId *rootId, ncclConfig_t *config);
/// `comm` when it is one of ours, else null.
Comm *ours(ncclComm_t comm);
/// The real NCCL's communicator behind `comm` (itself when it is not ours).
ncclComm_t realOf(ncclComm_t comm);
/// Give `c` (whose `comm` is set) what plans need: the send/recv mailbox (collective over c.comm),
/// and an executor when `hostBuffers` (MSCCL_BACKEND=cpu), else the reason there is none.
void attachPlans(Comm &c, bool hostBuffers);
/// A communicator NCCL made from one of ours (split, shrink): NCCL's alone, wrapped forward-only.
ncclResult_t wrapNew(ncclResult_t rc, ncclComm_t *newcomm);
/// Record `msg` as the last error (of `c` and of this thread), say it on stderr, return `rc`.
ncclResult_t failWith(Comm *c, ncclResult_t rc, const std::string &msg);
/// MSCCL_DEBUG=INFO (or TRACE).
bool infoLogging();
void logLine(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/// The process's registry (MSCCL_PLANS), or null with `error`.
std::shared_ptr<msccl::PlanRegistry> registry(std::string &error);
/// Our element type of an NCCL type that plans run (false for float64, int64, fp8, ...).
bool dataType(ncclDataType_t t, msccl::plan::DataType &out, size_t &bytes);
/// Bytes of one element of any NCCL type (0 for an unknown one).
size_t elementBytes(ncclDataType_t t);
const char *typeName(ncclDataType_t t);

// --- Reduction ops (RedOps.cpp) -------------------------------------------------------------

/// What a call's ncclRedOp_t asks of a plan: the plan's reduction, then what happens to the
/// result (ncclAvg: divided by the rank count; a PreMulSum: multiplied by its scalar).
struct PlannedOp {
  plan::ReduceOp reduce = plan::ReduceOp::Sum;
  enum class After { Nothing, DivideByRanks, Scale } after = After::Nothing;
  double scale = 1;
};
/// The plan side of `op` for a call of `type` on `c`; false with `why` when no plan may run it
/// (an op other than sum, min, max, avg and our PreMulSums; avg or PreMulSum on device buffers;
/// a PreMulSum whose scalar is not the same on every rank). Collective for PreMulSum ops: every
/// rank of the call gathers the scalars (once per op, or per call for a device-resident scalar).
bool plannedOp(Comm &c, ncclRedOp_t op, ncclDataType_t type, PlannedOp &out, std::string &why);
/// The real NCCL's op for `op` (a PreMulSum of ours maps to the real NCCL's twin).
ncclRedOp_t realOp(ncclRedOp_t op);
/// Apply `op.after` to `count` elements of `type` at `data` (host memory).
void applyAfter(const PlannedOp &op, void *data, size_t count, plan::DataType type, int nranks);

// --- Groups (Group.cpp) ----------------------------------------------------------------------

/// A call made inside a group: run at the outermost ncclGroupEnd as it would run outside one.
struct Deferred {
  const char *api;
  std::function<ncclResult_t()> run;
  Comm *p2pComm = nullptr; // ncclSend/ncclRecv on one of our communicators: the call, for PointToPoint.h
  P2pCall p2p;
  cudaStream_t stream = nullptr;
};
extern thread_local int tGroupDepth;
extern thread_local std::vector<Deferred> tDeferred;

/// Runs `call` now, or records it for the outermost ncclGroupEnd when a group is open.
template <class F> ncclResult_t nowOrAtGroupEnd(const char *api, F call, Deferred extra = {}) {
  if (tGroupDepth == 0)
    return call();
  extra.api = api;
  extra.run = std::function<ncclResult_t()>(std::move(call));
  tDeferred.push_back(std::move(extra));
  return ncclSuccess;
}

} // namespace msccl::nccl::shim
