//===- CpuBench.cpp - Throughput and per-op overhead of the CPU reference executor -------===//
//
// Prints (never asserts):
//  1. A 64 MiB float32 AllReduce over 8 ranks (../shared/golden/seed/allreduce_nvls.gpus8.json,
//     switch ops) on the CPU executor, against a plain reduce + copy loop over the same bytes
//     (for every 1/8 slice: reduce the 8 ranks' slices, store the result to all 8) measured in the
//     same run on the same kind of buffers. Reports time per launch, algbw and the ratio.
//  2. Per-op overhead: small messages through plans with many ops, in nanoseconds per executed op.
//  3. (printed between 1 and 2) Verification cost: generating every rank's input and comparing
//     every rank's output with the end state, against the time of one launch.
// Usage: msccl-bench-cpu [PLAN8.json] [--quick]
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Elements.h"
#include "msccl/runtime/Verify.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

using namespace msccl::plan;
using namespace msccl::runtime;

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The same work as an 8-rank in-place allreduce: for each rank's slice, reduce the 8 ranks'
/// slices and store the result into all 8 buffers.
double baselineSeconds(std::vector<std::vector<float>> &bufs, unsigned reps) {
  const size_t n = bufs.size(), count = bufs[0].size(), slice = count / n;
  double best = 1e30;
  for (unsigned rep = 0; rep < reps; ++rep) {
    double t0 = now();
    for (size_t s = 0; s < n; ++s) {
      float *acc = bufs[s].data() + s * slice;
      for (size_t r = 0; r < n; ++r)
        if (r != s)
          reduceElements(acc, acc, bufs[r].data() + s * slice, slice * 4, DataType::Float32, ReduceOp::Sum);
      for (size_t r = 0; r < n; ++r)
        if (r != s)
          std::memcpy(bufs[r].data() + s * slice, acc, slice * 4);
    }
    best = std::min(best, now() - t0);
  }
  return best;
}
} // namespace

int main(int argc, char **argv) {
  std::string shared = MSCCL_SHARED_DIR;
  std::string plan8 = shared + "/golden/seed/allreduce_nvls.gpus8.json";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick")
      quick = true;
    else
      plan8 = argv[i];
  }
  if (!std::filesystem::exists(plan8)) {
    std::printf("msccl-bench-cpu: %s not found (pass an 8-rank allreduce plan)\n", plan8.c_str());
    return 77;
  }
  auto ex = makeCpuExecutor();
  const uint64_t size = quick ? (8u << 20) : (64u << 20);
  const unsigned reps = quick ? 2 : 3;

  // 1. Throughput.
  Plan plan = readPlanFile(plan8);
  RunOptions ro;
  ro.size = size;
  ro.iterations = reps;
  ro.warmup = 1;
  ro.check = true;
  RunReport rep = runCollective(*ex, plan, ro);
  std::vector<std::vector<float>> bufs(plan.gpus.size(), std::vector<float>(size / 4));
  for (size_t r = 0; r < bufs.size(); ++r)
    for (size_t i = 0; i < bufs[r].size(); ++i)
      bufs[r][i] = float((r * 977 + i * 131) % 4095 + 1);
  double base = baselineSeconds(bufs, reps);
  std::printf("# CPU executor: %s, %llu MiB float32 allreduce, %zu ranks, in place (%u timed launches, best-of for the loop)\n",
              std::filesystem::path(plan8).filename().c_str(), (unsigned long long)(size >> 20), plan.gpus.size(), reps);
  std::printf("%-34s %10s %10s %10s\n", "what", "time(ms)", "algbw", "GB/s moved");
  const double moved = 2.0 * double(size) * double(plan.gpus.size()); // read 8 x S, write 8 x S
  std::printf("%-34s %10.2f %10.3f %10.3f   (#wrong %llu)\n", "executor (seed allreduce_nvls)", rep.secondsPerLaunch * 1e3,
              rep.algbw, moved / rep.secondsPerLaunch / 1e9, (unsigned long long)rep.verify.wrong);
  std::printf("%-34s %10.2f %10.3f %10.3f\n", "plain reduce+copy loop", base * 1e3, double(size) / base / 1e9,
              moved / base / 1e9);
  std::printf("executor / loop throughput ratio: %.2f (target >= 0.50)\n", base / rep.secondsPerLaunch);

  // 3. Verification cost against one launch, on the same plan and size: generating every
  // rank's input (fillInput) and comparing every rank's output with the end state
  // (OutputChecker over the buffers, block by block as runCollective does).
  {
    const uint32_t n = uint32_t(plan.gpus.size());
    auto ms = messageSizesFor(plan, size, nullptr);
    std::vector<std::vector<uint8_t>> mem(n, std::vector<uint8_t>(std::max(ms->inputBytes, ms->outputBytes)));
    ExecuteRequest req;
    req.plan = &plan;
    for (auto &b : mem)
      req.buffers.push_back(RankBuffers{b.data(), b.data()});
    req.inputBytes = ms->inputBytes;
    req.outputBytes = ms->outputBytes;
    // Process CPU time (std::clock), so the ratio holds on a loaded machine; the executor and
    // the checker are single-threaded.
    auto cpu = [] { return double(std::clock()) / CLOCKS_PER_SEC; };
    double fill = 1e30, compare = 1e30, launch = 1e30;
    VerifyResult vr;
    for (unsigned rep2 = 0; rep2 < reps; ++rep2) {
      double t0 = cpu();
      for (uint32_t r = 0; r < n; ++r)
        fillInput(mem[r].data(), ms->inputBytes, r, n, DataType::Float32);
      fill = std::min(fill, cpu() - t0);
      t0 = cpu();
      ex->execute(req);
      launch = std::min(launch, cpu() - t0);
      t0 = cpu();
      OutputChecker checker(collectiveKind(plan.collective), n, ms->inputBytes, ms->outputBytes, DataType::Float32,
                            ReduceOp::Sum);
      for (uint64_t off = 0; off < ms->outputBytes; off += OutputChecker::kBlockBytes)
        for (uint32_t r = 0; r < n; ++r)
          checker.check(r, off, mem[r].data() + off, std::min(OutputChecker::kBlockBytes, ms->outputBytes - off));
      compare = std::min(compare, cpu() - t0);
      vr = checker.result();
    }
    std::printf("\n# verification against one launch (CPU time, best of %u)\n", reps);
    std::printf("%-34s %10.2f   (execute: setup + one launch)\n", "launch", launch * 1e3);
    std::printf("%-34s %10.2f   (every rank's input)\n", "input generation", fill * 1e3);
    std::printf("%-34s %10.2f   (every rank's output; #wrong %llu)\n", "output comparison", compare * 1e3,
                (unsigned long long)vr.wrong);
    std::printf("verification (generation + comparison) / launch ratio: %.2f (target <= 1.00)\n",
                (fill + compare) / launch);
  }

  // 2. Per-op overhead at tiny sizes.
  std::printf("\n# per-op overhead, smallest size each plan accepts\n%-40s %8s %8s %10s %12s\n", "plan", "size", "ranks",
              "ops/launch", "ns/op");
  std::vector<std::string> small = {shared + "/golden/mscclpp-executor-tests/reduce.json",
                                    shared + "/golden/mscclpp-executor-tests/reduce_pack.json",
                                    shared + "/golden/mscclpp-executor-tests/transfer_pack.json",
                                    shared + "/golden/mscclpp-dsl/single_node__allreduce_nvls_zero_copy.json"};
  for (const std::string &f : small) {
    if (!std::filesystem::exists(f))
      continue;
    Plan p = readPlanFile(f);
    const Gpu &g = p.gpus[0];
    uint64_t s = std::max(g.inputChunks, g.outputChunks) * p.bufferAlignment;
    auto ms = messageSizesFor(p, s, nullptr);
    if (!ms)
      continue;
    std::vector<std::vector<uint8_t>> in(p.gpus.size(), std::vector<uint8_t>(std::max(ms->inputBytes, ms->outputBytes)));
    ExecuteRequest req;
    req.plan = &p;
    for (auto &b : in)
      req.buffers.push_back(RankBuffers{b.data(), b.data()});
    req.inputBytes = ms->inputBytes;
    req.outputBytes = ms->outputBytes;
    req.iterations = quick ? 200 : 2000;
    ExecuteResult r = ex->execute(req);
    double ops = double(r.opsExecuted) / r.launches;
    std::printf("%-40s %8llu %8zu %10.0f %12.1f\n", std::filesystem::path(f).filename().c_str(), (unsigned long long)s,
                p.gpus.size(), ops, r.seconds / (double(r.opsExecuted) * req.iterations / r.launches) * 1e9);
  }
  return rep.verify.wrong == 0 ? 0 : 1;
}
