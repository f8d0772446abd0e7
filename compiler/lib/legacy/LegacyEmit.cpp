//===- LegacyEmit.cpp - Buffer sizes, channel numbering, nops, the legacy JSON text -------===//
//
// Consumes the Lowered program; produces the plan text of LegacyPlanFormat.h. Buffer sizes are
// the maximum chunk any local op touches (at least the collective's buffers; under LL every rank
// gets the largest scratch). Channels of a rank are numbered per (src buffer, dst buffer, type)
// in (tb, peer) order. A wait does not depend on a signal; a dependency an earlier op of the tb
// already waited for is dropped; the remaining same-tb dependencies of an op become a nop before
// it (merged into a preceding nop or barrier), except before packet ops and barriers. Mirrors
// ir_to_json and _dump_to_json (ir.py), including json.dumps(indent=2).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/legacy/LegacyPasses.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace msccl::legacy {
namespace {

using Json = nlohmann::ordered_json;

bool localSrc(Inst i) {
  switch (i) {
  case Inst::Put: case Inst::PutPacket: case Inst::ReadPutPacket: case Inst::Signal: case Inst::Flush:
  case Inst::PutWithSignal: case Inst::PutWithSignalAndFlush: case Inst::Copy: case Inst::CopyPacket:
  case Inst::TransformToPacket: case Inst::Reduce: case Inst::ReducePacket: case Inst::ReduceSend:
  case Inst::ReduceSendPacket: case Inst::GroupLoadReduceStore: case Inst::GroupStore: return true;
  default: return false;
  }
}
bool localDst(Inst i) {
  switch (i) {
  case Inst::Get: case Inst::Wait: case Inst::ReadReduceCopy: case Inst::Copy: case Inst::CopyPacket:
  case Inst::TransformToPacket: case Inst::Reduce: case Inst::ReadReduceCopySend: case Inst::ReduceSend:
  case Inst::ReducePacket: case Inst::ReduceSendPacket: case Inst::GroupLoadReduceStore:
  case Inst::GroupLoadReduce: return true;
  default: return false;
  }
}
bool noSyncBarrier(Inst i) {
  return i == Inst::CopyPacket || i == Inst::ReducePacket || i == Inst::ReduceSendPacket || i == Inst::Barrier;
}

using ChanKey = std::tuple<Buf, Buf, ChanType>;
struct ChanEntry {
  int64_t tb;
  std::vector<int> peers;
  bool operator<(const ChanEntry &o) const { return std::tie(tb, peers) < std::tie(o.tb, o.peers); }
};
/// Per tb: (src, dst, type) -> the peers of that tb's channels of the key, in channel order.
using TbChannels = std::map<ChanKey, std::vector<std::vector<int>>>;

std::vector<Ref> refs(const std::vector<std::pair<Ref, int64_t>> &v) {
  std::vector<Ref> out;
  for (auto &p : v)
    out.push_back(p.first);
  return out;
}

Json channelIds(const std::vector<Ref> &chunks, const TbChannels &tbc, Buf src, Buf dst, ChanType type,
                const Op &op) {
  auto it = tbc.find({src, dst, type});
  if (it == tbc.end())
    throw LegacyError(std::string("op `") + instName(op.inst) + "` of rank " + std::to_string(op.rank) + " tb " +
                      std::to_string(op.tb) + " uses a " + chanName(type) + " channel " + bufName(src) + " -> " +
                      bufName(dst) + " that its threadblock does not have");
  Json out = Json::array();
  const auto &peers = it->second;
  if (type == ChanType::Nvls) {
    std::set<int> ranks;
    for (auto &c : chunks)
      ranks.insert(c.rank);
    for (size_t id = 0; id < peers.size(); ++id)
      if (std::set<int>(peers[id].begin(), peers[id].end()) == ranks)
        out.push_back(Json{{"id", id}});
  } else {
    for (auto &c : chunks)
      for (size_t id = 0; id < peers.size(); ++id)
        if (peers[id].size() == 1 && peers[id][0] == c.rank)
          out.push_back(Json{{"id", id}, {"off", c.index}});
  }
  return out;
}

Json buffPair(Buf s, Buf d) { return Json{{"src", bufName(s)}, {"dst", bufName(d)}}; }
Json srcList(const std::vector<Ref> &v) {
  Json a = Json::array();
  for (auto &r : v)
    a.push_back(Json{{"buff", bufName(r.buffer)}, {"off", r.index}});
  return a;
}

/// The fields of _JsonInstruction, in its order; empty ones are left out.
struct JsonOp {
  std::string name;
  Json iBuff, iCids, oBuff, oCids;
  std::optional<int64_t> src;
  Json srcs;
  std::optional<std::string> srcbuff;
  std::optional<int64_t> srcoff, dst;
  Json dsts;
  std::optional<std::string> dstbuff;
  std::optional<int64_t> dstoff;
  std::optional<std::string> ctype;
  std::optional<int64_t> cnt;
  Json deps;
  std::optional<int64_t> nthreadBlocks, barrierId;
  Json toJson() const {
    Json j;
    j["name"] = name;
    auto put = [&](const char *k, const Json &v) {
      if (!v.is_null() && !(v.is_array() && v.empty()) && !(v.is_object() && v.empty()))
        j[k] = v;
    };
    put("i_buff", iBuff);
    put("i_cids", iCids);
    put("o_buff", oBuff);
    put("o_cids", oCids);
    if (src) j["src"] = *src;
    put("srcs", srcs);
    if (srcbuff) j["srcbuff"] = *srcbuff;
    if (srcoff) j["srcoff"] = *srcoff;
    if (dst) j["dst"] = *dst;
    put("dsts", dsts);
    if (dstbuff) j["dstbuff"] = *dstbuff;
    if (dstoff) j["dstoff"] = *dstoff;
    if (ctype) j["ctype"] = *ctype;
    if (cnt) j["cnt"] = *cnt;
    put("deps", deps);
    if (nthreadBlocks) j["nthread_blocks"] = *nthreadBlocks;
    if (barrierId) j["barrier_id"] = *barrierId;
    return j;
  }
};

void setSrc(JsonOp &j, const Ref &r) { j.src = r.rank; j.srcbuff = bufName(r.buffer); j.srcoff = r.index; }
void setDst(JsonOp &j, const Ref &r) { j.dst = r.rank; j.dstbuff = bufName(r.buffer); j.dstoff = r.index; }

Json convert(const Op &op, const TbChannels &tbc) {
  JsonOp j;
  j.name = instName(op.inst);
  std::vector<Ref> srcs = refs(op.srcs), dsts = refs(op.dsts);
  auto common = [&] { j.ctype = chanName(op.channelType); j.cnt = op.cnt(); };
  switch (op.inst) {
  case Inst::Signal:
  case Inst::Flush:
    j.oBuff = buffPair(op.src->buffer, op.dst->buffer);
    j.oCids = channelIds(dsts, tbc, op.src->buffer, op.dst->buffer, op.channelType, op);
    common();
    break;
  case Inst::Wait:
    j.iBuff = buffPair(op.src->buffer, op.dst->buffer);
    j.iCids = channelIds(srcs, tbc, op.src->buffer, op.dst->buffer, op.channelType, op);
    common();
    break;
  case Inst::ReadReduceCopy:
    j.iBuff = buffPair(op.dst->buffer, op.src->buffer);
    j.iCids = channelIds(srcs, tbc, op.dst->buffer, op.src->buffer, op.channelType, op);
    setDst(j, *op.dst);
    setSrc(j, *op.dst);
    common();
    break;
  case Inst::ReadReduceCopySend:
    if (dsts.empty())
      throw LegacyError("internal: rrcs without destinations");
    j.iBuff = buffPair(op.src->buffer, op.dst->buffer);
    j.iCids = channelIds(srcs, tbc, op.src->buffer, op.dst->buffer, op.channelType, op);
    j.oBuff = buffPair(op.dst->buffer, dsts[0].buffer);
    j.oCids = channelIds(dsts, tbc, op.dst->buffer, dsts[0].buffer, op.channelType, op);
    setSrc(j, *op.dst);
    setDst(j, *op.dst);
    common();
    break;
  case Inst::ReduceSend:
  case Inst::ReduceSendPacket:
    if (dsts.empty())
      throw LegacyError("internal: rs without destinations");
    j.oBuff = buffPair(op.dst->buffer, dsts[0].buffer);
    j.oCids = channelIds(dsts, tbc, op.dst->buffer, dsts[0].buffer, ChanType::Memory, op);
    setSrc(j, *op.dst);
    j.srcs = srcList(srcs);
    setDst(j, *op.dst);
    common();
    break;
  case Inst::Reduce:
  case Inst::ReducePacket:
    j.srcs = srcList(srcs);
    setDst(j, *op.dst);
    setSrc(j, *op.dst);
    common();
    break;
  case Inst::Nop: {
    std::vector<std::pair<int64_t, int64_t>> d;
    for (Op *x : op.depends)
      d.push_back({x->tb, x->step});
    std::sort(d.begin(), d.end());
    j.deps = Json::array();
    for (auto &[tb, st] : d)
      j.deps.push_back(Json{{"tb", tb}, {"step", st}});
    break;
  }
  case Inst::Barrier:
    j.nthreadBlocks = int64_t(op.tbList.size());
    j.barrierId = op.barrierId;
    break;
  case Inst::Put:
  case Inst::PutPacket:
  case Inst::ReadPutPacket:
  case Inst::PutWithSignal:
  case Inst::PutWithSignalAndFlush:
    j.oBuff = buffPair(op.src->buffer, op.dst->buffer);
    j.oCids = channelIds(dsts, tbc, op.src->buffer, op.dst->buffer, op.channelType, op);
    j.srcs = srcList(srcs);
    common();
    break;
  case Inst::Get: {
    j.iBuff = buffPair(op.dst->buffer, op.src->buffer);
    j.iCids = channelIds(srcs, tbc, op.dst->buffer, op.src->buffer, op.channelType, op);
    j.dsts = srcList(dsts);
    common();
    break;
  }
  case Inst::Copy:
  case Inst::CopyPacket:
  case Inst::TransformToPacket:
    setSrc(j, *op.src);
    setDst(j, *op.dst);
    common();
    break;
  case Inst::GroupLoadReduceStore:
    setSrc(j, *op.src);
    setDst(j, *op.dst);
    j.iCids = channelIds(srcs, tbc, op.src->buffer, op.dst->buffer, op.channelType, op);
    j.oCids = channelIds(dsts, tbc, op.src->buffer, op.dst->buffer, op.channelType, op);
    common();
    break;
  default:
    throw LegacyError(std::string("op `") + instName(op.inst) + "` cannot be written in the legacy format");
  }
  return j.toJson();
}

/// Buffer sizes from usage: the largest chunk any local op touches, at least the collective's
/// buffers; under LL every rank gets the largest scratch.
void sizeBuffers(const ProgramOptions &o, Lowered &lw) {
  for (Gpu &g : lw.gpus) {
    int64_t size[3] = {0, 0, 0};
    auto grow = [&](const Ref &r) {
      auto &s = size[size_t(r.buffer)];
      s = std::max(s, r.index + r.size);
    };
    for (auto &tb : g.threadblocks)
      for (Op *op : tb.ops) {
        if (localSrc(op->inst)) {
          grow(*op->src);
          for (auto &s : op->srcs)
            grow(s.first);
        }
        if (localDst(op->inst)) {
          grow(*op->dst);
          if (op->inst != Inst::ReadReduceCopySend && op->inst != Inst::ReduceSend &&
              op->inst != Inst::ReduceSendPacket)
            for (auto &d : op->dsts)
              grow(d.first);
        }
      }
    g.inputChunks = std::max(size[0], g.inputChunks);
    g.outputChunks = std::max(size[1], g.outputChunks);
    g.scratchChunks = std::max(size[2], g.scratchChunks);
  }
  if (o.protocol == "LL") {
    int64_t m = 0;
    for (auto &g : lw.gpus)
      m = std::max(m, g.scratchChunks);
    for (auto &g : lw.gpus)
      g.scratchChunks = m;
  }
}

/// A rank's channels: key -> its (tb, peers) entries, sorted; keys in first-use order.
using RankChannels = std::vector<std::pair<ChanKey, std::vector<ChanEntry>>>;

/// Channels per rank, numbered per (src buffer, dst buffer, type) in (tb, peers) order.
std::vector<RankChannels> numberChannels(const Lowered &lw) {
  std::vector<RankChannels> chans(lw.gpus.size());
  for (size_t gi = 0; gi < lw.gpus.size(); ++gi) {
    auto &cd = chans[gi];
    for (auto &tb : lw.gpus[gi].threadblocks)
      for (auto &c : tb.channels) {
        ChanKey k{c.srcBuffer, c.dstBuffer, c.type};
        auto it = std::find_if(cd.begin(), cd.end(), [&](auto &e) { return e.first == k; });
        if (it == cd.end())
          cd.push_back({k, {{tb.id, c.peers}}});
        else
          it->second.push_back({tb.id, c.peers});
      }
    for (auto &e : cd)
      std::sort(e.second.begin(), e.second.end());
  }
  return chans;
}

/// Dependencies of one threadblock: waits do not depend on signals; those already waited for
/// are dropped; the remaining same-tb ones become nops (merged into a preceding nop or
/// barrier); then the ops are renumbered.
void insertNops(Threadblock &tb, Lowered &lw) {
  for (Op *op : tb.ops)
    if (op->inst == Inst::Wait)
      op->depends.erase(std::remove_if(op->depends.begin(), op->depends.end(),
                                       [](Op *d) { return d->inst == Inst::Signal; }),
                        op->depends.end());
  std::vector<Op *> running;
  for (Op *op : tb.ops) {
    std::vector<Op *> kept;
    for (Op *d : op->depends)
      if (std::find(running.begin(), running.end(), d) == running.end())
        kept.push_back(d);
    op->depends = kept;
    running.insert(running.end(), kept.begin(), kept.end());
  }
  std::vector<Op *> newOps;
  for (Op *op : tb.ops) {
    if (noSyncBarrier(op->inst)) {
      newOps.push_back(op);
      continue;
    }
    std::vector<Op *> nd;
    for (Op *d : op->depends)
      if (d->inst != Inst::Barrier && d->tb == op->tb)
        nd.push_back(d);
    if (!newOps.empty() && (newOps.back()->inst == Inst::Barrier || newOps.back()->inst == Inst::Nop)) {
      auto &bd = newOps.back()->depends;
      bd.insert(bd.end(), nd.begin(), nd.end());
    } else if (!nd.empty()) {
      lw.ownedOps.emplace_back();
      Op *nop = &lw.ownedOps.back();
      nop->inst = Inst::Nop;
      nop->depends = nd;
      newOps.push_back(nop);
    }
    newOps.push_back(op);
  }
  tb.ops = std::move(newOps);
  for (size_t i = 0; i < tb.ops.size(); ++i) {
    tb.ops[i]->step = int64_t(i);
    tb.ops[i]->tb = tb.id;
  }
}

/// The order _dump_to_json sorts channels in: by the names of src buffer, dst buffer, type.
std::tuple<std::string, std::string, std::string> sortKey(const ChanKey &k) {
  return std::make_tuple(std::string(bufName(std::get<0>(k))), std::string(bufName(std::get<1>(k))),
                         std::string(chanName(std::get<2>(k))));
}

/// The largest input, output and scratch buffer of any rank (an NVLS group's size).
struct MaxSizes {
  int64_t input = 0, output = 0, scratch = 0;
};

/// A rank's "channels": NVLS rank groups or the peers each channel connects to, sorted.
Json rankChannelsJson(const RankChannels &chans, const MaxSizes &max) {
  RankChannels sorted;
  for (auto &e : chans)
    if (std::get<2>(e.first) != ChanType::None)
      sorted.push_back(e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](auto &a, auto &b) { return sortKey(a.first) < sortKey(b.first); });
  Json cj = Json::array();
  for (auto &[k, entries] : sorted) {
    if (std::get<2>(k) == ChanType::Nvls) {
      Buf b = std::get<0>(k);
      int64_t size = b == Buf::Input ? max.input : b == Buf::Output ? max.output : max.scratch;
      Json groups = Json::array();
      for (auto &e : entries) {
        std::vector<int> r = e.peers;
        std::sort(r.begin(), r.end());
        groups.push_back(Json{{"size", size}, {"ranks", r}});
      }
      cj.push_back(Json{{"buff", bufName(b)}, {"type", "nvls"}, {"rankGroups", groups}});
    } else {
      Json peers = Json::array();
      for (auto &e : entries)
        peers.push_back(e.peers[0]);
      cj.push_back(Json{{"srcbuff", bufName(std::get<0>(k))},
                        {"dstbuff", bufName(std::get<1>(k))},
                        {"type", chanName(std::get<2>(k))},
                        {"connectedTo", peers}});
    }
  }
  return cj;
}

/// One threadblock: its ops and the ids of the rank's channels it uses.
Json threadblockJson(const Threadblock &tb, const RankChannels &chans) {
  TbChannels tbc;
  std::vector<std::pair<ChanKey, std::vector<int64_t>>> tbChans;
  for (auto &[k, entries] : chans) {
    std::vector<int64_t> ids;
    std::vector<std::vector<int>> peers;
    for (size_t id = 0; id < entries.size(); ++id)
      if (entries[id].tb == tb.id) {
        ids.push_back(int64_t(id));
        peers.push_back(entries[id].peers);
      }
    if (!ids.empty()) {
      tbc[k] = peers;
      if (std::get<2>(k) != ChanType::None)
        tbChans.push_back({k, ids});
    }
  }
  std::stable_sort(tbChans.begin(), tbChans.end(),
                   [&](auto &a, auto &b) { return sortKey(a.first) < sortKey(b.first); });
  Json ops = Json::array();
  for (Op *op : tb.ops)
    ops.push_back(convert(*op, tbc));
  Json tchans = Json::array();
  for (auto &[k, ids] : tbChans)
    tchans.push_back(Json{{"src", bufName(std::get<0>(k))},
                          {"dst", bufName(std::get<1>(k))},
                          {"ctype", chanName(std::get<2>(k))},
                          {"cids", ids}});
  return Json{{"id", tb.id}, {"ops", ops}, {"channels", tchans}};
}

} // namespace

Json emitLegacyJson(const Program &program, Lowered &lw) {
  const ProgramOptions &o = program.options();
  sizeBuffers(o, lw);
  std::vector<RankChannels> chans = numberChannels(lw);
  for (Gpu &g : lw.gpus)
    for (auto &tb : g.threadblocks)
      insertNops(tb, lw);
  // _dump_to_json
  MaxSizes max;
  for (auto &g : lw.gpus) {
    max.scratch = std::max(max.scratch, g.scratchChunks);
    max.input = std::max(max.input, g.inputChunks);
    max.output = std::max(max.output, g.outputChunks);
  }
  Json gpus = Json::array();
  for (size_t gi = 0; gi < lw.gpus.size(); ++gi) {
    Gpu &g = lw.gpus[gi];
    Json gj;
    gj["id"] = gi;
    gj["inputChunks"] = g.inputChunks;
    gj["outputChunks"] = g.outputChunks;
    gj["scratchChunks"] = g.scratchChunks;
    gj["chunkGroups"] = o.collective.numChunkGroups * o.instances;
    gj["threadblocks"] = Json::array();
    Json cj = rankChannelsJson(chans[gi], max);
    for (auto &tb : g.threadblocks)
      if (tb.id >= 0)
        gj["threadblocks"].push_back(threadblockJson(tb, chans[gi]));
    gj["channels"] = cj;
    gpus.push_back(std::move(gj));
  }
  Json root;
  root["name"] = o.name;
  root["collective"] = o.collective.name();
  root["protocol"] = o.protocol;
  root["inplace"] = o.collective.inplace;
  root["gpus"] = gpus;
  root["num_threads_per_block"] = o.numThreadsPerBlock;
  root["use_double_scratch_buffer"] = o.useDoubleScratchBuffer;
  root["min_message_size"] = o.minMessageSize;
  root["max_message_size"] = o.maxMessageSize;
  return root;
}

Json compileLegacy(Program &program) {
  scheduleOps(program);
  optimizeDag(program, program.options().instrFusion);
  Lowered lw = lowerDag(program);
  return emitLegacyJson(program, lw);
}

} // namespace msccl::legacy
