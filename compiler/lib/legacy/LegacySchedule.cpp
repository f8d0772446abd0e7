//===- LegacySchedule.cpp - DAG ops to threadblocks, implicit channels --------------------===//
//
// Consumes the instruction DAG of a legacy::Program; produces program.tbs: for each rank the
// threadblocks (by id, -1 for the packet signals/waits that have none) with their ops in step
// order, and each threadblock's channels: one per (src buffer, dst buffer, type, peer) of its
// puts, signals, packet puts, gets, read-reduces and waits, and one per (buffers, nvls, group)
// of its group ops. Mirrors MSCCLPPProgram._convert_to_execution_plan and
// InstructionDAG.complete_channels (program.py, dag/instruction_dag.py).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/legacy/LegacyPasses.h"

#include <algorithm>

namespace msccl::legacy {

static Buf chanBuf(Buf b) { return b; } // named scratch buffers do not exist here: s stays s

void scheduleOps(Program &program) {
  program.tbs.assign(size_t(program.numRanks()), {});
  std::vector<Op *> ops;
  for (Op &op : program.ops())
    if (op.inst != Inst::Start)
      ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [](Op *a, Op *b) { return a->step < b->step; });
  for (Op *op : ops) {
    auto &tbs = program.tbs[size_t(op->rank)];
    Threadblock &tb = tbs[op->tb];
    tb.id = op->tb;
    tb.ops.push_back(op);
  }
  for (auto &rankTbs : program.tbs)
    for (auto &[id, tb] : rankTbs) {
      std::vector<Channel> chans;
      auto add = [&](Channel c) {
        if (std::find(chans.begin(), chans.end(), c) == chans.end())
          chans.push_back(std::move(c));
      };
      Buf srcBuf = Buf::Input, dstBuf = Buf::Input;
      for (Op *op : tb.ops) {
        if (op->inst == Inst::Barrier)
          continue;
        if (op->src)
          srcBuf = chanBuf(op->src->buffer);
        if (op->dst)
          dstBuf = chanBuf(op->dst->buffer);
        if (op->channelType == ChanType::Nvls) {
          std::vector<int> ranks;
          if (op->inst == Inst::GroupStore) {
            for (auto &d : op->dsts)
              ranks.push_back(d.first.rank);
            add({srcBuf, dstBuf, op->channelType, ranks});
          } else if (op->inst == Inst::GroupLoadReduce) {
            for (auto &s : op->srcs)
              ranks.push_back(s.first.rank);
            add({srcBuf, dstBuf, op->channelType, ranks});
          }
        } else {
          switch (op->inst) {
          case Inst::Put:
          case Inst::Signal:
          case Inst::PutPacket:
          case Inst::ReadPutPacket: add({srcBuf, dstBuf, op->channelType, {op->dst->rank}}); break;
          case Inst::Get:
          case Inst::ReadReduceCopy: add({dstBuf, srcBuf, op->channelType, {op->src->rank}}); break;
          case Inst::Wait: add({srcBuf, dstBuf, op->channelType, {op->src->rank}}); break;
          default: break;
          }
        }
      }
      tb.channels = std::move(chans);
    }
}

} // namespace msccl::legacy
