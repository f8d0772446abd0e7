// msccl-tune in-process (tools/msccl-tune/Tune.h): the candidates of a collective, the envelope on
// the model against the plans at their defaults and against the lower bound, the ranges, and the
// plan directory as PlanRegistry loads it. Every figure here is model output.
#include "Tune.h"

#include "msccl/msccl.hpp"
#include "msccl/runtime/Collective.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace msccl;
using namespace msccl::tools::tune;
namespace fs = std::filesystem;

namespace {

const std::string kStdlib = MSCCL_STDLIB_SOURCE_DIR;

TuneOptions quickOptions(uint64_t maxBytes) {
  TuneOptions o;
  o.stdlibDir = kStdlib;
  o.quick = true;
  o.minBytes = 1024;
  o.maxBytes = maxBytes;
  return o;
}

/// Every candidate's predicted time is at least the lower bound, and the winner is at least as
/// fast as every candidate at its defaults.
void checkEnvelope(const Envelope &e) {
  REQUIRE_FALSE(e.sizes.empty());
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    INFO(e.collective << " at " << e.sizes[i] << " B");
    REQUIRE(e.winner[i] >= 0);
    const double best = e.candidates[size_t(e.winner[i])].seconds[i];
    CHECK(e.bound[i].seconds > 0);
    for (const Candidate &c : e.candidates) {
      if (!c.plan || c.seconds[i] < 0)
        continue;
      INFO(c.label());
      CHECK(c.seconds[i] >= e.bound[i].seconds * (1 - 1e-9));
      if (c.isDefault)
        CHECK(best <= c.seconds[i] * (1 + 1e-9));
    }
  }
}

} // namespace

TEST_CASE("candidates: every stdlib algorithm of the collective, defaults first, the grid after", "[tune]") {
  std::vector<Candidate> one = candidatesFor("allreduce", 8, 8, kStdlib, false);
  std::set<std::string> algos, defaults;
  for (const Candidate &c : one) {
    algos.insert(c.algorithm);
    if (c.isDefault)
      defaults.insert(c.algorithm);
  }
  CHECK(algos.count("allreduce/ring"));
  CHECK(algos.count("allreduce/nvls"));
  CHECK(algos.count("allreduce/twod")); // 8 ranks as 2 x 4 ... of a grid near square
  CHECK_FALSE(algos.count("allreduce/hierarchical")); // multi-node only
  CHECK(defaults == algos);
  for (const Candidate &c : one)
    if (c.algorithm == "allreduce/ring" && !c.isDefault)
      CHECK_THAT(c.label(), Catch::Contains("instances=") && Catch::Contains("chunks="));
  std::vector<Candidate> two = candidatesFor("allreduce", 16, 8, kStdlib, true);
  bool hierarchical = false;
  for (const Candidate &c : two)
    hierarchical = hierarchical || c.algorithm == "allreduce/hierarchical";
  CHECK(hierarchical);
  for (const Candidate &c : two)
    CHECK_THAT(c.label(), !Catch::Contains("chunks=")); // --quick
}

TEST_CASE("the envelope beats every plan at its defaults and never beats the lower bound", "[tune]") {
  const auto topo = runtime::sim::loadTopology("hgx-h100");
  for (const char *c : {"allreduce", "allgather"})
    for (bool inPlace : {false, true})
      checkEnvelope(tuneCollective(c, inPlace, quickOptions(16 << 20), topo, 8, 8));
  const auto two = runtime::sim::loadTopology("2x-hgx-h100");
  checkEnvelope(tuneCollective("allreduce", false, quickOptions(4 << 20), two, 16, 8));
  // In place and out of place are tuned apart; at 1 GiB the NVLS AllReduce wins both, out of
  // place through two switch channels (reduce the inputs, multicast into the outputs) as fast as
  // in place (model output; it used to copy its input first and lose to all-pairs).
  TuneOptions big = quickOptions(uint64_t(1) << 30);
  big.minBytes = uint64_t(1) << 30;
  Envelope ip = tuneCollective("allreduce", true, big, topo, 8, 8), oop = tuneCollective("allreduce", false, big, topo, 8, 8);
  REQUIRE(ip.winner[0] >= 0);
  REQUIRE(oop.winner[0] >= 0);
  CHECK(ip.candidates[size_t(ip.winner[0])].algorithm == "allreduce/nvls");
  CHECK(oop.candidates[size_t(oop.winner[0])].algorithm == "allreduce/nvls");
  CHECK(oop.candidates[size_t(oop.winner[0])].seconds[0] <=
        1.01 * ip.candidates[size_t(ip.winner[0])].seconds[0]);
}

TEST_CASE("the model's search prunes what cannot win and finds what the exhaustive search finds", "[tune][slow]") {
  // Pruned: candidates already slower than a size's fastest by more than the 1% tie at a
  // smaller size (the model's time does not fall with size). Same winners, best defaults,
  // fallback and winner times as replaying everything, on machines of three kinds.
  struct Case {
    const char *topology, *collective;
    uint32_t ranks, perNode;
    bool quick;
  };
  const Case cases[] = {{"hgx-h100", "reducescatter", 8, 8, true},
                        {"pcie-tree", "allgather", 8, 8, true},
                        {"2x-hgx-h100", "allgather", 16, 8, true}};
  size_t prunedAll = 0;
  for (const Case &k : cases) {
    const auto topo = runtime::sim::loadTopology(k.topology);
    TuneOptions o = quickOptions(64 << 20);
    o.quick = k.quick;
    o.synth = false;
    TuneOptions ex = o;
    ex.exhaustive = true;
    for (bool inPlace : {false, true}) {
      INFO(k.topology << " " << k.collective << (inPlace ? " in place" : ""));
      const Envelope a = tuneCollective(k.collective, inPlace, o, topo, k.ranks, k.perNode);
      const Envelope b = tuneCollective(k.collective, inPlace, ex, topo, k.ranks, k.perNode);
      CHECK(a.monotone);
      CHECK(b.pruned == 0);
      CHECK(a.winner == b.winner);
      CHECK(a.bestDefault == b.bestDefault);
      CHECK(a.fallback == b.fallback);
      for (size_t i = 0; i < a.sizes.size(); ++i)
        if (a.winner[i] >= 0)
          CHECK(a.candidates[size_t(a.winner[i])].seconds[i] == b.candidates[size_t(b.winner[i])].seconds[i]);
      // What was pruned could not have won: slower than 1.01 x the fastest in the exhaustive run.
      for (size_t c = 0; c < a.candidates.size(); ++c)
        for (size_t i = 0; i < a.sizes.size(); ++i)
          if (a.candidates[c].plan && a.candidates[c].seconds[i] < 0 && b.candidates[c].seconds[i] >= 0)
            CHECK(b.candidates[c].seconds[i] > 1.01 * b.candidates[size_t(b.winner[i])].seconds[i] * (1 - 1e-12));
      prunedAll += a.pruned;
      checkEnvelope(a);
    }
  }
  CHECK(prunedAll > 0); // the search does prune
}

TEST_CASE("collectives cut per rank are timed at nccl-tests' counts, so rank counts that divide no power of two get winners", "[tune]") {
  // 6 ranks (as 72 on gb200-nvl72) divide no power of two: nccl-tests times floor(count / ranks)
  // elements per rank, and so does the tuner; AllReduce's sizes stay as they are.
  const auto topo = runtime::sim::loadTopology("hgx-h100");
  for (const char *c : {"allgather", "reducescatter", "alltoall", "allreduce"}) {
    const Envelope e = tuneCollective(c, false, quickOptions(64 << 10), topo, 6, 6);
    INFO(c);
    REQUIRE(e.runSizes.size() == e.sizes.size());
    checkEnvelope(e); // a winner at every size, no faster than the bound (computed at the run size)
    for (size_t i = 0; i < e.sizes.size(); ++i) {
      if (std::string(c) == "allreduce") {
        CHECK(e.runSizes[i] == e.sizes[i]);
        continue;
      }
      CHECK(e.runSizes[i] % 24 == 0); // 6 ranks x 4-byte float32
      CHECK(e.runSizes[i] <= e.sizes[i]);
      CHECK(e.runSizes[i] + 24 > e.sizes[i]);
      // The winner runs the size a call of that count makes (the registry's test).
      CHECK(runtime::messageSizesFor(*e.candidates[size_t(e.winner[i])].plan, e.runSizes[i], 4, nullptr).has_value());
    }
  }
}

TEST_CASE("the plan directory: PlanRegistry picks each size's winner", "[tune]") {
  const auto topo = runtime::sim::loadTopology("hgx-h100");
  TuneOptions o = quickOptions(8 << 20);
  std::vector<Envelope> envs{tuneCollective("allreduce", false, o, topo, 8, 8),
                             tuneCollective("allreduce", true, o, topo, 8, 8)};
  size_t entries = 0;
  for (const Envelope &e : envs) {
    std::vector<Range> ranges = rangesOf(e);
    REQUIRE_FALSE(ranges.empty());
    CHECK(ranges.front().minBytes == 0);
    CHECK(ranges.back().maxBytes == UINT64_MAX);
    for (size_t k = 1; k < ranges.size(); ++k) {
      CHECK(ranges[k].minBytes == ranges[k - 1].maxBytes + 1);
      CHECK(ranges[k].candidate != ranges[k - 1].candidate);
    }
    entries += ranges.size() + (e.fallback >= 0);
  }
  const fs::path dir = fs::temp_directory_path() / ("msccl-tune-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  writePlanDirectory(dir.string(), envs, o, topo, 8, 8);
  PlanRegistry reg;
  CHECK(reg.addDirectory(dir.string()) == entries);
  for (const Envelope &e : envs)
    for (size_t i = 0; i < e.sizes.size(); ++i) {
      SelectRequest req;
      req.collective = "allreduce";
      req.worldSize = 8;
      req.ranksPerNode = 8;
      req.messageBytes = e.sizes[i] + 64 * (i % 2); // a size between two powers of two too
      req.inPlace = e.inPlace;
      const RegisteredPlan *p = reg.select(req);
      REQUIRE(p);
      const std::string stem = e.candidates[size_t(e.winner[i])].fileStem() + (e.inPlace ? "_ip" : "");
      CHECK_THAT(p->info.name, Catch::StartsWith(stem));
    }
  // Sizes the winners cannot run (LL plans need 8-byte blocks, 8 ranks split 16004 bytes into
  // 2000.5): the fallback entry takes them, in and out of place; the winners keep their sizes.
  for (const Envelope &e : envs) {
    REQUIRE(e.fallback >= 0);
    for (uint64_t bytes : {uint64_t(12), uint64_t(16004), uint64_t(1000004), uint64_t(3)}) {
      SelectRequest req;
      req.collective = "allreduce";
      req.worldSize = 8;
      req.ranksPerNode = 8;
      req.messageBytes = bytes;
      req.inPlace = e.inPlace;
      const RegisteredPlan *p = reg.select(req);
      INFO(bytes << " bytes, in place " << e.inPlace << ":\n" << reg.explainText(req));
      REQUIRE(p);
      CHECK(runtime::messageSizesFor(*p->plan, bytes, nullptr).has_value());
    }
  }
  std::ifstream svg(dir / "tune-allreduce.svg");
  std::stringstream text;
  text << svg.rdbuf();
  CHECK_THAT(text.str(), Catch::StartsWith("<svg") && Catch::Contains("model output") && Catch::EndsWith("</svg>\n"));
  fs::remove_all(dir);
}

TEST_CASE("msccl-tune's command line", "[tune]") {
  std::ostringstream out, err;
  const char *bad[] = {"msccl-tune", "--min-bytes", "9K", "--max-bytes", "1K"};
  CHECK(runTune(5, bad, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--min-bytes"));
  const char *unknown[] = {"msccl-tune", "--collective", "allsum", "--quick"};
  CHECK(runTune(4, unknown, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("unknown collective allsum"));
  const char *topo[] = {"msccl-tune", "--topology", "no-such-machine"};
  CHECK(runTune(3, topo, out, err) == 1);
  std::ostringstream ok, okErr;
  const char *run[] = {"msccl-tune", "--collective", "alltoall", "--max-bytes", "64K", "--quick", "--stdlib",
                       kStdlib.c_str()};
  CHECK(runTune(8, run, ok, okErr) == 0);
  CHECK_THAT(ok.str(), Catch::Contains("model output") && Catch::Contains("alltoall/allpairs"));
  // --backend: the candidates run (and are checked) on that executor; the times are measured.
  const char *cpu[] = {"msccl-tune", "--collective", "allgather", "--min-bytes", "4K", "--max-bytes", "8K", "--quick",
                       "--backend", "cpu", "--stdlib", kStdlib.c_str()};
  std::ostringstream cOut, cErr;
  CHECK(runTune(12, cpu, cOut, cErr) == 0);
  CHECK_THAT(cOut.str(), Catch::Contains("measured on backend cpu") && Catch::Contains("allgather/"));
  const char *noSuch[] = {"msccl-tune", "--backend", "abacus"};
  CHECK(runTune(3, noSuch, cOut, cErr) == 2);
  CHECK_THAT(cErr.str(), Catch::Contains("--backend abacus"));
  // --install writes where libmsccl_nccl.so looks when MSCCL_PLANS is unset.
  const fs::path dir = fs::temp_directory_path() / ("msccl-tune-install-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("MSCCL_INSTALLED_PLANS", dir.c_str(), 1);
  CHECK(installedPlansDir() == dir.string());
  const char *install[] = {"msccl-tune", "--collective", "alltoall", "--max-bytes", "8K", "--quick", "--install",
                           "--stdlib", kStdlib.c_str()};
  std::ostringstream iOut, iErr;
  CHECK(runTune(9, install, iOut, iErr) == 0);
  CHECK(fs::exists(dir / "msccl-plans.json"));
  PlanRegistry reg;
  CHECK(reg.addDirectory(dir.string()) > 0);
  const char *both[] = {"msccl-tune", "--install", "-o", "x"};
  CHECK(runTune(4, both, iOut, iErr) == 2);
  ::unsetenv("MSCCL_INSTALLED_PLANS");
  fs::remove_all(dir);
}

TEST_CASE("a program's `// tune:` comment sets its own grid values for a param", "[tune]") {
  // A stand-in stdlib: chunks with its own values (replacing the tuner's 1, 4, 16), a param the
  // tuner's grid lacks with values (a new axis), instances with the tuner's grid.
  const fs::path dir = fs::temp_directory_path() / ("msccl-tune-grid-" + std::to_string(::getpid()));
  fs::create_directories(dir / "allgather");
  std::ofstream(dir / "allgather" / "demo.msccl") << "param ranks = 8\n"
                                                     "param chunks = 1  // depth; tune: 2, 32\n"
                                                     "param depth = 3   // tune: 5,6\n"
                                                     "param instances = 1\n"
                                                     "program demo(collective = AllGather(ranks, chunks, false)) {}\n";
  std::vector<Candidate> cs = candidatesFor("allgather", 8, 8, dir.string(), false);
  std::set<std::string> labels;
  for (const Candidate &c : cs)
    labels.insert(c.label());
  CHECK(cs.size() == 1 + 4 * 2 * 2); // the default, then instances x chunks x depth
  CHECK(labels.count("allgather/demo"));
  CHECK(labels.count("allgather/demo instances=8 chunks=32 depth=6"));
  CHECK(labels.count("allgather/demo instances=1 chunks=2 depth=5"));
  for (const std::string &l : labels)
    CHECK_THAT(l, !Catch::Contains("chunks=4") && !Catch::Contains("chunks=16"));
  // --quick keeps only the instances axis.
  CHECK(candidatesFor("allgather", 8, 8, dir.string(), true).size() == 1 + 4);
  fs::remove_all(dir);
  // The stdlib's hierarchical NVLS AllReduce asks for deeper pipelines than the tuner's grid.
  bool deep = false;
  for (const Candidate &c : candidatesFor("allreduce", 16, 8, kStdlib, false))
    deep = deep || (c.algorithm == "allreduce/hierarchical_nvls" && c.label().find("chunks=64") != std::string::npos);
  CHECK(deep);
}

TEST_CASE("--target msccl keeps candidates over MSCCL++'s per-threadblock limits", "[tune]") {
  // A 16-chunk pipeline of the NVLS hierarchical AllReduce has 71 ops on a threadblock: over
  // MSCCL++'s 64 (left out by default, with the reason), within this project's executors'.
  Candidate c;
  c.algorithm = "allreduce/hierarchical_nvls";
  c.hasInplaceParam = true;
  c.defines = {{"ranks", "16"}, {"ranks_per_node", "8"}, {"chunks", "16"}, {"inplace", "false"}};
  std::string why;
  CHECK_FALSE(compileCandidate(c, kStdlib, false, why));
  CHECK_THAT(why, Catch::Contains("exceed the executor limit of 64"));
  why.clear();
  auto plan = compileCandidate(c, kStdlib, false, why, driver::Target::Msccl);
  REQUIRE(plan);
  CHECK(why.empty());
  size_t most = 0;
  for (const plan::Threadblock &tb : plan->gpus[0].threadblocks)
    most = std::max(most, tb.ops.size());
  CHECK(most > 64);
  // The command line: --target takes mscclpp or msccl.
  std::ostringstream out, err;
  const char *bad[] = {"msccl-tune", "--target", "nccl"};
  CHECK(runTune(3, bad, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--target: nccl"));
}

TEST_CASE("the model's candidates replay on several threads with the same result", "[tune]") {
  const runtime::sim::Topology topo = runtime::sim::loadTopology("pcie-tree");
  TuneOptions one = quickOptions(64 << 20), three = one;
  one.jobs = 1;
  three.jobs = 3;
  const Envelope a = tuneCollective("allgather", false, one, topo, 8, 8);
  const Envelope b = tuneCollective("allgather", false, three, topo, 8, 8);
  REQUIRE(a.candidates.size() == b.candidates.size());
  CHECK(a.winner == b.winner);
  for (size_t k = 0; k < a.candidates.size(); ++k) {
    INFO(a.candidates[k].label());
    CHECK(a.candidates[k].seconds == b.candidates[k].seconds);
    CHECK(a.candidates[k].leftOut == b.candidates[k].leftOut);
  }
  // The synthesized program is among them and wins the large sizes (model output).
  bool synth = false;
  for (const Candidate &c : a.candidates)
    synth = synth || (c.algorithm == "synth/paths" && c.plan);
  CHECK(synth);
  CHECK(a.candidates[size_t(a.winner.back())].algorithm == "synth/paths");
}

TEST_CASE("a plan the topology cannot run is left out before the verifier runs; the rest are proven", "[tune]") {
  // A program the verifier refuses (every rank puts into every peer's output with no handshake)
  // whose memory channels also cross nodes on 2x-hgx-h100: the topology's reason is given, which
  // means the plan was screened on the model before the verifier (the costly step) ran. On one
  // node the same program reaches the verifier, which leaves it out with its race.
  const fs::path dir = fs::temp_directory_path() / ("msccl-tune-screen-" + std::to_string(getpid()));
  fs::create_directories(dir / "allgather");
  {
    std::ofstream f(dir / "allgather" / "unsynced.msccl");
    f << "param ranks = 16\nparam instances = 1\n"
         "program allgather_unsynced(collective = AllGather(ranks, 1, false), instances = instances) {\n"
         "  for r in range(ranks) {\n"
         "    for p in range(ranks) {\n"
         "      if p != r {\n"
         "        let ch = MemoryChannel(p, r)\n"
         "        ch.put(Rank(p).get_output_buffer()[r : r + 1], Rank(r).get_input_buffer()[0 : 1], tb = p)\n"
         "      }\n"
         "    }\n"
         "    Rank(r).copy(Rank(r).get_output_buffer()[r : r + 1], Rank(r).get_input_buffer()[0 : 1], tb = r)\n"
         "  }\n"
         "}\n";
  }
  TuneOptions o = quickOptions(1 << 20);
  o.stdlibDir = dir.string();
  o.synth = false;
  const Envelope across = tuneCollective("allgather", false, o, runtime::sim::loadTopology("2x-hgx-h100"), 16, 8);
  REQUIRE_FALSE(across.candidates.empty());
  for (const Candidate &c : across.candidates) { // the grid's instances=1 is the default's plan
    INFO(c.label());
    CHECK_FALSE(c.plan);
    if (c.leftOut != "the same plan as allgather/unsynced")
      CHECK_THAT(c.leftOut, Catch::StartsWith("the topology cannot run it: ") && Catch::Contains("crosses nodes"));
  }
  CHECK_THAT(across.candidates[0].leftOut, Catch::StartsWith("the topology cannot run it: "));
  const Envelope one = tuneCollective("allgather", false, o, runtime::sim::loadTopology("hgx-h100"), 8, 8);
  REQUIRE_FALSE(one.candidates.empty());
  CHECK_FALSE(one.candidates[0].plan);
  CHECK_THAT(one.candidates[0].leftOut, Catch::Contains("race"));
  for (const Candidate &c : one.candidates) // the grid (instances) is refused too
    CHECK_FALSE(c.plan);
  fs::remove_all(dir);
}
