//===- ReplicationRanges.cpp - Chunk ranges that replication splits inconsistently --------===//
// See ReplicationRanges.h.
#include "msccl/driver/ReplicationRanges.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace msccl::driver {
namespace {

struct Range {
  uint32_t rank;
  ir::BufferType type;
  int64_t index, size;
  uint32_t source;
  bool operator<(const Range &o) const {
    return std::tie(rank, type, index, size) < std::tie(o.rank, o.type, o.index, o.size);
  }
};

const char *bufferWord(ir::BufferType t) {
  switch (t) {
  case ir::BufferType::Input: return "input";
  case ir::BufferType::Output: return "output";
  case ir::BufferType::Scratch: return "scratch";
  }
  return "?";
}

/// The GPU-level rank and buffer of an op's remote chunk (through the tb's remote buffer table).
bool remoteOwner(const ir::GpuIR &g, const ir::ThreadBlockIR &tb, ir::ChannelType ct, const ir::RemoteChunk &c,
                 uint32_t &rank) {
  for (const ir::TbRemoteBufferList &l : tb.remoteBuffers)
    if (l.type == ct && c.bufferId < l.ids.size() && l.ids[c.bufferId] < g.remoteBuffers.size()) {
      rank = uint32_t(g.remoteBuffers[l.ids[c.bufferId]].rank);
      return true;
    }
  return false;
}

void collect(const ir::GpuIR &g, const ir::ThreadBlockIR &tb, const ir::Op &op, std::vector<Range> &out) {
  for (const auto *list : {&op.localSrc, &op.localDst, &op.localPktDst})
    for (const ir::LocalChunk &c : *list)
      if (c.size > 0)
        out.push_back({g.id, c.type, c.index, c.size, op.source});
  for (const auto *list : {&op.remoteSrc, &op.remoteDst})
    for (const ir::RemoteChunk &c : *list) {
      uint32_t rank = 0;
      if (c.size > 0 && remoteOwner(g, tb, op.channelType, c, rank))
        out.push_back({rank, c.type, c.index, c.size, op.source});
    }
  for (const ir::Op &inner : op.ops)
    collect(g, tb, inner, out);
}

std::string rangeText(const Range &r) {
  return "chunks [" + std::to_string(r.index) + ", " + std::to_string(r.index + r.size) + ")";
}

} // namespace

std::optional<RangeConflict> findReplicationConflict(const ir::ProgramIR &ir) {
  std::vector<Range> ranges;
  for (const ir::GpuIR &g : ir.gpus)
    for (const ir::ThreadBlockIR &tb : g.threadblocks)
      for (const ir::Op &op : ir::allOps(tb)) // packed and unpacked alike
        collect(g, tb, op, ranges);
  std::sort(ranges.begin(), ranges.end());
  // Sweep each buffer: `widest` is the earlier range reaching furthest; a range that starts
  // inside it and is not the same range conflicts with it.
  const Range *widest = nullptr;
  for (const Range &r : ranges) {
    if (widest && (widest->rank != r.rank || widest->type != r.type))
      widest = nullptr;
    if (widest && r.index < widest->index + widest->size && (r.index != widest->index || r.size != widest->size))
      return RangeConflict{widest->source, r.source, rangeText(*widest), rangeText(r),
                           "rank " + std::to_string(r.rank) + "'s " + bufferWord(r.type)};
    if (!widest || r.index + r.size > widest->index + widest->size)
      widest = &r;
  }
  return std::nullopt;
}

} // namespace msccl::driver
