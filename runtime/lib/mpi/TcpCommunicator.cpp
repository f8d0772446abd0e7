//===- TcpCommunicator.cpp - Unique-id bootstrap: ZeroMQ rendezvous, POSIX shared memory --===//
//
// Consumes a UniqueId (or RANK/WORLD_SIZE/MASTER_ADDR) and produces a Communicator with no MPI
// (one of the two bootstraps of CommunicatorImpl.h):
//   * rendezvous: rank 0 owns a ZeroMQ ROUTER socket bound to the id's TCP endpoint, every other
//     rank a DEALER socket whose routing id is its rank. The sockets are CURVE-secured: rank 0's
//     secret key is 256 random bits from the OS carried in the id (torchrun: derived from
//     MSCCL_BOOTSTRAP_SECRET / TORCHELASTIC_RUN_ID), so only holders of the id can connect and
//     every message is authenticated. Each rank says hello (nonce, rank, size, host key); rank 0
//     checks them all (in range, distinct, same size, one host) and answers every rank with the
//     host keys, or with the error every rank then throws;
//   * exchange: every collective is a numbered gather at rank 0 followed by its broadcast
//     (allGather; barrier = empty allGather; reductions are done locally on the gathered
//     words). Waits poll with deadlines (barrierUntil / allReduceMaxUntil / init);
//   * abort: the aborting rank tells rank 0, rank 0 tells every rank; a rank that hears of an
//     abort while it waits exits with the same code, so no process stays behind;
//   * memory: one POSIX shared-memory segment per rank (shm_open + ftruncate + mmap), mapped
//     by every rank (one machine), unlinked once all mapped; put / add / flush are memcpy /
//     atomic add / sequentially consistent fence; peer() exposes the node's segments only,
//     so MSCCL_RANKS_PER_NODE emulates nodes as the MPI bootstrap does.
// Why ZeroMQ: a maintained library (Debian libzmq3-dev) that does the framing, reconnection
// and polling a hand-made socket protocol would redo; see docs/integration.md.
//
//===------------------------------------------------------------------------------------===//
#include "CommunicatorImpl.h"
#include "Rendezvous.h"

#include "msccl/runtime/Executor.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef MSCCL_HAVE_ZMQ
#include <zmq.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SHA256.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#endif

namespace msccl::runtime {

#ifndef MSCCL_HAVE_ZMQ

namespace {
[[noreturn]] void unavailable() {
  throw ExecutionError(ErrorKind::Backend, "the unique-id bootstrap is unavailable: msccl was built without ZeroMQ "
                                           "(install libzmq3-dev and rebuild), use mpirun and the MPI bootstrap");
}
} // namespace
bool Communicator::haveUniqueIdBootstrap() { return false; }
UniqueId Communicator::createUniqueId() { unavailable(); }
std::unique_ptr<Communicator> Communicator::initFromUniqueId(const UniqueId &, int, int, const BootstrapOptions &) {
  unavailable();
}
std::unique_ptr<Communicator> Communicator::initFromEnvironment(const BootstrapOptions &) { unavailable(); }

#else

namespace {

constexpr char kMagic[8] = {'M', 'S', 'C', 'C', 'L', 'I', 'D', '2'};
constexpr size_t kKeyBytes = 32; ///< a CURVE (Curve25519) secret key

/// The id's layout inside UniqueId::bytes.
struct IdLayout {
  char magic[8];
  uint64_t nonce;          ///< names the job's segments and messages; not a secret
  uint8_t key[kKeyBytes];  ///< rank 0's CURVE secret key: whoever holds the id can join, nobody else
  char endpoint[80];       // "tcp://a.b.c.d:port", NUL-terminated
};
static_assert(sizeof(IdLayout) == sizeof(UniqueId), "the id fills ncclUniqueId's 128 bytes");

constexpr int64_t kMaxMessageBytes = int64_t(16) << 20;
constexpr double kDefaultExchangeTimeout = 600; // PyTorch's NCCL process groups: 10 minutes

[[noreturn]] void fail(const std::string &msg) {
  throw ExecutionError(ErrorKind::Backend, "bootstrap: " + msg);
}

std::string zmqError(const char *what) { return std::string(what) + ": " + zmq_strerror(zmq_errno()); }

// One ZeroMQ context per process, terminated when its last socket closes (zmq_ctx_term waits
// for lingering messages, so a rank's last answers reach the others before the process exits).
std::mutex gCtxMu;
void *gCtx = nullptr;
int gSockets = 0;
// Sockets bound by createUniqueId, waiting for this process's rank 0 to take them over.
struct PendingRoot {
  void *socket;
  pid_t creator; ///< ZeroMQ sockets do not survive fork(): a child must not use its parent's
};
std::map<uint64_t, PendingRoot> gPending;

void *openSocket(int type) {
  std::lock_guard<std::mutex> lock(gCtxMu);
  if (!gCtx && !(gCtx = zmq_ctx_new()))
    fail(zmqError("zmq_ctx_new"));
  void *s = zmq_socket(gCtx, type);
  if (!s)
    fail(zmqError("zmq_socket"));
  int linger = 1000; // ms a closing socket keeps trying to deliver (zmq_ctx_term waits that long)
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  // Every message of the protocol is a header and a few words per rank: a peer announcing a
  // larger frame is dropped by ZeroMQ before anything is allocated for it.
  int64_t maxMessage = kMaxMessageBytes;
  zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxMessage, sizeof maxMessage);
  ++gSockets;
  return s;
}

void closeSocket(void *s) {
  std::lock_guard<std::mutex> lock(gCtxMu);
  zmq_close(s);
  if (--gSockets == 0) {
    zmq_ctx_term(gCtx);
    gCtx = nullptr;
  }
}

/// A positive number of seconds from environment variable `name`, or `fallback` when unset.
double secondsFromEnv(const char *name, double fallback) {
  const char *t = std::getenv(name);
  if (!t || !*t)
    return fallback;
  char *end = nullptr;
  double v = std::strtod(t, &end);
  if (*end != '\0' || !(v > 0))
    fail(std::string(name) + "='" + t + "' is not a positive number of seconds");
  return v;
}

/// Seconds an exchange after the rendezvous (allGather, barrier) waits for its peers before it
/// names the ranks it still waits for: MSCCL_TIMEOUT, default kDefaultExchangeTimeout.
double exchangeTimeout() { return secondsFromEnv("MSCCL_TIMEOUT", kDefaultExchangeTimeout); }

double defaultTimeout(const BootstrapOptions &o) {
  return o.timeoutSeconds > 0 ? o.timeoutSeconds : secondsFromEnv("MSCCL_BOOTSTRAP_TIMEOUT", 120);
}

/// IPv4 address of `host` (a dotted address or a name), for bind/connect.
std::string resolve(const std::string &host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res)
    fail("cannot resolve host '" + host + "': " + gai_strerror(rc));
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(res->ai_addr)->sin_addr, buf, sizeof buf);
  freeaddrinfo(res);
  return buf;
}

using namespace rendezvous; // Kind, Header, Message, encode/decode, RootRendezvous (Rendezvous.h)

struct TcpComm final : Communicator::Impl {
  void *sock = nullptr;
  uint64_t nonce = 0;
  uint64_t seq = 0;
  uint64_t allocations = 0;
  double timeout = 120;
  double exchangeTimeoutSeconds = kDefaultExchangeTimeout; ///< allGather / barrier after the rendezvous
  std::string endpoint;
  std::vector<std::string> routes; // rank 0: each rank's ZeroMQ routing id (from its hello)
  bool broken = false;             // an exchange was abandoned (timeout) or found out of step

  ~TcpComm() override {
    if (!sock)
      return;
    // Collective close: nobody's socket (and no answer still queued in it) goes away before
    // every rank is here.
    try {
      if (rank == 0 && broken) // nobody can meet rank 0 in step any more: tell them it left
        for (int r = 1; r < size; ++r)
          sendTo(r, Closed, 0, 0, nullptr, 0);
      else
        barrierUntil(monotonicSeconds() + std::min(timeout, 10.0));
    } catch (...) { // a rank out of step after an abandoned exchange: close anyway
    }
    closeSocket(sock);
  }

  // --- messages -----------------------------------------------------------------------
  void sendTo(int rank, uint32_t kind, uint64_t s, int64_t value, const void *data, size_t bytes) {
    const std::string buf = encode(Header{nonce, kind, this->rank, s, value}, data, bytes);
    if (this->rank == 0) {
      const std::string &id = routes.at(size_t(rank));
      if (zmq_send(sock, id.data(), id.size(), ZMQ_SNDMORE) < 0 || zmq_send(sock, buf.data(), buf.size(), 0) < 0)
        fail(zmqError(("sending to rank " + std::to_string(rank)).c_str()));
    } else if (zmq_send(sock, buf.data(), buf.size(), 0) < 0) {
      fail(zmqError("sending to rank 0"));
    }
  }

  /// Next message before `deadline` (< 0: none); false on timeout. Acts on an Abort itself.
  bool receive(Message &m, double deadline) {
    std::string route;
    return receive(m, deadline, route);
  }
  bool receive(Message &m, double deadline, std::string &route) {
    for (;;) {
      zmq_pollitem_t item{sock, 0, ZMQ_POLLIN, 0};
      long waitMs = -1;
      if (deadline >= 0) {
        double left = deadline - monotonicSeconds();
        if (left <= 0)
          return false;
        waitMs = std::max(1L, long(left * 1000));
      }
      int rc = zmq_poll(&item, 1, std::min(waitMs < 0 ? 1000L : waitMs, 1000L));
      if (rc < 0) {
        if (zmq_errno() == EINTR)
          continue;
        fail(zmqError("zmq_poll"));
      }
      if (rc == 0)
        continue;
      std::vector<std::string> parts;
      int more = 0;
      do {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, 0) < 0) {
          zmq_msg_close(&part);
          fail(zmqError("zmq_msg_recv"));
        }
        parts.emplace_back(static_cast<const char *>(zmq_msg_data(&part)), zmq_msg_size(&part));
        more = zmq_msg_more(&part);
        zmq_msg_close(&part);
      } while (more);
      if (!decode(parts, nonce, m, route))
        continue; // not ours, or a stray peer of another job
      if (m.h.kind == Closed) {
        broken = true;
        fail("rank 0 left the job after an abandoned exchange");
      }
      if (m.h.kind == Abort) {
        if (rank == 0)
          for (int r = 1; r < size; ++r)
            if (r != m.h.rank)
              try {
                sendTo(r, Abort, 0, m.h.value, nullptr, 0);
              } catch (...) {
              }
        std::fprintf(stderr, "msccl: rank %d: rank %d aborted the job (code %lld)\n", rank, m.h.rank,
                     static_cast<long long>(m.h.value));
        closeAndExit(int(m.h.value));
      }
      return true;
    }
  }

  [[noreturn]] void closeAndExit(int code) {
    if (sock) {
      closeSocket(sock); // flushes queued Abort messages (linger)
      sock = nullptr;
    }
    std::_Exit(code);
  }

  // --- collectives --------------------------------------------------------------------
  /// One numbered gather + broadcast; false on timeout (deadline < 0: none).
  /// `waitingFor` (when given) names whom a timed-out exchange still waited for.
  bool gather(const void *data, size_t bytes, std::vector<uint8_t> &all, double deadline,
              std::string *waitingFor = nullptr) {
    const uint64_t s = ++seq;
    all.assign(bytes * size_t(size), 0);
    if (rank != 0) {
      sendTo(0, Gather, s, int64_t(bytes), data, bytes);
      Message m;
      for (;;) {
        if (!receive(m, deadline)) {
          if (waitingFor)
            *waitingFor = "rank 0 (which gathers every exchange) did not answer";
          return broken = true, false;
        }
        if (m.h.kind == Gathered && m.h.seq == s)
          break;
      }
      if (m.data.size() != all.size())
        fail("rank 0 answered exchange " + std::to_string(s) + " with " + std::to_string(m.data.size()) +
             " bytes, expected " + std::to_string(all.size()) + " (ranks out of step)");
      if (!all.empty()) // a barrier gathers nothing (memcpy's pointers must not be null)
        std::memcpy(all.data(), m.data.data(), all.size());
      return true;
    }
    if (bytes)
      std::memcpy(all.data(), data, bytes);
    std::vector<bool> have(size_t(size), false);
    have[0] = true;
    for (int got = 1; got < size;) {
      Message m;
      if (!receive(m, deadline)) {
        if (waitingFor) {
          std::string missing;
          for (int r = 1; r < size; ++r)
            if (!have[size_t(r)])
              missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          *waitingFor = "rank(s) " + missing + " did not join it";
        }
        return broken = true, false;
      }
      if (m.h.kind != Gather || m.h.rank <= 0 || m.h.rank >= size || have[size_t(m.h.rank)])
        continue;
      if (m.h.seq != s || m.data.size() != bytes)
        broken = true, fail("rank " + std::to_string(m.h.rank) + " is out of step: exchange " + std::to_string(m.h.seq) + " of " +
             std::to_string(m.data.size()) + " bytes, rank 0 is in exchange " + std::to_string(s) + " of " +
             std::to_string(bytes) + " bytes");
      if (bytes)
        std::memcpy(all.data() + bytes * size_t(m.h.rank), m.data.data(), bytes);
      have[size_t(m.h.rank)] = true;
      ++got;
    }
    for (int r = 1; r < size; ++r)
      sendTo(r, Gathered, s, 0, all.data(), all.size());
    return true;
  }

  std::vector<uint8_t> allGather(const void *data, size_t bytes) override {
    std::vector<uint8_t> all;
    std::string waitingFor;
    if (!gather(data, bytes, all, monotonicSeconds() + exchangeTimeoutSeconds, &waitingFor))
      throw ExecutionError(ErrorKind::Deadlock, "bootstrap: rank " + std::to_string(rank) + ": exchange " +
                                                    std::to_string(seq) + ": " + waitingFor + " within " +
                                                    std::to_string(int(exchangeTimeoutSeconds)) +
                                                    " s (MSCCL_TIMEOUT): a peer died or stopped calling");
    return all;
  }
  template <class T, class F> T reduce(T v, F f) {
    std::vector<uint8_t> all = allGather(&v, sizeof v);
    T acc;
    std::memcpy(&acc, all.data(), sizeof acc);
    for (int r = 1; r < size; ++r) {
      T x;
      std::memcpy(&x, all.data() + sizeof x * size_t(r), sizeof x);
      acc = f(acc, x);
    }
    return acc;
  }
  uint64_t allReduceSum(uint64_t v) override {
    return reduce(v, [](uint64_t a, uint64_t b) { return a + b; });
  }
  uint64_t allReduceMax(uint64_t v) override {
    return reduce(v, [](uint64_t a, uint64_t b) { return std::max(a, b); });
  }
  double allReduceMax(double v) override {
    return reduce(v, [](double a, double b) { return std::max(a, b); });
  }
  void barrier() override { allGather(nullptr, 0); }
  bool barrierUntil(double deadline) override {
    std::vector<uint8_t> all;
    return gather(nullptr, 0, all, deadline);
  }
  bool allReduceMaxUntil(uint64_t &v, double deadline) override {
    std::vector<uint8_t> all;
    if (!gather(&v, sizeof v, all, deadline))
      return false;
    uint64_t acc = 0;
    for (int r = 0; r < size; ++r) {
      uint64_t x;
      std::memcpy(&x, all.data() + sizeof x * size_t(r), sizeof x);
      acc = std::max(acc, x);
    }
    v = acc;
    return true;
  }
  [[noreturn]] void abort(int code) override {
    try {
      for (int r = 0; r < size; ++r)
        if (r != rank && (rank == 0 || r == 0))
          sendTo(r, Abort, 0, code, nullptr, 0);
    } catch (...) {
    }
    closeAndExit(code);
  }
  std::unique_ptr<NodeSharedMemory> allocateShared(size_t bytes) override;
};

struct ShmSegments final : NodeSharedMemory::Impl {
  std::vector<uint8_t *> all; // every rank's segment, mapped here
  ~ShmSegments() override {
    for (size_t r = 0; r < all.size(); ++r)
      if (all[r])
        munmap(all[r], sizes[r]);
  }
  void put(int rank, uint64_t offset, const void *src, uint64_t bytes) override {
    std::memcpy(all.at(size_t(rank)) + offset, src, bytes);
  }
  void add(int rank, uint64_t offset, uint64_t value) override {
    __atomic_fetch_add(reinterpret_cast<uint64_t *>(all.at(size_t(rank)) + offset), value, __ATOMIC_SEQ_CST);
  }
  void flush(int) override { std::atomic_thread_fence(std::memory_order_seq_cst); }
  void flushAll() override { std::atomic_thread_fence(std::memory_order_seq_cst); }
  void progress() override {}
};

std::string segmentName(uint64_t nonce, uint64_t allocation, int rank) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "/msccl-%016llx-%llu-%d", static_cast<unsigned long long>(nonce),
                static_cast<unsigned long long>(allocation), rank);
  return buf;
}

std::unique_ptr<NodeSharedMemory> TcpComm::allocateShared(size_t bytes) {
  auto m = std::make_unique<ShmSegments>();
  const uint64_t allocation = ++allocations;
  const uint64_t rounded = std::max<uint64_t>(64, (bytes + 63) / 64 * 64);
  const std::string mine = segmentName(nonce, allocation, rank);
  // Every rank learns whether every other one succeeded, so nobody waits for a failed rank.
  auto agree = [&](std::string error) {
    uint64_t bad = error.empty() ? 0 : 1;
    std::vector<uint8_t> all = allGather(&bad, sizeof bad);
    for (int r = 0; r < size; ++r) {
      uint64_t x;
      std::memcpy(&x, all.data() + 8 * size_t(r), 8);
      if (x && error.empty())
        error = "rank " + std::to_string(r) + " could not set up its shared memory";
    }
    if (!error.empty())
      fail(error);
  };
  std::string error;
  uint8_t *base = nullptr;
  // The name goes on every way out (a peer's failure, a timed-out exchange, success): no
  // /dev/shm/msccl-* is left behind. Only a name this rank created is removed.
  struct UnlinkOnExit {
    std::string name;
    ~UnlinkOnExit() {
      if (!name.empty())
        shm_unlink(name.c_str());
    }
  } unlinkMine;
  int fd = shm_open(mine.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd >= 0)
    unlinkMine.name = mine;
  if (fd < 0) {
    error = "shm_open(" + mine + "): " + std::strerror(errno);
  } else {
    if (ftruncate(fd, off_t(rounded)) != 0)
      error = "ftruncate(" + mine + ", " + std::to_string(rounded) + "): " + std::strerror(errno);
    else if (void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); p == MAP_FAILED)
      error = "mmap(" + mine + "): " + std::strerror(errno);
    else
      base = static_cast<uint8_t *>(p); // zeroed by ftruncate
    close(fd);
  }
  m->all.assign(size_t(size), nullptr);
  m->sizes.assign(size_t(size), 0);
  m->all[size_t(rank)] = base;
  m->sizes[size_t(rank)] = rounded;
  agree(error);
  std::vector<uint8_t> sizes = allGather(&rounded, sizeof rounded);
  for (int r = 0; r < size && error.empty(); ++r) {
    std::memcpy(&m->sizes[size_t(r)], sizes.data() + 8 * size_t(r), 8);
    if (r == rank)
      continue;
    std::string name = segmentName(nonce, allocation, r);
    int pfd = shm_open(name.c_str(), O_RDWR, 0600);
    if (pfd < 0) {
      error = "shm_open(" + name + ") of rank " + std::to_string(r) + ": " + std::strerror(errno) +
              " (ranks must share one machine's /dev/shm)";
      break;
    }
    void *p = mmap(nullptr, m->sizes[size_t(r)], PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
    close(pfd);
    if (p == MAP_FAILED)
      error = "mmap(" + name + "): " + std::strerror(errno);
    else
      m->all[size_t(r)] = static_cast<uint8_t *>(p);
  }
  agree(error); // every rank mapped every segment: the names can go (unlinkMine)
  m->base = base;
  m->peers.assign(size_t(size), nullptr);
  for (int r : nodeRanks)
    m->peers[size_t(r)] = m->all[size_t(r)];
  return std::make_unique<NodeSharedMemory>(std::move(m));
}

std::string boundEndpoint(void *sock) {
  char buf[256] = {};
  size_t len = sizeof buf - 1;
  if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, buf, &len) != 0)
    fail(zmqError("zmq_getsockopt(ZMQ_LAST_ENDPOINT)"));
  return buf;
}

// --- Authentication: ZeroMQ CURVE ------------------------------------------------------------
// Rank 0's socket is a CURVE server whose secret key is the job's key; the other ranks are CURVE
// clients that must know the server's public key, derived from that key. A process without the
// key cannot complete the handshake, so none of its bytes reach rank 0 (no hello, no abort), and
// every message after it is encrypted and authenticated by the session (ZeroMQ's RFC 26).

/// `n` bytes from the operating system's random source.
void osRandom(uint8_t *out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = ::getrandom(out + got, n - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      fail(std::string("getrandom: ") + std::strerror(errno));
    got += size_t(k);
  }
}

std::string z85(const uint8_t *key) {
  char buf[41];
  if (!zmq_z85_encode(buf, key, kKeyBytes))
    fail("zmq_z85_encode failed");
  return buf;
}

void requireCurve() {
  if (!zmq_has("curve"))
    fail("this ZeroMQ was built without CURVE security, which the rendezvous needs to authenticate its ranks");
}

void setOption(void *s, int option, const void *value, size_t len, const char *what) {
  if (zmq_setsockopt(s, option, value, len) != 0)
    fail(zmqError(what));
}

/// Rank 0's side: a CURVE server with the job's key (set before bind).
void secureServer(void *s, const uint8_t *key) {
  requireCurve();
  int one = 1;
  setOption(s, ZMQ_CURVE_SERVER, &one, sizeof one, "ZMQ_CURVE_SERVER");
  setOption(s, ZMQ_CURVE_SECRETKEY, key, kKeyBytes, "ZMQ_CURVE_SECRETKEY");
}

/// Another rank's side: a client of the server whose public key derives from the job's key
/// (the client's own key pair is fresh: rank 0 trusts whoever knows the server key).
void secureClient(void *s, const uint8_t *key) {
  requireCurve();
  char serverPublic[41], pub[41], sec[41];
  if (zmq_curve_public(serverPublic, z85(key).c_str()) != 0 || zmq_curve_keypair(pub, sec) != 0)
    fail(zmqError("CURVE keys"));
  setOption(s, ZMQ_CURVE_SERVERKEY, serverPublic, 40, "ZMQ_CURVE_SERVERKEY");
  setOption(s, ZMQ_CURVE_PUBLICKEY, pub, 40, "ZMQ_CURVE_PUBLICKEY");
  setOption(s, ZMQ_CURVE_SECRETKEY, sec, 40, "ZMQ_CURVE_SECRETKEY");
}

void *bindRoot(const std::string &endpoint, const uint8_t *key) {
  void *s = openSocket(ZMQ_ROUTER);
  try {
    secureServer(s, key);
  } catch (...) {
    closeSocket(s);
    throw;
  }
  int one = 1;
  zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
  if (zmq_bind(s, endpoint.c_str()) != 0) {
    std::string e = zmqError(("binding " + endpoint).c_str());
    closeSocket(s);
    fail(e + " (is the port in use, or the id made by another process than rank 0?)");
  }
  return s;
}

/// Join: rank 0 checks every hello and answers all; the others wait for its answer.
std::unique_ptr<Communicator> join(uint64_t nonce, const uint8_t *key, const std::string &endpoint, void *rootSocket,
                                   int rank, int size, const BootstrapOptions &options) {
  if (size <= 0 || rank < 0 || rank >= size) {
    if (rootSocket)
      closeSocket(rootSocket);
    fail("rank " + std::to_string(rank) + " of " + std::to_string(size) + " is out of range");
  }
  auto impl = std::make_unique<TcpComm>();
  impl->rank = rank;
  impl->size = size;
  impl->nonce = nonce;
  impl->endpoint = endpoint;
  impl->timeout = defaultTimeout(options);
  impl->exchangeTimeoutSeconds = exchangeTimeout();
  impl->splitName = "one host, unique-id bootstrap";
  impl->routes.assign(size_t(std::max(size, 1)), std::string());
  const int rpn = ranksPerNodeFromEnv();
  impl->ranksPerNode = rpn;
  const double deadline = monotonicSeconds() + impl->timeout;
  const std::string me = hostKey();
  if (rank == 0) {
    impl->sock = rootSocket ? rootSocket : bindRoot(endpoint, key);
    RootRendezvous rdv(size, me);
    std::string error;
    while (!rdv.complete() && !rdv.failed()) {
      Message m;
      std::string route;
      if (!impl->receive(m, deadline, route)) {
        error = "ranks {" + rdv.missing() + "} did not join " + endpoint + " within " + std::to_string(int(impl->timeout)) +
                " s (MSCCL_BOOTSTRAP_TIMEOUT)";
        break;
      }
      rdv.offer(m, route);
    }
    impl->routes = rdv.routes();
    if (rdv.failed())
      error = rdv.error();
    if (!error.empty()) {
      // Tell every process that said hello (the refused one through a spare route slot).
      for (const std::string &route : rdv.strays())
        impl->routes.push_back(route);
      for (size_t r = 1; r < impl->routes.size(); ++r)
        if (!impl->routes[r].empty())
          try {
            impl->sendTo(int(r), Refused, 0, 0, error.data(), error.size());
          } catch (...) {
          }
      closeSocket(impl->sock);
      impl->sock = nullptr;
      fail(error);
    }
    const std::string all = rdv.welcome();
    for (int r = 1; r < size; ++r)
      impl->sendTo(r, Welcome, 0, 0, all.data(), all.size());
  } else {
    impl->sock = openSocket(ZMQ_DEALER); // ZeroMQ gives it a routing id; rank 0 learns it from the hello
    try {
      secureClient(impl->sock, key);
    } catch (...) {
      closeSocket(impl->sock);
      impl->sock = nullptr;
      throw;
    }
    if (zmq_connect(impl->sock, endpoint.c_str()) != 0) {
      std::string e = zmqError(("connecting to " + endpoint).c_str());
      closeSocket(impl->sock);
      impl->sock = nullptr;
      fail(e);
    }
    impl->sendTo(0, Hello, 0, size, me.data(), me.size());
    // Rank 0 gives up at `deadline` and then says why: wait a little longer for that.
    const double answerBy = deadline + std::max(2.0, 0.5 * impl->timeout);
    Message m;
    for (;;) {
      if (!impl->receive(m, answerBy)) {
        closeSocket(impl->sock);
        impl->sock = nullptr;
        fail("rank " + std::to_string(rank) + ": no answer from rank 0 at " + endpoint + " within " +
             std::to_string(int(impl->timeout)) + " s (MSCCL_BOOTSTRAP_TIMEOUT)");
      }
      if (m.h.kind == Welcome || m.h.kind == Refused)
        break;
    }
    if (m.h.kind == Refused) {
      closeSocket(impl->sock);
      impl->sock = nullptr;
      fail(m.data);
    }
    std::vector<std::string> hosts; // every rank's host key: checked for shape, not used further
    std::string parseError;
    if (!parseWelcome(m.data, size, hosts, parseError)) {
      closeSocket(impl->sock);
      impl->sock = nullptr;
      fail(parseError);
    }
  }
  std::vector<int> colors(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    colors[size_t(r)] = rpn ? r / rpn : 0;
  assignNodes(*impl, colors);
  return Communicator::fromImpl(std::move(impl));
}

/// The key of a job started by torchrun (or any launcher setting RANK/WORLD_SIZE/MASTER_*):
/// SHA-256 over MSCCL_BOOTSTRAP_SECRET (a string the launcher gives every rank and nobody else),
/// TORCHELASTIC_RUN_ID (random under `torchrun --standalone`), the endpoint and the size. Only
/// the environment of the job's processes holds the first two (other users cannot read it).
/// Without either, the key derives from public data only: said once on stderr. Returns the nonce.
uint64_t environmentKey(const std::string &endpoint, int size, uint8_t *key) {
  const char *secret = std::getenv("MSCCL_BOOTSTRAP_SECRET");
  const char *runId = std::getenv("TORCHELASTIC_RUN_ID");
  const bool hasSecret = secret && *secret, hasRunId = runId && *runId && std::strcmp(runId, "none") != 0;
  if (!hasSecret && !hasRunId) {
    static std::once_flag once;
    std::call_once(once, [] {
      std::fprintf(stderr, "msccl: warning: the rendezvous key derives from MASTER_ADDR/MASTER_PORT only (no "
                           "MSCCL_BOOTSTRAP_SECRET, no TORCHELASTIC_RUN_ID): another local user could join; set "
                           "MSCCL_BOOTSTRAP_SECRET to a random string shared by the job's ranks\n");
    });
  }
  llvm::SHA256 h;
  std::string material = "msccl-bootstrap-key 1\n" + std::string(hasSecret ? secret : "") + "\n" +
                         std::string(hasRunId ? runId : "") + "\n" + endpoint + "\n" + std::to_string(size);
  h.update(llvm::StringRef(material));
  auto digest = h.final();
  std::memcpy(key, digest.data(), kKeyBytes);
  llvm::SHA256 n;
  n.update(llvm::StringRef("msccl-bootstrap-nonce 1\n" + material));
  auto nd = n.final();
  uint64_t nonce;
  std::memcpy(&nonce, nd.data(), sizeof nonce);
  return nonce;
}

} // namespace

bool Communicator::haveUniqueIdBootstrap() { return true; }

UniqueId Communicator::createUniqueId() {
  const char *a = std::getenv("MSCCL_BOOTSTRAP_ADDR");
  std::string host = resolve(a && *a ? a : "127.0.0.1");
  IdLayout id{};
  std::memcpy(id.magic, kMagic, sizeof kMagic);
  osRandom(id.key, sizeof id.key);
  osRandom(reinterpret_cast<uint8_t *>(&id.nonce), sizeof id.nonce);
  void *s = bindRoot("tcp://" + host + ":*", id.key);
  std::string endpoint = boundEndpoint(s);
  if (endpoint.size() >= sizeof id.endpoint) {
    closeSocket(s);
    fail("endpoint " + endpoint + " does not fit the id");
  }
  std::memcpy(id.endpoint, endpoint.data(), endpoint.size());
  {
    std::lock_guard<std::mutex> lock(gCtxMu);
    gPending[id.nonce] = PendingRoot{s, ::getpid()};
  }
  UniqueId out;
  std::memcpy(out.bytes, &id, sizeof id);
  return out;
}

std::unique_ptr<Communicator> Communicator::initFromUniqueId(const UniqueId &uid, int rank, int size,
                                                             const BootstrapOptions &options) {
  IdLayout id;
  std::memcpy(&id, uid.bytes, sizeof id);
  if (std::memcmp(id.magic, kMagic, sizeof kMagic) != 0 || id.endpoint[sizeof id.endpoint - 1] != '\0' ||
      std::strncmp(id.endpoint, "tcp://", 6) != 0)
    fail("not a unique id made by createUniqueId / ncclGetUniqueId (copy all 128 bytes to every rank)");
  void *root = nullptr;
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(gCtxMu);
    if (auto it = gPending.find(id.nonce); it != gPending.end()) {
      if (it->second.creator != ::getpid())
        fail("the unique id was created by process " + std::to_string(it->second.creator) +
             ", which then forked this one: its rendezvous socket stays with that process. Create the id "
             "(ncclGetUniqueId / Communicator::createUniqueId) in the process that joins as rank 0, after fork()");
      root = it->second.socket;
      gPending.erase(it);
    }
  }
  return join(id.nonce, id.key, id.endpoint, root, rank, size, options);
}

std::unique_ptr<Communicator> Communicator::initFromEnvironment(const BootstrapOptions &options) {
  auto integer = [](const char *name, long lo, long hi) {
    const char *v = std::getenv(name);
    if (!v || !*v)
      fail(std::string(name) + " is not set (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT describe the job)");
    char *end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (*end != '\0' || x < lo || x > hi)
      fail(std::string(name) + "='" + v + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "]");
    return x;
  };
  const int size = int(integer("WORLD_SIZE", 1, 1 << 20));
  const int rank = int(integer("RANK", 0, size - 1));
  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    fail("MASTER_ADDR is not set (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT describe the job)");
  long port = 0;
  if (const char *p = std::getenv("MSCCL_BOOTSTRAP_PORT"); p && *p)
    port = integer("MSCCL_BOOTSTRAP_PORT", 1, 65535);
  else
    port = integer("MASTER_PORT", 1, 65534) + 1;
  std::string endpoint = "tcp://" + resolve(addr) + ":" + std::to_string(port);
  // Every rank derives the same key from what the job's ranks share (environmentKey).
  uint8_t key[kKeyBytes];
  uint64_t nonce = environmentKey(endpoint, size, key);
  return join(nonce, key, endpoint, nullptr, rank, size, options);
}

#endif

} // namespace msccl::runtime
