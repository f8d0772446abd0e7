// Every stdlib collective (Broadcast and Reduce with root 0) at every element count from 1 to 1100 and at a few large odd counts, in
// and out of place, on a local communicator (CPU backend): the plans' chunks divide few of these
// counts, so most run with uneven chunks (runtime/UnevenChunks.h). Each output element is compared
// with the collective's end state computed here. Packet plans cut only blocks of a multiple of
// 8 bytes (an LL16 payload): at other counts every rank gets InvalidSize, which the test expects.
#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <mutex>
#include <thread>

using namespace msccl;
using msccl::test::RankThreads;
using msccl::test::stdlibPlan;

namespace {

struct Algo {
  const char *name;
  const char *collective;
  uint32_t ranks, ranksPerNode;
  bool packets;
};

constexpr Algo kAlgos[] = {
    {"allreduce/ring", "allreduce", 4, 0, false},
    {"allreduce/allpairs", "allreduce", 4, 0, false},
    {"allreduce/allpairs_packet", "allreduce", 4, 0, true},
    {"allreduce/pipelined", "allreduce", 4, 0, false},
    {"allreduce/nvls", "allreduce", 4, 0, false},
    {"allreduce/hierarchical", "allreduce", 8, 4, false},
    {"allgather/ring", "allgather", 4, 0, false},
    {"allgather/allpairs", "allgather", 4, 0, false},
    {"allgather/packet", "allgather", 4, 0, true},
    {"allgather/hierarchical", "allgather", 8, 4, false},
    {"allgather/nvls", "allgather", 4, 0, false},
    {"reducescatter/ring", "reducescatter", 4, 0, false},
    {"reducescatter/allpairs", "reducescatter", 4, 0, false},
    {"reducescatter/packet", "reducescatter", 4, 0, true},
    {"reducescatter/nvls", "reducescatter", 4, 0, false},
    {"alltoall/allpairs", "alltoall", 4, 0, false},
    {"alltoall/multinode", "alltoall", 8, 4, false},
    {"sendrecv/pairs", "sendrecv", 4, 0, false},
    {"broadcast/chain", "broadcast", 4, 0, false},
    {"broadcast/tree", "broadcast", 5, 0, false},
    {"reduce/chain", "reduce", 4, 0, false},
    {"reduce/tree", "reduce", 5, 0, false},
};

float inputValue(uint32_t rank, size_t i) { return float(rank * 7 + i % 61); }

/// One call of `count` elements per block (the count nccl passes: allgather's send count,
/// reducescatter's recv count, alltoall's per-peer count), checked on every rank.
/// Returns the error codes (Ok when the call ran; then every element was compared).
std::vector<ErrorCode> runOnce(RankThreads &threads, Executor &ex, const Algo &a, const PlanPtr &plan, bool inPlace,
                               size_t count, std::string &firstWrong, uint32_t root = 0) {
  const uint32_t n = a.ranks;
  const std::string c = a.collective;
  const size_t sendCount = (c == "reducescatter" || c == "alltoall") ? count * n : count;
  const size_t recvCount = (c == "allgather" || c == "alltoall") ? count * n : count;
  // In place: one buffer per rank, as nccl-tests aliases them.
  const size_t bufCount = std::max(sendCount, recvCount);
  std::vector<std::vector<float>> send(n, std::vector<float>(bufCount)), recv(n, std::vector<float>(bufCount, -1.f));
  std::vector<float *> sendPtr(n), recvPtr(n);
  for (uint32_t r = 0; r < n; ++r) {
    recvPtr[r] = inPlace ? send[r].data() : recv[r].data();
    sendPtr[r] = send[r].data();
    if (inPlace && c == "allgather")
      sendPtr[r] = recvPtr[r] + r * count;
    if (inPlace && c == "reducescatter")
      recvPtr[r] = sendPtr[r] + r * count;
    for (size_t i = 0; i < sendCount; ++i)
      sendPtr[r][i] = inputValue(r, i);
  }
  std::vector<ErrorCode> codes(n, ErrorCode::Ok);
  std::mutex wrongMutex;
  threads.run([&](uint32_t r) {
    try {
      ex.execute(int(r), sendPtr[r], recvPtr[r], sendCount * sizeof(float), recvCount * sizeof(float),
                 plan::DataType::Float32, plan::ReduceOp::Sum, plan);
    } catch (const Error &e) {
      codes[r] = e.code();
      std::lock_guard<std::mutex> lock(wrongMutex);
      if (firstWrong.empty())
        firstWrong = e.what();
    }
  });
  if (codes != std::vector<ErrorCode>(n, ErrorCode::Ok))
    return codes;
  for (uint32_t r = 0; r < n && firstWrong.empty(); ++r)
    for (size_t i = 0; i < recvCount; ++i) {
      float want = 0;
      if (c == "allreduce")
        for (uint32_t q = 0; q < n; ++q)
          want += inputValue(q, i);
      else if (c == "allgather")
        want = inputValue(uint32_t(i / count), i % count);
      else if (c == "reducescatter")
        for (uint32_t q = 0; q < n; ++q)
          want += inputValue(q, r * count + i);
      else if (c == "alltoall")
        want = inputValue(uint32_t(i / count), r * count + i % count);
      else if (c == "broadcast")
        want = inputValue(root, i);
      else if (c == "reduce") {
        if (r != root)
          break; // only the root's output is defined
        for (uint32_t q = 0; q < n; ++q)
          want += inputValue(q, i);
      } else // sendrecv: rank r's output is rank r-1's input
        want = inputValue((r + n - 1) % n, i);
      if (recvPtr[r][i] != want) {
        firstWrong = "rank " + std::to_string(r) + " element " + std::to_string(i) + ": " +
                     std::to_string(recvPtr[r][i]) + " != " + std::to_string(want);
        break;
      }
    }
  return codes;
}

} // namespace

TEST_CASE("every stdlib collective at counts 1..1100 and large odd counts, in and out of place", "[counts]") {
  std::vector<size_t> counts;
  for (size_t k = 1; k <= 1100; ++k)
    counts.push_back(k);
  for (size_t k : {65537u * 3u, 262147u})
    counts.push_back(k);
  for (const Algo &a : kAlgos)
    for (bool inPlace : {false, true}) {
      if (inPlace && std::string(a.collective) == "sendrecv")
        continue; // SendRecv has no in-place form
      std::vector<std::pair<std::string, std::string>> defines{{"ranks", std::to_string(a.ranks)},
                                                               {"inplace", inPlace ? "true" : "false"}};
      if (a.ranksPerNode)
        defines.emplace_back("ranks_per_node", std::to_string(a.ranksPerNode));
      PlanPtr plan = stdlibPlan(a.name, defines);
      auto comm = Communicator::local(a.ranks, a.ranksPerNode);
      Executor ex(comm);
      RankThreads threads(a.ranks);
      size_t ran = 0, refused = 0;
      for (size_t count : counts) {
        std::string wrong;
        std::vector<ErrorCode> codes = runOnce(threads, ex, a, plan, inPlace, count, wrong);
        INFO(a.name << (inPlace ? " in place" : " out of place") << ", count " << count << ": " << wrong);
        // Packet plans: blocks of count float32s must be a multiple of 8 bytes.
        const bool runs = !a.packets || (count * sizeof(float)) % 8 == 0;
        if (runs) {
          REQUIRE(codes == std::vector<ErrorCode>(a.ranks, ErrorCode::Ok));
          REQUIRE(wrong.empty());
          ++ran;
        } else {
          REQUIRE(codes == std::vector<ErrorCode>(a.ranks, ErrorCode::InvalidSize));
          REQUIRE_THAT(wrong, Catch::Contains("its packet ops need blocks of a multiple of 8 bytes"));
          ++refused;
        }
      }
      CHECK(ran + refused == counts.size());
    }
}

TEST_CASE("Broadcast and Reduce at every root: the root-0 plans renamed by rootedPlan", "[counts]") {
  for (const Algo &a : kAlgos) {
    const std::string c = a.collective;
    if (c != "broadcast" && c != "reduce")
      continue;
    for (bool inPlace : {false, true}) {
      PlanPtr plan = stdlibPlan(a.name, {{"ranks", std::to_string(a.ranks)}, {"inplace", inPlace ? "true" : "false"}});
      auto comm = Communicator::local(a.ranks, a.ranksPerNode);
      Executor ex(comm);
      RankThreads threads(a.ranks);
      for (uint32_t root = 0; root < a.ranks; ++root) {
        PlanPtr rooted = rootedPlan(plan, root);
        CHECK((root == 0) == (rooted == plan));
        for (size_t count : {size_t(1), size_t(7), size_t(1000), size_t(1024), size_t(65537 * 3)}) {
          std::string wrong;
          auto codes = runOnce(threads, ex, a, rooted, inPlace, count, wrong, root);
          INFO(a.name << (inPlace ? " in place" : "") << " root " << root << " count " << count << ": " << wrong);
          CHECK(codes == std::vector<ErrorCode>(a.ranks, ErrorCode::Ok));
          CHECK(wrong.empty());
        }
      }
    }
  }
  // The renaming keeps nodes whole: 8 ranks in 2 nodes, root 5 (node 1, local 1).
  PlanPtr plan = stdlibPlan("broadcast/chain", {{"ranks", "8"}, {"inplace", "false"}});
  PlanPtr rooted = rootedPlan(plan, 5, 4);
  REQUIRE(rooted->gpus.size() == 8);
  for (uint32_t r = 0; r < 8; ++r) {
    CHECK(rooted->gpus[r].id == r);
    for (const auto &ch : rooted->gpus[r].channels)
      for (uint32_t peer : ch.connectedTo)
        CHECK(peer < 8);
  }
  // Rank 5 now runs what rank 0 ran: its program is rank 0's with peers renamed.
  CHECK(rooted->gpus[5].threadblocks.size() == plan->gpus[0].threadblocks.size());
  CHECK_THROWS_AS(rootedPlan(plan, 8), Error);
  CHECK_THROWS_AS(rootedPlan(plan, 1, 3), Error);
  CHECK_THROWS_AS(rootedPlan(nullptr, 0), Error);
  try {
    rootedPlan(stdlibPlan("alltoallv/allpairs", {{"ranks", "4"}}), 1);
    FAIL("a plan sized by a count matrix was renamed");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::InvalidPlan);
    CHECK_THAT(e.what(), Catch::Contains("variable_sizes"));
  }
}
