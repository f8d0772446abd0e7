//===- LoweringInternal.h - Per-op roles of buffer entries (shared by lowering and tests) -===//
//
// Which entries of an op are read or written as LL packets, and which entry layouts each op
// handler needs (plan-format.md §8). Used by Lowering.cpp for bounds and shape checks.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"
#include "msccl/plan/Plan.h"

#include <string>
#include <vector>

namespace msccl::cuda {

/// Whether the op reads or writes LL packets.
bool isPacketOp(plan::OpType t);

/// Whether entry k of the src (isSrc) or dst side is addressed as packets (at 2*offset).
bool entryIsPacket(plan::OpType t, plan::ChannelType ct, bool isSrc, size_t k);

/// Checks that the op has the entries its handler reads, with the right locations (local,
/// remote, switch) and lengths, and enough channel ids. Returns "" or a message.
std::string checkOpShape(plan::OpType t, plan::ChannelType ct, const std::vector<DevEntry> &src,
                         const std::vector<DevEntry> &dst, unsigned nIds);

} // namespace msccl::cuda
