//===- LegacyPlan.cpp - MSCCLPPLang's older plan format -> the one plan model -----------===//
//
// Consumes a JSON value in the older format (LegacyPlan.h) and produces a Plan of today's model,
// guaranteeing that the plan does what the old executor did with the file (for every message
// size today's format accepts) or a PlanError naming the JSON path of what cannot be converted.
//
// How the old executor resolved names (execution_plan.cc, setupChannels/setupOperations):
//  * A gpu's memory (port) channels are numbered by concatenating the `connectedTo` lists of its
//    `channels` entries of that type in file order; `channelMap[key]` lists, per key
//    (srcbuff, dstbuff, type), the gpu-level indices of that key's channels. Each nvls rank group
//    is one switch channel, of key (buff, buff, nvls).
//  * A threadblock's `channels: [{src, dst, ctype, cids}]` appends, per cid, gpu-level channel
//    `channelMap[key][cid]` to its channel list of that type; `channelIndexes[key]` collects the
//    tb-local positions. An op's `o_cids[i].id` (`i_cids`) is an index into
//    `channelIndexes[o_buff key]` (`i_buff`), and its `off` a chunk offset in the peer's `dst`
//    buffer.
//  * Chunk offsets go through getOffset with `chunkGroups`; for sizes that divide evenly (the only
//    sizes today's format accepts) that is the linear map of today's format, so indices carry over.
// Today's tables are built in first-use order, as our lowering builds them: one gpu channel entry
// per type in order of first declaration then one switch entry per rank group; remote buffers
// (peer, buffer type) and each threadblock's remote-buffer refs in order of first use by an op.
// An old op's name gives today's op (LegacyOps.def); its operands are read by today's op's row in
// the op table (plan/OpTable.h: the shape; for a data op its traits, entry roles and reduce form),
// not by a list of op kinds, and an op whose row fits no reader is an internal error.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/LegacyPlan.h"

#include "JsonNode.h"
#include "msccl/plan/OpTable.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

namespace msccl::plan {

namespace {

using namespace json_read;

/// Today's op for an old op name: in general, and when the old op's `ctype` is port.
struct LegacyOp {
  OpType today, overPort;
};

std::optional<LegacyOp> legacyOp(std::string_view name) {
#define MSCCL_LEGACY_OP(Old, Today, OverPort, Handler)                                              \
  if (name == Old)                                                                                  \
    return LegacyOp{OpType::Today, OpType::OverPort};
#include "msccl/plan/LegacyOps.def"
  return std::nullopt;
}

std::string legacyOpList() {
  std::string s;
#define MSCCL_LEGACY_OP(Old, Today, OverPort, Handler) s += std::string(s.empty() ? "`" : ", `") + Old + "`";
#include "msccl/plan/LegacyOps.def"
  return s;
}

/// The old executor's convertToChannelType: `sm` and `proxy` are the older names of memory/port.
ChannelType legacyChannelType(const Node &n) {
  const std::string &s = n.str();
  if (s == "memory" || s == "sm")
    return ChannelType::Memory;
  if (s == "port" || s == "proxy")
    return ChannelType::Port;
  if (s == "nvls")
    return ChannelType::Switch;
  if (s == "none")
    return ChannelType::None;
  n.fail("unknown channel type `" + s + "` (expected `memory`, `port`, `nvls` or `none`)");
}

std::string_view legacyChannelTypeName(ChannelType t) { return t == ChannelType::Switch ? "nvls" : channelTypeName(t); }

/// (local buffer, remote buffer, type): how the old format names a kind of channel.
struct Key {
  BufferType src = BufferType::Input, dst = BufferType::Input;
  ChannelType type = ChannelType::None;
  bool operator<(const Key &o) const { return std::tie(src, dst, type) < std::tie(o.src, o.dst, o.type); }
  std::string str() const {
    return "(" + std::string(bufferTypeName(src)) + ", " + std::string(bufferTypeName(dst)) + ", " +
           std::string(legacyChannelTypeName(type)) + ")";
  }
};

unsigned slot(ChannelType t) { return t == ChannelType::Memory ? 0 : t == ChannelType::Port ? 1 : 2; }

/// One gpu's channel tables and the remote buffers its ops reach.
struct GpuTables {
  std::map<Key, std::vector<uint32_t>> channelMap; ///< key -> gpu-level indices (per type)
  std::vector<uint32_t> peers[3];                  ///< memory, port: gpu-level index -> peer
  std::vector<ChannelType> typeOrder;              ///< memory/port, in order of first declaration
  std::vector<ChannelDecl> switches;               ///< one per nvls rank group
  std::vector<RemoteBuffer> remoteBuffers;
  std::map<std::pair<uint32_t, BufferType>, uint32_t> remoteIndex;

  uint32_t remoteBuffer(uint32_t peer, BufferType type, ChannelType access) {
    auto [it, fresh] = remoteIndex.try_emplace({peer, type}, uint32_t(remoteBuffers.size()));
    if (fresh)
      remoteBuffers.push_back(RemoteBuffer{peer, type, {}});
    auto &types = remoteBuffers[it->second].accessChannelTypes;
    if (std::find(types.begin(), types.end(), access) == types.end())
      types.push_back(access);
    return it->second;
  }
};

/// One threadblock's channel list (per type: tb-local -> gpu-level) and remote-buffer refs.
struct TbTables {
  std::map<Key, std::vector<uint32_t>> channelIndexes; ///< key -> tb-local indices (per type)
  std::vector<uint32_t> local[3];
  std::vector<ChannelType> typeOrder;
  std::vector<RemoteBufferRefs> refs; ///< one per access type, in order of first use

  uint32_t ref(ChannelType access, uint32_t gpuBuffer) {
    auto it = std::find_if(refs.begin(), refs.end(), [&](const RemoteBufferRefs &r) { return r.accessChannelType == access; });
    if (it == refs.end())
      it = refs.insert(refs.end(), RemoteBufferRefs{access, {}});
    auto &ids = it->remoteBufferIds;
    auto pos = std::find(ids.begin(), ids.end(), gpuBuffer);
    if (pos != ids.end())
      return uint32_t(pos - ids.begin());
    ids.push_back(gpuBuffer);
    return uint32_t(ids.size() - 1);
  }
};

/// Converts the ops of one threadblock.
struct OpReader {
  GpuTables &gpu;
  TbTables &tb;

  static BufferType buf(const Node &n) { return n.bufferType(); }

  Key key(const Node &op, const char *field, ChannelType type) const {
    Node b = op.at(field);
    b.object();
    return Key{buf(b.at("src")), buf(b.at("dst")), type};
  }

  /// The tb-local channel named by `entry.id` among the threadblock's channels of `k`.
  uint32_t channel(const Node &entry, const Key &k) const {
    entry.object();
    Node id = entry.at("id");
    uint32_t i = id.u32();
    auto it = tb.channelIndexes.find(k);
    size_t have = it == tb.channelIndexes.end() ? 0 : it->second.size();
    if (i >= have)
      id.fail("channel " + std::to_string(i) + " of key " + k.str() + " does not exist: the threadblock has " +
              std::to_string(have) + " such channel(s) in its `channels`");
    return it->second[i];
  }

  /// A remote entry reached through `entry` (an i_cids/o_cids element) of key `k`.
  BufferRef remote(const Node &entry, const Key &k, uint64_t size) {
    if (k.type != ChannelType::Memory && k.type != ChannelType::Port)
      entry.fail("a peer's buffer is reached through a memory or port channel, not `" +
                 std::string(legacyChannelTypeName(k.type)) + "`");
    uint32_t local = channel(entry, k);
    uint32_t peer = gpu.peers[slot(k.type)][tb.local[slot(k.type)][local]];
    uint32_t id = tb.ref(k.type, gpu.remoteBuffer(peer, k.dst, k.type));
    return BufferRef::remote(id, entry.at("off").u64(), size);
  }

  std::vector<uint32_t> channels(const Node &list, const Key &k) const {
    size_t n = list.array();
    std::vector<uint32_t> out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(channel(list[i], k));
    return out;
  }

  ChannelType ctype(const Node &op, bool allowNone = false) const {
    Node n = op.at("ctype");
    ChannelType t = legacyChannelType(n);
    if (t == ChannelType::None && !allowNone)
      n.fail("this op needs a channel, got channel type `none`");
    return t;
  }

  static uint64_t cnt(const Node &n) { return n.at("cnt").u64(); }

  static BufferRef localAt(const Node &n, const char *bufKey, const char *offKey, uint64_t size) {
    return BufferRef::local(buf(n.at(bufKey)), n.at(offKey).u64(), size);
  }

  /// The length of the lists `a` and `b` of `n`, which must be equal.
  static size_t sameCount(const Node &n, const char *a, const char *b) {
    size_t na = n.at(a).array(), nb = n.at(b).array();
    if (na != nb)
      n.at(b).fail("`" + std::string(a) + "` has " + std::to_string(na) + " entries but `" + b + "` has " + std::to_string(nb));
    return na;
  }

  /// signal, flush (`o_cids` of `o_buff`) and wait (an op that waits: `i_cids` of `i_buff`).
  void readSync(const Node &n, Op &op) const {
    bool in = opHas(op.type, optrait::Waits);
    ChannelType t = ctype(n);
    op.channelType = t;
    op.channelIds = channels(n.at(in ? "i_cids" : "o_cids"), key(n, in ? "i_buff" : "o_buff", t));
  }

  /// An op with one entry pair per peer (a side of its row has one entry per entry of the other):
  /// put, pws, pwsf, memory ppkt (local sources `srcs`, remote destinations `o_cids`; the old
  /// channel read from its own local buffer, o_buff.src) and get (remote sources `i_cids`, local
  /// destinations `dsts` in i_buff.src). channel_ids: a get's always, a put's over port channels
  /// only (our lowering, like the DSL, writes no others).
  void readPairs(const Node &n, Op &op) {
    const bool get = (opRow(op.type).src.first & oprole::LocMask) == oprole::R;
    ChannelType t = ctype(n);
    Key k = key(n, get ? "i_buff" : "o_buff", t);
    size_t count = get ? sameCount(n, "i_cids", "dsts") : sameCount(n, "srcs", "o_cids");
    uint64_t size = cnt(n);
    Node locals = n.at(get ? "dsts" : "srcs"), remotes = n.at(get ? "i_cids" : "o_cids");
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < count; ++i) {
      locals[i].object();
      if (get) {
        op.src.push_back(remote(remotes[i], k, size));
        op.dst.push_back(BufferRef::local(k.src, locals[i].at("off").u64(), size));
      } else {
        op.src.push_back(BufferRef::local(k.src, locals[i].at("off").u64(), size));
        op.dst.push_back(remote(remotes[i], k, size));
      }
      ids.push_back(channel(remotes[i], k));
    }
    if (!isPutFamily(op.type) || t == ChannelType::Port)
      op.channelIds = ids;
    op.channelType = t;
  }

  /// A put that relays one source to every peer (rppkt, and the old port `ppkt`): the old relay
  /// read one local scratch packet region per destination; today's relays one region to all.
  void readRelay(const Node &n, Op &op) {
    ChannelType t = ctype(n);
    Key k = key(n, "o_buff", t);
    size_t count = sameCount(n, "srcs", "o_cids");
    uint64_t size = cnt(n);
    Node srcs = n.at("srcs"), dsts = n.at("o_cids");
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < count; ++i) {
      srcs[i].object();
      uint64_t off = srcs[i].at("off").u64();
      if (i == 0)
        op.src.push_back(BufferRef::local(BufferType::Scratch, off, size));
      else if (off != op.src[0].index)
        srcs[i].at("off").fail("`" + std::string(opName(op.type)) +
                               "` relays one source to every destination today; this one has source offsets " +
                               std::to_string(op.src[0].index) + " and " + std::to_string(off));
      op.dst.push_back(remote(dsts[i], k, size));
      ids.push_back(channel(dsts[i], k));
    }
    if (t == ChannelType::Port)
      op.channelIds = ids;
    op.channelType = t;
  }

  /// A local copy (copy, cpkt, upkt): [a] -> [d].
  static void readCopy(const Node &n, Op &op) {
    uint64_t size = cnt(n);
    op.src.push_back(localAt(n, "srcbuff", "srcoff", size));
    op.dst.push_back(localAt(n, "dstbuff", "dstoff", size));
  }

  /// A local reduce (re, res, repkt, respkt, rre, rres) by its form: d = a + sources..., the
  /// sources local (`srcs`: the plain reductions read every entry from srcs[0].buff, the old
  /// executor's inputBufferType; the packet ones from scratch) or, for a reduce of remote
  /// sources, the peers' (`i_cids`); a sending form also writes d to `o_cids`.
  void readReduce(const Node &n, Op &op) {
    const ReduceForm form = reduceForm(op.type);
    uint64_t size = cnt(n);
    ChannelType t = ChannelType::None;
    if (form.remote)
      t = ctype(n);
    op.src.push_back(localAt(n, "srcbuff", "srcoff", size));
    if (form.remote) {
      Key in = key(n, "i_buff", t);
      Node ins = n.at("i_cids");
      size_t nin = ins.array();
      for (size_t i = 0; i < nin; ++i)
        op.src.push_back(remote(ins[i], in, size));
    } else if (auto srcs = n.find("srcs")) {
      size_t count = srcs->array();
      for (size_t i = 0; i < count; ++i) {
        Node s = (*srcs)[i];
        s.object();
        BufferType b = form.packet ? BufferType::Scratch : buf((*srcs)[0].at("buff"));
        op.src.push_back(BufferRef::local(b, s.at("off").u64(), size));
      }
    }
    op.dst.push_back(localAt(n, "dstbuff", "dstoff", size));
    if (form.send) {
      if (!form.remote)
        t = ctype(n);
      Key out = key(n, "o_buff", t);
      Node outs = n.at("o_cids");
      size_t nout = outs.array();
      for (size_t i = 0; i < nout; ++i)
        op.dst.push_back(remote(outs[i], out, size));
    }
    if (form.remote || form.send)
      op.channelType = t;
    op.reduceOp = ReduceOp::Sum;
  }

  /// The switch reduce-store (glres, old name `name`): one nvls channel of key (buff, buff, nvls)
  /// on each side.
  void readSwitchReduce(const Node &n, Op &op, const std::string &name) const {
    uint64_t size = cnt(n);
    ChannelType t = ctype(n);
    if (t != ChannelType::Switch)
      n.at("ctype").fail("`" + name + "` runs over an `nvls` channel, got `" + n.at("ctype").str() + "`");
    auto sw = [&](const char *cids, const char *bufKey, const char *offKey) {
      Node list = n.at(cids);
      if (list.array() != 1)
        list.fail("`" + name + "` names exactly one nvls channel here, got " + std::to_string(list.array()));
      BufferType b = buf(n.at(bufKey));
      return BufferRef::switchRef(channel(list[0], Key{b, b, ChannelType::Switch}), n.at(offKey).u64(), size);
    };
    op.src.push_back(sw("i_cids", "srcbuff", "srcoff"));
    op.dst.push_back(sw("o_cids", "dstbuff", "dstoff"));
    op.channelType = t;
    op.reduceOp = ReduceOp::Sum;
  }

  /// A data op by its row's traits and entry roles; false when no reader above fits it.
  bool readData(const Node &n, Op &op, const std::string &name) {
    const OpType t = op.type;
    const OpRow row = opRow(t);
    if (isSwitchOp(t)) {
      if (!opHas(t, optrait::Reduce) || (row.dst.first & oprole::LocMask) != oprole::S)
        return false;
      readSwitchReduce(n, op, name);
    } else if (isReduceFamily(t)) {
      if (reduceForm(t).copy)
        return false; // the old format has no reduce that copies packets
      readReduce(n, op);
    } else if (row.src.min == oprole::PerOther || row.dst.min == oprole::PerOther) {
      readPairs(n, op);
    } else if (isPutFamily(t)) {
      readRelay(n, op);
    } else if ((row.src.first & oprole::LocMask) == oprole::L && (row.dst.first & oprole::LocMask) == oprole::L) {
      readCopy(n, op);
    } else {
      return false;
    }
    return true;
  }

  Op read(const Node &n) {
    n.object();
    Node nameNode = n.at("name");
    const std::string &name = nameNode.str();
    auto legacy = legacyOp(name);
    if (!legacy)
      nameNode.fail("unknown operation `" + name + "` of the older plan format (expected one of " + legacyOpList() + ")");
    Op op;
    op.type = legacy->today;
    // A port `ppkt` of the old executor copies packets that are already in local scratch (it sends
    // 2*cnt bytes from scratch at twice the source offset): today that is a port `rppkt` (the
    // row's OverPort), while a port `ppkt` packetises plain data.
    if (legacy->overPort != legacy->today && legacyChannelType(n.at("ctype")) == ChannelType::Port)
      op.type = legacy->overPort;
    bool converted = true;
    switch (opShape(op.type)) {
    case OpShape::Nop:
      if (auto deps = n.find("deps"))
        deps->array(); // the old executor ignores them; the nop itself is the sync
      break;
    case OpShape::Barrier:
      op.barrierId = n.at("barrier_id").u32();
      op.numThreadblocks = n.at("nthread_blocks").u32();
      break;
    case OpShape::Sync:
      readSync(n, op);
      break;
    case OpShape::Data:
      converted = readData(n, op, name);
      break;
    case OpShape::Sem:
    case OpShape::Pipeline:
    case OpShape::GroupLoadReduce:
      converted = false; // the old format has none
      break;
    }
    if (!converted)
      nameNode.fail("internal: no conversion for `" + name + "`");
    return op;
  }
};

Gpu readLegacyGpu(const Node &n) {
  n.object();
  Gpu out;
  out.id = n.at("id").u32();
  out.inputChunks = n.at("inputChunks").u64();
  out.outputChunks = n.at("outputChunks").u64();
  out.scratchChunks = n.at("scratchChunks").u64();
  if (auto groups = n.find("chunkGroups")) {
    uint64_t g = groups->u64();
    uint64_t chunks = out.inputChunks ? out.inputChunks : out.outputChunks;
    if (g == 0)
      groups->fail("`chunkGroups` must be at least 1");
    if (chunks % g != 0)
      groups->fail("`chunkGroups` " + std::to_string(g) + " does not divide the " + std::to_string(chunks) +
                   " chunks that offsets are counted in");
  }

  GpuTables gpu;
  Node chans = n.at("channels");
  size_t nc = chans.array();
  for (size_t i = 0; i < nc; ++i) {
    Node c = chans[i];
    c.object();
    ChannelType t = legacyChannelType(c.at("type"));
    if (t == ChannelType::Switch) {
      BufferType b = c.at("buff").bufferType();
      Node groups = c.at("rankGroups");
      size_t ng = groups.array();
      for (size_t g = 0; g < ng; ++g) {
        Node gn = groups[g];
        gn.object();
        gn.at("size").u64(); // the old format's buffer size in chunks; today's field counts ranks
        ChannelDecl d;
        d.channelType = ChannelType::Switch;
        d.bufferType = b;
        RankGroup rg;
        rg.ranks = gn.at("ranks").u32List();
        rg.size = uint32_t(rg.ranks.size());
        d.rankGroups.push_back(std::move(rg));
        gpu.channelMap[Key{b, b, t}].push_back(uint32_t(gpu.switches.size()));
        gpu.switches.push_back(std::move(d));
      }
      continue;
    }
    if (t == ChannelType::None)
      continue;
    Key k{c.at("srcbuff").bufferType(), c.at("dstbuff").bufferType(), t};
    if (std::find(gpu.typeOrder.begin(), gpu.typeOrder.end(), t) == gpu.typeOrder.end())
      gpu.typeOrder.push_back(t);
    for (uint32_t peer : c.at("connectedTo").u32List()) {
      gpu.channelMap[k].push_back(uint32_t(gpu.peers[slot(t)].size()));
      gpu.peers[slot(t)].push_back(peer);
    }
  }

  Node tbs = n.at("threadblocks");
  size_t ntb = tbs.array();
  for (size_t i = 0; i < ntb; ++i) {
    Node tn = tbs[i];
    tn.object();
    Threadblock tb;
    tb.id = tn.at("id").u32();
    TbTables tables;
    Node tchans = tn.at("channels");
    size_t ntc = tchans.array();
    for (size_t c = 0; c < ntc; ++c) {
      Node cn = tchans[c];
      cn.object();
      ChannelType t = legacyChannelType(cn.at("ctype"));
      if (t == ChannelType::None)
        continue;
      Key k{cn.at("src").bufferType(), cn.at("dst").bufferType(), t};
      auto &gpuIds = gpu.channelMap[k];
      Node cids = cn.at("cids");
      size_t nids = cids.array();
      if (std::find(tables.typeOrder.begin(), tables.typeOrder.end(), t) == tables.typeOrder.end() && nids > 0)
        tables.typeOrder.push_back(t);
      for (size_t j = 0; j < nids; ++j) {
        uint32_t cid = cids[j].u32();
        if (cid >= gpuIds.size())
          cids[j].fail("channel " + std::to_string(cid) + " of key " + k.str() + " is not declared: gpu " +
                       std::to_string(out.id) + " declares " + std::to_string(gpuIds.size()) + " such channel(s)");
        auto &local = tables.local[slot(t)];
        tables.channelIndexes[k].push_back(uint32_t(local.size()));
        local.push_back(gpuIds[cid]);
      }
    }
    OpReader reader{gpu, tables};
    Node ops = tn.at("ops");
    size_t nops = ops.array();
    tb.ops.reserve(nops);
    for (size_t o = 0; o < nops; ++o)
      tb.ops.push_back(reader.read(ops[o]));
    for (ChannelType t : tables.typeOrder)
      tb.channels.push_back(TbChannels{t, tables.local[slot(t)]});
    tb.remoteBufferRefs = std::move(tables.refs);
    out.threadblocks.push_back(std::move(tb));
  }

  for (ChannelType t : gpu.typeOrder) {
    ChannelDecl d;
    d.channelType = t;
    d.connectedTo = gpu.peers[slot(t)];
    out.channels.push_back(std::move(d));
  }
  for (auto &s : gpu.switches)
    out.channels.push_back(std::move(s));
  out.remoteBuffers = std::move(gpu.remoteBuffers);
  return out;
}

} // namespace

bool isLegacyPlan(const nlohmann::json &json) {
  if (!json.is_object())
    return false;
  auto gpus = json.find("gpus");
  if (gpus == json.end() || !gpus->is_array() || gpus->empty() || !(*gpus)[0].is_object())
    return false;
  const auto &g = (*gpus)[0];
  return !g.contains("input_chunks") && (g.contains("inputChunks") || g.contains("chunkGroups"));
}

bool isLegacyPlanFile(const std::string &filename) {
  std::ifstream in(filename, std::ios::binary);
  if (!in)
    return false;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return !j.is_discarded() && isLegacyPlan(j);
}

Plan fromLegacyJson(const nlohmann::json &json) {
  Node root{json, ""};
  root.object();
  Plan plan;
  readPlanHeader(root, plan);
  Node gpus = root.at("gpus");
  size_t ng = gpus.array();
  plan.gpus.reserve(ng);
  for (size_t i = 0; i < ng; ++i)
    plan.gpus.push_back(readLegacyGpu(gpus[i]));
  return plan;
}

} // namespace msccl::plan
