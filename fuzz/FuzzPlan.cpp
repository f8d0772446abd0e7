//===- FuzzPlan.cpp - libFuzzer target: plan JSON -> read + validate --------------------===//
//
// Reads the input as a JSON execution plan (plan::parsePlan) and, when it is well-formed, runs
// the semantic checks (runtime::checkPlan) and writes it back: writing, re-reading and writing
// again must give the same text. Malformed input must end in plan::PlanError; any other
// exception, a crash or a sanitizer report is a bug.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/PlanValidate.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace msccl;
  plan::Plan p;
  try {
    p = plan::parsePlan(std::string(reinterpret_cast<const char *>(data), size));
  } catch (const plan::PlanError &e) {
    if (std::string(e.what()).empty())
      __builtin_trap();
    return 0;
  }
  runtime::ValidateOptions vo;
  vo.allowGlre = (size & 1) != 0;
  (void)runtime::checkPlan(p, vo);
  std::string once = plan::writePlan(p, -1);
  std::string twice = plan::writePlan(plan::parsePlan(once), -1);
  if (once != twice)
    __builtin_trap();
  return 0;
}
