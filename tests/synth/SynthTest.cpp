// msccl-synth in-process (tools/msccl-synth/Synth.h) and the graph-shaped topologies it packs:
// the arborescence and path oracles against brute force, fabric routes and the min-cut bound
// against closed forms, topology errors with their JSON paths, and the synthesized programs on
// the PCIe tree and the 4x4 torus against the lower bound and every stdlib algorithm at 1 GiB.
// Every time here is model output.
#include "Synth.h"
#include "Tune.h"

#include "msccl/runtime/Collective.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace msccl;
using namespace msccl::tools::synth;
namespace sim = msccl::runtime::sim;

namespace {

const std::string kStdlib = MSCCL_STDLIB_SOURCE_DIR;

double treeCost(uint32_t n, const std::vector<int> &parent, const std::vector<double> &cost) {
  double c = 0;
  for (uint32_t v = 0; v < n; ++v)
    if (parent[v] >= 0)
      c += cost[uint32_t(parent[v]) * n + v];
  return c;
}

/// Whether `parent` is a spanning arborescence rooted at `root`.
bool spans(uint32_t n, uint32_t root, const std::vector<int> &parent) {
  if (parent.size() != n || parent[root] != -1)
    return false;
  for (uint32_t v = 0; v < n; ++v) {
    int x = int(v);
    for (uint32_t s = 0; s <= n && x != int(root); ++s)
      x = x < 0 ? -2 : parent[uint32_t(x)];
    if (x != int(root))
      return false;
  }
  return true;
}

std::vector<double> randomCosts(uint32_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<double> u(1, 100);
  std::vector<double> c(size_t(n) * n);
  for (double &x : c)
    x = u(rng);
  return c;
}

std::string names(const sim::Topology &t, const std::vector<uint32_t> &route) {
  std::string s;
  for (uint32_t d : route)
    s += (s.empty() ? "" : " ") + t.fabric.linkName(d);
  return s;
}

} // namespace

TEST_CASE("minArborescence is the cheapest spanning arborescence (brute force, n = 5)", "[synth]") {
  std::mt19937 rng(7);
  const uint32_t n = 5;
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<double> cost = randomCosts(n, rng);
    const uint32_t root = uint32_t(trial) % n;
    std::vector<int> got = minArborescence(n, root, cost);
    REQUIRE(spans(n, root, got));
    // Every parent choice of the n-1 other vertices (4^4).
    double best = 1e300;
    std::vector<int> parent(n, -1);
    std::vector<uint32_t> others;
    for (uint32_t v = 0; v < n; ++v)
      if (v != root)
        others.push_back(v);
    for (uint32_t code = 0; code < 256; ++code) {
      uint32_t c = code;
      for (uint32_t v : others) {
        uint32_t pick = c % 4;
        c /= 4;
        uint32_t p = pick >= v ? pick + 1 : pick; // any vertex but v
        parent[v] = int(p);
      }
      if (spans(n, root, parent))
        best = std::min(best, treeCost(n, parent, cost));
    }
    CHECK(treeCost(n, got, cost) == Approx(best).epsilon(1e-12));
  }
}

TEST_CASE("minCostPath: a spanning path from the root, the cheapest up to 8 ranks", "[synth]") {
  std::mt19937 rng(11);
  const uint32_t n = GENERATE(6u, 8u);
  const int trials = 30;
  for (int trial = 0; trial < trials; ++trial) {
    const std::vector<double> cost = randomCosts(n, rng);
    std::vector<int> got = minCostPath(n, 0, cost);
    REQUIRE(spans(n, 0, got));
    std::vector<int> children(n, 0);
    for (uint32_t v = 0; v < n; ++v)
      if (got[v] >= 0)
        ++children[uint32_t(got[v])];
    CHECK(*std::max_element(children.begin(), children.end()) == 1); // a chain
    std::vector<uint32_t> order(n - 1);
    std::iota(order.begin(), order.end(), 1);
    double best = 1e300;
    do {
      double c = cost[0 * n + order[0]];
      for (size_t i = 1; i < order.size(); ++i)
        c += cost[order[i - 1] * n + order[i]];
      best = std::min(best, c);
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(treeCost(n, got, cost) == Approx(best).epsilon(1e-12)); // exact up to 8 ranks
  }
}

TEST_CASE("minCostPath beyond 8 ranks: a spanning chain no 2-opt move improves", "[synth]") {
  std::mt19937 rng(5);
  const uint32_t n = 12;
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<double> cost = randomCosts(n, rng);
    std::vector<int> got = minCostPath(n, 0, cost);
    REQUIRE(spans(n, 0, got));
    std::vector<uint32_t> order{0};
    for (uint32_t k = 1; k < n; ++k)
      for (uint32_t v = 0; v < n; ++v)
        if (got[v] == int(order.back())) {
          order.push_back(v);
          break;
        }
    REQUIRE(order.size() == n); // a chain
    auto total = [&](const std::vector<uint32_t> &o) {
      double c = 0;
      for (size_t i = 1; i < o.size(); ++i)
        c += cost[o[i - 1] * n + o[i]];
      return c;
    };
    for (size_t i = 1; i + 1 < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        std::vector<uint32_t> o = order;
        std::reverse(o.begin() + long(i), o.begin() + long(j) + 1);
        CHECK(total(o) >= total(order) * (1 - 1e-9));
      }
  }
}

TEST_CASE("fabric routes: fewest hops through switches, GPUs forward only on a torus", "[synth]") {
  const sim::Topology pcie = sim::loadTopology("pcie-tree");
  REQUIRE_FALSE(pcie.fabric.empty());
  const uint32_t g = pcie.gpusPerNode;
  CHECK(names(pcie, pcie.fabric.routes[0 * g + 4]) == "gpu0->sw0 sw0->cpu0 cpu0->cpu1 cpu1->sw1 sw1->gpu4");
  CHECK(names(pcie, pcie.fabric.routes[0 * g + 1]) == "gpu0->sw0 sw0->gpu1");
  CHECK(names(pcie, pcie.fabric.routes[5 * g + 2]) == "gpu5->sw1 sw1->cpu1 cpu1->cpu0 cpu0->sw0 sw0->gpu2");
  CHECK(pcie.hopLatencyUs(0, 4) == Approx(0.5 + 0.5 + 1.0 + 0.5 + 0.5));
  CHECK(pcie.hopLatencyUs(0, 1) == Approx(1.0));
  const sim::Topology torus = sim::loadTopology("torus-4x4");
  const uint32_t t = torus.gpusPerNode;
  CHECK(torus.fabric.routes[0 * t + 1].size() == 1);
  CHECK(torus.fabric.routes[0 * t + 3].size() == 1); // the wrap-around link
  CHECK(torus.fabric.routes[0 * t + 5].size() == 2);
  CHECK(torus.fabric.routes[0 * t + 10].size() == 4); // the far corner
  CHECK(torus.hopLatencyUs(0, 10) == Approx(4 * 0.6));
}

TEST_CASE("the min-cut bound on fabrics matches the closed forms", "[synth]") {
  using runtime::CollectiveKind;
  const double S = double(uint64_t(1) << 30);
  const sim::Topology pcie = sim::loadTopology("pcie-tree");
  // Half of the gathered data must cross the 10 GB/s inter-socket link each way.
  sim::LowerBound ag = sim::lowerBound(CollectiveKind::AllGather, 8, pcie, uint64_t(S));
  CHECK(ag.bandwidthSeconds == Approx(S / 2 / 10e9).epsilon(1e-9));
  CHECK(ag.limitedBy == "cut cpu0->cpu1");
  CHECK(sim::lowerBound(CollectiveKind::ReduceScatter, 8, pcie, uint64_t(S)).bandwidthSeconds ==
        Approx(S / 2 / 10e9).epsilon(1e-9));
  CHECK(sim::lowerBound(CollectiveKind::AllReduce, 8, pcie, uint64_t(S)).bandwidthSeconds ==
        Approx(S / 10e9).epsilon(1e-9));
  // AllToAll: each of 4 ranks on a side sends S/8 to each of the 4 on the other.
  CHECK(sim::lowerBound(CollectiveKind::AllToAll, 8, pcie, uint64_t(S)).bandwidthSeconds ==
        Approx(2 * S / 10e9).epsilon(1e-9));
  // The torus: every GPU receives 15/16 of S over its four 82.4 GB/s links.
  const sim::Topology torus = sim::loadTopology("torus-4x4");
  CHECK(sim::lowerBound(CollectiveKind::AllGather, 16, torus, uint64_t(S)).bandwidthSeconds ==
        Approx(S * 15 / 16 / (4 * 82.4e9)).epsilon(1e-9));
  // Small sizes: launch plus the longest route (four torus hops).
  sim::LowerBound small = sim::lowerBound(CollectiveKind::AllGather, 16, torus, 1024);
  CHECK(small.seconds == Approx((torus.launchUs + 4 * 0.6) * 1e-6).epsilon(1e-9));
}

TEST_CASE("a malformed fabric names the JSON path", "[synth]") {
  const auto dir = std::filesystem::temp_directory_path() / ("msccl-synth-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ifstream in(sim::defaultTopologyDir() + "/pcie-tree.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto write = [&](const std::string &from, const std::string &to) {
    std::string text = ss.str();
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    const std::string f = (dir / "bad.json").string();
    std::ofstream(f) << text;
    return f;
  };
  // (share/topologies/pcie-tree.json is written with two-space indents, one array item a line.)
  const std::string bad = write("\"sw1\",\n        \"pcie\"", "\"sw9\",\n        \"pcie\"");
  CHECK_THROWS_WITH(sim::loadTopology(bad),
                    Catch::Contains("$.fabric.links[4][1]") && Catch::Contains("expected a vertex"));
  const std::string kind = write("\"inter_socket\"\n      ]", "\"nvlink\"\n      ]");
  CHECK_THROWS_WITH(sim::loadTopology(kind),
                    Catch::Contains("$.fabric.links[10][2]") && Catch::Contains("unknown link kind 'nvlink'"));
  // Without the inter-socket link the sockets cannot reach each other.
  const std::string cut =
      write(",\n      [\n        \"cpu0\",\n        \"cpu1\",\n        \"inter_socket\"\n      ]", "");
  CHECK_THROWS_WITH(sim::loadTopology(cut), Catch::Contains("no route from gpu0 to gpu4"));
  std::filesystem::remove_all(dir);
}

namespace {
/// Synthesize `collective` on `topology`, compile it with pipeline window `unit`, and simulate it
/// at 1 GiB: its time, and the bound's.
std::pair<double, double> synthAt1GiB(const std::string &topology, const std::string &collective,
                                      const std::string &unit) {
  SynthOptions o;
  o.topology = topology;
  o.collective = collective;
  o.stdlibDir = kStdlib;
  std::ostringstream log;
  tools::tune::Candidate c;
  c.algorithm = "synth/paths";
  c.source = synthesize(o, log); // compiles and proves it
  c.defines = {{"unit", unit}};
  std::string why;
  auto plan = tools::tune::compileCandidate(c, kStdlib, false, why);
  REQUIRE(plan);
  const uint64_t S = uint64_t(1) << 30;
  auto ms = runtime::messageSizesFor(*plan, S, 4, nullptr);
  REQUIRE(ms);
  const sim::Topology topo = sim::loadTopology(topology);
  const double t = sim::simulate(*plan, topo, ms->inputBytes, ms->outputBytes).seconds;
  const auto kind = runtime::collectiveKind(collective);
  return {t, sim::lowerBound(kind, uint32_t(plan->gpus.size()), topo, S).seconds};
}

/// The fastest stdlib candidate over the tuner's full grid at 1 GiB (out of place).
double bestStdlibAt1GiB(const std::string &topology, const std::string &collective, std::string &label) {
  tools::tune::TuneOptions o;
  o.topology = topology;
  o.stdlibDir = kStdlib;
  o.synth = false;
  o.minBytes = o.maxBytes = uint64_t(1) << 30;
  const sim::Topology topo = sim::loadTopology(topology);
  tools::tune::Envelope e = tools::tune::tuneCollective(collective, false, o, topo, topo.gpus(), topo.gpusPerNode);
  REQUIRE(e.winner[0] >= 0);
  label = e.candidates[size_t(e.winner[0])].label();
  return e.candidates[size_t(e.winner[0])].seconds[0];
}
} // namespace

TEST_CASE("synthesized AllGather and AllReduce: within 10% of the bound at 1 GiB, faster than the stdlib",
          "[synth][slow]") {
  struct Case {
    const char *topology, *collective, *unit;
  } cases[] = {{"pcie-tree", "allgather", "256K"}, {"pcie-tree", "allreduce", "256K"},
               {"torus-4x4", "allgather", "128K"}, {"torus-4x4", "allreduce", "128K"}};
  for (const Case &k : cases) {
    INFO(k.collective << " on " << k.topology << " (model output)");
    auto [t, bound] = synthAt1GiB(k.topology, k.collective, k.unit);
    std::string label;
    const double stdlib = bestStdlibAt1GiB(k.topology, k.collective, label);
    INFO("synthesized " << t * 1e6 << " us, bound " << bound * 1e6 << " us, best stdlib " << label << " "
                        << stdlib * 1e6 << " us");
    CHECK(t <= 1.10 * bound);
    CHECK(t < stdlib);
  }
}

TEST_CASE("msccl-synth's command line", "[synth]") {
  std::ostringstream out, err;
  const char *bad[] = {"msccl-synth", "--collective", "alltoall", "--stdlib", kStdlib.c_str()};
  CHECK(runSynth(5, bad, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains("cannot write 'alltoall'"));
  err.str("");
  const char *multi[] = {"msccl-synth", "--topology", "2x-hgx-h100"};
  CHECK(runSynth(3, multi, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains("2 nodes"));
  err.str("");
  const char *shape[] = {"msccl-synth", "--shape", "rings"};
  CHECK(runSynth(3, shape, out, err) == 2);
  const char *ok[] = {"msccl-synth", "--topology", "hgx-h100", "--collective", "reducescatter", "--ranks", "4",
                      "--stdlib", kStdlib.c_str()};
  out.str("");
  err.str("");
  REQUIRE(runSynth(9, ok, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("program reducescatter_synth(") && Catch::Contains("param ranks = 4"));
  CHECK_THAT(err.str(), Catch::Contains("(model output)"));
}
