//===- EthernetTransportTest.cpp - Host-staged messages between ranks (EthernetTransport.h) ===//
//
// Ranks are threads of this process (OnRanks.h), each with its own transport over loopback TCP:
// order and payloads per sender, flush meaning "handled by the receiver", the errors of bad
// sends and bad messages, and a flush that gives up naming the rank that did not answer.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/EthernetTransport.h"

#include "msccl/runtime/Communicator.h"

#include "OnRanks.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace msccl::runtime;
using msccl::test::onRanks;

namespace {

struct Header {
  uint32_t seq;
  uint32_t from;
};

uint8_t pattern(uint32_t from, uint32_t seq, size_t i) { return uint8_t(from * 31 + seq * 7 + i); }

} // namespace

TEST_CASE("messages arrive in order per sender with their payloads, and flush returns once they are handled",
          "[ethernet]") {
  if (!EthernetTransport::available()) {
    WARN("skipped: this build has no ZeroMQ with CURVE");
    return;
  }
  const int n = 3;
  const uint32_t perPeer = 40;
  onRanks(n, [&](int me, Communicator &comm) {
    std::vector<int> others;
    for (int r = 0; r < n; ++r)
      if (r != me) others.push_back(r);
    std::vector<uint32_t> next(n, 0); // the receiving thread's view: the next seq expected per sender
    std::atomic<uint32_t> received{0}, wrong{0};
    auto t = EthernetTransport::open(comm, others); // destroyed (its thread stopped) before the above
    t->setHandler([&](int from, const uint8_t *h, size_t hb, const uint8_t *p, size_t pb) -> std::string {
      Header head;
      if (hb != sizeof head || from < 0 || from >= n) return "bad header";
      std::memcpy(&head, h, sizeof head);
      bool ok = head.from == uint32_t(from) && head.seq == next[from] && pb == size_t(head.seq) * 1000;
      for (size_t i = 0; ok && i < pb; ++i) ok = p[i] == pattern(head.from, head.seq, i);
      if (!ok) wrong.fetch_add(1);
      next[from] = head.seq + 1;
      received.fetch_add(1);
      return "";
    });
    comm.barrier(); // every handler is installed before anyone sends
    for (uint32_t seq = 0; seq < perPeer; ++seq)
      for (int r : others) {
        const Header h{seq, uint32_t(me)};
        RCHECK(t->send(r, &h, sizeof h, size_t(seq) * 1000, [&](void *p) {
          for (size_t i = 0; i < size_t(seq) * 1000; ++i) static_cast<uint8_t *>(p)[i] = pattern(uint32_t(me), seq, i);
        }) == "");
      }
    RCHECK(t->unflushed());
    const std::string flushed = t->flush(30); // outside RCHECK: it waits for the others, who may assert
    RCHECK(flushed == "");
    RCHECK(!t->unflushed());
    comm.barrier(); // every rank's flush returned: every message to this rank was handled
    RCHECK(received.load() == perPeer * uint32_t(n - 1));
    RCHECK(wrong.load() == 0);
    RCHECK(t->error() == "");
    comm.barrier(); // nobody closes while another still flushes
  });
}

TEST_CASE("bad sends are errors at the sender, bad messages are reported by the receiver", "[ethernet][hostile]") {
  if (!EthernetTransport::available()) {
    WARN("skipped: this build has no ZeroMQ with CURVE");
    return;
  }
  onRanks(2, [&](int me, Communicator &comm) {
    auto t = EthernetTransport::open(comm, {1 - me});
    t->setHandler([](int from, const uint8_t *, size_t hb, const uint8_t *, size_t) -> std::string {
      return hb == 1 ? "" : "rank " + std::to_string(from) + " sent a header of " + std::to_string(hb) + " bytes";
    });
    comm.barrier();
    const uint8_t h[2] = {1, 2};
    RCHECK(t->send(me, h, 1, 0, {}).find("rank " + std::to_string(me) + " is not connected") != std::string::npos);
    RCHECK(t->send(1 - me, h, 1, EthernetTransport::sendLimit() + 1, {}).find("too large") != std::string::npos);
    if (me == 0) RCHECK(t->send(1, h, 2, 0, {}) == ""); // the receiver's handler refuses it
    const std::string flushed = t->flush(30);
    RCHECK(flushed == "");
    comm.barrier();
    if (me == 1) RCHECK(t->error() == "rank 0 sent a header of 2 bytes");
    if (me == 0) RCHECK(t->error() == "");
    comm.barrier();
  });
}

TEST_CASE("a flush gives up naming the rank that did not acknowledge", "[ethernet][hostile]") {
  if (!EthernetTransport::available()) {
    WARN("skipped: this build has no ZeroMQ with CURVE");
    return;
  }
  onRanks(2, [&](int me, Communicator &comm) {
    std::atomic<bool> release{false};
    auto t = EthernetTransport::open(comm, {1 - me});
    t->setHandler([&](int, const uint8_t *, size_t, const uint8_t *, size_t) -> std::string {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5)); // a stuck receiver
      return "";
    });
    comm.barrier();
    if (me == 0) {
      const uint8_t h = 0;
      RCHECK(t->send(1, &h, 1, 0, {}) == "");
      const auto t0 = std::chrono::steady_clock::now();
      const std::string e = t->flush(0.3);
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      RCHECK(e.find("rank 1 did not acknowledge within 0.3") != std::string::npos);
      RCHECK(waited >= 0.3);
      RCHECK(t->unflushed());
    }
    comm.barrier();
    release = true;
    const std::string late = me == 0 ? t->flush(30) : ""; // the late acknowledgement still counts
    RCHECK(late == "");
    comm.barrier();
  });
}
