// Every DslError of Dsl.h: the Python DSL's message text (spec dsl#7), intended errors where
// Python fails with AttributeError/TypeError, and the checks' order.
#include "TestUtil.h"

#include "msccl/backend/Lower.h"

#include <catch2/catch.hpp>

using namespace msccl::ir;

namespace {
ProgramOptions opts(int64_t ranks = 2, int64_t in = 4, int64_t out = 4) { return msccl::test::testOptions(ranks, in, out); }
} // namespace

TEST_CASE("program options errors", "[errors]") {
  auto o = opts();
  o.protocol = "XX";
  CHECK_THROWS_WITH(Program(o), "Given protocol: XX. Must be either Simple, LL");
  o = opts();
  o.numRanks = 3;
  CHECK_THROWS_WITH(Program(o), "Number of ranks 3 exceeds the number of ranks of the collective (2).");
  o = opts();
  o.instances = -1;
  CHECK_THROWS_WITH(Program(o), "Number of instances must be >= 0, got -1");
  o = opts();
  o.numRanks = -1; // defaults to the collective's count
  CHECK(Program(o).numRanks() == 2);
}

TEST_CASE("rank, buffer and slicing errors", "[errors]") {
  Program p(opts());
  CHECK_THROWS_WITH(p.rank(9), "Rank 9 is out of bounds. Number of ranks: 2");
  CHECK_THROWS_WITH(p.rank(-1), "Rank -1 is out of bounds. Number of ranks: 2");
  CHECK_THROWS_WITH(p.scratchBuffer(2, 1), "Rank 2 is out of bounds. Number of ranks: 2");
  auto in = p.rank(0).getInputBuffer();
  CHECK_THROWS_WITH(Buffer::throwNotASlice("int"), "Buffer indices must be slices, not int");
  CHECK_THROWS_WITH(in.slice(0, 2, 2), "Buffer slicing does not support step != 1 (got step=2)");
  CHECK_THROWS_WITH(in.slice(-1, std::nullopt), "Buffer slicing does not support negative indices (got start=-1, stop=None)");
  CHECK_THROWS_WITH(in.slice(3, 1), "Buffer slice start (3) must be <= stop (1)");
  CHECK_THROWS_WITH(in.slice(2, 5), "Index range from 2 - 5 is out of bounds for buffer i. Buffer size: 4");
  p.scratchBuffer(0, 3);
  auto s = p.scratchBuffer(0, 2);
  CHECK(s.slice(std::nullopt, std::nullopt) == Chunk{0, BufferType::Scratch, 3, 2});
  CHECK_THROWS_WITH(s.slice(1, 3), "Index range from 4 - 6 is out of bounds for buffer s. Buffer size: 5");
  CHECK(in.slice(4, 4).size == 0); // zero-size chunks are accepted
}

TEST_CASE("Rank op errors, in Python's check order", "[errors]") {
  Program p(opts());
  auto r0 = p.rank(0);
  auto i0 = r0.getInputBuffer(), o0 = r0.getOutputBuffer(), i1 = p.rank(1).getInputBuffer();
  auto s0 = p.scratchBuffer(0, 4);
  CHECK_THROWS_WITH(r0.copy(o0.slice(0, 1), i1.slice(0, 2), 0), "Inconsistent ranks: dst 0, src 1, self 0. They must match.");
  CHECK_THROWS_WITH(r0.copy(o0.slice(0, 1), i0.slice(0, 2), 0), "Inconsistent chunk sizes: dst 1, src 2. They must match.");
  CHECK_THROWS_WITH(r0.unpackPackets(o0.slice(0, 1), i0.slice(0, 1), 0), "Source chunk must be of type scratch.");
  CHECK_THROWS_WITH(r0.copyPackets(o0.slice(0, 1), i0.slice(0, 1), 0), "Destination chunk must be of type scratch.");
  CHECK_THROWS_WITH(r0.copy(o0.slice(0, 1), i0.slice(0, 1), std::nullopt),
                    "Either 'tb' (thread block ID) or 'tb_group' (ThreadBlockGroup) must be provided, but both are None.");
  CHECK_THROWS_WITH(r0.reduce(i0.slice(0, 1), {}, 0), "Other chunk empty.");
  CHECK_THROWS_WITH(r0.reduce(i0.slice(0, 1), {i1.slice(1, 2)}, 0), "Other chunk rank 1 does not match current rank 0.");
  CHECK_THROWS_WITH(r0.reduce(i0.slice(0, 1), {i0.slice(1, 3)}, 0), "Inconsistent chunk sizes: other 2, src 1. They must match.");
  CHECK_THROWS_WITH(r0.reduce(i0.slice(0, 1), {i0.slice(1, 2)}, 0, nullptr, std::nullopt, ReduceOperationType::Sum, true),
                    "Other chunk must be of type scratch.");
  CHECK_THROWS_WITH(r0.reduce(i0.slice(0, 1), {i0.slice(1, 2)}, 0, nullptr, o0.slice(0, 2)),
                    "Inconsistent chunk sizes: dst 2, src 1. They must match.");
  CHECK_THROWS_WITH(r0.barrier({}), "Barrier requires at least thread block.");
  CHECK_THROWS_WITH(ThreadBlockGroup({1, 2, 1}), "Duplicate thread block found at index 2: 1");
  CHECK_THROWS_WITH(p.semaphore(5, 0), "Source rank 5 is out of bounds. Number of ranks: 2");
  // Nothing was registered by the failing calls.
  CHECK(p.ir().gpus[0].threadblocks.empty());
  (void)s0;
}

TEST_CASE("channel errors", "[errors]") {
  Program p(opts());
  CHECK_THROWS_WITH(p.memoryChannel(0, 4), "Source rank 4 is out of bounds. Number of ranks: 2");
  CHECK_THROWS_WITH(p.portChannel(7, 4), "Source rank 4 is out of bounds. Number of ranks: 2");
  CHECK_THROWS_WITH(p.portChannel(7, 0), "Destination rank 7 is out of bounds. Number of ranks: 2");
  auto m = p.memoryChannel(1, 0);
  auto q = p.portChannel(1, 0);
  auto i0 = p.rank(0).getInputBuffer(), i1 = p.rank(1).getInputBuffer();
  auto s0 = p.scratchBuffer(0, 4), s1 = p.scratchBuffer(1, 4);
  CHECK_THROWS_WITH(m.put(i1.slice(0, 1), i1.slice(0, 1), 0), "Source chunk rank 1 does not match current channel source rank 0.");
  CHECK_THROWS_WITH(m.put(i0.slice(0, 1), i0.slice(0, 1), 0), "Dst chunk rank 0 does not match current channel dst rank 1.");
  CHECK_THROWS_WITH(m.put(i1.slice(0, 2), i0.slice(0, 1), 0), "Destination chunk size 2 does not match source chunk size 1.");
  CHECK_THROWS_WITH(m.get(i1.slice(0, 1), i1.slice(0, 1), 0), "Source chunk rank 1 does not match current channel source rank 0.");
  CHECK_THROWS_WITH(m.get(i0.slice(0, 1), i0.slice(0, 1), 0), "Dst chunk rank 0 does not match current channel dst rank 1.");
  CHECK_THROWS_WITH(m.putPackets(i1.slice(0, 1), i0.slice(0, 1), 0), "Destination chunk must be of type scratch.");
  CHECK_THROWS_WITH(q.putPackets(i1.slice(0, 1), i0.slice(0, 1), 0), "Destination chunk must be of type scratch.");
  CHECK_THROWS_WITH(m.readPutPackets(s1.slice(0, 1), i0.slice(0, 1), 0), "Source chunk must be of type scratch.");
  CHECK_THROWS_WITH(q.readPutPackets(i1.slice(0, 1), s0.slice(0, 1), 0), "Destination chunk must be of type scratch.");
  CHECK_THROWS_WITH(m.readPutPackets(s1.slice(0, 1), s0.slice(0, 1), std::nullopt),
                    "Either 'tb' (thread block ID) or 'tb_group' (ThreadBlockGroup) must be provided, but both are None.");
  CHECK_THROWS_WITH(m.reduce(i1.slice(0, 1), {}, 0), "Destination chunk rank 1 does not match current channel source rank 0.");
  CHECK_THROWS_WITH(m.reduce(i0.slice(0, 1), {}, 0, nullptr, i0.slice(0, 2)), "Source chunk size 1 does not match destination chunk size 2.");
  CHECK_THROWS_WITH(m.reduce(i0.slice(0, 1), {i0.slice(0, 1)}, 0), "Source chunk rank 0 does not match current channel dst rank 1.");
  CHECK_THROWS_WITH(m.reduce(i0.slice(0, 1), {i1.slice(0, 2)}, 0), "Source chunk size 2 does not match local source chunk size 1.");
  CHECK_THROWS_WITH(q.put(i1.slice(0, 1), i0.slice(0, 1), -1), "Thread block -1 is out of range (0..65535).");
}

TEST_CASE("switch channel errors", "[errors]") {
  Program p(opts(2, 4, 4));
  CHECK_THROWS_WITH(p.switchChannel({0, 1, 9}, BufferType::Input), "One or more ranks in [0, 1, 9] are out of bounds. Number of ranks: 2");
  auto sw = p.switchChannel({0, 1}, BufferType::Input);
  auto i0 = p.rank(0).getInputBuffer();
  auto s0 = p.scratchBuffer(0, 2);
  auto o = opts(3, 4, 4);
  Program p3(o);
  auto sw3 = p3.switchChannel({0, 1}, BufferType::Scratch);
  CHECK_THROWS_WITH(sw3.atRank(2), "Rank 2 is not part of this SwitchChannel's rank group.");
  auto v = sw.atRank(0);
  auto i2 = p3.rank(2).getInputBuffer();
  CHECK_THROWS_WITH(v.reduce(0, 1, i2.slice(0, 1), 0), "Destination chunk rank 2 is not part of the rank group [0, 1].");
  CHECK_THROWS_WITH(v.reduce(0, 2, i0.slice(0, 1), 0), "Destination chunk size 1 does not match the required size 2.");
  CHECK_THROWS_WITH(v.reduce(3, 2, i0.slice(0, 2), 0), "Buffer size 4 is smaller than required size 5 for rank 0.");
  CHECK_THROWS_WITH(v.broadcast(i2.slice(0, 1), 0, 1, 0), "Destination chunk rank 2 is not part of the rank group [0, 1].");
  CHECK_THROWS_WITH(v.broadcastPackets(i0.slice(0, 1), 0, 1, 0), "Source chunk must be of type scratch for the packet broadcast.");
  CHECK_THROWS_WITH(v.broadcastPackets(s0.slice(0, 1), 0, 1, 0), "Destination buffer must be of type scratch for the packet broadcast.");
  auto s30 = p3.scratchBuffer(0, 2);
  p3.scratchBuffer(1, 1);
  CHECK_THROWS_WITH(sw3.atRank(0).broadcastPackets(s30.slice(0, 2), 0, 1, 0), "Source chunk size 2 does not match the required size 1.");
  CHECK_THROWS_WITH(sw3.atRank(0).broadcastPackets(s30.slice(0, 2), 0, 2, 0), "Buffer size 1 is smaller than required size 2 for rank 1.");
}

TEST_CASE("signal/wait pairing error names the smallest mismatching key; compile is idempotent", "[errors][pairing]") {
  Program p(opts(3, 1, 1));
  p.memoryChannel(2, 1).signal(0);
  p.portChannel(1, 0).signal(0);
  CHECK_THROWS_WITH(msccl::backend::compile(p),
                    "Signal/Wait mismatch on port: rank 0 issues 1 signal(s) to rank 1, but rank 1 performs 0 wait(s) for rank 0. "
                    "Every signal must be matched by a corresponding wait on the peer rank over a channel of the same type.");
  p.portChannel(0, 1).wait(0);
  p.memoryChannel(1, 2).wait(0);
  auto a = msccl::backend::compile(p);
  auto b = msccl::backend::compile(p);
  CHECK(a == b);
  CHECK(a.gpus.size() == 3);
}

TEST_CASE("ReplicationPolicy::None keeps indices (Python crashes)", "[replication]") {
  auto o = opts(1, 4, 4);
  o.instances = 2;
  o.replicationPolicy = ReplicationPolicy::None;
  Program p(o);
  auto r = p.rank(0);
  r.copy(r.getOutputBuffer().slice(1, 3), r.getInputBuffer().slice(0, 2), 0);
  auto plan = msccl::backend::compile(p);
  REQUIRE(plan.gpus[0].threadblocks.size() == 2);
  CHECK(plan.gpus[0].inputChunks == 8);
  for (auto &tb : plan.gpus[0].threadblocks) {
    CHECK(tb.ops[0].src[0].index == 0);
    CHECK(tb.ops[0].dst[0].index == 1);
  }
}

TEST_CASE("collectives come from the collectives table", "[errors]") {
  using msccl::runtime::CollectiveKind;
  // Chunk counts follow the row's InBlocks/OutBlocks: One = chunk_factor, PerRank = n * chunk_factor.
  Collective ag = Collective::make(CollectiveKind::AllGather, 4, 3, false);
  CHECK(ag.name == "allgather");
  CHECK(ag.inputChunks == 3);
  CHECK(ag.outputChunks == 12);
  Collective rs = Collective::make(CollectiveKind::ReduceScatter, 4, 3, true);
  CHECK(rs.inputChunks == 12);
  CHECK(rs.outputChunks == 3);
  CHECK(rs.inplace);
  Collective bc = Collective::make(CollectiveKind::Broadcast, 8, 2, false);
  CHECK(bc.inputChunks == 2);
  CHECK(bc.outputChunks == 2);
  CHECK_THROWS_WITH(Collective::make(CollectiveKind::Other, 2, 1, false),
                    "the collectives table has no DSL class for collective ``");
  CHECK_THROWS_WITH(Collective::make(CollectiveKind::AllToAll, 0, 1, false), "Number of ranks must be at least 1, got 0.");
}
