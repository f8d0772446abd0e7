//===- EthernetPort.cpp - Port channels between nodes, host-staged over TCP --------------===//
//
// See EthernetPort.h. A message header is a WireHeader; a put's bytes are the payload.
//
//===------------------------------------------------------------------------------------===//
#include "EthernetPort.h"

#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <cstring>

namespace msccl::cuda::detail {

namespace {

enum WireKind : uint32_t { Put = 1, Signal = 2 };

struct WireHeader {
  uint32_t kind;
  uint32_t index;  ///< Put: the buffer type (input, output, scratch); Signal: the receiver's port channel
  uint64_t offset; ///< Put: byte offset in that buffer
};

} // namespace

EthernetPort::EthernetPort(runtime::Communicator &comm, DeviceApi &api, const std::vector<int> &sendsTo, double timeoutSeconds)
    : api_(api), timeoutSeconds_(timeoutSeconds), transport_(runtime::EthernetTransport::open(comm, sendsTo)) {}

EthernetPort::~EthernetPort() { stopReceiving(); }

void EthernetPort::receiveInto(int device, char *const buffers[3], const uint64_t bufferBytes[3], uint64_t *portInbound,
                               uint32_t numPortChannels) {
  stopReceiving();
  target_.device = device;
  for (int i = 0; i < 3; ++i) {
    target_.buffers[i] = buffers[i];
    target_.bytes[i] = bufferBytes[i];
  }
  target_.portInbound = portInbound;
  target_.numPortChannels = numPortChannels;
  target_.stream = api_.createStream(device);
  transport_->setHandler([this](int from, const uint8_t *h, size_t hb, const uint8_t *p, size_t pb) {
    return apply(from, h, hb, p, pb);
  });
}

void EthernetPort::stopReceiving() {
  transport_->setHandler({}); // returns after a message being applied is done
  if (target_.stream) api_.destroyStream(target_.device, target_.stream);
  target_.stream = nullptr;
}

std::string EthernetPort::apply(int from, const uint8_t *header, size_t headerBytes, const uint8_t *payload,
                                size_t payloadBytes) {
  WireHeader h;
  if (headerBytes != sizeof h) return "a message of " + std::to_string(headerBytes) + " header bytes from rank " + std::to_string(from);
  std::memcpy(&h, header, sizeof h);
  if (h.kind == Signal) {
    if (h.index >= target_.numPortChannels)
      return "rank " + std::to_string(from) + " signalled port channel " + std::to_string(h.index) + " of " +
             std::to_string(target_.numPortChannels);
    __atomic_fetch_add(target_.portInbound + h.index, 1, __ATOMIC_RELEASE);
    api_.hostWrote(target_.portInbound + h.index);
    return "";
  }
  if (h.kind != Put || h.index > 2 || !target_.buffers[h.index] || h.offset > target_.bytes[h.index] ||
      payloadBytes > target_.bytes[h.index] - h.offset)
    return "rank " + std::to_string(from) + " put " + std::to_string(payloadBytes) + " bytes at " + std::to_string(h.offset) +
           " of buffer " + std::to_string(h.index) + ", outside it";
  try {
    api_.copyAsync(target_.device, target_.buffers[h.index] + h.offset, payload, payloadBytes, target_.stream);
    api_.synchronize(target_.device, target_.stream); // landed before the next message (a signal) is applied
  } catch (const std::exception &e) {
    return std::string("copying a put from rank ") + std::to_string(from) + ": " + e.what();
  }
  return "";
}

std::string EthernetPort::put(int device, DeviceStream stream, uint32_t rank, uint32_t type, uint64_t offset, const char *src,
                              uint64_t bytes) {
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(bytes - done, runtime::EthernetTransport::sendLimit());
    const WireHeader h{Put, type, offset + done};
    std::string copyError;
    std::string e = transport_->send(int(rank), &h, sizeof h, n, [&](void *payload) {
      try {
        api_.copyAsync(device, payload, src + done, n, stream);
        api_.synchronize(device, stream);
      } catch (const std::exception &ex) {
        copyError = ex.what();
      }
    });
    if (!copyError.empty()) return "copying a put for rank " + std::to_string(rank) + ": " + copyError;
    if (!e.empty()) return e;
    done += n;
  }
  return "";
}

std::string EthernetPort::signal(uint32_t rank, uint32_t channel) {
  const WireHeader h{Signal, channel, 0};
  return transport_->send(int(rank), &h, sizeof h, 0, {});
}

std::string EthernetPort::flush() { return transport_->flush(timeoutSeconds_); }

} // namespace msccl::cuda::detail
