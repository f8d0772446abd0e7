//===- BenchPlans.h - Synthetic plans for the CUDA benchmarks ----------------------------===//
//
// Builds, in the plan model (msccl/plan/Plan.h), the plans the CUDA benchmark times:
//   copyPlan / reducePlan  one rank, `tbs` threadblocks splitting one chunk with tbg_info:
//                          output <- input, and output <- input + output;
//   allPairsPacketAllReduce  N ranks, LL: every rank puts its input chunk p as packets into
//                          peer p's scratch slot r, reduces chunk r (respkt: its own input plus
//                          the N-1 packet slots) into its output and sends the result as packets
//                          to every peer's scratch slot N+r, then unpacks the N-1 results
//                          (the shape of MSCCL++'s allreduce_allpairs_packet);
//   allPairsAllReduce      N ranks, Simple, `tbs` threadblocks per rank (tbg split): puts into
//                          peers' scratch, signal/wait, res (reduce + put to peers' outputs),
//                          signal/wait.
// Each plan is a complete, valid plan (checked by the CPU executor in the benchmark).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

namespace msccl::bench {

plan::Plan copyPlan(unsigned tbs);
plan::Plan reducePlan(unsigned tbs);
plan::Plan allPairsPacketAllReduce(unsigned nranks);
plan::Plan allPairsAllReduce(unsigned nranks, unsigned tbs);

} // namespace msccl::bench
