//===- ChannelPairing.h - Channels whose creation order crossed between two ranks ---------===//
//
// Consumes the elaborated IR (before the passes) and the source table of its channel creations;
// produces the first memory or port channel whose signals and waits do not match although the
// two ranks' signals and waits match in total (the pairing check of program.py, which counts per
// rank pair, passed). Channels pair in creation order: rank r's k-th channel to rank p with p's
// k-th channel to r. Such a channel is almost always a pairing that crossed: the two ranks made
// their channels to each other in different orders. mscclc names both MemoryChannel(...) /
// PortChannel(...) calls in a note when verification fails.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

#include <optional>
#include <string>

namespace msccl::driver {

struct CrossedChannel {
  uint32_t sourceHere = 0, sourcePeer = 0; ///< Creation sources (ProgramIR::sources) of the pair.
  std::string text;                        ///< The explanation, counts included.
};

/// The first channel (by rank, peer, creation order) whose signals sent differ from the waits of
/// the channel it pairs with while the two ranks' totals agree; nullopt when none.
std::optional<CrossedChannel> findCrossedChannel(const ir::ProgramIR &ir);

} // namespace msccl::driver
