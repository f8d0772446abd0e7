//===- Fusion.h - Instruction fusion (pass "fusion") ------------------------------------===//
//
// Consumes: one threadblock's op list as the user built it (only user nops/barriers present).
// Produces: the list after the DSL's single left-to-right adjacent-pair pass (dsl#6.2): each pair
//   (accumulated op, next original op) is tried once; rules F1-F19 (dsl#fusion-rules) fuse or absorb, and the flag
//   trimming rules clear `after` on a data-sync op followed by a sync and `before` on a data-sync
//   op preceded by one. Pipelines are fused recursively only when they start a run; a pipeline
//   absorbed by a preceding nop (dsl#fusion-F3) keeps its inner ops unfused (Python bug, copied for parity).
//   Signal/wait/flush channel-id sets are merged with CPython's set semantics (PySet).
// Guarantees: identical op lists to internal/optimizer.py fuse_operations and the __add__
//   methods of internal/operations.py. Linear time in the number of ops plus the size of the
//   fused lists.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

namespace msccl::passes {

/// Fuse one op list in place (fuse_operations).
void fuseOperations(std::vector<ir::Op> &ops);
/// Try to combine `acc` (accumulated) with `next` (an original op). Returns true when `acc` now
/// holds the fused/absorbing op; false otherwise. Flag trimming side effects happen either way.
bool combineOps(ir::Op &acc, ir::Op &next);
/// What a pipeline "reports" (PipelineOperation.get_data_sync), including the Python bug that a
/// trailing nop/barrier reports `before`.
ir::SyncType pipelineDataSync(const ir::Op &pipeline);

} // namespace msccl::passes
