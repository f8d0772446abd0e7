//===- IRVerifier.cpp - Invariants of the IR, checked between passes --------------------===//
#include "msccl/passes/IRVerifier.h"

namespace msccl::passes {

using namespace msccl::ir;

namespace {

size_t channelsOf(const ThreadBlockIR &tb, ChannelType t) {
  for (auto &c : tb.channels)
    if (c.type == t) return c.ids.size();
  return 0;
}
size_t remoteBuffersOf(const ThreadBlockIR &tb, ChannelType t) {
  for (auto &r : tb.remoteBuffers)
    if (r.type == t) return r.ids.size();
  return 0;
}

void verifyOp(const ThreadBlockIR &tb, const Op &op, bool inPipeline, bool requireSources, const std::string &where,
              std::vector<std::string> &out) {
  auto bad = [&](const std::string &what) { out.push_back(where + ": " + std::string(opKindName(op.kind)) + ": " + what); };
  if (requireSources && op.source == 0) bad("no source location");
  if (!isChannelSyncOp(op.kind) && !op.syncChannelIds.empty()) bad("signal/wait channel set on a non-sync op");
  if (isChannelSyncOp(op.kind)) {
    if (op.syncChannelIds.empty()) bad("no channel");
    if (op.channelType != ChannelType::Memory && op.channelType != ChannelType::Port) bad("channel type is not memory or port");
    for (uint32_t c : op.syncChannelIds.toList())
      if (c >= channelsOf(tb, op.channelType)) bad("channel " + std::to_string(c) + " not registered on the threadblock");
  }
  if (op.kind != OpKind::SemAcquire && op.kind != OpKind::SemRelease && !op.ids.empty()) bad("semaphore ids on a non-semaphore op");
  if (op.kind != OpKind::Pipeline && !op.ops.empty()) bad("inner ops on a non-pipeline op");
  if (op.kind == OpKind::Pipeline && inPipeline) bad("nested pipeline");
  if (!isDataSyncOp(op.kind) && op.dataSync != SyncType::None) bad("data_sync flags on an op that takes none");
  if (!isChannelSyncOp(op.kind) && op.kind != OpKind::Pipeline)
    for (const ChannelIdList *ids : {&op.channelIds, &op.dstChannelIds})
      for (uint32_t c : *ids)
        if (op.channelType != ChannelType::None && c >= channelsOf(tb, op.channelType))
          bad("channel " + std::to_string(c) + " not registered on the threadblock");
  for (auto &c : op.remoteSrc)
    if (c.bufferId >= remoteBuffersOf(tb, op.channelType)) bad("remote buffer " + std::to_string(c.bufferId) + " not registered");
  for (auto &c : op.remoteDst)
    if (c.bufferId >= remoteBuffersOf(tb, op.channelType)) bad("remote buffer " + std::to_string(c.bufferId) + " not registered");
  for (size_t i = 0; i < op.ops.size(); ++i)
    verifyOp(tb, op.ops[i], true, requireSources, where + ".ops[" + std::to_string(i) + "]", out);
}
} // namespace

std::vector<std::string> verifyGpu(const GpuIR &gpu, bool requireSources) {
  std::vector<std::string> out;
  for (size_t t = 0; t < gpu.threadblocks.size(); ++t) {
    const ThreadBlockIR &tb = gpu.threadblocks[t];
    if (tb.id != t) out.push_back("rank " + std::to_string(gpu.id) + " tb " + std::to_string(t) + ": id " + std::to_string(tb.id));
    for (size_t i = 0; i < tb.ops.size(); ++i)
      verifyOp(tb, tb.ops[i], false, requireSources,
               "rank " + std::to_string(gpu.id) + " tb " + std::to_string(t) + " op " + std::to_string(i), out);
  }
  return out;
}

} // namespace msccl::passes
