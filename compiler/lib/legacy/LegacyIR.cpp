//===- LegacyIR.cpp - MSCCLPPLang's Ref operations and instruction DAG --------------------===//
//
// Mirrors program.py (MSCCLPPProgram, Ref, chunk, rank), collectives.py (buffers, aliasing,
// checks) and dag/instruction_dag.py (add_* and the slot dependency tracking) line by line, so
// that the DAG, the threadblock steps and the scratch lengths are the ones the Python compiler
// builds. See LegacyIR.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/legacy/LegacyIR.h"

#include <algorithm>

namespace msccl::legacy {

const char *bufName(Buf b) {
  switch (b) {
  case Buf::Input: return "i";
  case Buf::Output: return "o";
  case Buf::Scratch: return "s";
  }
  return "?";
}
const char *chanName(ChanType t) {
  switch (t) {
  case ChanType::Port: return "port";
  case ChanType::Memory: return "memory";
  case ChanType::None: return "none";
  case ChanType::Nvls: return "nvls";
  }
  return "?";
}
const char *instName(Inst i) {
  static const char *names[] = {"start", "nop",  "rrc",  "rrcs", "rs",   "copy",   "re",     "cpkt",
                                "tpkt",  "rspkt", "rpkt", "put",  "rppkt", "ppkt", "pws",    "pwsf",
                                "get",   "wait", "signal", "flush", "barrier", "gstore", "glre", "glres"};
  return names[static_cast<size_t>(i)];
}

void addUnique(std::vector<Op *> &v, Op *x) {
  if (std::find(v.begin(), v.end(), x) == v.end())
    v.push_back(x);
}
void removeValue(std::vector<Op *> &v, Op *x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end())
    v.erase(it);
}

int64_t Op::cnt() const {
  if (src)
    return src->size;
  if (dst)
    return dst->size;
  return 0;
}

// ---- collectives.py ------------------------------------------------------------------------

const char *Collective::name() const {
  switch (kind) {
  case CollKind::AllReduce: return "allreduce";
  case CollKind::AllGather: return "allgather";
  case CollKind::ReduceScatter: return "reducescatter";
  case CollKind::AllToAll: return "alltoall";
  case CollKind::SendRecv: return "sendrecv";
  case CollKind::Broadcast: return "broadcast";
  }
  return "custom";
}

std::pair<Buf, int64_t> Collective::bufferIndex(int rank, Buf b, int64_t index) const {
  switch (kind) {
  case CollKind::AllGather:
    if (inplace && b == Buf::Input)
      return {Buf::Output, index + rank * chunkFactor};
    return {b, index};
  case CollKind::AllReduce:
  case CollKind::SendRecv:
    if (inplace && b == Buf::Output)
      return {Buf::Input, index};
    return {b, index};
  case CollKind::ReduceScatter:
    if (inplace && b == Buf::Output)
      return {Buf::Input, index + rank * chunkFactor};
    return {b, index};
  default: return {b, index};
  }
}

int64_t Collective::outputChunkCount(int64_t len, int64_t instances) const {
  if (kind == CollKind::AllGather)
    return len * instances;
  return inplace ? 0 : len * instances;
}

// ---- MSCCLPPProgram --------------------------------------------------------------------------

static Content one(int r, int64_t c) { return Content{{{r, c}}}; }

Program::Program(ProgramOptions opts) : opts_(std::move(opts)) {
  if (opts_.protocol != "Simple" && opts_.protocol != "LL")
    throw LegacyError("protocol must be \"Simple\" or \"LL\", got \"" + opts_.protocol + "\"");
  const Collective &c = opts_.collective;
  if (opts_.numRanks <= 0)
    throw LegacyError("the program needs at least one rank");
  if (c.numRanks != opts_.numRanks)
    throw LegacyError("the collective has " + std::to_string(c.numRanks) + " ranks, the program " +
                      std::to_string(opts_.numRanks));
  if (c.kind == CollKind::SendRecv && c.numRanks != 2)
    throw LegacyError("`SendRecv` needs exactly 2 ranks");
  if (opts_.instances < 1)
    throw LegacyError("`instances` must be at least 1");
  int n = opts_.numRanks;
  int64_t cf = c.chunkFactor;
  input_.resize(size_t(n));
  output_.resize(size_t(n));
  scratch_.resize(size_t(n));
  scratchCreated_.assign(size_t(n), false);
  tbSteps_.resize(size_t(n));
  barrierIds_.resize(size_t(n));
  maxBarrierId_.assign(size_t(n), 0);
  for (int r = 0; r < n; ++r) {
    auto in = std::make_shared<std::vector<Content>>();
    auto out = std::make_shared<std::vector<Content>>();
    switch (c.kind) {
    case CollKind::AllReduce:
      for (int64_t i = 0; i < cf; ++i)
        in->push_back(one(r, i));
      out->resize(size_t(cf));
      if (c.inplace)
        out = in;
      break;
    case CollKind::AllGather:
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < cf; ++i)
          out->push_back(one(q, i));
      for (int64_t i = 0; i < cf; ++i)
        in->push_back(one(r, i));
      break;
    case CollKind::ReduceScatter:
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < cf; ++i)
          in->push_back(one(r, q * cf + i));
      if (c.inplace)
        out->assign(in->begin() + r * cf, in->begin() + (r + 1) * cf);
      else
        out->resize(size_t(cf));
      break;
    case CollKind::AllToAll:
      for (int64_t i = 0; i < n * cf; ++i)
        in->push_back(one(r, i));
      out->resize(size_t(n * cf));
      if (c.inplace)
        out = in;
      break;
    case CollKind::SendRecv:
      for (int64_t i = 0; i < cf; ++i)
        in->push_back(one(r, i));
      out->resize(size_t(cf));
      break;
    case CollKind::Broadcast:
      in->resize(size_t(cf));
      out->resize(size_t(cf));
      if (c.inplace || r == c.root)
        for (int64_t i = 0; i < cf; ++i)
          (*in)[size_t(i)] = one(c.root, i);
      if (c.inplace)
        out = in;
      break;
    }
    input_[size_t(r)] = in;
    output_[size_t(r)] = out;
    scratch_[size_t(r)] = std::make_shared<std::vector<Content>>();
  }
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < int64_t(input_[size_t(r)]->size()); ++i) {
      Ref ref = getRef(r, Buf::Input, i, 1);
      addStart(r, ref.buffer, ref.index, ref);
    }
}

void Program::checkRank(int r, const char *what) const {
  if (r < 0 || r >= opts_.numRanks)
    throw LegacyError(std::string(what) + " " + std::to_string(r) + " is not a rank of the program (0.." +
                      std::to_string(opts_.numRanks - 1) + ")");
}

std::vector<Content> &Program::buf(int rank, Buf b) {
  switch (b) {
  case Buf::Input: return *input_[size_t(rank)];
  case Buf::Output: return *output_[size_t(rank)];
  default: return *scratch_[size_t(rank)];
  }
}
const std::vector<Content> *Program::bufPtr(int rank, Buf b) const {
  switch (b) {
  case Buf::Input: return input_[size_t(rank)].get();
  case Buf::Output: return output_[size_t(rank)].get();
  default: return scratchCreated_[size_t(rank)] ? scratch_[size_t(rank)].get() : nullptr;
  }
}

int64_t Program::bufferLength(int rank, Buf b) const {
  const auto *p = bufPtr(rank, b);
  return p ? int64_t(p->size()) : 0;
}

Ref Program::getRef(int rank, Buf buffer, int64_t index, int64_t size) const {
  auto [b, i] = opts_.collective.bufferIndex(rank, buffer, index);
  return Ref{rank, b, i, size};
}

void Program::ensureScratch(int rank, std::optional<Buf> buffer) {
  if (buffer && *buffer == Buf::Scratch)
    scratchCreated_[size_t(rank)] = true;
}

std::pair<Buf, int64_t> Program::defaultIndex(const Ref &self, int remoteRank, std::optional<Buf> buffer,
                                              int64_t index) const {
  if (index == -1 && !buffer)
    return {self.buffer, self.index};
  if (!buffer)
    throw LegacyError("a destination index needs a buffer");
  if (index == -1 && *buffer == Buf::Scratch)
    return {*buffer, bufferLength(remoteRank, Buf::Scratch)};
  if (index < 0)
    throw LegacyError("chunk index " + std::to_string(index) + " is negative");
  return {*buffer, index};
}

static void setAt(std::vector<Content> &v, int64_t i, const Content &c, bool growable, int rank, Buf b) {
  if (i < 0 || (!growable && i >= int64_t(v.size())))
    throw LegacyError("chunk " + std::to_string(i) + " is outside buffer `" + bufName(b) + "` of rank " +
                      std::to_string(rank) + " (" + std::to_string(v.size()) + " chunks)");
  if (i >= int64_t(v.size()))
    v.resize(size_t(i + 1));
  v[size_t(i)] = c;
}

void Program::applySend(int src, Buf sb, int64_t si, int dst, Buf db, int64_t di, int64_t size) {
  auto [sbuf, sidx] = opts_.collective.bufferIndex(src, sb, si);
  auto [dbuf, didx] = opts_.collective.bufferIndex(dst, db, di);
  for (int64_t i = 0; i < size; ++i) {
    const std::vector<Content> &s = buf(src, sbuf);
    if (sidx + i < 0 || sidx + i >= int64_t(s.size()))
      throw LegacyError("chunk " + std::to_string(sidx + i) + " is outside buffer `" + bufName(sbuf) + "` of rank " +
                        std::to_string(src) + " (" + std::to_string(s.size()) + " chunks)");
    Content c = s[size_t(sidx + i)];
    setAt(buf(dst, dbuf), didx + i, c, dbuf == Buf::Scratch, dst, dbuf);
  }
}

void Program::applyReduce(const Ref &dst, const std::vector<Ref> &others) {
  for (int64_t i = 0; i < dst.size; ++i) {
    std::vector<Content> &d = buf(dst.rank, dst.buffer);
    if (dst.index + i >= int64_t(d.size()))
      continue;
    Content sum = d[size_t(dst.index + i)];
    for (const Ref &o : others) {
      const std::vector<Content> &s = buf(o.rank, o.buffer);
      if (o.index + i < int64_t(s.size()))
        for (auto &p : s[size_t(o.index + i)].parts)
          sum.parts.push_back(p);
    }
    std::sort(sum.parts.begin(), sum.parts.end());
    d[size_t(dst.index + i)] = sum;
  }
}

std::optional<Ref> Program::chunk(int rank, Buf buffer, int64_t index, int64_t size) {
  checkRank(rank, "rank");
  if (index < 0)
    throw LegacyError("chunk index " + std::to_string(index) + " is negative");
  if (size < 1)
    throw LegacyError("chunk size must be at least 1, got " + std::to_string(size));
  if (buffer == Buf::Scratch) {
    scratchCreated_[size_t(rank)] = true;
    auto &s = buf(rank, Buf::Scratch);
    if (index >= int64_t(s.size()) || !s[size_t(index)].present())
      setAt(s, index, Content{{{-1 - rank, index}}}, true, rank, buffer);
  }
  const auto &b = buf(rank, buffer);
  if (index >= int64_t(b.size()))
    throw LegacyError("chunk " + std::to_string(index) + " is outside buffer `" + bufName(buffer) + "` of rank " +
                      std::to_string(rank) + " (" + std::to_string(b.size()) + " chunks)");
  if (!b[size_t(index)].present())
    return std::nullopt;
  return getRef(rank, buffer, index, size);
}

Ref Program::putImpl(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb,
                     bool srcIsPacket, ChanType ct, bool packet) {
  checkRank(dst, "destination rank");
  ensureScratch(dst, buffer);
  if (self.rank == dst)
    throw LegacyError("cannot put to the same rank");
  auto [b, i] = defaultIndex(self, dst, buffer, index);
  Ref d = getRef(dst, b, i, self.size);
  applySend(self.rank, self.buffer, self.index, dst, b, i, self.size);
  int64_t step = tbStep(self.rank, sendtb);
  Inst inst = packet ? (srcIsPacket ? Inst::ReadPutPacket : Inst::PutPacket) : Inst::Put;
  Op *op = newOp(inst, self.rank, self, d, sendtb, ct);
  op->step = step;
  read(self.rank, self.buffer, self.index, self.size, op);
  op->dsts.push_back({d, step});
  op->srcs.push_back({self, step});
  if (packet) {
    // add_signal(rank, self, dst, -1, none) and add_wait(dst, dst, self, -1, none)
    int64_t s1 = tbStep(self.rank, -1);
    Op *sig = newOp(Inst::Signal, self.rank, self, d, -1, ChanType::None);
    sig->step = s1;
    write(self.rank, self.buffer, self.index, self.size, sig);
    sig->dsts.push_back({d, s1});
    sig->srcs.push_back({self, s1});
    int64_t s2 = tbStep(dst, -1);
    Op *w = newOp(Inst::Wait, dst, self, d, -1, ChanType::None);
    w->step = s2;
    write(dst, d.buffer, d.index, d.size, w);
    w->srcs.push_back({self, s2});
    w->dsts.push_back({d, s2});
  }
  return d;
}

Ref Program::put(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, ChanType ct) {
  return putImpl(self, dst, buffer, index, sendtb, false, ct, false);
}

Ref Program::putPacket(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb,
                       bool srcIsPacket, ChanType ct, std::optional<Buf> tempBuffer, int64_t tempIndex) {
  Ref from = self;
  if (ct == ChanType::Port && !srcIsPacket) {
    if (!tempBuffer)
      throw LegacyError("`put_packet` over a port channel needs a `temp_buffer`");
    bool same = false;
    from = copyImpl(self, self.rank, tempBuffer, tempIndex, sendtb, false, true, same);
    if (same)
      throw LegacyError("`temp_buffer` of `put_packet` is the source chunk itself");
  }
  return putImpl(from, dst, buffer, index, sendtb, srcIsPacket, ct, true);
}

void Program::get(const Ref &self, int src, std::optional<Buf> buffer, int64_t index, int64_t recvtb, ChanType ct) {
  checkRank(src, "source rank");
  ensureScratch(src, buffer);
  if (src == self.rank)
    throw LegacyError("cannot get from the same rank");
  auto [b, i] = defaultIndex(self, src, buffer, index);
  Ref s = getRef(src, b, i, self.size);
  applySend(src, b, i, self.rank, self.buffer, self.index, self.size);
  int64_t step = tbStep(self.rank, recvtb);
  Op *op = newOp(Inst::Get, self.rank, s, self, recvtb, ct);
  op->step = step;
  write(self.rank, self.buffer, self.index, self.size, op);
  op->srcs.push_back({s, step});
  op->dsts.push_back({self, step});
}

void Program::signal(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, ChanType ct) {
  checkRank(dst, "destination rank");
  if (dst == self.rank)
    throw LegacyError("cannot signal the same rank");
  auto [b, i] = defaultIndex(self, dst, buffer, index);
  Ref d = getRef(dst, b, i, self.size);
  int64_t step = tbStep(self.rank, sendtb);
  Op *op = newOp(Inst::Signal, self.rank, self, d, sendtb, ct);
  op->step = step;
  write(self.rank, self.buffer, self.index, self.size, op);
  op->dsts.push_back({d, step});
  op->srcs.push_back({self, step});
}

void Program::flush(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, ChanType ct) {
  checkRank(dst, "destination rank");
  if (ct != ChanType::Port)
    throw LegacyError("only a port channel can be flushed");
  if (dst == self.rank)
    throw LegacyError("cannot flush to the same rank");
  auto [b, i] = defaultIndex(self, dst, buffer, index);
  Ref d = getRef(dst, b, i, self.size);
  int64_t step = tbStep(self.rank, sendtb);
  Op *op = newOp(Inst::Flush, self.rank, self, d, sendtb, ChanType::Port);
  op->step = step;
  read(self.rank, self.buffer, self.index, self.size, op);
  op->dsts.push_back({d, step});
  op->srcs.push_back({self, step});
}

void Program::wait(const Ref &self, int src, std::optional<Buf> buffer, int64_t index, int64_t recvtb, ChanType ct) {
  checkRank(src, "source rank");
  if (src == self.rank)
    throw LegacyError("cannot wait on the same rank");
  auto [b, i] = defaultIndex(self, src, buffer, index);
  Ref s = getRef(src, b, i, self.size);
  int64_t step = tbStep(self.rank, recvtb);
  Op *op = newOp(Inst::Wait, self.rank, s, self, recvtb, ct);
  op->step = step;
  write(self.rank, self.buffer, self.index, self.size, op);
  op->srcs.push_back({s, step});
  op->dsts.push_back({self, step});
}

Ref Program::copyImpl(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb,
                      bool fromPacket, bool toPacket, bool &same) {
  checkRank(dst, "destination rank");
  ensureScratch(dst, buffer);
  auto [b, i] = defaultIndex(self, dst, buffer, index);
  Ref d = getRef(dst, b, i, self.size);
  same = d == self;
  if (same)
    return d;
  applySend(self.rank, self.buffer, self.index, dst, b, i, self.size);
  if (self.rank != dst)
    throw LegacyError("`copy` only copies within a rank (use `put` or `get` across ranks)");
  int64_t step = tbStep(self.rank, sendtb);
  Inst inst = fromPacket ? Inst::CopyPacket : toPacket ? Inst::TransformToPacket : Inst::Copy;
  Op *op = newOp(inst, self.rank, self, d, sendtb, ChanType::None);
  op->step = step;
  read(self.rank, self.buffer, self.index, d.size, op);
  write(self.rank, d.buffer, d.index, d.size, op);
  return d;
}

std::optional<Ref> Program::copy(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb,
                                 bool fromPacket) {
  bool same = false;
  Ref d = copyImpl(self, dst, buffer, index, sendtb, fromPacket, false, same);
  if (same)
    return std::nullopt;
  return d;
}

Ref Program::reduce(const Ref &self, const Ref &other, int64_t recvtb, ChanType ct, bool packet) {
  if (packet && other.rank != self.rank)
    throw LegacyError("`reduce_packet` only reduces chunks of the same rank");
  if (other.size != self.size)
    throw LegacyError("cannot reduce a chunk of size " + std::to_string(other.size) + " into one of size " +
                      std::to_string(self.size));
  int64_t step = tbStep(self.rank, recvtb);
  Op *op;
  if (other.rank != self.rank) {
    op = newOp(Inst::ReadReduceCopy, self.rank, other, self, recvtb, ct);
    op->step = step;
    op->srcs.push_back({other, step});
    write(self.rank, self.buffer, self.index, self.size, op, true);
  } else {
    op = newOp(packet ? Inst::ReducePacket : Inst::Reduce, self.rank, other, self, recvtb, ChanType::None);
    op->step = step;
    op->srcs.push_back({other, step});
    read(self.rank, other.buffer, other.index, self.size, op);
    write(self.rank, self.buffer, self.index, self.size, op, true);
  }
  applyReduce(self, {other});
  return self;
}

Ref Program::groupLoadReduce(const Ref &self, const std::vector<Ref> &others, int64_t recvtb, ChanType ct) {
  if (others.empty() || ct != ChanType::Nvls)
    throw LegacyError("`group_load_reduce` needs chunks and an nvls channel");
  int per = opts_.collective.numRanksPerNode;
  for (const Ref &o : others) {
    if (self.rank / per != o.rank / per)
      throw LegacyError("`group_load_reduce` only reduces chunks of ranks of the same node");
    if (self.buffer != o.buffer || self.index != o.index)
      throw LegacyError("`group_load_reduce` only reduces chunks of the same buffer and index");
  }
  int64_t step = tbStep(self.rank, recvtb);
  Op *op = newOp(Inst::GroupLoadReduce, self.rank, self, self, recvtb, ct);
  op->step = step;
  op->srcs.push_back({self, step});
  for (const Ref &o : others)
    op->srcs.push_back({o, step});
  write(self.rank, self.buffer, self.index, self.size, op, true);
  applyReduce(self, others);
  return self;
}

void Program::groupStore(const Ref &self, const std::vector<int> &dsts, int64_t index, std::optional<Buf> buffer,
                         int64_t sendtb, ChanType ct) {
  for (int d : dsts) {
    checkRank(d, "destination rank");
    ensureScratch(d, buffer);
  }
  if (index != -1 && self.index != index)
    throw LegacyError("`group_store` only stores to the chunk's own index");
  if (ct != ChanType::Nvls)
    throw LegacyError("`group_store` needs an nvls channel");
  int per = opts_.collective.numRanksPerNode;
  std::vector<Ref> refs;
  for (int d : dsts) {
    auto [b, i] = defaultIndex(self, d, buffer, index);
    buffer = b;
    index = i;
    if (self.buffer != b)
      throw LegacyError("`group_store` only stores to the chunk's own buffer");
    if (self.rank / per != d / per)
      throw LegacyError("`group_store` only stores to ranks of the same node");
    Ref r = getRef(d, b, i, self.size);
    applySend(self.rank, self.buffer, self.index, d, b, i, self.size);
    refs.push_back(r);
  }
  int64_t step = tbStep(self.rank, sendtb);
  Op *op = newOp(Inst::GroupStore, self.rank, self, self, sendtb, ct);
  op->step = step;
  op->dsts.push_back({self, step});
  for (const Ref &r : refs)
    op->dsts.push_back({r, step});
  read(self.rank, self.buffer, self.index, self.size, op);
}

std::vector<Ref> Program::split(const Ref &self, int64_t num) {
  if (num <= 0 || self.size % num != 0)
    throw LegacyError("cannot split a chunk of " + std::to_string(self.size) + " elements into " +
                      std::to_string(num) + " parts");
  std::vector<Ref> out;
  int64_t size = self.size / num;
  for (int64_t i = 0; i < num; ++i)
    out.push_back(getRef(self.rank, self.buffer, self.index + i * size, size));
  return out;
}

Ref Program::group(const Ref &self, const Ref &other) {
  if (self.rank != other.rank)
    throw LegacyError("cannot concatenate chunks of ranks " + std::to_string(self.rank) + " and " +
                      std::to_string(other.rank));
  if (self.buffer != other.buffer)
    throw LegacyError("cannot concatenate chunks of different buffers");
  const Ref &first = self.index < other.index ? self : other;
  const Ref &second = self.index < other.index ? other : self;
  int64_t end = std::max(first.index + first.size, second.index + second.size);
  return Ref{self.rank, self.buffer, first.index, end - first.index};
}

void Program::barrier(int rank, const std::vector<int64_t> &tbList) {
  checkRank(rank, "rank");
  auto &ids = barrierIds_[size_t(rank)];
  int64_t id;
  auto it = ids.find(tbList);
  if (it != ids.end())
    id = it->second;
  else
    id = ids[tbList] = maxBarrierId_[size_t(rank)]++;
  for (int64_t tb : tbList) {
    int64_t step = tbStep(rank, tb);
    Op *op = newOp(Inst::Barrier, rank, std::nullopt, std::nullopt, tb, ChanType::None);
    op->step = step;
    op->tbList = tbList;
    op->barrierId = id;
    write(rank, Buf::Input, 0, bufferLength(rank, Buf::Input), op);
    write(rank, Buf::Output, 0, bufferLength(rank, Buf::Output), op);
    if (scratchCreated_[size_t(rank)])
      write(rank, Buf::Scratch, 0, bufferLength(rank, Buf::Scratch), op);
  }
}

// ---- InstructionDAG ---------------------------------------------------------------------------

Op *Program::newOp(Inst inst, int rank, std::optional<Ref> src, std::optional<Ref> dst, int64_t tb, ChanType ct) {
  ops_.emplace_back();
  Op *op = &ops_.back();
  op->inst = inst;
  op->rank = rank;
  op->src = src;
  op->dst = dst;
  op->tb = tb;
  op->channelType = ct;
  return op;
}

int64_t Program::tbStep(int rank, int64_t tb) {
  auto &m = tbSteps_[size_t(rank)];
  auto it = m.find(tb);
  if (it != m.end())
    return ++it->second;
  m[tb] = 0;
  return 0;
}

void Program::addStart(int rank, Buf b, int64_t index, const Ref &ref) {
  Op *op = newOp(Inst::Start, rank, ref, ref, -1, ChanType::None);
  slots_[slotKey(rank, b, index)].lastWriter = op;
}

void Program::write(int rank, Buf b, int64_t index, int64_t size, Op *op, bool readToo) {
  std::vector<Op *> prevOps;
  for (int64_t i = index; i < index + size; ++i) {
    SlotState &s = slots_[slotKey(rank, b, i)];
    if (readToo && !s.lastWriter)
      throw LegacyError(std::string("chunk ") + std::to_string(i) + " of buffer `" + bufName(b) + "` of rank " +
                        std::to_string(rank) + " is reduced into before anything was written to it");
    if (!s.lastReaders.empty())
      for (Op *r : s.lastReaders)
        addUnique(prevOps, r);
    else if (s.lastWriter)
      addUnique(prevOps, s.lastWriter);
    s.lastWriter = op;
    s.lastReaders.clear();
  }
  for (Op *p : prevOps) {
    addUnique(p->next, op);
    addUnique(op->prev, p);
  }
}

void Program::read(int rank, Buf b, int64_t index, int64_t size, Op *op) {
  std::vector<Op *> prevOps;
  for (int64_t i = index; i < index + size; ++i) {
    SlotState &s = slots_[slotKey(rank, b, i)];
    if (!s.lastWriter)
      throw LegacyError(std::string("chunk ") + std::to_string(i) + " of buffer `" + bufName(b) + "` of rank " +
                        std::to_string(rank) + " is read before anything was written to it");
    addUnique(prevOps, s.lastWriter);
    s.lastReaders.push_back(op);
  }
  for (Op *p : prevOps) {
    addUnique(p->next, op);
    addUnique(op->prev, p);
  }
}

// ---- Check() --------------------------------------------------------------------------------

bool Program::check(std::vector<std::string> &problems) const {
  const Collective &c = opts_.collective;
  int n = opts_.numRanks;
  int64_t cf = c.chunkFactor;
  auto sumOf = [&](int64_t idx) {
    Content s;
    for (int r = 0; r < n; ++r)
      s.parts.push_back({r, idx});
    return s;
  };
  auto describe = [](const Content &x) {
    if (!x.present())
      return std::string("nothing");
    std::string t;
    for (auto &p : x.parts)
      t += (t.empty() ? "" : " + ") + ("(" + std::to_string(p.first) + ", " + std::to_string(p.second) + ")");
    return t;
  };
  auto expect = [&](int r, Buf b, int64_t idx, const Content &want) {
    const auto *v = bufPtr(r, b);
    Content got = v && idx < int64_t(v->size()) ? (*v)[size_t(idx)] : Content{};
    if (!(got == want))
      problems.push_back("rank " + std::to_string(r) + " chunk " + std::to_string(idx) + " of buffer `" + bufName(b) +
                         "` holds " + describe(got) + ", expected " + describe(want));
  };
  for (int r = 0; r < n; ++r) {
    switch (c.kind) {
    case CollKind::AllReduce:
      for (int64_t i = 0; i < cf; ++i)
        expect(r, c.inplace ? Buf::Input : Buf::Output, i, sumOf(i));
      break;
    case CollKind::AllGather:
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < cf; ++i)
          expect(r, Buf::Output, q * cf + i, one(q, i));
      break;
    case CollKind::ReduceScatter:
      for (int64_t i = 0; i < cf; ++i)
        expect(r, c.inplace ? Buf::Input : Buf::Output, c.inplace ? r * cf + i : i, sumOf(r * cf + i));
      break;
    case CollKind::AllToAll:
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < cf; ++i)
          expect(r, c.inplace ? Buf::Input : Buf::Output, q * cf + i, one(q, r * cf + i));
      break;
    case CollKind::SendRecv:
      for (int64_t i = 0; i < cf; ++i)
        expect(r, c.inplace ? Buf::Input : Buf::Output, i, one(1 - r, i));
      break;
    case CollKind::Broadcast:
      for (int64_t i = 0; i < cf; ++i)
        expect(r, c.inplace ? Buf::Input : Buf::Output, i, one(c.root, i));
      break;
    }
  }
  return problems.empty();
}

} // namespace msccl::legacy
