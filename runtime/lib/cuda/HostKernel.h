//===- HostKernel.h - The interpreter kernel on host threads ----------------------------===//
//
// HostKernel.cpp compiles Kernel.cu (the same source nvcc builds) as C++ against the host
// primitives of DevicePrimitives.cuh and runs a launch the way a GPU does: every threadblock
// is a group of host threads, all blocks of the launch run at once (they wait on each other),
// thread t of block b sees threadIdx.x = t, blockIdx.x = b, blockDim.x = threads, and
// __syncthreads is a barrier of the block's threads.
// HostKernelRunner keeps its threads between launches (a launch of B blocks of T threads needs
// B*T of them; more are started when a launch needs more). One runner serves one stream: the
// launches of one stream run one after the other, those of several streams at once.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"

#include <cstddef>
#include <memory>

namespace msccl::cuda::detail {

class HostKernelRunner {
public:
  HostKernelRunner();
  ~HostKernelRunner(); ///< joins the threads (no launch may be running)
  HostKernelRunner(const HostKernelRunner &) = delete;
  HostKernelRunner &operator=(const HostKernelRunner &) = delete;

  /// Runs `numBlocks` blocks of `threads` host threads over `launch` and returns when every
  /// thread has finished. Throws runtime::ExecutionError(Backend) when the threads cannot be
  /// started (the message names how many were asked for).
  void run(const DevLaunch &launch, unsigned numBlocks, unsigned threads);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The host changed `word` (a counter or flag a kernel thread may be parked on): wakes the
/// host threads waiting for it.
void wakeHostWaiters(const void *word);
/// From now on waits of this process park on process-shared futexes and every store a kernel
/// may wait for wakes them without consulting this process's waiter counts, so that writers in
/// other processes (shared memory objects, HostDeviceApi::allocateShareable) wake them too.
void enableCrossProcessWakeups();

/// Copies `bytes` from `src` to `dst`, each 16-byte unit at 16-byte aligned addresses as one
/// atomic unit (the host's copy engine: a packet copied by the port proxy never tears), and
/// wakes kernel threads parked on the packets' flag words.
void hostCopyUnits(void *dst, const void *src, size_t bytes);

} // namespace msccl::cuda::detail
