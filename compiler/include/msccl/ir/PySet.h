//===- PySet.h - A set of small ints that iterates in CPython's set order ---------------===//
//
// The Python DSL keeps the channel ids of signal / wait / flush ops in a Python `set` and writes
// them in its iteration order, which is not sorted once an id >= 8 is involved (fusing channel 9
// with channel 1 prints [9, 1]). PySet emulates CPython 3.11's open-addressing set table exactly
// for non-negative int keys (hash(k) == k): the probe sequence (linear probes of 9, perturbation
// by 5 bits), the resize rule (fill*5 >= mask*3 -> resize to used*4, or used*2 above 50000) and
// set_merge's fast paths. No deletions ever happen. See spec dsl#6.8. Tables of 8 slots
// (sets of up to 4 ids, the common case) are stored inline, larger ones on the heap.
//
// Mirrors: CPython Objects/setobject.c (set_add_entry, set_insert_clean, set_table_resize,
// set_merge) as used by internal/operations.py (SignalOperation, WaitOperation, FlushOperation).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace msccl::ir {

class PySet {
public:
  /// An empty set (logically a table of 8 slots, as `set()`; materialized on first insert).
  PySet() = default;
  PySet(const PySet &o) { *this = o; }
  PySet(PySet &&o) noexcept { *this = std::move(o); }
  PySet &operator=(const PySet &o);
  PySet &operator=(PySet &&o) noexcept;
  ~PySet() = default;

  /// `set([k])`.
  static PySet single(uint32_t key);
  /// `set(list)`: set_add_entry for each key in order (used by copy.deepcopy, which rebuilds a
  /// set from its iteration order).
  static PySet fromList(const std::vector<uint32_t> &keys);
  /// `set(a | b)`: merge(merge(empty, a), b), then copied once more through merge(empty, .).
  static PySet unionOf(const PySet &a, const PySet &b);

  /// `*this = unionOf(*this, other)`, the same table, built in place (no copies) whenever the
  /// two copies through an empty set would not change the table size (almost always).
  void unionWith(const PySet &other);

  /// set_add_entry.
  void insert(uint32_t key);
  /// set_merge(this, other).
  void merge(const PySet &other);
  bool contains(uint32_t key) const;
  /// Whether the sets share an element (`a & b` non-empty).
  bool intersects(const PySet &other) const;
  size_t size() const { return used_; }
  bool empty() const { return used_ == 0; }
  /// Iteration order (occupied slots in slot order).
  std::vector<uint32_t> toList() const;

  /// The raw table (empty when never materialized; -1 = empty slot), for PackedOps, which
  /// stores and restores a set slot by slot so that its iteration order is kept exactly.
  std::vector<int64_t> rawSlots() const;
  /// Number of slots of the raw table (0 when never materialized) and one slot (-1 = empty).
  size_t rawTableSize() const { return size_; }
  int64_t rawSlot(size_t i) const { return data()[i] == kEmpty ? -1 : int64_t(data()[i]); }
  /// A set with exactly this table and element count (the inverse of rawSlots()).
  static PySet fromRaw(const std::vector<int64_t> &slots, size_t used);

private:
  /// Keys are channel ids, far below this.
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static constexpr uint32_t kInline = 8;
  /// Tables of 8 slots (the common case) live inline; larger ones on the heap.
  uint32_t *data() { return size_ > kInline ? heap_.get() : inline_; }
  const uint32_t *data() const { return size_ > kInline ? heap_.get() : inline_; }
  void resize(size_t minUsed);
  static void insertClean(uint32_t *table, size_t size, uint32_t key);
  size_t tableSize() const { return size_ == 0 ? kInline : size_; }
  void materialize() {
    if (size_ == 0) {
      size_ = kInline;
      for (auto &k : inline_) k = kEmpty;
    }
  }
  /// Installs an empty table of `size` slots.
  void allocate(size_t size);

  uint32_t used_ = 0;
  uint32_t size_ = 0; ///< 0: not materialized
  uint32_t inline_[kInline] = {};
  std::unique_ptr<uint32_t[]> heap_;
};

} // namespace msccl::ir
