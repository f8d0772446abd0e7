//===- UnevenChunksTest.cpp - Plans at sizes their equal chunks do not divide ------------===//
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Resolve.h"
#include "msccl/runtime/UnevenChunks.h"

#include <catch2/catch.hpp>

#include <numeric>

using namespace msccl::plan;
using namespace msccl::runtime;

namespace {

Op copyOp(BufferRef src, BufferRef dst) {
  Op op;
  op.type = OpType::Copy;
  op.src = {src};
  op.dst = {dst};
  return op;
}

/// One rank: `ops` in one threadblock over `ni` input, `no` output and `ns` scratch chunks.
Plan oneRank(const std::string &collective, uint64_t ni, uint64_t no, uint64_t ns, std::vector<Op> ops) {
  Plan p;
  p.name = "t";
  p.collective = collective;
  p.bufferAlignment = 16;
  Gpu g;
  g.inputChunks = ni;
  g.outputChunks = no;
  g.scratchChunks = ns;
  Threadblock tb;
  tb.ops = std::move(ops);
  g.threadblocks.push_back(tb);
  p.gpus.push_back(g);
  return p;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const ExecutionError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("sizes that divide keep the plan#3.2 layout; others get the reference's reason", "[uneven]") {
  Plan p = oneRank("allreduce", 4, 4, 0, {copyOp(BufferRef::local(BufferType::Input, 0, 4),
                                                 BufferRef::local(BufferType::Output, 0, 4))});
  CHECK_FALSE(evenChunksRefusal(p, 256, 256));
  auto why = evenChunksRefusal(p, 100, 100);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("not aligned with buffer alignment or chunks"));
  LoweredPlan lp = lowerPlan(p, resolvePlan(p), 256, 256, 4);
  CHECK_FALSE(lp.gpus[0].layout.offsets);
  CHECK(lp.gpus[0].layout.chunkBytes == 64);
}

TEST_CASE("a block is cut into granules, position by position", "[uneven]") {
  // 100 B in 4 chunks: granule 4 B (the largest power of two dividing 100, at most 16), 25 granules:
  // positions 0 gets 7, positions 1..3 get 6.
  Plan p = oneRank("allreduce", 4, 4, 2,
                   {copyOp(BufferRef::local(BufferType::Input, 0, 2), BufferRef::local(BufferType::Scratch, 0, 2)),
                    copyOp(BufferRef::local(BufferType::Scratch, 0, 2), BufferRef::local(BufferType::Output, 0, 2)),
                    copyOp(BufferRef::local(BufferType::Input, 2, 2), BufferRef::local(BufferType::Output, 2, 2))});
  LoweredPlan lp = lowerPlan(p, resolvePlan(p), 100, 100, 4);
  const ChunkLayout &l = lp.gpus[0].layout;
  REQUIRE(l.offsets);
  CHECK(l.alignment == 4);
  CHECK(l.chunkBytes == 28);
  CHECK(l.offsets->input == std::vector<uint64_t>{0, 28, 52, 76, 100});
  CHECK(l.offsets->output == l.offsets->input);
  // Scratch chunks take the size of the input chunks copied into them.
  CHECK(l.offsets->scratch == std::vector<uint64_t>{0, 28, 52});
  CHECK(lp.gpus[0].scratchBytes == 52);
  const LoweredOp &first = lp.gpus[0].threadblocks[0].ops[0];
  CHECK(first.src[0].bytes.offset == 0);
  CHECK(first.src[0].bytes.length == 52);

  // The CPU executor runs it: out = in for an out-of-place copy.
  std::vector<float> in(25), out(25, -1);
  std::iota(in.begin(), in.end(), 1.f);
  ExecuteRequest req;
  req.plan = &p;
  req.buffers = {RankBuffers{in.data(), out.data()}};
  req.inputBytes = req.outputBytes = 100;
  req.dataType = DataType::Float32;
  makeCpuExecutor()->execute(req);
  CHECK(out == in);
}

TEST_CASE("an op joining chunks of different block positions is refused, naming it", "[uneven]") {
  // Input chunk 0 -> output chunk 1: at equal chunk sizes a rotation, at uneven ones a size clash.
  Plan p = oneRank("allreduce", 2, 2, 0,
                   {copyOp(BufferRef::local(BufferType::Input, 0, 1), BufferRef::local(BufferType::Output, 1, 1))});
  std::string e = errorOf([&] { lowerPlan(p, resolvePlan(p), 36, 36, 4); });
  CHECK_THAT(e, Catch::Contains("nor can it be cut into uneven chunks: gpus[0].threadblocks[0].ops[0] (copy) joins "
                                "rank 0's input chunk 0 and rank 0's output chunk 1"));
  std::string why;
  CHECK_FALSE(messageSizesFor(p, 36, &why));
  CHECK_THAT(why, Catch::Contains("sit at different positions of their blocks"));
  // Through scratch too: input 0 -> scratch 0 -> output 1.
  Plan q = oneRank("allreduce", 2, 2, 1,
                   {copyOp(BufferRef::local(BufferType::Input, 0, 1), BufferRef::local(BufferType::Scratch, 0, 1)),
                    copyOp(BufferRef::local(BufferType::Scratch, 0, 1), BufferRef::local(BufferType::Output, 1, 1))});
  CHECK_THAT(errorOf([&] { lowerPlan(q, resolvePlan(q), 36, 36, 4); }), Catch::Contains("ops[1] (copy) joins"));
}

TEST_CASE("uneven cuts hold whole elements, and only collectives with a block rule", "[uneven]") {
  Plan p = oneRank("allreduce", 2, 2, 0,
                   {copyOp(BufferRef::local(BufferType::Input, 0, 2), BufferRef::local(BufferType::Output, 0, 2))});
  CHECK_THAT(errorOf([&] { lowerPlan(p, resolvePlan(p), 18, 18, 4); }),
             Catch::Contains("its allreduce blocks of 18 B are not whole 4-byte elements"));
  CHECK_NOTHROW(lowerPlan(p, resolvePlan(p), 18, 18, 2)); // nine float16s
  CHECK(messageSizesFor(p, 18, 2, nullptr));
  CHECK_FALSE(messageSizesFor(p, 18, 4, nullptr));
  p.collective = "custom";
  CHECK_THAT(errorOf([&] { lowerPlan(p, resolvePlan(p), 20, 20, 4); }),
             Catch::Contains("collective \"custom\" has no block rule (Collectives.def)"));
}

TEST_CASE("allgather blocks: each rank block of the output holds the input's positions", "[uneven]") {
  // 2 ranks, 2 input chunks, 4 output chunks (2 blocks of 2): copy input -> own output block.
  Plan p;
  p.name = "ag";
  p.collective = "allgather";
  p.bufferAlignment = 16;
  for (uint32_t r = 0; r < 2; ++r) {
    Gpu g;
    g.inputChunks = 2;
    g.outputChunks = 4;
    Threadblock tb;
    tb.ops = {copyOp(BufferRef::local(BufferType::Input, 0, 2), BufferRef::local(BufferType::Output, 2 * r, 2))};
    g.threadblocks.push_back(tb);
    p.gpus.push_back(g);
  }
  auto ms = messageSizesFor(p, 24, 4, nullptr); // 3 float32s per rank
  REQUIRE(ms);
  CHECK(ms->inputBytes == 12);
  CHECK(ms->outputBytes == 24);
  LoweredPlan lp = lowerPlan(p, resolvePlan(p), 12, 24, 4);
  CHECK(lp.gpus[1].layout.offsets->output == std::vector<uint64_t>{0, 8, 12, 20, 24});
  CHECK(lp.gpus[1].threadblocks[0].ops[0].dst[0].bytes.offset == 12);
  // 25 B do not halve into two rank blocks.
  std::string why;
  CHECK_FALSE(messageSizesFor(p, 25, 1, &why));
  CHECK_THAT(why, Catch::Contains("does not split in the ratio of input_chunks 2 to output_chunks 4"));
}
