//===- Dependency.h - Data-dependency nops (pass "dependency", auto_sync) ---------------===//
//
// Consumes: a threadblock op list after sync insertion.
// Produces: the same list with a `nop` inserted before every op that conflicts (read-after-write,
//   write-after-read, write-after-write on overlapping local chunk ranges of the same buffer kind)
//   with an earlier op since the last nop/barrier. Pipelines are analysed inside with a fresh
//   record and then act as one op outside.
// Guarantees: identical to internal/buffer_access.py BuffersAccess (dsl#6.4), including its quirks,
//   copied for parity: the record is an interval map sorted by (start, end) and searched with the
//   same binary search; accesses of the current op registered before a conflicting one are lost
//   when the record is cleared; zero-size chunks are the interval [k, k-1] and can overlap;
//   re-registering an equal (start, end) key keeps the old key's op and access type and replaces
//   only the stored value (SortedDict semantics); packet reductions do not track their first
//   source; switch ops and remote chunks are not tracked.
//   Cost: linear in ops times the number of live records of one buffer kind (records are cleared
//   at every sync).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

namespace msccl::passes {

void resolveDataDependency(std::vector<ir::Op> &ops);

} // namespace msccl::passes
