//===- VerifyDriver.h - The msccl-verify command line as a library function -------------===//
//
// msccl-verify [--jsonl] [--out-of-place] [--no-races] [--quiet] PLAN.json...
// Reads each plan (any MSCCL++ JSON plan, e.g. one the Python DSL wrote), runs the plan checks
// and the static verifier (msccl/verify/PlanVerify.h) and prints every finding with its JSON
// path and the ops it involves (rank, threadblock, op index).
// Exit status: 0 every plan proven (warnings allowed), 1 findings, 2 unreadable input or bad
// usage. --jsonl prints one JSON object per finding and one summary object per plan.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <ostream>

namespace msccl::tools {

/// Runs msccl-verify with `argv` (argv[0] is the program name); output to `out`, usage errors
/// and unreadable plans to `err`. Returns the exit status described above.
int runMscclVerify(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace msccl::tools
