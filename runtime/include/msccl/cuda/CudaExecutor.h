//===- CudaExecutor.h - The CUDA backend of the executor interface -----------------------===//
//
// Runs an MSCCL++ execution plan on NVIDIA GPUs through the backend-neutral interface of
// msccl/runtime/Executor.h (allocate/upload/download/execute). Plain C++: no CUDA header is
// needed to use it.
//
// Placement of ranks (one process drives everything):
//   OneRankPerGpu  rank r runs on GPU r; memory channels are peer pointers (peer access is
//                  enabled between all pairs); buffers that are not on a rank's GPU are staged.
//   VirtualRanks   every rank on GPU 0 with its own buffers, all threadblocks of all ranks in
//                  one launch; refused up front (ExecutionError Unsupported) when they cannot
//                  all be resident at once, since threadblocks of different ranks wait on each
//                  other.
//   Auto           OneRankPerGpu when there are at least as many GPUs as ranks and every pair
//                  has peer access, else VirtualRanks.
// Channels: memory = peer loads/stores + device-memory semaphores (release/acquire, relaxed
// forms without ordering); port = a host proxy thread fed by a device-to-host FIFO that
// performs cudaMemcpyAsync copies and signals (flush waits for completion); switch = emulated
// with peer loads/stores over every group member's buffer (no NVLS multicast objects are
// created; the description says so).
//
// Registry names (registerCudaExecutor in Executor.h): "cuda" (Auto), "cuda-virtual",
// "cuda-gpus"; and on host threads (DeviceKind::Host, no GPU needed) "cuda-host" (virtual
// ranks) and "cuda-host-gpus" (one rank per emulated device). Creating a CUDA one without a
// usable GPU or driver throws ExecutionError(Unsupported) with the CUDA runtime's reason.
//
// Mirrors: mscclpp src/core/executor/executor.cc (context setup, launch) and
// src/core/port_channel.cc (proxy).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Executor.h"

#include <memory>
#include <string>

namespace msccl::cuda {

enum class Placement { Auto, VirtualRanks, OneRankPerGpu };

/// What runs the device code: the CUDA runtime and a GPU, or the host implementation of the
/// device layer (runtime/lib/cuda/DeviceApi.h): the same interpreter source compiled as C++,
/// each threadblock a group of host threads, device memory in host memory, `hostDevices`
/// emulated devices with peer access. The host implementation needs no GPU or driver.
enum class DeviceKind { Cuda, Host };

struct CudaOptions {
  Placement placement = Placement::Auto;
  DeviceKind device = DeviceKind::Cuda;
  /// Host implementation: emulated devices (one-rank-per-device placement needs one per rank).
  int hostDevices = 8;
  /// Host implementation: threads per threadblock (1..1024; a few keep the thread count of
  /// large plans manageable while every striding loop still runs with several threads; the
  /// environment variable MSCCL_HOST_THREADS_PER_BLOCK overrides it).
  unsigned hostThreadsPerBlock = 8;
  /// Seconds one device-side wait may spin before the launch is abandoned and reported as a
  /// deadlock (0 = forever). The environment variable MSCCL_CUDA_TIMEOUT overrides it.
  double waitTimeoutSeconds = 30;
};

/// MSCCL_CUDA_DEVICE=host: every CUDA executor made afterwards (makeCudaExecutor, the
/// one-process-per-rank CudaRankSession) runs on the host implementation of the device layer,
/// whatever its options say: how the applications' CUDA paths (libmsccl, Python, the NCCL shim)
/// are tested on machines without a GPU.
bool hostDeviceRequested();

/// Whether a CUDA device and driver are usable; otherwise `why` (if given) gets the reason.
bool cudaUsable(std::string *why = nullptr);

/// The registry names of the CUDA backends, written once for both registries: the all-ranks
/// executor (registerCudaExecutor) and one process per rank (registerCudaRankBackends,
/// CudaRankSession.h), with what each name means in either.
struct CudaBackendName {
  const char *name;
  Placement placement;
  DeviceKind device;
  const char *executorDescription;
  const char *rankDescription;
};
extern const CudaBackendName kCudaBackendNames[5];

/// Creates the CUDA executor. Throws runtime::ExecutionError(Unsupported) without a GPU/driver
/// (DeviceKind::Cuda only).
std::unique_ptr<runtime::Executor> makeCudaExecutor(const CudaOptions &options = {});

} // namespace msccl::cuda
