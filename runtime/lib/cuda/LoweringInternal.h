//===- LoweringInternal.h - Per-op roles of buffer entries (shared by lowering and tests) -===//
//
// Which entries of an op are read or written as LL packets, and which entry layouts each op
// handler needs (spec plan#8). Used by Lowering.cpp for bounds and shape checks; the kernel
// reads the same roles of the op table (plan::entryAccess) so that both agree on which
// entries are packets.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"
#include "msccl/plan/OpTable.h"
#include "msccl/plan/Plan.h"

#include <string>
#include <vector>

namespace msccl::cuda {

// Which entries are packets comes from the op table's roles (plan/OpTable.h): entryIsPacket
// for the lowering's bounds checks, entryAccess in the kernel's packet handler, so both agree.
using plan::entryIsPacket;
using plan::isPacketOp;

/// Checks that the op has the entries its handler reads, as its op table row says: counts,
/// locations (local, remote, switch), refused extra entries, the channel type when an entry is
/// remote, one port channel id per dst entry for the put family, and the row's length rule.
/// Returns "" or a message.
std::string checkOpShape(plan::OpType t, plan::ChannelType ct, const std::vector<DevEntry> &src,
                         const std::vector<DevEntry> &dst, unsigned nIds);

} // namespace msccl::cuda
