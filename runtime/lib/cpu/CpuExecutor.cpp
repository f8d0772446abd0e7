//===- CpuExecutor.cpp - The CPU reference executor: memory, launches, scheduler ---------===//
//
// Consumes an ExecuteRequest; validates the plan (PlanValidate.h), lowers it for the message
// sizes (Resolve.h), allocates zeroed scratch per rank, then runs warmup + timed launches. Each
// launch advances the LL flag F and the double-scratch half and drives all (rank, tb) state
// machines round-robin until all finish, a full round makes no progress (Deadlock: every blocked
// tb is reported) or an op misuses memory (Misuse). After each launch, semaphores must be back
// at their init values and every channel's signals matched by waits (Misuse otherwise). With
// CpuExecutorOptions::raceCheck a RaceChecker (RaceCheck.h) follows every launch; its races are
// reported as Misuse after the balance checks.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/CpuExecutor.h"

#include "CpuMachine.h"
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
  m.flag = uint32_t(launchIndex + 1); // F starts at 1 (§7.3)
  for (RankState &rs : m.ranks)
    rs.scratchOffset = (plan.useDoubleScratchBuffer && m.flag % 2 == 0) ? rs.scratchHalf : 0;

  std::vector<TbState> tbs;
  for (uint32_t r = 0; r < m.lowered->gpus.size(); ++r)
    for (uint32_t t = 0; t < m.lowered->gpus[r].threadblocks.size(); ++t) {
      TbState s;
      s.rank = r;
      s.tbIndex = t;
      s.tb = &m.lowered->gpus[r].threadblocks[t];
      s.actor = uint32_t(tbs.size());
      s.done = s.tb->ops.empty();
      tbs.push_back(std::move(s));
    }

  auto finishOp = [&](TbState &s) {
    s.cursor = 0;
    s.arrived = false;
    s.blockedOn.clear();
    s.pc++;
    s.serial++;
    m.opsExecuted++;
  };
  // Advance pc over pipeline bookkeeping until it points at a runnable op (or the end).
  auto settle = [&](TbState &s) {
    const auto &ops = s.tb->ops;
    for (;;) {
      if (s.inPipe && s.pc == s.pipeEnd) {
        if (++s.pipeIter < s.pipeIters) {
          s.pc = s.pipeBegin;
        } else {
          s.inPipe = false;
        }
        continue;
      }
      if (s.pc >= ops.size()) {
        s.done = true;
        return;
      }
      const LoweredOp &op = ops[s.pc];
      if (op.type == OpType::Pipeline) {
        s.pipeBegin = s.pc + 1;
        s.pipeEnd = s.pc + 1 + op.pipelineOps;
        s.pipeIters = op.pipelineIterations;
        s.pipeIter = 0;
        s.unitSize = op.unitSize;
        m.opsExecuted++;
        if (s.pipeIters == 0 || op.pipelineOps == 0) {
          s.pc = s.pipeEnd;
        } else {
          s.inPipe = true;
          s.pc = s.pipeBegin;
        }
        continue;
      }
      return;
    }
  };

  if (m.race) {
    std::vector<cpu::RaceChecker::RankShape> shapes;
    for (const RankState &rs : m.ranks)
      shapes.push_back({rs.memSignals.size(), rs.portSignals.size(), rs.semaphores.size()});
    m.race->beginLaunch(tbs, shapes);
  }

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
        if (!s.done) {
          const LoweredOp &op = s.tb->ops[s.pc];
          std::string d = cpu::opWhere(s, op);
          if (s.inPipe)
            d += " (pipeline iteration " + std::to_string(s.pipeIter) + " of " + std::to_string(s.pipeIters) + ")";
          d += ": " + (s.blockedOn.empty() ? std::string("blocked") : s.blockedOn);
          diags.push_back(d);
        }
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

  // End-of-launch balance checks.
  std::vector<std::string> diags;
  for (uint32_t r = 0; r < m.ranks.size(); ++r) {
    RankState &rs = m.ranks[r];
    for (size_t k = 0; k < rs.semaphores.size(); ++k)
      if (rs.semaphores[k] != rs.semaphoreInit[k])
        diags.push_back("rank " + std::to_string(r) + " semaphore " + std::to_string(k) + " (gpus[" +
                        std::to_string(r) + "].semaphores[" + std::to_string(k) + "]) ends the launch at " +
                        std::to_string(rs.semaphores[k]) + " instead of its init_value " +
                        std::to_string(rs.semaphoreInit[k]) + ": sem_acquire/sem_release are unbalanced");
    for (int type = 0; type < 2; ++type) {
      auto &sig = type == 0 ? rs.memSignals : rs.portSignals;
      auto &wt = type == 0 ? rs.memWaits : rs.portWaits;
      const auto &list = type == 0 ? m.resolved->gpus[r].memoryChannels : m.resolved->gpus[r].portChannels;
      for (size_t c = 0; c < sig.size(); ++c)
        if (sig[c] != wt[c])
          diags.push_back("rank " + std::to_string(r) + " " + (type == 0 ? "memory" : "port") + " channel " +
                          std::to_string(c) + " (to rank " + std::to_string(list[c].peer) + ") received " +
                          std::to_string(sig[c]) + " signal(s) but waited " + std::to_string(wt[c]) +
                          " time(s): signals and waits are unbalanced");
    }
  }
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
  validatePlan(plan, vo);
  if (req.buffers.size() != plan.gpus.size())
    throw ExecutionError(ErrorKind::Backend, "the plan has " + std::to_string(plan.gpus.size()) +
                                                 " ranks but buffers were given for " +
                                                 std::to_string(req.buffers.size()));
  ResolvedPlan resolved = resolvePlan(plan);
  LoweredPlan lowered = lowerPlan(plan, resolved, req.inputBytes, req.outputBytes);

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
      rs.scratch.assign(lg.scratchBytes, 0);
    } catch (const std::exception &) {
      throw ExecutionError(ErrorKind::Backend, "rank " + std::to_string(r) + ": cannot allocate " +
                                                   std::to_string(lg.scratchBytes) + " bytes of scratch");
    }
    rs.scratchHalf = plan.useDoubleScratchBuffer ? lg.scratchBytes / 2 : lg.scratchBytes;
    rs.memSignals.assign(resolved.gpus[r].memoryChannels.size(), 0);
    rs.memWaits = rs.memSignals;
    rs.portSignals.assign(resolved.gpus[r].portChannels.size(), 0);
    rs.portWaits = rs.portSignals;
    for (const Semaphore &s : plan.gpus[r].semaphores) {
      rs.semaphores.push_back(s.initValue);
      rs.semaphoreInit.push_back(s.initValue);
    }
    rs.barriers.resize(16);
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
                     [] { return makeCpuExecutor(); });
  });
}

} // namespace msccl::runtime
