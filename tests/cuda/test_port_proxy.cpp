// Host-only tests of the port channel proxy (PortProxy.h). The test plays the kernel: it
// writes requests into FIFOs in ordinary host memory and watches the proxy serve them, with
// the host implementation of the device layer, so no GPU or driver is needed. Checked: flags
// in order and `completed` published; waitIdle; quiescence (tables rewritten while the proxy
// is stopped are the ones the restarted proxy uses, and nothing is served while stopped);
// requests to peers of other nodes through the rank's RemotePort, in order, flush included.
#include "PortProxy.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

using namespace msccl::cuda;
using namespace msccl::cuda::detail;

namespace {

/// One rank's FIFO as the kernel sees it.
struct Fifo {
  std::vector<DevProxyRequest> slots = std::vector<DevProxyRequest>(8);
  uint64_t completed = 0;
  uint64_t head = 0;

  ProxyRank rank() {
    ProxyRank r;
    r.slots = slots.data();
    r.completed = &completed;
    r.capacity = slots.size();
    return r;
  }
  /// Pushes a request, waiting for FIFO space like the kernel's fifoPush.
  void push(uint32_t meta, uint64_t size = 0, uint64_t srcOffset = 0, uint64_t dstOffset = 0) {
    const uint64_t idx = head++;
    while (idx - __atomic_load_n(&completed, __ATOMIC_ACQUIRE) >= slots.size()) std::this_thread::yield();
    DevProxyRequest &s = slots[idx % slots.size()];
    s.srcOffset = srcOffset;
    s.dstOffset = dstOffset;
    s.size = size;
    s.meta = meta;
    __atomic_store_n(&s.seq, uint32_t(idx + 1), __ATOMIC_RELEASE);
  }
  void flag(uint32_t channel) { push(proxyMeta(kProxyFlag, 0, channel, 0)); }
};

uint64_t load(const uint64_t &v) { return __atomic_load_n(&v, __ATOMIC_ACQUIRE); }

/// The host implementation of the device layer (its copies are host copies).
DeviceApi *hostApi() {
  static std::unique_ptr<DeviceApi> api = makeHostDeviceApi();
  return api.get();
}

} // namespace

TEST_CASE("the proxy serves flags in order and publishes progress", "[cuda][proxy]") {
  Fifo f0, f1;
  uint64_t targets[3] = {0, 0, 0};
  std::vector<ProxyRank> ranks = {f0.rank(), f1.rank()};
  ranks[0].flagTargets = {&targets[0], &targets[1]};
  ranks[1].flagTargets = {&targets[2]};
  PortProxy proxy;
  proxy.start(*hostApi(), &ranks);
  for (int i = 0; i < 20; ++i) { // more than the FIFO capacity: slots are recycled
    f0.flag(i % 2);
    f1.flag(0);
    f1.push(proxyMeta(kProxySync, 0, 0, 0));
  }
  REQUIRE(proxy.waitIdle({f0.head, f1.head}, 10.0));
  CHECK(load(f0.completed) == 20);
  CHECK(load(f1.completed) == 40);
  CHECK(load(targets[0]) == 10);
  CHECK(load(targets[1]) == 10);
  CHECK(load(targets[2]) == 20);
  CHECK(proxy.error().empty());
  CHECK(proxy.syncCopies().empty()); // no copy was issued: no CUDA call
  proxy.stop();
}

TEST_CASE("a stopped proxy serves nothing, and a restarted one uses the rewritten tables", "[cuda][proxy]") {
  Fifo f;
  uint64_t oldTarget = 0;
  std::vector<ProxyRank> ranks = {f.rank()};
  ranks[0].flagTargets = {&oldTarget};
  PortProxy proxy;
  proxy.start(*hostApi(), &ranks);
  f.flag(0);
  REQUIRE(proxy.waitIdle({f.head}, 10.0));
  CHECK(load(oldTarget) == 1);

  // Quiesce, then rewrite the tables (the vector reallocates: a data race if the thread ran).
  proxy.stop();
  CHECK_FALSE(proxy.running());
  std::vector<uint64_t> newTargets(64, 0);
  ranks[0].flagTargets.clear();
  for (uint64_t &t : newTargets) ranks[0].flagTargets.push_back(&t);
  f.flag(5);
  CHECK_FALSE(proxy.waitIdle({f.head}, 0.05)); // stopped: the request waits in the FIFO
  CHECK(load(f.completed) == 1);

  proxy.start(*hostApi(), &ranks);
  REQUIRE(proxy.waitIdle({f.head}, 10.0));
  CHECK(load(f.completed) == 2); // the tail survived the restart
  CHECK(load(newTargets[5]) == 1);
  CHECK(load(oldTarget) == 1);
  proxy.stop();
}

TEST_CASE("malformed requests are completed and reported", "[cuda][proxy]") {
  Fifo f;
  uint64_t target = 0;
  std::vector<ProxyRank> ranks = {f.rank()};
  ranks[0].flagTargets = {&target};
  PortProxy proxy;
  proxy.start(*hostApi(), &ranks);
  f.flag(3); // no channel 3
  REQUIRE(proxy.waitIdle({f.head}, 10.0));
  CHECK_THAT(proxy.error(), Catch::Contains("port signal on channel 3"));
  f.push(proxyMeta(kProxyData, 0, 0, 7), 64); // no remote buffer 7: no copy is attempted
  REQUIRE(proxy.waitIdle({f.head}, 10.0));
  CHECK(load(target) == 0);
  proxy.stop();
  proxy.start(*hostApi(), &ranks); // a restart clears the error
  CHECK(proxy.error().empty());
  proxy.stop();
}

namespace {

/// A RemotePort that records what the proxy asked of it, in order.
struct RecordingRemote final : RemotePort {
  std::vector<std::string> log;
  std::string put(int, DeviceStream, uint32_t rank, uint32_t type, uint64_t offset, const char *src, uint64_t bytes) override {
    log.push_back("put rank " + std::to_string(rank) + " type " + std::to_string(type) + " at " + std::to_string(offset) +
                  ": " + std::string(src, bytes));
    return "";
  }
  std::string signal(uint32_t rank, uint32_t channel) override {
    log.push_back("signal rank " + std::to_string(rank) + " channel " + std::to_string(channel));
    return "";
  }
  std::string flush() override {
    log.push_back("flush");
    return flushError;
  }
  std::string flushError;
};

} // namespace

TEST_CASE("requests to peers of other nodes go through the rank's RemotePort, in order", "[cuda][proxy]") {
  Fifo f;
  char local[16] = "abcdefghijklmno";
  char mapped[16] = {};
  uint64_t mappedTarget = 0;
  RecordingRemote remote;
  std::vector<ProxyRank> ranks = {f.rank()};
  ProxyRank &r = ranks[0];
  r.stream = hostApi()->createStream(0); // the mapped peer's copy runs there
  r.local[1] = local;                    // output
  r.remoteBases = {mapped, nullptr};     // buffer 0 mapped here, buffer 1 on another node
  r.flagTargets = {&mappedTarget, nullptr};
  r.remote = &remote;
  r.remoteBuffers = {RemoteTarget{}, RemoteTarget{3, 2}};   // rank 3's scratch
  r.remoteSignals = {RemoteTarget{}, RemoteTarget{3, 5}};   // rank 3's port channel 5
  PortProxy proxy;
  proxy.start(*hostApi(), &ranks);
  auto push = [&](uint32_t kind, uint32_t channel, uint32_t remoteBuffer, uint64_t src, uint64_t dst, uint64_t size) {
    f.push(proxyMeta(kind, 1, channel, remoteBuffer), size, src, dst); // from the output buffer
  };
  push(kProxyData | kProxyFlag, 1, 1, 2, 8, 3); // put "cde" to rank 3's scratch at 8, then signal it
  push(kProxyData | kProxyFlag, 0, 0, 0, 4, 2); // a mapped peer: a copy and a local counter
  push(kProxySync, 0, 0, 0, 0, 0);              // flush: the remote port too
  REQUIRE(proxy.waitIdle({f.head}, 10.0));
  CHECK(proxy.syncCopies().empty());
  CHECK(proxy.error().empty());
  CHECK(remote.log == std::vector<std::string>{"put rank 3 type 2 at 8: cde", "signal rank 3 channel 5", "flush", "flush"});
  CHECK(std::string(mapped + 4, 2) == "ab");
  CHECK(load(mappedTarget) == 1);
  remote.flushError = "rank 3 did not acknowledge within 1 s";
  push(kProxySync, 0, 0, 0, 0, 0);
  REQUIRE(proxy.waitIdle({f.head}, 10.0));
  CHECK_THAT(proxy.error(), Catch::Contains("port channel to another node: rank 3 did not acknowledge"));
  proxy.stop();
  hostApi()->destroyStream(0, r.stream);
}
