//===- PackedOps.cpp - The compact byte encoding of a threadblock's ops ----------------===//
//
// Consumes ir::Op values as the DSL adds them; produces PackedOps (a byte string) and decodes
// it back. Guarantees decode(encode(op)) == op field by field, PySet tables slot by slot (so
// set iteration order is kept). Layout of one op: kind byte, a varint of field flags, then the
// present fields in flag order: small enums as bytes, unsigned values as LEB128 varints,
// signed ones zigzag-encoded; a pipeline's inner ops follow recursively.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/ir/IR.h"

#include <stdexcept>

namespace msccl::ir {

namespace {

enum Flag : uint32_t {
  // The flags of the common ops (sync, put, reduce) come first: one or two varint bytes.
  kChannelType = 1u << 0,
  kSyncSingle = 1u << 1, ///< syncChannelIds is exactly PySet::single(k): only k is stored
  kDataSync = 1u << 2,
  kChannelIds = 1u << 3,
  kLocalSrc = 1u << 4,
  kRemoteDst = 1u << 5,
  kLocalDst = 1u << 6,
  kRemoteSrc = 1u << 7,
  kTbg = 1u << 8,
  kReduceOp = 1u << 9,
  kSyncSet = 1u << 10,   ///< any other syncChannelIds table, slot by slot
  kSemIds = 1u << 11,
  kBarrier = 1u << 12,
  kLocalPktDst = 1u << 13,
  kSwitch = 1u << 14,
  kSrcIndex = 1u << 15,
  kDstIndex = 1u << 16,
  kLoop = 1u << 17,
  kInner = 1u << 18,
};

/// Whether `s` has exactly the table of PySet::single(k) for its one key k.
bool isSingle(const PySet &s, uint32_t &key) {
  if (s.size() != 1 || s.rawTableSize() != 8) return false;
  for (size_t i = 0; i < 8; ++i)
    if (s.rawSlot(i) >= 0) {
      key = uint32_t(s.rawSlot(i));
      return (key & 7) == i;
    }
  return false;
}

struct Writer {
  std::vector<uint8_t> &out;
  void byte(uint8_t b) { out.push_back(b); }
  void u(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(uint8_t(v) | 0x80);
      v >>= 7;
    }
    out.push_back(uint8_t(v));
  }
  void s(int64_t v) { u((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }
};

struct Reader {
  const uint8_t *p;
  const uint8_t *end;
  uint8_t byte() {
    if (p == end) throw std::logic_error("PackedOps: truncated op encoding");
    return *p++;
  }
  uint64_t u() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      uint8_t b = byte();
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  int64_t s() {
    uint64_t z = u();
    return int64_t(z >> 1) ^ -int64_t(z & 1);
  }
};

// A local chunk is (type, index, size); a remote chunk adds its tb-local buffer id.
template <class C> void writeChunk(Writer &w, const C &c) {
  w.byte(uint8_t(c.type));
  w.s(c.index);
  w.s(c.size);
}
template <class C> void readChunk(Reader &r, C &c) {
  c.type = BufferType(r.byte());
  c.index = r.s();
  c.size = r.s();
}
void writeLocal(Writer &w, const LocalChunkList &v) {
  w.u(v.size());
  for (auto &c : v)
    writeChunk(w, c);
}
void readLocal(Reader &r, LocalChunkList &v) {
  v.resize(size_t(r.u()));
  for (auto &c : v)
    readChunk(r, c);
}
void writeRemote(Writer &w, const RemoteChunkList &v) {
  w.u(v.size());
  for (auto &c : v) {
    writeChunk(w, c);
    w.u(c.bufferId);
  }
}
void readRemote(Reader &r, RemoteChunkList &v) {
  v.resize(size_t(r.u()));
  for (auto &c : v) {
    readChunk(r, c);
    c.bufferId = uint32_t(r.u());
  }
}
template <class V> void writeUnsigned(Writer &w, const V &v) {
  w.u(v.size());
  for (auto x : v) w.u(x);
}
template <class V> void readUnsigned(Reader &r, V &v) {
  v.resize(size_t(r.u()));
  for (auto &x : v) x = std::remove_reference_t<decltype(x)>(r.u());
}
void writeSigned(Writer &w, const std::vector<int64_t> &v) {
  w.u(v.size());
  for (auto x : v) w.s(x);
}
void readSigned(Reader &r, std::vector<int64_t> &v) {
  v.resize(size_t(r.u()));
  for (auto &x : v) x = r.s();
}

void encode(Writer &w, const Op &op) {
  uint32_t f = 0;
  if (op.dataSync != SyncType::None) f |= kDataSync;
  if (op.channelType != ChannelType::None) f |= kChannelType;
  if (op.reduceOp != ReduceOperationType::Sum) f |= kReduceOp;
  if (op.tbg) f |= kTbg;
  uint32_t single = 0;
  if (isSingle(op.syncChannelIds, single)) f |= kSyncSingle;
  else if (op.syncChannelIds.rawTableSize() != 0) f |= kSyncSet;
  if (!op.channelIds.empty()) f |= kChannelIds;
  if (!op.ids.empty()) f |= kSemIds;
  if (op.barrierId || op.numThreadblocks) f |= kBarrier;
  if (!op.localSrc.empty()) f |= kLocalSrc;
  if (!op.localDst.empty()) f |= kLocalDst;
  if (!op.localPktDst.empty()) f |= kLocalPktDst;
  if (!op.remoteSrc.empty()) f |= kRemoteSrc;
  if (!op.remoteDst.empty()) f |= kRemoteDst;
  if (op.switchBuffer != BufferType::Input || op.bufferOffset || op.switchSize || op.userChunk != Chunk{}) f |= kSwitch;
  if (!op.srcIndex.empty()) f |= kSrcIndex;
  if (!op.dstIndex.empty()) f |= kDstIndex;
  if (op.unit || op.numChunks) f |= kLoop;
  if (!op.ops.empty()) f |= kInner;

  w.byte(uint8_t(op.kind));
  w.u(f);
  if (f & kDataSync) w.byte(uint8_t(op.dataSync));
  if (f & kChannelType) w.byte(uint8_t(op.channelType));
  if (f & kReduceOp) w.byte(uint8_t(op.reduceOp));
  if (f & kTbg) {
    w.u(op.tbg->tbId);
    w.u(op.tbg->tbgSize);
  }
  if (f & kSyncSingle) w.u(single);
  if (f & kSyncSet) {
    const PySet &set = op.syncChannelIds;
    w.u(set.rawTableSize());
    w.u(set.size());
    for (size_t i = 0; i < set.rawTableSize(); ++i) w.u(uint64_t(set.rawSlot(i) + 1)); // empty (-1) -> 0
  }
  if (f & kChannelIds) writeUnsigned(w, op.channelIds);
  if (f & kSemIds) writeUnsigned(w, op.ids);
  if (f & kBarrier) {
    w.u(op.barrierId);
    w.u(op.numThreadblocks);
  }
  if (f & kLocalSrc) writeLocal(w, op.localSrc);
  if (f & kLocalDst) writeLocal(w, op.localDst);
  if (f & kLocalPktDst) writeLocal(w, op.localPktDst);
  if (f & kRemoteSrc) writeRemote(w, op.remoteSrc);
  if (f & kRemoteDst) writeRemote(w, op.remoteDst);
  if (f & kSwitch) {
    w.byte(uint8_t(op.switchBuffer));
    w.s(op.bufferOffset);
    w.s(op.switchSize);
    w.s(op.userChunk.rank);
    w.byte(uint8_t(op.userChunk.buffer));
    w.s(op.userChunk.index);
    w.s(op.userChunk.size);
  }
  if (f & kSrcIndex) writeSigned(w, op.srcIndex);
  if (f & kDstIndex) writeSigned(w, op.dstIndex);
  if (f & kLoop) {
    w.s(op.unit);
    w.s(op.numChunks);
  }
  if (f & kInner) {
    w.u(op.ops.size());
    for (auto &inner : op.ops) encode(w, inner);
  }
}

void decode(Reader &r, Op &op) {
  op.kind = OpKind(r.byte());
  uint32_t f = uint32_t(r.u());
  if (f & kDataSync) op.dataSync = SyncType(r.byte());
  if (f & kChannelType) op.channelType = ChannelType(r.byte());
  if (f & kReduceOp) op.reduceOp = ReduceOperationType(r.byte());
  if (f & kTbg) {
    TbgInfo t;
    t.tbId = uint32_t(r.u());
    t.tbgSize = uint32_t(r.u());
    op.tbg = t;
  }
  if (f & kSyncSingle) op.syncChannelIds = PySet::single(uint32_t(r.u()));
  if (f & kSyncSet) {
    std::vector<int64_t> slots(size_t(r.u()));
    size_t used = size_t(r.u());
    for (auto &k : slots) k = int64_t(r.u()) - 1;
    op.syncChannelIds = PySet::fromRaw(slots, used);
  }
  if (f & kChannelIds) readUnsigned(r, op.channelIds);
  if (f & kSemIds) readUnsigned(r, op.ids);
  if (f & kBarrier) {
    op.barrierId = uint32_t(r.u());
    op.numThreadblocks = uint32_t(r.u());
  }
  if (f & kLocalSrc) readLocal(r, op.localSrc);
  if (f & kLocalDst) readLocal(r, op.localDst);
  if (f & kLocalPktDst) readLocal(r, op.localPktDst);
  if (f & kRemoteSrc) readRemote(r, op.remoteSrc);
  if (f & kRemoteDst) readRemote(r, op.remoteDst);
  if (f & kSwitch) {
    op.switchBuffer = BufferType(r.byte());
    op.bufferOffset = r.s();
    op.switchSize = r.s();
    op.userChunk.rank = r.s();
    op.userChunk.buffer = BufferType(r.byte());
    op.userChunk.index = r.s();
    op.userChunk.size = r.s();
  }
  if (f & kSrcIndex) readSigned(r, op.srcIndex);
  if (f & kDstIndex) readSigned(r, op.dstIndex);
  if (f & kLoop) {
    op.unit = r.s();
    op.numChunks = r.s();
  }
  if (f & kInner) {
    op.ops.resize(size_t(r.u()));
    for (auto &inner : op.ops) decode(r, inner);
  }
}

template <class V> bool allNonNegative(const V &v) {
  for (auto &x : v)
    if (x.index < 0 || x.size < 0) return false;
  return true;
}

bool isSwitchOp(OpKind k) {
  return k == OpKind::MultiLoadReduce || k == OpKind::MultiStore || k == OpKind::MultiStorePackets ||
         k == OpKind::MultiLoadReduceStore;
}

} // namespace

bool hasNonNegativeValues(const Op &op) {
  if (!allNonNegative(op.localSrc) || !allNonNegative(op.localDst) || !allNonNegative(op.localPktDst) ||
      !allNonNegative(op.remoteSrc) || !allNonNegative(op.remoteDst))
    return false;
  if (isSwitchOp(op.kind)) {
    if (op.bufferOffset < 0 || op.switchSize < 0 || op.userChunk.index < 0 || op.userChunk.size < 0) return false;
    for (auto i : op.srcIndex)
      if (i < 0) return false;
  }
  if (op.kind == OpKind::Pipeline) {
    if (op.unit < 0 || op.numChunks < 0) return false;
    for (auto &inner : op.ops)
      if (!hasNonNegativeValues(inner)) return false;
  }
  return true;
}

void packOp(PackedOps &packed, const Op &op) {
  Writer w{packed.bytes};
  encode(w, op);
  ++packed.count;
  if (packed.nonNegative && !hasNonNegativeValues(op)) packed.nonNegative = false;
}

void packSyncOp(PackedOps &packed, OpKind kind, ChannelType channelType, SyncType dataSync, uint32_t channel) {
  Writer w{packed.bytes};
  uint32_t f = kSyncSingle;
  if (dataSync != SyncType::None) f |= kDataSync;
  if (channelType != ChannelType::None) f |= kChannelType;
  w.byte(uint8_t(kind));
  w.u(f);
  if (f & kDataSync) w.byte(uint8_t(dataSync));
  if (f & kChannelType) w.byte(uint8_t(channelType));
  w.u(channel);
  ++packed.count; // no chunk or index: nonNegative unchanged
}

void decodeOps(const PackedOps &packed, std::vector<Op> &out) {
  Reader r{packed.bytes.data(), packed.bytes.data() + packed.bytes.size()};
  size_t first = out.size();
  out.resize(first + packed.count);
  for (size_t i = first; i < out.size(); ++i) decode(r, out[i]);
}

void unpackOps(GpuIR &gpu) {
  for (auto &tb : gpu.threadblocks) {
    if (tb.packed.empty()) continue;
    std::vector<Op> ops;
    ops.reserve(tb.packed.count + tb.ops.size());
    decodeOps(tb.packed, ops);
    for (auto &op : tb.ops) ops.push_back(std::move(op));
    tb.ops = std::move(ops);
    tb.packed = PackedOps();
  }
}

void unpackOps(ProgramIR &ir) {
  for (auto &g : ir.gpus) unpackOps(g);
}

std::vector<Op> allOps(const ThreadBlockIR &tb) {
  std::vector<Op> ops;
  ops.reserve(tb.packed.count + tb.ops.size());
  decodeOps(tb.packed, ops);
  ops.insert(ops.end(), tb.ops.begin(), tb.ops.end());
  return ops;
}

} // namespace msccl::ir
