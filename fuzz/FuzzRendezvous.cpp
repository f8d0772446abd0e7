//===- FuzzRendezvous.cpp - libFuzzer target: the unique-id bootstrap's rendezvous --------===//
//
// Input: a job size, then a stream of received ZeroMQ messages (a routing-id frame and a body;
// the body either raw bytes or a header of this job with fuzzed fields and payload), then a
// welcome payload. Each message goes through decode() and RootRendezvous::offer() as
// TcpCommunicator.cpp's rank 0 handles it; the payload through parseWelcome() as the other
// ranks read it. Checked: no crash or sanitizer report; a rank joins at most once, only ranks
// 1..size-1, with the job's size and host; nothing joins after a refusal; a complete
// rendezvous' welcome parses back to one host per rank.
//
//===------------------------------------------------------------------------------------===//
#include "Rendezvous.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <set>

using namespace msccl::runtime::rendezvous;

namespace {
constexpr uint64_t kNonce = 0x6d7363636c6e6f6eull;
const std::string kHost = "host-0";

void check(bool ok) {
  if (!ok)
    std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int ranks = in.ConsumeIntegralInRange<int>(1, 9);
  RootRendezvous rdv(ranks, kHost);
  std::set<int> joined;
  bool refused = false;
  for (int n = 0; n < 64 && in.remaining_bytes() > 0; ++n) {
    std::vector<std::string> parts;
    if (in.ConsumeBool())
      parts.push_back(in.ConsumeRandomLengthString(16)); // routing id
    if (in.ConsumeBool()) {
      parts.push_back(in.ConsumeRandomLengthString(256)); // raw bytes
    } else {
      Header h{in.ConsumeBool() ? kNonce : in.ConsumeIntegral<uint64_t>(), in.ConsumeIntegralInRange<uint32_t>(0, 8),
               in.ConsumeIntegralInRange<int32_t>(-2, 10), in.ConsumeIntegral<uint64_t>(),
               in.ConsumeBool() ? int64_t(ranks) : in.ConsumeIntegral<int64_t>()};
      std::string payload = in.ConsumeBool() ? kHost : in.ConsumeRandomLengthString(64);
      parts.push_back(encode(h, payload.data(), payload.size()));
    }
    Message m;
    std::string route;
    if (!decode(parts, kNonce, m, route))
      continue;
    check(m.h.nonce == kNonce);
    const RootRendezvous::Verdict v = rdv.offer(m, route);
    if (v == RootRendezvous::Verdict::Joined) {
      check(!refused);
      check(m.h.kind == Hello && m.h.value == ranks && m.data == kHost);
      check(m.h.rank >= 1 && m.h.rank < ranks);
      check(joined.insert(m.h.rank).second);
      check(rdv.routes()[size_t(m.h.rank)] == route);
    } else if (v == RootRendezvous::Verdict::Refused) {
      check(!refused && rdv.failed() && !rdv.error().empty());
      refused = true;
    }
    check(rdv.complete() == (!refused && int(joined.size()) == ranks - 1));
  }
  std::vector<std::string> hosts;
  std::string error;
  if (rdv.complete()) {
    check(parseWelcome(rdv.welcome(), ranks, hosts, error));
    check(hosts == std::vector<std::string>(size_t(ranks), kHost));
  }
  const int claimed = in.ConsumeIntegralInRange<int>(0, 1 << 30);
  if (parseWelcome(in.ConsumeRemainingBytesAsString(), claimed, hosts, error))
    check(int(hosts.size()) == claimed);
  else
    check(!error.empty());
  return 0;
}
