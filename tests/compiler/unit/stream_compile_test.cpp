// The rank-by-rank compiler (backend/StreamCompile.h), which mscclc uses for every plain JSON
// compilation, must write exactly the bytes of the whole-program path
// (plan::writePlan(backend::compile(program))) and report the same errors before writing.
#include "TestUtil.h"
#include "TraceReplay.h"

#include "msccl/backend/Lower.h"
#include "msccl/backend/StreamCompile.h"
#include "msccl/passes/Replication.h"
#include "msccl/plan/PlanJson.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;
using namespace msccl;
using namespace msccl::ir;

namespace {
/// Every recorded DSL program: the golden-plan traces and the quirk programs.
std::vector<fs::path> allTraces() {
  std::vector<fs::path> out;
  for (const char *dir : {MSCCL_DSL_TRACE_DIR, MSCCL_DSL_DATA_DIR "/quirks"})
    for (auto &e : fs::directory_iterator(dir)) {
      std::string p = e.path().string();
      if (p.size() > 11 && p.substr(p.size() - 11) == ".trace.json") out.push_back(e.path());
    }
  std::sort(out.begin(), out.end());
  return out;
}

std::string streamed(const ProgramIR &in, const passes::PipelineOptions &opts, int indent) {
  ProgramIR ir = in; // streamPlan consumes its IR
  backend::prepareStream(ir, opts);
  std::ostringstream os;
  backend::streamPlan(ir, opts, os, indent);
  for (auto &g : ir.gpus) CHECK(g.threadblocks.empty()); // each rank is freed once written
  return os.str();
}
} // namespace

TEST_CASE("streamed plans are byte-identical to compile()'s plan written whole", "[stream][trace]") {
  auto traces = allTraces();
  REQUIRE(traces.size() >= 45);
  for (auto &t : traces) {
    INFO("trace " << t.filename().string());
    auto prog = test::replayTrace(test::readJsonFile(t.string()));
    passes::PipelineOptions variants[3];
    variants[1].skipFusion = true;
    variants[2].skipAutoSync = true;
    for (auto &opts : variants) {
      plan::Plan whole = backend::compile(*prog, opts);
      CHECK(streamed(prog->ir(), opts, 2) == plan::writePlan(whole, 2));
      CHECK(streamed(prog->ir(), opts, -1) == plan::writePlan(whole, -1));
    }
  }
}

TEST_CASE("--print-after sees each rank after each pass, in pipeline order", "[stream]") {
  auto traces = allTraces();
  REQUIRE(!traces.empty());
  auto prog = test::replayTrace(test::readJsonFile(traces.front().string()));
  ProgramIR ir = prog->ir();
  std::vector<std::string> seen;
  passes::PipelineOptions opts;
  opts.afterPass = [&](std::string_view pass, const ProgramIR &, const GpuIR *gpu) {
    seen.push_back(std::string(pass) + (gpu ? "@" + std::to_string(gpu->id) : ""));
  };
  backend::prepareStream(ir, opts);
  std::ostringstream os;
  backend::streamPlan(ir, opts, os);
  std::vector<std::string> expected = {"pairing"};
  for (size_t r = 0; r < prog->ir().gpus.size(); ++r)
    for (const char *p : {"fusion", "sync-insertion", "dependency", "replication"}) expected.push_back(p + ("@" + std::to_string(r)));
  CHECK(seen == expected);
}

TEST_CASE("prepareStream reports compile()'s errors before anything is written", "[stream][errors]") {
  SECTION("signal/wait pairing") {
    Program p(test::testOptions(3, 1, 1));
    p.portChannel(1, 0).signal(0);
    std::string expected;
    try {
      backend::compile(p);
    } catch (const DslError &e) {
      expected = e.what();
    }
    REQUIRE(!expected.empty());
    CHECK_THROWS_WITH(backend::prepareStream(p.ir()), expected);
  }
  SECTION("a negative chunk index, found after replication") {
    ProgramIR ir;
    ir.options = test::testOptions(1, 4, 4);
    ir.options.numRanks = 1;
    ir.options.instances = 2;
    ir.gpus.resize(1);
    ir.gpus[0].inputChunks = ir.gpus[0].outputChunks = 4;
    Op copy;
    copy.kind = OpKind::Copy;
    copy.localSrc = {LocalChunk{BufferType::Input, -1, 1}};
    copy.localDst = {LocalChunk{BufferType::Output, 0, 1}};
    ir.gpus[0].tb(0).ops.push_back(copy);
    // The index after replication (-1*2+0), as streamPlan reports it.
    std::ostringstream os;
    ProgramIR streamedIr = ir;
    CHECK_THROWS_WITH(backend::streamPlan(streamedIr, {}, os), "Negative chunk index -2 cannot be written to the plan.");
    CHECK_THROWS_WITH(backend::prepareStream(ir), "Negative chunk index -2 cannot be written to the plan.");
    ir.gpus[0].threadblocks[0].ops[0].localSrc[0].index = 1;
    CHECK_NOTHROW(backend::prepareStream(ir));
    ir.gpus[0].inputChunks = -1;
    CHECK_THROWS_WITH(backend::prepareStream(ir), "Negative chunk count -2 cannot be written to the plan.");
  }
}
