//===- Pairing.cpp - mirror of program.py validate_signal_wait_pairing -------------------===//
#include "msccl/passes/Pairing.h"

namespace msccl::passes {

using namespace msccl::ir;

void validateSignalWaitPairing(const ProgramIR &ir) {
  for (auto &[key, counts] : ir.signalWait) {
    if (counts.signals == counts.waits) continue;
    auto [src, dst, type] = key;
    // At the call with no partner: the last signal when there are more signals, else the last wait.
    const bool moreSignals = counts.signals > counts.waits;
    DslError e("Signal/Wait mismatch on " + std::string(plan::channelTypeName(type)) + ": rank " + std::to_string(src) +
                   " issues " + std::to_string(counts.signals) + " signal(s) to rank " + std::to_string(dst) + ", but rank " +
                   std::to_string(dst) + " performs " + std::to_string(counts.waits) + " wait(s) for rank " +
                   std::to_string(src) + ". Every signal must be matched by a corresponding wait on the peer rank over a "
                   "channel of the same type.",
               moreSignals ? counts.lastSignal : counts.lastWait);
    throw e.withRelated(moreSignals ? counts.lastWait : counts.lastSignal);
  }
}

} // namespace msccl::passes
