// AllToAllV at run time (msccl/runtime/Counts.h): count matrices, their resolution into concrete
// plans, runs on the CPU executor verified against the defined result, and the refusals.
#include "TestSupport.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Counts.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Verify.h"

#include <catch2/catch.hpp>

using namespace msccl;
using namespace msccl::plan;
using namespace msccl::runtime;

namespace {
Plan staged() { return readPlanFile(test::plansDir() + "/alltoallv/staged_3.json"); }
CountMatrix matrix(uint32_t n, std::vector<uint64_t> c) { return CountMatrix{n, std::move(c)}; }
} // namespace

TEST_CASE("count matrices from msccl-run specs", "[counts]") {
  CountMatrix u = makeCounts("uniform", 4, 10);
  CHECK(u.total() == 160);
  CHECK(u.maxCount() == 10);
  CountMatrix r1 = makeCounts("random:1", 5, 10), r1b = makeCounts("random:1", 5, 10), r2 = makeCounts("random:2", 5, 10);
  CHECK(r1.counts == r1b.counts);
  CHECK(r1.counts != r2.counts);
  CHECK(r1.maxCount() <= 20);
  CountMatrix s = makeCounts("skewed", 4, 16);
  CHECK(s.at(0, 1) == 128);
  CHECK(s.at(0, 2) == 2);
  CountMatrix z = makeCounts("zero", 3, 7);
  CHECK(std::count(z.counts.begin(), z.counts.end(), 0u) == 6);
  CHECK(parseCountsJson("[[1,2],[3,4]]", 2).at(1, 0) == 3);
  CHECK_THROWS_WITH(parseCountsJson("[[1,2],[3]]", 2), Catch::Contains("row 1: expected 2 counts"));
  CHECK_THROWS_WITH(parseCountsJson("[[1,-2],[3,4]]", 2), Catch::Contains("[0][1]: expected a non-negative integer"));
  CHECK_THROWS_WITH(makeCounts("random:x", 2, 1), Catch::Contains("seed"));
  CHECK_THROWS_WITH(makeCounts("/nonexistent.json", 2, 1), Catch::Contains("not `uniform`"));
}

TEST_CASE("resolution evaluates every expression into elements", "[counts]") {
  Plan p = staged();
  CountsResolver res(p);
  CHECK(res.expressions() > 0);
  // counts[r][p]: row sums 6, 15, 24; column sums 12, 15, 18.
  CountMatrix m = matrix(3, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Plan &c = res.resolve(m, DataType::Int32);
  CHECK_FALSE(c.variableSizes);
  CHECK(c.bufferAlignment == 4);
  CHECK(res.sizes().inputBytes == 24 * 4);
  CHECK(res.sizes().outputBytes == 18 * 4);
  CHECK(c.gpus[0].scratchChunks == 300); // 3 slots of block_bound 100 elements
  // Every input entry of rank 2 is at its row prefix with its count.
  for (const auto &tb : c.gpus[2].threadblocks)
    for (const auto &op : tb.ops)
      for (const auto &b : op.src)
        if (b.loc == BufferRef::Loc::Local && b.type == BufferType::Input) {
          uint64_t block = 0;
          for (const auto &ob : p.gpus[2].threadblocks[&tb - c.gpus[2].threadblocks.data()].ops[&op - tb.ops.data()].src)
            if (ob.type == BufferType::Input)
              block = ob.index;
          uint64_t prefix = 0;
          for (uint32_t q = 0; q < block; ++q)
            prefix += m.at(2, q);
          CHECK(b.index == prefix);
          CHECK(b.size == m.at(2, uint32_t(block)));
        }
}

TEST_CASE("AllToAllV runs verified on the CPU executor for many matrices", "[counts]") {
  Plan p = staged();
  auto ex = makeCpuExecutor({});
  std::vector<CountMatrix> ms = {makeCounts("uniform", 3, 5),  makeCounts("random:1", 3, 40), makeCounts("random:2", 3, 40),
                                 makeCounts("skewed", 3, 12),  makeCounts("zero", 3, 9),      matrix(3, std::vector<uint64_t>(9, 0)),
                                 matrix(3, {0, 100, 0, 0, 0, 0, 1, 0, 0})};
  for (const CountMatrix &m : ms)
    for (DataType t : {DataType::Float32, DataType::Float16, DataType::UInt8}) {
      RunOptions o;
      o.counts = &m;
      o.dataType = t;
      o.iterations = 1;
      RunReport rep = runCollective(*ex, p, o);
      INFO("total " << m.total() << " type " << dataTypeName(t));
      CHECK(rep.verify.checked);
      CHECK(rep.verify.wrong == 0);
      CHECK(rep.verify.elements == m.total());
      CHECK(rep.bytesMoved == m.total() * dataTypeBytes(t));
    }
}

TEST_CASE("verification catches a wrong AllToAllV result", "[counts]") {
  Plan p = staged();
  // Swap the offsets of two output blocks of rank 1: data lands in the wrong place.
  for (auto &g : p.gpus)
    for (auto &tb : g.threadblocks)
      for (auto &op : tb.ops)
        for (auto &b : op.dst)
          if (b.indexExpr == "col[1,0:2]")
            b.indexExpr = "0";
  auto ex = makeCpuExecutor({});
  CountMatrix m = makeCounts("uniform", 3, 4);
  RunOptions o;
  o.counts = &m;
  o.iterations = 0;
  RunReport rep = runCollective(*ex, p, o);
  CHECK(rep.verify.checked);
  CHECK(rep.verify.wrong > 0);
}

TEST_CASE("a variable-size plan is refused without counts or beyond its bound", "[counts]") {
  Plan p = staged();
  auto ex = makeCpuExecutor({});
  RunOptions o;
  o.size = 4096;
  CHECK_THROWS_WITH(runCollective(*ex, p, o), Catch::Contains("runs with a count matrix"));
  std::string why;
  CHECK_FALSE(messageSizesFor(p, 4096, &why));
  CHECK(why.find("runs with a count matrix") != std::string::npos);
  CountMatrix big = makeCounts("uniform", 3, 101);
  o.counts = &big;
  CHECK_THROWS_WITH(runCollective(*ex, p, o), Catch::Contains("exceeds the plan's block_bound 100"));
  CountMatrix wrongN = makeCounts("uniform", 2, 1);
  o.counts = &wrongN;
  CHECK_THROWS_WITH(runCollective(*ex, p, o), Catch::Contains("count matrix is 2x2 but the plan has 3 ranks"));
  o.counts = nullptr;
  ExecuteRequest req;
  req.plan = &p;
  req.buffers.resize(3);
  CHECK_THROWS_AS(ex->execute(req), ExecutionError);
}
