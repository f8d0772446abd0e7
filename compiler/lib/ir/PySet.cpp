//===- PySet.cpp - CPython 3.11 set-table emulation for small non-negative ints ---------===//
#include "msccl/ir/PySet.h"

namespace msccl::ir {

namespace {
constexpr size_t kLinearProbes = 9;
constexpr unsigned kPerturbShift = 5;
} // namespace

// set_insert_clean: first empty slot of the probe sequence (no duplicates possible).
void PySet::insertClean(std::vector<int64_t> &table, uint32_t key) {
  size_t mask = table.size() - 1;
  size_t perturb = key;
  size_t i = key & mask;
  while (true) {
    if (table[i] == kEmpty) { table[i] = key; return; }
    if (i + kLinearProbes <= mask) {
      for (size_t j = 1; j <= kLinearProbes; ++j)
        if (table[i + j] == kEmpty) { table[i + j] = key; return; }
    }
    perturb >>= kPerturbShift;
    i = (i * 5 + 1 + perturb) & mask;
  }
}

// set_table_resize: smallest power of two >= 8 that is > minUsed; old keys in old slot order.
void PySet::resize(size_t minUsed) {
  size_t newSize = 8;
  while (newSize <= minUsed) newSize <<= 1;
  std::vector<int64_t> table(newSize, kEmpty);
  for (int64_t k : slots_)
    if (k != kEmpty) insertClean(table, uint32_t(k));
  slots_.swap(table);
}

// set_add_entry (no dummies: fill == used).
void PySet::insert(uint32_t key) {
  materialize();
  size_t mask = slots_.size() - 1;
  size_t perturb = key;
  size_t i = key & mask;
  int64_t *slot = nullptr;
  while (!slot) {
    size_t probes = (i + kLinearProbes <= mask) ? kLinearProbes : 0;
    for (size_t j = 0; j <= probes; ++j) {
      int64_t v = slots_[i + j];
      if (v == int64_t(key)) return;
      if (v == kEmpty) { slot = &slots_[i + j]; break; }
    }
    if (slot) break;
    perturb >>= kPerturbShift;
    i = (i * 5 + 1 + perturb) & mask;
  }
  *slot = key;
  ++used_;
  if (used_ * 5 < mask * 3) return;
  resize(used_ > 50000 ? used_ * 2 : used_ * 4);
}

// set_merge.
void PySet::merge(const PySet &other) {
  if (&other == this || other.used_ == 0) return;
  materialize();
  if ((used_ + other.used_) * 5 >= (slots_.size() - 1) * 3) resize((used_ + other.used_) * 2);
  if (used_ == 0 && slots_.size() == other.tableSize()) {
    slots_ = other.slots_;
    used_ = other.used_;
    return;
  }
  if (used_ == 0) {
    for (int64_t k : other.slots_)
      if (k != kEmpty) insertClean(slots_, uint32_t(k));
    used_ = other.used_;
    return;
  }
  for (int64_t k : other.slots_)
    if (k != kEmpty) insert(uint32_t(k));
}

PySet PySet::single(uint32_t key) {
  PySet s;
  s.insert(key);
  return s;
}

PySet PySet::fromList(const std::vector<uint32_t> &keys) {
  PySet s;
  for (uint32_t k : keys) s.insert(k);
  return s;
}

PySet PySet::unionOf(const PySet &a, const PySet &b) {
  PySet r;
  r.merge(a);
  r.merge(b);
  PySet copy;
  copy.merge(r);
  return copy;
}

bool PySet::contains(uint32_t key) const {
  if (used_ == 0) return false;
  // Same probe sequence as insert; no deletions, so the first empty slot ends the search.
  size_t mask = slots_.size() - 1;
  size_t perturb = key;
  size_t i = key & mask;
  while (true) {
    size_t probes = (i + kLinearProbes <= mask) ? kLinearProbes : 0;
    for (size_t j = 0; j <= probes; ++j) {
      int64_t v = slots_[i + j];
      if (v == int64_t(key)) return true;
      if (v == kEmpty) return false;
    }
    perturb >>= kPerturbShift;
    i = (i * 5 + 1 + perturb) & mask;
  }
}

bool PySet::intersects(const PySet &other) const {
  const PySet &small = used_ <= other.used_ ? *this : other;
  const PySet &big = used_ <= other.used_ ? other : *this;
  for (int64_t k : small.slots_)
    if (k != kEmpty && big.contains(uint32_t(k))) return true;
  return false;
}

std::vector<uint32_t> PySet::toList() const {
  std::vector<uint32_t> out;
  out.reserve(used_);
  for (int64_t k : slots_)
    if (k != kEmpty) out.push_back(uint32_t(k));
  return out;
}

} // namespace msccl::ir
