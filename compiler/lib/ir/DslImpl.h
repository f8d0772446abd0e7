//===- DslImpl.h - Program::Impl, shared by the Dsl*.cpp files (private) ----------------===//
#pragma once

#include "msccl/ir/IR.h"

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace msccl::ir {

/// Python's str() of an int list: "[0, 1, 2]".
std::string pyList(const std::vector<int64_t> &v);

/// One (tb, tbg_info) target of an op (the tb / tb_group rule of dsl#3.2-tb-group).
struct TbTarget {
  uint32_t tb;
  std::optional<TbgInfo> tbg;
};

struct Program::Impl {
  ProgramIR ir;

  struct SwitchRec {
    std::vector<int64_t> ranks;
    BufferType bufferType;
    std::unordered_map<int64_t, uint32_t> idOfRank; ///< Last id wins for duplicated ranks.
  };
  std::vector<SwitchRec> switches;
  /// Per rank: barrier tb list -> barrier id (per program; Python's is process-global).
  std::vector<std::map<std::vector<int64_t>, uint32_t>> barriers;

  // Pipeline collection (loop.py).
  bool inPipeline = false;
  int64_t pipelineUnit = 0, pipelineNumChunks = 0;
  struct Collected { uint32_t rank; uint32_t tb; Op op; };
  std::vector<Collected> collected;

  /// The plan's size so far, per instance, counted as checkPlanSize (Elaborate.cpp) counts it:
  /// ops, threadblocks, channels and semaphores of all ranks. grow() throws PlanTooLarge past
  /// `maxPlanSizePerInstance` (Program::setMaxPlanSize), so a program too large for the limit
  /// fails at the call that crossed it, in memory proportional to the limit.
  uint64_t planSize = 0;
  uint64_t maxPlanSizePerInstance = UINT64_MAX;
  std::vector<uint32_t> countedTbs; ///< Per rank: threadblocks already in planSize.
  void grow(uint64_t n) {
    planSize += n;
    if (planSize > maxPlanSizePerInstance)
      throw PlanTooLarge(planSize, maxPlanSizePerInstance);
  }
  /// grow() by the threadblocks rank `rank` gained since the last call, plus `ops`.
  void growRank(int64_t rank, uint64_t ops) {
    uint32_t &counted = countedTbs[size_t(rank)];
    uint32_t now = uint32_t(gpu(rank).threadblocks.size());
    uint64_t tbs = now - counted;
    counted = now;
    grow(tbs + ops);
  }

  int64_t numRanks() const { return ir.options.numRanks; }
  GpuIR &gpu(int64_t rank) { return ir.gpus[size_t(rank)]; }

  /// program.py add_operation: to the tb, or to the active pipeline collector.
  void addOperation(int64_t rank, uint32_t tb, Op op);
  /// addOperation() of a copy of `op` (packs it without copying when it can); sets op.source.
  void addOperationCopy(int64_t rank, uint32_t tb, Op &op);
  /// A default Op that keeps the capacity of its vectors between uses (no allocation per op);
  /// valid until the next call.
  Op &freshOp();
  /// The source id of the current DSL call (Program::setSource), interned on first use.
  uint32_t currentSource() {
    if (sourcePending) {
      sourcePending = false;
      sourceId = contextProvider ? contextProvider(ir.sources, sourceLoc) : ir.sources.add(sourceLoc, 0, {});
    }
    return sourceId;
  }
  llvm::SMLoc sourceLoc;
  uint32_t sourceId = 0;
  bool sourcePending = false;
  std::function<uint32_t(SourceTable &, llvm::SMLoc)> contextProvider;
  Op scratchOp;
  /// Check a tb id (ours: >= 0 and < 65536).
  static uint32_t checkTb(int64_t tb);
  /// The tb / tb_group rule; `valueError` only changes nothing but documents read_put_packets.
  static llvm::SmallVector<TbTarget, 1> resolveTbs(std::optional<int64_t> tb, const ThreadBlockGroup *group);
  void countSignal(int64_t src, int64_t dst, ChannelType t) {
    auto &e = signalWaitEntry(src, dst, t);
    ++e.signals;
    e.lastSignal = currentSource();
  }
  void countWait(int64_t src, int64_t dst, ChannelType t) {
    auto &e = signalWaitEntry(dst, src, t);
    ++e.waits;
    e.lastWait = currentSource();
  }
  /// ir.signalWait[{src, dst, t}], found through a table of its (stable) std::map nodes indexed
  /// by (src, dst, t) when the program has at most 256 ranks.
  SignalWaitCount &signalWaitEntry(int64_t src, int64_t dst, ChannelType t) {
    const int64_t n = numRanks();
    const unsigned ti = unsigned(t);
    if (signalWaitNodes > ir.signalWait.size()) { // the map was changed from outside
      signalWaitTable.clear();
      signalWaitNodes = 0;
    }
    if (n > 256 || src < 0 || dst < 0 || src >= n || dst >= n || ti >= 4) return ir.signalWait[{src, dst, t}];
    if (signalWaitTable.empty()) signalWaitTable.assign(size_t(n * n * 4), nullptr);
    auto *&node = signalWaitTable[size_t((src * n + dst) * 4 + ti)];
    if (!node) {
      node = &ir.signalWait[{src, dst, t}];
      ++signalWaitNodes;
    }
    return *node;
  }
  std::vector<SignalWaitCount *> signalWaitTable;
  size_t signalWaitNodes = 0;
};

} // namespace msccl::ir
