//===- AllToAllVBench.cpp - AllToAllV vs padded AllToAll, and the cost of resolving counts ===//
//
// Prints (never asserts), on the CPU executor (all ranks in this process):
//  1. For a skewed count matrix (makeCounts "skewed": one hot peer per rank at 8x the typical
//     block, the others at 1/8), one AllToAllV call (stdlib alltoallv/allpairs) against the same
//     data moved by a fixed-size AllToAll (stdlib alltoall/allpairs) whose blocks are all padded
//     to the largest count: time per call, bytes moved, and the ratio.
//  2. The per-call cost of resolving counts (CountsResolver::resolve: prefix sums + one
//     evaluation per expression), against the time of the call, and the one-time cost of
//     building the resolver (parsing every expression).
// Usage: msccl-bench-alltoallv [--ranks N] [--block ELEMENTS] [--reps R]
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/Driver.h"
#include "msccl/runtime/Counts.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Verify.h"

#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

using namespace msccl;
using namespace msccl::plan;
using namespace msccl::runtime;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

Plan compileStdlib(const std::string &name, uint32_t ranks) {
  driver::CompilerInvocation inv;
  inv.input = "stdlib:" + name;
  inv.defines = {{"ranks", std::to_string(ranks)}};
  if (name == "alltoall/allpairs")
    inv.defines.push_back({"inplace", "false"});
  std::istringstream in;
  std::optional<Plan> p = driver::compilePlan(inv, in, llvm::errs());
  if (!p) {
    std::fprintf(stderr, "cannot compile stdlib:%s\n", name.c_str());
    std::exit(1);
  }
  return *p;
}
} // namespace

int main(int argc, char **argv) {
  uint32_t ranks = 8;
  uint64_t block = 1 << 14; // typical block, elements (float32: 64 KiB)
  unsigned reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--ranks")
      ranks = uint32_t(std::stoul(argv[i + 1]));
    else if (a == "--block")
      block = std::stoull(argv[i + 1]);
    else if (a == "--reps")
      reps = unsigned(std::stoul(argv[i + 1]));
  }
  Plan v = compileStdlib("alltoallv/allpairs", ranks);
  Plan fixed = compileStdlib("alltoall/allpairs", ranks);
  CountMatrix m = makeCounts("skewed", ranks, block);
  const uint64_t es = 4, maxCount = m.maxCount();
  auto ex = makeCpuExecutor({});

  // 1. One AllToAllV call vs a padded AllToAll (every block maxCount elements).
  RunOptions ov;
  ov.counts = &m;
  ov.iterations = reps;
  ov.warmup = 1;
  ov.check = true;
  RunReport rv = runCollective(*ex, v, ov);
  RunOptions of;
  of.size = maxCount * es * ranks; // per-rank buffer of the padded AllToAll
  of.iterations = reps;
  of.warmup = 1;
  of.check = true;
  RunReport rf = runCollective(*ex, fixed, of);
  const double padded = double(maxCount * es * ranks * ranks);
  std::printf("# AllToAllV vs padded AllToAll, CPU executor, %u ranks, float32, skewed matrix "
              "(hot block %llu elements, others %llu)\n",
              ranks, (unsigned long long)maxCount, (unsigned long long)(block / 8));
  std::printf("%-28s %12s %14s %10s\n", "", "time/call(us)", "bytes moved", "#wrong");
  std::printf("%-28s %12.1f %14llu %10llu\n", "alltoallv/allpairs", rv.secondsPerLaunch * 1e6,
              (unsigned long long)rv.bytesMoved, (unsigned long long)rv.verify.wrong);
  std::printf("%-28s %12.1f %14.0f %10llu\n", "alltoall/allpairs (padded)", rf.secondsPerLaunch * 1e6, padded,
              (unsigned long long)rf.verify.wrong);
  std::printf("speedup of AllToAllV: %.2fx (moves %.1f%% of the padded bytes)\n",
              rf.secondsPerLaunch / std::max(rv.secondsPerLaunch, 1e-12), 100.0 * double(rv.bytesMoved) / padded);

  // 2. Resolution cost per call.
  double t0 = now();
  const unsigned builds = 20;
  for (unsigned i = 0; i < builds; ++i) {
    CountsResolver r(v);
    (void)r;
  }
  double buildUs = (now() - t0) / builds * 1e6;
  CountsResolver res(v);
  const unsigned calls = 2000;
  t0 = now();
  uint64_t sink = 0;
  for (unsigned i = 0; i < calls; ++i) {
    m.counts[i % m.counts.size()] ^= 1; // counts change every call
    sink += res.resolve(m, DataType::Float32).gpus[0].inputChunks;
  }
  double resolveUs = (now() - t0) / calls * 1e6;
  std::printf("# resolving counts (%zu expressions, %u ranks)\n", res.expressions(), ranks);
  std::printf("CountsResolver construction (once per plan): %.1f us\n", buildUs);
  std::printf("CountsResolver::resolve (per call):          %.2f us  (%.3f%% of the call) [%llu]\n", resolveUs,
              100.0 * resolveUs / (rv.secondsPerLaunch * 1e6), (unsigned long long)(sink % 10));
  return rv.verify.wrong || rf.verify.wrong ? 1 : 0;
}
