//===- VerifyPlan.h - mscclc's checks and verification of the plan it writes -----------===//
//
// Consumes the whole plan::Plan of a compilation (after lowering, before it is written);
// splits sync ops over more than 8 channels (the executor's per-op limit) in place, then runs
// the plan checks and the static verifier of runtime/include/msccl/verify/PlanVerify.h and
// reports the findings through `diag` at `loc` (the `program` line; item 3 of issue 11 will map
// each finding's op to its .msccl call): errors as err_plan_check (executor constraints) or
// err_plan_verify (postcondition, deadlock, race), hazards and relaxed-handshake races as
// warn_plan_hazard; each with note_plan_op naming the ops (rank, threadblock, op index, JSON
// path). The first finding of each kind (and severity) is shown, then a count of the others.
// Returns false when any error was reported.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"
#include "msccl/plan/Plan.h"

namespace msccl::driver {

bool verifyCompiledPlan(diag::DiagEngine &diag, llvm::SMLoc loc, plan::Plan &plan);

} // namespace msccl::driver
