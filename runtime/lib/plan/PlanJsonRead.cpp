//===- PlanJsonRead.cpp - JSON reader of execution plans ---------------------------------===//
//
// The reader walks an nlohmann::json value, carrying the JSON path of every value it looks at
// so that each error names it (PlanJson.h; the writer is PlanJson.cpp).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/plan/LegacyPlan.h"

#include "JsonNode.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

namespace msccl::plan {

//===------------------------------------------------------------------------------------===//
// Reader
//===------------------------------------------------------------------------------------===//
namespace {

using namespace json_read;

BufferRef readBufferRef(const Node &n) {
  n.object();
  BufferRef b;
  if (auto id = n.find("buffer_id")) {
    b.loc = BufferRef::Loc::Remote;
    b.id = id->u32();
  } else if (auto sw = n.find("switch_channel_id")) {
    b.loc = BufferRef::Loc::Switch;
    b.id = sw->u32();
  } else {
    b.loc = BufferRef::Loc::Local;
    if (auto t = n.find("type"))
      b.type = t->bufferType();
    if (auto r = n.find("rank"))
      b.rank = r->u32();
  }
  b.index = n.at("index").u64();
  b.size = n.at("size").u64();
  if (auto e = n.find("index_expr"))
    b.indexExpr = e->str();
  if (auto e = n.find("size_expr"))
    b.sizeExpr = e->str();
  return b;
}

std::vector<BufferRef> readBufferRefs(const Node &n) {
  size_t count = n.array();
  std::vector<BufferRef> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i)
    out.push_back(readBufferRef(n[i]));
  return out;
}

Op readOp(const Node &n, bool insidePipeline) {
  n.object();
  Op op;
  const std::string &name = n.at("name").str();
  auto type = parseOpName(name);
  if (!type)
    n.at("name").fail("unknown operation `" + name + "`");
  op.type = *type;
  OpShape shape = opShape(op.type);

  if (auto ids = n.find("channel_ids"))
    op.channelIds = ids->u32List();
  if (auto ct = n.find("channel_type"))
    op.channelType = ct->channelType();
  if (auto ro = n.find("reduce_op")) {
    auto r = parseReduceOp(ro->str());
    if (!r)
      ro->fail("unknown reduce op `" + ro->str() + "` (expected `sum`, `min` or `max`)");
    op.reduceOp = *r;
  }
  if (auto tbg = n.find("tbg_info")) {
    tbg->object();
    op.tbg = TbgInfo{tbg->at("tb_id").u32(), tbg->at("tbg_size").u32()};
    if (op.tbg->tbgSize == 0)
      tbg->at("tbg_size").fail("a threadblock group has at least one member");
    if (op.tbg->tbId >= op.tbg->tbgSize)
      tbg->at("tb_id").fail("tb_id " + std::to_string(op.tbg->tbId) + " is not below tbg_size " +
                            std::to_string(op.tbg->tbgSize));
  }

  switch (shape) {
  case OpShape::Nop:
    break;
  case OpShape::Sync:
    if (!op.channelIds)
      n.fail("`" + name + "` needs `channel_ids`");
    if (!op.channelType)
      n.fail("`" + name + "` needs `channel_type`");
    break;
  case OpShape::Sem:
    op.semaphoreIds = n.at("semaphore_ids").u32List();
    break;
  case OpShape::Barrier:
    op.barrierId = n.at("barrier_id").u32();
    op.numThreadblocks = n.at("num_threadblocks").u32();
    break;
  case OpShape::Data:
    if (auto s = n.find("src_buff"))
      op.src = readBufferRefs(*s);
    if (auto d = n.find("dst_buff"))
      op.dst = readBufferRefs(*d);
    break;
  case OpShape::Pipeline: {
    if (insidePipeline)
      n.fail("nested pipelines are not supported");
    Node ic = n.at("iter_context");
    ic.object();
    op.iterContext.unitSize = ic.at("unit_size").u64();
    op.iterContext.numChunks = ic.at("num_chunks").u64();
    if (op.iterContext.unitSize == 0)
      ic.at("unit_size").fail("a pipeline unit size must be positive");
    Node ops = n.at("ops");
    size_t count = ops.array();
    op.ops.reserve(count);
    for (size_t i = 0; i < count; ++i)
      op.ops.push_back(readOp(ops[i], true));
    break;
  }
  case OpShape::GroupLoadReduce:
    op.glreBufferType = n.at("buffer_type").bufferType();
    op.glreBufferOffset = n.at("buffer_offset").u64();
    op.glreSize = n.at("size").u64();
    op.glreDstChunk = readBufferRef(n.at("dst_chunk"));
    break;
  }
  return op;
}

Threadblock readThreadblock(const Node &n) {
  n.object();
  Threadblock tb;
  tb.id = n.at("id").u32();
  Node ops = n.at("ops");
  size_t count = ops.array();
  tb.ops.reserve(count);
  for (size_t i = 0; i < count; ++i)
    tb.ops.push_back(readOp(ops[i], false));
  Node chans = n.at("channels");
  size_t nc = chans.array();
  for (size_t i = 0; i < nc; ++i) {
    Node c = chans[i];
    c.object();
    TbChannels tc;
    tc.channelType = c.at("channel_type").channelType();
    tc.channelIds = c.at("channel_ids").u32List();
    if (auto buff = c.find("buff"))
      buff->bufferType(); // validated and ignored, like the reference
    tb.channels.push_back(std::move(tc));
  }
  if (auto refs = n.find("remote_buffer_refs")) {
    size_t nr = refs->array();
    for (size_t i = 0; i < nr; ++i) {
      Node r = (*refs)[i];
      r.object();
      RemoteBufferRefs rr;
      rr.accessChannelType = r.at("access_channel_type").channelType();
      rr.remoteBufferIds = r.at("remote_buffer_ids").u32List();
      tb.remoteBufferRefs.push_back(std::move(rr));
    }
  }
  return tb;
}

Gpu readGpu(const Node &n) {
  n.object();
  Gpu gpu;
  gpu.id = n.at("id").u32();
  gpu.inputChunks = n.at("input_chunks").u64();
  gpu.outputChunks = n.at("output_chunks").u64();
  gpu.scratchChunks = n.at("scratch_chunks").u64();

  Node tbs = n.at("threadblocks");
  size_t ntb = tbs.array();
  gpu.threadblocks.reserve(ntb);
  for (size_t i = 0; i < ntb; ++i)
    gpu.threadblocks.push_back(readThreadblock(tbs[i]));

  Node chans = n.at("channels");
  size_t nc = chans.array();
  for (size_t i = 0; i < nc; ++i) {
    Node c = chans[i];
    c.object();
    ChannelDecl d;
    d.channelType = c.at("channel_type").channelType();
    if (d.channelType == ChannelType::Switch) {
      d.bufferType = c.at("buffer_type").bufferType();
      Node groups = c.at("rank_groups");
      size_t ng = groups.array();
      for (size_t g = 0; g < ng; ++g) {
        Node gn = groups[g];
        gn.object();
        RankGroup rg;
        rg.size = gn.at("size").u32();
        rg.ranks = gn.at("ranks").u32List();
        d.rankGroups.push_back(std::move(rg));
      }
    } else if (d.channelType != ChannelType::None) {
      d.connectedTo = c.at("connected_to").u32List();
    }
    gpu.channels.push_back(std::move(d));
  }

  Node rbs = n.at("remote_buffers");
  size_t nrb = rbs.array();
  for (size_t i = 0; i < nrb; ++i) {
    Node r = rbs[i];
    r.object();
    RemoteBuffer rb;
    rb.rank = r.at("rank").u32();
    rb.type = r.at("type").bufferType();
    Node access = r.at("access_channel_types");
    size_t na = access.array();
    for (size_t a = 0; a < na; ++a)
      rb.accessChannelTypes.push_back(access[a].channelType());
    gpu.remoteBuffers.push_back(std::move(rb));
  }

  if (auto sems = n.find("semaphores")) {
    size_t ns = sems->array();
    for (size_t i = 0; i < ns; ++i) {
      Node s = (*sems)[i];
      s.object();
      gpu.semaphores.push_back(Semaphore{s.at("init_value").i32()});
    }
  }
  return gpu;
}

} // namespace

void json_read::readPlanHeader(const Node &root, Plan &plan) {
  Node name = root.at("name");
  if (!name.v.is_null())
    plan.name = name.str();
  plan.collective = root.at("collective").str();
  plan.protocol = root.at("protocol").str();
  plan.inplace = root.at("inplace").boolean();
  if (auto n = root.find("num_threads_per_block"))
    plan.numThreadsPerBlock = n->u32();
  if (auto n = root.find("use_double_scratch_buffer"))
    plan.useDoubleScratchBuffer = n->boolean();
  if (auto n = root.find("buffer_alignment"))
    plan.bufferAlignment = n->u64();
  if (auto n = root.find("min_message_size"))
    plan.minMessageSize = n->u64();
  if (auto n = root.find("max_message_size"))
    plan.maxMessageSize = n->u64();
}

Plan fromJson(const nlohmann::json &json) {
  if (isLegacyPlan(json))
    return fromLegacyJson(json); // MSCCLPPLang's older format, converted (LegacyPlan.h)
  Node root{json, ""};
  root.object();
  Plan plan;
  readPlanHeader(root, plan);
  if (auto n = root.find("reuse_resources"))
    plan.reuseResources = n->boolean();
  if (auto n = root.find("variable_sizes")) {
    n->object();
    VariableSizes vs;
    vs.counts = n->at("counts").str();
    if (vs.counts != "matrix")
      n->at("counts").fail("unknown count form `" + vs.counts + "` (expected `matrix`)");
    if (auto b = n->find("block_bound"))
      vs.blockBound = b->u64();
    plan.variableSizes = vs;
  }
  Node gpus = root.at("gpus");
  size_t ng = gpus.array();
  plan.gpus.reserve(ng);
  for (size_t i = 0; i < ng; ++i)
    plan.gpus.push_back(readGpu(gpus[i]));
  return plan;
}

namespace {

/// A SAX pass that only tracks the JSON path of the value being read, to name where the text
/// stops being a valid plan document (a syntax error, a number that overflows a double).
class PathTracker : public nlohmann::json_sax<json> {
public:
  std::string path() const {
    std::string p;
    for (const Frame &f : stack_) {
      if (f.array)
        p += "[" + std::to_string(f.index) + "]";
      else if (f.hasKey)
        p += (p.empty() ? "" : ".") + f.key;
    }
    return p;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t &) override { return value(); }
  bool string(string_t &) override { return value(); }
  bool binary(binary_t &) override { return value(); }
  bool start_object(std::size_t) override {
    stack_.push_back({false, 0, false, {}});
    return true;
  }
  bool key(string_t &k) override {
    stack_.back().key = k;
    stack_.back().hasKey = true;
    return true;
  }
  bool end_object() override { return end(); }
  bool start_array(std::size_t) override {
    stack_.push_back({true, 0, false, {}});
    return true;
  }
  bool end_array() override { return end(); }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) override { return false; }

private:
  struct Frame {
    bool array;
    size_t index;
    bool hasKey;
    std::string key;
  };
  bool value() {
    if (!stack_.empty()) {
      if (stack_.back().array)
        ++stack_.back().index;
      else
        stack_.back().hasKey = false; // between members: the path is the object's
    }
    return true;
  }
  bool end() {
    stack_.pop_back();
    return value();
  }
  std::vector<Frame> stack_;
};

} // namespace

Plan parsePlan(const std::string &text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception &e) {
    // Any exception of the parser (parse_error, out_of_range for a number that overflows a
    // double, ...): a second pass finds the path of the value it happened in.
    PathTracker tracker;
    (void)json::sax_parse(text, &tracker);
    throw PlanError(tracker.path(), "invalid JSON: " + jsonMessage(e));
  }
  return fromJson(j);
}

Plan readPlanFile(const std::string &filename) {
  std::ifstream in(filename, std::ios::binary);
  if (!in)
    throw PlanError("", "cannot open plan file '" + filename + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parsePlan(ss.str());
}

} // namespace msccl::plan
