// passes::verifyGpu (IRVerifier.h) and PipelineOptions::verifyEach.
#include "msccl/ir/Dsl.h"
#include "msccl/ir/IR.h"
#include "msccl/passes/IRVerifier.h"
#include "msccl/passes/Pipeline.h"

#include <catch2/catch.hpp>

using namespace msccl;
using namespace msccl::ir;

namespace {
struct Prog {
  Program p;
  Prog() : p(options()) {
    auto ch = p.memoryChannel(1, 0);
    ch.put(p.rank(1).getOutputBuffer().slice(0, 1), p.rank(0).getInputBuffer().slice(0, 1), 0);
    ch.signal(0);
    p.memoryChannel(0, 1).wait(0);
    unpackOps(p.ir());
  }
  static ProgramOptions options() {
    ProgramOptions o;
    o.collective = Collective::make(msccl::runtime::CollectiveKind::AllReduce, 2, 1, true);
    return o;
  }
  GpuIR &gpu0() { return p.ir().gpus[0]; }
};
} // namespace

TEST_CASE("the verifier accepts what the DSL and the passes build", "[verifier]") {
  Prog g;
  CHECK(passes::verifyGpu(g.gpu0(), false).empty());
  passes::PipelineOptions opts;
  opts.verifyEach = true;
  CHECK_NOTHROW(passes::runGpuPasses(g.p.ir(), g.gpu0(), opts));
  CHECK(passes::verifyGpu(g.gpu0(), false).empty());
}

TEST_CASE("the verifier names the op that breaks an invariant", "[verifier]") {
  Prog g;
  auto &ops = g.gpu0().threadblocks[0].ops;
  REQUIRE(ops.size() == 2); // put, signal
  SECTION("a channel id out of range") {
    ops[1].syncChannelIds = PySet::single(5);
    auto v = passes::verifyGpu(g.gpu0(), false);
    REQUIRE(v.size() == 1);
    CHECK(v[0] == "rank 0 tb 0 op 1: signal: channel 5 not registered on the threadblock");
  }
  SECTION("fields of another kind") {
    ops[0].ids = {1};
    ops[0].dataSync = SyncType::After;
    auto v = passes::verifyGpu(g.gpu0(), false);
    REQUIRE(v.size() == 2);
    CHECK(v[0] == "rank 0 tb 0 op 0: put: semaphore ids on a non-semaphore op");
    CHECK(v[1] == "rank 0 tb 0 op 0: put: data_sync flags on an op that takes none");
  }
  SECTION("a remote buffer out of range, a missing location") {
    ops[0].remoteDst[0].bufferId = 3;
    auto v = passes::verifyGpu(g.gpu0(), true);
    REQUIRE(v.size() == 3);
    CHECK(v[0] == "rank 0 tb 0 op 0: put: no source location");
    CHECK(v[1] == "rank 0 tb 0 op 0: put: remote buffer 3 not registered");
  }
  SECTION("verifyEach stops the pipeline at the first violation") {
    ops[1].channelType = ChannelType::Switch;
    passes::PipelineOptions opts;
    opts.verifyEach = true;
    CHECK_THROWS_WITH(passes::runGpuPasses(g.p.ir(), g.gpu0(), opts),
                      Catch::Contains("IR verifier after elaboration: rank 0 tb 0 op 1: signal: channel type"));
  }
}
