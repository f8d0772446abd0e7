//===- StagingPool.cpp - Device staging buffers reused across execute calls -------------===//
//
// See StagingPool.h.
//
//===------------------------------------------------------------------------------------===//
#include "StagingPool.h"

namespace msccl::cuda::detail {

void StagingPool::beginCall() {
  for (Block &b : blocks_) b.used = false;
}

void *StagingPool::acquire(int device, size_t bytes) {
  Block *best = nullptr;
  for (Block &b : blocks_)
    if (!b.used && b.device == device && b.bytes >= bytes && (!best || b.bytes < best->bytes)) best = &b;
  if (best) {
    best->used = true;
    return best->ptr;
  }
  void *p = alloc_(device, bytes);
  blocks_.push_back({device, p, bytes, true});
  return p;
}

void StagingPool::endCall() {
  std::vector<Block> keep;
  for (const Block &b : blocks_) {
    if (b.used) keep.push_back(b);
    else free_(b.device, b.ptr);
  }
  blocks_.swap(keep);
}

void StagingPool::clear() {
  for (const Block &b : blocks_) free_(b.device, b.ptr);
  blocks_.clear();
}

size_t StagingPool::heldBytes() const {
  size_t n = 0;
  for (const Block &b : blocks_) n += b.bytes;
  return n;
}

} // namespace msccl::cuda::detail
