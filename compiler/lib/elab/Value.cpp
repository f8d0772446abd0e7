//===- Value.cpp - Run-time values of the elaborator ------------------------------------===//
#include "msccl/elab/Value.h"

#include <functional>

namespace msccl::elab {

Value makeStr(std::string s) { return Value::heap(ValueKind::Str, new StrObj(std::move(s))); }
Value makeList(std::vector<Value> items) {
  auto *l = new ListObj();
  l->items = std::move(items);
  return Value::heap(ValueKind::List, l);
}
Value makeTuple(std::vector<Value> items) {
  auto *l = new ListObj();
  l->items = std::move(items);
  return Value::heap(ValueKind::Tuple, l);
}
Value makeMap() { return Value::heap(ValueKind::Map, new MapObj()); }
Value makeRange(int64_t a, int64_t b, int64_t c) { return Value::heap(ValueKind::Range, new RangeObj(a, b, c)); }

int64_t RangeObj::length() const {
  if (step > 0)
    return start < stop ? static_cast<int64_t>((static_cast<__int128>(stop) - start - 1) / step + 1) : 0;
  return start > stop ? static_cast<int64_t>((static_cast<__int128>(start) - stop - 1) / (-static_cast<__int128>(step)) + 1) : 0;
}

/// splitmix64 finalizer: spreads small integers (ranks, tbs) over all bits.
static size_t fmix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<size_t>(x);
}
static size_t mix(size_t h, size_t v) { return fmix(h * 31 + v + 0x9e3779b97f4a7c15ull); }

size_t ValueHash::operator()(const Value &v) const {
  switch (v.kind()) {
  case ValueKind::None: return 0x51;
  case ValueKind::Bool:
  case ValueKind::Int:
  case ValueKind::U64: return fmix(static_cast<uint64_t>(v.asInt()));
  case ValueKind::Enum: return mix(static_cast<size_t>(v.enumId()) + 77, static_cast<size_t>(v.enumMember()));
  case ValueKind::Str: return std::hash<std::string>()(v.as<StrObj>().s);
  case ValueKind::Tuple:
  case ValueKind::List: {
    auto &items = v.as<ListObj>().items;
    return hashTuple(items.data(), items.size());
  }
  case ValueKind::Object: {
    auto &o = v.as<DslObj>();
    if (auto *c = std::get_if<ir::Chunk>(&o.handle))
      return mix(mix(mix(static_cast<size_t>(c->rank), static_cast<size_t>(c->buffer)), static_cast<size_t>(c->index)),
                 static_cast<size_t>(c->size));
    return std::hash<const void *>()(v.obj());
  }
  default: return std::hash<const void *>()(v.obj());
  }
}

bool ValueEq::operator()(const Value &a, const Value &b) const { return equals(a, b); }

bool equals(const Value &a, const Value &b) {
  auto numeric = [](const Value &v) { return v.kind() == ValueKind::Int || v.kind() == ValueKind::Bool; };
  if (numeric(a) && numeric(b))
    return a.asInt() == b.asInt();
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case ValueKind::None: return true;
  case ValueKind::U64: return a.asU64() == b.asU64();
  case ValueKind::Enum: return a.enumId() == b.enumId() && a.enumMember() == b.enumMember();
  case ValueKind::Str: return a.as<StrObj>().s == b.as<StrObj>().s;
  case ValueKind::List:
  case ValueKind::Tuple: {
    auto &x = a.as<ListObj>().items, &y = b.as<ListObj>().items;
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!equals(x[i], y[i]))
        return false;
    return true;
  }
  case ValueKind::Range: {
    auto &x = a.as<RangeObj>(), &y = b.as<RangeObj>();
    int64_t n = x.length();
    return n == y.length() && (n == 0 || (x.start == y.start && (n == 1 || x.step == y.step)));
  }
  case ValueKind::Map: {
    auto &x = a.as<MapObj>(), &y = b.as<MapObj>();
    if (x.entries.size() != y.entries.size())
      return false;
    for (auto &kv : x.entries) {
      Value *o = y.find(kv.first);
      if (!o || !equals(kv.second, *o))
        return false;
    }
    return true;
  }
  case ValueKind::Object: {
    auto &x = a.as<DslObj>(), &y = b.as<DslObj>();
    auto *c1 = std::get_if<ir::Chunk>(&x.handle);
    auto *c2 = std::get_if<ir::Chunk>(&y.handle);
    if (c1 && c2)
      return *c1 == *c2;
    return a.obj() == b.obj();
  }
  default: return false;
  }
}

size_t hashTuple(const Value *items, size_t n) {
  size_t h = 0x7a;
  ValueHash hv;
  for (size_t i = 0; i < n; ++i)
    h = mix(h, hv(items[i]));
  return h;
}

namespace {
/// A tuple of 1..3 ints (or bools, which compare equal to ints) in [0, 2**20) as
/// (n << 62 | v0 << 40 | v1 << 20 | v2); 0 for every other key. Two packable keys are equal
/// exactly when their packed forms are, and no unpackable key equals a packable one.
uint64_t packKey(const Value *items, size_t n) {
  if (n == 0 || n > 3)
    return 0;
  uint64_t p = uint64_t(n) << 62;
  for (size_t i = 0; i < n; ++i) {
    const Value &v = items[i];
    if (v.kind() != ValueKind::Int && v.kind() != ValueKind::Bool)
      return 0;
    int64_t x = v.asInt();
    if (x < 0 || x >= (int64_t(1) << 20))
      return 0;
    p |= uint64_t(x) << (40 - 20 * i);
  }
  return p;
}
uint64_t packKey(const Value &k) {
  if (k.kind() != ValueKind::Tuple)
    return 0;
  auto &items = k.as<ListObj>().items;
  return packKey(items.data(), items.size());
}
} // namespace

Value *MapObj::findPacked(uint64_t packed, size_t h) {
  if (next_ < packed_.size() && packed_[next_] == packed)
    return &entries[next_++].second;
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot &s = slots_[i];
    if (s.entry == 0)
      return nullptr;
    if (s.packed == packed) {
      next_ = s.entry;
      return &entries[s.entry - 1].second;
    }
  }
}

Value *MapObj::findHashed(const Value &k, size_t h) {
  if (slots_.empty())
    return nullptr;
  if (uint64_t packed = packKey(k))
    return findPacked(packed, h);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot &s = slots_[i];
    if (s.entry == 0)
      return nullptr;
    if (s.hash == uint32_t(h) && hashes_[s.entry - 1] == h && equals(entries[s.entry - 1].first, k))
      return &entries[s.entry - 1].second;
  }
}

Value *MapObj::findTuple(const Value *items, size_t n) {
  if (slots_.empty())
    return nullptr;
  uint64_t packed = packKey(items, n);
  if (packed && next_ < packed_.size() && packed_[next_] == packed) // before hashing (findPacked)
    return &entries[next_++].second;
  size_t h = hashTuple(items, n);
  if (packed)
    return findPacked(packed, h);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot &s = slots_[i];
    if (s.entry == 0)
      return nullptr;
    if (s.hash != uint32_t(h) || hashes_[s.entry - 1] != h)
      continue;
    const Value &key = entries[s.entry - 1].first;
    if (key.kind() != ValueKind::Tuple)
      continue;
    auto &ki = key.as<ListObj>().items;
    if (ki.size() != n)
      continue;
    bool same = true;
    for (size_t j = 0; j < n && same; ++j)
      same = equals(ki[j], items[j]);
    if (same)
      return &entries[s.entry - 1].second;
  }
}

void MapObj::place(uint32_t entry) {
  size_t h = hashes_[entry - 1];
  size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].entry != 0)
    i = (i + 1) & mask;
  slots_[i] = Slot{entry, uint32_t(h), packed_[entry - 1]};
}

void MapObj::grow() {
  size_t cap = slots_.empty() ? 16 : slots_.size() * 2;
  slots_.assign(cap, Slot{0, 0, 0});
  for (size_t e = 0; e < entries.size(); ++e)
    place(static_cast<uint32_t>(e + 1));
}

void MapObj::set(const Value &k, Value v) {
  size_t h = ValueHash()(k);
  if (Value *old = findHashed(k, h)) {
    *old = std::move(v);
    return;
  }
  entries.emplace_back(k, std::move(v));
  hashes_.push_back(h);
  packed_.push_back(packKey(k));
  if ((entries.size()) * 2 > slots_.size()) {
    grow(); // places the new entry too
    return;
  }
  place(static_cast<uint32_t>(entries.size()));
}

std::string typeName(const Value &v) {
  switch (v.kind()) {
  case ValueKind::None: return "none";
  case ValueKind::Bool: return "bool";
  case ValueKind::Int:
  case ValueKind::U64: return "int";
  case ValueKind::Enum: return builtins().enumInfo(v.enumId()).name;
  case ValueKind::Str: return "str";
  case ValueKind::List: return "list";
  case ValueKind::Tuple: return "tuple";
  case ValueKind::Map: return "map";
  case ValueKind::Range: return "range";
  case ValueKind::Object: return builtins().cls(v.as<DslObj>().cls).name;
  }
  return "?";
}

static const char *bufferName(ir::BufferType b) {
  switch (b) {
  case ir::BufferType::Input: return "input";
  case ir::BufferType::Output: return "output";
  default: return "scratch";
  }
}

std::string toString(const Value &v, bool repr) {
  switch (v.kind()) {
  case ValueKind::None: return "none";
  case ValueKind::Bool: return v.asBool() ? "true" : "false";
  case ValueKind::Int: return std::to_string(v.asInt());
  case ValueKind::U64: return std::to_string(v.asU64());
  case ValueKind::Enum: {
    auto &e = builtins().enumInfo(v.enumId());
    for (auto &m : e.members)
      if (m.second == v.enumMember())
        return e.name + "." + m.first;
    return e.name + "." + std::to_string(v.enumMember());
  }
  case ValueKind::Str: return repr ? "\"" + v.as<StrObj>().s + "\"" : v.as<StrObj>().s;
  case ValueKind::List:
  case ValueKind::Tuple: {
    auto &items = v.as<ListObj>().items;
    bool tuple = v.kind() == ValueKind::Tuple;
    std::string s = tuple ? "(" : "[";
    for (size_t i = 0; i < items.size(); ++i)
      s += (i ? ", " : "") + toString(items[i], true);
    if (tuple && items.size() == 1)
      s += ",";
    return s + (tuple ? ")" : "]");
  }
  case ValueKind::Map: {
    std::string s = "{";
    bool first = true;
    for (auto &kv : v.as<MapObj>().entries) {
      s += (first ? "" : ", ") + toString(kv.first, true) + ": " + toString(kv.second, true);
      first = false;
    }
    return s + "}";
  }
  case ValueKind::Range: {
    auto &r = v.as<RangeObj>();
    return "range(" + std::to_string(r.start) + ", " + std::to_string(r.stop) +
           (r.step != 1 ? ", " + std::to_string(r.step) : "") + ")";
  }
  case ValueKind::Object: {
    auto &o = v.as<DslObj>();
    if (auto *c = std::get_if<ir::Chunk>(&o.handle))
      return "Chunk(rank=" + std::to_string(c->rank) + ", buffer=" + bufferName(c->buffer) +
             ", index=" + std::to_string(c->index) + ", size=" + std::to_string(c->size) + ")";
    if (auto *r = std::get_if<ir::Rank>(&o.handle))
      return "Rank(" + std::to_string(r->rank()) + ")";
    if (auto *b = std::get_if<ir::Buffer>(&o.handle))
      return std::string("Buffer(rank=") + std::to_string(b->rank) + ", " + bufferName(b->type) +
             ", offset=" + std::to_string(b->offset) + ", size=" + std::to_string(b->length()) + ")";
    if (auto *c = std::get_if<CollectiveBox>(&o.handle))
      return builtins().cls(o.cls).name + "(" + std::to_string((*c)->numRanks) + ")";
    if (auto *m = std::get_if<ir::MemoryChannel>(&o.handle))
      return "MemoryChannel(dst_rank=" + std::to_string(m->dstRank()) + ", src_rank=" + std::to_string(m->srcRank()) + ")";
    if (auto *m = std::get_if<ir::PortChannel>(&o.handle))
      return "PortChannel(dst_rank=" + std::to_string(m->dstRank()) + ", src_rank=" + std::to_string(m->srcRank()) + ")";
    return builtins().cls(o.cls).name + "(...)";
  }
  }
  return "?";
}

} // namespace msccl::elab
