//===- PlanVerify.h - Static checks and verification of an execution plan ----------------===//
//
// Consumes a whole plan::Plan (from mscclc after lowering, or read from any JSON plan by
// msccl-verify); produces findings, each naming the plan op by (rank, threadblock, op index) and
// its JSON path, so that a source map can later translate them to .msccl locations.
//
// Two entry points:
//  * checkPlanShape (issue 11 item 1): everything the runtime's validatePlan and the MSCCL++
//    loader require (device limits, ids, partners, barrier ids, ...), plus what the loader
//    silently gets wrong: packet ops in a non-LL plan, pipeline entries that do not span
//    num_chunks chunks (or use tbg_info), an empty plan (`instances = 0`), min_message_size
//    beyond the loader's 32-bit int. MSCCL++ hazards are warnings naming the alternative:
//    `flush` (a no-op in the reference kernel: use `pwsf`), reduce_op other than sum (the
//    reference sums), `glre` (rejected by the reference loader: fuse it into `glres`).
//  * verifyPlan (item 2): a symbolic execution of the plan at chunk granularity (each chunk is
//    split into U units, U = lcm of the plan's tbg sizes, so tbg slices are whole units), over
//    two launches (three with use_double_scratch_buffer) per rank under the GPU launch model of
//    docs/verification.md. Each unit's content is the multiset of (rank, input unit)
//    contributions it holds. It proves
//      - the postcondition of allreduce/allgather/reducescatter/alltoall/sendrecv (other
//        collectives, e.g. "test", are not checked), at each rank's kernel end;
//      - deadlock freedom (a blocked state is reported with its wait-for cycle);
//      - race freedom: happens-before by vector clocks over threadblocks, port proxy lanes and
//        one host actor per rank (kernel start writes the rank's input/output, kernel end
//        reads them), with the signal/wait, barrier, semaphore, nop and flush rules of the
//        CPU executor's race checker (runtime/lib/cpu/RaceCheck.h).
//    Because every op's accesses are fixed by the plan and the n-th wait of a channel pairs
//    with its n-th signal, the happens-before relation is the same in every schedule, so one
//    execution decides races for all schedules, and without races the content (and so the
//    postcondition) is schedule-independent; blocking is monotone (a satisfied wait stays
//    satisfiable) when each channel and semaphore is waited on by one threadblock, which
//    the verifier checks (otherwise it reports that it cannot prove deadlock freedom).
//
// Op semantics mirror runtime/lib/cpu/CpuOps.cpp; buffer references are resolved with
// runtime/lib/core/Resolve.cpp's tables (resolvePlan).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace msccl::verify {

/// What a finding is about.
enum class FindingKind : uint8_t {
  Plan,          ///< A shape the runtime or the MSCCL++ loader rejects or mis-reads (item 1).
  Hazard,        ///< MSCCL++-specific hazard (flush, non-sum reduce_op, glre): a warning.
  Postcondition, ///< An output chunk holds the wrong contributions.
  Deadlock,      ///< A blocked state reachable in every schedule.
  Race,          ///< Two unordered conflicting accesses.
  Unsupported,   ///< Something the verifier cannot prove (stated, not assumed).
};

/// "plan", "hazard", "postcondition", "deadlock", "race", "unsupported".
const char *findingKindName(FindingKind k);

/// One plan op: rank, threadblock (array position), op index in the threadblock (for inner ops
/// of a pipeline: the pipeline's index, with `inner` the inner op's index), and its JSON path.
struct OpRef {
  int32_t rank = -1, tb = -1, op = -1, inner = -1;
  uint32_t launch = 0;
  std::string path;
  std::string str() const; ///< "rank 1 tb 0 op 3 (gpus[1].threadblocks[0].ops[3])"
};

struct Finding {
  FindingKind kind = FindingKind::Plan;
  bool warning = false;
  std::string path;         ///< JSON path of the offending value ("" for the plan).
  std::string message;      ///< Lower-case, self-contained.
  std::vector<OpRef> ops;   ///< The ops involved (race: both; deadlock: the cycle).
  /// A limit of the MSCCL++ executor's fixed tables only (runtime::PlanDiagnostic::deviceLimit):
  /// this project's executors run the plan (mscclc --target msccl drops such findings).
  bool deviceLimit = false;
  std::string str() const;  ///< "error: deadlock: <path>: <message>"
};

/// Checks of item 1. Errors for what validatePlan or the MSCCL++ loader reject or mis-read;
/// warnings (Hazard) for flush, non-sum reduce_op, glre and other ops MSCCL++ does not run.
/// Never throws. deviceLimits = false (mscclc and msccl-verify --target msccl: the plan runs on
/// this project's executors, not on MSCCL++'s) reports the MSCCL++ executor's per-threadblock
/// table limits (runtime::PlanDiagnostic::deviceLimit) as warnings marked Finding::deviceLimit
/// and leaves out those four hazards, which concern the MSCCL++ executor only.
std::vector<Finding> checkPlanShape(const plan::Plan &plan, bool deviceLimits = true);

/// Splits every signal/wait/rlxsignal/rlxwait/flush op over more than 8 channel ids into
/// consecutive ops of at most 8 (the executor's MAX_CHANNEL_PER_OPERATION); returns how many
/// ops were split. Order of the channels is kept, so the plan's meaning is unchanged.
unsigned splitWideSyncOps(plan::Plan &plan);
/// How many ops splitWideSyncOps makes of `op`: 1, or ceil(channels / 8) for a sync op over more.
size_t splitPieces(const plan::Op &op);

struct VerifyOptions {
  /// false: the executor's per-threadblock table limits are warnings (checkPlanShape).
  bool deviceLimits = true;
  bool postcondition = true;
  bool races = true;
  /// Alias buffers as the plan's `inplace` says (msccl-run's default); false forces out-of-place.
  bool followInplace = true;
  /// At most this many race findings (the first ones found).
  unsigned maxRaces = 20;
  /// Treat rlxsignal/rlxwait as release/acquire. verifyPlan uses it internally to tell races
  /// that only a relaxed handshake leaves unordered (reported as warnings) from the others.
  bool relaxedOrdersData = false;
  /// The vector clocks of the race checker take 2 x T x (2T + ranks) x 2 bytes for T
  /// threadblocks (all ranks): a plan above this many bytes is not verified (an Unsupported
  /// finding naming the sizes) instead of exhausting memory. 4 GiB verifies up to about
  /// 23,000 threadblocks (e.g. 64 ranks of 360).
  uint64_t maxClockBytes = uint64_t(4) << 30;
};

struct VerifyStats {
  uint32_t ranks = 0, launches = 0, unitsPerChunk = 0;
  uint64_t opsExecuted = 0, accesses = 0;
  uint64_t races = 0; ///< Racing accesses found (findings name the first op pairs only).
};

struct VerifyResult {
  std::vector<Finding> findings;
  VerifyStats stats;
  bool postconditionChecked = false; ///< false for collectives without an end state ("test").
  /// No error finding (warnings allowed).
  bool proven() const;
};

/// Item 2: the plan must pass checkPlanShape's errors first (they are included in the result
/// and stop the verification when any). Never throws for a plan read by the JSON reader.
VerifyResult verifyPlan(const plan::Plan &plan, const VerifyOptions &options = {});

} // namespace msccl::verify
