//===- PlansTest.cpp - Hand-written plans that must fail (or pass) in a stated way -------===//
//
// Every plan in tests/runtime/plans carries `x_expect` (ignored by the plan reader):
//   {"kind": "ok"|"wrong"|"deadlock"|"misuse"|"race"|"invalid"|"parse", "contains": [substrings]}
// The test runs the plan on the CPU executor with verification and checks the outcome and that
// the report (error text or verification summary) contains every substring. "ok" and "race"
// plans run with the race checker (CpuExecutorOptions::raceCheck): "ok" plans must also be
// race-free; "race" plans must fail with the checker's data-race report (they verify without it).
//
//===------------------------------------------------------------------------------------===//
#include "TestSupport.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Verify.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace msccl::plan;
using namespace msccl::runtime;

TEST_CASE("hand-written plans produce their expected outcome", "[plans]") {
  std::vector<std::string> files = msccl::test::jsonFiles(msccl::test::plansDir());
  REQUIRE(files.size() >= 25);
  auto ex = makeCpuExecutor();
  CpuExecutorOptions raceOptions;
  raceOptions.raceCheck = true;
  // These plans test one kernel's own synchronisation: most have no entry/exit handshakes, which
  // the launch model reports (RaceTest.cpp, msccl-verify).
  raceOptions.raceCheckLaunches = false;
  auto raceEx = makeCpuExecutor(raceOptions);
  for (const std::string &file : files) {
    INFO(file);
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str());
    REQUIRE(j.contains("x_expect"));
    const std::string kind = j["x_expect"]["kind"];
    std::vector<std::string> contains;
    if (j["x_expect"].contains("contains"))
      contains = j["x_expect"]["contains"].get<std::vector<std::string>>();
    std::string outcome, report;
    try {
      Plan plan = parsePlan(ss.str());
      // As msccl-run validates for its default target (mscclpp): the MSCCL++ executor's limits
      // hold, though the CPU executor itself has no such tables.
      ValidateOptions vo;
      vo.allowGlre = true;
      validatePlan(plan, vo);
      RunOptions ro;
      ro.planValidated = true;
      ro.size = msccl::test::sizesFor(plan, {4})[0];
      ro.iterations = 1;
      const bool raceCheck = kind == "ok" || kind == "race";
      if (kind == "race") {
        // Without the checker the racy plan runs and verifies (the CPU schedule is one legal order).
        RunReport plain = runCollective(*ex, plan, ro);
        CHECK(plain.verify.wrong == 0);
      }
      RunReport rep = runCollective(raceCheck ? *raceEx : *ex, plan, ro);
      outcome = rep.verify.wrong ? "wrong" : "ok";
      report = rep.verify.describe();
    } catch (const PlanError &e) {
      outcome = "parse";
      report = e.what();
    } catch (const ExecutionError &e) {
      outcome = e.kind() == ErrorKind::Deadlock ? "deadlock"
                : e.kind() == ErrorKind::Misuse
                    ? (std::string(e.what()).find("data race") != std::string::npos ? "race" : "misuse")
                : e.kind() == ErrorKind::InvalidPlan ? "invalid"
                                                      : "other";
      report = e.what();
    }
    INFO(report);
    CHECK(outcome == kind);
    for (const std::string &s : contains)
      CHECK_THAT(report, Catch::Contains(s));
  }
}
