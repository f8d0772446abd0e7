// Symbolic sizes of AllToAllV plans (msccl/plan/Symbolic.h): the expression language, the JSON
// form (variable_sizes, index_expr/size_expr) and the derivation/proof of a plan's expressions.
#include "msccl/plan/PlanJson.h"
#include "msccl/plan/Symbolic.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace msccl::plan;

namespace {
std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
const std::string kStaged = std::string(MSCCL_ALLTOALLV_PLANS_DIR) + "/staged_3.json";
} // namespace

TEST_CASE("symbolic expressions parse, print and compare as affine forms", "[symbolic]") {
  SymExpr e = SymExpr::parse("row[1,0:2] + 3*c[2,0] + 2*B + 5");
  CHECK(e.str() == "row[1,0:2] + 3*c[2,0] + 2*B + 5");
  CHECK(SymExpr::parse(e.str()).normal() == e.normal());
  CHECK(SymExpr::parse("row[0,0:2]").normal() == SymExpr::parse("c[0,0] + c[0,1]").normal());
  CHECK(SymExpr::parse("col[2,1:3]").normal() == SymExpr::parse("c[1,2]+c[2,2]").normal());
  CHECK_FALSE(SymExpr::parse("row[0,0:2]").normal() == SymExpr::parse("c[0,0]").normal());
  CHECK(SymExpr::parse("0").str() == "0");
  CHECK(SymExpr::parse("row[0,0:0]").normal() == SymExpr::parse("0").normal());
  CHECK(SymExpr::parse("c[3,1]").ranksNamed() == 4);
  CHECK(SymExpr::parse("col[1,0:6]").ranksNamed() == 6);
  CHECK_THROWS_WITH(SymExpr::parse("row[1,2]"), Catch::Contains("expected `:` at column 8"));
  CHECK_THROWS_WITH(SymExpr::parse("c[1,2] +"), Catch::Contains("expected a number"));
  CHECK_THROWS_WITH(SymExpr::parse("x"), Catch::Contains("at column 1"));
  CHECK_THROWS_WITH(SymExpr::parse("row[0,3:1]"), Catch::Contains("reversed"));
}

TEST_CASE("a variable-size plan reads and writes back unchanged", "[symbolic]") {
  std::string text = readText(kStaged);
  REQUIRE(!text.empty());
  Plan p = parsePlan(text);
  REQUIRE(p.variableSizes);
  CHECK(p.variableSizes->blockBound == 100);
  CHECK(p.collective == "alltoallv");
  CHECK(writePlan(p) == text);
  // A plan without the extension gets no new keys.
  Plan fixed = p;
  fixed.variableSizes.reset();
  for (auto &g : fixed.gpus)
    for (auto &tb : g.threadblocks)
      for (auto &op : tb.ops)
        for (auto *refs : {&op.src, &op.dst})
          for (auto &b : *refs)
            b.indexExpr.clear(), b.sizeExpr.clear();
  std::string out = writePlan(fixed);
  CHECK(out.find("variable_sizes") == std::string::npos);
  CHECK(out.find("_expr") == std::string::npos);
  CHECK_THROWS_WITH(parsePlan(std::string(text).replace(text.find("\"matrix\""), 8, "\"vector\"")),
                    Catch::Contains("variable_sizes.counts: unknown count form `vector`"));
}

TEST_CASE("the compiler's expressions are proved; tampered ones are refused with their path", "[symbolic]") {
  Plan p = parsePlan(readText(kStaged));
  CHECK(checkAllToAllV(p).empty());
  // Re-deriving gives the same expressions.
  Plan again = p;
  CHECK(deriveAllToAllV(again).empty());
  CHECK(again == p);

  SECTION("a wrong offset") {
    BufferRef *victim = nullptr;
    for (auto &op : p.gpus[1].threadblocks[0].ops)
      for (auto &b : op.src)
        if (!victim && b.type == BufferType::Input)
          victim = &b;
    REQUIRE(victim);
    victim->indexExpr = "row[1,0:1]";
    auto issues = checkAllToAllV(p);
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].path.find("gpus[1].threadblocks[0]") == 0);
    CHECK(issues[0].path.find(".index_expr") != std::string::npos);
    CHECK(issues[0].message.find("is not the entry's offset") != std::string::npos);
  }
  SECTION("a put into the wrong output block") {
    bool changed = false;
    for (auto &op : p.gpus[0].threadblocks[1].ops)
      if (op.type == OpType::Put && !op.dst.empty() && !changed) {
        op.dst[0].index = 2; // rank 0's block belongs at index 0 of the peer
        changed = true;
      }
    REQUIRE(changed);
    auto issues = checkAllToAllV(p);
    REQUIRE_FALSE(issues.empty());
    CHECK(issues[0].message.find("the sizes differ for some count matrix") != std::string::npos);
  }
  SECTION("a missing expression") {
    p.gpus[2].threadblocks[0].ops[0].src[0].sizeExpr.clear();
    auto issues = checkAllToAllV(p);
    REQUIRE_FALSE(issues.empty());
    CHECK(issues[0].message.find("missing `size_expr`") != std::string::npos);
  }
  SECTION("in place") {
    p.inplace = true;
    auto issues = checkAllToAllV(p);
    REQUIRE_FALSE(issues.empty());
    CHECK(issues[0].path == "inplace");
  }
  SECTION("the block image is the AllToAll the chunk-level verifier checks") {
    Plan img = blockImage(p);
    CHECK(img.collective == "alltoall");
    CHECK_FALSE(img.variableSizes);
    CHECK(writePlan(img).find("_expr") == std::string::npos);
  }
}
