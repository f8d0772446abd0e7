//===- Value.h - Run-time values of the elaborator --------------------------------------===//
//
// A Value is 16 bytes: a kind tag plus an int64 / uint64 or a pointer to a reference-counted
// heap object (strings, lists, tuples, maps, ranges and DSL handles). Lists and maps have
// reference semantics (as in Python); tuples and strings are immutable. Ints are 64-bit signed;
// literals above INT64_MAX (up to 2**64-1, e.g. max_message_size) are kind U64, which may be
// stored, passed, compared and printed but not used in arithmetic.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/elab/Builtins.h"
#include "msccl/ir/Dsl.h"

#include <llvm/ADT/DenseMap.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace msccl::elab {

enum class ValueKind : uint8_t { None, Bool, Int, U64, Enum, Str, List, Tuple, Map, Range, Object };

struct HeapObj {
  uint32_t refs = 0;
  virtual ~HeapObj() = default;
};

/// A per-thread free list of blocks of `Size` bytes: the elaborator creates and drops DSL
/// objects, tuples and lists by the hundred thousand, and recycling their blocks is much cheaper
/// than malloc/free. Blocks are drained back to the system when the thread ends.
template <size_t Size> class BlockPool {
  struct Node { Node *next; };
  static_assert(Size >= sizeof(Node), "block too small");
  static inline thread_local Node *head_ = nullptr;
  static inline thread_local bool dead_ = false;
  struct Drain {
    ~Drain() {
      dead_ = true;
      while (Node *n = head_) {
        head_ = n->next;
        ::operator delete(n);
      }
    }
  };
  static inline thread_local Drain drain_;

public:
  static void *allocate() {
    (void)&drain_; // registers the drain of this thread
    if (Node *n = head_) {
      head_ = n->next;
      return n;
    }
    return ::operator new(Size);
  }
  static void release(void *p) {
    if (dead_) {
      ::operator delete(p);
      return;
    }
    auto *n = static_cast<Node *>(p);
    n->next = head_;
    head_ = n;
  }
};

/// operator new/delete of a HeapObj type T through BlockPool<sizeof(T)>.
#define MSCCL_POOLED(T)                                                                                        \
  static void *operator new(size_t size) {                                                                    \
    return size == sizeof(T) ? BlockPool<sizeof(T)>::allocate() : ::operator new(size);                        \
  }                                                                                                           \
  static void operator delete(void *p, size_t size) {                                                         \
    if (size == sizeof(T)) BlockPool<sizeof(T)>::release(p);                                                   \
    else ::operator delete(p);                                                                                \
  }

class Value {
public:
  Value() : kind_(ValueKind::None), aux_(0), i_(0) {}
  static Value none() { return Value(); }
  static Value boolean(bool b) { Value v; v.kind_ = ValueKind::Bool; v.i_ = b; return v; }
  static Value integer(int64_t i) { Value v; v.kind_ = ValueKind::Int; v.i_ = i; return v; }
  static Value u64(uint64_t u) { Value v; v.kind_ = ValueKind::U64; v.i_ = static_cast<int64_t>(u); return v; }
  static Value enumMember(EnumId e, int64_t m) { Value v; v.kind_ = ValueKind::Enum; v.aux_ = static_cast<uint8_t>(e); v.i_ = m; return v; }
  static Value heap(ValueKind k, HeapObj *p) { Value v; v.kind_ = k; v.p_ = p; ++p->refs; return v; }

  Value(const Value &o) : kind_(o.kind_), aux_(o.aux_), i_(o.i_) { retain(); }
  Value(Value &&o) noexcept : kind_(o.kind_), aux_(o.aux_), i_(o.i_) { o.kind_ = ValueKind::None; }
  Value &operator=(const Value &o) {
    if (this != &o) {
      Value tmp(o);
      swap(tmp);
    }
    return *this;
  }
  Value &operator=(Value &&o) noexcept {
    if (this != &o) {
      release();
      kind_ = o.kind_; aux_ = o.aux_; i_ = o.i_;
      o.kind_ = ValueKind::None;
    }
    return *this;
  }
  ~Value() { release(); }
  void swap(Value &o) { std::swap(kind_, o.kind_); std::swap(aux_, o.aux_); std::swap(i_, o.i_); }

  ValueKind kind() const { return kind_; }
  bool isNone() const { return kind_ == ValueKind::None; }
  bool isInt() const { return kind_ == ValueKind::Int; }
  bool isBool() const { return kind_ == ValueKind::Bool; }
  int64_t asInt() const { return i_; }
  uint64_t asU64() const { return static_cast<uint64_t>(i_); }
  bool asBool() const { return i_ != 0; }
  EnumId enumId() const { return static_cast<EnumId>(aux_); }
  int64_t enumMember() const { return i_; }
  HeapObj *obj() const { return p_; }
  template <typename T> T &as() const { return *static_cast<T *>(p_); }
  bool isHeap() const { return kind_ >= ValueKind::Str; }

private:
  void retain() { if (isHeap()) ++p_->refs; }
  void release() {
    if (isHeap() && --p_->refs == 0)
      delete p_;
  }
  ValueKind kind_;
  uint8_t aux_;
  union {
    int64_t i_;
    HeapObj *p_;
  };
};

struct StrObj : HeapObj { std::string s; explicit StrObj(std::string v) : s(std::move(v)) {} };
struct ListObj : HeapObj { // List and Tuple
  std::vector<Value> items;
  MSCCL_POOLED(ListObj)
};
struct RangeObj : HeapObj {
  int64_t start, stop, step;
  RangeObj(int64_t a, int64_t b, int64_t c) : start(a), stop(b), step(c) {}
  int64_t length() const;
  int64_t at(int64_t i) const { return start + i * step; }
};

struct ValueHash { size_t operator()(const Value &v) const; };
struct ValueEq { bool operator()(const Value &a, const Value &b) const; };

/// Hash of a tuple with these elements (equal to ValueHash of the tuple itself).
size_t hashTuple(const Value *items, size_t n);

/// A map in insertion order with an open-addressing index (linear probing over a flat array
/// of slots, hashes cached per entry), so a lookup touches few cache lines. A slot also holds
/// its key packed into 64 bits when the key is a tuple of 1 to 3 ints in [0, 2**20) (the
/// common `channels[peer, gpu, tb]`), so such lookups compare slots without reading the key.
/// Programs mostly read such maps in the order they filled them, so a packed lookup first tries
/// the entry after the last one found (sequential memory, no probe).
struct MapObj : HeapObj {
  std::vector<std::pair<Value, Value>> entries; ///< insertion order
  Value *find(const Value &k) { return findHashed(k, ValueHash()(k)); }
  /// m[a, b, ...] without building the tuple key.
  Value *findTuple(const Value *items, size_t n);
  void set(const Value &k, Value v);

private:
  struct Slot {
    uint32_t entry;  ///< entry index + 1; 0 = empty
    uint32_t hash;   ///< low bits of the entry's hash
    uint64_t packed; ///< packKey() of the entry's key (0: not packable)
  };
  Value *findHashed(const Value &k, size_t h);
  Value *findPacked(uint64_t packed, size_t h);
  void grow();
  void place(uint32_t entry);
  std::vector<Slot> slots_;
  std::vector<size_t> hashes_;  ///< per entry
  std::vector<uint64_t> packed_; ///< per entry: packKey() of its key
  size_t next_ = 0;              ///< the entry after the last one a packed lookup found
};

/// `with LoopIterationContext(unit, num_chunks)`.
struct LoopContext {
  int64_t unit, numChunks;
};

/// A handle of a plugged-in style (Style.h): four words the style alone interprets (the
/// mscclpplang style: a ChunkRef's rank, buffer, index and size; a RankRef's rank).
struct StyleHandle {
  int64_t w[4] = {0, 0, 0, 0};
};

/// A collective handle, boxed: it is much larger than the other handles and rare, and the
/// variant below is as large as its largest member (programs make many channels and chunks).
using CollectiveBox = std::shared_ptr<const ir::Collective>;

/// A DSL object: the class from Builtins.def and the Dsl.h handle.
struct DslObj : HeapObj {
  ClassId cls;
  std::variant<CollectiveBox, ir::Rank, ir::Buffer, ir::Chunk, ir::MemoryChannel, ir::PortChannel,
               ir::SwitchChannel, ir::SwitchChannelRankView, ir::Semaphore, ir::ThreadBlockGroup, LoopContext,
               StyleHandle>
      handle;
  template <typename T> DslObj(ClassId c, T h) : cls(c), handle(std::move(h)) {}
  MSCCL_POOLED(DslObj)
};

Value makeStr(std::string s);
Value makeList(std::vector<Value> items = {});
Value makeTuple(std::vector<Value> items);
Value makeMap();
Value makeRange(int64_t start, int64_t stop, int64_t step);
template <typename T> Value makeDsl(ClassId c, T handle) {
  return Value::heap(ValueKind::Object, new DslObj(c, std::move(handle)));
}
inline Value makeDsl(ClassId c, ir::Collective handle) {
  return Value::heap(ValueKind::Object, new DslObj(c, std::make_shared<const ir::Collective>(std::move(handle))));
}

/// Python-style type name for messages: "int", "str", "list", "Chunk", "MemoryChannel", ...
std::string typeName(const Value &v);
/// Python-style text: 3, "a" (repr) / a (str), [0, 1], (1, 2), {1: 2}, SyncType.both, Chunk(...).
std::string toString(const Value &v, bool repr = false);
/// Python `==` (ints and bools compare by value, containers element-wise, DSL objects by identity
/// except Chunks, which compare by value).
bool equals(const Value &a, const Value &b);

} // namespace msccl::elab
