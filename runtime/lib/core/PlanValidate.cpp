//===- PlanValidate.cpp - Semantic checks of an execution plan ---------------------------===//
//
// Consumes a Plan accepted by the JSON reader; produces every semantic problem with its JSON
// path (see PlanValidate.h for the list). One walk over gpus, threadblocks and ops; the
// gpu-level channel pairing comes from resolvePlan.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/PlanValidate.h"

#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Resolve.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

namespace msccl::runtime {
using namespace msccl::plan;

namespace {
/// Bounds on the plan's sizes that keep every later product in 64 bits: chunk counts times
/// buffer_alignment < 2^62 (Collective.cpp, Layout.cpp), chunk indices times chunk bytes below
/// the buffer sizes.
constexpr uint64_t kMaxChunks = uint64_t(1) << 32, kMaxBufferAlignment = uint64_t(1) << 30;
constexpr size_t kMaxOperations = 64, kMaxChannels = 16, kMaxChannelsPerOp = 8, kMaxEntriesPerOp = 10,
                 kMaxBarriers = 16, kMaxSemaphoresPerOp = 16;
/// This project's own per-op bounds (the CUDA device layer's pointer and id arrays, DevicePlan.h
/// kMaxEntriesPerSide and kMaxIdsPerOp): errors for every target, where MSCCL++'s smaller
/// kMaxEntriesPerOp and kMaxChannelsPerOp are limits of its executor only (deviceLimit).
constexpr size_t kOwnMaxEntriesPerOp = 16, kOwnMaxChannelsPerOp = 16;

/// Whether `op` (or an op of its pipeline) has a remote entry of channel type `ct` whose
/// tb-local buffer index is `from` or more.
bool usesRemoteBufferFrom(const Op &op, ChannelType ct, uint32_t from) {
  if (op.channelType == ct)
    for (const auto *list : {&op.src, &op.dst})
      for (const BufferRef &e : *list)
        if (e.loc == BufferRef::Loc::Remote && e.id >= from)
          return true;
  for (const Op &inner : op.ops)
    if (usesRemoteBufferFrom(inner, ct, from))
      return true;
  return false;
}

std::string idx(const std::string &base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

struct Checker {
  const Plan &plan;
  const ValidateOptions &opt;
  std::vector<PlanDiagnostic> diags;
  ResolvedPlan resolved;

  void error(const std::string &path, const std::string &msg) { diags.push_back({path, msg}); }
  /// A finding against the MSCCL++ executor's fixed tables only (ValidateOptions::deviceLimits):
  /// per threadblock (ops, channels, remote buffers) and per op (entries, channel ids).
  void limit(const std::string &path, const std::string &msg) { diags.push_back({path, msg, true}); }

  uint64_t chunksOf(uint32_t rank, BufferType t) const {
    const Gpu &g = plan.gpus[rank];
    return t == BufferType::Input ? g.inputChunks : t == BufferType::Output ? g.outputChunks : g.scratchChunks;
  }
  static const char *word(BufferType t) {
    return t == BufferType::Input ? "input" : t == BufferType::Output ? "output" : "scratch";
  }

  void checkTop() {
    if (plan.gpus.empty())
      error("gpus", "the plan has no gpus");
    if (plan.numThreadsPerBlock == 0 || plan.numThreadsPerBlock > 1024)
      error("num_threads_per_block", std::to_string(plan.numThreadsPerBlock) + " is outside 1..1024");
    // A resolved AllToAllV (Counts.h) is aligned to its element size: its blocks are any count.
    if (plan.bufferAlignment == 0 || (plan.bufferAlignment % 16 != 0 && plan.collective != "alltoallv"))
      error("buffer_alignment", std::to_string(plan.bufferAlignment) +
                                    " must be a positive multiple of 16 (reductions work in 16-byte vectors)");
    else if (plan.bufferAlignment > kMaxBufferAlignment)
      error("buffer_alignment", std::to_string(plan.bufferAlignment) + " is above the limit of 2^30 bytes");
    if (plan.minMessageSize > uint64_t(INT32_MAX))
      error("min_message_size", "the reference reads it as a 32-bit int; " + std::to_string(plan.minMessageSize) +
                                    " does not fit");
    if (plan.minMessageSize > plan.maxMessageSize)
      error("min_message_size", "is greater than max_message_size");
  }

  void checkGpu(uint32_t r) {
    const Gpu &g = plan.gpus[r];
    const std::string gp = idx("gpus", r);
    const uint32_t n = uint32_t(plan.gpus.size());
    if (g.id != r)
      error(gp + ".id", "GPU rank does not match: id " + std::to_string(g.id) + " at position " + std::to_string(r));
    for (BufferType t : {BufferType::Input, BufferType::Output, BufferType::Scratch})
      if (chunksOf(r, t) >= kMaxChunks)
        error(gp + "." + word(t) + "_chunks", std::to_string(chunksOf(r, t)) + " is above the limit of 2^32 - 1 chunks");
    for (size_t c = 0; c < g.channels.size(); ++c) {
      const ChannelDecl &d = g.channels[c];
      const std::string cp = idx(gp + ".channels", c);
      if (d.channelType == ChannelType::Memory || d.channelType == ChannelType::Port) {
        for (size_t k = 0; k < d.connectedTo.size(); ++k)
          if (d.connectedTo[k] >= n)
            error(idx(cp + ".connected_to", k), "rank " + std::to_string(d.connectedTo[k]) +
                                                    " out of range (the plan has " + std::to_string(n) + " ranks)");
      } else if (d.channelType == ChannelType::Switch) {
        for (size_t k = 0; k < d.rankGroups.size(); ++k) {
          const RankGroup &grp = d.rankGroups[k];
          const std::string kp = idx(cp + ".rank_groups", k);
          bool self = false;
          for (size_t j = 0; j < grp.ranks.size(); ++j) {
            uint32_t m = grp.ranks[j];
            if (m >= n) {
              error(idx(kp + ".ranks", j), "rank " + std::to_string(m) + " out of range (the plan has " +
                                               std::to_string(n) + " ranks)");
              continue;
            }
            self = self || m == r;
            // Every member must declare the same switch channel.
            bool found = false;
            for (const ResolvedSwitch &s : resolved.gpus[m].switchChannels)
              found = found || (s.ranks == grp.ranks && s.bufferType == d.bufferType);
            if (!found)
              error(idx(kp + ".ranks", j), "member rank " + std::to_string(m) +
                                               " declares no switch channel with the same ranks and buffer_type");
          }
          if (!self)
            error(kp + ".ranks", "rank " + std::to_string(r) + " is not a member of its own switch channel");
        }
      }
    }
    for (size_t b = 0; b < g.remoteBuffers.size(); ++b) {
      const RemoteBuffer &rb = g.remoteBuffers[b];
      const std::string bp = idx(gp + ".remote_buffers", b);
      if (rb.rank >= n)
        error(bp + ".rank", "rank " + std::to_string(rb.rank) + " out of range (the plan has " + std::to_string(n) +
                                " ranks)");
      for (size_t k = 0; k < rb.accessChannelTypes.size(); ++k)
        if (rb.accessChannelTypes[k] != ChannelType::Memory && rb.accessChannelTypes[k] != ChannelType::Port)
          error(idx(bp + ".access_channel_types", k), "must be memory or port");
    }
    std::map<uint32_t, std::set<uint32_t>> barrierTbs;   // barrier id -> tbs using it
    std::map<uint32_t, uint32_t> barrierSize;            // barrier id -> num_threadblocks
    for (size_t t = 0; t < g.threadblocks.size(); ++t)
      checkTb(r, uint32_t(t), barrierTbs, barrierSize);
    for (const auto &kv : barrierTbs) {
      uint32_t need = barrierSize[kv.first];
      if (need > 1 && kv.second.size() != need)
        error(gp + ".threadblocks", "barrier " + std::to_string(kv.first) + " has num_threadblocks " +
                                        std::to_string(need) + " but " + std::to_string(kv.second.size()) +
                                        " threadblock(s) of rank " + std::to_string(r) + " use it");
    }
  }

  void checkTb(uint32_t r, uint32_t t, std::map<uint32_t, std::set<uint32_t>> &barrierTbs,
               std::map<uint32_t, uint32_t> &barrierSize) {
    const Gpu &g = plan.gpus[r];
    const Threadblock &tb = g.threadblocks[t];
    const std::string tp = idx(idx("gpus", r) + ".threadblocks", t);
    const ResolvedGpu &rg = resolved.gpus[r];
    if (tb.id != t)
      error(tp + ".id", "threadblocks must be listed in id order: id " + std::to_string(tb.id) + " at position " +
                            std::to_string(t));
    size_t counts[4] = {0, 0, 0, 0};
    for (size_t c = 0; c < tb.channels.size(); ++c) {
      const TbChannels &tc = tb.channels[c];
      const std::string cp = idx(tp + ".channels", c);
      size_t avail = tc.channelType == ChannelType::Memory ? rg.memoryChannels.size()
                     : tc.channelType == ChannelType::Port ? rg.portChannels.size()
                     : tc.channelType == ChannelType::Switch ? rg.switchChannels.size()
                                                             : 0;
      counts[size_t(tc.channelType)] += tc.channelIds.size();
      for (size_t k = 0; k < tc.channelIds.size(); ++k)
        // Gpu-level indices: MSCCL++ reads them as `int` (execution_plan.cc, threadblock channels),
        // so only the tb-local indices of ops are 8-bit (their count is at most 16, below).
        if (tc.channelIds[k] >= avail)
          error(idx(cp + ".channel_ids", k), std::string(channelTypeName(tc.channelType)) + " channel " +
                                                 std::to_string(tc.channelIds[k]) + " out of range (gpu has " +
                                                 std::to_string(avail) + ")");
    }
    for (ChannelType ct : {ChannelType::Memory, ChannelType::Port, ChannelType::Switch})
      if (counts[size_t(ct)] > kMaxChannels)
        limit(tp + ".channels", std::to_string(counts[size_t(ct)]) + " " + std::string(channelTypeName(ct)) +
                                    " channels exceed the executor limit of 16 per threadblock (MAX_CHANNEL)");
    size_t memBufs = 0, portBufs = 0;
    for (size_t k = 0; k < tb.remoteBufferRefs.size(); ++k) {
      const RemoteBufferRefs &ref = tb.remoteBufferRefs[k];
      const std::string kp = idx(tp + ".remote_buffer_refs", k);
      (ref.accessChannelType == ChannelType::Memory ? memBufs : portBufs) += ref.remoteBufferIds.size();
      for (size_t j = 0; j < ref.remoteBufferIds.size(); ++j) {
        uint32_t id = ref.remoteBufferIds[j];
        const std::string jp = idx(kp + ".remote_buffer_ids", j);
        if (id > 65535) { // every executor of this project: the CUDA device layer's 16-bit ids
          error(jp, "remote buffer index " + std::to_string(id) + " exceeds 65535, the 16-bit index width of every executor");
          continue;
        }
        if (id > 255)
          limit(jp, "remote buffer index " + std::to_string(id) + " exceeds 255, the executor's 8-bit index width");
        if (id >= g.remoteBuffers.size()) {
          error(jp, "remote buffer " + std::to_string(id) + " out of range (gpu has " +
                        std::to_string(g.remoteBuffers.size()) + ")");
          continue;
        }
        bool ok = false;
        for (ChannelType a : g.remoteBuffers[id].accessChannelTypes)
          ok = ok || a == ref.accessChannelType;
        if (!ok)
          error(jp, "remote buffer " + std::to_string(id) + " is not accessible through " +
                        std::string(channelTypeName(ref.accessChannelType)) + " (its access_channel_types lack it)");
      }
    }
    if (memBufs > kMaxChannels || portBufs > kMaxChannels) {
      // At the first op that uses a 17th remote buffer of a type (the table's path when none does).
      const ChannelType over = memBufs > kMaxChannels ? ChannelType::Memory : ChannelType::Port;
      std::string at = tp + ".remote_buffer_refs";
      for (size_t k = 0; k < tb.ops.size() && at == tp + ".remote_buffer_refs"; ++k)
        if (usesRemoteBufferFrom(tb.ops[k], over, kMaxChannels))
          at = idx(tp + ".ops", k);
      limit(at, "more than 16 remote buffers per access type in one threadblock" +
                    std::string(at == tp + ".remote_buffer_refs"
                                    ? ""
                                    : ": this op reaches the 17th " + std::string(channelTypeName(over)) +
                                          " remote buffer; give ops that reach other peers another threadblock"));
    }
    size_t flat = 0, crossing = tb.ops.size();
    for (size_t k = 0; k < tb.ops.size(); ++k) {
      const Op &op = tb.ops[k];
      flat += 1 + op.ops.size();
      if (flat > kMaxOperations && crossing == tb.ops.size())
        crossing = k;
      checkOp(r, t, op, idx(tp + ".ops", k), false, barrierTbs, barrierSize);
    }
    if (flat > kMaxOperations) // at the op that crosses the limit, so a front end names its call
      limit(idx(tp + ".ops", crossing),
            std::to_string(flat) + " operations (pipeline inner ops included) exceed the executor limit of 64 "
                                   "(MAX_OPERATION); this op is past it: give it and the ops after it another "
                                   "threadblock");
  }

  const std::vector<uint32_t> &channelTable(const ResolvedTb &rtb, ChannelType ct) const {
    static const std::vector<uint32_t> empty;
    return ct == ChannelType::Memory ? rtb.memoryChannels
           : ct == ChannelType::Port ? rtb.portChannels
           : ct == ChannelType::Switch ? rtb.switchChannels
                                       : empty;
  }

  enum Need : uint8_t { Any, LocalE, RemoteE, SwitchE };

  /// Check one entry; returns the owner ranks (for index bounds) via the checks inside.
  void checkEntry(uint32_t r, const ResolvedTb &rtb, const Op &op, const BufferRef &e, const std::string &p, Need need,
                  bool needScratch) {
    const Gpu &g = plan.gpus[r];
    ChannelType ct = op.channelType.value_or(ChannelType::None);
    const char *locWord = e.loc == BufferRef::Loc::Local ? "a local entry (type)"
                          : e.loc == BufferRef::Loc::Remote ? "a remote entry (buffer_id)"
                                                            : "a switch entry (switch_channel_id)";
    if (need == LocalE && e.loc != BufferRef::Loc::Local)
      return error(p, std::string("must be a local entry (type), not ") + locWord);
    if (need == RemoteE && e.loc != BufferRef::Loc::Remote)
      return error(p, std::string("must be a remote entry (buffer_id), not ") + locWord);
    if (need == SwitchE && e.loc != BufferRef::Loc::Switch)
      return error(p, std::string("must be a switch entry (switch_channel_id), not ") + locWord);
    std::vector<std::pair<uint32_t, BufferType>> owners;
    if (e.loc == BufferRef::Loc::Local) {
      owners.push_back({r, e.type});
    } else if (e.loc == BufferRef::Loc::Remote) {
      if (ct != ChannelType::Memory && ct != ChannelType::Port)
        return error(p + ".buffer_id", "Invalid channel type: a remote entry needs the op's channel_type to be memory "
                                       "or port");
      const auto &table = ct == ChannelType::Memory ? rtb.memoryBuffers : rtb.portBuffers;
      if (e.id >= table.size())
        return error(p + ".buffer_id", "remote buffer " + std::to_string(e.id) + " out of range (threadblock has " +
                                           std::to_string(table.size()) + " " + std::string(channelTypeName(ct)) +
                                           " remote buffers)");
      uint32_t gid = table[e.id];
      if (gid >= g.remoteBuffers.size() || g.remoteBuffers[gid].rank >= plan.gpus.size())
        return; // reported on the table
      owners.push_back({g.remoteBuffers[gid].rank, g.remoteBuffers[gid].type});
    } else {
      if (e.id >= rtb.switchChannels.size())
        return error(p + ".switch_channel_id", "switch channel " + std::to_string(e.id) +
                                                   " out of range (threadblock has " +
                                                   std::to_string(rtb.switchChannels.size()) + ")");
      uint32_t gid = rtb.switchChannels[e.id];
      if (gid >= resolved.gpus[r].switchChannels.size())
        return;
      const ResolvedSwitch &sw = resolved.gpus[r].switchChannels[gid];
      for (uint32_t m : sw.ranks)
        if (m < plan.gpus.size())
          owners.push_back({m, sw.bufferType});
    }
    for (const auto &[owner, type] : owners) {
      if (needScratch && type != BufferType::Scratch) {
        error(p, std::string("packets must be in a scratch buffer, not ") + word(type));
        break;
      }
      uint64_t have = chunksOf(owner, type);
      if (e.index + e.size > have) {
        error(p + ".index", "chunks [" + std::to_string(e.index) + ", " + std::to_string(e.index + e.size) +
                                ") are outside rank " + std::to_string(owner) + "'s " + word(type) + " buffer (" +
                                std::to_string(have) + " chunks)");
        break;
      }
    }
  }

  /// Check one side (src_buff or dst_buff) of a data op against its op table roles.
  void checkEntries(uint32_t r, const ResolvedTb &rtb, const Op &op, const std::string &p, const char *key,
                    const std::vector<BufferRef> &v, const OpSide &side, size_t minCount) {
    if (v.size() < minCount)
      return error(p + "." + key, "needs at least " + std::to_string(minCount) + " entr" + (minCount == 1 ? "y" : "ies"));
    if (v.size() > kOwnMaxEntriesPerOp)
      error(p + "." + key, std::to_string(v.size()) + " entries exceed the limit of 16 per op of every executor");
    else if (v.size() > kMaxEntriesPerOp)
      limit(p + "." + key, std::to_string(v.size()) + " entries exceed the executor limit of 10 per op");
    static constexpr Need kNeed[] = {Any, LocalE, RemoteE, SwitchE}; // by oprole location A, L, R, S
    for (size_t j = 0; j < v.size(); ++j) {
      const EntryRole role = side.role(j);
      checkEntry(r, rtb, op, v[j], idx(p + "." + key, j), kNeed[role & oprole::LocMask], (role & oprole::Scr) != 0);
    }
  }

  /// The op's channel_type must be one of `allowed` (its op table row).
  void requireChannelType(const Op &op, const std::string &p, ChannelMask allowed) {
    ChannelType ct = op.channelType.value_or(ChannelType::None);
    if (opAcceptsChannel(op.type, ct))
      return;
    std::string names;
    for (ChannelType a : {ChannelType::None, ChannelType::Memory, ChannelType::Port, ChannelType::Switch})
      if (allowed & (1u << unsigned(a)))
        names += (names.empty() ? "" : " or ") + std::string(channelTypeName(a));
    error(p + ".channel_type", "op " + std::string(opName(op.type)) + " needs channel_type " + names + ", not " +
                                   std::string(channelTypeName(ct)));
  }

  void checkOp(uint32_t r, uint32_t t, const Op &op, const std::string &p, bool inPipeline,
               std::map<uint32_t, std::set<uint32_t>> &barrierTbs, std::map<uint32_t, uint32_t> &barrierSize) {
    const ResolvedTb &rtb = resolved.gpus[r].threadblocks[t];
    const ChannelType ct = op.channelType.value_or(ChannelType::None);
    if (!opIsExecutable(op.type) && !opt.allowGlre)
      error(p + ".name", "Invalid operation type: " + std::string(opName(op.type)) +
                             (op.type == OpType::MultiLoadReduce
                                  ? " (the MSCCL++ executor does not run the unfused switch reduce; fuse it with a "
                                    "broadcast into glres)"
                                  : " (not an MSCCL++ executor op: it runs on this project's executors only)"));
    // channel_ids.
    if (op.channelIds) {
      const auto &ids = *op.channelIds;
      if (ids.size() > kOwnMaxChannelsPerOp)
        error(p + ".channel_ids", std::to_string(ids.size()) + " channels exceed the limit of 16 per op of every executor");
      else if (ids.size() > kMaxChannelsPerOp)
        limit(p + ".channel_ids", std::to_string(ids.size()) + " channels exceed the executor limit of 8 per op");
      const auto &table = channelTable(rtb, ct);
      if (!ids.empty() && ct == ChannelType::None)
        error(p + ".channel_type", "channel_ids are given but channel_type is none");
      else
        for (size_t j = 0; j < ids.size(); ++j) {
          if (ids[j] >= table.size()) {
            error(idx(p + ".channel_ids", j), std::string(channelTypeName(ct)) + " channel " +
                                                  std::to_string(ids[j]) + " out of range (threadblock has " +
                                                  std::to_string(table.size()) + ")");
            continue;
          }
          // Sync ops need a partner channel on the peer.
          bool sync = opHas(op.type, optrait::Signals | optrait::Waits);
          if (sync && (ct == ChannelType::Memory || ct == ChannelType::Port)) {
            const auto &list = ct == ChannelType::Memory ? resolved.gpus[r].memoryChannels
                                                         : resolved.gpus[r].portChannels;
            uint32_t gid = table[ids[j]];
            if (gid < list.size() && list[gid].peer < plan.gpus.size() && list[gid].peerChannel == kNoChannel)
              error(idx(p + ".channel_ids", j),
                    std::string(channelTypeName(ct)) + " channel " + std::to_string(gid) + " to rank " +
                        std::to_string(list[gid].peer) + " has no partner: rank " + std::to_string(list[gid].peer) +
                        " declares fewer " + std::string(channelTypeName(ct)) + " channels toward rank " +
                        std::to_string(r));
          }
        }
    }
    if (op.tbg && (op.tbg->tbgSize == 0 || op.tbg->tbId >= op.tbg->tbgSize))
      error(p + ".tbg_info", "tb_id " + std::to_string(op.tbg->tbId) + " must be below tbg_size " +
                                 std::to_string(op.tbg->tbgSize));
    auto needChannelsFor = [&](size_t n) {
      size_t have = op.channelIds ? op.channelIds->size() : 0;
      if (have < n)
        error(p + ".channel_ids", "port transfers need one channel per dst entry: " + std::to_string(n) +
                                      " needed, " + std::to_string(have) + " given");
    };
    // Port transfers: the remote buffer must belong to the channel's peer.
    auto portPeers = [&](const std::vector<BufferRef> &remotes, size_t from) {
      if (ct != ChannelType::Port || !op.channelIds)
        return;
      const Gpu &g = plan.gpus[r];
      for (size_t j = from; j < remotes.size(); ++j) {
        size_t c = j - from;
        if (c >= op.channelIds->size() || (*op.channelIds)[c] >= rtb.portChannels.size())
          continue;
        uint32_t gid = rtb.portChannels[(*op.channelIds)[c]];
        if (remotes[j].loc != BufferRef::Loc::Remote || remotes[j].id >= rtb.portBuffers.size() ||
            gid >= resolved.gpus[r].portChannels.size())
          continue;
        uint32_t rb = rtb.portBuffers[remotes[j].id];
        if (rb >= g.remoteBuffers.size())
          continue;
        uint32_t peer = resolved.gpus[r].portChannels[gid].peer;
        if (g.remoteBuffers[rb].rank != peer)
          error(idx(p + ".dst_buff", j), "remote buffer of rank " + std::to_string(g.remoteBuffers[rb].rank) +
                                             " is written through port channel " + std::to_string(gid) +
                                             " to rank " + std::to_string(peer));
      }
    };
    const OpRow row = opRow(op.type);
    switch (opShape(op.type)) {
    case OpShape::Nop:
      break;
    case OpShape::Barrier:
      if (op.barrierId >= kMaxBarriers)
        error(p + ".barrier_id", std::to_string(op.barrierId) + " exceeds the executor limit (ids 0..15, MAX_DEVICE_SYNCERS)");
      if (op.numThreadblocks == 0 || op.numThreadblocks > plan.gpus[r].threadblocks.size())
        error(p + ".num_threadblocks", std::to_string(op.numThreadblocks) + " is outside 1.." +
                                           std::to_string(plan.gpus[r].threadblocks.size()) +
                                           " (the rank's threadblock count)");
      if (barrierSize.count(op.barrierId) && barrierSize[op.barrierId] != op.numThreadblocks)
        error(p + ".num_threadblocks", "barrier " + std::to_string(op.barrierId) + " is used with num_threadblocks " +
                                           std::to_string(barrierSize[op.barrierId]) + " elsewhere on this rank");
      barrierSize[op.barrierId] = op.numThreadblocks;
      barrierTbs[op.barrierId].insert(t);
      break;
    case OpShape::Sync:
      requireChannelType(op, p, row.channels);
      if (!op.channelIds || op.channelIds->empty())
        error(p + ".channel_ids", "op " + std::string(opName(op.type)) + " needs channel_ids");
      break;
    case OpShape::Sem:
      if (op.semaphoreIds.size() > kMaxSemaphoresPerOp)
        error(p + ".semaphore_ids", "more than 16 semaphores in one op (MAX_DEVICE_SEMAPHORES)");
      for (size_t j = 0; j < op.semaphoreIds.size(); ++j)
        if (op.semaphoreIds[j] >= plan.gpus[r].semaphores.size())
          error(idx(p + ".semaphore_ids", j), "semaphore " + std::to_string(op.semaphoreIds[j]) +
                                                  " out of range (gpu has " +
                                                  std::to_string(plan.gpus[r].semaphores.size()) + ")");
      break;
    case OpShape::Data:
      // Roles, channel types and counts from the op table (PlanEnums.def).
      if (row.channels != opchan::ChAny)
        requireChannelType(op, p, row.channels);
      checkEntries(r, rtb, op, p, "src_buff", op.src, row.src, row.src.minGiven(op.dst.size()));
      checkEntries(r, rtb, op, p, "dst_buff", op.dst, row.dst, row.dst.minGiven(op.src.size()));
      if (row.traits & optrait::Put) { // one port channel per dst entry, to that entry's rank
        if (ct == ChannelType::Port)
          needChannelsFor(op.dst.size());
        portPeers(op.dst, 0);
      }
      break;
    case OpShape::GroupLoadReduce: {
      requireChannelType(op, p, row.channels);
      if (!op.channelIds || op.channelIds->empty())
        break; // reported above
      uint32_t q = op.channelIds->front();
      if (q < rtb.switchChannels.size() && rtb.switchChannels[q] < resolved.gpus[r].switchChannels.size()) {
        const ResolvedSwitch &sw = resolved.gpus[r].switchChannels[rtb.switchChannels[q]];
        if (sw.bufferType != op.glreBufferType)
          error(p + ".buffer_type", std::string("is ") + word(op.glreBufferType) + " but switch channel " +
                                        std::to_string(q) + " is bound to the " + word(sw.bufferType) + " buffer");
        for (uint32_t m : sw.ranks)
          if (m < plan.gpus.size() && op.glreBufferOffset + op.glreSize > chunksOf(m, sw.bufferType))
            error(p + ".buffer_offset", "chunks [" + std::to_string(op.glreBufferOffset) + ", " +
                                            std::to_string(op.glreBufferOffset + op.glreSize) + ") are outside rank " +
                                            std::to_string(m) + "'s " + word(sw.bufferType) + " buffer");
      }
      BufferRef d = op.glreDstChunk;
      d.loc = BufferRef::Loc::Local;
      checkEntry(r, rtb, op, d, p + ".dst_chunk", LocalE, false);
      break;
    }
    case OpShape::Pipeline:
      if (inPipeline)
        error(p, "nested pipelines are not supported");
      if (op.iterContext.unitSize == 0)
        error(p + ".iter_context.unit_size", "must be greater than 0");
      for (size_t j = 0; j < op.ops.size(); ++j)
        checkOp(r, t, op.ops[j], idx(p + ".ops", j), true, barrierTbs, barrierSize);
      break;
    }
  }
};
} // namespace

std::vector<PlanDiagnostic> checkPlan(const Plan &plan, const ValidateOptions &options) {
  Checker c{plan, options, {}, resolvePlan(plan)};
  c.checkTop();
  for (uint32_t r = 0; r < plan.gpus.size(); ++r)
    c.checkGpu(r);
  if (!options.deviceLimits)
    c.diags.erase(std::remove_if(c.diags.begin(), c.diags.end(), [](const PlanDiagnostic &d) { return d.deviceLimit; }),
                  c.diags.end());
  return std::move(c.diags);
}

std::vector<PlanDiagnostic> deviceLimitProblems(const Plan &plan) {
  ValidateOptions all;
  all.allowGlre = true;
  std::vector<PlanDiagnostic> d = checkPlan(plan, all);
  d.erase(std::remove_if(d.begin(), d.end(), [](const PlanDiagnostic &x) { return !x.deviceLimit; }), d.end());
  return d;
}

void validatePlan(const Plan &plan, const ValidateOptions &options) {
  std::vector<PlanDiagnostic> d = checkPlan(plan, options);
  if (d.empty())
    return;
  std::vector<std::string> lines;
  for (const PlanDiagnostic &x : d)
    lines.push_back(x.str());
  throw ExecutionError(ErrorKind::InvalidPlan,
                       "invalid plan" + (plan.name ? " '" + *plan.name + "'" : std::string()) + ": " +
                           std::to_string(d.size()) + " problem(s):",
                       std::move(lines));
}

} // namespace msccl::runtime
