//===- CudaDeviceApi.cpp - The device layer over the CUDA runtime ------------------------===//
//
// See DeviceApi.h. Each method makes `dev` current, calls the CUDA runtime (static cudart) and
// turns an error into ExecutionError(Backend) naming the call; launches go to Kernel.cu's
// launchPlanKernel (KernelLaunch.h).
//
//===------------------------------------------------------------------------------------===//
#include "DeviceApi.h"
#include "KernelLaunch.h"
#include "SharedMemoryObject.h"

#include "msccl/runtime/Executor.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <mutex>

namespace msccl::cuda {

using runtime::ErrorKind;
using runtime::ExecutionError;

DeviceApi::~DeviceApi() = default;

namespace {

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear a sticky launch error where possible
    throw ExecutionError(ErrorKind::Backend, std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
  }
}

class CudaDeviceApi final : public DeviceApi {
public:
  CudaDeviceApi() {
    cudaError_t e = cudaGetDeviceCount(&count_);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw ExecutionError(ErrorKind::Unsupported, std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e) +
                                                       " (no NVIDIA driver or GPU?)");
    }
    if (count_ == 0) throw ExecutionError(ErrorKind::Unsupported, "no CUDA device found");
  }
  std::string_view name() const override { return "cuda"; }
  int deviceCount() override { return count_; }
  DeviceProperties properties(int dev) override {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    DeviceProperties d;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.multiProcessorCount = p.multiProcessorCount;
    int v = 0;
    d.cooperativeLaunch = cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, dev) == cudaSuccess && v != 0;
    d.multicast = false; // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (driver API): switch channels are emulated
    return d;
  }
  bool canAccessPeer(int dev, int peer) override {
    int ok = 0;
    return dev == peer || (cudaDeviceCanAccessPeer(&ok, dev, peer) == cudaSuccess && ok);
  }
  void enablePeerAccess(int dev, int peer) override {
    if (dev == peer) return;
    check(cudaSetDevice(dev), "cudaSetDevice");
    cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
      return;
    }
    check(e, "cudaDeviceEnablePeerAccess");
  }
  void *allocateShareable(int dev, size_t bytes) override { return allocate(dev, bytes); }
  void releaseShareable(int dev, void *ptr) noexcept override { release(dev, ptr); }
  std::vector<uint8_t> exportMemory(int dev, void *ptr) override {
    cudaIpcMemHandle_t h{};
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaIpcGetMemHandle(&h, ptr), "cudaIpcGetMemHandle");
    const auto *b = reinterpret_cast<const uint8_t *>(&h);
    return std::vector<uint8_t>(b, b + sizeof h);
  }
  void *importMemory(int dev, const std::vector<uint8_t> &handle, size_t) override {
    cudaIpcMemHandle_t h{};
    if (handle.size() != sizeof h)
      throw ExecutionError(ErrorKind::Backend, "cudaIpcOpenMemHandle: a handle of " + std::to_string(handle.size()) +
                                                   " bytes is not a CUDA IPC handle (another device kind exported it?)");
    std::memcpy(&h, handle.data(), sizeof h);
    void *p = nullptr;
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
  }
  void closeImported(int dev, void *ptr, size_t) noexcept override {
    if (cudaSetDevice(dev) != cudaSuccess || cudaIpcCloseMemHandle(ptr) != cudaSuccess) cudaGetLastError();
  }
  void *allocate(int dev, size_t bytes) override {
    void *p = nullptr;
    bytes = bytes ? bytes : 16;
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    cudaError_t e = cudaMemset(p, 0, bytes);
    // cudaMemset runs on the legacy default stream, which kernels on non-blocking streams do
    // not wait for: the zeros must be in place before anything is launched.
    if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
    if (e != cudaSuccess) {
      cudaFree(p);
      check(e, "cudaMemset");
    }
    return p;
  }
  void release(int dev, void *ptr) noexcept override {
    if (!ptr) return;
    cudaSetDevice(dev);
    cudaFree(ptr);
  }
  void *allocateShareableHostMapped(size_t bytes) override {
    detail::SharedObject o = detail::createSharedObject(bytes);
    cudaError_t e = cudaHostRegister(o.ptr, o.mapped, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (e != cudaSuccess) {
      detail::unmapSharedObject(o);
      detail::unlinkSharedObject(o.name);
      check(e, "cudaHostRegister");
    }
    std::lock_guard<std::mutex> l(sharedMu_);
    shared_[o.ptr] = {o, true, false};
    return o.ptr;
  }
  void sealShareable() noexcept override {
    std::lock_guard<std::mutex> l(sharedMu_);
    for (auto &[p, sh] : shared_)
      if (sh.owner && !sh.unlinked) {
        detail::unlinkSharedObject(sh.object.name);
        sh.unlinked = true;
      }
  }
  void releaseShareableHostMapped(void *ptr) noexcept override {
    std::lock_guard<std::mutex> l(sharedMu_);
    auto it = shared_.find(ptr);
    if (it == shared_.end()) return;
    if (it->second.owner) {
      cudaHostUnregister(ptr);
      if (!it->second.unlinked) detail::unlinkSharedObject(it->second.object.name);
    }
    detail::unmapSharedObject(it->second.object);
    shared_.erase(it);
  }
  std::vector<uint8_t> exportHostMapped(void *ptr) override {
    std::lock_guard<std::mutex> l(sharedMu_);
    auto it = shared_.find(ptr);
    if (it == shared_.end() || !it->second.owner)
      throw ExecutionError(ErrorKind::Backend, "export of host memory that allocateShareableHostMapped did not return");
    const std::string &n = it->second.object.name;
    return std::vector<uint8_t>(n.begin(), n.end());
  }
  void *importHostMapped(const std::vector<uint8_t> &handle, size_t bytes) override {
    detail::SharedObject o = detail::openSharedObject(std::string(handle.begin(), handle.end()), bytes);
    std::lock_guard<std::mutex> l(sharedMu_);
    shared_[o.ptr] = {o, false, false};
    return o.ptr;
  }
  void *allocateHostMapped(size_t bytes) override {
    void *p = nullptr;
    bytes = bytes ? bytes : 16;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
    std::memset(p, 0, bytes);
    return p;
  }
  void releaseHostMapped(void *ptr) noexcept override {
    if (ptr) cudaFreeHost(ptr);
  }
  int deviceOf(const void *ptr) override {
    cudaPointerAttributes a{};
    if (!ptr || cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return a.type == cudaMemoryTypeDevice ? a.device : -1;
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    if (!bytes) return;
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
    // From pageable host memory cudaMemcpy may return once the bytes are staged, before they
    // land; the plan kernels run on non-blocking streams that do not wait for the legacy
    // stream. (Measured on an H100: without this, plan structs and inputs uploaded just before
    // a launch were read half-written: illegal memory accesses and wrong results.)
    check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize (after cudaMemcpy)");
  }
  void copyAsync(int dev, void *dst, const void *src, size_t bytes, DeviceStream stream) override {
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)), "cudaMemcpyAsync");
  }
  DeviceStream createStream(int dev) override {
    cudaStream_t s = nullptr;
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
  }
  void destroyStream(int dev, DeviceStream stream) noexcept override {
    if (!stream) return;
    cudaSetDevice(dev);
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
  void synchronize(int dev, DeviceStream stream) override {
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  }
  void synchronizeCallerStream(void *stream) override {
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  }
  DeviceEvent createEvent(int dev) override {
    cudaEvent_t e = nullptr;
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return e;
  }
  void destroyEvent(int dev, DeviceEvent event) noexcept override {
    if (!event) return;
    cudaSetDevice(dev);
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }
  void record(int dev, DeviceEvent event, DeviceStream stream) override {
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
  }
  bool query(int dev, DeviceEvent event) override {
    check(cudaSetDevice(dev), "cudaSetDevice");
    cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (e == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check(e, "cudaEventQuery");
    return true;
  }
  void streamWait(int dev, DeviceStream stream, DeviceEvent event) override {
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0), "cudaStreamWaitEvent");
  }
  int residentBlocksPerSm(int dev, unsigned threadsPerBlock) override {
    int n = 0;
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(detail::planKernelBlocksPerSm(threadsPerBlock, &n), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return n;
  }
  unsigned threadsPerBlock(unsigned planThreads) const override { return planThreads; }
  void launch(int dev, const DevLaunch &launch, unsigned numBlocks, unsigned planThreads, DeviceStream stream,
              bool cooperative) override {
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(detail::launchPlanKernel(launch, numBlocks, planThreads, static_cast<cudaStream_t>(stream), cooperative),
          cooperative ? "cooperative kernel launch (are all threadblocks co-resident?)" : "kernel launch");
  }

private:
  int count_ = 0;
  struct Shared {
    detail::SharedObject object;
    bool owner;
    bool unlinked = false;
  };
  std::mutex sharedMu_;
  std::map<void *, Shared> shared_; ///< allocateShareableHostMapped's objects and imports
};

} // namespace

std::unique_ptr<DeviceApi> makeCudaDeviceApi() { return std::make_unique<CudaDeviceApi>(); }

} // namespace msccl::cuda
