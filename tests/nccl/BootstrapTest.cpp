//===- BootstrapTest.cpp - The unique-id bootstrap (ZeroMQ + POSIX shm) on loopback --------===//
//
// Ranks are threads of this process (OnRanks.h): exchange results, deadlines,
// shared segments with put/add, emulated nodes, and the errors of bad ids and bad jobs.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/DistributedRun.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Verify.h"
#include "msccl/plan/PlanJson.h"

#include "OnRanks.h"

#include <catch2/catch.hpp>

#ifdef MSCCL_TEST_HAVE_ZMQ
#include <zmq.h>
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace msccl::runtime;
using msccl::test::onRanks;

namespace {

/// Every rank's error message of a job expected to fail at init.
std::vector<std::string> initErrors(const UniqueId &id, const std::vector<std::pair<int, int>> &rankSize,
                                    double timeout) {
  std::vector<std::string> errors(rankSize.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < rankSize.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        BootstrapOptions o;
        o.timeoutSeconds = timeout;
        auto comm = Communicator::initFromUniqueId(id, rankSize[i].first, rankSize[i].second, o);
        errors[i] = "<no error>";
      } catch (const ExecutionError &e) {
        errors[i] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  return errors;
}

} // namespace

TEST_CASE("ranks exchange bytes, sums and maxima through rank 0", "[bootstrap]") {
  RCHECK(Communicator::haveUniqueIdBootstrap());
  unsetenv("MSCCL_RANKS_PER_NODE");
  const int n = 4;
  onRanks(n, [&](int r, Communicator &c) {
    RCHECK(c.rank() == r);
    RCHECK(c.size() == n);
    RCHECK(c.numNodes() == 1);
    RCHECK(c.nodeRanks() == std::vector<int>{0, 1, 2, 3});
    uint32_t mine[2] = {uint32_t(100 + r), uint32_t(r * r)};
    auto all = c.allGather(mine, sizeof mine);
    RCHECK(all.size() == size_t(n));
    for (int q = 0; q < n; ++q) {
      uint32_t got[2];
      RCHECK(all[size_t(q)].size() == sizeof got);
      std::memcpy(got, all[size_t(q)].data(), sizeof got);
      RCHECK(got[0] == uint32_t(100 + q));
      RCHECK(got[1] == uint32_t(q * q));
    }
    // (collectives run outside the assertion lock)
    const uint64_t sum = c.allReduceSum(uint64_t(r + 1)), maxU = c.allReduceMax(uint64_t(7 * r));
    const double maxD = c.allReduceMax(0.5 * r);
    RCHECK(sum == 10);
    RCHECK(maxU == 21);
    RCHECK(maxD == 1.5);
    c.barrier();
    const bool met = c.barrierUntil(monotonicSeconds() + 30);
    RCHECK(met);
    uint64_t v = uint64_t(r == 2 ? 99 : r);
    const bool reduced = c.allReduceMaxUntil(v, monotonicSeconds() + 30);
    RCHECK(reduced);
    RCHECK(v == 99);
  });
}

TEST_CASE("a barrier with a deadline gives up when a rank does not come", "[bootstrap]") {
  onRanks(2, [&](int r, Communicator &c) {
    if (r == 0) {
      double t0 = monotonicSeconds();
      const bool met = c.barrierUntil(t0 + 0.3);
      RCHECK(!met);
      RCHECK(monotonicSeconds() - t0 < 5);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
    }
    // After a timeout only abort() is promised: rank 0's closing tells rank 1, whose own
    // closing barrier then ends at once instead of waiting for its deadline.
  });
}

TEST_CASE("an exchange after the rendezvous names the rank it waits for within MSCCL_TIMEOUT", "[bootstrap][hostile]") {
  // Before: allGather and barrier waited forever for a dead peer (gather(..., -1)).
  ::setenv("MSCCL_TIMEOUT", "0.5", 1);
  std::vector<std::string> errors(3);
  onRanks(3, [&](int r, Communicator &c) {
    if (r == 2) { // alive, but never joins the exchange (as a rank that died after the rendezvous)
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return;
    }
    const double t0 = monotonicSeconds();
    try {
      c.barrier();
    } catch (const ExecutionError &e) {
      std::lock_guard<std::mutex> lock(msccl::test::gCatchMu);
      errors[size_t(r)] = e.what();
      if (r == 0)
        CHECK(e.kind() == ErrorKind::Deadlock);
      CHECK(monotonicSeconds() - t0 < 5);
    }
  });
  ::unsetenv("MSCCL_TIMEOUT");
  CHECK_THAT(errors[0], Catch::Contains("rank(s) 2 did not join it") && Catch::Contains("MSCCL_TIMEOUT"));
  CHECK_THAT(errors[1], Catch::Contains("rank 0")); // timed out too, or told that rank 0 gave up
}

#ifdef MSCCL_TEST_HAVE_ZMQ
namespace {
/// A local attacker's forged frames: it learns the endpoint (ss -ltn) and the nonce (it names
/// the /dev/shm segments) and sends well-formed frames from a plain socket and from a CURVE one
/// with a guessed server key: a hello as rank 1 (which used to win the rank and lock the real
/// one out) and an abort with its own exit code 77 (which rank 0 used to obey, exiting this test
/// process). Returns the open sockets (closed by closeForged).
std::vector<void *> forgePeers(void *ctx, const UniqueId &id) {
  uint64_t nonce;
  std::memcpy(&nonce, id.bytes + 8, sizeof nonce);
  const std::string endpoint(reinterpret_cast<const char *>(id.bytes) + 48);
  struct Frame {
    uint64_t nonce;
    uint32_t kind;
    int32_t rank;
    uint64_t seq;
    int64_t value;
  };
  std::vector<void *> sockets;
  for (int curve = 0; curve < 2; ++curve) { // plain, and CURVE with a guessed server key
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (curve) {
      char pub[41], sec[41], guess[41], unused[41];
      zmq_curve_keypair(pub, sec);
      zmq_curve_keypair(guess, unused);
      zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, guess, 40);
      zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 40);
      zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 40);
    }
    if (zmq_connect(s, endpoint.c_str()) != 0)
      continue;
    Frame hello{nonce, 1, 1, 0, 2}, abort{nonce, 6, 1, 0, 77};
    zmq_send(s, &hello, sizeof hello, ZMQ_DONTWAIT);
    zmq_send(s, &abort, sizeof abort, ZMQ_DONTWAIT);
    sockets.push_back(s);
  }
  return sockets;
}
void closeForged(void *ctx, const std::vector<void *> &sockets) {
  for (void *s : sockets)
    zmq_close(s);
  zmq_ctx_term(ctx);
}
} // namespace

TEST_CASE("a process without the id's key can neither join nor abort the job", "[bootstrap][hostile]") {
  // Without the CURVE key the attacker's handshake fails and no byte reaches rank 0.
  UniqueId id = Communicator::createUniqueId();
  REQUIRE(std::string(reinterpret_cast<const char *>(id.bytes) + 48).rfind("tcp://", 0) == 0);
  void *ctx = zmq_ctx_new();
  std::vector<void *> sockets = forgePeers(ctx, id);
  REQUIRE(sockets.size() == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  onRanks(id, 2, [&](int r, Communicator &c) {
    const uint64_t sum = c.allReduceSum(uint64_t(r + 1));
    RCHECK(sum == 3);
  });
  closeForged(ctx, sockets);
}

TEST_CASE("another user's forged peers can neither join nor abort the job", "[bootstrap][hostile]") {
  // The same attack from a process of another user (nobody, uid 65534), as on a shared node.
  // Only root can start one: elsewhere the test says so and checks nothing.
  if (geteuid() != 0) {
    WARN("skipped: not root, so no process of another user can be started here");
    return;
  }
  UniqueId id = Communicator::createUniqueId();
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) { // the attacker: drop to nobody first, then a ZeroMQ context of its own
    close(ready[0]);
    int code = setgroups(0, nullptr) == 0 && setgid(65534) == 0 && setuid(65534) == 0 && getuid() == 65534 ? 0 : 3;
    void *ctx = zmq_ctx_new();
    std::vector<void *> sockets = code ? std::vector<void *>{} : forgePeers(ctx, id);
    if (!code && sockets.size() != 2)
      code = 4;
    char byte = char(code);
    (void)!write(ready[1], &byte, 1);
    std::this_thread::sleep_for(std::chrono::seconds(2)); // keep trying while the job runs
    closeForged(ctx, sockets);
    _exit(code);
  }
  close(ready[1]);
  char byte = 9;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  close(ready[0]);
  REQUIRE(int(byte) == 0); // the attacker runs as nobody and its frames are on their way
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  onRanks(id, 2, [&](int r, Communicator &c) {
    const uint64_t sum = c.allReduceSum(uint64_t(r + 1));
    RCHECK(sum == 3);
  });
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif

TEST_CASE("an id created before fork() is refused at once in the child that joins as rank 0", "[bootstrap][hostile]") {
  // Before: the child used its parent's ZeroMQ socket and waited out the rendezvous (120 s).
  UniqueId id = Communicator::createUniqueId();
  const double t0 = monotonicSeconds();
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 3;
    try {
      BootstrapOptions o;
      o.timeoutSeconds = 20;
      Communicator::initFromUniqueId(id, 0, 2, o);
      code = 1;
    } catch (const std::exception &e) {
      code = std::strstr(e.what(), "which then forked this one") ? 0 : 2;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(monotonicSeconds() - t0 < 10);
  // (The parent keeps the id's socket; this test does not run a job on it after the fork:
  // ZeroMQ promises nothing about a context that a child inherited.)
}

TEST_CASE("a rank whose segment cannot be created leaves no other rank's segment behind", "[bootstrap][hostile]") {
  UniqueId id = Communicator::createUniqueId();
  uint64_t nonce;
  std::memcpy(&nonce, id.bytes + 8, sizeof nonce);
  auto name = [&](int rank) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "/msccl-%016llx-1-%d", static_cast<unsigned long long>(nonce), rank);
    return std::string(buf);
  };
  // Rank 1's name for the first allocation is taken: its shm_open (O_EXCL) fails.
  int planted = ::shm_open(name(1).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  REQUIRE(planted >= 0);
  ::close(planted);
  std::vector<std::string> errors(3);
  onRanks(id, 3, [&](int r, Communicator &c) {
    try {
      c.allocateShared(4096);
    } catch (const ExecutionError &e) {
      std::lock_guard<std::mutex> lock(msccl::test::gCatchMu);
      errors[size_t(r)] = e.what();
    }
  });
  ::shm_unlink(name(1).c_str());
  CHECK_THAT(errors[0], Catch::Contains("rank 1 could not set up its shared memory"));
  CHECK_THAT(errors[1], Catch::Contains("shm_open"));
  for (int r : {0, 2}) { // created, then abandoned when rank 1 failed: gone
    int fd = ::shm_open(name(r).c_str(), O_RDONLY, 0);
    CHECK(fd < 0);
    if (fd >= 0) {
      ::close(fd);
      ::shm_unlink(name(r).c_str());
    }
  }
}

TEST_CASE("a timed-out run stops its own communicator's later runs, not another's", "[bootstrap][hostile]") {
  // Before: one timeout set a process-wide flag and every later run in the process refused.
  auto load = [](const char *name) {
    std::ifstream f(std::string(MSCCL_TEST_PLANS_DIR) + "/" + name);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return msccl::plan::parsePlan(text);
  };
  const msccl::plan::Plan deadlock = load("deadlock_wait_before_signal.json");
  const msccl::plan::Plan good = load("ok_pws_memory_wait_read.json");
  RunOptions o;
  o.size = 4096;
  o.check = false;
  DistributedOptions quick;
  quick.timeoutSeconds = 0.5;
  std::vector<std::string> first(2), second(2);
  onRanks(2, [&](int r, Communicator &c) {
    for (std::string *out : {&first[size_t(r)], &second[size_t(r)]})
      try {
        DistributedSession s(c, deadlock, o, quick);
        s.execute([](uint8_t *) {}, 0, 1);
      } catch (const ExecutionError &e) {
        std::lock_guard<std::mutex> lock(msccl::test::gCatchMu);
        *out = e.what();
      }
  });
  CHECK_THAT(first[0], Catch::Contains("did not finish within"));
  CHECK_THAT(second[0], Catch::Contains("not run: size 4096 timed out"));
  CHECK_THAT(second[1], Catch::Contains("not run: size 4096 timed out"));
  // A new job in the same process runs.
  onRanks(2, [&](int, Communicator &c) {
    RCHECK(c.stopped().empty());
    DistributedSession s(c, good, o, quick);
    s.execute([](uint8_t *in) { std::memset(in, 1, 16); }, 0, 1);
  });
}

TEST_CASE("shared segments: node peers map each other, put/add reach every rank", "[bootstrap]") {
  setenv("MSCCL_RANKS_PER_NODE", "2", 1);
  onRanks(4, [&](int r, Communicator &c) {
    RCHECK(c.numNodes() == 2);
    RCHECK(c.node() == r / 2);
    RCHECK(c.describeNodes() == "2 nodes: {0,1} {2,3} (MSCCL_RANKS_PER_NODE=2)");
    auto shm = c.allocateShared(r == 3 ? 200 : 100); // each rank its own size, rounded up to 64 bytes
    for (int q = 0; q < 4; ++q)
      RCHECK(shm->size(q) == (q == 3 ? 256u : 128u));
    for (int q = 0; q < 4; ++q)
      RCHECK((shm->peer(q) != nullptr) == (q / 2 == r / 2));
    size_t nonZero = 0;
    for (uint64_t i = 0; i < shm->size(r); ++i)
      nonZero += shm->local()[i] != 0;
    RCHECK(nonZero == 0);
    c.barrier();
    // Every rank puts its id into byte 8*r.. of the next rank's segment and adds 1 to word 0 of
    // every segment.
    const int next = (r + 1) % 4;
    uint64_t word = 1000 + uint64_t(r);
    shm->put(next, 8 * uint64_t(r + 1), &word, sizeof word);
    for (int q = 0; q < 4; ++q)
      shm->add(q, 0, 1);
    shm->flushAll();
    c.barrier();
    uint64_t got[5];
    std::memcpy(got, shm->local(), sizeof got);
    RCHECK(got[0] == 4);
    const int prev = (r + 3) % 4;
    RCHECK(got[prev + 1] == 1000 + uint64_t(prev));
    // A node peer's segment is the same memory.
    int peerRank = r ^ 1;
    uint64_t seen;
    std::memcpy(&seen, shm->peer(peerRank), sizeof seen);
    RCHECK(seen == 4);
    c.barrier();
  });
  unsetenv("MSCCL_RANKS_PER_NODE");
}

TEST_CASE("bad ids and bad jobs are refused with a clear error", "[bootstrap]") {
  SECTION("not an id") {
    UniqueId junk{};
    std::memset(junk.bytes, 'x', sizeof junk.bytes);
    CHECK_THROWS_WITH(Communicator::initFromUniqueId(junk, 0, 2),
                      Catch::Contains("not a unique id made by createUniqueId"));
  }
  SECTION("rank out of range") {
    UniqueId id = Communicator::createUniqueId();
    CHECK_THROWS_WITH(Communicator::initFromUniqueId(id, 3, 2), Catch::Contains("rank 3 of 2 is out of range"));
  }
  SECTION("ranks disagree on the size") {
    UniqueId id = Communicator::createUniqueId();
    auto errors = initErrors(id, {{0, 2}, {1, 3}}, 10);
    CHECK_THAT(errors[0], Catch::Contains("rank 1 joined a job of 3 ranks, rank 0 one of 2"));
    CHECK_THAT(errors[1], Catch::Contains("rank 1 joined a job of 3 ranks, rank 0 one of 2"));
  }
  SECTION("two processes claim one rank") {
    UniqueId id = Communicator::createUniqueId();
    auto errors = initErrors(id, {{0, 3}, {1, 3}, {1, 3}}, 10);
    CHECK_THAT(errors[0], Catch::Contains("two processes joined as rank 1"));
  }
  SECTION("a missing rank ends init at the timeout, naming it") {
    UniqueId id = Communicator::createUniqueId();
    auto errors = initErrors(id, {{0, 3}, {2, 3}}, 0.5);
    CHECK_THAT(errors[0], Catch::Contains("ranks {1} did not join"));
    CHECK_THAT(errors[1], Catch::Contains("ranks {1} did not join"));
  }
  SECTION("environment: a missing variable is named") {
    unsetenv("WORLD_SIZE");
    CHECK_THROWS_WITH(Communicator::initFromEnvironment(), Catch::Contains("WORLD_SIZE is not set"));
  }
}

// Run as two processes by ctest (nccl.bootstrap-env): RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT as torchrun sets them; the job meets at MASTER_PORT + 1.
TEST_CASE("torchrun's variables bootstrap a job", "[.torchrun]") {
  BootstrapOptions o;
  o.timeoutSeconds = 30;
  auto c = Communicator::initFromEnvironment(o);
  const int r = std::atoi(std::getenv("RANK"));
  CHECK(c->rank() == r);
  CHECK(c->size() == std::atoi(std::getenv("WORLD_SIZE")));
  CHECK(c->allReduceSum(uint64_t(5 + r)) == uint64_t(5 * c->size() + c->size() * (c->size() - 1) / 2));
  auto shm = c->allocateShared(64);
  shm->add(0, 0, uint64_t(r + 1));
  shm->flushAll();
  c->barrier();
  if (r == 0) {
    uint64_t v;
    std::memcpy(&v, shm->local(), sizeof v);
    CHECK(v == uint64_t(c->size() * (c->size() + 1) / 2));
  }
  c->barrier();
}
