//===- PortProxy.h - Host proxy thread serving the port channels' FIFOs -----------------===//
//
// Consumes the device-to-host FIFOs of the ranks (DevProxyRequest slots in host-mapped memory,
// written by the kernel); performs each request in FIFO order per rank:
//   data  DeviceApi::copyAsync (cudaMemcpyAsync) of remote buffer + dstOffset <- local buffer +
//         srcOffset on the rank's proxy stream (peer copy across GPUs, or within one GPU for
//         virtual ranks);
//   flag  waits for the rank's earlier copies (DeviceApi::synchronize), then increments the
//         paired peer channel's inbound counter (host-mapped memory, release);
//   sync  waits for the rank's earlier copies;
// then publishes `completed` = requests done (the kernel uses it for FIFO space and flush).
// Guarantees: a flag is never visible before the data of earlier requests of the same rank;
// a malformed request (ids out of range) is completed without effect and reported by error().
// Flag and sync requests of a rank with no copy in flight make no device call.
// Peers this process cannot map (ranks of another node, one process per rank): their remote
// buffers and flag targets are null, and the rank's RemotePort carries the request instead:
// data as a host-staged put, flag as a signal message ordered after the rank's earlier puts to
// that peer, sync (and syncCopies) as a flush that returns once those have landed.
// Quiescence: the tables of the ranks (buffers, flag targets) belong to the proxy thread
// between start() and stop(); the owner changes them only while it is stopped (stop() joins
// the thread, which orders its last reads before the owner's writes, and start() orders the
// owner's writes before the new thread's reads). waitIdle() tells when the requests pushed so
// far are done, so nothing is lost by stopping.
//
// Mirrors: mscclpp src/core/port_channel.cc (ProxyService::handleTrigger) and
// src/core/connection.cc (CudaIpcConnection write/updateAndSync/flush).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "DeviceApi.h"

#include "msccl/cuda/DevicePlan.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace msccl::cuda::detail {

/// Port requests to a rank whose memory this process does not map (another node), carried by
/// the session that owns the rank (EthernetPort.h: host-staged over EthernetTransport). Called
/// from the proxy thread only.
class RemotePort {
public:
  virtual ~RemotePort() = default;
  /// Sends `bytes` bytes of this rank's memory at `src` (on `device`, read through `stream`) to
  /// byte `offset` of `rank`'s buffer `type` (plan::BufferType: input, output, scratch).
  /// Returns "" or the error.
  virtual std::string put(int device, DeviceStream stream, uint32_t rank, uint32_t type, uint64_t offset, const char *src,
                          uint64_t bytes) = 0;
  /// Adds one to `rank`'s inbound counter of its port channel `channel`, after this rank's
  /// earlier puts to `rank` have landed. Returns "" or the error.
  virtual std::string signal(uint32_t rank, uint32_t channel) = 0;
  /// Returns once every put and signal so far has landed; "" or the error (a timeout).
  virtual std::string flush() = 0;
};

/// A remote buffer or port channel reached through RemotePort: the peer rank (-1: mapped
/// here, use remoteBases / flagTargets) and the buffer type or the peer's channel index.
struct RemoteTarget {
  int32_t rank = -1;
  uint32_t index = 0;
};

/// What the proxy needs of one rank (host views of its FIFO and buffers).
struct ProxyRank {
  int device = 0;
  DeviceStream stream = nullptr;
  DevProxyRequest *slots = nullptr; ///< host pointer of the mapped slots
  uint64_t *completed = nullptr;    ///< host pointer of the mapped counter
  uint32_t capacity = 0;
  char *local[3] = {nullptr, nullptr, nullptr}; ///< input, output, scratch base (no SO)
  std::vector<char *> remoteBases;              ///< by gpu-level remote buffer id
  std::vector<uint64_t *> flagTargets;          ///< by gpu-level port channel: peer's inbound counter (host)
  RemotePort *remote = nullptr;                 ///< peers of other nodes (null: every peer is mapped)
  std::vector<RemoteTarget> remoteBuffers;      ///< by remote buffer id (empty: none through `remote`)
  std::vector<RemoteTarget> remoteSignals;      ///< by port channel (empty: none through `remote`)
  uint64_t tail = 0;                            ///< requests consumed
  bool copiesInFlight = false;                  ///< a copy was enqueued since the last stream sync
};

class PortProxy {
public:
  PortProxy() = default;
  ~PortProxy() { stop(); }
  PortProxy(const PortProxy &) = delete;
  PortProxy &operator=(const PortProxy &) = delete;

  /// Starts serving `ranks` (owned by the caller, who must not touch them until stop()) with
  /// the copies of `api`. Restarting keeps each rank's `tail`. Clears error().
  void start(DeviceApi &api, std::vector<ProxyRank> *ranks);
  /// Stops serving and joins the thread (requests not yet served stay in the FIFOs).
  void stop();
  /// Waits until rank r has completed `pushed[r]` requests (its `completed` counter), for every
  /// r; false when `timeoutSeconds` (> 0; <= 0 waits forever) passes first.
  bool waitIdle(const std::vector<uint64_t> &pushed, double timeoutSeconds) const;
  /// After waitIdle: waits for the copies still in flight on the ranks' proxy streams and
  /// flushes their RemotePorts. Returns "" or the device or transport error.
  std::string syncCopies();
  bool running() const { return thread_.joinable(); }
  /// First problem seen since start ("" when none).
  std::string error();

private:
  void loop();
  bool serve(ProxyRank &r);
  void remoteFailed(const std::string &error); ///< records a RemotePort error ("": none)
  void fail(const std::string &msg);

  DeviceApi *api_ = nullptr;
  std::vector<ProxyRank> *ranks_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string error_;
};

} // namespace msccl::cuda::detail
