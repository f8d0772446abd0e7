//===- CollectiveTest.cpp - Test inputs and the block-wise output checker ----------------===//
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Elements.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace msccl::plan;
using namespace msccl::runtime;

namespace {
/// The end state of element i of rank r, straight from the definitions in Collective.h.
double naiveExpected(CollectiveKind kind, uint32_t r, uint64_t i, uint32_t n, uint64_t inCount, uint64_t outCount,
                     DataType t, ReduceOp op) {
  auto reduceAt = [&](uint64_t index) {
    double acc = inputValue(0, index, n, t);
    for (uint32_t s = 1; s < n; ++s)
      acc = reduceValues(acc, inputValue(s, index, n, t), op);
    return t == DataType::UInt8 ? double(uint64_t(acc) % 256) : acc;
  };
  switch (kind) {
  case CollectiveKind::AllReduce: return reduceAt(i);
  case CollectiveKind::AllGather: return inputValue(uint32_t(i / inCount), i % inCount, n, t);
  case CollectiveKind::ReduceScatter: return reduceAt(uint64_t(r) * outCount + i);
  case CollectiveKind::AllToAll: {
    uint64_t b = outCount / n;
    return inputValue(uint32_t(i / b), uint64_t(r) * b + i % b, n, t);
  }
  case CollectiveKind::SendRecv: return inputValue((r + n - 1) % n, i, n, t);
  default: return 0;
  }
}
} // namespace

TEST_CASE("fillInputAt writes the inputValue sequence from any offset", "[collective]") {
  for (DataType t : {DataType::Float32, DataType::Float16, DataType::BFloat16, DataType::UInt8, DataType::Int32}) {
    const uint64_t es = dataTypeBytes(t), count = 9000; // crosses the 128- and 4096-element steps
    std::vector<uint8_t> whole(count * es), part(5000 * es);
    fillInput(whole.data(), whole.size(), 3, 8, t);
    fillInputAt(part.data(), 4000 * es, part.size(), 3, 8, t);
    for (uint64_t i = 0; i < count; ++i)
      REQUIRE(loadElement(whole.data(), i, t) == inputValue(3, i, 8, t));
    for (uint64_t i = 0; i < 5000; ++i)
      REQUIRE(loadElement(part.data(), i, t) == inputValue(3, 4000 + i, 8, t));
  }
}

TEST_CASE("the output checker agrees with the definition for every collective", "[collective]") {
  const uint32_t n = 4;
  const DataType t = GENERATE(DataType::Float32, DataType::Float16, DataType::UInt8);
  const ReduceOp op = GENERATE(ReduceOp::Sum, ReduceOp::Max);
  const uint64_t es = dataTypeBytes(t);
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AllToAll, CollectiveKind::SendRecv}) {
    const uint64_t inCount = kind == CollectiveKind::AllGather ? 1500 : 6000;
    const uint64_t outCount = kind == CollectiveKind::ReduceScatter ? 1500 : 6000;
    std::vector<std::vector<uint8_t>> outs(n, std::vector<uint8_t>(outCount * es));
    for (uint32_t r = 0; r < n; ++r)
      for (uint64_t i = 0; i < outCount; ++i)
        storeElement(outs[r].data(), i, t, naiveExpected(kind, r, i, n, inCount, outCount, t, op));
    std::vector<const void *> ptrs;
    for (auto &o : outs)
      ptrs.push_back(o.data());
    VerifyResult good = verifyOutputs(kind, ptrs, inCount * es, outCount * es, t, op);
    INFO("kind " << int(kind));
    CHECK(good.checked);
    CHECK(good.elements == n * outCount);
    CHECK(good.wrong == 0);

    // Two wrong elements; blocks checked in reverse order still name the smallest (rank, index).
    storeElement(outs[2].data(), outCount * 3 / 4, t, 0);
    storeElement(outs[1].data(), outCount - 1, t, 0);
    OutputChecker checker(kind, n, inCount * es, outCount * es, t, op);
    const uint64_t block = 1000 * es;
    for (int64_t off = int64_t((outCount * es - 1) / block * block); off >= 0; off -= int64_t(block))
      for (uint32_t r = n; r-- > 0;)
        checker.check(r, uint64_t(off), outs[r].data() + off, std::min<uint64_t>(block, outCount * es - uint64_t(off)));
    const VerifyResult &bad = checker.result();
    CHECK(bad.wrong == 2);
    CHECK(bad.elements == n * outCount);
    CHECK(bad.firstRank == 1);
    CHECK(bad.firstIndex == outCount - 1);
    CHECK(bad.expected == naiveExpected(kind, 1, outCount - 1, n, inCount, outCount, t, op));
    CHECK(bad.got == 0);
  }
}

TEST_CASE("half-precision outputs are compared within the stated tolerance", "[collective]") {
  const uint64_t count = 5000;
  for (DataType t : {DataType::Float16, DataType::BFloat16}) {
    std::vector<uint8_t> close(count * 2), far(count * 2);
    for (uint64_t i = 0; i < count; ++i) {
      double v = inputValue(1, i, 2, t); // SendRecv: rank 0 expects rank 1's input
      storeElement(close.data(), i, t, v * 1.004);
      storeElement(far.data(), i, t, v * 1.03 + 0.5);
    }
    std::vector<uint8_t> rank1(count * 2);
    fillInput(rank1.data(), rank1.size(), 0, 2, t);
    CHECK(verifyOutputs(CollectiveKind::SendRecv, {close.data(), rank1.data()}, count * 2, count * 2, t,
                        ReduceOp::Sum).wrong == 0);
    VerifyResult r = verifyOutputs(CollectiveKind::SendRecv, {far.data(), rank1.data()}, count * 2, count * 2, t,
                                   ReduceOp::Sum);
    CHECK(r.wrong == count);
    CHECK(r.firstRank == 0);
    CHECK(r.firstIndex == 0);
  }
  std::vector<uint8_t> any(16);
  CHECK_FALSE(verifyOutputs(CollectiveKind::Other, {any.data()}, 16, 16, DataType::Float16, ReduceOp::Sum).checked);
}

TEST_CASE("the collectives table: names, reductions, bus bandwidth", "[collective]") {
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                           CollectiveKind::AllToAll, CollectiveKind::SendRecv})
    CHECK(collectiveKind(std::string(collectiveName(k))) == k);
  CHECK(collectiveKind("test") == CollectiveKind::Other);
  CHECK(collectiveKind("") == CollectiveKind::Other); // Other's empty name names no plan's collective
  CHECK(collectiveReduces(CollectiveKind::AllReduce) == Reduces::Yes);
  CHECK(collectiveReduces(CollectiveKind::ReduceScatter) == Reduces::Yes);
  CHECK(collectiveReduces(CollectiveKind::AllGather) == Reduces::No);
  CHECK(collectiveReduces(CollectiveKind::Other) == Reduces::Maybe);
  // nccl-tests' factors at 8 ranks.
  CHECK(busBandwidthFactor(CollectiveKind::AllReduce, 8) == 1.75);
  CHECK(busBandwidthFactor(CollectiveKind::AllGather, 8) == 0.875);
  CHECK(busBandwidthFactor(CollectiveKind::AllToAll, 8) == 0.875);
  CHECK(busBandwidthFactor(CollectiveKind::SendRecv, 8) == 1);
  CHECK(busBandwidthFactor(CollectiveKind::AllReduce, 0) == 1);
}

TEST_CASE("the collectives table defines each output element as the collective does", "[collective]") {
  // The definitions written out (nccl-tests'), against outputSource's rows and runs.
  struct Want {
    bool defined, all;
    uint32_t rank;
    uint64_t index;
  };
  auto want = [](CollectiveKind k, uint32_t n, uint32_t r, uint64_t in, uint64_t out, uint64_t u) -> Want {
    switch (k) {
    case CollectiveKind::AllReduce: return {true, true, 0, u};
    case CollectiveKind::ReduceScatter: return {true, true, 0, uint64_t(r) * out + u};
    case CollectiveKind::AllGather: return {true, false, uint32_t(u / in), u % in};
    case CollectiveKind::AllToAll: return {true, false, uint32_t(u / (out / n)), uint64_t(r) * (out / n) + u % (out / n)};
    case CollectiveKind::SendRecv: return {true, false, (r + n - 1) % n, u};
    case CollectiveKind::Broadcast: return {true, false, 0, u};
    case CollectiveKind::Reduce: return {r == 0, true, 0, u};
    case CollectiveKind::Other: break;
    }
    return {false, false, 0, 0};
  };
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                           CollectiveKind::AllToAll, CollectiveKind::SendRecv, CollectiveKind::Broadcast,
                           CollectiveKind::Reduce, CollectiveKind::Other})
    for (uint32_t n : {1u, 2u, 3u, 4u}) {
      const uint64_t block = 3;
      uint64_t in = block * n, out = block * n;
      if (k == CollectiveKind::AllGather) in = block;
      if (k == CollectiveKind::ReduceScatter) out = block;
      INFO(collectiveName(k) << " on " << n << " ranks, in " << in << ", out " << out);
      CHECK(outputShapeFits(k, n, in, out));
      if (k == CollectiveKind::AllGather || k == CollectiveKind::ReduceScatter)
        CHECK_FALSE(outputShapeFits(k, n, in + 1, out));
      for (uint32_t r = 0; r < n; ++r) {
        CHECK(outputDefinedOn(k, r) == want(k, n, r, in, out, 0).defined);
        for (uint64_t u = 0; u < out; ++u) {
          const Want w = want(k, n, r, in, out, u);
          const OutputSource s = outputSource(k, n, r, in, out, u);
          REQUIRE((s.from != OutputSource::From::Undefined) == w.defined);
          if (!w.defined)
            continue;
          CHECK((s.from == OutputSource::From::AllRanks) == w.all);
          CHECK(s.index == w.index);
          if (!w.all)
            CHECK(s.rank == w.rank);
          REQUIRE(s.run >= 1);
          REQUIRE(u + s.run <= out);
          for (uint64_t j = 1; j < s.run; ++j) { // a run: same source, index advancing by one
            const Want v = want(k, n, r, in, out, u + j);
            CHECK(v.index == w.index + j);
            CHECK(v.rank == w.rank);
          }
        }
      }
    }
  CHECK(outputSameForAllRanks(CollectiveKind::AllGather));
  CHECK_FALSE(outputSameForAllRanks(CollectiveKind::ReduceScatter));
  CHECK(ncclEntryPoint(CollectiveKind::AllReduce) == "ncclAllReduce");
  CHECK(ncclEntryPoint(CollectiveKind::AllToAll) == "ncclAlltoAll");
  CHECK(ncclEntryPoint(CollectiveKind::SendRecv).empty());
}
