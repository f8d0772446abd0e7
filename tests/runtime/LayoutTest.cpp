//===- LayoutTest.cpp - Chunk arithmetic, resolution and validation units ----------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Layout.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/Resolve.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

using namespace msccl::plan;
using namespace msccl::runtime;

static Plan onePlan(uint64_t ni, uint64_t no, uint64_t ns, const std::string &collective = "allreduce") {
  Plan p;
  p.name = "t";
  p.collective = collective;
  Gpu g;
  g.inputChunks = ni;
  g.outputChunks = no;
  g.scratchChunks = ns;
  p.gpus.push_back(g);
  return p;
}

static std::string errorOf(const std::function<void()> &f, ErrorKind *kind = nullptr) {
  try {
    f();
  } catch (const ExecutionError &e) {
    if (kind)
      *kind = e.kind();
    return e.what();
  }
  return "";
}

TEST_CASE("chunk size follows plan#3.2", "[layout]") {
  Plan p = onePlan(4, 4, 2);
  ChunkLayout l = computeChunkLayout(p, 0, 1024, 1024);
  CHECK(l.hasChunkBytes);
  CHECK(l.chunkBytes == 256);
  ByteRange r = entryBytes(l, BufferType::Scratch, 3, 2);
  CHECK(r.offset == 768);
  CHECK(r.length == 512);

  ErrorKind k{};
  CHECK_THAT(errorOf([&] { computeChunkLayout(p, 0, 1000, 1000); }, &k),
             Catch::Contains("Input or output size is not aligned with buffer alignment or chunks"));
  CHECK(k == ErrorKind::InvalidSize);
  // 48 B = 3 units of 16 B do not split into 4 chunks.
  CHECK_THAT(errorOf([&] { computeChunkLayout(p, 0, 48, 48); }), Catch::Contains("4 chunks (input_chunks)"));
  CHECK_THAT(errorOf([&] { computeChunkLayout(p, 0, 1024, 2048); }), Catch::Contains("Size per chunks inconsistent"));
}

TEST_CASE("zero-chunk buffers skip the divisibility test and scratch-only plans use S_in", "[layout]") {
  Plan p = onePlan(2, 0, 0, "test");
  ChunkLayout l = computeChunkLayout(p, 0, 1024, 0);
  CHECK(l.chunkBytes == 512);
  Plan s = onePlan(0, 0, 3, "test");
  CHECK(computeChunkLayout(s, 0, 96, 0).chunkBytes == 32);
  Plan none = onePlan(0, 0, 0, "test");
  ChunkLayout n = computeChunkLayout(none, 0, 64, 0);
  CHECK_FALSE(n.hasChunkBytes);
  CHECK_THAT(errorOf([&] { entryBytes(n, BufferType::Input, 0, 1); }),
             Catch::Contains("Output or Input chunks must be greater than 0"));
}

TEST_CASE("the size range uses the output size for allgather", "[layout]") {
  Plan p = onePlan(1, 2, 0, "allgather");
  p.minMessageSize = 2048;
  CHECK(computeChunkLayout(p, 0, 1024, 2048).chunkBytes == 1024);
  p.collective = "allreduce";
  p.gpus[0].outputChunks = 2;
  CHECK_THAT(errorOf([&] { computeChunkLayout(p, 0, 1024, 2048); }),
             Catch::Contains("Input or output size is not within the valid range"));
}

TEST_CASE("tbg slices cut at alignment granularity, first members get the extra unit", "[layout]") {
  ByteRange whole{160, 80}; // 5 units of 16 B
  TbgInfo t0{0, 3}, t1{1, 3}, t2{2, 3};
  ByteRange a = tbgSlice(whole, t0, 16), b = tbgSlice(whole, t1, 16), c = tbgSlice(whole, t2, 16);
  CHECK(a.offset == 160);
  CHECK(a.length == 32);
  CHECK(b.offset == 192);
  CHECK(b.length == 32);
  CHECK(c.offset == 224);
  CHECK(c.length == 16);
  ByteRange tiny = tbgSlice(ByteRange{0, 16}, TbgInfo{3, 4}, 16);
  CHECK(tiny.length == 0);
}

TEST_CASE("pipeline iterations and windows", "[layout]") {
  Plan p = onePlan(1, 1, 0);
  ChunkLayout l = computeChunkLayout(p, 0, 1000 * 16, 1000 * 16);
  CHECK(pipelineIterations(l, IterContext{4096, 1}) == 4); // ceil(16000 / 4096)
  CHECK_THAT(errorOf([&] { pipelineIterations(l, IterContext{16, 70}); }), Catch::Contains("at most 65535"));
  CHECK_THAT(errorOf([&] { pipelineIterations(l, IterContext{0, 1}); }), Catch::Contains("unit_size"));
  ByteRange w = pipelineWindow(16000, 3, 4096);
  CHECK(w.offset == 12288);
  CHECK(w.length == 16000 - 12288);
  CHECK(pipelineWindow(100, 5, 64).length == 0); // clipped, not wrapped (11.14)
}

TEST_CASE("scratch size doubles for packets and for double buffering", "[layout]") {
  Plan p = onePlan(2, 2, 3);
  ChunkLayout l = computeChunkLayout(p, 0, 1024, 1024);
  CHECK(scratchBytes(p, 0, l, false) == 3 * 512);
  CHECK(scratchBytes(p, 0, l, true) == 2 * 3 * 512);
  p.useDoubleScratchBuffer = true;
  p.protocol = "LL";
  CHECK(scratchBytes(p, 0, l, false) == 4 * 3 * 512);
}

TEST_CASE("channels pair the k-th channel toward a peer with the peer's k-th", "[layout]") {
  Plan p = parsePlan(R"({"name":"x","collective":"test","protocol":"Simple","inplace":false,"gpus":[
    {"id":0,"input_chunks":1,"output_chunks":1,"scratch_chunks":0,"threadblocks":[],
     "channels":[{"channel_type":"memory","connected_to":[1,1]},{"channel_type":"port","connected_to":[1]}],
     "remote_buffers":[],"semaphores":[]},
    {"id":1,"input_chunks":1,"output_chunks":1,"scratch_chunks":0,"threadblocks":[],
     "channels":[{"channel_type":"port","connected_to":[0]},{"channel_type":"memory","connected_to":[0]}],
     "remote_buffers":[],"semaphores":[]}]})");
  ResolvedPlan r = resolvePlan(p);
  REQUIRE(r.gpus[0].memoryChannels.size() == 2);
  CHECK(r.gpus[0].memoryChannels[0].peerChannel == 0);
  CHECK(r.gpus[0].memoryChannels[1].peerChannel == kNoChannel);
  CHECK(r.gpus[0].portChannels[0].peerChannel == 0);
  CHECK(r.gpus[1].memoryChannels[0].peerChannel == 0);
}

TEST_CASE("hostile sizes: chunk counts and alignments that overflow are refused, never divided by", "[layout][hostile]") {
  // input_chunks 2^63 x buffer_alignment 16 wraps to 0: messageSizesFor divided by it (SIGFPE).
  Plan p = onePlan(uint64_t(1) << 63, uint64_t(1) << 63, 0);
  p.bufferAlignment = 16;
  std::string why;
  CHECK_FALSE(messageSizesFor(p, 4096, &why));
  CHECK_THAT(why, Catch::Contains("does not fit in 64 bits"));
  // The validator names the JSON path of each count above 2^32 - 1 and of the alignment.
  Plan q = onePlan(uint64_t(1) << 32, 4, uint64_t(1) << 40);
  q.bufferAlignment = uint64_t(1) << 63;
  std::vector<std::string> paths;
  for (const PlanDiagnostic &d : checkPlan(q))
    paths.push_back(d.path);
  CHECK(std::count(paths.begin(), paths.end(), "gpus[0].input_chunks") == 1);
  CHECK(std::count(paths.begin(), paths.end(), "gpus[0].scratch_chunks") == 1);
  CHECK(std::count(paths.begin(), paths.end(), "buffer_alignment") == 1);
  CHECK(std::count(paths.begin(), paths.end(), "gpus[0].output_chunks") == 0);
}

TEST_CASE("scratch above MSCCL_MAX_SCRATCH_BYTES is refused before allocation", "[layout][hostile]") {
  Plan p = onePlan(2, 2, 4000000000u); // 4e9 scratch chunks of 512 B: 2 TB
  ChunkLayout l = computeChunkLayout(p, 0, 1024, 1024);
  ErrorKind kind{};
  std::string e = errorOf([&] { scratchBytes(p, 0, l, false); }, &kind);
  CHECK(kind == ErrorKind::InvalidSize);
  CHECK_THAT(e, Catch::Contains("scratch_chunks") && Catch::Contains("MSCCL_MAX_SCRATCH_BYTES"));
  // Overflowing products are refused the same way.
  Plan q = onePlan(1, 1, uint64_t(1) << 40);
  ChunkLayout big = computeChunkLayout(q, 0, uint64_t(1) << 40, uint64_t(1) << 40);
  CHECK_THAT(errorOf([&] { scratchBytes(q, 0, big, true); }), Catch::Contains("scratch limit"));
  // The environment variable lowers the limit.
  Plan small = onePlan(2, 2, 3);
  ChunkLayout s = computeChunkLayout(small, 0, 1024, 1024);
  ::setenv("MSCCL_MAX_SCRATCH_BYTES", "1000", 1);
  CHECK_THAT(errorOf([&] { scratchBytes(small, 0, s, false); }), Catch::Contains("limit of 1000 B"));
  ::setenv("MSCCL_MAX_SCRATCH_BYTES", "2048", 1);
  CHECK(scratchBytes(small, 0, s, false) == 3 * 512);
  // A malformed value is an error naming the variable, not a silent default.
  for (const char *bad : {"64G", "-1", "0", "1e9", " 5", "99999999999999999999999"}) {
    ::setenv("MSCCL_MAX_SCRATCH_BYTES", bad, 1);
    CHECK_THAT(errorOf([&] { scratchBytes(small, 0, s, false); }),
               Catch::Contains("MSCCL_MAX_SCRATCH_BYTES=\"" + std::string(bad) + "\" is not a positive decimal"));
  }
  ::unsetenv("MSCCL_MAX_SCRATCH_BYTES");
  CHECK(maxScratchBytes() == kDefaultMaxScratchBytes);
}
