//===- VerifyPlan.h - mscclc's checks and verification of the plan it writes -----------===//
//
// Consumes the whole plan::Plan of a compilation (after lowering, before it is written) and
// the lowering's op -> .msccl call map; splits sync ops over more than 8 channels (the
// executor's per-op limit) in place (and the map's entries with them, so the written source map
// still names the written ops), then runs the plan checks and the static verifier of
// runtime/include/msccl/verify/PlanVerify.h and reports the findings through `diag`: each at the
// .msccl call that made its first op (with the loop values that led there, as elaboration
// errors have), or at `fallback` (the `program` line) when the finding names no op or the op has
// no location. Errors are err_plan_check (executor constraints) or err_plan_verify
// (postcondition, deadlock, race), hazards and relaxed-handshake races warn_plan_hazard; each
// with note_plan_op for every op involved (rank, threadblock, op index, JSON path), placed at
// that op's call. The first finding of each kind (and severity) is shown, then a count of the
// others. Returns false when any error was reported.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/backend/SourceMap.h"
#include "msccl/diag/Diagnostics.h"
#include "msccl/plan/Plan.h"

namespace msccl::driver {

/// Reports the loop / fn call / `with` / param frames around an op's call as notes (`in for r = 0`,
/// ...), as elaboration errors have: the notes of every error placed at an op's .msccl call.
void reportSourceFrames(diag::DiagEngine &diag, const ir::OpSource &src);

/// AllToAllV: writes every buffer entry's `index_expr`/`size_expr` (plan::deriveAllToAllV) and
/// reports what cannot be sized at run time as err_variable_size at the op's .msccl call (first
/// problem, then a count). Returns false when any.
bool deriveVariableSizes(diag::DiagEngine &diag, llvm::SMLoc fallback, plan::Plan &plan, backend::SourceMap *sources);
/// `sources` may be null (findings are then reported at `fallback`). `deviceLimits` false (the
/// msccl target) drops the MSCCL++ executor's per-threadblock table limits (Driver.h Target).
bool verifyCompiledPlan(diag::DiagEngine &diag, llvm::SMLoc fallback, plan::Plan &plan, backend::SourceMap *sources,
                        bool deviceLimits = true);

} // namespace msccl::driver
