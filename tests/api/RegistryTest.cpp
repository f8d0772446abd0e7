// PlanRegistry: registration defaults, the default selection rule (collective, world size, ranks
// per node, size range, in-place, tags, then the narrowest range), the selector, and explain().
#include "TestSupport.h"

#include "msccl/plan/PlanJson.h"

#include <catch2/catch.hpp>

using namespace msccl;
using msccl::test::stdlibPlan;

namespace {

SelectRequest req(const std::string &coll, uint32_t n, uint64_t bytes, bool inPlace = false, uint32_t rpn = 0) {
  SelectRequest r;
  r.collective = coll;
  r.worldSize = n;
  r.ranksPerNode = rpn;
  r.messageBytes = bytes;
  r.inPlace = inPlace;
  return r;
}

PlanInfo named(const std::string &name) {
  PlanInfo i;
  i.name = name;
  return i;
}

const Explanation &entry(const std::vector<Explanation> &ex, const std::string &name) {
  for (auto &e : ex)
    if (e.plan->info.name == name)
      return e;
  FAIL("no explanation for " << name);
  return ex.front();
}

} // namespace

TEST_CASE("registration fills every default from the plan", "[registry]") {
  PlanRegistry reg;
  CompileParams p;
  p.defines = {{"ranks", "4"}, {"inplace", "false"}};
  p.options = {{"max_message_size", "65536"}};
  p.useCache = false;
  const RegisteredPlan &rp = reg.add(compile("stdlib:allreduce/ring", p));
  CHECK(rp.info.collective == "allreduce");
  CHECK(rp.info.worldSize == 4);
  CHECK(*rp.info.minBytes == rp.plan->minMessageSize);
  CHECK(*rp.info.maxBytes == 65536);
  CHECK(*rp.info.inPlace == InPlace::OutOfPlace);
  CHECK(rp.info.ranksPerNode == 0);
  CHECK(rp.info.name == *rp.plan->name);
  CHECK(reg.find(rp.info.name) == &rp);
}

TEST_CASE("registration errors", "[registry]") {
  PlanRegistry reg;
  PlanPtr ring4 = stdlibPlan("allreduce/ring", {{"ranks", "4"}});
  reg.add(ring4, {});
  CHECK_THROWS_WITH(reg.add(ring4, {}), Catch::Contains("already registered"));
  PlanInfo wrongSize;
  wrongSize.name = "w";
  wrongSize.worldSize = 8;
  CHECK_THROWS_WITH(reg.add(ring4, wrongSize), Catch::Contains("has 4 ranks but is registered for world size 8"));
  PlanInfo empty;
  empty.name = "e";
  empty.minBytes = 100;
  empty.maxBytes = 10;
  CHECK_THROWS_WITH(reg.add(ring4, empty), Catch::Contains("empty message-size range"));
  try {
    reg.add(nullptr, {});
    FAIL("no error for a null plan");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
  }
  // allpairs joins every pair of ranks by memory channels: 2 ranks per node cannot hold it.
  PlanInfo rpn;
  rpn.name = "ap";
  rpn.ranksPerNode = 2;
  CHECK_THROWS_WITH(reg.add(stdlibPlan("allreduce/allpairs", {{"ranks", "4"}}), rpn),
                    Catch::Contains("cannot run with 2 ranks per node"));
}

TEST_CASE("world size and collective", "[registry]") {
  PlanRegistry reg;
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}}), named("ring4"));
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "8"}, {"inplace", "false"}}), named("ring8"));
  reg.add(stdlibPlan("allgather/ring", {{"ranks", "8"}, {"inplace", "false"}}), named("ag8"));
  REQUIRE(reg.select(req("allreduce", 8, 1 << 20)) != nullptr);
  CHECK(reg.select(req("allreduce", 8, 1 << 20))->info.name == "ring8");
  CHECK(reg.select(req("allreduce", 4, 1 << 20))->info.name == "ring4");
  CHECK(reg.select(req("allgather", 8, 1 << 20))->info.name == "ag8");
  CHECK(reg.select(req("allreduce", 2, 1 << 20)) == nullptr);
  auto ex = reg.explain(req("allreduce", 8, 1 << 20));
  REQUIRE(ex.size() == 3);
  CHECK(entry(ex, "ring4").reason == "not eligible: world size is 4, not 8");
  CHECK(entry(ex, "ag8").reason == "not eligible: collective is allgather, not allreduce");
  CHECK(entry(ex, "ring8").chosen);
  try {
    reg.selectOrThrow(req("alltoall", 8, 1024));
    FAIL("no error");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::NoPlan);
    CHECK_THAT(e.what(), Catch::Contains("collective is allreduce, not alltoall"));
  }
}

TEST_CASE("ranks per node: derived from the plan's channels, or registered", "[registry]") {
  PlanRegistry reg;
  reg.add(stdlibPlan("allreduce/allpairs", {{"ranks", "4"}, {"inplace", "false"}}), named("allpairs"));
  reg.add(stdlibPlan("allreduce/hierarchical", {{"ranks", "4"}, {"ranks_per_node", "2"}, {"inplace", "false"}}),
          named("hier"));
  // Two nodes of two: allpairs' memory channels would cross nodes.
  const RegisteredPlan *two = reg.select(req("allreduce", 4, 1 << 20, false, 2));
  REQUIRE(two);
  CHECK(two->info.name == "hier");
  auto ex = reg.explain(req("allreduce", 4, 1 << 20, false, 2));
  CHECK_THAT(entry(ex, "allpairs").reason, Catch::StartsWith("not eligible: does not fit 2 ranks per node: a memory "
                                                             "or switch channel joins rank 0 (node 0) and rank 2"));
  // One node: both fit; equal ranges, so the first registered wins, and explain says so.
  CHECK(reg.select(req("allreduce", 4, 1 << 20))->info.name == "allpairs");
  CHECK(entry(reg.explain(req("allreduce", 4, 1 << 20)), "hier").reason ==
        "eligible, but allpairs was registered first");
  // A registered ranks-per-node is matched exactly.
  PlanInfo only4;
  only4.name = "ring-one-node";
  only4.ranksPerNode = 4;
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}}), only4);
  CHECK(entry(reg.explain(req("allreduce", 4, 1 << 20, false, 2)), "ring-one-node").reason ==
        "not eligible: registered for 4 ranks per node, not 2");
}

TEST_CASE("in-place compatibility", "[registry]") {
  PlanRegistry reg;
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "true"}}), named("inpl"));
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}}), named("outpl"));
  CHECK(reg.select(req("allreduce", 4, 4096, true))->info.name == "inpl");
  CHECK(reg.select(req("allreduce", 4, 4096, false))->info.name == "outpl");
  auto ex = reg.explain(req("allreduce", 4, 4096, true));
  CHECK(entry(ex, "outpl").reason == "not eligible: the call is in place but the plan is out-of-place only");
  PlanInfo both;
  both.name = "both";
  both.inPlace = InPlace::Both;
  both.maxBytes = 1 << 20; // narrower than the others: chosen for both kinds of call
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}}), both);
  CHECK(reg.select(req("allreduce", 4, 4096, true))->info.name == "both");
  CHECK(reg.select(req("allreduce", 4, 4096, false))->info.name == "both");
}

TEST_CASE("message-size ranges: inside the range, then the narrowest", "[registry]") {
  PlanRegistry reg;
  PlanPtr ring = stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}});
  PlanInfo small = named("small"), large = named("large"), any = named("any");
  small.minBytes = 0;
  small.maxBytes = 64 * 1024;
  large.minBytes = 64 * 1024 + 1;
  large.maxBytes = 1 << 30;
  reg.add(ring, any); // the plan's own range: [0, max]
  reg.add(ring, small);
  reg.add(ring, large);
  CHECK(reg.select(req("allreduce", 4, 1024))->info.name == "small");
  CHECK(reg.select(req("allreduce", 4, 64 * 1024))->info.name == "small");
  // Sizes the ring's 4 chunks x 16 B split (a plan is eligible only where it can run).
  CHECK(reg.select(req("allreduce", 4, 64 * 1024 + 64))->info.name == "large");
  CHECK(reg.select(req("allreduce", 4, (uint64_t(1) << 30) + 64))->info.name == "any");
  // Sizes they do not split run with uneven chunks (runtime/UnevenChunks.h): 65537 one-byte elements.
  CHECK(reg.select(req("allreduce", 4, 64 * 1024 + 1))->info.name == "large");
  // A packet plan cuts only blocks of a multiple of 8 bytes (an LL16 payload).
  PlanRegistry pkt;
  pkt.add(stdlibPlan("allreduce/allpairs_packet", {{"ranks", "4"}, {"inplace", "false"}}), named("packet"));
  CHECK(pkt.select(req("allreduce", 4, 64 * 1024 + 8))->info.name == "packet");
  CHECK(pkt.select(req("allreduce", 4, 64 * 1024 + 4)) == nullptr);
  CHECK_THAT(entry(pkt.explain(req("allreduce", 4, 64 * 1024 + 4)), "packet").reason,
             Catch::StartsWith("not eligible: cannot run 65540 bytes: size 65540 B is not a multiple of") &&
                 Catch::Contains("its packet ops need blocks of a multiple of 8 bytes"));
  auto ex = reg.explain(req("allreduce", 4, 1024));
  CHECK(entry(ex, "large").reason ==
        "not eligible: message size 1KiB (1024 bytes) is outside its range [65537B, 1GiB]");
  CHECK(entry(ex, "any").reason == "eligible, but its range is wider than that of small");
  CHECK_THAT(entry(ex, "small").reason, Catch::StartsWith("chosen"));
  std::string text = reg.explainText(req("allreduce", 4, 1024));
  CHECK_THAT(text, Catch::StartsWith("request: allreduce, 4 ranks, 4 per node, 1KiB (1024 bytes), out of place\n"));
  CHECK_THAT(text, Catch::Contains("  * small [allreduce, 4 ranks, 0B..64KiB, out-of-place only]: chosen"));
  // The same on one line (the shim's MSCCL_DEBUG fallbacks, msccl-run's skipped rows).
  const std::string line = reg.explainLine(req("allreduce", 4, 1024));
  CHECK(line.find('\n') == std::string::npos);
  CHECK_THAT(line, Catch::StartsWith("request: allreduce, 4 ranks, 4 per node, 1KiB (1024 bytes), out of place; "));
  CHECK_THAT(line, Catch::Contains("; * small [allreduce, 4 ranks, 0B..64KiB, out-of-place only]: chosen"));
  CHECK(reg.remove("small"));
  CHECK_FALSE(reg.remove("small"));
  CHECK(reg.select(req("allreduce", 4, 1024))->info.name == "any");
}

TEST_CASE("tags: required filter, preferred rank before range", "[registry]") {
  PlanRegistry reg;
  PlanPtr ring = stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}});
  PlanInfo a = named("a"), b = named("b"), c = named("c");
  a.tags = {"nvls"};
  a.maxBytes = 1 << 20;
  b.tags = {"low-latency", "v2"};
  c.tags = {"low-latency"};
  reg.add(ring, a);
  reg.add(ring, b);
  reg.add(ring, c);
  SelectRequest r = req("allreduce", 4, 4096);
  CHECK(reg.select(r)->info.name == "a"); // no preference: narrowest range
  r.preferredTags = {"low-latency", "v2"};
  CHECK(reg.select(r)->info.name == "b");
  CHECK(entry(reg.explain(r), "c").reason == "eligible, but has 1 preferred tag(s) against 2 of b");
  r.preferredTags.clear();
  r.requiredTags = {"low-latency"};
  CHECK(reg.select(r)->info.name == "b"); // b and c: equal ranges, b registered first
  CHECK(entry(reg.explain(r), "a").reason == "not eligible: lacks the required tag `low-latency`");
}

TEST_CASE("a user selector chooses among the eligible plans", "[registry]") {
  PlanRegistry reg;
  PlanPtr ring = stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}});
  reg.add(ring, named("first"));
  reg.add(ring, named("second"));
  reg.add(stdlibPlan("allreduce/ring", {{"ranks", "8"}, {"inplace", "false"}}), named("eight"));
  std::vector<std::string> seen;
  reg.setSelector([&](const SelectRequest &r, const std::vector<const RegisteredPlan *> &cands) {
    seen.clear();
    for (auto *c : cands)
      seen.push_back(c->info.name);
    return r.messageBytes > 1024 ? cands.back() : nullptr;
  });
  CHECK(reg.select(req("allreduce", 4, 4096))->info.name == "second");
  CHECK(seen == std::vector<std::string>{"first", "second"});
  auto ex = reg.explain(req("allreduce", 4, 4096));
  CHECK(entry(ex, "second").reason == "chosen by the selector");
  CHECK(entry(ex, "first").reason == "eligible, not chosen by the selector");
  CHECK(entry(ex, "eight").reason == "not eligible: world size is 8, not 4");
  CHECK(reg.select(req("allreduce", 4, 1024)) == nullptr);
  CHECK_THAT(reg.explainText(req("allreduce", 4, 1024)), Catch::EndsWith("  no plan chosen\n"));
  // A selector must return a candidate.
  const RegisteredPlan *eight = reg.find("eight");
  reg.setSelector([&](const SelectRequest &, const std::vector<const RegisteredPlan *> &) { return eight; });
  CHECK_THROWS_WITH(reg.select(req("allreduce", 4, 4096)), Catch::Contains("not one of its candidates"));
  reg.setSelector({});
  CHECK(reg.select(req("allreduce", 4, 4096))->info.name == "first");
}

TEST_CASE("files and directories: plans and programs", "[registry]") {
  test::TempDir dir, cache;
  PlanPtr ag = stdlibPlan("allgather/ring", {{"ranks", "2"}, {"inplace", "false"}});
  // A plan file, a program (compiled through the cache), a library module (skipped), another file.
  test::writeFile(dir.file("a_allgather.json"), plan::writePlan(*ag));
  test::writeFile(dir.file("b_sendrecv.msccl"), test::readFile(std::string(MSCCL_STDLIB_SOURCE_DIR) + "/sendrecv/pairs.msccl"));
  test::writeFile(dir.file("c_lib.msccl"), "fn helper(x) { return x + 1 }\n");
  test::writeFile(dir.file("notes.txt"), "not a plan");
  PlanRegistry reg;
  CompileParams p;
  p.cacheDir = cache.str();
  CHECK(reg.addDirectory(dir.str(), p) == 2);
  auto plans = reg.plans();
  REQUIRE(plans.size() == 2);
  CHECK(plans[0]->info.collective == "allgather");
  CHECK(plans[0]->info.source == dir.file("a_allgather.json"));
  CHECK(plans[1]->info.collective == "sendrecv");
  CHECK(plans[1]->info.source == "compile:" + dir.file("b_sendrecv.msccl"));
  // A broken plan file names the file and the problem.
  test::writeFile(dir.file("d_broken.json"), "{\"name\": 1}");
  PlanRegistry reg2;
  try {
    reg2.addDirectory(dir.str(), p);
    FAIL("no error");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::InvalidPlan);
    CHECK_THAT(e.what(), Catch::Contains("d_broken.json"));
  }
  CHECK_THROWS_AS(reg2.addDirectory(dir.file("missing"), p), Error);
}

TEST_CASE("a directory's index: one program in several builds, each with its own info", "[registry]") {
  test::TempDir dir, cache;
  test::writeFile(dir.file("ring.msccl"), test::readFile(std::string(MSCCL_STDLIB_SOURCE_DIR) + "/allreduce/ring.msccl"));
  PlanPtr ag = stdlibPlan("allgather/ring", {{"ranks", "4"}, {"inplace", "false"}});
  test::writeFile(dir.file("unlisted.json"), plan::writePlan(*ag)); // not in the index: not registered
  test::writeFile(dir.file("msccl-plans.json"), R"({"plans": [
    {"file": "ring.msccl", "name": "ring_in", "defines": {"inplace": true}},
    {"file": "ring.msccl", "name": "ring_oop", "defines": {"inplace": false, "chunks": 2},
     "max_bytes": 1048576, "tags": ["bandwidth"]}
  ]})");
  CompileParams p;
  p.cacheDir = cache.str();
  p.defines = {{"ranks", "4"}};
  PlanRegistry reg;
  REQUIRE(reg.addDirectory(dir.str(), p) == 2);
  REQUIRE(reg.plans().size() == 2);
  const RegisteredPlan *in = reg.find("ring_in"), *oop = reg.find("ring_oop");
  REQUIRE(in);
  REQUIRE(oop);
  CHECK(*in->info.inPlace == InPlace::InPlace);
  CHECK(*oop->info.inPlace == InPlace::OutOfPlace);
  CHECK(*oop->info.maxBytes == 1048576);
  CHECK(oop->info.tags == std::vector<std::string>{"bandwidth"});
  CHECK(oop->plan->gpus[0].inputChunks == 8); // chunks = 2 per rank block, 4 ranks
  CHECK(reg.select(req("allreduce", 4, 4096, true)) == in);
  CHECK(reg.select(req("allreduce", 4, 4096, false)) == oop);
  // A malformed index names the file and the entry's JSON path.
  auto errorOf = [&](const std::string &index) {
    test::writeFile(dir.file("msccl-plans.json"), index);
    PlanRegistry r;
    try {
      r.addDirectory(dir.str(), p);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK_THAT(errorOf(R"({"plans": [{"file": "ring.msccl"}, {"file": "ring.msccl", "in_place": "sometimes"}]})"),
             Catch::Contains("msccl-plans.json: plans[1].in_place: must be \"in\", \"out\" or \"both\""));
  CHECK_THAT(errorOf(R"({"plans": [{"file": "../ring.msccl"}]})"),
             Catch::Contains("plans[0].file: must name a file of the directory itself"));
  CHECK_THAT(errorOf(R"({"plans": [{"file": "ring.msccl", "max_byte": 5}]})"),
             Catch::Contains("plans[0].max_byte: unknown field"));
  CHECK_THAT(errorOf(R"({"plan": []})"), Catch::Contains("msccl-plans.json: plans: an array of entries is required"));
  CHECK_THAT(errorOf("{"), Catch::Contains("msccl-plans.json: not valid JSON"));
}

TEST_CASE("a directory's defines apply to the programs that declare them", "[registry]") {
  // MSCCL_PLANS_DEFINES="ranks=2,ranks_per_node=1" for a directory of two programs of which only
  // sendrecv/pairs has a `ranks_per_node` param: each gets the defines it declares (a define one
  // program lacked once failed them all).
  test::TempDir dir, cache;
  const std::string stdlib = MSCCL_STDLIB_SOURCE_DIR;
  test::writeFile(dir.file("a_allreduce.msccl"), test::readFile(stdlib + "/allreduce/allpairs.msccl"));
  test::writeFile(dir.file("b_sendrecv.msccl"), test::readFile(stdlib + "/sendrecv/pairs.msccl"));
  CompileParams p;
  p.cacheDir = cache.str();
  p.defines = {{"ranks", "2"}, {"ranks_per_node", "1"}};
  PlanRegistry reg;
  REQUIRE(reg.addDirectory(dir.str(), p) == 2);
  CHECK(reg.plans()[0]->plan->gpus.size() == 2);
  // sendrecv got ranks_per_node=1 (port channels), as compiled on its own with both defines.
  CHECK(plan::writePlan(*reg.plans()[1]->plan) ==
        plan::writePlan(*stdlibPlan("sendrecv/pairs", {{"ranks", "2"}, {"ranks_per_node", "1"}})));
  CHECK(plan::writePlan(*reg.plans()[1]->plan) != plan::writePlan(*stdlibPlan("sendrecv/pairs", {{"ranks", "2"}})));
  // One program on its own still refuses a define it lacks (compile(), not a directory).
  CompileParams one = p;
  one.defines = {{"no_such_param", "1"}};
  CHECK_THROWS_WITH(compile(dir.file("b_sendrecv.msccl"), one), Catch::Contains("no_such_param"));
}

TEST_CASE("select() and explain() agree", "[registry]") {
  PlanRegistry reg;
  PlanPtr ring = stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}});
  PlanPtr ringIn = stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "true"}});
  reg.add(stdlibPlan("allreduce/allpairs", {{"ranks", "4"}, {"inplace", "false"}}), named("allpairs"));
  reg.add(stdlibPlan("allreduce/hierarchical", {{"ranks", "4"}, {"ranks_per_node", "2"}, {"inplace", "false"}}),
          named("hier"));
  PlanInfo small = named("small"), tagged = named("tagged"), in = named("in");
  small.maxBytes = 4096;
  tagged.tags = {"t"};
  tagged.minBytes = 1024;
  in.maxBytes = 1 << 16;
  reg.add(ring, small);
  reg.add(ring, tagged);
  reg.add(ringIn, in);
  size_t requests = 0, chosenSome = 0;
  for (const char *coll : {"allreduce", "AllReduce", "allgather"})
    for (uint32_t rpn : {0u, 1u, 2u, 4u})
      for (uint64_t bytes : {uint64_t(0), uint64_t(1024), uint64_t(4096), uint64_t(4097), uint64_t(1) << 20})
        for (bool inPlace : {false, true})
          for (int tags = 0; tags < 3; ++tags) {
            SelectRequest r = req(coll, 4, bytes, inPlace, rpn);
            if (tags == 1)
              r.preferredTags = {"t"};
            if (tags == 2)
              r.requiredTags = {"t"};
            const RegisteredPlan *s = reg.select(r);
            const RegisteredPlan *e = nullptr;
            for (auto &x : reg.explain(r))
              if (x.chosen)
                e = x.plan;
            INFO(reg.explainText(r));
            REQUIRE(s == e);
            ++requests;
            chosenSome += s != nullptr;
          }
  CHECK(requests == 360);
  CHECK(chosenSome > 50);
  CHECK(chosenSome < requests);
}
