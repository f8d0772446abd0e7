// The host implementation of the device layer (DeviceApi.h, HostDeviceApi.cpp): memory
// (zero-filled, owner lookup, guard pages), streams (in order), events (a stream waits for
// another stream's record), copies in whole 16-byte units that wake threads parked on a flag,
// and the threads-per-block option. The interpreter itself is tested through every plan by
// msccl_cuda_gpu_tests --device host (label device-host).
#include "DeviceApi.h"
#include "DevicePrimitives.cuh"
#include "HostKernel.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

using namespace msccl::cuda;

TEST_CASE("host device memory is zero-filled and knows its owner", "[cuda][host]") {
  HostDeviceOptions o;
  o.deviceCount = 4;
  auto api = makeHostDeviceApi(o);
  REQUIRE(api->deviceCount() == 4);
  REQUIRE(api->name() == "host");
  auto *p = static_cast<unsigned char *>(api->allocate(3, 1000));
  for (int i = 0; i < 1000; ++i) REQUIRE(p[i] == 0);
  CHECK(reinterpret_cast<uintptr_t>(p) % 256 == 0);
  CHECK(api->deviceOf(p) == 3);
  CHECK(api->deviceOf(p + 999) == 3);
  void *h = api->allocateHostMapped(64);
  CHECK(api->deviceOf(h) == -1);
  int local = 0;
  CHECK(api->deviceOf(&local) == -1);
  CHECK(api->canAccessPeer(0, 3));
  api->release(3, p);
  api->releaseHostMapped(h);
}

TEST_CASE("host device streams run in order and events order two streams", "[cuda][host]") {
  auto api = makeHostDeviceApi();
  const size_t n = 1 << 20;
  std::vector<char> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = char(i * 7 + 3);
  char *a = static_cast<char *>(api->allocate(0, n)), *b = static_cast<char *>(api->allocate(1, n)),
       *c = static_cast<char *>(api->allocate(2, n));
  api->copy(a, src.data(), n);
  DeviceStream s1 = api->createStream(0), s2 = api->createStream(1);
  DeviceEvent e = api->createEvent(0);
  api->copyAsync(0, b, a, n, s1); // b = a
  api->record(0, e, s1);
  api->streamWait(1, s2, e);      // s2 waits for the copy into b
  api->copyAsync(1, c, b, n, s2); // c = b
  api->synchronize(1, s2);
  CHECK(std::memcmp(c, src.data(), n) == 0);
  api->synchronize(0, s1);
  api->destroyEvent(0, e);
  api->destroyStream(0, s1);
  api->destroyStream(1, s2);
  api->release(0, a);
  api->release(1, b);
  api->release(2, c);
}

TEST_CASE("a copy wakes a host thread parked on a packet flag", "[cuda][host]") {
  auto api = makeHostDeviceApi();
  auto *dst = static_cast<uint32_t *>(api->allocate(0, 64));
  alignas(16) uint32_t packet[4] = {11, 5, 22, 5}; // LL16: data0, flag, data1, flag
  std::thread waiter([&] {
    uint32_t d0 = 0, d1 = 0, seen = 0;
    // Parks for at most 120 s per round: only the copy's wake-up ends this in time (ctest's
    // timeout fails the test otherwise).
    while (!dev::tryLoadLL16(dst, 5, d0, d1, seen)) dev::parkWord(dst + 1, seen, 120000000000ull);
    CHECK(d0 == 11);
    CHECK(d1 == 22);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // let it park
  DeviceStream s = api->createStream(0);
  api->copyAsync(0, dst, packet, 16, s);
  api->synchronize(0, s);
  waiter.join();
  api->destroyStream(0, s);
  api->release(0, dst);
}

TEST_CASE("host guard pages fault an access past the end of a buffer", "[cuda][host]") {
  HostDeviceOptions o;
  o.guardPages = true;
  auto api = makeHostDeviceApi(o);
  auto *p = static_cast<volatile char *>(api->allocate(0, 100));
  p[0] = 1;
  p[111] = 2; // the last byte of the 16-byte rounded body
  CHECK(api->deviceOf(const_cast<char *>(p)) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    p[112] = 3; // one past: the guard page
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSEGV);
  api->release(0, const_cast<char *>(p));
}

TEST_CASE("threads per block: the host's own count, the plan's on CUDA", "[cuda][host]") {
  HostDeviceOptions o;
  o.threadsPerBlock = 3;
  CHECK(makeHostDeviceApi(o)->threadsPerBlock(1024) == 3);
  o.threadsPerBlock = 0;
  CHECK(makeHostDeviceApi(o)->threadsPerBlock(1024) == 1);
}
