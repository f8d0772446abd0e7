//===- HostKernel.cpp - Kernel.cu compiled for host threads -----------------------------===//
//
// See HostKernel.h. This translation unit is C++20 (std::atomic_ref, std::barrier): it
// includes Kernel.cu itself, so the host runs the interpreter nvcc compiles, not a copy.
// Threads are POSIX threads with small stacks (the interpreter's frames are shallow), parked
// on a condition variable between launches.
//
//===------------------------------------------------------------------------------------===//
#include "Kernel.cu"

#include "HostKernel.h"

#include "msccl/runtime/Executor.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#include <atomic>
#include <cstring>
#include <vector>

namespace msccl::cuda::dev {

namespace {
/// Waiters per hashed word (a cache line each).
struct alignas(64) ParkBucket {
  std::atomic<uint32_t> waiters{0};
};
ParkBucket gBuckets[1024];
ParkBucket &bucketOf(const void *word) { return gBuckets[(reinterpret_cast<uintptr_t>(word) >> 2) % 1024]; }
long futex(const void *word, int op, uint32_t value, const timespec *timeout) {
  return syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}
/// Set once shared memory objects exist in this process: the waiter of a word may be in
/// another process, whose counts this one cannot see, so every wake is a (shared) futex call.
std::atomic<bool> gCrossProcess{false};
} // namespace

// Writer: store; seq_cst fence; read the count. Waiter: count; seq_cst fence; the kernel
// compares the word. Either the writer sees the count (and wakes), or the waiter's fence comes
// after the writer's in the total order and the kernel reads the new value (no sleep); a wake
// that comes before the waiter sleeps is ordered before its compare by the futex bucket lock.
void wakeWord(const void *word) {
  ParkBucket &b = bucketOf(word);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (gCrossProcess.load(std::memory_order_relaxed)) futex(word, FUTEX_WAKE, INT32_MAX, nullptr);
  else if (b.waiters.load(std::memory_order_relaxed) != 0) futex(word, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr);
}

void parkWord(const void *word, uint32_t seen, uint64_t maxNs) {
  ParkBucket &b = bucketOf(word);
  b.waiters.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  timespec ts{(time_t)(maxNs / 1000000000ull), (long)(maxNs % 1000000000ull)};
  futex(word, gCrossProcess.load(std::memory_order_relaxed) ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, seen, &ts);
  b.waiters.fetch_sub(1, std::memory_order_relaxed);
}

} // namespace msccl::cuda::dev

namespace msccl::cuda::detail {

void wakeHostWaiters(const void *word) { dev::wakeWord(word); }
void enableCrossProcessWakeups() { dev::gCrossProcess.store(true); }

// Workers park on `generation` (an atomic wait, a futex: one wake-up call starts them all,
// with no lock to contend for). The launch parameters are written before the generation changes
// (release) and read after it (acquire), and only once every worker has acknowledged the previous
// launch (`acked`: participants after running, the others once they have seen the parameters),
// so no worker ever reads parameters while they are rewritten. A worker started for a launch
// waits for the next generation, never an earlier one. The last participant to finish wakes the
// launcher.
struct HostKernelRunner::Impl {
  std::atomic<uint64_t> generation{0};
  std::atomic<unsigned> remaining{0}, acked{0};
  std::atomic<bool> stop{false};
  // The current launch (written by run() only while no worker reads them; see above).
  DevLaunch launch;
  unsigned numBlocks = 0, threads = 0;
  std::atomic<unsigned> ackTarget{0}; ///< workers that acknowledge the current generation
  std::vector<std::unique_ptr<dev::HostBlock>> blocks;
  std::vector<pthread_t> workers;

  struct Arg {
    Impl *self;
    unsigned index;
    uint64_t seen; ///< the generation current when the worker was started
  };
  std::vector<std::unique_ptr<Arg>> args;

  static void *main(void *p) {
    Arg *a = static_cast<Arg *>(p);
    a->self->loop(a->index, a->seen);
    return nullptr;
  }

  void loop(unsigned index, uint64_t seen) {
    for (;;) {
      uint64_t g;
      while ((g = generation.load(std::memory_order_acquire)) == seen) generation.wait(seen, std::memory_order_acquire);
      seen = g;
      if (stop.load(std::memory_order_acquire)) return;
      const unsigned T = threads, b = index / T, t = index % T;
      const bool mine = index < numBlocks * T;
      if (mine) {
        dev::blockIdx.x = b;
        dev::threadIdx.x = t;
        dev::blockDim.x = T;
        dev::tlsBlock = blocks[b].get();
        dev::planKernel(launch);
        if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining.notify_all();
      }
      if (acked.fetch_add(1, std::memory_order_acq_rel) + 1 == ackTarget.load(std::memory_order_relaxed))
        acked.notify_all();
    }
  }

  void grow(unsigned n) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    while (workers.size() < n) {
      args.push_back(std::make_unique<Arg>(Arg{this, (unsigned)workers.size(), generation.load(std::memory_order_acquire)}));
      pthread_t th;
      int e = pthread_create(&th, &attr, &Impl::main, args.back().get());
      if (e != 0) {
        args.pop_back();
        pthread_attr_destroy(&attr);
        throw runtime::ExecutionError(runtime::ErrorKind::Backend,
                                      "host device: cannot start thread " + std::to_string(workers.size() + 1) + " of " +
                                          std::to_string(n) + " (" + std::strerror(e) + ")");
      }
      workers.push_back(th);
    }
    pthread_attr_destroy(&attr);
  }
};

HostKernelRunner::HostKernelRunner() : impl_(std::make_unique<Impl>()) {}

HostKernelRunner::~HostKernelRunner() {
  impl_->stop.store(true, std::memory_order_release);
  impl_->generation.fetch_add(1, std::memory_order_acq_rel);
  impl_->generation.notify_all();
  for (pthread_t th : impl_->workers) pthread_join(th, nullptr);
}

void HostKernelRunner::run(const DevLaunch &launch, unsigned numBlocks, unsigned threads) {
  if (numBlocks == 0 || threads == 0) return;
  Impl &I = *impl_;
  // Every worker has acknowledged the previous launch: its parameters are free to rewrite.
  unsigned a;
  while ((a = I.acked.load(std::memory_order_acquire)) != I.ackTarget.load(std::memory_order_relaxed))
    I.acked.wait(a, std::memory_order_acquire);
  I.grow(numBlocks * threads);
  if (I.blocks.size() != numBlocks || I.threads != threads) { // barriers are reused between launches
    I.blocks.clear();
    for (unsigned b = 0; b < numBlocks; ++b) I.blocks.push_back(std::make_unique<dev::HostBlock>(threads));
  }
  I.launch = launch;
  I.numBlocks = numBlocks;
  I.threads = threads;
  I.ackTarget.store((unsigned)I.workers.size(), std::memory_order_relaxed);
  I.acked.store(0, std::memory_order_relaxed);
  I.remaining.store(numBlocks * threads, std::memory_order_relaxed);
  I.generation.fetch_add(1, std::memory_order_acq_rel);
  I.generation.notify_all();
  unsigned left;
  while ((left = I.remaining.load(std::memory_order_acquire)) != 0) I.remaining.wait(left, std::memory_order_acquire);
}

void hostCopyUnits(void *dst, const void *src, size_t bytes) {
  if (((uintptr_t)dst | (uintptr_t)src | bytes) % 16 != 0) {
    std::memmove(dst, src, bytes);
    return;
  }
  auto *d = static_cast<dev::Packet128 *>(dst);
  auto *s = static_cast<const dev::Packet128 *>(src);
  for (size_t i = 0; i < bytes / 16; ++i) {
    dev::at(d + i).store(dev::at(s + i).load(std::memory_order_relaxed), std::memory_order_relaxed);
    // The flag words of an LL16 packet, or of two LL8 packets, a kernel may be parked on.
    dev::wakeWord(reinterpret_cast<char *>(d + i) + 4);
    dev::wakeWord(reinterpret_cast<char *>(d + i) + 12);
  }
}

} // namespace msccl::cuda::detail
