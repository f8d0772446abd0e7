//===- PlanValidate.h - Semantic checks of an execution plan -----------------------------===//
//
// Consumes a Plan that the JSON reader accepted (structure, key types, op names and enum
// spellings are checked there, PlanJson.h) and produces the list of every semantic problem, each
// naming the JSON path of the offending value, e.g.
//   gpus[3].threadblocks[1].ops[7].src_buff[0].buffer_id: remote buffer 4 out of range (threadblock has 2 memory remote buffers)
// Checked: gpu ids == position, threadblock ids == position; channel peers, remote-buffer owners
// and switch ranks are ranks of the plan; tb channel tables and remote-buffer refs name existing
// gpu-level entries of the right type; op channel ids, buffer_ids and switch_channel_ids resolve
// in the tb's tables; each op's channel_type agrees with what it does and its entries have the
// locations the op needs; barrier ids/sizes and the barrier's tb count agree across the rank;
// semaphore ids exist; pipelines are not nested and have unit_size > 0; every "no" row of
// spec plan#9 (ops per tb incl. pipeline inner ops <= 64, channels per tb per type <= 16,
// remote buffers per tb per access type <= 16, channel ids per op <= 8, entries per op <= 10,
// barrier_id < 16, semaphore ids per op <= 16, num_threads_per_block in 1..1024, index fields
// <= 255); chunk indices fall inside the buffers (input/output index+size <= chunk count;
// scratch likewise); every memory/port channel used for signal/wait has a partner on its peer.
// Checks that depend on the message size (alignment, 4 GiB offsets, 65535 pipeline iterations)
// are in Layout.h.
//
// Mirrors: the unchecked assumptions of mscclpp src/core/executor/execution_plan.cc and the
// limits of src/core/include/execution_common.hpp (MAX_OPERATION, MAX_CHANNEL, ...).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <string>
#include <vector>

namespace msccl::runtime {

/// One semantic problem: `path` is a JSON path ("" for the root).
struct PlanDiagnostic {
  std::string path;
  std::string message;
  /// A limit of the MSCCL++ executor's fixed per-threadblock device tables (MAX_OPERATION ops,
  /// MAX_CHANNEL channels or remote buffers of one type), not a defect of the plan's meaning.
  bool deviceLimit = false;
  std::string str() const { return path.empty() ? message : path + ": " + message; }
};

/// Options of the checks.
struct ValidateOptions {
  /// Accept the ops the op table marks not executable by MSCCL++ (today only `glre`, the DSL's
  /// unfused switch reduce). The reference rejects them (plan#11.13); our executors run them, so
  /// they pass true. (The name is historical: it covers every such op.)
  bool allowGlre = false;
  /// Enforce the MSCCL++ executor's per-threadblock table sizes (ops <= 64 incl. pipeline inner
  /// ops, <= 16 channels and <= 16 remote buffers of a type; spec plan#9). false drops those
  /// findings (deviceLimit) from checkPlan: the CPU executor has no such tables, so msccl-run
  /// --allow-over-limits runs such a plan there (it warns with deviceLimitProblems). Every other
  /// check, and the CUDA executor's lowering, stays as it is.
  bool deviceLimits = true;
};

/// Every semantic problem of `plan`, in plan order. Empty when the plan is fine.
std::vector<PlanDiagnostic> checkPlan(const plan::Plan &plan, const ValidateOptions &options = {});

/// The deviceLimit findings of `plan` only (what ValidateOptions::deviceLimits = false drops).
std::vector<PlanDiagnostic> deviceLimitProblems(const plan::Plan &plan);

/// checkPlan, throwing ExecutionError(InvalidPlan) with one diagnostic per problem when any.
void validatePlan(const plan::Plan &plan, const ValidateOptions &options = {});

} // namespace msccl::runtime
