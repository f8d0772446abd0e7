//===- HostDeviceApi.cpp - The device layer on host threads ------------------------------===//
//
// See DeviceApi.h. Memory: aligned host allocations (256 bytes, as cudaMalloc) recorded with
// their device so that deviceOf answers as cudaPointerGetAttributes does; shareable memory is a
// POSIX shared memory object (SharedMemoryObject.h; its name is the export handle, unlinked
// once every peer mapped it, sealShareable, or when the owner releases it). A stream: an
// in-order task queue served by its own thread, with its own HostKernelRunner for launches.
// An event: a record counter (bumped when record is called) and a completed counter (set when
// the record task runs); streamWait enqueues a task that waits for the record it saw, as
// cudaStreamWaitEvent waits for the event's latest record at the time of the call.
//
//===------------------------------------------------------------------------------------===//
#include "DeviceApi.h"
#include "HostKernel.h"
#include "SharedMemoryObject.h"

#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

namespace msccl::cuda {

using runtime::ErrorKind;
using runtime::ExecutionError;

namespace {

class HostStream {
public:
  explicit HostStream(int dev) : device(dev), worker_([this] { loop(); }) {}
  ~HostStream() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void enqueue(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> l(m_);
      queue_.push_back(std::move(task));
      ++enqueued_;
    }
    cv_.notify_all();
  }
  /// Waits for every task enqueued so far; rethrows the first task failure.
  void synchronize() {
    std::unique_lock<std::mutex> l(m_);
    const uint64_t target = enqueued_;
    cv_.wait(l, [&] { return finished_ >= target; });
    if (!error_.empty()) {
      std::string e = std::move(error_);
      error_.clear();
      throw ExecutionError(ErrorKind::Backend, "host device: " + e);
    }
  }
  const int device;
  detail::HostKernelRunner runner;

private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return; // stop, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::string failure;
      try {
        task();
      } catch (const std::exception &e) {
        failure = e.what();
      }
      {
        std::lock_guard<std::mutex> l(m_);
        ++finished_;
        if (!failure.empty() && error_.empty()) error_ = failure;
      }
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0, finished_ = 0;
  bool stop_ = false;
  std::string error_;
  std::thread worker_; // last: starts after the members above exist
};

struct HostEvent {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0, completed = 0;
};

class HostDeviceApi final : public DeviceApi {
public:
  explicit HostDeviceApi(const HostDeviceOptions &o) : options_(o) {
    if (options_.deviceCount < 1) options_.deviceCount = 1;
    // The environment overrides the options (as MSCCL_CUDA_TIMEOUT overrides the executor's).
    if (const char *t = std::getenv("MSCCL_HOST_THREADS_PER_BLOCK")) options_.threadsPerBlock = (unsigned)std::atoi(t);
    if (const char *g = std::getenv("MSCCL_HOST_GUARD_PAGES")) options_.guardPages = std::atoi(g) != 0;
    options_.threadsPerBlock = std::clamp(options_.threadsPerBlock, 1u, kMaxThreadsPerBlock);
  }
  ~HostDeviceApi() override {
    for (auto &[p, a] : allocations_) release(a, reinterpret_cast<void *>(p));
  }
  std::string_view name() const override { return "host"; }
  int deviceCount() override { return options_.deviceCount; }
  DeviceProperties properties(int) override {
    DeviceProperties d;
    d.name = "host threads";
    d.multiProcessorCount = 1;
    return d;
  }
  bool canAccessPeer(int, int) override { return true; }
  void enablePeerAccess(int, int) override {}
  void *allocate(int dev, size_t bytes) override { return alloc(dev, bytes); }
  void release(int, void *ptr) noexcept override { free(ptr); }
  void *allocateShareable(int dev, size_t bytes) override {
    detail::SharedObject o = detail::createSharedObject(bytes);
    detail::enableCrossProcessWakeups();
    std::lock_guard<std::mutex> l(m_);
    allocations_[reinterpret_cast<uintptr_t>(o.ptr)] = {o.mapped, dev, o.ptr, o.mapped, o.name, true};
    return o.ptr; // a new object's pages are zero
  }
  void releaseShareable(int, void *ptr) noexcept override { free(ptr); }
  std::vector<uint8_t> exportMemory(int, void *ptr) override {
    std::lock_guard<std::mutex> l(m_);
    auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == allocations_.end() || it->second.shmName.empty() || !it->second.owner)
      throw ExecutionError(ErrorKind::Backend, "host device: export of memory that allocateShareable did not return");
    if (it->second.unlinked)
      throw ExecutionError(ErrorKind::Backend, "host device: export of shared memory that was sealed (sealShareable)");
    return std::vector<uint8_t>(it->second.shmName.begin(), it->second.shmName.end());
  }
  void *importMemory(int dev, const std::vector<uint8_t> &handle, size_t bytes) override {
    detail::SharedObject o = detail::openSharedObject(std::string(handle.begin(), handle.end()), bytes);
    detail::enableCrossProcessWakeups();
    std::lock_guard<std::mutex> l(m_);
    allocations_[reinterpret_cast<uintptr_t>(o.ptr)] = {o.mapped, dev, o.ptr, o.mapped, o.name, false};
    return o.ptr;
  }
  void *allocateShareableHostMapped(size_t bytes) override { return allocateShareable(-1, bytes); }
  void sealShareable() noexcept override {
    std::lock_guard<std::mutex> l(m_);
    for (auto &[p, a] : allocations_)
      if (a.owner && !a.unlinked) {
        detail::unlinkSharedObject(a.shmName);
        a.unlinked = true;
      }
  }
  void releaseShareableHostMapped(void *ptr) noexcept override { free(ptr); }
  void *importHostMapped(const std::vector<uint8_t> &handle, size_t bytes) override {
    return importMemory(-1, handle, bytes);
  }
  std::vector<uint8_t> exportHostMapped(void *ptr) override { return exportMemory(-1, ptr); }
  void closeImported(int, void *ptr, size_t) noexcept override { free(ptr); }
  void *allocateHostMapped(size_t bytes) override { return alloc(-1, bytes); }
  void releaseHostMapped(void *ptr) noexcept override { free(ptr); }
  int deviceOf(const void *ptr) override {
    std::lock_guard<std::mutex> l(m_);
    auto it = allocations_.upper_bound(reinterpret_cast<uintptr_t>(ptr));
    if (it == allocations_.begin()) return -1;
    --it;
    return reinterpret_cast<uintptr_t>(ptr) < it->first + it->second.bytes ? it->second.device : -1;
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void copyAsync(int, void *dst, const void *src, size_t bytes, DeviceStream stream) override {
    static_cast<HostStream *>(stream)->enqueue([=] { detail::hostCopyUnits(dst, src, bytes); });
  }
  DeviceStream createStream(int dev) override { return new HostStream(dev); }
  void destroyStream(int, DeviceStream stream) noexcept override { delete static_cast<HostStream *>(stream); }
  void synchronize(int, DeviceStream stream) override { static_cast<HostStream *>(stream)->synchronize(); }
  void synchronizeCallerStream(void *) override {}
  DeviceEvent createEvent(int) override { return new HostEvent; }
  void destroyEvent(int, DeviceEvent event) noexcept override { delete static_cast<HostEvent *>(event); }
  void record(int, DeviceEvent event, DeviceStream stream) override {
    auto *e = static_cast<HostEvent *>(event);
    uint64_t target;
    {
      std::lock_guard<std::mutex> l(e->m);
      target = ++e->recorded;
    }
    static_cast<HostStream *>(stream)->enqueue([e, target] {
      {
        std::lock_guard<std::mutex> l(e->m);
        e->completed = std::max(e->completed, target);
      }
      e->cv.notify_all();
    });
  }
  bool query(int, DeviceEvent event) override {
    auto *e = static_cast<HostEvent *>(event);
    std::lock_guard<std::mutex> l(e->m);
    return e->completed >= e->recorded;
  }
  void streamWait(int, DeviceStream stream, DeviceEvent event) override {
    auto *e = static_cast<HostEvent *>(event);
    uint64_t target;
    {
      std::lock_guard<std::mutex> l(e->m);
      target = e->recorded;
    }
    static_cast<HostStream *>(stream)->enqueue([e, target] {
      std::unique_lock<std::mutex> l(e->m);
      e->cv.wait(l, [&] { return e->completed >= target; });
    });
  }
  void hostWrote(const void *word) override { detail::wakeHostWaiters(word); }
  int residentBlocksPerSm(int, unsigned) override { return 1 << 20; } // every block gets its threads
  unsigned threadsPerBlock(unsigned) const override { return options_.threadsPerBlock; }
  void launch(int, const DevLaunch &launch, unsigned numBlocks, unsigned, DeviceStream stream, bool) override {
    auto *s = static_cast<HostStream *>(stream);
    const unsigned threads = options_.threadsPerBlock;
    s->enqueue([s, launch, numBlocks, threads] { s->runner.run(launch, numBlocks, threads); });
  }

private:
  struct Allocation {
    size_t bytes;
    int device;
    void *mapping; ///< guard-page mode and shared memory objects: the whole mapping (else null)
    size_t mapped;
    std::string shmName = {}; ///< shared memory objects: the name (imported too)
    bool owner = false;        ///< this process made the object (unlinks it on release)
    bool unlinked = false;     ///< its name is gone already (sealShareable)
  };
  /// 256-byte aligned (as cudaMalloc), zero-filled. With guard pages (HostDeviceOptions::
  /// guardPages, MSCCL_HOST_GUARD_PAGES=1) each allocation ends 16-byte aligned right before an
  /// inaccessible page and starts right after one, so a kernel that reads or writes past either
  /// end of a buffer faults at once (the host's memcheck).
  void *alloc(int dev, size_t bytes) {
    bytes = std::max<size_t>(bytes, 16);
    void *p = nullptr;
    size_t mapped = 0;
    if (options_.guardPages) {
      const size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + 15) / 16 * 16;
      mapped = (body + page - 1) / page * page + 2 * page;
      char *m = static_cast<char *>(mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (m == MAP_FAILED) m = nullptr;
      if (m && mprotect(m + page, mapped - 2 * page, PROT_READ | PROT_WRITE) == 0) {
        p = m + mapped - page - body; // the end touches the upper guard page
        std::lock_guard<std::mutex> l(m_);
        allocations_[reinterpret_cast<uintptr_t>(p)] = {body, dev, m, mapped};
        return p; // mmap's pages are zero
      }
      if (m) munmap(m, mapped);
      throw ExecutionError(ErrorKind::Backend, "host device: cannot map " + std::to_string(mapped) + " bytes");
    }
    bytes = (bytes + 255) / 256 * 256;
    p = std::aligned_alloc(256, bytes);
    if (!p)
      throw ExecutionError(ErrorKind::Backend, "host device: cannot allocate " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, bytes);
    std::lock_guard<std::mutex> l(m_);
    allocations_[reinterpret_cast<uintptr_t>(p)] = {bytes, dev, nullptr, 0};
    return p;
  }
  void free(void *ptr) noexcept {
    if (!ptr) return;
    std::lock_guard<std::mutex> l(m_);
    auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == allocations_.end()) return;
    release(it->second, ptr);
    allocations_.erase(it);
  }
  static void release(const Allocation &a, void *ptr) {
    if (a.owner && !a.unlinked) detail::unlinkSharedObject(a.shmName);
    if (a.mapping) munmap(a.mapping, a.mapped);
    else std::free(ptr);
  }

  HostDeviceOptions options_;
  std::mutex m_;
  std::map<uintptr_t, Allocation> allocations_;
};

} // namespace

std::unique_ptr<DeviceApi> makeHostDeviceApi(const HostDeviceOptions &options) {
  return std::make_unique<HostDeviceApi>(options);
}

} // namespace msccl::cuda
