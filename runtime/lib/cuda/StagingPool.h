//===- StagingPool.h - Device staging buffers reused across execute calls ---------------===//
//
// Consumes requests for staging memory (a GPU and a byte count) made during one execute call;
// produces buffers from an allocator given at construction, reusing the buffers of earlier
// calls. In one-rank-per-GPU mode the executor stages user buffers that live on another GPU;
// allocating them per call and freeing them only with the context ran the GPUs out of memory
// after enough calls. Guarantees: a buffer is handed out at most once per call; after
// endCall() the pool holds only the buffers that call used (so repeated calls of one shape
// allocate nothing, and a change of shape does not keep the old buffers); every buffer is
// freed exactly once (endCall, clear or the destructor). Plain C++ (the allocator is injected),
// so host tests check the reuse.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace msccl::cuda::detail {

class StagingPool {
public:
  /// `alloc(device, bytes)` returns memory or throws; `release(device, ptr)` frees it.
  using AllocFn = std::function<void *(int device, size_t bytes)>;
  using FreeFn = std::function<void(int device, void *ptr)>;

  StagingPool(AllocFn alloc, FreeFn release) : alloc_(std::move(alloc)), free_(std::move(release)) {}
  ~StagingPool() { clear(); }
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;

  /// Starts a call: every held buffer becomes available again.
  void beginCall();
  /// A buffer of at least `bytes` bytes on `device`, not handed out since beginCall(): the
  /// smallest such held buffer, else a new allocation (alloc's exceptions propagate).
  void *acquire(int device, size_t bytes);
  /// Ends a call: frees the held buffers this call did not use.
  void endCall();
  /// Frees every buffer.
  void clear();

  size_t heldBuffers() const { return blocks_.size(); }
  size_t heldBytes() const;

private:
  struct Block {
    int device;
    void *ptr;
    size_t bytes;
    bool used;
  };
  AllocFn alloc_;
  FreeFn free_;
  std::vector<Block> blocks_;
};

} // namespace msccl::cuda::detail
