//===- SyncInsertion.h - nops from data_sync flags (pass "sync-insertion") --------------===//
//
// Consumes: a threadblock op list after fusion (or unfused when fusion is off).
// Produces: the same list with a `nop` right before every data-sync op whose flags include
//   `before` and right after every one whose flags include `after`; pipelines' inner lists are
//   processed first, recursively. Nothing else changes; adjacent nops are not merged.
// Guarantees: identical to internal/operations.py add_data_sync (dsl#6.3). Linear time.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

namespace msccl::passes {

void addDataSync(std::vector<ir::Op> &ops);

} // namespace msccl::passes
