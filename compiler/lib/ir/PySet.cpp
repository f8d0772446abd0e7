//===- PySet.cpp - CPython 3.11 set-table emulation for small non-negative ints ---------===//
#include "msccl/ir/PySet.h"

#include <algorithm>

namespace msccl::ir {

namespace {
constexpr size_t kLinearProbes = 9;
constexpr unsigned kPerturbShift = 5;
} // namespace

PySet &PySet::operator=(const PySet &o) {
  if (this == &o) return *this;
  used_ = o.used_;
  if (o.size_ > kInline) {
    if (size_ != o.size_) heap_.reset(new uint32_t[o.size_]);
    std::copy(o.heap_.get(), o.heap_.get() + o.size_, heap_.get());
  } else {
    heap_.reset();
    std::copy(o.inline_, o.inline_ + kInline, inline_);
  }
  size_ = o.size_;
  return *this;
}

PySet &PySet::operator=(PySet &&o) noexcept {
  if (this == &o) return *this;
  used_ = o.used_;
  size_ = o.size_;
  heap_ = std::move(o.heap_);
  std::copy(o.inline_, o.inline_ + kInline, inline_);
  o.used_ = 0;
  o.size_ = 0;
  return *this;
}

void PySet::allocate(size_t size) {
  size_ = uint32_t(size);
  if (size > kInline) heap_.reset(new uint32_t[size]);
  else heap_.reset();
  std::fill(data(), data() + size, kEmpty);
}

// set_insert_clean: first empty slot of the probe sequence (no duplicates possible).
void PySet::insertClean(uint32_t *table, size_t size, uint32_t key) {
  size_t mask = size - 1;
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
  uint32_t small[kInline];
  std::unique_ptr<uint32_t[]> big;
  const size_t oldSize = size_;
  const uint32_t *old = small;
  if (size_ > kInline) {
    big = std::move(heap_);
    old = big.get();
  } else {
    std::copy(inline_, inline_ + kInline, small);
  }
  allocate(newSize);
  for (size_t i = 0; i < oldSize; ++i)
    if (old[i] != kEmpty) insertClean(data(), size_, old[i]);
}

// set_add_entry (no dummies: fill == used).
void PySet::insert(uint32_t key) {
  materialize();
  uint32_t *t = data();
  size_t mask = size_ - 1;
  size_t perturb = key;
  size_t i = key & mask;
  uint32_t *slot = nullptr;
  while (!slot) {
    size_t probes = (i + kLinearProbes <= mask) ? kLinearProbes : 0;
    for (size_t j = 0; j <= probes; ++j) {
      uint32_t v = t[i + j];
      if (v == key) return;
      if (v == kEmpty) { slot = &t[i + j]; break; }
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
  if ((used_ + other.used_) * 5 >= (size_ - 1) * 3) resize((used_ + other.used_) * 2);
  const uint32_t *o = other.data();
  const size_t osize = other.tableSize();
  if (used_ == 0 && size_ == osize) {
    std::copy(o, o + osize, data());
    used_ = other.used_;
    return;
  }
  if (used_ == 0) {
    for (size_t i = 0; i < osize; ++i)
      if (o[i] != kEmpty) insertClean(data(), size_, o[i]);
    used_ = other.used_;
    return;
  }
  for (size_t i = 0; i < osize; ++i)
    if (o[i] != kEmpty) insert(o[i]);
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

namespace {
/// The table size of merge(empty, s) for a set s of `used` > 0 elements.
size_t emptyMergeSize(size_t used) {
  if (used * 5 < 7 * 3) return 8;
  size_t size = 8;
  while (size <= used * 2) size <<= 1;
  return size;
}
} // namespace

void PySet::unionWith(const PySet &other) {
  // unionOf = merge(empty, merge(merge(empty, this), other)). merge(empty, x) copies x slot by
  // slot when it keeps x's table size, so both copies are identities exactly then.
  if (used_ == 0 ? size_ > kInline : emptyMergeSize(used_) != size_) {
    *this = unionOf(*this, other);
    return;
  }
  merge(other);
  if (used_ == 0) { // merge(empty, empty) leaves the table unmaterialized
    *this = PySet();
    return;
  }
  if (emptyMergeSize(used_) != size_) {
    PySet copy;
    copy.merge(*this);
    *this = std::move(copy);
  }
}

bool PySet::contains(uint32_t key) const {
  if (used_ == 0) return false;
  // Same probe sequence as insert; no deletions, so the first empty slot ends the search.
  const uint32_t *t = data();
  size_t mask = size_ - 1;
  size_t perturb = key;
  size_t i = key & mask;
  while (true) {
    size_t probes = (i + kLinearProbes <= mask) ? kLinearProbes : 0;
    for (size_t j = 0; j <= probes; ++j) {
      uint32_t v = t[i + j];
      if (v == key) return true;
      if (v == kEmpty) return false;
    }
    perturb >>= kPerturbShift;
    i = (i * 5 + 1 + perturb) & mask;
  }
}

bool PySet::intersects(const PySet &other) const {
  const PySet &small = used_ <= other.used_ ? *this : other;
  const PySet &big = used_ <= other.used_ ? other : *this;
  if (small.size_ == 0) return false;
  const uint32_t *t = small.data();
  for (size_t i = 0; i < small.size_; ++i)
    if (t[i] != kEmpty && big.contains(t[i])) return true;
  return false;
}

std::vector<uint32_t> PySet::toList() const {
  std::vector<uint32_t> out;
  out.reserve(used_);
  const uint32_t *t = data();
  for (size_t i = 0; i < size_; ++i)
    if (t[i] != kEmpty) out.push_back(t[i]);
  return out;
}

std::vector<int64_t> PySet::rawSlots() const {
  std::vector<int64_t> out(size_);
  for (size_t i = 0; i < size_; ++i) out[i] = rawSlot(i);
  return out;
}

PySet PySet::fromRaw(const std::vector<int64_t> &slots, size_t used) {
  PySet s;
  if (slots.empty()) return s;
  s.allocate(slots.size());
  uint32_t *t = s.data();
  for (size_t i = 0; i < slots.size(); ++i) t[i] = slots[i] < 0 ? kEmpty : uint32_t(slots[i]);
  s.used_ = uint32_t(used);
  return s;
}

} // namespace msccl::ir
