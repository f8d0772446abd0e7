// Host-only tests of the staging pool (StagingPool.h) with a counting allocator: repeated calls
// of one shape allocate once, buffers are not handed out twice in a call, a change of shape
// frees what is no longer used, and everything is freed once.
#include "StagingPool.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>

using msccl::cuda::detail::StagingPool;

namespace {

struct Counting {
  std::map<void *, std::pair<int, size_t>> live;
  size_t allocations = 0, frees = 0;
  StagingPool pool() {
    return StagingPool(
        [this](int dev, size_t bytes) {
          void *p = std::malloc(bytes ? bytes : 1);
          live[p] = {dev, bytes};
          ++allocations;
          return p;
        },
        [this](int dev, void *p) {
          REQUIRE(live.count(p));
          CHECK(live[p].first == dev);
          live.erase(p);
          std::free(p);
          ++frees;
        });
  }
};

} // namespace

TEST_CASE("staging buffers are reused across calls", "[cuda][staging]") {
  Counting c;
  {
    StagingPool pool = c.pool();
    for (int call = 0; call < 100; ++call) {
      pool.beginCall();
      void *a = pool.acquire(1, 4096), *b = pool.acquire(1, 4096), *d = pool.acquire(2, 1024);
      CHECK(a != b);
      CHECK(a != d);
      pool.endCall();
    }
    CHECK(c.allocations == 3); // one call's worth, not 300
    CHECK(pool.heldBuffers() == 3);
    CHECK(c.live.size() == 3);

    // A smaller request reuses a larger buffer of the same device, never one of another device.
    pool.beginCall();
    void *small = pool.acquire(2, 512);
    CHECK(c.live.at(small).first == 2);
    CHECK(c.allocations == 3);
    pool.endCall(); // the two 4 KiB buffers were not used by this call: freed
    CHECK(pool.heldBuffers() == 1);
    CHECK(pool.heldBytes() == 1024);
    CHECK(c.frees == 2);

    // A larger request than any held buffer allocates.
    pool.beginCall();
    pool.acquire(2, 8192);
    CHECK(c.allocations == 4);
    pool.endCall();
    CHECK(pool.heldBytes() == 8192);
  }
  CHECK(c.live.empty()); // the destructor freed the rest
  CHECK(c.frees == c.allocations);
}

TEST_CASE("the smallest fitting buffer is chosen", "[cuda][staging]") {
  Counting c;
  StagingPool pool = c.pool();
  pool.beginCall();
  void *big = pool.acquire(0, 1 << 20), *mid = pool.acquire(0, 1 << 12);
  pool.endCall();
  pool.beginCall();
  CHECK(pool.acquire(0, 100) == mid);
  CHECK(pool.acquire(0, 100) == big);
  pool.endCall();
  pool.clear();
  CHECK(c.live.empty());
}
