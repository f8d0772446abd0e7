//===- RedOps.cpp - ncclAvg and ncclRedOpCreatePreMulSum through plans -------------------===//
//
// A plan reduces with sum, min or max. ncclAvg runs the plan's sum and divides the result by the
// rank count afterwards, as NCCL's SumPostDiv does for integers (exact, truncating) and close to
// NCCL's pre-multiplication by 1/n for floats (equal when the sum is exact and n a power of two).
// A PreMulSum (sum of scalar x input) runs the sum and multiplies the result by the scalar, which
// equals the sum of products when every rank passes the same scalar (what PyTorch does: 1/world
// size, or its gradient pre-divide factor); the scalars are compared across the ranks, once per op
// for a host-resident scalar, at every call for a device-resident one, and a call whose ranks
// disagree goes to NCCL. Both need host buffers (MSCCL_BACKEND=cpu) in this build: the result is
// scaled by the host after the plan.
// Our PreMulSum ids start at ncclNumOps, as NCCL's own; each keeps the real NCCL's twin (made with
// it when that NCCL is there) for calls that go to NCCL.
//
//===------------------------------------------------------------------------------------===//
#include "Shim.h"

#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Elements.h"

#include <cstring>
#include <map>
#include <mutex>

#define MSCCL_EXPORT extern "C" __attribute__((visibility("default")))

namespace msccl::nccl::shim {
namespace {

struct PreMulSum {
  Comm *comm = nullptr;
  ncclDataType_t type{};
  ncclScalarResidence_t residence{};
  const void *scalar = nullptr; // device-resident: read at each call (host memory on the CPU backend)
  double hostValue = 0;         // host-resident: read at creation
  ncclRedOp_t real{};           // the real NCCL's twin
  bool hasReal = false;
  int agreed = -1;              // host-resident: -1 not yet compared, 0 ranks differ, 1 the same
};

std::mutex gOpsMu;
std::map<int, PreMulSum> gOps;
int gNextOp = int(ncclNumOps);

/// Whether every rank of `c` holds `value` (collective: all gather it).
bool sameOnEveryRank(Comm &c, double value) {
  auto all = c.comm->runtimeCommunicator()->allGather(&value, sizeof value);
  for (const auto &b : all) {
    double v;
    std::memcpy(&v, b.data(), sizeof v);
    if (v != value)
      return false;
  }
  return true;
}

} // namespace

bool plannedOp(Comm &c, ncclRedOp_t op, ncclDataType_t type, PlannedOp &out, std::string &why) {
  out = PlannedOp{};
  switch (op) {
  case ncclSum: out.reduce = plan::ReduceOp::Sum; return true;
  case ncclMin: out.reduce = plan::ReduceOp::Min; return true;
  case ncclMax: out.reduce = plan::ReduceOp::Max; return true;
  case ncclProd:
    why = "reduction op prod has no plan executor";
    return false;
  case ncclAvg:
    out.after = PlannedOp::After::DivideByRanks;
    return true;
  default: break;
  }
  std::unique_lock<std::mutex> lock(gOpsMu);
  auto it = gOps.find(int(op));
  if (it == gOps.end() || it->second.comm != &c) {
    why = "reduction op " + std::to_string(int(op)) + " is no PreMulSum of this communicator";
    return false;
  }
  PreMulSum &pm = it->second;
  if (pm.type != type) {
    why = "the PreMulSum was made for another element type";
    return false;
  }
  plan::DataType dt{};
  size_t es = 0;
  dataType(pm.type, dt, es);
  const bool device = pm.residence == ncclScalarDevice;
  double value = pm.hostValue;
  if (device) { // a device scalar (host memory in test mode): read through the executor's copy
    uint8_t scalar[16] = {};
    if (c.hostBuffers)
      std::memcpy(scalar, pm.scalar, es);
    else
      c.executor->copy(scalar, pm.scalar, es);
    value = runtime::loadElement(scalar, 0, dt);
  }
  if (device || pm.agreed < 0) {
    lock.unlock(); // collective: every rank of the call gathers
    const bool same = sameOnEveryRank(c, value);
    lock.lock();
    if (!device)
      pm.agreed = same ? 1 : 0;
    if (!same) {
      why = "the PreMulSum's scalar differs between ranks (a plan applies it once, after the sum)";
      return false;
    }
  } else if (pm.agreed == 0) {
    why = "the PreMulSum's scalar differs between ranks (a plan applies it once, after the sum)";
    return false;
  }
  out.reduce = plan::ReduceOp::Sum;
  out.after = PlannedOp::After::Scale;
  out.scale = value;
  return true;
}

ncclRedOp_t realOp(ncclRedOp_t op) {
  std::lock_guard<std::mutex> lock(gOpsMu);
  auto it = gOps.find(int(op));
  return it != gOps.end() && it->second.hasReal ? it->second.real : op;
}

void applyAfter(const PlannedOp &op, void *data, size_t count, plan::DataType type, int nranks) {
  switch (op.after) {
  case PlannedOp::After::Nothing: return;
  case PlannedOp::After::DivideByRanks: runtime::divideElements(data, count, type, uint32_t(nranks)); return;
  case PlannedOp::After::Scale: runtime::scaleElements(data, count, type, op.scale); return;
  }
}

} // namespace msccl::nccl::shim

using namespace msccl::nccl::shim;

MSCCL_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                   ncclScalarResidence_t residence, ncclComm_t comm) {
  Comm *c = ours(comm);
  if (!c || !op || !scalar)
    return failWith(c, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: null communicator, op or scalar");
  PreMulSum pm;
  pm.comm = c;
  pm.type = datatype;
  pm.residence = residence;
  pm.scalar = scalar;
  msccl::plan::DataType dt{};
  size_t es = 0;
  if (residence == ncclScalarHostImmediate && dataType(datatype, dt, es))
    pm.hostValue = msccl::runtime::loadElement(scalar, 0, dt);
  using Create = ncclResult_t (*)(ncclRedOp_t *, void *, ncclDataType_t, ncclScalarResidence_t, ncclComm_t);
  if (auto f = c->real ? realFn<Create>("ncclRedOpCreatePreMulSum") : nullptr) {
    ncclResult_t rc = f(&pm.real, scalar, datatype, residence, c->real);
    if (rc != ncclSuccess)
      return rc;
    pm.hasReal = true;
  }
  std::lock_guard<std::mutex> lock(gOpsMu);
  *op = ncclRedOp_t(gNextOp++);
  gOps[int(*op)] = pm;
  return ncclSuccess;
}

MSCCL_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  Comm *c = ours(comm);
  PreMulSum pm;
  {
    std::lock_guard<std::mutex> lock(gOpsMu);
    auto it = gOps.find(int(op));
    if (it == gOps.end() || it->second.comm != c)
      return failWith(c, ncclInvalidArgument, "ncclRedOpDestroy: op " + std::to_string(int(op)) +
                                                  " is no PreMulSum of this communicator");
    pm = it->second;
    gOps.erase(it);
  }
  if (pm.hasReal)
    if (auto f = realFn<ncclResult_t (*)(ncclRedOp_t, ncclComm_t)>("ncclRedOpDestroy"))
      return f(pm.real, c->real);
  return ncclSuccess;
}
