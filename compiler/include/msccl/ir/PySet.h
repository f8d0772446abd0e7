//===- PySet.h - A set of small ints that iterates in CPython's set order ---------------===//
//
// The Python DSL keeps the channel ids of signal / wait / flush ops in a Python `set` and writes
// them in its iteration order, which is not sorted once an id >= 8 is involved (fusing channel 9
// with channel 1 prints [9, 1]). PySet emulates CPython 3.11's open-addressing set table exactly
// for non-negative int keys (hash(k) == k): the probe sequence (linear probes of 9, perturbation
// by 5 bits), the resize rule (fill*5 >= mask*3 -> resize to used*4, or used*2 above 50000) and
// set_merge's fast paths. No deletions ever happen. See dsl-semantics.md §6.8.
//
// Mirrors: CPython Objects/setobject.c (set_add_entry, set_insert_clean, set_table_resize,
// set_merge) as used by internal/operations.py (SignalOperation, WaitOperation, FlushOperation).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace msccl::ir {

class PySet {
public:
  /// An empty set (logically a table of 8 slots, as `set()`; allocated on first insert).
  PySet() = default;
  /// `set([k])`.
  static PySet single(uint32_t key);
  /// `set(list)`: set_add_entry for each key in order (used by copy.deepcopy, which rebuilds a
  /// set from its iteration order).
  static PySet fromList(const std::vector<uint32_t> &keys);
  /// `set(a | b)`: merge(merge(empty, a), b), then copied once more through merge(empty, .).
  static PySet unionOf(const PySet &a, const PySet &b);

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

private:
  static constexpr int64_t kEmpty = -1;
  void resize(size_t minUsed);
  static void insertClean(std::vector<int64_t> &table, uint32_t key);
  size_t tableSize() const { return slots_.empty() ? 8 : slots_.size(); }
  void materialize() {
    if (slots_.empty()) slots_.assign(8, kEmpty);
  }
  std::vector<int64_t> slots_;
  size_t used_ = 0;
};

} // namespace msccl::ir
