//===- Pairing.h - Signal/wait pairing validation (pass "pairing") ----------------------===//
//
// Consumes: the program's signal/wait counters (ProgramIR::signalWait), filled by the DSL calls:
//   memory/port signal, put_with_signal, put_with_signal_and_flush count a signal src->dst; wait
//   counts a wait by src for dst (relaxed forms included; flushes and switch channels not counted).
// Produces: nothing; throws ir::DslError when for some (src, dst, type) the number of signals
//   src->dst differs from the number of waits by dst for src, with program.py's message
//   "Signal/Wait mismatch on T: rank S issues X signal(s) to rank D, but rank D performs Y wait(s)
//   for rank S. Every signal must be matched by a corresponding wait on the peer rank over a
//   channel of the same type."
// Guarantees: when several keys mismatch, the reported one is the smallest (src, dst, type) with
//   memory < port (Python: hash-set order, changes from run to run; deliberate stable choice).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

namespace msccl::passes {

void validateSignalWaitPairing(const ir::ProgramIR &ir);

} // namespace msccl::passes
