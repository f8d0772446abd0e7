//===- PortProxy.h - Host proxy thread serving the port channels' FIFOs -----------------===//
//
// Consumes the device-to-host FIFOs of the ranks (DevProxyRequest slots in host-mapped memory,
// written by the kernel); performs each request in FIFO order per rank:
//   data  cudaMemcpyAsync(remote buffer + dstOffset <- local buffer + srcOffset) on the rank's
//         proxy stream (peer copy across GPUs, or within one GPU for virtual ranks);
//   flag  waits for the rank's earlier copies (cudaStreamSynchronize), then increments the
//         paired peer channel's inbound counter (host-mapped memory, release);
//   sync  waits for the rank's earlier copies;
// then publishes `completed` = requests done (the kernel uses it for FIFO space and flush).
// Guarantees: a flag is never visible before the data of earlier requests of the same rank;
// a malformed request (ids out of range) is completed without effect and reported by error().
//
// Mirrors: mscclpp src/core/port_channel.cc (ProxyService::handleTrigger) and
// src/core/connection.cc (CudaIpcConnection write/updateAndSync/flush).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace msccl::cuda::detail {

/// What the proxy needs of one rank (host views of its FIFO and buffers).
struct ProxyRank {
  int device = 0;
  cudaStream_t stream = nullptr;
  DevProxyRequest *slots = nullptr; ///< host pointer of the mapped slots
  uint64_t *completed = nullptr;    ///< host pointer of the mapped counter
  uint32_t capacity = 0;
  char *local[3] = {nullptr, nullptr, nullptr}; ///< input, output, scratch base (no SO)
  std::vector<char *> remoteBases;              ///< by gpu-level remote buffer id
  std::vector<uint64_t *> flagTargets;          ///< by gpu-level port channel: peer's inbound counter (host)
  uint64_t tail = 0;                            ///< requests consumed
};

class PortProxy {
public:
  PortProxy() = default;
  ~PortProxy() { stop(); }
  PortProxy(const PortProxy &) = delete;
  PortProxy &operator=(const PortProxy &) = delete;

  /// Starts serving `ranks` (owned by the caller; not resized while running).
  void start(std::vector<ProxyRank> *ranks);
  void stop();
  bool running() const { return thread_.joinable(); }
  /// First problem seen since start ("" when none).
  std::string error();

private:
  void loop();
  bool serve(ProxyRank &r);
  void fail(const std::string &msg);

  std::vector<ProxyRank> *ranks_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string error_;
};

} // namespace msccl::cuda::detail
