// Instruction fusion (dsl#6.2), flag trimming (dsl#appendix-c) and nop insertion (dsl#6.3).
#include "TestUtil.h"

#include "msccl/passes/Fusion.h"
#include "msccl/passes/Pipeline.h"
#include "msccl/passes/SyncInsertion.h"

#include <catch2/catch.hpp>

using namespace msccl::ir;
using namespace msccl::passes;
using msccl::test::names;
using msccl::test::describe;

namespace {
/// Fusion + nop insertion on tb `tb` of rank 0 (no pairing check, no dependency pass).
std::vector<Op> fuseAndSync(Program &p, uint32_t tb = 0, bool fuse = true) {
  std::vector<Op> ops = allOps(p.ir().gpus[0].threadblocks.at(tb));
  if (fuse) fuseOperations(ops);
  addDataSync(ops);
  return ops;
}
} // namespace

TEST_CASE("dsl#appendix-c.1 and dsl#appendix-c.2: wait loses after before a release with before; acquire keeps after", "[fusion]") {
  Program p(msccl::test::testOptions(2, 4, 4));
  auto ch = p.memoryChannel(1, 0);
  auto sem = p.semaphore(0, 1);
  auto r = p.rank(0);
  auto in = r.getInputBuffer(), out = r.getOutputBuffer();
  r.copy(out.slice(0, 1), in.slice(0, 1), 0);
  r.copy(out.slice(1, 2), in.slice(1, 2), 0);
  ch.signal(0, SyncType::Before);
  ch.wait(0, SyncType::After);
  sem.release(0, SyncType::Both);
  CHECK(names(fuseAndSync(p)) == "copy copy nop signal wait nop sem_release nop");

  sem.acquire(1, SyncType::Both);
  ch.wait(1, SyncType::After);
  r.copy(out.slice(2, 3), in.slice(2, 3), 1);
  CHECK(names(fuseAndSync(p, 1)) == "nop sem_acquire nop wait nop copy");
}

TEST_CASE("dsl#appendix-c.3: semaphore fusion keeps duplicates and trims after", "[fusion]") {
  Program p(msccl::test::testOptions(1, 1, 1));
  auto s = p.semaphore(0, 0), s2 = p.semaphore(0, 0);
  s.acquire(0, SyncType::None);
  s.acquire(0, SyncType::After);
  s2.acquire(0, SyncType::None);
  s.release(0, SyncType::Before);
  s.release(0, SyncType::None);
  auto ops = fuseAndSync(p);
  REQUIRE(names(ops) == "sem_acquire nop sem_release");
  CHECK(ops[0].ids == std::vector<uint32_t>{0, 0, 1});
  CHECK(ops[2].ids == std::vector<uint32_t>{0, 0});
}

TEST_CASE("dsl#appendix-c.4 to dsl#appendix-c.6: signal/wait/flush fusion and unfused flags", "[fusion]") {
  Program p(msccl::test::testOptions(2, 1, 1));
  std::vector<MemoryChannel> ch;
  for (int i = 0; i < 4; ++i) ch.push_back(p.memoryChannel(1, 0));
  ch[0].signal(0);
  ch[1].signal(0);
  ch[2].wait(0);
  ch[3].wait(0);
  auto ops = fuseAndSync(p);
  REQUIRE(names(ops) == "nop signal nop wait nop");
  CHECK(ops[1].syncChannelIds.toList() == std::vector<uint32_t>{0, 1});
  CHECK(ops[3].syncChannelIds.toList() == std::vector<uint32_t>{2, 3});

  auto q0 = p.portChannel(1, 0), q1 = p.portChannel(1, 0);
  q0.flush(1, SyncType::After);
  q1.flush(1, SyncType::Before);
  ops = fuseAndSync(p, 1);
  REQUIRE(names(ops) == "nop flush nop");
  CHECK(ops[1].dataSync == SyncType::Both);

  ch[0].signal(2);
  ch[1].signal(2);
  CHECK(names(fuseAndSync(p, 2, false)) == "nop signal nop nop signal nop");
}

TEST_CASE("overlapping signal sets do not fuse; relaxed and plain never fuse", "[fusion]") {
  Program p(msccl::test::testOptions(2, 1, 1));
  auto a = p.memoryChannel(1, 0), b = p.memoryChannel(1, 0);
  a.signal(0, SyncType::None);
  a.signal(0, SyncType::None);
  b.signal(0, SyncType::None, true);
  CHECK(names(fuseAndSync(p)) == "signal signal rlxsignal");
}

TEST_CASE("CPython set order of fused channel ids: channel 9 then 1 prints [9, 1]", "[fusion][pyset]") {
  Program p(msccl::test::testOptions(2, 1, 1));
  std::vector<MemoryChannel> ch;
  for (int i = 0; i < 10; ++i) ch.push_back(p.memoryChannel(1, 0));
  // Register channels 0..9 in tb 0 in order (as ten earlier ops would), then signal on 9 and 1.
  for (auto &c : ch) p.ir().gpus[0].tb(0).addChannel(ChannelType::Memory, c.channelId());
  ch[9].signal(0, SyncType::None);
  ch[1].signal(0, SyncType::None);
  auto ops = fuseAndSync(p);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].syncChannelIds.toList() == std::vector<uint32_t>{9, 1});
}

TEST_CASE("data-transfer fusion rules dsl#fusion-F11 to dsl#fusion-F19", "[fusion]") {
  Program p(msccl::test::testOptions(3, 8, 8));
  auto r0 = p.rank(0);
  auto in = r0.getInputBuffer(), out = r0.getOutputBuffer();
  auto peer1 = p.rank(1).getOutputBuffer(), peer2 = p.rank(2).getOutputBuffer();
  auto m1 = p.memoryChannel(1, 0), m2 = p.memoryChannel(2, 0);
  // dsl#fusion-F12: puts to different peers fuse into one multi-destination put.
  m1.put(peer1.slice(0, 1), in.slice(0, 1), 0);
  m2.put(peer2.slice(0, 1), in.slice(1, 2), 0);
  // dsl#fusion-F11 needs equal first-source sizes: these gets do not fuse.
  m1.get(out.slice(0, 1), peer1.slice(2, 3), 1);
  m1.get(out.slice(1, 3), peer1.slice(3, 5), 1);
  // dsl#fusion-F14 + dsl#fusion-F15: re + re (same first src and dst) -> re with 3 sources; then + memory put -> res.
  r0.reduce(in.slice(4, 5), {in.slice(5, 6)}, 2, nullptr, out.slice(4, 5));
  r0.reduce(in.slice(4, 5), {in.slice(6, 7)}, 2, nullptr, out.slice(4, 5));
  m1.put(peer1.slice(4, 5), out.slice(4, 5), 2);
  auto sw = p.switchChannel({0, 1}, BufferType::Input);
  sw.atRank(0).reduce(1, 1, in.slice(1, 2), 3);
  sw.atRank(0).broadcast(in.slice(1, 2), 2, 1, 3);

  auto tb0 = fuseAndSync(p, 0);
  REQUIRE(names(tb0) == "put");
  CHECK(tb0[0].remoteDst.size() == 2);
  CHECK(tb0[0].channelIds == ChannelIdList{0, 1});
  CHECK(names(fuseAndSync(p, 1)) == "get get");
  auto tb2 = fuseAndSync(p, 2);
  REQUIRE(names(tb2) == "res");
  CHECK(tb2[0].localSrc.size() == 3);
  CHECK(tb2[0].channelType == ChannelType::Memory);
  auto tb3 = fuseAndSync(p, 3);
  REQUIRE(names(tb3) == "glres");
  CHECK(tb3[0].srcIndex == std::vector<int64_t>{1});
  CHECK(tb3[0].dstIndex == std::vector<int64_t>{2});
  CHECK(tb3[0].dstChannelIds.empty()); // one channel: the store's are the reduce's
}

TEST_CASE("a switch reduce and the store of its result through another switch channel fuse at one offset", "[fusion]") {
  // Out-of-place NVLS: reduce the inputs through one switch channel, multicast the sums into the
  // outputs through a second. The Python DSL leaves the pair unfused (a glre MSCCL++'s loader
  // rejects); here it is one glres whose dst entries name the second channel.
  Program p(msccl::test::testOptions(2, 4, 4));
  auto r0 = p.rank(0);
  auto out = r0.getOutputBuffer();
  auto swIn = p.switchChannel({0, 1}, BufferType::Input);
  auto swOut = p.switchChannel({0, 1}, BufferType::Output);
  swIn.atRank(0).reduce(1, 1, out.slice(1, 2), 0);
  swOut.atRank(0).broadcast(out.slice(1, 2), 1, 1, 0);
  // At different offsets the fused op could not say both (glres writes its source index into
  // its destination entries): left apart.
  swIn.atRank(0).reduce(2, 1, out.slice(2, 3), 1);
  swOut.atRank(0).broadcast(out.slice(2, 3), 3, 1, 1);
  // The reduce's destination is not the chunk the store's multicast writes on this rank (a
  // scratch chunk, later read by something else): fused, nothing would write it. Left apart.
  auto scratch = p.scratchBuffer(0, 4);
  swIn.atRank(0).reduce(3, 1, scratch.slice(0, 1), 2);
  swOut.atRank(0).broadcast(scratch.slice(0, 1), 3, 1, 2);

  auto tb0 = fuseAndSync(p, 0);
  REQUIRE(names(tb0) == "glres");
  CHECK(tb0[0].srcIndex == std::vector<int64_t>{1});
  CHECK(tb0[0].dstIndex == std::vector<int64_t>{1});
  CHECK(tb0[0].channelIds != tb0[0].dstChannelIds);
  CHECK(tb0[0].dstChannelIds.size() == 1);
  CHECK(names(fuseAndSync(p, 1)).rfind("glre ", 0) == 0);
  CHECK(names(fuseAndSync(p, 2)).rfind("glre ", 0) == 0);
}

TEST_CASE("packet reduction fusion: repkt + cpkt -> recpkt, + ppkt -> recspkt", "[fusion]") {
  Program p(msccl::test::testOptions(2, 4, 4));
  auto r0 = p.rank(0);
  auto s0 = p.scratchBuffer(0, 4);
  auto s1 = p.scratchBuffer(1, 4);
  auto in = r0.getInputBuffer();
  auto m = p.memoryChannel(1, 0);
  r0.reduce(in.slice(0, 1), {s0.slice(0, 1)}, 0, nullptr, std::nullopt, ReduceOperationType::Sum, true);
  r0.copyPackets(s0.slice(2, 3), in.slice(0, 1), 0);
  m.readPutPackets(s1.slice(2, 3), s0.slice(2, 3), 0);
  auto ops = fuseAndSync(p);
  REQUIRE(names(ops) == "recspkt");
  CHECK(ops[0].localPktDst.size() == 1);
  CHECK(ops[0].remoteDst.size() == 1);
}

TEST_CASE("a reduce becomes the op Python makes of it, by its form: dsl#fusion-F13 and dsl#fusion-F15 to dsl#fusion-F18", "[fusion]") {
  Program p(msccl::test::testOptions(3, 8, 8));
  auto r0 = p.rank(0);
  auto in = r0.getInputBuffer(), out = r0.getOutputBuffer();
  auto s0 = p.scratchBuffer(0, 8), s1 = p.scratchBuffer(1, 8), s2 = p.scratchBuffer(2, 8);
  auto peer1 = p.rank(1).getOutputBuffer(), peer2 = p.rank(2).getOutputBuffer();
  auto m1 = p.memoryChannel(1, 0), m2 = p.memoryChannel(2, 0);
  auto port1 = p.portChannel(1, 0);
  // tb 0, F15: rre + memory puts of its result -> rres (a reduce of peers' data keeps reading them).
  m1.reduce(in.slice(0, 1), {p.rank(1).getInputBuffer().slice(0, 1)}, 0);
  m1.put(peer1.slice(0, 1), in.slice(0, 1), 0);
  m2.put(peer2.slice(0, 1), in.slice(0, 1), 0);
  // tb 1, F16: repkt + memory ppkt of its result -> respkt.
  r0.reduce(in.slice(1, 2), {s0.slice(1, 2)}, 1, nullptr, std::nullopt, ReduceOperationType::Sum, true);
  m1.putPackets(s1.slice(1, 2), in.slice(1, 2), 1);
  // tb 2, F17 + F18: repkt + cpkt -> recpkt; + memory ppkt of its result -> recspkt.
  r0.reduce(in.slice(2, 3), {s0.slice(2, 3)}, 2, nullptr, std::nullopt, ReduceOperationType::Sum, true);
  r0.copyPackets(s0.slice(3, 4), in.slice(2, 3), 2);
  m1.putPackets(s1.slice(3, 4), in.slice(2, 3), 2);
  // tb 3: a sending packet reduce never gains a packet copy (F17 is repkt's only).
  r0.reduce(in.slice(4, 5), {s0.slice(4, 5)}, 3, nullptr, std::nullopt, ReduceOperationType::Sum, true);
  m1.putPackets(s1.slice(4, 5), in.slice(4, 5), 3);
  r0.copyPackets(s0.slice(5, 6), in.slice(4, 5), 3);
  // tb 4: port puts and puts that signal never fuse into a reduce.
  r0.reduce(in.slice(5, 6), {in.slice(6, 7)}, 4);
  port1.put(peer1.slice(5, 6), in.slice(5, 6), 4);
  port1.putWithSignal(peer1.slice(6, 7), in.slice(5, 6), 4);
  // tb 5, F13: rppkt relays of one source -> one rppkt; a packet put of a plain reduce's result does not fuse.
  m1.readPutPackets(s1.slice(6, 7), s0.slice(6, 7), 5);
  m2.readPutPackets(s2.slice(6, 7), s0.slice(6, 7), 5);
  r0.reduce(in.slice(7, 8), {out.slice(7, 8)}, 5);
  m1.putPackets(s1.slice(7, 8), in.slice(7, 8), 5);

  auto tb0 = fuseAndSync(p, 0);
  REQUIRE(names(tb0) == "rres");
  CHECK(tb0[0].remoteSrc.size() == 1);
  CHECK(tb0[0].remoteDst.size() == 2);
  CHECK(names(fuseAndSync(p, 1)) == "respkt");
  auto tb2 = fuseAndSync(p, 2);
  REQUIRE(names(tb2) == "recspkt");
  CHECK(tb2[0].localPktDst.size() == 1);
  CHECK(tb2[0].remoteDst.size() == 1);
  CHECK(names(fuseAndSync(p, 3)) == "respkt cpkt");
  CHECK(names(fuseAndSync(p, 4)) == "re put pws");
  auto tb5 = fuseAndSync(p, 5);
  REQUIRE(names(tb5) == "rppkt re ppkt");
  CHECK(tb5[0].localSrc.size() == 1);
  CHECK(tb5[0].remoteDst.size() == 2);
}

TEST_CASE("pipeline quirks: dsl#fusion-F3 absorbs a pipeline that ends with a sync and skips its inner fusion", "[fusion][pipeline]") {
  auto build = [](bool leadingNop) {
    auto o = msccl::test::testOptions(2, 1, 1);
    o.autoSync = false;
    auto p = std::make_unique<Program>(o);
    auto a = p->memoryChannel(1, 0), b = p->memoryChannel(1, 0);
    if (leadingNop) p->rank(0).barrier({0});
    p->enterPipeline(1024, 1);
    a.signal(0, SyncType::None);
    b.signal(0, SyncType::None);
    p->rank(0).barrier({0});
    p->exitPipeline();
    return p;
  };
  auto with = build(true);
  CHECK(names(fuseAndSync(*with)) == "pipeline{signal signal nop}");
  auto without = build(false);
  auto ops = fuseAndSync(*without);
  REQUIRE(names(ops) == "pipeline{signal nop}");
  CHECK(ops[0].ops[0].syncChannelIds.size() == 2);
}

TEST_CASE("pipelines group collected ops by (rank, tb) in first-appearance order", "[pipeline]") {
  Program p(msccl::test::testOptions(2, 4, 4));
  auto r0 = p.rank(0), r1 = p.rank(1);
  auto i0 = r0.getInputBuffer(), o0 = r0.getOutputBuffer(), i1 = r1.getInputBuffer(), o1 = r1.getOutputBuffer();
  p.enterPipeline(4096, 2);
  CHECK_THROWS_WITH(p.enterPipeline(1, 1), "Nested Pipelines are not Supported.");
  r1.copy(o1.slice(0, 1), i1.slice(0, 1), 0);
  r0.copy(o0.slice(0, 1), i0.slice(0, 1), 2);
  r1.copy(o1.slice(1, 2), i1.slice(1, 2), 0);
  p.exitPipeline();
  r0.copy(o0.slice(2, 3), i0.slice(2, 3), 2);
  unpackOps(p.ir()); // the elaborator's ops are packed until the passes run
  auto &g0 = p.ir().gpus[0];
  REQUIRE(g0.threadblocks.size() == 3);
  CHECK(names(g0.threadblocks[2].ops) == "pipeline{copy} copy");
  CHECK(g0.threadblocks[2].ops[0].unit == 4096);
  CHECK(names(p.ir().gpus[1].threadblocks[0].ops) == "pipeline{copy copy}");
}

TEST_CASE("pipeline reporting: trailing nop reports before (Python bug)", "[fusion][pipeline]") {
  Op p;
  p.kind = OpKind::Pipeline;
  Op copy;
  copy.kind = OpKind::Copy;
  Op nop;
  Op sig;
  sig.kind = OpKind::Signal;
  sig.dataSync = SyncType::After;
  p.ops = {copy, nop};
  CHECK(pipelineDataSync(p) == SyncType::Before);
  p.ops = {copy, sig};
  CHECK(pipelineDataSync(p) == SyncType::After);
  p.ops = {};
  CHECK(pipelineDataSync(p) == SyncType::None);
}
