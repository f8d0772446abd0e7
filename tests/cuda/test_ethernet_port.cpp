// Port channels between nodes, host-staged over TCP (EthernetPort.h), with the host
// implementation of the device layer: two ranks are threads of this process with their own
// communicators (the unique-id bootstrap on loopback) and transports. Checked: a put larger
// than one message lands whole at its offset before the signal that follows it is applied, and
// a put outside the receiver's buffer is dropped and reported, the buffer untouched.
#include "EthernetPort.h"

#include "../nccl/OnRanks.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace msccl;
using namespace msccl::cuda;
using namespace msccl::cuda::detail;
using msccl::test::onRanks;

namespace {

bool waitFor(const uint64_t &word, uint64_t value) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) < value)
    if (std::chrono::steady_clock::now() > deadline) return false;
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  return true;
}

char pattern(size_t i) { return char(i * 131 + (i >> 12)); }

} // namespace

TEST_CASE("a put to a rank of another node lands whole before the signal after it; a put outside its buffer is "
          "refused",
          "[cuda][ethernet]") {
  if (!runtime::EthernetTransport::available()) {
    WARN("skipped: this build has no ZeroMQ with CURVE");
    return;
  }
  const uint64_t bytes = 9 * runtime::EthernetTransport::sendLimit() / 4 + 12; // three messages
  const uint64_t offset = 100;
  onRanks(2, [&](int me, runtime::Communicator &comm) {
    std::unique_ptr<DeviceApi> api = makeHostDeviceApi();
    std::vector<char> input(16), output(offset + bytes, 0), scratch(16);
    uint64_t inbound[3] = {0, 0, 0};
    EthernetPort port(comm, *api, {1 - me}, 30);
    char *const buffers[3] = {input.data(), output.data(), scratch.data()};
    const uint64_t sizes[3] = {input.size(), output.size(), scratch.size()};
    port.receiveInto(0, buffers, sizes, inbound, 2);
    comm.barrier();
    if (me == 0) {
      std::vector<char> src(bytes);
      for (size_t i = 0; i < bytes; ++i) src[i] = pattern(i);
      DeviceStream stream = api->createStream(0);
      // Calls that wait for the other rank run outside RCHECK (it holds the test's one lock).
      const std::string put = port.put(0, stream, 1, 1, offset, src.data(), bytes);
      const std::string signal = port.signal(1, 1);
      const std::string flush = port.flush();
      const std::string outside = port.put(0, stream, 1, 1, output.size() - 10, src.data(), 20); // 10 bytes past rank 1's output
      const std::string flush2 = port.flush();
      RCHECK(put == "");
      RCHECK(signal == "");
      RCHECK(flush == "");
      RCHECK(outside == "");
      RCHECK(flush2 == "");
      api->destroyStream(0, stream);
    } else {
      const bool signalled = waitFor(inbound[1], 1); // outside RCHECK: it holds the test's lock
      RCHECK(signalled);
      bool same = true;
      for (size_t i = 0; i < bytes && same; ++i) same = output[offset + i] == pattern(i);
      RCHECK(same);
      RCHECK(inbound[0] == 0);
    }
    comm.barrier(); // rank 0's second flush returned: its bad put was handled
    if (me == 1) {
      RCHECK(port.error() == "rank 0 put 20 bytes at " + std::to_string(output.size() - 10) + " of buffer 1, outside it");
      RCHECK(output[output.size() - 1] == pattern(bytes - 1));
    } else {
      RCHECK(port.error() == "");
    }
    comm.barrier();
  });
}
