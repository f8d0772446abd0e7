//===- DriverTest.cpp - msccl-run's driver, called in-process ----------------------------===//
#include "Driver.h"
#include "TestSupport.h"

#include "msccl/Version.h"
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
  // 4097 B does not halve into an allgather's 2 rank blocks; 8194 B does (2 chunks of 4097 B:
  // uneven, as 4097 is no multiple of the plan's 16 B alignment).
  Result r = run({plan("ok_allgather_put_2.json"), "-b", "4097", "-e", "8194", "-f", "2", "-n", "1", "-d", "uint8"});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("skipped: size 4097 B is not a multiple of max(input_chunks, output_chunks) (2) x "
                                    "buffer_alignment (16); nor can it be cut into uneven chunks: 4097 B does not split "
                                    "in the ratio of input_chunks 1 to output_chunks 2"));
  CHECK_THAT(r.out, Catch::Contains("all results correct"));
  CHECK(rows(r.out) == 1); // 8194
}

TEST_CASE("msccl-run runs sizes the plan's chunks do not divide, with uneven chunks", "[driver][uneven]") {
  // 2 ranks, 2 chunks, 16 B alignment: 4 B is one float32 (one chunk empty), 12 B three, 4100 B
  // 1025 (513 + 512); none divides into 2 chunks of a multiple of 16 B.
  for (const char *size : {"4", "12", "40", "4100"}) {
    Result r = run({plan("ok_allreduce_rre_2.json"), "--size", size, "-n", "1"});
    INFO(size << "\n" << r.out << r.err);
    CHECK(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("all results correct"));
  }
  // A size that is not whole elements is refused before anything runs, naming both rules.
  Result bad = run({plan("ok_allreduce_rre_2.json"), "--size", "4102", "-n", "1"});
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Catch::Contains("nor can it be cut into uneven chunks: its allreduce blocks of 4102 B are not "
                                      "whole 4-byte elements"));
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
  // Invalid allreduce plans in the folder are skipped with a warning; a valid one runs, chosen by
  // PlanRegistry's rule for the call's mode (no mode given: in place first, then out of place).
  Result a = run({"--plans", msccl::test::plansDir(), "--collective", "allreduce", "--size", "4K", "-n", "1",
                  "--out-of-place"});
  CHECK(a.rc == 0);
  CHECK_THAT(a.err, Catch::Contains("skipping"));
  CHECK_THAT(a.out, Catch::Contains("ok_allreduce_glre_2.json"));
  Result in = run({"--plans", msccl::test::plansDir(), "--collective", "allreduce", "--size", "4K", "-n", "1"});
  CHECK(in.rc == 0);
  CHECK_THAT(in.out, Catch::Contains("ok_allreduce_rre_2.json"));
  // A size the plan's chunks do not divide runs with uneven chunks.
  Result uneven = run({"--plans", msccl::test::plansDir(), "--collective", "allreduce", "--size", "4100", "-n", "1",
                       "--out-of-place"});
  CHECK(uneven.rc == 0);
  CHECK_THAT(uneven.out, Catch::Contains("ok_allreduce_glre_2.json"));
  CHECK_THAT(uneven.out, Catch::Contains("all results correct"));
  // A size no plan splits: the row is skipped with the registry's explanation.
  Result odd = run({"--plans", msccl::test::plansDir(), "--collective", "allgather", "--nranks", "2", "--size", "4097",
                    "-n", "1", "-d", "uint8"});
  CHECK_THAT(odd.out, Catch::Contains("skipped"));
  CHECK_THAT(odd.out + odd.err, Catch::Contains("not eligible: cannot run 4097 bytes"));
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
  // A race-free plan (entry and exit handshakes: mscclc proved it) passes with the checker on.
  Result ok = run({"stdlib:allgather/allpairs", "-D", "ranks=2", "-b", "4K", "-e", "16K", "--race-check"});
  CHECK(ok.rc == 0);
  // A plan without handshakes races with its peers' kernel start and end (the launch model).
  Result noHandshake = run({plan("ok_two_tbs_barrier.json"), "-b", "4K", "-e", "16K", "--race-check"});
  CHECK(noHandshake.rc == 1);
  CHECK_THAT(noHandshake.err, Catch::Contains("while the host (rank 1's kernel start: the caller may write its "
                                              "buffers until then) wrote it with no entry handshake"));
  CHECK_THAT(noHandshake.err, Catch::Contains("rank 0 tb 0 op 2 (put) at gpus[0].threadblocks[0].ops[2] writes "
                                              "rank 1's output [0, 2048)"));
  CHECK(run({plan("ok_two_tbs_barrier.json"), "--race-check", "--no-race-check"}).rc == 2);
}

TEST_CASE("msccl-run --race-check finds the races of in-place AllGathers with a handshake removed", "[driver]") {
  // tests/runtime/plans-launch (RaceTest.cpp): the 4-rank in-place allpairs AllGather, whose rank r's
  // input is block r of its output, and mutants of it. Without the checker each mutant's CPU
  // schedule gives the right result.
  const std::string dir = msccl::test::plansDir() + "-launch/";
  char tmpl[] = "/tmp/msccl-run-test-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string jsonl = tmpl;
  Result ok =
      run({dir + "launch_ok_inplace_allgather_4.json", "-b", "1K", "-e", "4K", "--race-check", "--jsonl", jsonl});
  INFO(ok.out << ok.err);
  CHECK(ok.rc == 0);
  CHECK_THAT(ok.out, Catch::Contains("all results correct, no data race (--race-check)"));
  std::ifstream in(jsonl);
  size_t lines = 0, inPlaceRows = 0;
  for (std::string line; std::getline(in, line); ++lines)
    inPlaceRows += nlohmann::json::parse(line)["inplace"] == true; // the plan's own mode
  CHECK(lines >= 2);
  CHECK(inPlaceRows == lines);
  std::remove(jsonl.c_str());
  for (const char *mutant : {"launch_race_inplace_4_rank0_entry.json", "launch_race_inplace_4_rank2_entry.json",
                             "launch_race_inplace_4_rank0_exit.json"}) {
    INFO(mutant);
    CHECK(run({dir + mutant, "-b", "1K", "-e", "1K"}).rc == 0);
    Result r = run({dir + mutant, "-b", "1K", "-e", "1K", "--race-check"});
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("misuse: data races in launch 1: 3 racing access pair(s)"));
  }
  // No peer waits for rank 0's entry signal: its puts land in rank 0's output outside block 0 (rank
  // 0's input, at the output's own address) while rank 0's caller may still write there.
  Result entry = run({dir + "launch_race_inplace_4_rank0_entry.json", "-b", "1K", "-e", "1K", "--race-check"});
  CHECK_THAT(entry.err, Catch::Contains("rank 2 tb 0 op 3 (put) at gpus[2].threadblocks[0].ops[3] writes rank 0's "
                                        "output [512, 768) while the host (rank 0's kernel start: the caller may "
                                        "write its buffers until then) wrote it with no entry handshake"));
  // Rank 2's input is block 2: the races are on both sides of it.
  Result middle = run({dir + "launch_race_inplace_4_rank2_entry.json", "-b", "1K", "-e", "1K", "--race-check"});
  CHECK_THAT(middle.err, Catch::Contains("writes rank 2's output [0, 256) while the host (rank 2's kernel start"));
  CHECK_THAT(middle.err, Catch::Contains("writes rank 2's output [768, 1024) while the host (rank 2's kernel start"));
  // Rank 0's kernel ends before its peers' puts are known to have landed.
  Result exit = run({dir + "launch_race_inplace_4_rank0_exit.json", "-b", "1K", "-e", "1K", "--race-check"});
  CHECK_THAT(exit.err, Catch::Contains("the host (rank 0's kernel end: the caller reads the result then) reads rank "
                                       "0's output [256, 512) while rank 1 tb 0 op 3 (put)"));
}

namespace {
/// A stream buffer that remembers how much had been written at each flush.
struct FlushLog : std::stringbuf {
  std::vector<size_t> flushedAt;
  int sync() override {
    flushedAt.push_back(str().size());
    return std::stringbuf::sync();
  }
};

std::vector<nlohmann::json> readJsonl(const std::string &path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    rows.push_back(nlohmann::json::parse(line));
  return rows;
}

std::string tempPath(const char *suffix) {
  char tmpl[] = "/tmp/msccl-run-test-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::remove(tmpl);
  return std::string(tmpl) + suffix;
}
} // namespace

TEST_CASE("msccl-run flushes every row as it prints it", "[driver]") {
  const char *args[] = {"msccl-run", nullptr, "-b", "1K", "-e", "16K", "-f", "2", "-n", "1"};
  std::string p = plan("ok_allreduce_rre_2.json");
  args[1] = p.c_str();
  FlushLog log;
  std::ostream out(&log);
  std::ostringstream err;
  REQUIRE(msccl::run::runDriver(10, args, out, err) == 0);
  // Each row ends where a flush happened, so a pipe sees it before the next size runs.
  std::string text = log.str();
  size_t rowsSeen = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos) + 1;
    if (text[pos] != '#') {
      ++rowsSeen;
      CHECK(std::count(log.flushedAt.begin(), log.flushedAt.end(), end) >= 1);
    }
    pos = end;
  }
  CHECK(rowsSeen == 5);
}

TEST_CASE("msccl-run validates a plan once, before the sweep", "[driver]") {
  Result r = run({plan("invalid_peer.json"), "-b", "1K", "-e", "16K", "-f", "2"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("invalid plan"));
  // One report, not one per size, and no table.
  size_t first = r.err.find("invalid plan");
  CHECK(r.err.find("invalid plan", first + 1) == std::string::npos);
  CHECK(rows(r.out) == 0);
}

TEST_CASE("msccl-run prints progress on stderr only for long runs", "[driver]") {
  Result quiet = run({plan("ok_allreduce_rre_2.json"), "-b", "1K", "-e", "4K", "-f", "2", "-n", "1"});
  CHECK(quiet.rc == 0);
  CHECK_THAT(quiet.err, !Catch::Contains("# msccl-run: size"));
  // A threshold of 0 s makes every run "long".
  Result loud = run({plan("ok_allreduce_rre_2.json"), "-b", "1K", "-e", "4K", "-f", "2", "-n", "1",
                     "--progress-after", "0"});
  CHECK(loud.rc == 0);
  CHECK_THAT(loud.err, Catch::Contains("# msccl-run: size 1024 B (1 of 3)"));
  CHECK_THAT(loud.err, Catch::Contains("# msccl-run: size 4096 B (3 of 3)"));
  CHECK_THAT(loud.out, !Catch::Contains("msccl-run: size")); // never mixed into the table
}

TEST_CASE("msccl-run --version prints the project version", "[driver]") {
  Result r = run({"--version"});
  CHECK(r.rc == 0);
  CHECK(r.out == std::string("msccl-run (msccl) ") + MSCCL_VERSION + "\n");
  CHECK(std::string(MSCCL_VERSION).find('.') != std::string::npos);
}

TEST_CASE("msccl-run --jsonl rows have every field, also for skipped sizes", "[driver]") {
  std::string path = tempPath(".jsonl");
  // 4097 B does not halve into the allgather's 2 rank blocks: skipped.
  Result r = run({plan("ok_allgather_put_2.json"), "-b", "4097", "-e", "16388", "-f", "2", "-n", "1", "-d", "uint8",
                  "--jsonl", path});
  CHECK(r.rc == 0);
  auto rows = readJsonl(path);
  std::remove(path.c_str());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["status"] == "skipped");
  CHECK(rows[1]["status"] == "ok");
  for (auto &j : rows) {
    INFO(j.dump());
    CHECK(j.size() == rows[1].size()); // the same keys
    CHECK(j["plan"] == "ok_allgather_put_2.json");
    CHECK(j["collective"] == "allgather");
    CHECK(j["nranks"] == 2);
    CHECK(j["redop"].is_null()); // allgather does not reduce
    CHECK(j.contains("time_us"));
    CHECK(j.contains("message"));
  }
  CHECK(rows[0]["time_us"].is_null());
  CHECK(rows[0]["wrong"].is_null());
  CHECK_THAT(rows[0]["message"].get<std::string>(), Catch::Contains("not a multiple"));
}

TEST_CASE("msccl-run shows a reduction op only for reducing collectives", "[driver]") {
  Result ar = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "-n", "1"});
  CHECK_THAT(ar.out, Catch::Contains("     sum  "));
  Result ag = run({plan("ok_allgather_put_2.json"), "--size", "4K", "-n", "1"});
  CHECK(ag.rc == 0);
  CHECK_THAT(ag.out, Catch::Contains("    none  "));
  CHECK_THAT(ag.out, !Catch::Contains(" sum "));
}

TEST_CASE("msccl-run -e alone sweeps up to it", "[driver]") {
  Result r = run({plan("ok_allreduce_rre_2.json"), "-e", "64K", "-n", "1"});
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(rows(r.out) == 3); // 4K, 16K, 64K
  CHECK_THAT(r.out, Catch::Contains("       65536  "));
  Result small = run({plan("ok_allreduce_rre_2.json"), "-e", "1K", "-n", "1"});
  INFO(small.out << small.err);
  CHECK(small.rc == 0);
  CHECK(rows(small.out) == 1);
  CHECK_THAT(small.out, Catch::Contains("        1024  "));
}

TEST_CASE("msccl-run accepts nccl-tests' -c 0|1", "[driver]") {
  Result on = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "-n", "1", "-c", "1"});
  CHECK(on.rc == 0);
  CHECK_THAT(on.out, Catch::Contains("check on"));
  Result off = run({plan("wrong_allreduce_no_reduce.json"), "--size", "4K", "-n", "1", "-c", "0"});
  CHECK(off.rc == 0); // not verified, so not wrong
  CHECK_THAT(off.out, Catch::Contains("check off"));
  CHECK_THAT(off.out, Catch::Contains("N/A"));
  CHECK(run({plan("ok_allreduce_rre_2.json"), "-c", "2"}).rc == 2);
  CHECK(run({plan("ok_allreduce_rre_2.json"), "-c", "1", "--no-check"}).rc == 2);
}

TEST_CASE("msccl-run compiles .msccl and stdlib:NAME inputs in-process", "[driver]") {
  Result lib = run({"stdlib:allreduce/ring", "-D", "ranks=4", "--size", "64K", "-n", "1"});
  INFO(lib.out << lib.err);
  CHECK(lib.rc == 0);
  CHECK_THAT(lib.out, Catch::Contains("4 ranks"));
  CHECK_THAT(lib.out, Catch::Contains("all results correct"));
  CHECK(rows(lib.out) == 1);

  std::string src = tempPath(".msccl");
  {
    std::ofstream f(src);
    f << "param chunks = 1\n"
         "program local(collective = AllReduce(1, chunks, false)) {\n"
         "  let r = Rank(0)\n"
         "  r.copy(r.get_output_buffer()[0 : chunks], r.get_input_buffer()[0 : chunks], tb = 0)\n"
         "}\n";
  }
  Result file = run({src, "-Dchunks=3", "--size", "3K", "-n", "1"});
  INFO(file.out << file.err);
  CHECK(file.rc == 0);
  CHECK_THAT(file.out, Catch::Contains("1 ranks"));
  Result notDivisible = run({src, "--size", "3074", "-n", "1", "-Dchunks=5"});
  CHECK(notDivisible.rc == 1); // the -D reached the compiler: 3074 B is neither 5 chunks x 16 nor whole float32s
  CHECK_THAT(notDivisible.out, Catch::Contains("not a multiple of max(input_chunks, output_chunks) (5)"));
  std::remove(src.c_str());

  Result typo = run({"stdlib:allreduce/rign", "-D", "ranks=4"});
  CHECK(typo.rc == 1);
  CHECK_THAT(typo.err, Catch::Contains("did you mean `allreduce/ring`?"));
  Result bad = run({"stdlib:allreduce/ring", "-D", "ranks=1"});
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Contains("needs at least 2 ranks"));
  CHECK(run({plan("ok_allreduce_rre_2.json"), "-D", "ranks=4"}).rc == 2); // -D needs a program
}

TEST_CASE("msccl-run runs share no options", "[driver]") {
  Result a = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "-n", "1", "-d", "int32", "-o", "sum",
                  "--progress-after", "0"});
  CHECK(a.rc == 0);
  CHECK_THAT(a.out, Catch::Contains("data type int32"));
  Result b = run({plan("ok_allreduce_rre_2.json"), "--size", "4K", "-n", "1"});
  CHECK(b.rc == 0);
  CHECK_THAT(b.out, Catch::Contains("data type float32"));
  CHECK_THAT(b.err, !Catch::Contains("# msccl-run: size"));
  // The options struct runs without a command line.
  msccl::run::Options o;
  o.input = plan("ok_allreduce_rre_2.json");
  o.size = 4096;
  o.iterations = 1;
  std::ostringstream out, err;
  CHECK(msccl::run::runDriver(o, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("all results correct"));
}
