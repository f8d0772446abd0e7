//===- Dsl.cpp - Program, collectives, buffers, Rank ops, semaphores, pipelines ---------===//
//
// Mirrors program.py, collectives.py, rank.py, loop.py, thread_block_group.py. Channel methods
// are in DslChannels.cpp.
//
//===------------------------------------------------------------------------------------===//
#include "DslImpl.h"

#include <unordered_map>

namespace msccl::ir {

std::string pyList(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

namespace {
std::string optStr(std::optional<int64_t> v) { return v ? std::to_string(*v) : std::string("None"); }
std::string bt(BufferType t) { return std::string(plan::bufferTypeName(t)); }

Collective makeCollective(const char *name, int64_t n, int64_t cf, bool inplace, int64_t in, int64_t out) {
  if (n < 1) throw DslError("Number of ranks must be at least 1, got " + std::to_string(n) + ".");
  if (n > kMaxRanks)
    throw DslError("Number of ranks " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxRanks) + ".");
  if (cf < 0) throw DslError("Chunk factor must be non-negative, got " + std::to_string(cf) + ".");
  if (in < 0 || out < 0) throw DslError("Buffer sizes must be non-negative, got input " + std::to_string(in) + ", output " + std::to_string(out) + ".");
  Collective c;
  c.name = name;
  c.numRanks = n;
  c.chunkFactor = cf;
  c.inplace = inplace;
  c.inputChunks = in;
  c.outputChunks = out;
  return c;
}

/// n * cf, checked before it is computed (the sizes of the collective's buffers). Invalid n or
/// cf give 0: makeCollective reports them.
int64_t blockChunks(int64_t n, int64_t cf) {
  int64_t r;
  if (n < 1 || n > kMaxRanks || cf < 0)
    return 0;
  if (__builtin_mul_overflow(n, cf, &r))
    throw DslError("Chunk factor " + std::to_string(cf) + " is too large: " + std::to_string(n) + " * " +
                   std::to_string(cf) + " chunks do not fit in 64 bits.");
  return r;
}
} // namespace

// --- collectives.py --------------------------------------------------------------------
Collective Collective::make(runtime::CollectiveKind kind, int64_t n, int64_t cf, bool inplace) {
  const runtime::DslClass dsl = runtime::collectiveDslClass(kind);
  if (!dsl.exists)
    throw DslError("the collectives table has no DSL class for collective `" +
                   std::string(runtime::collectiveName(kind)) + "`");
  auto chunks = [&](runtime::DslChunks c) { return c == runtime::DslChunks::NCf ? blockChunks(n, cf) : cf; };
  return makeCollective(std::string(runtime::collectiveName(kind)).c_str(), n, cf, inplace, chunks(dsl.input),
                        chunks(dsl.output));
}
Collective Collective::allToAllV(int64_t n, int64_t maxBlock) {
  if (maxBlock < 0)
    throw DslError("max_block must be >= 0 (elements per scratch slot), got " + std::to_string(maxBlock) + ".");
  Collective c = makeCollective("alltoallv", n, 1, false, n, n);
  c.variable = true;
  c.maxBlock = maxBlock;
  return c;
}
Collective Collective::testCollective(int64_t n, int64_t in, int64_t out) { return makeCollective("test", n, 1, false, in, out); }

// --- rank.py BaseBuffer.__getitem__ -----------------------------------------------------
Chunk Buffer::slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) const {
  if (step && *step != 1) throw DslError("Buffer slicing does not support step != 1 (got step=" + std::to_string(*step) + ")");
  int64_t len = end - offset;
  int64_t a = start ? *start : 0;
  int64_t b = stop ? *stop : len;
  if (a < 0 || b < 0)
    throw DslError("Buffer slicing does not support negative indices (got start=" + optStr(start) + ", stop=" + optStr(stop) + ")");
  if (a > b) throw DslError("Buffer slice start (" + std::to_string(a) + ") must be <= stop (" + std::to_string(b) + ")");
  if (offset + b > end)
    throw DslError("Index range from " + std::to_string(offset + a) + " - " + std::to_string(offset + b) +
                   " is out of bounds for buffer " + bt(type) + ". Buffer size: " + std::to_string(end));
  return Chunk{rank, type, offset + a, b - a};
}

void Buffer::throwNotASlice(std::string_view pythonTypeName) {
  throw DslError("Buffer indices must be slices, not " + std::string(pythonTypeName));
}

// --- thread_block_group.py --------------------------------------------------------------
ThreadBlockGroup::ThreadBlockGroup(std::vector<int64_t> tbs) : tbList(std::move(tbs)) {
  std::unordered_map<int64_t, size_t> seen;
  for (size_t i = 0; i < tbList.size(); ++i)
    if (!seen.emplace(tbList[i], i).second)
      throw DslError("Duplicate thread block found at index " + std::to_string(i) + ": " + std::to_string(tbList[i]));
}

// --- Program::Impl helpers --------------------------------------------------------------
uint32_t Program::Impl::checkTb(int64_t tb) {
  if (tb < 0 || tb > 65535)
    throw DslError("Thread block " + std::to_string(tb) + " is out of range (0..65535).");
  return uint32_t(tb);
}

llvm::SmallVector<TbTarget, 1> Program::Impl::resolveTbs(std::optional<int64_t> tb, const ThreadBlockGroup *group) {
  llvm::SmallVector<TbTarget, 1> out;
  if (tb && group) // ours (Python lets `tb` win and drops the group without a word)
    throw DslError("Pass either `tb` or `tb_group`, not both: `tb` would silently override the group (tb = " +
                   std::to_string(*tb) + ", tb_group = " + pyList(group->tbList) + ").");
  if (tb) {
    out.push_back({checkTb(*tb), std::nullopt});
  } else if (group) {
    out.reserve(group->tbList.size());
    for (size_t i = 0; i < group->tbList.size(); ++i)
      out.push_back({checkTb(group->tbList[i]), TbgInfo{uint32_t(i), uint32_t(group->tbList.size())}});
  } else {
    throw DslError("Either 'tb' (thread block ID) or 'tb_group' (ThreadBlockGroup) must be provided, but both are None.");
  }
  return out;
}

void Program::Impl::addOperation(int64_t rank, uint32_t tb, Op op) {
  if (!op.source) op.source = currentSource();
  if (inPipeline) {
    growRank(rank, 1);
    collected.push_back({uint32_t(rank), tb, std::move(op)});
    return;
  }
  auto &t = gpu(rank).tb(tb);
  growRank(rank, 1);
  if (t.ops.empty()) packOp(t.packed, op); // see PackedOps (IR.h)
  else t.ops.push_back(std::move(op));
}

void Program::Impl::addOperationCopy(int64_t rank, uint32_t tb, Op &op) {
  if (!op.source) op.source = currentSource();
  if (!inPipeline) {
    auto &t = gpu(rank).tb(tb);
    if (t.ops.empty()) {
      growRank(rank, 1);
      packOp(t.packed, op);
      return;
    }
  }
  addOperation(rank, tb, op);
}

Op &Program::Impl::freshOp() {
  resetOp(scratchOp);
  return scratchOp;
}

void Program::setSource(llvm::SMLoc loc) {
  impl_->sourceLoc = loc;
  impl_->sourcePending = loc.isValid();
  impl_->sourceId = 0;
}

void Program::setContextProvider(std::function<uint32_t(SourceTable &, llvm::SMLoc)> provider) {
  impl_->contextProvider = std::move(provider);
}

// --- program.py CollectiveProgram ------------------------------------------------------
Program::Program(ProgramOptions o) : impl_(std::make_unique<Impl>()) {
  if (o.protocol != "Simple" && o.protocol != "LL")
    throw DslError("Given protocol: " + o.protocol + ". Must be either Simple, LL");
  if (o.numRanks < 0) o.numRanks = o.collective.numRanks;
  if (o.numRanks > o.collective.numRanks)
    throw DslError("Number of ranks " + std::to_string(o.numRanks) + " exceeds the number of ranks of the collective (" +
                   std::to_string(o.collective.numRanks) + ").");
  if (o.instances < 0) throw DslError("Number of instances must be >= 0, got " + std::to_string(o.instances));
  if (o.instances > kMaxInstances)
    throw DslError("Number of instances " + std::to_string(o.instances) + " exceeds the limit of " +
                   std::to_string(kMaxInstances) + ".");
  if (o.numThreadsPerBlock < 0 || o.numThreadsPerBlock > int64_t(UINT32_MAX))
    throw DslError("num_threads_per_block " + std::to_string(o.numThreadsPerBlock) + " is out of range.");
  if (o.bufferAlignment < 0) throw DslError("buffer_alignment " + std::to_string(o.bufferAlignment) + " must be non-negative.");
  auto &ir = impl_->ir;
  ir.gpus.resize(size_t(o.numRanks));
  for (int64_t r = 0; r < o.numRanks; ++r) {
    auto &g = ir.gpus[size_t(r)];
    g.id = uint32_t(r);
    g.inputChunks = o.collective.inputChunks;
    g.outputChunks = o.collective.outputChunks;
  }
  impl_->barriers.resize(size_t(o.numRanks));
  impl_->countedTbs.assign(size_t(o.numRanks), 0);
  ir.options = std::move(o);
}

void Program::setMaxPlanSize(uint64_t limit) {
  int64_t instances = impl_->ir.options.instances;
  impl_->maxPlanSizePerInstance = instances > 0 ? limit / uint64_t(instances) : UINT64_MAX;
}

uint64_t Program::planSize() const { return impl_->planSize; }

Program::~Program() = default;

const ProgramOptions &Program::options() const { return impl_->ir.options; }
int64_t Program::numRanks() const { return impl_->numRanks(); }
const ProgramIR &Program::ir() const { return impl_->ir; }
ProgramIR &Program::ir() { return impl_->ir; }

Rank Program::rank(int64_t r) {
  if (r < 0 || r >= numRanks())
    throw DslError("Rank " + std::to_string(r) + " is out of bounds. Number of ranks: " + std::to_string(numRanks()));
  return Rank(this, r);
}

Buffer Program::scratchBuffer(int64_t r, int64_t size) {
  if (r < 0 || r >= numRanks())
    throw DslError("Rank " + std::to_string(r) + " is out of bounds. Number of ranks: " + std::to_string(numRanks()));
  if (size < 0) throw DslError("Buffer size " + std::to_string(size) + " must be non-negative");
  auto &g = impl_->gpu(r);
  Buffer b{r, BufferType::Scratch, g.scratchChunks, g.scratchChunks + size};
  g.scratchChunks += size;
  return b;
}

Semaphore Program::semaphore(int64_t r, int64_t initialValue) {
  if (r < 0 || r >= numRanks())
    throw DslError("Source rank " + std::to_string(r) + " is out of bounds. Number of ranks: " + std::to_string(numRanks()));
  if (initialValue < INT32_MIN || initialValue > INT32_MAX)
    throw DslError("Semaphore initial value " + std::to_string(initialValue) + " does not fit in 32 bits.");
  auto &g = impl_->gpu(r);
  impl_->grow(1);
  g.semaphores.push_back(initialValue);
  return Semaphore(this, r, uint32_t(g.semaphores.size() - 1));
}

// --- loop.py LoopIterationContext -------------------------------------------------------
void Program::enterPipeline(int64_t unit, int64_t numChunks) {
  if (impl_->inPipeline) throw DslError("Nested Pipelines are not Supported.");
  if (unit < 0 || numChunks < 0)
    throw DslError("LoopIterationContext unit and num_chunks must be non-negative (got unit=" + std::to_string(unit) +
                   ", num_chunks=" + std::to_string(numChunks) + ").");
  if (unit == 0 || unit % 16 != 0) // ours (Python accepts any): docs/language.md, pipelines
    throw DslError("LoopIterationContext unit " + std::to_string(unit) +
                   " is not a positive multiple of 16 bytes (each iteration moves whole 16-byte vectors); use " +
                   (unit < 16 ? std::string("16")
                              : std::to_string(unit / 16 * 16) + " or " + std::to_string((unit / 16 + 1) * 16)) +
                   ".");
  impl_->inPipeline = true;
  impl_->pipelineUnit = unit;
  impl_->pipelineNumChunks = numChunks;
}

void Program::exitPipeline() {
  auto &im = *impl_;
  if (!im.inPipeline) throw DslError("No pipeline is active.");
  im.inPipeline = false;
  std::vector<Op> pipelines;
  std::vector<std::pair<uint32_t, uint32_t>> keys;
  std::unordered_map<uint64_t, size_t> index;
  for (auto &c : im.collected) {
    uint64_t key = (uint64_t(c.rank) << 32) | c.tb;
    auto [it, inserted] = index.emplace(key, pipelines.size());
    if (inserted) {
      Op p;
      p.kind = OpKind::Pipeline;
      p.unit = im.pipelineUnit;
      p.numChunks = im.pipelineNumChunks;
      pipelines.push_back(std::move(p));
      keys.push_back({c.rank, c.tb});
    }
    pipelines[it->second].ops.push_back(std::move(c.op));
  }
  im.planSize -= im.collected.size(); // the collected ops move into the pipeline ops (one each)
  im.collected.clear();
  for (size_t i = 0; i < pipelines.size(); ++i) im.addOperation(keys[i].first, keys[i].second, std::move(pipelines[i]));
}

bool Program::inPipeline() const { return impl_->inPipeline; }

// --- rank.py Rank -----------------------------------------------------------------------
Buffer Rank::getInputBuffer() const {
  return Buffer{rank_, BufferType::Input, 0, prog_->options().collective.inputChunks};
}
Buffer Rank::getOutputBuffer() const {
  return Buffer{rank_, BufferType::Output, 0, prog_->options().collective.outputChunks};
}

namespace {
// rank.py Rank._copy.
void rankCopy(Program &p, int64_t self, const Chunk &dst, const Chunk &src, std::optional<int64_t> tb,
              const ThreadBlockGroup *group, bool fromPacket, bool toPacket) {
  if (dst.rank != self || src.rank != self)
    throw DslError("Inconsistent ranks: dst " + std::to_string(dst.rank) + ", src " + std::to_string(src.rank) + ", self " +
                   std::to_string(self) + ". They must match.");
  if (dst.size != src.size)
    throw DslError("Inconsistent chunk sizes: dst " + std::to_string(dst.size) + ", src " + std::to_string(src.size) + ". They must match.");
  if (fromPacket && src.buffer != BufferType::Scratch) throw DslError("Source chunk must be of type scratch.");
  if (toPacket && dst.buffer != BufferType::Scratch) throw DslError("Destination chunk must be of type scratch.");
  auto targets = Program::Impl::resolveTbs(tb, group);
  for (auto &t : targets) {
    Op op;
    op.kind = fromPacket ? OpKind::UnpackPackets : toPacket ? OpKind::CopyPackets : OpKind::Copy;
    op.localSrc.push_back({src.buffer, src.index, src.size});
    op.localDst.push_back({dst.buffer, dst.index, dst.size});
    op.tbg = t.tbg;
    p.impl().addOperation(self, t.tb, std::move(op));
  }
}
} // namespace

void Rank::copy(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  rankCopy(*prog_, rank_, dst, src, tb, g, false, false);
}
void Rank::copyPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  rankCopy(*prog_, rank_, dst, src, tb, g, false, true);
}
void Rank::unpackPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *g) const {
  rankCopy(*prog_, rank_, dst, src, tb, g, true, false);
}

void Rank::reduce(const Chunk &src, const std::vector<Chunk> &others, std::optional<int64_t> tb, const ThreadBlockGroup *g,
                  std::optional<Chunk> dstOpt, ReduceOperationType reduceOp, bool packet) const {
  const Chunk dst = dstOpt ? *dstOpt : src;
  if (dst.rank != rank_ || src.rank != rank_)
    throw DslError("Inconsistent ranks: dst " + std::to_string(dst.rank) + ", src " + std::to_string(src.rank) + ", self " +
                   std::to_string(rank_) + ". They must match.");
  if (dst.size != src.size)
    throw DslError("Inconsistent chunk sizes: dst " + std::to_string(dst.size) + ", src " + std::to_string(src.size) + ". They must match.");
  if (others.empty()) throw DslError("Other chunk empty.");
  for (auto &c : others) {
    if (c.rank != rank_)
      throw DslError("Other chunk rank " + std::to_string(c.rank) + " does not match current rank " + std::to_string(rank_) + ".");
    if (c.size != src.size)
      throw DslError("Inconsistent chunk sizes: other " + std::to_string(c.size) + ", src " + std::to_string(src.size) + ". They must match.");
    if (packet && c.buffer != BufferType::Scratch) throw DslError("Other chunk must be of type scratch.");
  }
  auto targets = Program::Impl::resolveTbs(tb, g);
  for (auto &t : targets) {
    Op op;
    op.kind = packet ? OpKind::ReducePackets : OpKind::Reduce;
    op.localSrc.reserve(others.size() + 1);
    op.localSrc.push_back({src.buffer, src.index, src.size});
    for (auto &c : others) op.localSrc.push_back({c.buffer, c.index, c.size});
    op.localDst.push_back({dst.buffer, dst.index, dst.size});
    op.reduceOp = reduceOp;
    op.tbg = t.tbg;
    prog_->impl().addOperation(rank_, t.tb, std::move(op));
  }
}

void Rank::barrier(const std::vector<int64_t> &tbList) const {
  if (tbList.empty()) throw DslError("Barrier requires at least thread block.");
  auto &im = prog_->impl();
  if (tbList.size() == 1) {
    uint32_t tb = Program::Impl::checkTb(tbList[0]);
    Op op;
    op.kind = OpKind::Nop;
    im.addOperation(rank_, tb, std::move(op));
    return;
  }
  for (int64_t t : tbList) Program::Impl::checkTb(t);
  auto &table = im.barriers[size_t(rank_)];
  auto [it, inserted] = table.emplace(tbList, uint32_t(table.size()));
  Op op;
  op.kind = OpKind::Barrier;
  op.barrierId = it->second;
  op.numThreadblocks = uint32_t(tbList.size());
  for (int64_t t : tbList) im.addOperation(rank_, uint32_t(t), op);
}

// --- rank.py Semaphore ------------------------------------------------------------------
namespace {
void addSemaphoreOp(Program &prog, int64_t rank, int64_t semaphoreId, OpKind kind, int64_t tb, SyncType dataSync) {
  uint32_t t = Program::Impl::checkTb(tb);
  Op op;
  op.kind = kind;
  op.ids.push_back(semaphoreId);
  op.dataSync = dataSync;
  prog.impl().addOperation(rank, t, std::move(op));
}
} // namespace

void Semaphore::acquire(int64_t tb, SyncType dataSync) const {
  addSemaphoreOp(*prog_, rank_, id_, OpKind::SemAcquire, tb, dataSync);
}

void Semaphore::release(int64_t tb, SyncType dataSync) const {
  addSemaphoreOp(*prog_, rank_, id_, OpKind::SemRelease, tb, dataSync);
}

} // namespace msccl::ir
