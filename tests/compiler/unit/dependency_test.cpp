// Data-dependency analysis (dsl#6.4) including the quirks copied for parity.
#include "TestUtil.h"

#include "msccl/passes/Dependency.h"

#include <catch2/catch.hpp>

using namespace msccl::ir;
using namespace msccl::passes;
using msccl::test::names;

namespace {
std::vector<Op> deps(Program &p, uint32_t tb = 0) {
  std::vector<Op> ops = allOps(p.ir().gpus[0].threadblocks.at(tb));
  resolveDataDependency(ops);
  return ops;
}
} // namespace

TEST_CASE("RAW/WAR/WAW conflicts insert one nop; reads after reads do not", "[dependency]") {
  Program p(msccl::test::testOptions(1, 8, 8));
  auto r = p.rank(0);
  auto in = r.getInputBuffer(), out = r.getOutputBuffer();
  r.copy(out.slice(0, 2), in.slice(0, 2), 0);   // w o[0,1], r i[0,1]
  r.copy(out.slice(2, 4), in.slice(0, 2), 0);   // read-read on i: fine
  r.copy(out.slice(4, 5), out.slice(1, 2), 0);  // RAW on o1 -> nop
  r.copy(in.slice(4, 6), out.slice(6, 8), 0);   // no conflict after the clear
  r.copy(in.slice(5, 6), in.slice(7, 8), 0);    // WAW on i5 -> nop
  CHECK(names(deps(p)) == "copy copy nop copy copy nop copy");
}

TEST_CASE("nops and barriers clear the record; pipelines are one op outside", "[dependency]") {
  Program p(msccl::test::testOptions(1, 8, 8));
  auto r = p.rank(0);
  auto in = r.getInputBuffer(), out = r.getOutputBuffer();
  r.copy(out.slice(0, 1), in.slice(0, 1), 0);
  r.barrier({0});
  r.copy(in.slice(0, 1), out.slice(0, 1), 0);   // would conflict, but the nop cleared the record
  p.enterPipeline(1024, 1);
  r.copy(out.slice(1, 2), in.slice(1, 2), 0);
  r.copy(out.slice(2, 3), out.slice(1, 2), 0);  // RAW inside -> inner nop
  p.exitPipeline();
  r.copy(out.slice(3, 4), out.slice(2, 3), 0);  // RAW on o2 written by the pipeline -> nop
  CHECK(names(deps(p)) == "copy nop copy pipeline{copy nop copy} nop copy");
}

TEST_CASE("[BUG copied] accesses registered before a conflicting one are forgotten", "[dependency]") {
  Program p(msccl::test::testOptions(1, 8, 8));
  auto r = p.rank(0);
  auto in = r.getInputBuffer(), out = r.getOutputBuffer();
  r.copy(out.slice(1, 2), in.slice(0, 1), 0);                       // w o1
  r.reduce(in.slice(2, 3), {in.slice(3, 4)}, 0, nullptr, out.slice(1, 2)); // r i2, r i3, w o1 (conflict) -> nop
  r.copy(in.slice(2, 3), out.slice(5, 6), 0);                       // w i2: Python forgot the read of i2 -> no nop
  CHECK(names(deps(p)) == "copy nop re copy");
}

TEST_CASE("[BUG copied] zero-size chunks overlap their neighbours", "[dependency]") {
  Program p(msccl::test::testOptions(1, 8, 8));
  auto r = p.rank(0);
  auto in = r.getInputBuffer(), out = r.getOutputBuffer();
  r.copy(out.slice(1, 3), in.slice(0, 2), 0);  // w o[1,2]
  r.copy(out.slice(2, 2), in.slice(5, 5), 0);  // zero-size write at 2: interval [2,1] overlaps [1,2]
  CHECK(names(deps(p)) == "copy nop copy");
  Program q(msccl::test::testOptions(1, 8, 8));
  auto rq = q.rank(0);
  rq.copy(rq.getOutputBuffer().slice(1, 3), rq.getInputBuffer().slice(0, 2), 0);
  rq.copy(rq.getOutputBuffer().slice(4, 4), rq.getInputBuffer().slice(5, 5), 0); // [4,3] does not overlap [1,2]
  CHECK(names(deps(q)) == "copy copy");
}

TEST_CASE("packet ops: first source of repkt, packet writes and remote chunks are not tracked", "[dependency]") {
  Program p(msccl::test::testOptions(2, 8, 8));
  auto r = p.rank(0);
  auto in = r.getInputBuffer();
  auto s = p.scratchBuffer(0, 4);
  r.copyPackets(s.slice(0, 1), in.slice(0, 1), 0);   // cpkt: reads i0 only
  r.unpackPackets(in.slice(1, 2), s.slice(0, 1), 0); // upkt: writes i1 only
  r.reduce(in.slice(0, 1), {s.slice(1, 2)}, 0, nullptr, in.slice(3, 4), ReduceOperationType::Sum, true); // r s1, w i3
  CHECK(names(deps(p)) == "cpkt upkt repkt");
  r.copy(in.slice(0, 1), in.slice(6, 7), 0); // w i0 conflicts with cpkt's read of i0
  CHECK(names(deps(p)) == "cpkt upkt repkt nop copy");
}

TEST_CASE("a packet reduce reads its packet sources, not its accumulator (plan::syncAccess)", "[dependency]") {
  Program p(msccl::test::testOptions(2, 8, 8));
  auto r = p.rank(0);
  auto in = r.getInputBuffer();
  auto s = p.scratchBuffer(0, 4);
  r.reduce(in.slice(0, 1), {s.slice(1, 2)}, 0, nullptr, in.slice(3, 4), ReduceOperationType::Sum, true); // r s1, w i3
  r.copy(in.slice(0, 1), in.slice(6, 7), 0); // w i0: the accumulator is not tracked, no conflict
  CHECK(names(deps(p)) == "repkt copy");
  r.copy(s.slice(1, 2), in.slice(7, 8), 0); // w s1: conflicts with the read of the packet source
  CHECK(names(deps(p)) == "repkt copy nop copy");
}

TEST_CASE("an unfused switch reduce writes its local chunk and a switch store reads it (plan::syncAccess)", "[dependency]") {
  // The Python DSL gives switch ops no local accesses, so a chunk reduced through the switch and
  // then multicast from the same threadblock at another offset got no barrier between the two.
  Program p(msccl::test::testOptions(2, 4, 4));
  auto r0 = p.rank(0);
  auto out = r0.getOutputBuffer();
  auto swIn = p.switchChannel({0, 1}, BufferType::Input);
  auto swOut = p.switchChannel({0, 1}, BufferType::Output);
  swIn.atRank(0).reduce(2, 1, out.slice(2, 3), 0);     // glre: w o2 (not fused: other offset)
  swOut.atRank(0).broadcast(out.slice(2, 3), 3, 1, 0); // gstore: r o2 -> nop
  r0.copy(out.slice(0, 1), out.slice(1, 2), 0);        // r o1, w o0: no conflict
  r0.copy(out.slice(2, 3), out.slice(3, 4), 0);        // w o2 after gstore's read -> nop
  CHECK(names(deps(p)) == "glre nop gstore copy nop copy");
  // A store of a chunk no earlier op of the threadblock touched needs no barrier.
  swOut.atRank(0).broadcast(out.slice(1, 2), 1, 1, 1);
  swIn.atRank(0).reduce(0, 1, out.slice(3, 4), 1);
  CHECK(names(deps(p, 1)) == "gstore glre");
}
