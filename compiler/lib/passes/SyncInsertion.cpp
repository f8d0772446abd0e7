//===- SyncInsertion.cpp - mirror of internal/operations.py add_data_sync ----------------===//
#include "msccl/passes/SyncInsertion.h"

namespace msccl::passes {

using namespace msccl::ir;

void addDataSync(std::vector<Op> &ops) {
  size_t extra = 0;
  for (auto &op : ops) {
    if (op.kind == OpKind::Pipeline) addDataSync(op.ops);
    if (isDataSyncOp(op.kind)) extra += (has(op.dataSync, SyncType::Before) ? 1 : 0) + (has(op.dataSync, SyncType::After) ? 1 : 0);
  }
  if (extra == 0) return;
  std::vector<Op> out;
  out.reserve(ops.size() + extra);
  Op nop;
  nop.kind = OpKind::Nop;
  for (auto &op : ops) {
    bool sync = isDataSyncOp(op.kind);
    bool before = sync && has(op.dataSync, SyncType::Before);
    bool after = sync && has(op.dataSync, SyncType::After);
    nop.source = op.source; // the nops come from the op whose flags asked for them
    if (before) out.push_back(nop);
    out.push_back(std::move(op));
    if (after) out.push_back(nop);
  }
  ops = std::move(out);
}


} // namespace msccl::passes
