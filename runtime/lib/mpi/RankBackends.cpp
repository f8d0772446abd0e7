//===- RankBackends.cpp - The one-process-per-rank backends and runCollectiveRanks --------===//
//
// See DistributedRun.h. The registry of RankSession factories by name ("cpu": DistributedSession
// here; the CUDA names from registerCudaRankBackends, msccl_cuda_ranks), and the verified run
// over any of them that `mpirun msccl-run` and the MPI benchmark use: every rank fills its own
// input, runs the timed and the checked launches, verifies its own output, and the ranks sum
// their wrong elements.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/DistributedRun.h"

#include "msccl/runtime/Collective.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

namespace msccl::runtime {

using plan::Plan;

RankSession::~RankSession() = default;

namespace {
struct RankBackend {
  std::string description;
  RankSessionFactory factory;
};
std::mutex gRankBackendsMutex;
std::map<std::string, RankBackend> &rankBackends() {
  static std::map<std::string, RankBackend> m{
      {"cpu",
       {"the CPU: threadblocks as threads, node peers' memory shared (DistributedRun.h)",
        [](Communicator &c, const Plan &p, const RunOptions &o, const DistributedOptions &d) -> std::unique_ptr<RankSession> {
          return std::make_unique<DistributedSession>(c, p, o, d);
        }}}};
  return m;
}
} // namespace

void registerRankBackend(const std::string &name, const std::string &description, RankSessionFactory factory) {
  std::lock_guard<std::mutex> l(gRankBackendsMutex);
  rankBackends()[name] = {description, std::move(factory)};
}

std::vector<std::string> registeredRankBackends() {
  std::lock_guard<std::mutex> l(gRankBackendsMutex);
  std::vector<std::string> names;
  for (const auto &[name, b] : rankBackends()) names.push_back(name);
  return names;
}

std::unique_ptr<RankSession> openRankSession(const std::string &name, Communicator &comm, const Plan &plan,
                                             const RunOptions &options, const DistributedOptions &dist) {
  RankSessionFactory f;
  {
    std::lock_guard<std::mutex> l(gRankBackendsMutex);
    auto it = rankBackends().find(name);
    if (it != rankBackends().end()) f = it->second.factory;
  }
  if (!f) {
    std::string known;
    for (const std::string &n : registeredRankBackends()) known += (known.empty() ? "" : ", ") + n;
    throw ExecutionError(ErrorKind::Unsupported, "no one-process-per-rank backend \"" + name + "\" in this build (there are: " +
                                                     known + ")");
  }
  return f(comm, plan, options, dist);
}

void checkCallBytes(const MessageSizes &ms, size_t sendBytes, size_t recvBytes) {
  if (sendBytes > ms.inputBytes || recvBytes > ms.outputBytes)
    throw ExecutionError(ErrorKind::Misuse, "call: " + std::to_string(sendBytes) + "/" + std::to_string(recvBytes) +
                                                " bytes for a session of " + std::to_string(ms.inputBytes) + "/" +
                                                std::to_string(ms.outputBytes));
}

RunReport runCollectiveRanks(const std::string &backend, Communicator &comm, const Plan &plan, const RunOptions &o,
                             const DistributedOptions &dist) {
  if (plan.variableSizes) // AllToAllV: every process resolves the same matrix, then runs its rank
    return runVariableSizes(plan, o, [&](const Plan &p, const RunOptions &ro) {
      return runCollectiveRanks(backend, comm, p, ro, dist);
    });
  std::unique_ptr<RankSession> owned = openRankSession(backend, comm, plan, o, dist);
  RankSession &session = *owned;
  RunReport rep = session.start();
  const MessageSizes *ms = &rep.sizes;
  const uint32_t n = uint32_t(plan.gpus.size());
  const uint32_t me = uint32_t(comm.rank());
  const CollectiveKind kind = collectiveKind(plan.collective);
  auto fill = [&](uint8_t *input) { fillInput(input, ms->inputBytes, me, n, o.dataType); };
  auto setTiming = [&](double seconds, unsigned launches) {
    rep.secondsPerLaunch = seconds / launches;
    if (rep.secondsPerLaunch > 0) {
      rep.algbw = double(o.size) / rep.secondsPerLaunch / 1e9;
      rep.busbw = rep.algbw * busBandwidthFactor(kind, n);
    }
  };
  if (o.iterations > 0)
    setTiming(session.execute(fill, o.warmup, o.iterations), o.iterations);
  if (o.check) {
    unsigned launches = std::max(1u, o.checkLaunches);
    double seconds = session.execute(fill, 0, launches);
    if (o.iterations == 0)
      setTiming(seconds, launches);
    VerifyResult mineV = plan.collective == "alltoallv" && o.counts
                             ? verifyAllToAllVRank(*o.counts, me, session.output(), o.dataType)
                             : verifyRankOutput(kind, me, n, session.output(), ms->inputBytes, ms->outputBytes, o.dataType,
                                                rep.reduceOp);
    struct Packed {
      uint64_t wrong, elements, firstIndex, checked;
      double expected, got;
    } p{mineV.wrong, mineV.elements, mineV.firstIndex, mineV.checked ? 1u : 0u, mineV.expected, mineV.got};
    auto all = comm.allGather(&p, sizeof p);
    VerifyResult v;
    v.checked = mineV.checked;
    for (uint32_t r = 0; r < n; ++r) {
      Packed q;
      std::memcpy(&q, all[r].data(), sizeof q);
      if (q.wrong && v.wrong == 0) {
        v.firstRank = r;
        v.firstIndex = q.firstIndex;
        v.expected = q.expected;
        v.got = q.got;
      }
      v.wrong += q.wrong;
      v.elements += q.elements;
    }
    rep.verify = v;
  }
  return rep;
}

} // namespace msccl::runtime
