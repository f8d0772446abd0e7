//===- PackedOps.cpp - The compact byte encoding of a threadblock's ops ----------------===//
//
// Consumes ir::Op values as the DSL adds them; produces PackedOps (a byte string) and decodes
// it back. Guarantees decode(encode(op)) == op field by field, PySet tables slot by slot (so
// set iteration order is kept). Layout of one op: kind byte, a varint of presence bits (bit i:
// field i of OpFields.def differs from its default), then the present fields in that order:
// small enums as bytes, unsigned values as LEB128 varints, signed ones zigzag-encoded, lists as
// a count and their elements; a pipeline's inner ops follow recursively. The encoder, decoder
// and resetOp() are generated from OpFields.def: they cannot disagree with the struct.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/ir/IR.h"

#include <stdexcept>
#include <type_traits>

namespace msccl::ir {

namespace {

struct Writer {
  std::vector<uint8_t> &out;
  uint32_t &lastSource; ///< Op::source is written as the difference to the previous one
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
  uint32_t lastSource = 0;
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

void encode(Writer &w, const Op &op);
void decode(Reader &r, Op &op);

// --- Per-type field codecs: isDefault / put / get / reset --------------------------------

template <class T> struct IsList : std::false_type {};
template <class T> struct IsList<std::vector<T>> : std::true_type {};
template <class T, unsigned N> struct IsList<llvm::SmallVector<T, N>> : std::true_type {};

template <class T> bool isDefault(const T &v, const T &init) {
  if constexpr (IsList<T>::value) return v.empty();
  else return v == init;
}
bool isDefault(const PySet &v, const PySet &) { return v.rawTableSize() == 0; }

template <class T> void reset(T &v, const T &init) {
  if constexpr (IsList<T>::value) v.clear(); // keeps the capacity
  else v = init;
}

// Enums of one byte.
template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void put(Writer &w, E v) {
  static_assert(sizeof(E) == 1, "enum fields are encoded as one byte");
  w.byte(uint8_t(v));
}
template <class E, std::enable_if_t<std::is_enum_v<E>, int> = 0> void get(Reader &r, E &v) { v = E(r.byte()); }
void put(Writer &w, uint32_t v) { w.u(v); }
void get(Reader &r, uint32_t &v) { v = uint32_t(r.u()); }
void put(Writer &w, int64_t v) { w.s(v); }
void get(Reader &r, int64_t &v) { v = r.s(); }
void put(Writer &w, const LocalChunk &c) {
  put(w, c.type);
  w.s(c.index);
  w.s(c.size);
}
void get(Reader &r, LocalChunk &c) {
  get(r, c.type);
  c.index = r.s();
  c.size = r.s();
}
void put(Writer &w, const RemoteChunk &c) {
  put(w, c.type);
  w.s(c.index);
  w.s(c.size);
  w.u(c.bufferId);
}
void get(Reader &r, RemoteChunk &c) {
  get(r, c.type);
  c.index = r.s();
  c.size = r.s();
  c.bufferId = uint32_t(r.u());
}
void put(Writer &w, const Chunk &c) {
  w.s(c.rank);
  put(w, c.buffer);
  w.s(c.index);
  w.s(c.size);
}
void get(Reader &r, Chunk &c) {
  c.rank = r.s();
  get(r, c.buffer);
  c.index = r.s();
  c.size = r.s();
}
void put(Writer &w, const std::optional<TbgInfo> &t) { // present (not nullopt) when encoded
  w.u(t->tbId);
  w.u(t->tbgSize);
}
void get(Reader &r, std::optional<TbgInfo> &t) {
  TbgInfo v;
  v.tbId = uint32_t(r.u());
  v.tbgSize = uint32_t(r.u());
  t = v;
}
void put(Writer &w, const Op &op) { encode(w, op); }
void get(Reader &r, Op &op) { decode(r, op); }

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
// A PySet: key*2 when it is PySet::single(key) (the common case: one signal/wait); otherwise
// table size*2+1, the number of keys, and the table slot by slot.
void put(Writer &w, const PySet &set) {
  uint32_t single = 0;
  if (isSingle(set, single)) {
    w.u(uint64_t(single) << 1);
    return;
  }
  w.u((uint64_t(set.rawTableSize()) << 1) | 1);
  w.u(set.size());
  for (size_t i = 0; i < set.rawTableSize(); ++i) w.u(uint64_t(set.rawSlot(i) + 1)); // empty (-1) -> 0
}
void get(Reader &r, PySet &set) {
  uint64_t head = r.u();
  if (!(head & 1)) {
    set = PySet::single(uint32_t(head >> 1));
    return;
  }
  size_t tableSize = size_t(head >> 1);
  std::vector<int64_t> slots(tableSize);
  size_t used = size_t(r.u());
  for (auto &k : slots) k = int64_t(r.u()) - 1;
  set = PySet::fromRaw(slots, used);
}
// Lists: the count, then the elements.
template <class V, std::enable_if_t<IsList<V>::value, int> = 0> void put(Writer &w, const V &v) {
  w.u(v.size());
  for (auto &x : v) put(w, x);
}
template <class V, std::enable_if_t<IsList<V>::value, int> = 0> void get(Reader &r, V &v) {
  v.resize(size_t(r.u()));
  for (auto &x : v) get(r, x);
}

// Fields with an encoding of their own: Op::source, as the difference to the previous op's
// source in the same PackedOps (the ops of a threadblock come from increasing DSL calls).
template <unsigned Field> struct FieldTag {};
template <unsigned Field, class T> void putField(Writer &w, const T &v, FieldTag<Field>) { put(w, v); }
template <unsigned Field, class T> void getField(Reader &r, T &v, FieldTag<Field>) { get(r, v); }

// --- The generated op codec ------------------------------------------------------------

enum FieldIndex : unsigned {
#define OP_FIELD(Type, name, init, doc) kField_##name,
#include "msccl/ir/OpFields.def"
  kNumFields
};
static_assert(kNumFields <= 64, "presence bits are one 64-bit varint");

void putField(Writer &w, const uint32_t &v, FieldTag<kField_source>) {
  w.s(int64_t(v) - int64_t(w.lastSource));
  w.lastSource = v;
}
void getField(Reader &r, uint32_t &v, FieldTag<kField_source>) {
  v = uint32_t(int64_t(r.lastSource) + r.s());
  r.lastSource = v;
}

void encode(Writer &w, const Op &op) {
  uint64_t present = 0;
#define OP_FIELD(Type, name, init, doc)                                                                                \
  {                                                                                                                    \
    static const Type d = init;                                                                                        \
    if (!isDefault(op.name, d)) present |= uint64_t(1) << kField_##name;                                               \
  }
#include "msccl/ir/OpFields.def"
  w.byte(uint8_t(op.kind));
  w.u(present);
#define OP_FIELD(Type, name, init, doc)                                                                                \
  if (present & (uint64_t(1) << kField_##name)) putField(w, op.name, FieldTag<kField_##name>{});
#include "msccl/ir/OpFields.def"
}

/// Decodes into `op`, which holds default values (a fresh or reset Op).
void decode(Reader &r, Op &op) {
  op.kind = OpKind(r.byte());
  uint64_t present = r.u();
#define OP_FIELD(Type, name, init, doc)                                                                                \
  if (present & (uint64_t(1) << kField_##name)) getField(r, op.name, FieldTag<kField_##name>{});
#include "msccl/ir/OpFields.def"
}

template <class V> bool allNonNegative(const V &v) {
  for (auto &x : v)
    if (x.index < 0 || x.size < 0) return false;
  return true;
}

using plan::isSwitchOp; // the op table (plan/OpTable.h)

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

void resetOp(Op &op) {
  op.kind = OpKind::Nop;
#define OP_FIELD(Type, name, init, doc)                                                                                \
  {                                                                                                                    \
    static const Type d = init;                                                                                        \
    reset(op.name, d);                                                                                                 \
  }
#include "msccl/ir/OpFields.def"
}

void packOp(PackedOps &packed, const Op &op) {
  Writer w{packed.bytes, packed.lastSource};
  encode(w, op);
  ++packed.count;
  if (packed.nonNegative && !hasNonNegativeValues(op)) packed.nonNegative = false;
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
