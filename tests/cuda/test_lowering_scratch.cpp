// Host-only tests of how the CUDA lowering addresses scratch (msccl/cuda/Lowering.h): a peer's or
// switch member's scratch is addressed with that owner's half, the half is 16-byte aligned,
// reuse_resources windows wrap inside the slot (and agree with the CPU executor's arithmetic),
// and the packet reduce ops write as packets exactly the entries lowering checked as packets.
#include "msccl/cuda/Lowering.h"
#include "LoweringInternal.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Layout.h"

#include <catch2/catch.hpp>

#include <string>

using namespace msccl;
using namespace msccl::cuda;

namespace {

/// Two ranks with double scratch buffers of different sizes (rank 0: 1 chunk, rank 1: 3
/// chunks). Rank 0 puts its input chunk into rank 1's scratch chunk 2 over a memory channel and
/// reduces over a switch channel on both ranks' scratch chunk 0.
plan::Plan twoRankPlan() {
  return plan::parsePlan(R"({"name":"t","collective":"test","protocol":"Simple","inplace":false,"reuse_resources":false,
    "gpus":[{"id":0,"input_chunks":1,"output_chunks":1,"scratch_chunks":1,
      "threadblocks":[{"id":0,"ops":[
          {"name":"put","src_buff":[{"type":"i","index":0,"size":1}],"dst_buff":[{"buffer_id":0,"index":2,"size":1}],"channel_type":"memory"},
          {"name":"glres","src_buff":[{"switch_channel_id":0,"index":0,"size":1}],"dst_buff":[{"switch_channel_id":0,"index":0,"size":1}],"channel_type":"switch","reduce_op":"sum"}],
        "channels":[{"channel_type":"memory","channel_ids":[0]},{"channel_type":"switch","channel_ids":[0]}],
        "remote_buffer_refs":[{"access_channel_type":"memory","remote_buffer_ids":[0,1]}]}],
      "channels":[{"channel_type":"memory","connected_to":[1]},
                  {"channel_type":"switch","buffer_type":"s","rank_groups":[{"size":2,"ranks":[0,1]}]}],
      "remote_buffers":[{"rank":1,"type":"s","access_channel_types":["memory"]},{"rank":1,"type":"o","access_channel_types":["memory"]}],
      "semaphores":[]},
     {"id":1,"input_chunks":1,"output_chunks":1,"scratch_chunks":3,"threadblocks":[],
      "channels":[{"channel_type":"memory","connected_to":[0]},
                  {"channel_type":"switch","buffer_type":"s","rank_groups":[{"size":2,"ranks":[0,1]}]}],
      "remote_buffers":[],"semaphores":[]}],
    "num_threads_per_block":256,"use_double_scratch_buffer":true,"buffer_alignment":16,"min_message_size":0,"max_message_size":18446744073709551615})");
}

/// One rank copying input chunk 0 to scratch chunk 0 inside a pipeline of `unit` bytes (or
/// outside any pipeline when unit is 0), with reuse_resources.
plan::Plan reusePlan(uint64_t unit) {
  std::string copy = R"({"name":"copy","src_buff":[{"type":"i","index":0,"size":1}],"dst_buff":[{"type":"s","index":0,"size":1}]})";
  std::string op = unit ? R"({"name":"pipeline","iter_context":{"unit_size":)" + std::to_string(unit) +
                              R"(,"num_chunks":1},"ops":[)" + copy + "]}"
                        : copy;
  return plan::parsePlan(R"({"name":"t","collective":"test","protocol":"Simple","inplace":false,"reuse_resources":true,
    "gpus":[{"id":0,"input_chunks":1,"output_chunks":1,"scratch_chunks":1,
      "threadblocks":[{"id":0,"ops":[)" + op + R"(],"channels":[],"remote_buffer_refs":[]}],
      "channels":[],"remote_buffers":[],"semaphores":[]}],
    "num_threads_per_block":256,"use_double_scratch_buffer":false,"buffer_alignment":16,"min_message_size":0,"max_message_size":18446744073709551615})");
}

} // namespace

TEST_CASE("a peer's and a switch member's scratch use the owner's half", "[cuda][lowering]") {
  auto ranks = lowerForDevice(twoRankPlan(), 64, 64);
  REQUIRE(ranks.size() == 2);
  const LoweredRank &r0 = ranks[0], &r1 = ranks[1];
  // Different scratch sizes, so different halves: using our own half in the peer is wrong.
  CHECK(r0.scratchHalf == 64);
  CHECK(r1.scratchHalf == 3 * 64);
  REQUIRE(r0.remoteScratchHalf.size() == 2);
  CHECK(r0.remoteScratchHalf[0] == r1.scratchHalf); // rank 1's scratch
  CHECK(r0.remoteScratchHalf[1] == 0);              // rank 1's output: no half
  REQUIRE(r0.switchScratchHalf.size() == 1);
  REQUIRE(r0.switchScratchHalf[0].size() == 2);
  CHECK(r0.switchScratchHalf[0][0] == r0.scratchHalf);
  CHECK(r0.switchScratchHalf[0][1] == r1.scratchHalf);
  // The put lands in rank 1's scratch chunk 2, inside rank 1's half (not rank 0's).
  const DevEntry &dst = r0.entries.at(r0.ops.at(0).entryBegin + 1);
  CHECK(dst.base == (uint8_t)DevBase::Remote);
  CHECK(dst.offset == 2 * 64);
  CHECK(dst.offset + dst.length <= r1.scratchHalf);
  // A switch group is bounded by its smallest member's half.
  plan::Plan p = twoRankPlan();
  p.gpus[0].threadblocks[0].ops[1].src[0].index = 1;
  p.gpus[0].threadblocks[0].ops[1].dst[0].index = 1;
  CHECK_THROWS_WITH(lowerForDevice(p, 64, 64), Catch::Contains("exceed the switch group's scratch buffer of 64 bytes"));
}

TEST_CASE("the scratch half is 16-byte aligned", "[cuda][lowering]") {
  // buffer_alignment 8 (refused by validatePlan, but lowering must not rely on it): one 24-byte
  // scratch chunk per half would put the second half at byte 24.
  plan::Plan p = twoRankPlan();
  p.bufferAlignment = 8;
  p.gpus[0].threadblocks[0].ops.pop_back(); // no switch op: 24-byte chunks are not packet-aligned
  p.gpus[0].threadblocks[0].channels.pop_back();
  for (plan::Gpu &g : p.gpus) g.channels.pop_back();
  auto ranks = lowerForDevice(p, 24, 24);
  for (const LoweredRank &r : ranks) {
    INFO("rank " << r.rank);
    CHECK(r.scratchHalf % 16 == 0);
    CHECK(r.scratchHalf >= 24 * p.gpus[r.rank].scratchChunks);
    CHECK(r.scratchBytes == 2 * r.scratchHalf);
  }
  CHECK(ranks[0].scratchHalf == 32);
  CHECK(ranks[0].remoteScratchHalf[0] == ranks[1].scratchHalf);
  CHECK(ranks[1].scratchHalf == 80); // 72 rounded up
}

TEST_CASE("reuse_resources: scratch windows wrap inside the slot", "[cuda][lowering]") {
  // SC = 64 MiB / scratch_chunks = 64 MiB; a chunk of 128 MiB is larger, so scratch holds one
  // slot and scratch entries must wrap modulo SC.
  const uint64_t MiB = 1 << 20, c = 128 * MiB, slot = 64 * MiB;
  SECTION("inside a pipeline the wrapped windows fit") {
    auto r = lowerForDevice(reusePlan(MiB), c, c)[0];
    CHECK(r.reuseSlotBytes == slot);
    CHECK(r.scratchBytes == slot);
    const DevEntry &dst = r.entries.at(r.ops.at(1).entryBegin + 1);
    CHECK(dst.length == c); // the entry itself is larger than scratch
    // The kernel's window arithmetic agrees with the CPU executor's (Layout.h + wrap).
    for (uint64_t it : {uint64_t(0), uint64_t(1), uint64_t(63), uint64_t(64), uint64_t(65), uint64_t(127), uint64_t(128)}) {
      INFO("iteration " << it);
      uint64_t off = 0, len = 0;
      pipelineWindowBytes(dst.offset, dst.length, true, it * MiB, MiB, r.reuseSlotBytes, off, len);
      runtime::ByteRange w = runtime::pipelineWindow(dst.length, it, MiB);
      CHECK(len == w.length);
      if (len) CHECK(off == dst.offset + w.offset % slot);
      CHECK(off + len <= r.scratchBytes);
      // A non-scratch entry does not wrap.
      pipelineWindowBytes(dst.offset, dst.length, false, it * MiB, MiB, r.reuseSlotBytes, off, len);
      if (len) CHECK(off == dst.offset + w.offset);
    }
  }
  SECTION("a window that straddles the slot end is refused") {
    // 48 MiB windows: the second one starts at 48 MiB and ends past the 64 MiB slot.
    CHECK_THROWS_WITH(lowerForDevice(reusePlan(48 * MiB), c, c), Catch::Contains("exceed the scratch buffer of 67108864 bytes"));
  }
  SECTION("outside a pipeline the whole entry must fit") {
    CHECK_THROWS_WITH(lowerForDevice(reusePlan(0), c, c), Catch::Contains("exceed the scratch buffer"));
  }
  SECTION("chunks smaller than the slot are laid out as without reuse") {
    auto r = lowerForDevice(reusePlan(1024), 64 * 1024, 64 * 1024)[0];
    CHECK(r.reuseSlotBytes == slot);
    CHECK(r.scratchBytes == 64 * 1024);
  }
}

TEST_CASE("packet reduce ops write as packets exactly the entries checked as packets", "[cuda][lowering]") {
  using plan::ChannelType;
  using plan::EntryAccess;
  using plan::OpType;
  // The kernel's packet handler writes the entries plan::entryAccess calls Packets; the lowering
  // bounds-checks those entryIsPacket names. Both read the same roles and must agree.
  for (OpType t : {OpType::ReducePackets, OpType::ReduceCopyPackets, OpType::ReduceSendPackets, OpType::ReduceCopySendPackets}) {
    for (uint32_t k = 0; k < 4; ++k) {
      INFO(plan::opName(t) << " dst entry " << k);
      CHECK((plan::entryAccess(t, false, k) == EntryAccess::Packets) == entryIsPacket(t, ChannelType::Memory, false, k));
    }
    CHECK(plan::entryAccess(t, false, 0) == EntryAccess::Plain); // the accumulator copy
  }
  CHECK(plan::entryAccess(OpType::ReducePackets, false, 2) == EntryAccess::None); // ignored, as by MSCCL++
  CHECK(plan::entryAccess(OpType::ReduceSendPackets, false, 2) == EntryAccess::Packets);
}

TEST_CASE("repkt with an extra dst entry lowers and is checked as plain data", "[cuda][lowering]") {
  // repkt: d = s1 op s0 into dst[0]; dst[1] is ignored. Its plain range fits the output, its
  // packet range (twice the offset) would not: the op lowers, and nothing writes packets there.
  plan::Plan p = plan::parsePlan(R"({"name":"t","collective":"test","protocol":"LL","inplace":false,"reuse_resources":false,
    "gpus":[{"id":0,"input_chunks":1,"output_chunks":2,"scratch_chunks":1,
      "threadblocks":[{"id":0,"ops":[
        {"name":"repkt","src_buff":[{"type":"i","index":0,"size":1},{"type":"s","index":0,"size":1}],
         "dst_buff":[{"type":"o","index":0,"size":1},{"type":"o","index":1,"size":1}]}],
        "channels":[],"remote_buffer_refs":[]}],
      "channels":[],"remote_buffers":[],"semaphores":[]}],
    "num_threads_per_block":256,"use_double_scratch_buffer":false,"buffer_alignment":16,"min_message_size":0,"max_message_size":18446744073709551615})");
  std::vector<LoweredRank> r;
  REQUIRE_NOTHROW(r = lowerForDevice(p, 64, 128));
  const DevOp &op = r[0].ops.at(0);
  CHECK(op.nDst == 2);
  CHECK(plan::entryAccess(plan::OpType(op.type), false, 1) == plan::EntryAccess::None); // nothing writes packets there
  // rcpkt with the same entries writes dst[1] as packets: [128, 256) is past the output.
  p.gpus[0].threadblocks[0].ops[0].type = plan::OpType::ReduceCopyPackets;
  CHECK_THROWS_WITH(lowerForDevice(p, 64, 128), Catch::Contains("dst_buff[1]: bytes [128, 256) (packets) exceed the output buffer"));
}
