//===- DeviceApi.h - Everything the CUDA executor asks of a device -----------------------===//
//
// The device layer: the one interface between the executor's logic (CudaExecutor.cpp,
// ChannelSetup.cpp, PortProxy.cpp) and the machine that runs the interpreter kernel. Two
// implementations:
//   * CUDA (CudaDeviceApi.cpp): the CUDA runtime (static cudart) and Kernel.cu built by nvcc;
//   * host (HostDeviceApi.cpp): device memory is host memory, a stream is an in-order queue
//     served by its own host thread, and a kernel launch runs each threadblock as a group of
//     host threads executing the same Kernel.cu source compiled as C++ (HostKernel.cpp, with
//     the host primitives of DevicePrimitives.cuh). It emulates `deviceCount` devices, all
//     with peer access, so one-rank-per-GPU placement runs on the host too.
// Pointers are unified: a device pointer and a host-mapped pointer are usable by the host and
// by kernels of any device at the same address (CUDA: UVA, peer access enabled by the caller;
// host: trivially). `dev` names the device an operation is for (the CUDA implementation makes
// it current). Every method throws runtime::ExecutionError(Backend) naming the operation and
// the runtime's reason, except the release/destroy methods, which never throw (teardown).
// Sizes are bytes.
//
// Memory shared between processes (the process-per-rank path, CudaRankSession.h): a shareable
// allocation, its export handle and its import in another process (CUDA IPC handles; on the
// host, POSIX shared memory objects). Not yet here: multicast objects (switch channels are
// emulated with peer loads and stores).
//
// Mirrors the subset of the CUDA runtime API that MSCCL++'s executor uses
// (mscclpp src/core/executor/executor.cc, src/core/port_channel.cc); NCCL's src/include/cudawrap.h
// plays the same role for NCCL.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::cuda {

/// Opaque stream and event handles of one DeviceApi (cudaStream_t / cudaEvent_t for CUDA).
using DeviceStream = void *;
using DeviceEvent = void *;

/// What the executor needs to know of one device.
struct DeviceProperties {
  std::string name;               ///< e.g. "NVIDIA H100 80GB HBM3", "host threads"
  int major = 0, minor = 0;       ///< compute capability (0.0 for the host)
  int multiProcessorCount = 0;    ///< SMs (the host: 1, with as many resident blocks as asked)
  bool cooperativeLaunch = false; ///< cudaLaunchCooperativeKernel is available
  bool multicast = false;         ///< CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
};

class DeviceApi {
public:
  virtual ~DeviceApi();
  /// "cuda" or "host".
  virtual std::string_view name() const = 0;
  /// Devices visible (>= 1; the constructor of an implementation without devices throws).
  virtual int deviceCount() = 0;
  virtual DeviceProperties properties(int dev) = 0;
  /// Whether kernels on `dev` can load/store memory of `peer` (cudaDeviceCanAccessPeer).
  virtual bool canAccessPeer(int dev, int peer) = 0;
  /// Enables it (cudaDeviceEnablePeerAccess); enabling twice is not an error.
  virtual void enablePeerAccess(int dev, int peer) = 0;

  /// `bytes` (0 is taken as 16) of zero-filled device memory on `dev` (cudaMalloc + cudaMemset).
  virtual void *allocate(int dev, size_t bytes) = 0;
  virtual void release(int dev, void *ptr) noexcept = 0;
  /// `bytes` of zero-filled device memory on `dev` that processes of the same node can map
  /// (CUDA: cudaMalloc, exported by cudaIpcGetMemHandle; host: a POSIX shared memory object,
  /// after which waits park so that writers of other processes wake them).
  virtual void *allocateShareable(int dev, size_t bytes) = 0;
  virtual void releaseShareable(int dev, void *ptr) noexcept = 0;
  /// An opaque handle of memory from allocateShareable (the allocation's start) that
  /// importMemory of another process of the node turns into a pointer (cudaIpcGetMemHandle's 64
  /// bytes; host: the object's name).
  virtual std::vector<uint8_t> exportMemory(int dev, void *ptr) = 0;
  /// Maps `bytes` of another process's shareable memory for kernels on `dev`
  /// (cudaIpcOpenMemHandle with lazy peer access). Throws ExecutionError(Backend) when the
  /// handle cannot be opened (another node, a handle of this very process, a freed object).
  virtual void *importMemory(int dev, const std::vector<uint8_t> &handle, size_t bytes) = 0;
  virtual void closeImported(int dev, void *ptr, size_t bytes) noexcept = 0; ///< cudaIpcCloseMemHandle
  /// Host-mapped memory (as allocateHostMapped: kernels of every device read it) that processes
  /// of the node can map too, for their host threads (the port proxies write peers' inbound
  /// counters there): a POSIX shared memory object, registered with cudaHostRegister (mapped,
  /// portable) on CUDA. exportHostMapped's handle is the object's name; importHostMapped maps it
  /// in another process for host access (releaseShareableHostMapped unmaps an import too; the
  /// maker's release also unlinks the name).
  virtual void *allocateShareableHostMapped(size_t bytes) = 0;
  virtual void releaseShareableHostMapped(void *ptr) noexcept = 0;
  virtual std::vector<uint8_t> exportHostMapped(void *ptr) = 0;
  virtual void *importHostMapped(const std::vector<uint8_t> &handle, size_t bytes) = 0;
  /// Every process that needs this process's shareable memory made so far has mapped it: remove
  /// what names it (shared memory object names; CUDA IPC handles need nothing), so that nothing is
  /// left behind when the job is killed. Mappings and memory stay valid until released.
  virtual void sealShareable() noexcept = 0;
  /// Zero-filled pinned host memory every device can address at the same pointer
  /// (cudaHostAlloc Mapped|Portable; the FIFOs and port counters live there).
  virtual void *allocateHostMapped(size_t bytes) = 0;
  virtual void releaseHostMapped(void *ptr) noexcept = 0;
  /// The device whose memory holds `ptr`, or -1 for memory no device owns (host memory).
  virtual int deviceOf(const void *ptr) = 0;
  /// Copy between any two addresses (cudaMemcpy, cudaMemcpyDefault) that returns when the
  /// bytes have landed: a kernel launched afterwards on any stream sees them (cudaMemcpy alone
  /// does not promise that for pageable sources). Likewise allocate's zeros.
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  /// Copy enqueued on `stream` of `dev` (cudaMemcpyAsync, cudaMemcpyDefault). 16-byte aligned
  /// 16-byte units are copied whole, so LL16 packets shipped by the port proxy never tear.
  virtual void copyAsync(int dev, void *dst, const void *src, size_t bytes, DeviceStream stream) = 0;

  virtual DeviceStream createStream(int dev) = 0; ///< non-blocking (cudaStreamNonBlocking)
  virtual void destroyStream(int dev, DeviceStream stream) noexcept = 0;
  /// Waits until everything enqueued on `stream` has run (cudaStreamSynchronize).
  virtual void synchronize(int dev, DeviceStream stream) = 0;
  /// Wait for a stream of the application (cudaStream_t; nullptr = the legacy default stream of
  /// the current device), not one this API created. The host device has none: a no-op.
  virtual void synchronizeCallerStream(void *stream) = 0;
  virtual DeviceEvent createEvent(int dev) = 0; ///< without timing
  virtual void destroyEvent(int dev, DeviceEvent event) noexcept = 0;
  /// cudaEventRecord: `event` completes when the work enqueued on `stream` so far has run.
  virtual void record(int dev, DeviceEvent event, DeviceStream stream) = 0;
  /// cudaEventQuery: whether the work the event's latest record waits for has run (true when
  /// never recorded). Throws on a device error.
  virtual bool query(int dev, DeviceEvent event) = 0;
  /// cudaStreamWaitEvent: later work on `stream` waits for the event's latest record.
  virtual void streamWait(int dev, DeviceStream stream, DeviceEvent event) = 0;

  /// Blocks of `threadsPerBlock` threads of the interpreter that can be resident at once on
  /// one multiprocessor of `dev` (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
  virtual int residentBlocksPerSm(int dev, unsigned threadsPerBlock) = 0;
  /// The threads per block a launch really gets when the plan asks for `planThreads`: the
  /// plan's own on CUDA; the host implementation's configured count (a few: thread j serves
  /// ids j, j + blockDim.x, ... of a sync op, and data loops stride over the threads).
  virtual unsigned threadsPerBlock(unsigned planThreads) const = 0;
  /// The host changed `word` (a port channel's inbound counter, a FIFO's completed count)
  /// while kernels may wait for it: the host implementation wakes its threads parked on it;
  /// a GPU polls, so the CUDA implementation does nothing.
  virtual void hostWrote(const void *word) { (void)word; }
  /// Enqueues one launch of the interpreter on `stream`: `numBlocks` blocks (block b runs
  /// launch.threadblocks[b]) of threadsPerBlock(planThreads) threads. `cooperative` asks for
  /// cudaLaunchCooperativeKernel, which refuses a grid that cannot be resident at once.
  virtual void launch(int dev, const DevLaunch &launch, unsigned numBlocks, unsigned planThreads, DeviceStream stream,
                      bool cooperative) = 0;
};

/// The CUDA runtime. Throws runtime::ExecutionError(Unsupported) naming the reason when no
/// device or driver is usable.
std::unique_ptr<DeviceApi> makeCudaDeviceApi();

/// Options of the host implementation.
struct HostDeviceOptions {
  int deviceCount = 8;          ///< emulated devices (an HGX node)
  /// Host threads per threadblock (1..kMaxThreadsPerBlock; MSCCL_HOST_THREADS_PER_BLOCK
  /// overrides it).
  unsigned threadsPerBlock = 8;
  /// Every allocation between two inaccessible pages, so an out-of-bounds access of a kernel
  /// faults at once (MSCCL_HOST_GUARD_PAGES=1 turns it on).
  bool guardPages = false;
};
/// The host implementation (never throws for want of a GPU).
std::unique_ptr<DeviceApi> makeHostDeviceApi(const HostDeviceOptions &options = {});

} // namespace msccl::cuda
