//===- DriverTest.cpp - msccl-run's driver, called in-process ----------------------------===//
#include "Driver.h"
#include "TestSupport.h"

#include "msccl/runtime/Executor.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {
struct Result {
  int rc;
  std::string out, err;
};
Result run(std::vector<std::string> args) {
  args.insert(args.begin(), "msccl-run");
  std::vector<const char *> argv;
  for (auto &a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = msccl::run::runDriver(int(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}
std::string plan(const std::string &name) { return msccl::test::plansDir() + "/" + name; }
size_t rows(const std::string &out) {
  size_t n = 0;
  std::istringstream is(out);
  for (std::string line; std::getline(is, line);)
    if (!line.empty() && line[0] != '#' && line.find("skipped") == std::string::npos)
      ++n;
  return n;
}
} // namespace

TEST_CASE("msccl-run with only a plan runs a small checked sweep", "[driver]") {
  Result r = run({plan("ok_allreduce_rre_2.json")});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("#wrong"));
  CHECK_THAT(r.out, Catch::Contains("busbw"));
  CHECK_THAT(r.out, Catch::Contains("all results correct"));
  CHECK(rows(r.out) >= 4);
}

TEST_CASE("msccl-run exits non-zero on wrong results and deadlocks", "[driver]") {
  Result w = run({plan("wrong_allreduce_no_reduce.json"), "--size", "4K", "-n", "1"});
  CHECK(w.rc == 1);
  CHECK_THAT(w.err, Catch::Contains("wrong of"));
  CHECK_THAT(w.out, Catch::Contains("FAILED"));
  Result d = run({plan("deadlock_wait_before_signal.json"), "--size", "4K"});
  CHECK(d.rc == 1);
  CHECK_THAT(d.err, Catch::Contains("deadlock"));
  CHECK_THAT(d.err, Catch::Contains("rank 1 tb 0 op 0 (wait)"));
}

TEST_CASE("msccl-run says why a size is skipped", "[driver]") {
  Result r = run({plan("ok_allreduce_rre_2.json"), "-b", "16", "-e", "64", "-f", "2", "-n", "1"});
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("skipped: size 16 B is not a multiple of max(input_chunks, output_chunks) (2) x "
                                    "buffer_alignment (16)"));
  CHECK(rows(r.out) == 2); // 32 and 64
}

TEST_CASE("msccl-run rejects a reduce op the plan does not perform", "[driver]") {
  Result r = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "-o", "max"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("reduce_op \"sum\", not \"max\""));
  Result ok = run({plan("ok_allgather_put_2.json"), "--size", "4K", "-o", "max", "-d", "int32"});
  CHECK(ok.rc == 0);
}

TEST_CASE("msccl-run --plans picks a fitting plan per size and names it", "[driver]") {
  Result r = run({"--plans", msccl::test::plansDir(), "--collective", "allgather", "--nranks", "2", "-b", "1K",
                  "-e", "4K", "-n", "1"});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("ok_allgather_put_2.json"));
  // Invalid allreduce plans in the folder are skipped with a warning; a valid one runs.
  Result a = run({"--plans", msccl::test::plansDir(), "--collective", "allreduce", "--size", "4K", "-n", "1"});
  CHECK(a.rc == 0);
  CHECK_THAT(a.err, Catch::Contains("skipping"));
  CHECK_THAT(a.out, Catch::Contains("ok_allreduce_glre_2.json"));
  Result none = run({"--plans", msccl::test::plansDir(), "--collective", "alltoall"});
  CHECK(none.rc == 1);
  CHECK_THAT(none.err, Catch::Contains("no plan in"));
}

TEST_CASE("msccl-run reports backends that are not built", "[driver]") {
  Result r = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "--backend", "nosuch"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("no executor backend named 'nosuch'"));
  auto names = msccl::runtime::registeredExecutors();
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) {
    Result c = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "--backend", "cuda"});
    CHECK(c.rc == 1);
    CHECK_THAT(c.err, Catch::Contains("CUDA executor backend is not built"));
  }
}

TEST_CASE("msccl-run writes JSON lines and rejects bad usage", "[driver]") {
  char tmpl[] = "/tmp/msccl-run-test-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::string path = tmpl;
  Result r = run({plan("ok_allreduce_rre_2.json"), "-b", "1K", "-e", "4K", "-n", "1", "--jsonl", path});
  CHECK(r.rc == 0);
  std::ifstream in(path);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    CHECK(j["status"] == "ok");
    CHECK(j["wrong"] == 0);
    CHECK(j["collective"] == "allreduce");
    ++lines;
  }
  CHECK(lines == 2);
  std::remove(path.c_str());
  CHECK(run({plan("ok_allreduce_rre_2.json"), "-d", "float64"}).rc == 2);
  CHECK(run({plan("ok_allreduce_rre_2.json"), "--in-place", "--out-of-place"}).rc == 2);
  CHECK(run({}).rc == 2);
  Result missing = run({"/nonexistent/plan.json"});
  CHECK(missing.rc == 1);
}

TEST_CASE("msccl-run --race-check fails racy plans and names both accesses", "[driver]") {
  // Without the flag the racy plan verifies (the CPU schedule is one legal order).
  Result plain = run({plan("race_two_tbs_no_barrier.json"), "-b", "4K", "-e", "16K"});
  CHECK(plain.rc == 0);
  Result r = run({plan("race_two_tbs_no_barrier.json"), "-b", "4K", "-e", "16K", "--race-check"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("misuse: data races in launch"));
  CHECK_THAT(r.err, Catch::Contains("rank 0 tb 1 op 0 (copy)"));
  CHECK_THAT(r.err, Catch::Contains("rank 0 tb 0 op 0 (copy)"));
  // A race-free plan passes with the checker on.
  Result ok = run({plan("ok_two_tbs_barrier.json"), "-b", "4K", "-e", "16K", "--race-check"});
  CHECK(ok.rc == 0);
  CHECK(run({plan("ok_two_tbs_barrier.json"), "--race-check", "--no-race-check"}).rc == 2);
}
