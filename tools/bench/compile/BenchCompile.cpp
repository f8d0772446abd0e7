//===- BenchCompile.cpp - How fast and lean is mscclc? ----------------------------------===//
//
// Compiles the large programs of this folder (ring AllToAll and all-pairs AllReduce, models of
// the MSCCL++ DSL tests alltoall/alltoall_ring.py and allreduce.py) at 8, 32 and 64 ranks. Each
// compilation is a separate mscclc process (fork/exec), measured with wait4(): wall time, CPU
// time (user + system) and peak resident memory (ru_maxrss), each the best of N runs. Two runs
// per program: the front end only (`--emit=ir`: parse, check, elaborate, IR dump) and the full
// compilation to a JSON plan. Prints one row per program, plus CPU time per MB of plan to show
// whether the cost is linear in the plan size, and the Python DSL's figures for the same
// program with the ratios (Python / mscclc: how many times faster and leaner).
//
// Python reference: `python3 <test>.py --name N --num_gpus R` (the MSCCL++ DSL at the pinned
// commit, CPython 3.11) under /usr/bin/time on the same kind of machine (2 shared cores), wall
// seconds and peak RSS in MiB; where the issue also gives a figure (AllToAll 8 ranks 0.67 s /
// 41 MB, 32 ranks 7.3 s / 400 MB) the lower of the two is used. Measured on 2026-11-21:
// alltoall_ring 8: 0.52 s / 40 MiB, 32: 8.90 s / 390 MiB, 64: 40.8 s / 1517 MiB;
// allreduce 8: 0.30 s / 21.6 MiB, 32: 1.45 s / 60.8 MiB, 64: 6.03 s / 184 MiB. Python's plans
// are byte-identical to mscclc's for all six.
//
// Usage: bench-compile [--quick] [--repeat N]   (--quick: 8 and 32 ranks only)
//
//===------------------------------------------------------------------------------------===//
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Measure {
  double seconds = 0;
  double cpuSeconds = 0;
  long maxRssKb = 0;
  int status = -1;
};

/// Runs one mscclc process; `output` (if not empty) is removed first, so that every run writes a
/// new file (as the Python reference runs did) instead of truncating the previous one.
Measure runOnce(const std::vector<std::string> &args, const std::string &output) {
  if (!output.empty())
    unlink(output.c_str());
  std::vector<char *> argv;
  for (auto &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  Measure m;
  struct rusage ru {};
  int status = 0;
  wait4(pid, &status, 0, &ru);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.cpuSeconds = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  m.maxRssKb = ru.ru_maxrss;
  m.status = status;
  return m;
}

/// Best of `repeat` runs, per figure (the machine is shared: the minimum is the least disturbed).
Measure best(const std::vector<std::string> &args, int repeat, const std::string &output = "") {
  Measure b;
  for (int i = 0; i < repeat; ++i) {
    Measure m = runOnce(args, output);
    if (i == 0 || m.status != 0) {
      if (i == 0 || b.status == 0) b = m;
      continue;
    }
    b.seconds = std::min(b.seconds, m.seconds);
    b.cpuSeconds = std::min(b.cpuSeconds, m.cpuSeconds);
    b.maxRssKb = std::min(b.maxRssKb, m.maxRssKb);
  }
  return b;
}

/// The Python DSL on the same program (wall seconds, peak MB); seconds 0 = not measured.
struct PythonFigures {
  const char *program;
  int ranks;
  double seconds;
  double peakMb;
};
const PythonFigures kPython[] = {
    {"alltoall_ring", 8, 0.52, 40},       {"alltoall_ring", 32, 7.3, 390},       {"alltoall_ring", 64, 40.8, 1517},
    {"allreduce_allpairs", 8, 0.30, 21.6}, {"allreduce_allpairs", 32, 1.45, 60.8}, {"allreduce_allpairs", 64, 6.03, 184},
};

const PythonFigures *pythonFor(const char *program, int ranks) {
  for (auto &p : kPython)
    if (!strcmp(p.program, program) && p.ranks == ranks)
      return &p;
  return nullptr;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::max(1, atoi(argv[++i]));
  }
  std::vector<int> sizes = quick ? std::vector<int>{8, 32} : std::vector<int>{8, 32, 64};
  const char *programs[] = {"alltoall_ring", "allreduce_allpairs"};
  std::string out = "/tmp/bench-compile-" + std::to_string(getpid()) + ".json";

  printf("%-18s %5s | %7s %7s %7s | %7s %7s %7s %8s %9s | %8s %8s | %7s %7s\n", "program", "ranks", "front s",
         "cpu s", "MB", "total s", "cpu s", "peak MB", "plan MB", "cpu s/MB", "py s", "py MB", "x faster", "x leaner");
  int failures = 0;
  for (const char *p : programs) {
    for (int n : sizes) {
      std::string src = std::string(BENCH_DIR) + "/" + p + ".msccl";
      std::string d = "-Dgpu_size=" + std::to_string(n);
      Measure front = best({MSCCLC_PATH, src, d, "--emit=ir", "-o", "/dev/null"}, repeat);
      // --no-verify: the ring AllToAll of the Python DSL's tests breaks the executor's 8-bit
      // channel index limit from 32 ranks on, which mscclc's plan checks refuse
      // (docs/verification.md has the verifier's own benchmark, tools/bench/verify).
      Measure full = best({MSCCLC_PATH, src, d, "--no-verify", "-o", out}, repeat, out);
      struct stat st {};
      double planMb = stat(out.c_str(), &st) == 0 ? st.st_size / 1048576.0 : 0;
      bool ok = WIFEXITED(front.status) && WEXITSTATUS(front.status) == 0 && WIFEXITED(full.status) &&
                WEXITSTATUS(full.status) == 0;
      failures += !ok;
      double peakMb = full.maxRssKb / 1024.0;
      printf("%-18s %5d | %7.3f %7.3f %7.1f | %7.3f %7.3f %7.1f %8.2f %9.4f |", p, n, front.seconds, front.cpuSeconds,
             front.maxRssKb / 1024.0, full.seconds, full.cpuSeconds, peakMb, planMb,
             planMb > 0 ? full.cpuSeconds / planMb : 0.0);
      const PythonFigures *py = pythonFor(p, n);
      if (py && py->seconds > 0)
        printf(" %8.2f %8.0f | %7.0f %7.1f", py->seconds, py->peakMb, py->seconds / full.seconds, py->peakMb / peakMb);
      else
        printf(" %8s %8s | %7s %7s", "-", "-", "-", "-");
      printf("%s\n", ok ? "" : "  FAILED");
    }
  }
  unlink(out.c_str());
  printf("Targets (issue): >= 100x faster and >= 10x leaner than the Python DSL on large programs, time linear in the\n"
         "plan size. Wall times include process start (~2 ms); 8-rank programs are dominated by it.\n");
  return failures ? 1 : 0;
}
