//===- Rendezvous.h - The unique-id bootstrap's messages and rank 0's rendezvous, on bytes --===//
//
// Consumes the bytes of received ZeroMQ messages (their frames) and produces decoded messages
// and rank 0's rendezvous decisions, with no socket in sight: TcpCommunicator.cpp runs these
// on the frames its sockets deliver, fuzz/FuzzRendezvous.cpp and tests/runtime/
// rendezvous_test.cpp on made-up ones. Guarantees: no input crashes, reads out of bounds or
// allocates more than the input's size; a rank joins at most once, only with the job's nonce,
// size and host, and only ranks 1..size-1 join; after the first refusal nothing joins.
// Private to runtime/lib/mpi (the fuzz target and the test include it by path).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace msccl::runtime::rendezvous {

enum Kind : uint32_t { Hello = 1, Welcome = 2, Refused = 3, Gather = 4, Gathered = 5, Abort = 6, Closed = 7 };

/// Every message body starts with this header (host byte order: one machine).
struct Header {
  uint64_t nonce;
  uint32_t kind;
  int32_t rank;
  uint64_t seq;
  int64_t value; // Hello: size; Abort: exit code; Gather: bytes
};

struct Message {
  Header h{};
  std::string data; ///< The body after the header.
};

/// The body of a message: header then `bytes` of `data`.
std::string encode(const Header &h, const void *data, size_t bytes);

/// One received ZeroMQ message, `parts` its frames ([routing id,] body): false when it is not a
/// message of this job (a body shorter than a header, another nonce); else `m` and `route` (the
/// routing id rank 0's ROUTER socket prefixes, "" when there is none).
bool decode(const std::vector<std::string> &parts, uint64_t nonce, Message &m, std::string &route);

/// Rank 0's side of the rendezvous: offered every message until complete() or failed().
class RootRendezvous {
public:
  /// A job of `size` ranks (>= 1) whose rank 0 runs on `host` (a host key, TcpCommunicator.cpp).
  RootRendezvous(int size, std::string host);

  enum class Verdict {
    Ignored, ///< Not a hello, or the rendezvous already failed: nothing changed.
    Joined,  ///< A new rank joined.
    Refused, ///< The hello is wrong (size, rank, a second hello for a rank, another host):
             ///< error() says why and the rendezvous has failed; its route is in strays().
  };
  /// One message rank 0 received, with the route it came by.
  Verdict offer(const Message &m, const std::string &route);

  bool complete() const { return joined_ == size_ && error_.empty(); }
  bool failed() const { return !error_.empty(); }
  const std::string &error() const { return error_; }
  /// The ranks that have not joined, "1,3" (for the timeout message).
  std::string missing() const;
  /// Per rank: the route of its hello ("" for rank 0 and for ranks not joined).
  const std::vector<std::string> &routes() const { return routes_; }
  /// The routes of refused hellos (told the error too).
  const std::vector<std::string> &strays() const { return strays_; }
  /// The Welcome's payload: every rank's host key, one line each, rank 0 first.
  std::string welcome() const;

private:
  int size_;
  int joined_ = 1;
  std::vector<std::string> hosts_, routes_, strays_;
  std::vector<bool> have_;
  std::string error_;
};

/// A Welcome's payload: exactly `size` newline-terminated host keys into `hosts`; false (with
/// `error`) for anything else.
bool parseWelcome(const std::string &data, int size, std::vector<std::string> &hosts, std::string &error);

} // namespace msccl::runtime::rendezvous
