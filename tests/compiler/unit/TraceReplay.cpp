//===- TraceReplay.cpp - see TraceReplay.h ---------------------------------------------===//
#include "TraceReplay.h"

#include <fstream>
#include <map>
#include <stdexcept>

namespace msccl::test {

using nlohmann::json;
using namespace msccl::ir;

json readJsonFile(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

namespace {
BufferType bufferType(const std::string &s) {
  if (s == "i" || s == "BufferType.input") return BufferType::Input;
  if (s == "o" || s == "BufferType.output") return BufferType::Output;
  if (s == "s" || s == "BufferType.scratch") return BufferType::Scratch;
  throw std::runtime_error("bad buffer type " + s);
}
std::string enumName(const json &v) { return v.at("enum").get<std::string>(); }
SyncType syncType(const json &v) {
  auto s = enumName(v);
  if (s == "SyncType.none") return SyncType::None;
  if (s == "SyncType.before") return SyncType::Before;
  if (s == "SyncType.after") return SyncType::After;
  return SyncType::Both;
}
ReduceOperationType reduceOp(const json &v) {
  auto s = enumName(v);
  if (s == "ReduceOperationType.min") return ReduceOperationType::Min;
  if (s == "ReduceOperationType.max") return ReduceOperationType::Max;
  return ReduceOperationType::Sum;
}
Chunk chunk(const json &v) {
  const json &c = v.at("chunk");
  return Chunk{c[0].get<int64_t>(), bufferType(c[1].get<std::string>()), c[2].get<int64_t>(), c[3].get<int64_t>()};
}
std::optional<Chunk> optChunk(const json &v) {
  if (v.is_null()) return std::nullopt;
  return chunk(v);
}
std::vector<Chunk> chunks(const json &v) {
  std::vector<Chunk> out;
  for (auto &c : v) out.push_back(chunk(c));
  return out;
}
std::optional<int64_t> optInt(const json &v) {
  if (v.is_null()) return std::nullopt;
  return v.get<int64_t>();
}
std::vector<int64_t> ints(const json &v) { return v.get<std::vector<int64_t>>(); }

Collective collective(const json &c) {
  std::string k = c.at("collective");
  int64_t n = c.at("num_ranks"), cf = c.at("chunk_factor");
  bool inplace = c.at("inplace");
  using msccl::runtime::CollectiveKind;
  if (k == "AllReduce") return Collective::make(CollectiveKind::AllReduce, n, cf, inplace);
  if (k == "AllGather") return Collective::make(CollectiveKind::AllGather, n, cf, inplace);
  if (k == "ReduceScatter") return Collective::make(CollectiveKind::ReduceScatter, n, cf, inplace);
  if (k == "AllToAll") return Collective::make(CollectiveKind::AllToAll, n, cf, inplace);
  if (k == "SendRecv") return Collective::make(CollectiveKind::SendRecv, n, cf, inplace);
  if (k == "TestCollective") return Collective::testCollective(n, c.at("input_size"), c.at("output_size"));
  throw std::runtime_error("unknown collective " + k);
}
} // namespace

std::unique_ptr<Program> replayTrace(const json &trace) {
  std::unique_ptr<Program> prog;
  std::map<int64_t, MemoryChannel> mem;
  std::map<int64_t, PortChannel> port;
  std::map<int64_t, SwitchChannel> sw;
  std::map<int64_t, Semaphore> sem;
  std::map<int64_t, ThreadBlockGroup> tbg;
  std::map<int64_t, std::pair<int64_t, int64_t>> loops;
  for (const json &c : trace.at("calls")) {
    const std::string call = c.at("call");
    const json &a = c.at("args");
    auto group = [&](const json &v) -> const ThreadBlockGroup * { return v.is_null() ? nullptr : &tbg.at(v.at("tbg").get<int64_t>()); };
    if (call == "CollectiveProgram") {
      ProgramOptions o;
      if (!a.at("name").is_null()) o.name = a.at("name").get<std::string>();
      o.collective = collective(a.at("collective"));
      o.numRanks = a.at("num_ranks");
      o.instances = a.at("instances");
      o.protocol = a.at("protocol");
      o.instrFusion = a.at("instr_fusion");
      o.autoSync = a.at("auto_sync");
      o.replicationPolicy = enumName(a.at("replication_policy")) == "ReplicationPolicy.none" ? ReplicationPolicy::None : ReplicationPolicy::Interleaved;
      o.reuseResources = a.at("reuse_resources");
      o.numThreadsPerBlock = a.at("num_threads_per_block");
      o.useDoubleScratchBuffer = a.at("use_double_scratch_buffer");
      o.bufferAlignment = a.at("buffer_alignment");
      o.minMessageSize = a.at("min_message_size").get<uint64_t>();
      o.maxMessageSize = a.at("max_message_size").get<uint64_t>();
      prog = std::make_unique<Program>(std::move(o));
      continue;
    }
    if (!prog) throw std::runtime_error("trace call before CollectiveProgram: " + call);
    int64_t self = c.contains("self") && !c.at("self").is_null() ? c.at("self").get<int64_t>() : -1;
    if (call == "Buffer") prog->scratchBuffer(a.at("rank"), a.at("size"));
    else if (call == "MemoryChannel") mem.emplace(c.at("id").get<int64_t>(), prog->memoryChannel(a.at("dst_rank"), a.at("src_rank")));
    else if (call == "PortChannel") port.emplace(c.at("id").get<int64_t>(), prog->portChannel(a.at("dst_rank"), a.at("src_rank")));
    else if (call == "SwitchChannel")
      sw.emplace(c.at("id").get<int64_t>(), prog->switchChannel(ints(a.at("rank_list")), bufferType(enumName(a.at("buffer_type")))));
    else if (call == "Semaphore") sem.emplace(c.at("id").get<int64_t>(), prog->semaphore(a.at("rank"), a.at("initial_value")));
    else if (call == "ThreadBlockGroup") tbg.emplace(c.at("id").get<int64_t>(), ThreadBlockGroup(ints(a.at("tb_list"))));
    else if (call == "LoopIterationContext") loops[c.at("id").get<int64_t>()] = {a.at("unit"), a.at("num_chunks")};
    else if (call == "LoopIterationContext.__enter__") prog->enterPipeline(loops.at(self).first, loops.at(self).second);
    else if (call == "LoopIterationContext.__exit__") prog->exitPipeline();
    else if (call.rfind("Rank.", 0) == 0) {
      Rank r = prog->rank(c.at("rank"));
      if (call == "Rank.copy") r.copy(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "Rank.copy_packets") r.copyPackets(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "Rank.unpack_packets") r.unpackPackets(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "Rank.reduce")
        r.reduce(chunk(a.at("src_chunk")), chunks(a.at("other_chunks")), optInt(a.at("tb")), group(a.at("tb_group")), optChunk(a.at("dst_chunk")),
                 reduceOp(a.at("reduce_op")), a.at("packet"));
      else if (call == "Rank.barrier") r.barrier(ints(a.at("tb_list")));
      else throw std::runtime_error("unknown call " + call);
    } else if (call.rfind("MemoryChannel.", 0) == 0) {
      const MemoryChannel &ch = mem.at(self);
      if (call == "MemoryChannel.signal") ch.signal(a.at("tb"), syncType(a.at("data_sync")), a.at("relaxed"));
      else if (call == "MemoryChannel.wait") ch.wait(a.at("tb"), syncType(a.at("data_sync")), a.at("relaxed"));
      else if (call == "MemoryChannel.get") ch.get(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "MemoryChannel.put") ch.put(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "MemoryChannel.put_packets") ch.putPackets(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "MemoryChannel.read_put_packets")
        ch.readPutPackets(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else if (call == "MemoryChannel.reduce")
        ch.reduce(chunk(a.at("local_src_chunk")), chunks(a.at("remote_src_chunks")), optInt(a.at("tb")), group(a.at("tb_group")),
                  optChunk(a.at("local_dst_chunk")), reduceOp(a.at("reduce_op")));
      else throw std::runtime_error("unknown call " + call);
    } else if (call.rfind("PortChannel.", 0) == 0) {
      const PortChannel &ch = port.at(self);
      if (call == "PortChannel.signal") ch.signal(a.at("tb"), syncType(a.at("data_sync")));
      else if (call == "PortChannel.wait") ch.wait(a.at("tb"), syncType(a.at("data_sync")));
      else if (call == "PortChannel.flush") ch.flush(a.at("tb"), syncType(a.at("data_sync")));
      else if (call == "PortChannel.put") ch.put(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), a.at("tb"));
      else if (call == "PortChannel.put_with_signal") ch.putWithSignal(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), a.at("tb"));
      else if (call == "PortChannel.put_with_signal_and_flush") ch.putWithSignalAndFlush(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), a.at("tb"));
      else if (call == "PortChannel.put_packets") ch.putPackets(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), a.at("tb"));
      else if (call == "PortChannel.read_put_packets")
        ch.readPutPackets(chunk(a.at("dst_chunk")), chunk(a.at("src_chunk")), optInt(a.at("tb")), group(a.at("tb_group")));
      else throw std::runtime_error("unknown call " + call);
    } else if (call.rfind("SwitchChannel.", 0) == 0) {
      auto view = sw.at(self).atRank(a.at("rank"));
      if (call == "SwitchChannel.reduce") view.reduce(a.at("buffer_offset"), a.at("size"), chunk(a.at("dst_chunk")), a.at("tb"), reduceOp(a.at("reduce_op")));
      else if (call == "SwitchChannel.broadcast") view.broadcast(chunk(a.at("src_chunk")), a.at("buffer_offset"), a.at("size"), a.at("tb"));
      else if (call == "SwitchChannel.broadcast_packets") view.broadcastPackets(chunk(a.at("src_chunk")), a.at("buffer_offset"), a.at("size"), a.at("tb"));
      else throw std::runtime_error("unknown call " + call);
    } else if (call == "Semaphore.acquire") sem.at(self).acquire(a.at("tb"), syncType(a.at("data_sync")));
    else if (call == "Semaphore.release") sem.at(self).release(a.at("tb"), syncType(a.at("data_sync")));
    else throw std::runtime_error("unknown call " + call);
  }
  if (!prog) throw std::runtime_error("trace has no CollectiveProgram");
  return prog;
}

} // namespace msccl::test
