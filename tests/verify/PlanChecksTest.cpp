//===- PlanChecksTest.cpp - Loader/device constraints and the sync-op split ----------------===//
#include "msccl/verify/PlanVerify.h"

#include <catch2/catch.hpp>

using namespace msccl::plan;
using namespace msccl::verify;

namespace {
/// One rank, one threadblock of `ops`, one chunk of each buffer.
Plan oneRank(std::vector<Op> ops, const std::string &protocol = "Simple") {
  Plan p;
  p.collective = "test";
  p.protocol = protocol;
  Gpu g;
  g.inputChunks = g.outputChunks = g.scratchChunks = 4;
  Threadblock tb;
  tb.ops = std::move(ops);
  g.threadblocks = {tb};
  p.gpus = {g};
  return p;
}
Op copyOp(OpType t, BufferType s, BufferType d, uint64_t size = 1) {
  Op o;
  o.type = t;
  o.src = {BufferRef::local(s, 0, size)};
  o.dst = {BufferRef::local(d, 0, size)};
  return o;
}
bool has(const std::vector<Finding> &v, const std::string &text, bool warning) {
  for (const Finding &f : v)
    if (f.warning == warning && f.str().find(text) != std::string::npos)
      return true;
  return false;
}
} // namespace

TEST_CASE("packet ops need protocol LL", "[checks]") {
  auto f = checkPlanShape(oneRank({copyOp(OpType::CopyPackets, BufferType::Input, BufferType::Scratch)}));
  CHECK(has(f, "gpus[0].threadblocks[0].ops[0]: packet op `cpkt` in a plan with protocol `Simple`", false));
  CHECK(checkPlanShape(oneRank({copyOp(OpType::CopyPackets, BufferType::Input, BufferType::Scratch)}, "LL")).empty());
}

TEST_CASE("pipeline entries span num_chunks", "[checks]") {
  Op pipe;
  pipe.type = OpType::Pipeline;
  pipe.iterContext = {1024, 4};
  pipe.ops = {copyOp(OpType::Copy, BufferType::Input, BufferType::Output, 2)};
  auto f = checkPlanShape(oneRank({pipe}));
  CHECK(has(f, "ops[0].ops[0].src_buff[0].size: pipeline entry spans 2 chunks but the pipeline's num_chunks is 4", false));
  pipe.ops = {copyOp(OpType::Copy, BufferType::Input, BufferType::Output, 4)};
  CHECK(checkPlanShape(oneRank({pipe})).empty());
}

TEST_CASE("an empty plan is refused", "[checks]") {
  CHECK(has(checkPlanShape(oneRank({})), "the plan has no operations", false));
  Plan none;
  CHECK(has(checkPlanShape(none), "gpus: the plan has no operations", false));
}

TEST_CASE("MSCCL++ hazards are warnings naming the alternative", "[checks]") {
  Op flush;
  flush.type = OpType::Flush;
  Op re = copyOp(OpType::Reduce, BufferType::Input, BufferType::Output);
  re.reduceOp = ReduceOp::Max;
  auto f = checkPlanShape(oneRank({re, flush}));
  CHECK(has(f, "ops[0].reduce_op: reduce_op `max`: the MSCCL++ executor ignores reduce_op and always sums", true));
  CHECK(has(f, "use `put_with_signal_and_flush` (`pwsf`)", true));
  Op glre = copyOp(OpType::Copy, BufferType::Input, BufferType::Output);
  glre.type = OpType::MultiLoadReduce; // only its type matters to the hazard
  CHECK(has(checkPlanShape(oneRank({glre})), "`glre` (an unfused switch reduce) is rejected by the MSCCL++ loader", true));
  // For this project's executors (--target msccl) none of them is a hazard: they run flush and
  // glre and honour reduce_op.
  for (const Finding &x : checkPlanShape(oneRank({re, flush, glre}), false))
    CHECK_THAT(x.message, !Catch::Contains("MSCCL++ executor ignores") && !Catch::Contains("pwsf") &&
                              !Catch::Contains("MSCCL++ loader"));
}

TEST_CASE("executor limits of validatePlan are included", "[checks]") {
  std::vector<Op> ops(65, copyOp(OpType::Copy, BufferType::Input, BufferType::Output));
  CHECK(has(checkPlanShape(oneRank(ops)), "exceed the executor limit of 64", false));
}

TEST_CASE("sync ops over more than 8 channels are split in order", "[checks]") {
  Op sig;
  sig.type = OpType::Signal;
  sig.channelType = ChannelType::Memory;
  sig.channelIds = std::vector<uint32_t>{};
  for (uint32_t i = 0; i < 19; ++i)
    sig.channelIds->push_back(i);
  Op put = copyOp(OpType::Copy, BufferType::Input, BufferType::Output);
  Plan p = oneRank({put, sig, put});
  CHECK(splitWideSyncOps(p) == 1);
  const auto &ops = p.gpus[0].threadblocks[0].ops;
  REQUIRE(ops.size() == 5);
  CHECK(ops[1].channelIds->size() == 8);
  CHECK(ops[2].channelIds->size() == 8);
  CHECK(ops[3].channelIds->size() == 3);
  CHECK(ops[1].channelIds->front() == 0);
  CHECK(ops[3].channelIds->back() == 18);
  CHECK(ops[4].type == OpType::Copy);
  CHECK(splitWideSyncOps(p) == 0);
}
