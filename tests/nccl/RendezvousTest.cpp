//===- RendezvousTest.cpp - Rank 0's rendezvous and the message codec, without sockets -----===//
//
// runtime/lib/mpi/Rendezvous.h on made-up messages: who joins, what is refused and why, what
// is not a message of the job, and the welcome's host list (fuzz/FuzzRendezvous.cpp throws
// arbitrary bytes at the same functions).
//
//===------------------------------------------------------------------------------------===//
#include "Rendezvous.h"

#include <catch2/catch.hpp>

using namespace msccl::runtime::rendezvous;

namespace {
constexpr uint64_t kNonce = 0x1234;
Message hello(int rank, int64_t size, const std::string &host = "hostA") {
  Message m;
  m.h = Header{kNonce, Hello, rank, 0, size};
  m.data = host;
  return m;
}
} // namespace

TEST_CASE("rendezvous: every rank joins once, then the welcome lists their hosts", "[bootstrap][rendezvous]") {
  RootRendezvous rdv(3, "hostA");
  CHECK(rdv.missing() == "1,2");
  CHECK(rdv.offer(hello(2, 3), "route2") == RootRendezvous::Verdict::Joined);
  CHECK(!rdv.complete());
  Message gather = hello(1, 3);
  gather.h.kind = Gather; // only hellos count during the rendezvous
  CHECK(rdv.offer(gather, "x") == RootRendezvous::Verdict::Ignored);
  CHECK(rdv.offer(hello(1, 3), "route1") == RootRendezvous::Verdict::Joined);
  CHECK(rdv.complete());
  CHECK(rdv.routes() == std::vector<std::string>{"", "route1", "route2"});
  CHECK(rdv.welcome() == "hostA\nhostA\nhostA\n");
  std::vector<std::string> hosts;
  std::string error;
  REQUIRE(parseWelcome(rdv.welcome(), 3, hosts, error));
  CHECK(hosts == std::vector<std::string>{"hostA", "hostA", "hostA"});
}

TEST_CASE("rendezvous: a wrong hello is refused with the reason, and nothing joins after it", "[bootstrap][rendezvous]") {
  struct Case {
    Message m;
    std::string error;
  };
  const std::vector<Case> cases = {
      {hello(1, 4), "rank 1 joined a job of 4 ranks, rank 0 one of 3"},
      {hello(0, 3), "a process joined as rank 0 of 3"},
      {hello(3, 3), "a process joined as rank 3 of 3"},
      {hello(-7, 3), "a process joined as rank -7 of 3"},
      {hello(1, 3, "hostB"), "rank 1 runs on another host (hostB, rank 0 on hostA)"},
  };
  for (const Case &c : cases) {
    RootRendezvous rdv(3, "hostA");
    CHECK(rdv.offer(c.m, "stray") == RootRendezvous::Verdict::Refused);
    CHECK(rdv.failed());
    CHECK_THAT(rdv.error(), Catch::StartsWith(c.error));
    CHECK(rdv.strays() == std::vector<std::string>{"stray"});
    CHECK(rdv.offer(hello(2, 3), "late") == RootRendezvous::Verdict::Ignored);
    CHECK(rdv.missing() == "1,2");
  }
  // A second hello for a rank is refused and reported (it used to lock the real rank out).
  RootRendezvous rdv(3, "hostA");
  CHECK(rdv.offer(hello(1, 3), "first") == RootRendezvous::Verdict::Joined);
  CHECK(rdv.offer(hello(1, 3), "second") == RootRendezvous::Verdict::Refused);
  CHECK(rdv.error() == "two processes joined as rank 1");
  CHECK(rdv.routes()[1] == "first");
}

TEST_CASE("rendezvous: messages of other jobs and short frames are not messages", "[bootstrap][rendezvous]") {
  Message m;
  std::string route;
  const std::string body = encode(Header{kNonce, Hello, 1, 5, 3}, "abc", 3);
  REQUIRE(decode({"id", body}, kNonce, m, route));
  CHECK(m.h.kind == Hello);
  CHECK(m.h.rank == 1);
  CHECK(m.h.seq == 5);
  CHECK(m.data == "abc");
  CHECK(route == "id");
  REQUIRE(decode({body}, kNonce, m, route));
  CHECK(route.empty());
  CHECK(!decode({body}, kNonce + 1, m, route));                  // another job
  CHECK(!decode({body.substr(0, sizeof(Header) - 1)}, kNonce, m, route)); // short
  CHECK(!decode({}, kNonce, m, route));
}

TEST_CASE("rendezvous: a welcome names exactly one host per rank", "[bootstrap][rendezvous]") {
  std::vector<std::string> hosts;
  std::string error;
  CHECK(!parseWelcome("a\nb\n", 3, hosts, error));
  CHECK(error == "rank 0's welcome names 2 hosts, the job has 3 ranks");
  CHECK(!parseWelcome("a\nb\nc\nd\n", 3, hosts, error));
  CHECK(error == "rank 0's welcome names more hosts than the job's 3 ranks");
  CHECK(!parseWelcome("", 1'000'000'000, hosts, error)); // no allocation for an announced size
  REQUIRE(parseWelcome("a\n\nc\n", 3, hosts, error));
  CHECK(hosts == std::vector<std::string>{"a", "", "c"});
}
