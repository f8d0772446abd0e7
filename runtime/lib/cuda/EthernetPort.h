//===- EthernetPort.h - Port channels between nodes, host-staged over TCP ----------------===//
//
// Consumes one rank's process-per-rank session (CudaRankSession.cpp) whose port channels reach
// ranks of other nodes, and carries those requests (PortProxy.h's RemotePort) over
// runtime::EthernetTransport:
//   * put: the proxy thread copies the bytes from device memory into the message (one copy,
//     on the rank's proxy stream) in pieces of at most 4 MiB; the receiving process copies each
//     piece into its own buffer (input, output or scratch, bounds-checked) on a stream of its own;
//   * signal: a message after the puts, applied in order: the peer's inbound counter of its
//     port channel (host-mapped memory its kernel polls) gets one only after their bytes landed;
//   * flush: waits until the peers acknowledged every message so far (the data has landed).
// Guarantees: per (sender, receiver), messages are applied in the order sent; a message that
// names a buffer range or channel that does not exist is dropped and reported by error() (the
// kernel waiting for it then times out with its wait named). What GPUDirect RDMA would change:
// the peers' buffers registered with the NIC (ibv_reg_mr over nvidia-peermem or a dma-buf of
// the cudaMalloc'd memory), their keys exchanged when the session opens, puts posted as RDMA
// writes from device memory and signals as RDMA atomics, flush as a poll of the completion
// queue; no host copy on either side (mscclpp src/core/connection.cc IBConnection).
//
// Mirrors: mscclpp src/core/connection.cc (EthernetConnection).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "DeviceApi.h"
#include "PortProxy.h"

#include "msccl/runtime/EthernetTransport.h"

#include <memory>
#include <string>
#include <vector>

namespace msccl::cuda::detail {

class EthernetPort final : public RemotePort {
public:
  /// Collective over the job (runtime::EthernetTransport::open): `sendsTo` are the ranks of
  /// other nodes this rank's port channels reach. `timeoutSeconds` bounds flush. Throws
  /// ExecutionError as open does.
  EthernetPort(runtime::Communicator &comm, DeviceApi &api, const std::vector<int> &sendsTo, double timeoutSeconds);
  /// Stops receiving (the transport's thread), then frees the receiving stream.
  ~EthernetPort() override;

  /// Where received messages land: this rank's device, its three buffers (bytes each) and its
  /// port channels' inbound counters (host view, `numPortChannels` of them). Until called,
  /// messages are dropped (none can arrive: peers launch after the session opened everywhere).
  void receiveInto(int device, char *const buffers[3], const uint64_t bufferBytes[3], uint64_t *portInbound,
                   uint32_t numPortChannels);
  /// No message is applied after this returns.
  void stopReceiving();

  std::string put(int device, DeviceStream stream, uint32_t rank, uint32_t type, uint64_t offset, const char *src,
                  uint64_t bytes) override;
  std::string signal(uint32_t rank, uint32_t channel) override;
  std::string flush() override;
  /// The first problem the receiving side saw ("" when none).
  std::string error() const { return transport_->error(); }

private:
  struct Target {
    int device = 0;
    char *buffers[3] = {nullptr, nullptr, nullptr};
    uint64_t bytes[3] = {0, 0, 0};
    uint64_t *portInbound = nullptr;
    uint32_t numPortChannels = 0;
    DeviceStream stream = nullptr;
  };
  std::string apply(int from, const uint8_t *header, size_t headerBytes, const uint8_t *payload, size_t payloadBytes);

  DeviceApi &api_;
  double timeoutSeconds_;
  std::unique_ptr<runtime::EthernetTransport> transport_;
  Target target_;
};

} // namespace msccl::cuda::detail
