//===- EthernetTransport.h - Host-staged messages between the processes of a job ---------===//
//
// What carries port channels between nodes when the GPUs cannot reach each other's memory
// (no CUDA IPC across hosts, no GPUDirect RDMA set up): ordered messages from one process to
// another over TCP, each with a small header and an optional payload that the sender fills in
// place (the port proxy copies device memory straight into it) and the receiver hands to its
// handler (which copies it into device memory). Mirrors mscclpp src/core/connection.cc
// (EthernetConnection: write / updateAndSync / recvMessages, Transport::Ethernet), with
// ZeroMQ (Debian libzmq3-dev, as the unique-id bootstrap) doing the framing and polling:
//   * open (collective over the job): every rank binds one ROUTER socket (loopback when every
//     rank is on this host, else every interface, or MSCCL_ETHERNET_ADDR), CURVE-secured with
//     a fresh key pair whose public half goes round the communicator's allGather with the
//     endpoint, so only the job's ranks can connect; each rank then connects one DEALER socket
//     (routing id: its rank) to every rank it will send to;
//   * send: one message, delivered in order after the earlier messages to the same rank;
//     payloads above 4 MiB are the caller's to split (sendLimit());
//   * receiving: one thread per process calls the handler for each message, in arrival order
//     per sender; a flush request is answered by that thread once every earlier message of
//     that sender was handled;
//   * flush: returns when every message sent so far was handled by its receiver (the meaning
//     of a port channel's flush on an RDMA connection: the data has landed).
// Without ZeroMQ (or CURVE), available() is false and open throws.
// Threads: send and flush from one thread at a time (the port proxy's); the handler runs on
// the receiving thread; setHandler from any thread.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace msccl::runtime {

class Communicator;

class EthernetTransport {
public:
  /// Called on the receiving thread for each message: the sender's rank, the header and the
  /// payload (both valid during the call only). Returns "" or what was wrong with the message
  /// (kept as error(); the message is dropped).
  using Handler = std::function<std::string(int from, const uint8_t *header, size_t headerBytes, const uint8_t *payload,
                                            size_t payloadBytes)>;

  /// Whether this library was built with ZeroMQ and CURVE (open works).
  static bool available();

  /// Collective over the job: binds, exchanges endpoints and public keys (one allGather), and
  /// connects to every rank in `sendsTo` (ranks this rank will send to; not this rank). The
  /// receiving thread starts at once and drops messages until setHandler. Throws
  /// ExecutionError(Unsupported) when !available(), Backend when a socket cannot be bound or
  /// connected (every rank throws when one rank failed: the failure goes round the allGather).
  static std::unique_ptr<EthernetTransport> open(Communicator &comm, const std::vector<int> &sendsTo);

  /// Stops the receiving thread and closes the sockets (not collective; messages in flight to
  /// this rank are dropped).
  ~EthernetTransport();
  EthernetTransport(const EthernetTransport &) = delete;
  EthernetTransport &operator=(const EthernetTransport &) = delete;

  /// Installs (or, with an empty function, removes) the handler; returns after any call of
  /// the previous handler has ended.
  void setHandler(Handler handler);

  /// Sends one message to `rank` (one of open's `sendsTo`): `header` (at most 64 bytes) and
  /// `payloadBytes` (at most sendLimit()) that `fill` writes in place (not called when 0).
  /// Returns "" or the error (an unknown rank, a payload too large, a socket error).
  std::string send(int rank, const void *header, size_t headerBytes, size_t payloadBytes,
                   const std::function<void(void *payload)> &fill);

  /// Waits until every message sent so far was handled by its receiver. Returns "" or the
  /// error, e.g. "rank 2 did not acknowledge within 5 s". `timeoutSeconds` <= 0 waits forever.
  std::string flush(double timeoutSeconds);

  /// Whether a message was sent since the last successful flush.
  bool unflushed() const;

  /// The first problem the receiving thread saw ("" when none): a handler's error, a malformed
  /// message, a socket error.
  std::string error() const;

  /// Bytes one message may carry (4 MiB).
  static constexpr size_t sendLimit() { return size_t(4) << 20; }

  struct Impl;

private:
  explicit EthernetTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace msccl::runtime
