//===- VerifyPlan.cpp - Report the verifier's findings as mscclc diagnostics ------------===//
//
// See VerifyPlan.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/VerifyPlan.h"

#include "msccl/verify/PlanVerify.h"

#include <map>

namespace msccl::driver {

bool verifyCompiledPlan(diag::DiagEngine &diag, llvm::SMLoc loc, plan::Plan &plan) {
  verify::splitWideSyncOps(plan);
  verify::VerifyResult res = verify::verifyPlan(plan);
  bool ok = true;
  std::map<std::pair<int, bool>, unsigned> shown, hidden;
  for (const verify::Finding &f : res.findings) {
    const auto key = std::make_pair(int(f.kind), f.warning);
    const unsigned limit = 1;
    if (!f.warning)
      ok = false;
    if (shown[key] >= limit) {
      hidden[key]++;
      continue;
    }
    shown[key]++;
    std::string text = f.path.empty() ? f.message : f.path + ": " + f.message;
    if (f.warning)
      diag.report(loc, diag::DiagId::warn_plan_hazard, {std::string(verify::findingKindName(f.kind)) + ": " + text});
    else if (f.kind == verify::FindingKind::Plan)
      diag.report(loc, diag::DiagId::err_plan_check, {text});
    else
      diag.report(loc, diag::DiagId::err_plan_verify, {std::string(verify::findingKindName(f.kind)) + ": " + text});
    for (const verify::OpRef &o : f.ops)
      diag.report(loc, diag::DiagId::note_plan_op, {o.str()});
  }
  for (auto &[key, n] : hidden)
    diag.report(loc, diag::DiagId::note_plan_more, {std::to_string(n)});
  return ok;
}

} // namespace msccl::driver
