//===- ExecutorTest.cpp - CPU executor semantics on small hand-written plans -------------===//
#include "TestSupport.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/Verify.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace msccl::plan;
using namespace msccl::runtime;

namespace {
// One rank: cpkt input chunk 0 -> scratch chunk 0 (packets occupy plain scratch chunks 0..1),
// then copy the raw scratch bytes (chunks 0..1) to the output, exposing the packet layout.
const char *kPacketLayoutPlan = R"({"name":"layout","collective":"test","protocol":"LL","inplace":false,"gpus":[
  {"id":0,"input_chunks":1,"output_chunks":2,"scratch_chunks":2,"threadblocks":[{"id":0,"ops":[
     {"name":"cpkt","src_buff":[{"type":"i","index":0,"size":1}],"dst_buff":[{"type":"s","index":0,"size":1}]},
     {"name":"nop"},
     {"name":"copy","src_buff":[{"type":"s","index":0,"size":2}],"dst_buff":[{"type":"o","index":0,"size":2}]}],
   "channels":[],"remote_buffer_refs":[]}],"channels":[],"remote_buffers":[],"semaphores":[]}]})";

std::vector<uint32_t> runLayout(PacketType pt, unsigned launches) {
  Plan plan = parsePlan(kPacketLayoutPlan);
  auto ex = makeCpuExecutor();
  std::vector<uint32_t> in(16), out(32);
  for (uint32_t i = 0; i < 16; ++i)
    in[i] = 0x1000 + i;
  ExecuteRequest req;
  req.plan = &plan;
  req.buffers = {RankBuffers{in.data(), out.data()}};
  req.inputBytes = 64;
  req.outputBytes = 128;
  req.packetType = pt;
  req.iterations = launches;
  ex->execute(req);
  return out;
}
} // namespace

TEST_CASE("LL16 packets are data0, flag, data1, flag and flags advance per launch", "[executor]") {
  std::vector<uint32_t> out = runLayout(PacketType::LL16, 1);
  CHECK(out[0] == 0x1000);
  CHECK(out[1] == 1);
  CHECK(out[2] == 0x1001);
  CHECK(out[3] == 1);
  CHECK(out[28] == 0x100e);
  CHECK(out[31] == 1);
  out = runLayout(PacketType::LL16, 3);
  CHECK(out[0] == 0x1000);
  CHECK(out[1] == 3);
  CHECK(out[3] == 3);
}

TEST_CASE("LL8 packets are data, flag", "[executor]") {
  std::vector<uint32_t> out = runLayout(PacketType::LL8, 2);
  CHECK(out[0] == 0x1000);
  CHECK(out[1] == 2);
  CHECK(out[2] == 0x1001);
  CHECK(out[3] == 2);
  CHECK(out[30] == 0x100f);
}

TEST_CASE("out-of-bounds accesses are misuse naming rank, tb and op", "[executor]") {
  Plan plan = parsePlan(kPacketLayoutPlan);
  auto ex = makeCpuExecutor();
  std::vector<uint32_t> in(16);
  ExecuteRequest req;
  req.plan = &plan;
  req.buffers = {RankBuffers{in.data(), nullptr}}; // no output buffer at all
  req.inputBytes = 64;
  req.outputBytes = 128;
  try {
    ex->execute(req);
    FAIL("expected misuse");
  } catch (const ExecutionError &e) {
    CHECK(e.kind() == ErrorKind::Misuse);
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("rank 0 tb 0 op 2 (copy) at gpus[0].threadblocks[0].ops[2]: dst_buff[0]: bytes [0, 128) "
                               "are outside rank 0's output buffer (0 bytes)"));
  }
}

TEST_CASE("sizes the plan cannot take are rejected, not padded", "[executor]") {
  Plan plan = parsePlan(kPacketLayoutPlan);
  auto ex = makeCpuExecutor();
  std::vector<uint32_t> in(16), out(32);
  ExecuteRequest req;
  req.plan = &plan;
  req.buffers = {RankBuffers{in.data(), out.data()}};
  req.inputBytes = 40;
  req.outputBytes = 80;
  try {
    ex->execute(req);
    FAIL("expected an InvalidSize error");
  } catch (const ExecutionError &e) {
    CHECK(e.kind() == ErrorKind::InvalidSize);
    CHECK_THAT(std::string(e.what()), Catch::Contains("not aligned with buffer alignment or chunks"));
  }
}

TEST_CASE("reduce_op min and max are honoured", "[executor]") {
  Plan plan = readPlanFile(msccl::test::plansDir() + "/ok_allreduce_rre_2.json");
  auto ex = makeCpuExecutor();
  for (ReduceOp op : {ReduceOp::Min, ReduceOp::Max}) {
    for (Gpu &g : plan.gpus)
      for (Threadblock &tb : g.threadblocks)
        for (Op &o : tb.ops)
          if (o.reduceOp)
            o.reduceOp = op;
    for (DataType dt : {DataType::Int32, DataType::Float16, DataType::BFloat16, DataType::UInt8}) {
      RunOptions ro;
      ro.size = 4096;
      ro.dataType = dt;
      RunReport rep = runCollective(*ex, plan, ro);
      CHECK(rep.reduceOp == op);
      CHECK(rep.verify.checked);
      CHECK(rep.verify.wrong == 0);
      CHECK(rep.verify.elements == 2 * 4096 / dataTypeBytes(dt));
    }
  }
  RunOptions ro;
  ro.size = 4096;
  ro.reduceOp = ReduceOp::Sum; // conflicts with the plan's max
  CHECK_THROWS_AS(runCollective(*ex, plan, ro), ExecutionError);
}

TEST_CASE("glre is reported by the reference-compatible check and runs on the CPU", "[executor]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared is absent; skipping");
    return;
  }
  Plan plan = readPlanFile(shared + "/golden/mscclpp-dsl/unit_tests__switch_reduce_test.json");
  auto strict = checkPlan(plan);
  REQUIRE_FALSE(strict.empty());
  CHECK(strict[0].path == "gpus[0].threadblocks[0].ops[0].name");
  CHECK_THAT(strict[0].message, Catch::Contains("Invalid operation type: glre"));
  ValidateOptions vo;
  vo.allowGlre = true;
  CHECK(checkPlan(plan, vo).empty());
  // The DSL unit test only emits the op; plans/ok_allreduce_glre_2.json checks its result.
  auto ex = makeCpuExecutor();
  RunOptions ro;
  ro.size = 1024;
  CHECK_NOTHROW(runCollective(*ex, plan, ro));
}

TEST_CASE("the executor's per-threadblock limits are options; gpu-level channel ids are not 8-bit", "[executor]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared is absent; skipping");
    return;
  }
  ValidateOptions vo;
  vo.allowGlre = true;
  // 448 gpu-level memory channels per gpu, 7 per threadblock: MSCCL++ reads the gpu-level ids as int.
  Plan pairs = readPlanFile(shared + "/legacy/mscclpplang/allreduce_allpairs__8_8.json");
  CHECK(checkPlan(pairs, vo).empty());
  // 67 ops in some threadblocks: over MAX_OPERATION (the old executor threw too).
  Plan ring = readPlanFile(shared + "/legacy/mscclpplang/allreduce_ring__8_8.json");
  auto strict = checkPlan(ring, vo);
  REQUIRE_FALSE(strict.empty());
  for (const PlanDiagnostic &d : strict) {
    CHECK(d.deviceLimit);
    CHECK_THAT(d.message, Catch::Contains("exceed the executor limit of 64 (MAX_OPERATION)"));
  }
  CHECK(deviceLimitProblems(ring).size() == strict.size());
  CHECK(deviceLimitProblems(pairs).empty());
  auto ex = makeCpuExecutor();
  RunOptions ro;
  ro.size = 64 * 1024;
  // The CPU executor has no such tables: it runs the plan as it is (msccl-run refuses it unless
  // --target=msccl, as mscclc does).
  RunReport direct = runCollective(*ex, ring, ro);
  CHECK(direct.verify.checked);
  CHECK(direct.verify.wrong == 0);
  vo.deviceLimits = false;
  REQUIRE(checkPlan(ring, vo).empty());
  ro.planValidated = true; // as msccl-run --target=msccl does
  RunReport rep = runCollective(*ex, ring, ro);
  CHECK(rep.verify.checked);
  CHECK(rep.verify.wrong == 0);
  // Other checks stay: a bad channel id is still an error with the limits relaxed.
  ring.gpus[0].threadblocks[0].channels[0].channelIds[0] = 9999;
  auto bad = checkPlan(ring, vo);
  REQUIRE_FALSE(bad.empty());
  CHECK_FALSE(bad[0].deviceLimit);
  CHECK_THAT(bad[0].message, Catch::Contains("out of range"));
}

TEST_CASE("re writes dst_buff[0] only; its extra dst entries are ignored, as by MSCCL++'s REDUCE", "[executor]") {
  // One rank: o0 = i0 + i1; the row marks dst[1..] of re as ignored (plan::entryAccess), and
  // MSCCL++'s handleReduceSend<..., SendToRemote = false> writes only the first output.
  Plan plan = parsePlan(R"({"name":"re-extra","collective":"test","protocol":"Simple","inplace":false,"gpus":[
    {"id":0,"input_chunks":2,"output_chunks":2,"scratch_chunks":0,"threadblocks":[{"id":0,"ops":[
       {"name":"re","src_buff":[{"type":"i","index":0,"size":1},{"type":"i","index":1,"size":1}],
        "dst_buff":[{"type":"o","index":0,"size":1},{"type":"o","index":1,"size":1}],"reduce_op":"sum"}],
     "channels":[],"remote_buffer_refs":[]}],"channels":[],"remote_buffers":[],"semaphores":[]}]})");
  auto ex = makeCpuExecutor();
  std::vector<int32_t> in(8), out(8, -7);
  for (int32_t i = 0; i < 8; ++i)
    in[size_t(i)] = 10 * i;
  ExecuteRequest req;
  req.plan = &plan;
  req.buffers = {RankBuffers{in.data(), out.data()}};
  req.inputBytes = 32;
  req.outputBytes = 32;
  req.dataType = DataType::Int32;
  ex->execute(req);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(out[i] == in[i] + in[i + 4]); // the sum in dst[0]
    CHECK(out[i + 4] == -7);            // dst[1] untouched
  }
}
