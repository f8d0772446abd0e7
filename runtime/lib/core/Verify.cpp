//===- Verify.cpp - Run a plan on a backend with generated inputs and check the outputs --===//
//
// See Verify.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Verify.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace msccl::runtime {
using namespace msccl::plan;

RunReport startRun(const Plan &plan, const RunOptions &o) {
  RunReport rep;
  std::string why;
  auto ms = messageSizesFor(plan, o.size, &why);
  if (!ms)
    throw ExecutionError(ErrorKind::InvalidSize, why);
  rep.sizes = *ms;
  std::optional<ReduceOp> planOp = planReduceOp(plan);
  if (o.reduceOp && planOp && *o.reduceOp != *planOp)
    throw ExecutionError(ErrorKind::Unsupported, "the plan's ops reduce with reduce_op \"" +
                                                     std::string(reduceOpName(*planOp)) + "\", not \"" +
                                                     std::string(reduceOpName(*o.reduceOp)) + "\"");
  rep.reduceOp = o.reduceOp.value_or(planOp.value_or(ReduceOp::Sum));
  rep.inPlace = o.inPlace.value_or(plan.inplace);
  return rep;
}

RunReport runVariableSizes(const Plan &plan, const RunOptions &o,
                           const std::function<RunReport(const Plan &, const RunOptions &)> &run) {
  if (!o.counts)
    throw ExecutionError(ErrorKind::InvalidSize, needsCountsMessage(plan));
  if (o.inPlace.value_or(false))
    throw ExecutionError(ErrorKind::Unsupported, "an AllToAllV runs out of place (its input and output blocks differ in size)");
  CountsResolver resolver(plan);
  auto t0 = std::chrono::steady_clock::now();
  const Plan &concrete = resolver.resolve(*o.counts, o.dataType);
  auto t1 = std::chrono::steady_clock::now();
  RunOptions inner = o;
  inner.size = std::max(resolver.sizes().inputBytes, resolver.sizes().outputBytes);
  inner.planValidated = false;
  RunReport rep = run(concrete, inner);
  finishVariableReport(rep, *o.counts, o.dataType, uint32_t(plan.gpus.size()));
  rep.resolveSeconds = std::chrono::duration<double>(t1 - t0).count();
  return rep;
}

void finishVariableReport(RunReport &rep, const CountMatrix &m, DataType type, uint32_t n) {
  rep.bytesMoved = m.total() * dataTypeBytes(type);
  if (rep.secondsPerLaunch > 0) {
    rep.algbw = double(rep.bytesMoved) / n / rep.secondsPerLaunch / 1e9;
    rep.busbw = rep.algbw * busBandwidthFactor(CollectiveKind::AllToAll, n);
  }
}

RunReport runCollective(Executor &ex, const Plan &plan, const RunOptions &o) {
  if (plan.variableSizes)
    return runVariableSizes(plan, o, [&](const Plan &p, const RunOptions &ro) { return runCollective(ex, p, ro); });
  RunReport rep = startRun(plan, o);
  const MessageSizes *ms = &rep.sizes;
  const uint32_t n = uint32_t(plan.gpus.size());
  const CollectiveKind kind = collectiveKind(plan.collective);

  std::vector<DeviceBuffer> allocs;
  struct Guard {
    Executor &ex;
    std::vector<DeviceBuffer> &a;
    ~Guard() {
      for (auto &b : a)
        ex.release(b);
    }
  } guard{ex, allocs};
  std::vector<RankBuffers> bufs(n);
  for (uint32_t r = 0; r < n; ++r) {
    if (rep.inPlace) {
      const InPlaceLayout l = inPlaceLayout(kind, r, ms->inputBytes, ms->outputBytes);
      allocs.push_back(ex.allocate(l.bytes));
      auto *base = static_cast<uint8_t *>(allocs.back().ptr);
      bufs[r].input = base + l.input;
      bufs[r].output = base + l.output;
    } else {
      allocs.push_back(ex.allocate(ms->inputBytes));
      bufs[r].input = allocs.back().ptr;
      allocs.push_back(ex.allocate(ms->outputBytes));
      bufs[r].output = allocs.back().ptr;
    }
  }
  // Host staging is one block (OutputChecker::kBlockBytes), not a whole buffer: zeroing,
  // filling and checking go block by block, so memory beyond the backend's is bounded.
  const uint64_t blockBytes = OutputChecker::kBlockBytes;
  std::vector<uint8_t> host;
  auto resetData = [&]() {
    if (!ex.movesData())
      return; // a performance model: nothing to fill
    host.assign(blockBytes, 0);
    for (auto &a : allocs)
      for (uint64_t off = 0; off < a.bytes; off += blockBytes)
        ex.upload(static_cast<uint8_t *>(a.ptr) + off, host.data(), std::min<uint64_t>(blockBytes, a.bytes - off));
    for (uint32_t r = 0; r < n; ++r)
      for (uint64_t off = 0; off < ms->inputBytes; off += blockBytes) {
        uint64_t len = std::min<uint64_t>(blockBytes, ms->inputBytes - off);
        fillInputAt(host.data(), off, len, r, n, o.dataType);
        ex.upload(static_cast<uint8_t *>(bufs[r].input) + off, host.data(), len);
      }
  };
  ExecuteRequest req;
  req.plan = &plan;
  req.buffers = bufs;
  req.inputBytes = ms->inputBytes;
  req.outputBytes = ms->outputBytes;
  req.dataType = o.dataType;
  req.reduceOp = rep.reduceOp;
  req.packetType = o.packetType;
  req.planValidated = o.planValidated;
  auto setTiming = [&](double seconds, unsigned launches) {
    rep.secondsPerLaunch = seconds / launches;
    if (rep.secondsPerLaunch > 0) {
      rep.algbw = double(o.size) / rep.secondsPerLaunch / 1e9;
      rep.busbw = rep.algbw * busBandwidthFactor(kind, n);
    }
  };
  if (o.iterations > 0) {
    resetData();
    req.iterations = o.iterations;
    req.warmupIterations = o.warmup;
    ExecuteResult res = ex.execute(req);
    setTiming(res.seconds, o.iterations);
    rep.warnings = std::move(res.warnings);
  }
  if (o.check && ex.movesData()) {
    resetData();
    req.iterations = std::max(1u, o.checkLaunches);
    req.warmupIterations = 0;
    ExecuteResult res = ex.execute(req);
    if (o.iterations == 0)
      setTiming(res.seconds, req.iterations);
    if (rep.warnings.empty())
      rep.warnings = std::move(res.warnings);
    OutputChecker checker(kind, n, ms->inputBytes, ms->outputBytes, o.dataType, rep.reduceOp);
    const uint64_t es = dataTypeBytes(o.dataType);
    const uint64_t total = ms->outputBytes / es * es;
    if (plan.collective == "alltoallv" && o.counts) {
      // The concrete plan of a CountsResolver: check each rank's output against the matrix.
      std::vector<uint8_t> out(ms->outputBytes);
      VerifyResult all;
      all.checked = true;
      for (uint32_t r = 0; r < n; ++r) {
        ex.download(out.data(), bufs[r].output, ms->outputBytes);
        mergeVerify(all, verifyAllToAllVRank(*o.counts, r, out.data(), o.dataType));
      }
      rep.verify = all;
      return rep;
    }
    if (kind != CollectiveKind::Other)
      for (uint64_t off = 0; off < total; off += blockBytes) {
        uint64_t len = std::min<uint64_t>(blockBytes, total - off);
        for (uint32_t r = 0; r < n; ++r) {
          ex.download(host.data(), static_cast<const uint8_t *>(bufs[r].output) + off, len);
          checker.check(r, off, host.data(), len);
        }
      }
    rep.verify = checker.result();
  }
  return rep;
}

} // namespace msccl::runtime
