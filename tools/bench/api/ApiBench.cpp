//===- ApiBench.cpp - libmsccl's per-call overhead and the compile cache's saving --------===//
//
// Prints (no test times anything):
//   1. per call, 1 KiB AllReduce (allreduce/allpairs_packet, 4 ranks, CPU backend):
//        direct   runtime CPU executor, one execute() for all ranks (what msccl-run does)
//        api      4 rank threads, each PlanRegistry::select + Executor::execute (rendezvous,
//                 then the same executor call), i.e. what an application pays
//        select   PlanRegistry::select alone, 16 registered plans
//   2. compile of stdlib:allreduce/ring (ranks=8) fresh vs a cache hit.
//   3. the cost of a remainder: AllReduce (allreduce/ring) and AllGather (allgather/allpairs) of
//      1 MiB per rank against 1 MiB + 4 B (uneven chunks, runtime/UnevenChunks.h) and 4 KiB
//      against 4 KiB + 4 B, direct CPU executor calls, 4 ranks.
// Usage: msccl-bench-api [--iterations N] (default 2000)
//
//===------------------------------------------------------------------------------------===//
#include "msccl/msccl.hpp"
#include "msccl/runtime/CpuExecutor.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace msccl;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// CPU seconds of the whole process (every thread): what a call costs even when the machine is
/// shared and wall time mostly measures waiting for a core.
static double cpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Cost {
  double wall = 1e9, cpu = 1e9;
  void keepBest(double w, double c) {
    wall = std::min(wall, w);
    cpu = std::min(cpu, c);
  }
};

/// Section 3: the same plan at a size its chunks divide and at 4 bytes more (uneven chunks).
static void printRemainderCost(runtime::Executor &cpu, uint32_t n, const std::string &cacheDir) {
  // remainder: the same plan at a size its chunks divide and at 4 bytes more
  std::printf("cost of a remainder (uneven chunks), direct CPU executor call, %u ranks, best of 5:\n", n);
  std::printf("  plan                   per-rank bytes     time        +4 B        ratio\n");
  for (const char *algo : {"allreduce/ring", "allgather/allpairs"}) {
    CompileParams rp;
    rp.cacheDir = cacheDir;
    rp.defines = {{"ranks", "4"}, {"inplace", "false"}};
    PlanPtr p = compile(std::string("stdlib:") + algo, rp);
    const bool gather = std::strcmp(algo, "allgather/allpairs") == 0;
    for (size_t base : {size_t(4096), size_t(1) << 20}) {
      double best[2] = {1e9, 1e9};
      for (int which = 0; which < 2; ++which) {
        const size_t in = base + 4 * which, out = gather ? in * n : in;
        std::vector<std::vector<float>> s(n, std::vector<float>(in / 4, 1.f)), d(n, std::vector<float>(out / 4));
        runtime::ExecuteRequest rq;
        rq.plan = p.get();
        rq.inputBytes = in;
        rq.outputBytes = out;
        for (uint32_t r = 0; r < n; ++r)
          rq.buffers.push_back({s[r].data(), d[r].data()});
        const int reps = base > 4096 ? 20 : 500;
        std::thread t([&] {
          for (int k = 0; k < 5; ++k) {
            auto t1 = Clock::now();
            for (int i = 0; i < reps; ++i)
              cpu.execute(rq);
            best[which] = std::min(best[which], since(t1) / reps);
          }
        });
        t.join();
      }
      std::printf("  %-22s %14zu %9.2f us %9.2f us %9.3f\n", algo, base, best[0] * 1e6, best[1] * 1e6,
                  best[1] / best[0]);
    }
  }
}

int main(int argc, char **argv) {
  int iterations = 2000;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
      iterations = std::max(1, std::atoi(argv[++i]));
  try {
    const uint32_t n = 4;
    const size_t bytes = 1024;
    std::string cacheDir = (std::filesystem::temp_directory_path() / ("msccl-bench-api-" + std::to_string(getpid()))).string();
    CompileParams params;
    params.cacheDir = cacheDir;
    params.defines = {{"ranks", "4"}, {"inplace", "false"}};
    PlanPtr plan = compile("stdlib:allreduce/allpairs_packet", params);

    std::vector<std::vector<float>> send(n, std::vector<float>(bytes / 4, 1.0f)), recv(n, std::vector<float>(bytes / 4));

    // direct
    runtime::registerCpuExecutor();
    auto cpu = runtime::createExecutor("cpu");
    runtime::ExecuteRequest req;
    req.plan = plan.get();
    req.inputBytes = req.outputBytes = bytes;
    for (uint32_t r = 0; r < n; ++r)
      req.buffers.push_back({send[r].data(), recv[r].data()});
    // On a thread like the API's calls: glibc's main arena trims its heap after large frees, which
    // thread arenas do not, so a main-thread loop would measure page faults, not the executor.
    Cost direct, api;
    auto directRun = [&] {
      double secs = 0;
      double c0 = cpuSeconds();
      std::thread t([&] {
        auto t0 = Clock::now();
        for (int i = 0; i < iterations; ++i)
          cpu->execute(req);
        secs = since(t0) / iterations;
      });
      t.join();
      direct.keepBest(secs, (cpuSeconds() - c0) / iterations);
    };
    for (int i = 0; i < 50; ++i)
      cpu->execute(req);
    Clock::time_point t0;

    // api: 16 registrations (15 that do not fit this call), 4 rank threads
    PlanRegistry registry;
    for (int k = 0; k < 15; ++k) {
      PlanInfo info;
      info.name = "decoy-" + std::to_string(k);
      info.minBytes = uint64_t(1) << (12 + k);
      registry.add(plan, info);
    }
    PlanInfo small;
    small.name = "small";
    small.maxBytes = 4096;
    registry.add(plan, small);
    auto comm = Communicator::local(n);
    Executor executor(comm);
    SelectRequest request = comm->request("allreduce", bytes, false);
    auto rankLoop = [&](uint32_t r, int count) {
      for (int i = 0; i < count; ++i) {
        const RegisteredPlan &chosen = registry.selectOrThrow(request);
        executor.execute(int(r), send[r].data(), recv[r].data(), bytes, bytes, plan::DataType::Float32,
                         plan::ReduceOp::Sum, chosen.plan);
      }
    };
    auto runThreads = [&](int count) {
      std::vector<std::thread> ts;
      for (uint32_t r = 0; r < n; ++r)
        ts.emplace_back(rankLoop, r, count);
      for (auto &t : ts)
        t.join();
    };
    runThreads(50);
    // Alternate the two, best of three each (the machine may be shared).
    for (int k = 0; k < 3; ++k) {
      double c0 = cpuSeconds();
      t0 = Clock::now();
      runThreads(iterations);
      api.keepBest(since(t0) / iterations, (cpuSeconds() - c0) / iterations);
      directRun();
    }

    t0 = Clock::now();
    const int selects = iterations * 50;
    size_t sink = 0;
    for (int i = 0; i < selects; ++i)
      sink += registry.select(request)->index;
    double select = since(t0) / selects;

    std::printf("per-call overhead, %zu-byte allreduce, %u ranks, CPU backend (%d calls, best of 3):\n", bytes, n, iterations);
    std::printf("                                            wall        CPU (all threads)\n");
    std::printf("  direct executor call (all ranks)        %9.2f us %9.2f us\n", direct.wall * 1e6,
                direct.cpu * 1e6);
    std::printf("  api: select + execute on rank threads  %9.2f us %9.2f us  (CPU +%.2f us per call)\n",
                api.wall * 1e6, api.cpu * 1e6, (api.cpu - direct.cpu) * 1e6);
    std::printf("  select alone (16 plans registered)      %9.3f us%s\n", select * 1e6, sink == 42 ? " " : "");

    // compile: fresh vs cache hit
    CompileParams cp;
    cp.cacheDir = cacheDir;
    cp.defines = {{"ranks", "8"}};
    const int reps = 5;
    CompileParams fresh = cp;
    fresh.useCache = false;
    t0 = Clock::now();
    for (int i = 0; i < reps; ++i)
      compile("stdlib:allreduce/ring", fresh);
    double freshTime = since(t0) / reps;
    compile("stdlib:allreduce/ring", cp); // fills the entry
    CompileInfo info;
    t0 = Clock::now();
    for (int i = 0; i < reps * 10; ++i)
      compile("stdlib:allreduce/ring", cp, &info);
    double hitTime = since(t0) / (reps * 10);
    std::printf("compile stdlib:allreduce/ring ranks=8:\n");
    std::printf("  fresh compile (no cache)                %9.2f ms\n", freshTime * 1e3);
    std::printf("  cache hit%s                              %9.2f ms  (x%.1f faster)\n", info.cacheHit ? "" : "?",
                hitTime * 1e3, freshTime / hitTime);

    printRemainderCost(*cpu, n, cacheDir);
    std::filesystem::remove_all(cacheDir);
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "msccl-bench-api: %s\n", e.what());
    return 1;
  }
}
