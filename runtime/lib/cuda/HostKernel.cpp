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

#include <pthread.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

namespace msccl::cuda::detail {

struct HostKernelRunner::Impl {
  std::mutex m;
  std::condition_variable start, done;
  uint64_t generation = 0;
  unsigned remaining = 0;
  bool stop = false;
  // The current launch (written under `m` before `generation` changes).
  DevLaunch launch;
  unsigned numBlocks = 0, threads = 0;
  std::vector<std::unique_ptr<dev::HostBlock>> blocks;
  std::vector<pthread_t> workers;

  struct Arg {
    Impl *self;
    unsigned index;
  };
  std::vector<std::unique_ptr<Arg>> args;

  static void *main(void *p) {
    Arg *a = static_cast<Arg *>(p);
    a->self->loop(a->index);
    return nullptr;
  }

  void loop(unsigned index) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> l(m);
      start.wait(l, [&] { return stop || generation != seen; });
      if (stop) return;
      seen = generation;
      if (index >= numBlocks * threads) continue; // not part of this launch
      const unsigned b = index / threads, t = index % threads;
      dev::HostBlock *block = blocks[b].get();
      const DevLaunch L = launch;
      const unsigned T = threads;
      l.unlock();
      dev::blockIdx.x = b;
      dev::threadIdx.x = t;
      dev::blockDim.x = T;
      dev::tlsBlock = block;
      dev::planKernel(L);
      l.lock();
      if (--remaining == 0) done.notify_all();
    }
  }

  void grow(unsigned n) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    while (workers.size() < n) {
      args.push_back(std::make_unique<Arg>(Arg{this, (unsigned)workers.size()}));
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
  {
    std::lock_guard<std::mutex> l(impl_->m);
    impl_->stop = true;
  }
  impl_->start.notify_all();
  for (pthread_t th : impl_->workers) pthread_join(th, nullptr);
}

void HostKernelRunner::run(const DevLaunch &launch, unsigned numBlocks, unsigned threads) {
  if (numBlocks == 0 || threads == 0) return;
  Impl &I = *impl_;
  I.grow(numBlocks * threads);
  std::unique_lock<std::mutex> l(I.m);
  I.blocks.clear();
  for (unsigned b = 0; b < numBlocks; ++b) I.blocks.push_back(std::make_unique<dev::HostBlock>(threads));
  I.launch = launch;
  I.numBlocks = numBlocks;
  I.threads = threads;
  I.remaining = numBlocks * threads;
  ++I.generation;
  I.start.notify_all();
  I.done.wait(l, [&] { return I.remaining == 0; });
}

void hostCopyUnits(void *dst, const void *src, size_t bytes) {
  if (((uintptr_t)dst | (uintptr_t)src | bytes) % 16 != 0) {
    std::memmove(dst, src, bytes);
    return;
  }
  auto *d = static_cast<dev::Packet128 *>(dst);
  auto *s = static_cast<const dev::Packet128 *>(src);
  for (size_t i = 0; i < bytes / 16; ++i)
    dev::at(d + i).store(dev::at(s + i).load(std::memory_order_relaxed), std::memory_order_relaxed);
}

} // namespace msccl::cuda::detail
