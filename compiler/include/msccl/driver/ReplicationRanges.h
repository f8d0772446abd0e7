//===- ReplicationRanges.h - Chunk ranges that replication splits inconsistently ----------===//
//
// Consumes the elaborated IR (before the passes) of a program with `instances` > 1 under the
// interleaved replication policy; produces the first pair of ops whose chunk ranges on one buffer
// of one rank overlap without being the same range (say a copy of chunks [0, 4) and a put of
// chunk [1, 2)). Replication maps a range [i, i+s) of instance k to [i*n + k*s, i*n + k*s + s):
// ranges of different extents over the same chunks then give different instances different
// bytes, and one instance's signals and waits do not order another instance's accesses. mscclc
// names the pair in a note when such a program fails verification (docs/language.md, instances).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

#include <optional>
#include <string>

namespace msccl::driver {

struct RangeConflict {
  uint32_t sourceA = 0, sourceB = 0; ///< Op::source ids (ProgramIR::sources) of the two ops.
  std::string rangeA, rangeB;        ///< "chunks [0, 4)"
  std::string buffer;                ///< "rank 0's input"
};

/// The first conflicting pair, by rank, buffer and chunk index; nullopt when every two
/// overlapping ranges are equal. Reads packed and unpacked ops alike (pipelines' inner ops too).
std::optional<RangeConflict> findReplicationConflict(const ir::ProgramIR &ir);

} // namespace msccl::driver
