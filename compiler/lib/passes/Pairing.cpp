//===- Pairing.cpp - mirror of program.py validate_signal_wait_pairing -------------------===//
#include "msccl/passes/Pairing.h"

namespace msccl::passes {

using namespace msccl::ir;

void validateSignalWaitPairing(const ProgramIR &ir) {
  for (auto &[key, counts] : ir.signalWait) {
    if (counts.first == counts.second) continue;
    auto [src, dst, type] = key;
    throw DslError("Signal/Wait mismatch on " + std::string(plan::channelTypeName(type)) + ": rank " + std::to_string(src) +
                   " issues " + std::to_string(counts.first) + " signal(s) to rank " + std::to_string(dst) + ", but rank " +
                   std::to_string(dst) + " performs " + std::to_string(counts.second) + " wait(s) for rank " +
                   std::to_string(src) + ". Every signal must be matched by a corresponding wait on the peer rank over a "
                   "channel of the same type.");
  }
}

} // namespace msccl::passes
