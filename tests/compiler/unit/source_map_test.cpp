// Op locations (ir::Program::setSource, Op::source) through the passes, and backend::SourceMap.
#include "msccl/backend/Lower.h"
#include "msccl/backend/SourceMap.h"
#include "msccl/ir/Dsl.h"
#include "msccl/ir/IR.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <catch2/catch.hpp>

using namespace msccl;
using namespace msccl::ir;

namespace {
/// A source buffer whose line L (1-based) starts with "callL": setSource(at(L)) marks line L, col 1.
struct Src {
  llvm::SourceMgr sm;
  const char *start;
  Src() {
    sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy("call1\ncall2\ncall3\ncall4\n", "prog.msccl"), llvm::SMLoc());
    start = sm.getMemoryBuffer(1)->getBufferStart();
  }
  llvm::SMLoc at(int line) const { return llvm::SMLoc::getFromPointer(start + 6 * (line - 1)); }
};
} // namespace

TEST_CASE("fused ops keep the first location and list the others; instances share it", "[source]") {
  Src src;
  ProgramOptions o;
  o.collective = Collective::make(msccl::runtime::CollectiveKind::AllGather, 2, 2, true);
  o.instances = 2;
  Program p(o);
  auto ch = p.memoryChannel(1, 0);
  auto in = p.rank(0).getInputBuffer();
  auto out = p.rank(1).getOutputBuffer();
  p.setSource(src.at(1));
  ch.put(out.slice(0, 1), in.slice(0, 1), 0);
  p.setSource(src.at(2));
  ch.put(out.slice(1, 2), in.slice(1, 2), 0); // fused into the first put (F12)
  p.setSource(src.at(3));
  ch.signal(0, SyncType::Before); // sync insertion adds a nop before it, with its location
  p.setSource(src.at(4));
  p.memoryChannel(0, 1).wait(0, SyncType::None);

  backend::SourceMap map(&src.sm);
  plan::Plan plan = backend::compile(p, {}, &map);
  REQUIRE(plan.gpus[0].threadblocks.size() == 2);
  REQUIRE(plan.gpus[0].threadblocks[0].ops.size() == 3); // put (fused), nop, signal
  for (const char *tb : {"0", "1"}) {
    std::string base = std::string("gpus[0].threadblocks[") + tb + "]";
    auto put = map.lookupSource(base + ".ops[0]");
    REQUIRE(put);
    CHECK(put->file == "prog.msccl");
    CHECK(put->line == 1);
    CHECK(put->col == 1);
    REQUIRE(put->fused.size() == 1);
    CHECK(put->fused[0].line == 2);
    auto nop = map.lookupSource(base + ".ops[1]");
    REQUIRE(nop);
    CHECK(nop->line == 3);
    CHECK(map.lookupSource(base + ".ops[2]")->line == 3);
  }
  CHECK(map.lookupSource("gpus[1].threadblocks[0].ops[0]")->line == 4);
  CHECK(map.lookupSource(1, 0, {0})->line == 4);
  // Paths that name no op, or are malformed.
  CHECK(!map.lookupSource("gpus[0].threadblocks[0].ops[3]"));
  CHECK(!map.lookupSource("gpus[2].threadblocks[0].ops[0]"));
  CHECK(!map.lookupSource("gpus[0].threadblocks[0].ops[0].ops[0]"));
  CHECK(!map.lookupSource("gpus[0].threadblocks[0]"));
  CHECK(!map.lookupSource("gpus[0]threadblocks[0].ops[0]"));
  CHECK(!map.lookupSource("gpus[x].threadblocks[0].ops[0]"));
}

TEST_CASE("ops built without setSource have no location; the pairing error names the unmatched call", "[source]") {
  Src src;
  ProgramOptions o;
  o.collective = Collective::make(msccl::runtime::CollectiveKind::AllReduce, 2, 1, true);
  Program p(o);
  auto ch = p.memoryChannel(1, 0);
  ch.signal(0);                 // no location
  p.setSource(src.at(2));
  ch.signal(0);                 // the last signal: the error's location
  p.setSource(src.at(3));
  p.memoryChannel(0, 1).wait(1); // the related location
  try {
    (void)backend::compile(p);
    FAIL("no pairing error");
  } catch (const DslError &e) {
    REQUIRE(e.source() != 0);
    CHECK(p.ir().sources.loc(e.source()).getPointer() == src.at(2).getPointer());
    REQUIRE(e.related() != 0);
    CHECK(p.ir().sources.resolve(e.related())->loc.getPointer() == src.at(3).getPointer());
  }
  p.ir().signalWait.clear(); // compile the ops alone
  backend::SourceMap map(&src.sm);
  (void)backend::compile(p, {}, &map);
  CHECK(!map.lookupSource("gpus[0].threadblocks[0].ops[1]")); // the first signal
  CHECK(map.lookupSource("gpus[0].threadblocks[0].ops[4]")->line == 2);
}

TEST_CASE("the source log gives back every record, shared frames and loop values included", "[source]") {
  Src src;
  SourceTable t;
  uint32_t outer = t.addSite(SourceContext::For, src.at(1), "gpu");
  uint32_t call = t.addSite(SourceContext::Call, src.at(2), "send");
  uint32_t inner = t.addSite(SourceContext::For, src.at(3), "(a, b)");
  std::vector<uint32_t> ids;
  std::string text;
  for (int64_t gpu = -2; gpu < 40; ++gpu) { // more than one checkpoint interval (16 records)
    ids.push_back(t.add(src.at(4), 0, {SourceTable::NewFrame{outer, gpu * 1000, nullptr}}));
    text = "(" + std::to_string(gpu) + ", 'x')";
    ids.push_back(t.add(src.at(2), 1, {SourceTable::NewFrame{call, 0, nullptr}, SourceTable::NewFrame{inner, 0, &text}}));
  }
  CHECK(t.size() == ids.size());
  CHECK(!t.resolve(0));
  CHECK(!t.resolve(t.size() + 1));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t gpu = int64_t(i / 2) - 2;
    auto r = t.resolve(ids[i]);
    REQUIRE(r);
    CHECK(t.loc(ids[i]).getPointer() == r->loc.getPointer());
    if (i % 2 == 0) {
      CHECK(r->loc.getPointer() == src.at(4).getPointer());
      REQUIRE(r->frames.size() == 1);
      CHECK(r->frames[0].value == std::to_string(gpu * 1000));
    } else {
      REQUIRE(r->frames.size() == 3); // innermost first
      CHECK(r->frames[0].kind == SourceContext::For);
      CHECK(r->frames[0].name == "(a, b)");
      CHECK(r->frames[0].value == "(" + std::to_string(gpu) + ", 'x')");
      CHECK(r->frames[1].kind == SourceContext::Call);
      CHECK(r->frames[1].name == "send");
      CHECK(r->frames[2].name == "gpu");
      CHECK(r->frames[2].value == std::to_string(gpu * 1000));
      CHECK(r->frames[2].loc.getPointer() == src.at(1).getPointer());
    }
  }
  SourceTable copy = t; // deep copy
  CHECK(copy.resolve(ids.back())->frames[0].value == t.resolve(ids.back())->frames[0].value);
}
