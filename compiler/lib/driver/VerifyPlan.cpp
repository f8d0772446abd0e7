//===- VerifyPlan.cpp - Report the verifier's findings as mscclc diagnostics ------------===//
//
// See VerifyPlan.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/VerifyPlan.h"

#include "msccl/plan/Symbolic.h"
#include "msccl/verify/PlanVerify.h"

#include <map>

namespace msccl::driver {
namespace {

/// Repeats each entry as often as splitWideSyncOps repeats its op (call before the split).
void splitEntries(const std::vector<plan::Op> &ops, std::vector<backend::OpSourceEntry> &entries) {
  if (entries.size() != ops.size())
    return; // not this plan's entries: leave them
  std::vector<backend::OpSourceEntry> out;
  out.reserve(entries.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].type == plan::OpType::Pipeline)
      splitEntries(ops[i].ops, entries[i].inner);
    for (size_t k = verify::splitPieces(ops[i]); k-- > 0;)
      out.push_back(entries[i]);
  }
  entries = std::move(out);
}

/// The .msccl call (and its frames) of the op `ref` names, through the source map.
std::optional<ir::OpSource> sourceOf(const backend::SourceMap *sources, const verify::OpRef &ref) {
  if (!sources || ref.rank < 0 || ref.tb < 0 || ref.op < 0)
    return std::nullopt;
  llvm::SmallVector<size_t, 2> ops{size_t(ref.op)};
  if (ref.inner >= 0)
    ops.push_back(size_t(ref.inner));
  const backend::OpSourceEntry *e = sources->entry(size_t(ref.rank), size_t(ref.tb), ops);
  std::optional<ir::OpSource> src = e && e->source ? sources->sources().resolve(e->source) : std::nullopt;
  if (!src || !src->loc.isValid())
    return std::nullopt;
  return src;
}

} // namespace

void reportSourceFrames(diag::DiagEngine &diag, const ir::OpSource &src) {
  for (const ir::SourceContext &f : src.frames) {
    switch (f.kind) {
    case ir::SourceContext::For: diag.report(f.loc, diag::DiagId::note_in_for, {f.name + " = " + f.value}); break;
    case ir::SourceContext::Call: diag.report(f.loc, diag::DiagId::note_in_call, {f.name}); break;
    case ir::SourceContext::With: diag.report(f.loc, diag::DiagId::note_in_with); break;
    case ir::SourceContext::Param: diag.report(f.loc, diag::DiagId::note_in_param, {f.name}); break;
    }
  }
}

bool deriveVariableSizes(diag::DiagEngine &diag, llvm::SMLoc fallback, plan::Plan &plan, backend::SourceMap *sources) {
  std::vector<plan::SymIssue> issues = plan::deriveAllToAllV(plan);
  if (issues.empty())
    return true;
  const plan::SymIssue &i = issues.front();
  verify::OpRef ref;
  ref.rank = i.rank, ref.tb = i.tb, ref.op = i.op, ref.path = i.path;
  std::optional<ir::OpSource> at = sourceOf(sources, ref);
  diag.report(at ? at->loc : fallback, diag::DiagId::err_variable_size,
              {i.path.empty() ? i.message : i.path + ": " + i.message});
  if (at)
    reportSourceFrames(diag, *at);
  if (issues.size() > 1)
    diag.report(fallback, diag::DiagId::note_plan_more, {std::to_string(issues.size() - 1)});
  return false;
}

bool verifyCompiledPlan(diag::DiagEngine &diag, llvm::SMLoc fallback, plan::Plan &plan, backend::SourceMap *sources,
                        bool deviceLimits) {
  if (sources)
    for (size_t g = 0; g < plan.gpus.size(); ++g) {
      auto &tbs = sources->gpu(g);
      for (size_t t = 0; t < plan.gpus[g].threadblocks.size() && t < tbs.size(); ++t)
        splitEntries(plan.gpus[g].threadblocks[t].ops, tbs[t]);
    }
  verify::splitWideSyncOps(plan);
  verify::VerifyOptions vo;
  vo.deviceLimits = deviceLimits;
  verify::VerifyResult res = verify::verifyPlan(plan, vo);
  bool ok = true;
  std::map<std::pair<int, bool>, unsigned> shown, hidden;
  for (const verify::Finding &f : res.findings) {
    if (f.deviceLimit && !deviceLimits)
      continue; // --target msccl: MSCCL++'s table sizes are not a limit of the target
    const auto key = std::make_pair(int(f.kind), f.warning);
    const unsigned limit = 1;
    if (!f.warning)
      ok = false;
    if (shown[key] >= limit) {
      hidden[key]++;
      continue;
    }
    shown[key]++;
    std::optional<ir::OpSource> at = f.ops.empty() ? std::nullopt : sourceOf(sources, f.ops.front());
    const llvm::SMLoc loc = at ? at->loc : fallback;
    std::string text = f.path.empty() ? f.message : f.path + ": " + f.message;
    if (f.warning)
      diag.report(loc, diag::DiagId::warn_plan_hazard, {std::string(verify::findingKindName(f.kind)) + ": " + text});
    else if (f.kind == verify::FindingKind::Plan)
      diag.report(loc, diag::DiagId::err_plan_check, {text});
    else if (f.kind == verify::FindingKind::Unsupported)
      diag.report(loc, diag::DiagId::err_plan_unverifiable, {text});
    else
      diag.report(loc, diag::DiagId::err_plan_verify, {std::string(verify::findingKindName(f.kind)) + ": " + text});
    if (at)
      reportSourceFrames(diag, *at);
    for (const verify::OpRef &o : f.ops) {
      std::optional<ir::OpSource> src = sourceOf(sources, o);
      diag.report(src ? src->loc : fallback, diag::DiagId::note_plan_op, {o.str()});
    }
  }
  for (auto &[key, n] : hidden)
    diag.report(fallback, diag::DiagId::note_plan_more, {std::to_string(n)});
  return ok;
}

} // namespace msccl::driver
