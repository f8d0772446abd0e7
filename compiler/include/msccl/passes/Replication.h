//===- Replication.h - Instance replication (pass "replication") -------------------------===//
//
// Consumes: the IR after fusion / sync insertion / dependency analysis.
// Produces: `instances` copies of every threadblock (dsl#6.5): original tb t becomes tbs t*n+k for
//   k = 0..n-1 (in that order); tb channel ids c -> c*n+k (memory, port, switch); semaphore and
//   barrier ids s -> s*n+k; chunk indices per policy (interleaved: i*n + k*size with the chunk's
//   own size, or the op's size for switch ops; none: unchanged). GPU chunk counts x n; memory/port
//   connected_to entries, switch channels and semaphores each repeated n times in a row; remote
//   buffers untouched; op-level channel ids, buffer ids, tbg_info unchanged.
// Copied for parity: the packet-copy destination of recpkt/recspkt is not shifted (Python's
//   ReduceOperation.shift_buffers forgets it); signal/wait/flush id sets are rebuilt from their
//   iteration order (copy.deepcopy rebuilds a set by inserting its elements in order).
// Deliberate differences: policy none keeps indices (Python crashes); glre/gstore chunks are values
//   (Python double-shifts a Chunk object shared by two ops).
// Guarantees: mirrors internal/gpu.py replicate_instances. Linear in the output size.
// Implementation: one, applied while lowering (backend::lowerGpuReplicated maps each op of
//   threadblock t through InstanceShift{n, k} for k = 0..n-1), so the replicated IR is never
//   materialized; this header holds the mapping.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

namespace msccl::passes {

/// Where instance `k` of `n` puts ids and chunk indices (dsl#6.5): ids v -> v*n+k; chunk indices
/// i -> i*n + k*size under the interleaved policy (size: the chunk's own size in chunks, or the
/// op's size for switch ops), unchanged under policy none.
struct InstanceShift {
  int64_t n = 1;
  int64_t k = 0;
  bool interleaved = false;
  int64_t id(int64_t v) const { return v * n + k; }
  int64_t buf(int64_t index, int64_t size) const { return interleaved ? index * n + k * size : index; }
};


} // namespace msccl::passes
