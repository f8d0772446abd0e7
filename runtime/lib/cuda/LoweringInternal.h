//===- LoweringInternal.h - Per-op roles of buffer entries (shared by lowering and tests) -===//
//
// Which entries of an op are read or written as LL packets, and which entry layouts each op
// handler needs (spec plan#8). Used by Lowering.cpp for bounds and shape checks, and by
// the kernel (packetReduceDsts) so that both agree on which entries are packets.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"
#include "msccl/plan/Plan.h"

#include <string>
#include <vector>

namespace msccl::cuda {

/// dst_buff entries [first, end) that a packet reduce op (repkt, rcpkt, respkt, rcspkt) writes
/// as packets, given its `nDst` entries: none for repkt (extra entries are ignored, as by the
/// CPU executor and MSCCL++), dst[1] for rcpkt (lowering refuses more), dst[1..] for respkt and
/// rcspkt. Other ops: first = end = 0. The kernel writes exactly these; lowering bounds-checks
/// them as packets (entryIsPacket).
MSCCL_HD inline void packetReduceDsts(uint8_t type, uint32_t nDst, uint32_t &first, uint32_t &end) {
  first = end = 0;
  switch ((plan::OpType)type) {
  case plan::OpType::ReducePackets: first = end = 1; break;
  case plan::OpType::ReduceCopyPackets: first = 1; end = nDst < 2 ? 1 : 2; break;
  case plan::OpType::ReduceSendPackets: case plan::OpType::ReduceCopySendPackets: first = 1; end = nDst < 1 ? 1 : nDst; break;
  default: break;
  }
}

/// Whether the op reads or writes LL packets.
bool isPacketOp(plan::OpType t);

/// Whether entry k of the src (isSrc) or dst side is addressed as packets (at 2*offset).
bool entryIsPacket(plan::OpType t, plan::ChannelType ct, bool isSrc, size_t k);

/// Checks that the op has the entries its handler reads, with the right locations (local,
/// remote, switch) and lengths, and enough channel ids. Returns "" or a message.
std::string checkOpShape(plan::OpType t, plan::ChannelType ct, const std::vector<DevEntry> &src,
                         const std::vector<DevEntry> &dst, unsigned nIds);

} // namespace msccl::cuda
