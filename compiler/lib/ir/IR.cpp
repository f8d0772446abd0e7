//===- IR.cpp - Registration helpers and the text printer of the IR ---------------------===//
#include "msccl/ir/IR.h"
#include "msccl/plan/OpTable.h"

#include <algorithm>
#include <ostream>
#include <sstream>

namespace msccl::ir {

std::string_view opKindName(OpKind k) { return plan::opName(k); }

std::string_view syncTypeName(SyncType s) {
  switch (s) {
  case SyncType::None: return "none";
  case SyncType::Before: return "before";
  case SyncType::After: return "after";
  case SyncType::Both: return "both";
  }
  return "none";
}

namespace {
unsigned channelSlot(ChannelType t) {
  switch (t) {
  case ChannelType::Memory: return 0;
  case ChannelType::Port: return 1;
  default: return 2;
  }
}
} // namespace

// threadblock.py add_channel.
uint32_t ThreadBlockIR::addChannel(ChannelType type, uint32_t gpuId) {
  auto [found, inserted] = channelLocal[channelSlot(type)].try_emplace(gpuId, 0);
  if (!inserted) return found->second;
  TbChannelList *list = nullptr;
  for (auto &c : channels)
    if (c.type == type) list = &c;
  if (!list) {
    channels.push_back({type, {}});
    list = &channels.back();
  }
  list->ids.push_back(gpuId);
  found->second = uint32_t(list->ids.size() - 1);
  return found->second;
}

// threadblock.py add_remote_buffer.
uint32_t ThreadBlockIR::addRemoteBuffer(ChannelType access, uint32_t gpuId) {
  auto [found, inserted] = remoteLocal[channelSlot(access) & 1].try_emplace(gpuId, 0);
  if (!inserted) return found->second;
  TbRemoteBufferList *list = nullptr;
  for (auto &r : remoteBuffers)
    if (r.type == access) list = &r;
  if (!list) {
    remoteBuffers.push_back({access, {}});
    list = &remoteBuffers.back();
  }
  list->ids.push_back(gpuId);
  found->second = uint32_t(list->ids.size() - 1);
  return found->second;
}

ThreadBlockIR &GpuIR::tb(uint32_t t) {
  while (threadblocks.size() <= t) {
    threadblocks.emplace_back();
    threadblocks.back().id = uint32_t(threadblocks.size() - 1);
  }
  return threadblocks[t];
}

// gpu.py add_remote_buffer (table keyed by (remote rank, kind)).
uint32_t GpuIR::addRemoteBuffer(int64_t rank, BufferType type, ChannelType access) {
  size_t key = size_t(rank) * 3 + size_t(type);
  if (remoteLookup.size() <= key) remoteLookup.resize(key + 1, 0);
  if (!remoteLookup[key]) {
    remoteBuffers.push_back({rank, type, {}});
    remoteLookup[key] = int32_t(remoteBuffers.size());
  }
  uint32_t id = uint32_t(remoteLookup[key] - 1);
  auto &types = remoteBuffers[id].accessChannelTypes;
  bool seen = false;
  for (auto t : types) seen |= t == access;
  if (!seen) types.push_back(access);
  return id;
}

// --- SourceTable: the compact log of op locations --------------------------------------

namespace {
constexpr uint32_t kCheckpoint = 16; // records 1, 17, 33, ... are written in full

void putU(std::vector<uint8_t> &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}
template <class Next> uint64_t getU(Next &&next) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    uint8_t b = next();
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}
uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t unzigzag(uint64_t z) { return int64_t(z >> 1) ^ -int64_t(z & 1); }
} // namespace

SourceTable &SourceTable::operator=(const SourceTable &o) {
  if (this == &o) return *this;
  sites_ = o.sites_;
  texts_ = o.texts_;
  blocks_.clear();
  for (auto &b : o.blocks_) {
    blocks_.push_back(std::make_unique<uint8_t[]>(kBlock));
    std::copy(b.get(), b.get() + kBlock, blocks_.back().get());
  }
  size_ = o.size_;
  index_ = o.index_;
  count_ = o.count_;
  lastLoc_ = o.lastLoc_;
  stack_ = o.stack_;
  return *this;
}

uint32_t SourceTable::addSite(SourceContext::Kind kind, llvm::SMLoc loc, std::string name) {
  sites_.push_back(Site{kind, loc, std::move(name)});
  return uint32_t(sites_.size() - 1);
}

uint32_t SourceTable::add(llvm::SMLoc loc, size_t keep, const std::vector<NewFrame> &frames) {
  const uint32_t id = ++count_;
  if (keep > stack_.size()) keep = stack_.size();
  stack_.resize(keep);
  size_t firstNew = keep;
  for (auto &f : frames) {
    uint64_t v;
    if (f.text) {
      texts_.push_back(*f.text);
      v = (uint64_t(texts_.size() - 1) << 1) | 1;
    } else {
      v = zigzag(f.value) << 1;
    }
    stack_.push_back({f.site, v});
  }
  const uintptr_t addr = uintptr_t(loc.getPointer());
  if ((id - 1) % kCheckpoint == 0) { // in full: absolute address, no shared frames
    index_.push_back(size_);
    lastLoc_ = 0;
    firstNew = 0;
  }
  std::vector<uint8_t> &r = record_;
  r.clear();
  putU(r, zigzag(int64_t(addr - lastLoc_)));
  lastLoc_ = addr;
  const size_t n = stack_.size() - firstNew; // header: shared frames * 8 + min(new frames, 7)
  putU(r, firstNew * 8 + (n < 7 ? n : 7));
  if (n >= 7) putU(r, n - 7);
  for (size_t i = firstNew; i < stack_.size(); ++i) {
    putU(r, stack_[i].first);
    putU(r, stack_[i].second);
  }
  for (uint8_t b : r) {
    if (size_ % kBlock == 0) blocks_.push_back(std::make_unique<uint8_t[]>(kBlock));
    blocks_.back()[size_ % kBlock] = b;
    ++size_;
  }
  return id;
}

std::optional<OpSource> SourceTable::resolve(uint32_t id) const {
  if (id == 0 || id > count_) return std::nullopt;
  const uint32_t first = (id - 1) / kCheckpoint * kCheckpoint + 1;
  size_t off = size_t(index_[(id - 1) / kCheckpoint]);
  auto p = [&] { return at(off++); };
  uintptr_t addr = 0;
  std::vector<std::pair<uint32_t, uint64_t>> stack;
  for (uint32_t r = first; r <= id; ++r) {
    addr += uintptr_t(unzigzag(getU(p)));
    uint64_t h = getU(p);
    stack.resize(size_t(h >> 3));
    size_t n = size_t(h & 7) == 7 ? 7 + size_t(getU(p)) : size_t(h & 7);
    for (size_t i = 0; i < n; ++i) {
      uint32_t site = uint32_t(getU(p));
      stack.push_back({site, getU(p)});
    }
  }
  OpSource out;
  out.loc = llvm::SMLoc::getFromPointer(reinterpret_cast<const char *>(addr));
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
    const Site &s = sites_[it->first];
    SourceContext c;
    c.kind = s.kind;
    c.loc = s.loc;
    c.name = s.name;
    if (s.kind == SourceContext::For)
      c.value = (it->second & 1) ? texts_[size_t(it->second >> 1)] : std::to_string(unzigzag(it->second >> 1));
    out.frames.push_back(std::move(c));
  }
  return out;
}

void SourceTable::shrinkToFit() {
  index_.shrink_to_fit();
  record_ = std::vector<uint8_t>();
}

llvm::SMLoc SourceTable::loc(uint32_t id) const {
  if (id == 0 || id > count_) return llvm::SMLoc();
  const uint32_t first = (id - 1) / kCheckpoint * kCheckpoint + 1;
  size_t off = size_t(index_[(id - 1) / kCheckpoint]);
  auto p = [&] { return at(off++); };
  uintptr_t addr = 0;
  for (uint32_t r = first; r <= id; ++r) {
    addr += uintptr_t(unzigzag(getU(p)));
    uint64_t h = getU(p);
    size_t n = size_t(h & 7) == 7 ? 7 + size_t(getU(p)) : size_t(h & 7);
    for (size_t i = 0; i < 2 * n; ++i) (void)getU(p);
  }
  return llvm::SMLoc::getFromPointer(reinterpret_cast<const char *>(addr));
}

// --- Printer ---------------------------------------------------------------------------

namespace {
void printLocal(std::ostream &os, const LocalChunk &c) {
  os << plan::bufferTypeName(c.type) << '[' << c.index << ':' << c.index + c.size << ']';
}
void printRemote(std::ostream &os, const RemoteChunk &c) {
  os << "rb" << c.bufferId << ':' << plan::bufferTypeName(c.type) << '[' << c.index << ':' << c.index + c.size << ']';
}
template <class V> void printIds(std::ostream &os, const V &v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << ']';
}

/// The fields of a data op: its entries, channel, reduction and threadblock group.
void printDataFields(std::ostream &os, const Op &op) {
  os << " src=[";
  bool first = true;
  for (auto &c : op.localSrc) { os << (first ? "" : ","); printLocal(os, c); first = false; }
  for (auto &c : op.remoteSrc) { os << (first ? "" : ","); printRemote(os, c); first = false; }
  os << "] dst=[";
  first = true;
  for (auto &c : op.localDst) { os << (first ? "" : ","); printLocal(os, c); first = false; }
  for (auto &c : op.localPktDst) { os << (first ? "" : ",") << "pkt:"; printLocal(os, c); first = false; }
  for (auto &c : op.remoteDst) { os << (first ? "" : ","); printRemote(os, c); first = false; }
  os << ']';
  if (op.channelType != ChannelType::None) { os << " ch=" << plan::channelTypeName(op.channelType); printIds(os, op.channelIds); }
  if (plan::isReduceFamily(op.kind)) os << ' ' << plan::reduceOpName(op.reduceOp);
  if (op.tbg) os << " tbg=" << op.tbg->tbId << '/' << op.tbg->tbgSize;
}

/// The fields of a switch-channel op (glre, glres, gstore, gstorepkt): what the table's shape
/// and traits say it carries.
void printSwitchFields(std::ostream &os, const Op &op) {
  const bool reduces = plan::opHas(op.kind, plan::optrait::Reduce);
  if (plan::opShape(op.kind) == plan::OpShape::GroupLoadReduce) { // glre: into one user chunk
    os << " buf=" << plan::bufferTypeName(op.switchBuffer) << " off=" << op.bufferOffset << " size=" << op.switchSize
       << " dst=r" << op.userChunk.rank << ':' << plan::bufferTypeName(op.userChunk.buffer) << '[' << op.userChunk.index
       << ':' << op.userChunk.index + op.userChunk.size << "] sw="; printIds(os, op.channelIds);
    os << ' ' << plan::reduceOpName(op.reduceOp);
  } else if (reduces) { // glres: src and dst entries
    os << " buf=" << plan::bufferTypeName(op.switchBuffer) << " size=" << op.switchSize << " src="; printIds(os, op.srcIndex);
    os << " dst="; printIds(os, op.dstIndex); os << " sw="; printIds(os, op.channelIds);
    if (!op.dstChannelIds.empty()) { os << " dst_sw="; printIds(os, op.dstChannelIds); }
    os << ' ' << plan::reduceOpName(op.reduceOp);
  } else { // gstore, gstorepkt: from one user chunk
    os << " src=r" << op.userChunk.rank << ':' << plan::bufferTypeName(op.userChunk.buffer) << '[' << op.userChunk.index
       << ':' << op.userChunk.index + op.userChunk.size << "] buf=" << plan::bufferTypeName(op.switchBuffer)
       << " off=" << op.bufferOffset << " size=" << op.switchSize << " sw="; printIds(os, op.channelIds);
  }
}

/// One op in the IR dump: its name, then the fields its shape (PlanEnums.def) carries.
void printOpTo(std::ostream &os, const Op &op) {
  os << opKindName(op.kind);
  if (plan::isSwitchOp(op.kind)) {
    printSwitchFields(os, op);
    return;
  }
  switch (plan::opShape(op.kind)) {
  case plan::OpShape::Nop: break;
  case plan::OpShape::Barrier: os << " id=" << op.barrierId << " tbs=" << op.numThreadblocks; break;
  case plan::OpShape::Sem:
    os << " sem="; printIds(os, op.ids); os << " sync=" << syncTypeName(op.dataSync); break;
  case plan::OpShape::Sync:
    os << " ch=" << plan::channelTypeName(op.channelType); printIds(os, op.syncChannelIds.toList());
    os << " sync=" << syncTypeName(op.dataSync); break;
  case plan::OpShape::Pipeline: os << " unit=" << op.unit << " num_chunks=" << op.numChunks; break;
  case plan::OpShape::Data: printDataFields(os, op); break;
  case plan::OpShape::GroupLoadReduce: printSwitchFields(os, op); break;
  }
}

void printOps(std::ostream &os, const std::vector<Op> &ops, int indent) {
  for (auto &op : ops) {
    os << std::string(size_t(indent), ' ');
    printOpTo(os, op);
    os << '\n';
    if (op.kind == OpKind::Pipeline) printOps(os, op.ops, indent + 2);
  }
}
} // namespace

std::string printOp(const Op &op) {
  std::ostringstream os;
  printOpTo(os, op);
  return os.str();
}

void printIR(std::ostream &os, const ProgramIR &ir) {
  const auto &o = ir.options;
  os << "program " << (o.name ? *o.name : std::string("<none>")) << " collective=" << o.collective.name
     << " ranks=" << o.numRanks << " instances=" << o.instances << " protocol=" << o.protocol
     << '\n';
  for (auto &g : ir.gpus) printGpuIR(os, g);
}

void printGpuIR(std::ostream &os, const GpuIR &g) {
  {
    os << "rank " << g.id << ": input=" << g.inputChunks << " output=" << g.outputChunks << " scratch=" << g.scratchChunks << '\n';
    for (auto t : g.channelTypeOrder) {
      os << "  channels " << plan::channelTypeName(t) << " -> ";
      printIds(os, t == ChannelType::Memory ? g.memoryConnectedTo : g.portConnectedTo);
      os << '\n';
    }
    for (auto &s : g.switchChannels) {
      os << "  channels switch " << plan::bufferTypeName(s.bufferType) << " group ";
      printIds(os, s.ranks);
      os << '\n';
    }
    for (size_t i = 0; i < g.remoteBuffers.size(); ++i) {
      auto &rb = g.remoteBuffers[i];
      os << "  remote_buffer " << i << ": rank " << rb.rank << ' ' << plan::bufferTypeName(rb.type) << " via";
      for (auto t : rb.accessChannelTypes) os << ' ' << plan::channelTypeName(t);
      os << '\n';
    }
    if (!g.semaphores.empty()) { os << "  semaphores "; printIds(os, g.semaphores); os << '\n'; }
    for (auto &tb : g.threadblocks) {
      os << "  tb " << tb.id << ':';
      for (auto &c : tb.channels) { os << ' ' << plan::channelTypeName(c.type); printIds(os, c.ids); }
      for (auto &r : tb.remoteBuffers) { os << " rb." << plan::channelTypeName(r.type); printIds(os, r.ids); }
      os << '\n';
      if (tb.packed.empty()) printOps(os, tb.ops, 4);
      else printOps(os, allOps(tb), 4);
    }
  }
}

std::string printGpuIR(const GpuIR &gpu) {
  std::ostringstream os;
  printGpuIR(os, gpu);
  return os.str();
}

std::string printIR(const ProgramIR &ir) {
  std::ostringstream os;
  printIR(os, ir);
  return os.str();
}

} // namespace msccl::ir
