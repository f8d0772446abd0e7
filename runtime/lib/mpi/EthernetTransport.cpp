//===- EthernetTransport.cpp - Host-staged messages between the processes of a job -------===//
//
// See EthernetTransport.h. Wire format (ZeroMQ frames, DEALER -> ROUTER; the ROUTER sees the
// sender's routing id "r<rank>" first):
//   message  [1, header...] and, with a payload, a second frame holding it;
//   flush    [2, u64 count]: "answer once the first `count` messages of mine are handled";
// and ROUTER -> DEALER: ack [3, u64 count]. Acknowledgements are cumulative, so a sender only
// waits for the largest count it asked for.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/EthernetTransport.h"

#include "CommunicatorImpl.h"

#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Executor.h"

#ifdef MSCCL_HAVE_ZMQ
#include <zmq.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#endif

namespace msccl::runtime {

#ifndef MSCCL_HAVE_ZMQ

struct EthernetTransport::Impl {};
bool EthernetTransport::available() { return false; }
std::unique_ptr<EthernetTransport> EthernetTransport::open(Communicator &, const std::vector<int> &) {
  throw ExecutionError(ErrorKind::Unsupported, "host-staged transfers between nodes need msccl built with ZeroMQ "
                                               "(install libzmq3-dev and rebuild)");
}
EthernetTransport::EthernetTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EthernetTransport::~EthernetTransport() = default;
void EthernetTransport::setHandler(Handler) {}
std::string EthernetTransport::send(int, const void *, size_t, size_t, const std::function<void(void *)> &) {
  return "no ZeroMQ";
}
std::string EthernetTransport::flush(double) { return ""; }
bool EthernetTransport::unflushed() const { return false; }
std::string EthernetTransport::error() const { return ""; }

#else

namespace {

enum Kind : uint8_t { Message = 1, Flush = 2, Ack = 3 };
constexpr size_t kMaxHeaderBytes = 64;

std::string zmqError(const std::string &what) { return what + ": " + zmq_strerror(zmq_errno()); }

/// What each rank tells the others when the transport opens.
struct Card {
  char endpoint[96];
  char publicKey[41];
  uint8_t failed;
};

std::string hostName() {
  char name[64] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

void copyString(char *dst, size_t n, const std::string &s) {
  std::memset(dst, 0, n);
  std::memcpy(dst, s.data(), std::min(n - 1, s.size()));
}

} // namespace

struct EthernetTransport::Impl {
  struct Peer {
    void *socket = nullptr;
    uint64_t sent = 0, acked = 0;
  };
  int me = 0;
  void *ctx = nullptr;
  void *router = nullptr;
  std::map<int, Peer> peers;
  std::thread receiver;
  std::atomic<bool> stop{false};
  std::mutex handlerMu;
  Handler handler;
  mutable std::mutex errMu;
  std::string err;

  ~Impl() {
    stop = true;
    if (receiver.joinable()) receiver.join();
    for (auto &[r, p] : peers)
      if (p.socket) zmq_close(p.socket);
    if (router) zmq_close(router);
    if (ctx) zmq_ctx_term(ctx);
  }

  void fail(const std::string &m) {
    std::lock_guard<std::mutex> l(errMu);
    if (err.empty()) err = m;
  }

  void *socket(int type) {
    void *s = zmq_socket(ctx, type);
    if (!s) throw ExecutionError(ErrorKind::Backend, zmqError("ethernet transport: zmq_socket"));
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero); // flush() is how senders wait; closing drops
    zmq_setsockopt(s, ZMQ_SNDHWM, &zero, sizeof zero);  // never block a sender (the receiver drains)
    zmq_setsockopt(s, ZMQ_RCVHWM, &zero, sizeof zero);
    return s;
  }

  static void set(void *s, int option, const void *value, size_t len, const char *what) {
    if (zmq_setsockopt(s, option, value, len) != 0)
      throw ExecutionError(ErrorKind::Backend, zmqError(std::string("ethernet transport: ") + what));
  }

  /// Binds the ROUTER (a CURVE server with a fresh key pair); fills the card's endpoint and key.
  void bind(bool oneHost, Card &card) {
    ctx = zmq_ctx_new();
    if (!ctx) throw ExecutionError(ErrorKind::Backend, zmqError("ethernet transport: zmq_ctx_new"));
    router = socket(ZMQ_ROUTER);
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0) throw ExecutionError(ErrorKind::Backend, zmqError("ethernet transport: CURVE keys"));
    int one = 1;
    set(router, ZMQ_CURVE_SERVER, &one, sizeof one, "ZMQ_CURVE_SERVER");
    set(router, ZMQ_CURVE_SECRETKEY, sec, 40, "ZMQ_CURVE_SECRETKEY");
    set(router, ZMQ_ROUTER_MANDATORY, &one, sizeof one, "ZMQ_ROUTER_MANDATORY");
    int64_t maxMessage = int64_t(sendLimit() + kMaxHeaderBytes + 16);
    set(router, ZMQ_MAXMSGSIZE, &maxMessage, sizeof maxMessage, "ZMQ_MAXMSGSIZE");
    const char *addr = std::getenv("MSCCL_ETHERNET_ADDR");
    const std::string bindAddr = addr && *addr ? addr : oneHost ? "127.0.0.1" : "*";
    const std::string publish = addr && *addr ? addr : oneHost ? "127.0.0.1" : hostName();
    if (zmq_bind(router, ("tcp://" + bindAddr + ":*").c_str()) != 0)
      throw ExecutionError(ErrorKind::Backend, zmqError("ethernet transport: binding tcp://" + bindAddr + ":*"));
    char last[256] = {};
    size_t len = sizeof last;
    if (zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, last, &len) != 0)
      throw ExecutionError(ErrorKind::Backend, zmqError("ethernet transport: ZMQ_LAST_ENDPOINT"));
    const std::string bound = last;
    copyString(card.endpoint, sizeof card.endpoint, "tcp://" + publish + bound.substr(bound.rfind(':')));
    copyString(card.publicKey, sizeof card.publicKey, pub);
  }

  /// One DEALER per rank this one sends to, a CURVE client of that rank's ROUTER.
  void connect(const std::vector<int> &sendsTo, const std::vector<Card> &cards) {
    const std::string id = "r" + std::to_string(me);
    for (int r : sendsTo) {
      if (r < 0 || r >= int(cards.size()) || r == me)
        throw ExecutionError(ErrorKind::Misuse, "ethernet transport: cannot send to rank " + std::to_string(r));
      void *s = socket(ZMQ_DEALER);
      peers[r].socket = s;
      char pub[41], sec[41];
      if (zmq_curve_keypair(pub, sec) != 0) throw ExecutionError(ErrorKind::Backend, zmqError("ethernet transport: CURVE keys"));
      set(s, ZMQ_CURVE_SERVERKEY, cards[r].publicKey, 40, "ZMQ_CURVE_SERVERKEY");
      set(s, ZMQ_CURVE_PUBLICKEY, pub, 40, "ZMQ_CURVE_PUBLICKEY");
      set(s, ZMQ_CURVE_SECRETKEY, sec, 40, "ZMQ_CURVE_SECRETKEY");
      set(s, ZMQ_ROUTING_ID, id.data(), id.size(), "ZMQ_ROUTING_ID");
      if (zmq_connect(s, cards[r].endpoint) != 0)
        throw ExecutionError(ErrorKind::Backend, zmqError(std::string("ethernet transport: connecting to ") + cards[r].endpoint));
    }
  }

  /// The receiving thread's step: one message (all its frames) from the ROUTER.
  void receiveOne() {
    zmq_msg_t parts[3];
    int n = 0;
    bool more = true;
    bool tooMany = false;
    while (more) {
      zmq_msg_t spill;
      zmq_msg_t *part = n < 3 ? &parts[n] : &spill; // frames beyond the third are read and dropped
      zmq_msg_init(part);
      if (zmq_msg_recv(part, router, 0) < 0) {
        zmq_msg_close(part);
        fail(zmqError("ethernet transport: receiving"));
        break;
      }
      more = zmq_msg_more(part);
      if (part == &spill) {
        zmq_msg_close(part);
        tooMany = true;
      } else {
        ++n;
      }
    }
    handle(parts, n, tooMany);
    for (int i = 0; i < n; ++i) zmq_msg_close(&parts[i]);
  }

  void handle(zmq_msg_t *parts, int n, bool tooMany) {
    if (n < 2 || tooMany) {
      fail("ethernet transport: a malformed message (" + std::to_string(n) + " frames)");
      return;
    }
    const std::string id(static_cast<const char *>(zmq_msg_data(&parts[0])), zmq_msg_size(&parts[0]));
    const int from = id.size() > 1 && id[0] == 'r' ? std::atoi(id.c_str() + 1) : -1;
    const auto *head = static_cast<const uint8_t *>(zmq_msg_data(&parts[1]));
    const size_t headBytes = zmq_msg_size(&parts[1]);
    if (headBytes < 1) return fail("ethernet transport: an empty message from rank " + std::to_string(from));
    if (head[0] == Flush && headBytes == 9 && n == 2) {
      uint8_t ack[9];
      ack[0] = Ack;
      std::memcpy(ack + 1, head + 1, 8);
      if (zmq_send(router, id.data(), id.size(), ZMQ_SNDMORE) < 0 || zmq_send(router, ack, sizeof ack, 0) < 0)
        fail(zmqError("ethernet transport: acknowledging rank " + std::to_string(from)));
      return;
    }
    if (head[0] != Message || headBytes > kMaxHeaderBytes + 1)
      return fail("ethernet transport: a malformed message from rank " + std::to_string(from));
    const uint8_t *payload = n == 3 ? static_cast<const uint8_t *>(zmq_msg_data(&parts[2])) : nullptr;
    const size_t payloadBytes = n == 3 ? zmq_msg_size(&parts[2]) : 0;
    std::lock_guard<std::mutex> l(handlerMu);
    if (!handler) return; // before setHandler (open's contract) or after it was removed
    std::string e = handler(from, head + 1, headBytes - 1, payload, payloadBytes);
    if (!e.empty()) fail(e);
  }

  void loop() {
    while (!stop.load(std::memory_order_relaxed)) {
      zmq_pollitem_t item{router, 0, ZMQ_POLLIN, 0};
      const int rc = zmq_poll(&item, 1, 20);
      if (rc < 0) {
        if (zmq_errno() == EINTR) continue;
        fail(zmqError("ethernet transport: zmq_poll"));
        return;
      }
      if (item.revents & ZMQ_POLLIN) receiveOne();
    }
  }
};

bool EthernetTransport::available() { return zmq_has("curve"); }

std::unique_ptr<EthernetTransport> EthernetTransport::open(Communicator &comm, const std::vector<int> &sendsTo) {
  if (!available())
    throw ExecutionError(ErrorKind::Unsupported, "host-staged transfers between nodes need ZeroMQ with CURVE security");
  auto impl = std::make_unique<Impl>();
  impl->me = comm.rank();
  char hostCard[320]; // hostKey: a host name (at most 255 bytes), '/', the kernel's boot id
  copyString(hostCard, sizeof hostCard, hostKey());
  bool oneHost = true;
  for (const auto &h : comm.allGather(hostCard, sizeof hostCard))
    oneHost = oneHost && std::memcmp(h.data(), hostCard, sizeof hostCard) == 0;
  Card mine{};
  std::string why;
  try {
    impl->bind(oneHost, mine);
  } catch (const ExecutionError &e) {
    why = e.what();
    mine.failed = 1;
  }
  std::vector<Card> cards(comm.size());
  const auto all = comm.allGather(&mine, sizeof mine);
  for (size_t r = 0; r < cards.size(); ++r) std::memcpy(&cards[r], all[r].data(), sizeof(Card));
  if (!why.empty()) throw ExecutionError(ErrorKind::Backend, why);
  for (size_t r = 0; r < cards.size(); ++r)
    if (cards[r].failed)
      throw ExecutionError(ErrorKind::Backend, "ethernet transport: rank " + std::to_string(r) + " could not bind its socket");
  try {
    impl->connect(sendsTo, cards);
  } catch (const ExecutionError &e) {
    why = e.what();
  }
  if (comm.allReduceMax(uint64_t(why.empty() ? 0 : 1)) != 0) {
    if (!why.empty()) throw ExecutionError(ErrorKind::Backend, why);
    throw ExecutionError(ErrorKind::Backend, "ethernet transport: another rank could not connect (see its report)");
  }
  Impl *p = impl.get();
  impl->receiver = std::thread([p] { p->loop(); });
  return std::unique_ptr<EthernetTransport>(new EthernetTransport(std::move(impl)));
}

EthernetTransport::EthernetTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EthernetTransport::~EthernetTransport() = default;

void EthernetTransport::setHandler(Handler handler) {
  std::lock_guard<std::mutex> l(impl_->handlerMu);
  impl_->handler = std::move(handler);
}

std::string EthernetTransport::send(int rank, const void *header, size_t headerBytes, size_t payloadBytes,
                                    const std::function<void(void *)> &fill) {
  auto it = impl_->peers.find(rank);
  if (it == impl_->peers.end()) return "ethernet transport: rank " + std::to_string(rank) + " is not connected";
  if (headerBytes > kMaxHeaderBytes || payloadBytes > sendLimit())
    return "ethernet transport: a message of " + std::to_string(headerBytes) + " + " + std::to_string(payloadBytes) +
           " bytes is too large";
  void *s = it->second.socket;
  zmq_msg_t head;
  zmq_msg_init_size(&head, headerBytes + 1);
  auto *h = static_cast<uint8_t *>(zmq_msg_data(&head));
  h[0] = Message;
  std::memcpy(h + 1, header, headerBytes);
  if (zmq_msg_send(&head, s, payloadBytes ? ZMQ_SNDMORE : 0) < 0) {
    zmq_msg_close(&head);
    return zmqError("ethernet transport: sending to rank " + std::to_string(rank));
  }
  if (payloadBytes) {
    zmq_msg_t body;
    zmq_msg_init_size(&body, payloadBytes);
    fill(zmq_msg_data(&body));
    if (zmq_msg_send(&body, s, 0) < 0) {
      zmq_msg_close(&body);
      return zmqError("ethernet transport: sending to rank " + std::to_string(rank));
    }
  }
  ++it->second.sent;
  return "";
}

bool EthernetTransport::unflushed() const {
  for (const auto &[r, p] : impl_->peers)
    if (p.acked < p.sent) return true;
  return false;
}

std::string EthernetTransport::flush(double timeoutSeconds) {
  std::vector<std::pair<int, Impl::Peer *>> waiting;
  for (auto &[r, p] : impl_->peers) {
    if (p.acked >= p.sent) continue;
    uint8_t req[9];
    req[0] = Flush;
    std::memcpy(req + 1, &p.sent, 8);
    if (zmq_send(p.socket, req, sizeof req, 0) < 0) return zmqError("ethernet transport: flushing rank " + std::to_string(r));
    waiting.push_back({r, &p});
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  while (!waiting.empty()) {
    std::vector<zmq_pollitem_t> items;
    for (auto &w : waiting) items.push_back({w.second->socket, 0, ZMQ_POLLIN, 0});
    if (zmq_poll(items.data(), int(items.size()), 20) < 0 && zmq_errno() != EINTR)
      return zmqError("ethernet transport: zmq_poll");
    for (size_t i = 0; i < items.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      uint8_t ack[16];
      const int got = zmq_recv(waiting[i].second->socket, ack, sizeof ack, 0);
      if (got == 9 && ack[0] == Ack) {
        uint64_t count;
        std::memcpy(&count, ack + 1, 8);
        waiting[i].second->acked = std::max(waiting[i].second->acked, count);
      }
    }
    waiting.erase(std::remove_if(waiting.begin(), waiting.end(), [](auto &w) { return w.second->acked >= w.second->sent; }),
                  waiting.end());
    if (!waiting.empty() && timeoutSeconds > 0 && std::chrono::steady_clock::now() > deadline)
      return "ethernet transport: rank " + std::to_string(waiting.front().first) + " did not acknowledge within " +
             std::to_string(timeoutSeconds) + " s";
  }
  return "";
}

std::string EthernetTransport::error() const {
  std::lock_guard<std::mutex> l(impl_->errMu);
  return impl_->err;
}

#endif

} // namespace msccl::runtime
