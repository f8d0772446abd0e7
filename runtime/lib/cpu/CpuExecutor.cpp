//===- CpuExecutor.cpp - The CPU reference executor: memory, launches, scheduler ---------===//
//
// Consumes an ExecuteRequest; validates the plan (PlanValidate.h), lowers it for the message
// sizes (Resolve.h), allocates zeroed scratch per rank, then runs warmup + timed launches. Each
// launch advances the LL flag F and the double-scratch half and drives all (rank, tb) state
// machines round-robin until all finish, a full round makes no progress (Deadlock: every blocked
// tb is reported) or an op misuses memory (Misuse). After each launch, semaphores must be back
// at their init values and every channel's signals matched by waits (Misuse otherwise). With
// CpuExecutorOptions::raceCheck a RaceChecker (RaceCheck.h) follows all launches of the call
// (state kept across launches, each rank's launches ordered only by its own stream); its races
// are reported as Misuse after the balance checks, its relaxed-handshake warnings in
// ExecuteResult::warnings.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/CpuExecutor.h"

#include "msccl/runtime/cpu/Machine.h"
#include "RaceCheck.h"
#include "msccl/runtime/PlanValidate.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

namespace msccl::runtime {
namespace {
using namespace msccl::plan;
using cpu::Machine;
using cpu::RankState;
using cpu::Step;
using cpu::TbState;

class CpuExecutor final : public Executor {
public:
  explicit CpuExecutor(CpuExecutorOptions options) : options_(options) {}

  std::string_view name() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference executor (all ranks simulated on host memory, deterministic scheduler)";
  }

  DeviceBuffer allocate(size_t bytes) override {
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p)
      throw ExecutionError(ErrorKind::Backend, "out of host memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, rounded == 0 ? 64 : rounded);
    return DeviceBuffer{p, bytes};
  }
  void release(DeviceBuffer &buffer) override {
    std::free(buffer.ptr);
    buffer = DeviceBuffer{};
  }
  // memmove's pointers must not be null even for 0 bytes (an empty std::vector's data() is).
  void upload(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memmove(dst, src, bytes);
  }
  void download(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memmove(dst, src, bytes);
  }

  ExecuteResult execute(const ExecuteRequest &req) override;

private:
  void launch(Machine &m, uint64_t launchIndex, std::chrono::steady_clock::time_point start);
  CpuExecutorOptions options_;
};

void CpuExecutor::launch(Machine &m, uint64_t launchIndex, std::chrono::steady_clock::time_point start) {
  const Plan &plan = *m.plan;
  m.flag = uint32_t(launchIndex + 1); // F starts at 1 (plan#7.3)
  for (RankState &rs : m.ranks)
    rs.scratchOffset = (plan.useDoubleScratchBuffer && m.flag % 2 == 0) ? rs.scratchHalf : 0;

  std::vector<TbState> tbs;
  for (uint32_t r = 0; r < m.lowered->gpus.size(); ++r)
    for (uint32_t t = 0; t < m.lowered->gpus[r].threadblocks.size(); ++t)
      tbs.push_back(cpu::makeTbState(m, r, t, uint32_t(tbs.size())));
  auto finishOp = [&](TbState &s) { cpu::finishOp(m, s); };
  auto settle = [&](TbState &s) { cpu::settleTb(m, s); };

  if (m.race)
    m.race->startLaunch(uint32_t(launchIndex), tbs);

  size_t remaining = 0;
  for (TbState &s : tbs) {
    if (!s.done)
      settle(s);
    remaining += s.done ? 0 : 1;
  }
  uint64_t rounds = 0;
  while (remaining > 0) {
    bool progress = false;
    for (TbState &s : tbs) {
      if (s.done)
        continue;
      for (;;) {
        const LoweredOp &op = s.tb->ops[s.pc];
        Step st = cpu::stepOp(m, s, op);
        if (st == Step::Done) {
          progress = true;
          finishOp(s);
          settle(s);
          if (s.done) {
            --remaining;
            break;
          }
          continue;
        }
        if (st == Step::Progress)
          progress = true;
        break;
      }
    }
    if (!progress) {
      std::vector<std::string> diags;
      for (const TbState &s : tbs)
        if (!s.done)
          diags.push_back(cpu::blockedLine(m, s));
      throw ExecutionError(ErrorKind::Deadlock,
                           "deadlock in launch " + std::to_string(launchIndex + 1) + " (flag " +
                               std::to_string(m.flag) + "): no threadblock can make progress; " +
                               std::to_string(diags.size()) + " blocked threadblock(s):",
                           diags);
    }
    if (options_.timeLimitSeconds > 0 && (++rounds & 255) == 0) {
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (el > options_.timeLimitSeconds)
        throw ExecutionError(ErrorKind::Backend, "CPU executor exceeded its time limit of " +
                                                     std::to_string(options_.timeLimitSeconds) + " s");
    }
  }

  if (m.race)
    m.race->endLaunch(tbs);
  // End-of-launch balance checks.
  std::vector<std::string> diags;
  for (uint32_t r = 0; r < m.ranks.size(); ++r)
    for (std::string &d : cpu::balanceProblems(m, r))
      diags.push_back(std::move(d));
  if (!diags.empty())
    throw ExecutionError(ErrorKind::Misuse,
                         "unbalanced synchronisation at the end of launch " + std::to_string(launchIndex + 1) + ":",
                         diags);
  if (m.race && m.race->raceCount() > 0)
    throw ExecutionError(ErrorKind::Misuse,
                         "data races in launch " + std::to_string(launchIndex + 1) + ": " +
                             std::to_string(m.race->raceCount()) + " racing access pair(s) on overlapping bytes" +
                             " (a GPU may give a wrong result); the first " +
                             std::to_string(m.race->reports().size()) + " distinct:",
                         m.race->reports());
}

ExecuteResult CpuExecutor::execute(const ExecuteRequest &req) {
  if (!req.plan)
    throw ExecutionError(ErrorKind::InvalidPlan, "no plan given");
  const Plan &plan = *req.plan;
  ValidateOptions vo;
  vo.allowGlre = true;
  vo.deviceLimits = false; // our tables are sized from the plan (no MSCCL++ per-threadblock limit)
  if (!req.planValidated)
    validatePlan(plan, vo);
  if (req.buffers.size() != plan.gpus.size())
    throw ExecutionError(ErrorKind::Backend, "the plan has " + std::to_string(plan.gpus.size()) +
                                                 " ranks but buffers were given for " +
                                                 std::to_string(req.buffers.size()));
  ResolvedPlan resolved = resolvePlan(plan);
  LoweredPlan lowered = lowerPlan(plan, resolved, req.inputBytes, req.outputBytes, dataTypeBytes(req.dataType));

  Machine m;
  m.plan = &plan;
  m.resolved = &resolved;
  m.lowered = &lowered;
  m.dataType = req.dataType;
  m.reduceOp = req.reduceOp;
  m.packetType = req.packetType;
  m.ranks.resize(plan.gpus.size());
  cpu::RaceChecker race;
  if (options_.raceCheck)
    m.race = &race;
  for (uint32_t r = 0; r < plan.gpus.size(); ++r) {
    RankState &rs = m.ranks[r];
    rs.input = static_cast<uint8_t *>(req.buffers[r].input);
    rs.output = static_cast<uint8_t *>(req.buffers[r].output);
    rs.inputBytes = rs.input ? req.inputBytes : 0;
    rs.outputBytes = rs.output ? req.outputBytes : 0;
    const LoweredGpu &lg = lowered.gpus[r];
    try {
      rs.scratchStorage = cpu::ZeroedBytes(lg.scratchBytes);
    } catch (const std::exception &) {
      throw ExecutionError(ErrorKind::Backend, "rank " + std::to_string(r) + ": cannot allocate " +
                                                   std::to_string(lg.scratchBytes) + " bytes of scratch");
    }
    rs.scratch = rs.scratchStorage.data();
    rs.scratchBytes = lg.scratchBytes;
    rs.scratchHalf = plan.useDoubleScratchBuffer ? lg.scratchBytes / 2 : lg.scratchBytes;
    // Fault in (outside the timed launches) the scratch this call's launches use: launch k uses
    // half k % 2 of a double buffer, so a single launch leaves the second half untouched.
    const uint64_t launches = uint64_t(req.warmupIterations) + req.iterations;
    std::memset(rs.scratch, 0, launches >= 2 ? lg.scratchBytes : rs.scratchHalf);
    const size_t nm = resolved.gpus[r].memoryChannels.size(), np = resolved.gpus[r].portChannels.size();
    rs.counterStorage.assign(2 * nm + 2 * np, 0);
    uint64_t *c = rs.counterStorage.data();
    rs.memSignals = {c, nm};
    rs.memWaits = {c + nm, nm};
    rs.portSignals = {c + 2 * nm, np};
    rs.portWaits = {c + 2 * nm + np, np};
    for (const Semaphore &s : plan.gpus[r].semaphores) {
      rs.semaphoreStorage.push_back(s.initValue);
      rs.semaphoreInit.push_back(s.initValue);
    }
    rs.semaphores = {rs.semaphoreStorage.data(), rs.semaphoreStorage.size()};
    rs.barriers.resize(16);
  }

  if (m.race) {
    std::vector<cpu::RaceChecker::RankShape> shapes;
    uint32_t numTbs = 0;
    bool relaxed = false;
    for (uint32_t r = 0; r < m.ranks.size(); ++r) {
      const RankState &rs = m.ranks[r];
      shapes.push_back({rs.memSignals.size(), rs.portSignals.size(), rs.semaphores.size()});
      numTbs += uint32_t(lowered.gpus[r].threadblocks.size());
      for (const LoweredTb &tb : lowered.gpus[r].threadblocks)
        for (const LoweredOp &op : tb.ops)
          relaxed = relaxed || op.type == OpType::RelaxedSignal || op.type == OpType::RelaxedWait;
    }
    race.begin(numTbs, shapes, m.ranks, options_.raceCheckLaunches, relaxed);
  }

  ExecuteResult result;
  auto start = std::chrono::steady_clock::now();
  uint64_t launchIndex = 0;
  for (unsigned i = 0; i < req.warmupIterations; ++i)
    launch(m, launchIndex++, start);
  auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < req.iterations; ++i)
    launch(m, launchIndex++, start);
  auto t1 = std::chrono::steady_clock::now();
  result.seconds = std::chrono::duration<double>(t1 - t0).count();
  result.launches = unsigned(launchIndex);
  result.opsExecuted = m.opsExecuted;
  if (m.race && m.race->warningCount() > 0) {
    result.warnings.push_back(std::to_string(m.race->warningCount()) +
                              " access pair(s) ordered with a kernel start/end only by a relaxed signal/wait "
                              "(the stores are visible on today's GPUs by the hardware's behaviour, not by the "
                              "memory model); the first " +
                              std::to_string(m.race->warnings().size()) + " distinct:");
    for (const std::string &w : m.race->warnings())
      result.warnings.push_back(w);
  }
  return result;
}

} // namespace

std::unique_ptr<Executor> makeCpuExecutor(const CpuExecutorOptions &options) {
  return std::make_unique<CpuExecutor>(options);
}

void registerCpuExecutor() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerExecutor("cpu", "CPU reference executor (simulated ranks on host memory)",
                     [](const BackendOptions &o) {
                       CpuExecutorOptions co;
                       co.raceCheck = o.raceCheck;
                       return makeCpuExecutor(co);
                     });
  });
}

} // namespace msccl::runtime
