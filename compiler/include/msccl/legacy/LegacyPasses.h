//===- LegacyPasses.h - The passes of the MSCCLPPLang style, in order ---------------------===//
//
// MSCCLPPProgram.lower() and ir_to_json (program.py, dag/, ir.py of microsoft/mscclpp
// be6a941f~1), one function per pass, each in its own .cpp:
//   schedule  (LegacySchedule.cpp)  ops of the DAG -> threadblocks in step order; implicit
//                                   channels per (src buffer, dst buffer, type, peer) and tb
//   optimize  (LegacyOptimize.cpp)  packet signal/wait removal; with instr_fusion: port-channel
//                                   fusion (pws, pwsf), same-op fusion, rrcs/rs/rspkt, glres,
//                                   compaction of adjacent puts/gets/signals/waits
//   lower     (LegacyLower.cpp)     dependencies, scratch offsets, replication over instances
//                                   (duplicated / interleaved / packed), srcs/dsts in step order
//   emit      (LegacyEmit.cpp)      buffer sizing, channel numbering, dependency filtering and
//                                   nop insertion, and the JSON plan of LegacyPlanFormat.h
// compileLegacy runs them all. Errors: LegacyError (LegacyIR.h).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/legacy/LegacyIR.h"

#include <nlohmann/json.hpp>

#include <string>

namespace msccl::legacy {

/// One rank of the lowered program (types.py Gpu): its threadblocks in id order.
struct Gpu {
  int rank = 0;
  std::vector<Threadblock> threadblocks;
  int64_t inputChunks = 0, outputChunks = 0, scratchChunks = 0;
};

/// The lowered program (types.py Program); owns the ops replication created.
struct Lowered {
  std::vector<Gpu> gpus;
  std::deque<Op> ownedOps;
};

/// schedule: fills program.tbs (ops per rank and tb in step order) and each tb's channels.
void scheduleOps(Program &program);
/// optimize: remove_redundant_signal_wait, then fuse_instructions when `fuse`.
void optimizeDag(Program &program, bool fuse);
/// lower: dependencies, replication over `instances` with `policy`, lowered refs.
Lowered lowerDag(Program &program);
/// emit: the legacy JSON plan (LegacyPlanFormat.h), its keys in ir.py's order (dump(2) and a
/// newline give ir.py's text).
nlohmann::ordered_json emitLegacyJson(const Program &program, Lowered &lowered);

/// All four, in order.
nlohmann::ordered_json compileLegacy(Program &program);

} // namespace msccl::legacy
