//===- ExecuteVTest.cpp - Executor::executeV: AllToAllV with count matrices (local ranks) -===//
#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <thread>

using namespace msccl;
using msccl::test::stdlibPlan;

namespace {

using Matrix = std::vector<uint64_t>; // n x n row-major, elements

/// Runs one executeV on n thread ranks; rank r's input element i is r * 1000003 + i + salt.
/// Checks every received element against the AllToAllV end state of `m`.
void runAndCheck(Executor &ex, const PlanPtr &plan, uint32_t n, const Matrix &m, uint32_t salt) {
  auto at = [&](uint32_t r, uint32_t p) { return m[size_t(r) * n + p]; };
  std::vector<std::vector<uint32_t>> send(n), recv(n);
  for (uint32_t r = 0; r < n; ++r) {
    uint64_t row = 0, col = 0;
    for (uint32_t p = 0; p < n; ++p) {
      row += at(r, p);
      col += at(p, r);
    }
    send[r].resize(row);
    for (uint64_t i = 0; i < row; ++i)
      send[r][i] = uint32_t(r * 1000003u + i + salt);
    recv[r].assign(col, 0xdeadbeef);
  }
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        ex.executeV(int(r), send[r].data(), recv[r].data(), send[r].size() * 4, recv[r].size() * 4, m,
                    plan::DataType::UInt32, plan);
      } catch (const Error &e) {
        errors[r] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  for (uint32_t r = 0; r < n; ++r)
    REQUIRE(errors[r] == "");
  for (uint32_t q = 0; q < n; ++q) {
    uint64_t off = 0;
    for (uint32_t p = 0; p < n; ++p) {
      uint64_t from = 0;
      for (uint32_t k = 0; k < q; ++k)
        from += at(p, k);
      for (uint64_t i = 0; i < at(p, q); ++i) {
        uint32_t want = uint32_t(p * 1000003u + from + i + salt);
        if (recv[q][off + i] != want)
          FAIL("rank " << q << " block from " << p << " element " << i << ": " << recv[q][off + i] << " != " << want);
      }
      off += at(p, q);
    }
  }
}

} // namespace

TEST_CASE("executeV: uniform, random and zero-heavy matrices on 4 thread ranks", "[executev]") {
  const uint32_t n = 4;
  PlanPtr plan = stdlibPlan("alltoallv/allpairs", {{"ranks", "4"}});
  REQUIRE(plan->variableSizes);
  auto comm = Communicator::local(n);
  Executor ex(comm);
  SECTION("uniform") { runAndCheck(ex, plan, n, Matrix(n * n, 257), 1); }
  SECTION("random, several calls with one Executor (the resolver is reused)") {
    std::mt19937 rng(7);
    for (uint32_t call = 0; call < 3; ++call) {
      Matrix m(n * n);
      for (auto &c : m)
        c = rng() % 600;
      runAndCheck(ex, plan, n, m, call);
    }
  }
  SECTION("zero-heavy: most pairs send nothing, one rank receives nothing") {
    Matrix m(n * n, 0);
    m[0 * n + 1] = 5;
    m[2 * n + 3] = 1000;
    m[3 * n + 3] = 17; // to itself
    m[1 * n + 2] = 1;
    runAndCheck(ex, plan, n, m, 3);
  }
  SECTION("all zero") { runAndCheck(ex, plan, n, Matrix(n * n, 0), 4); }
}

TEST_CASE("executeV: misuse is a clear error on every rank", "[executev]") {
  const uint32_t n = 4;
  PlanPtr v = stdlibPlan("alltoallv/allpairs", {{"ranks", "4"}});
  PlanPtr fixed = stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}});
  auto comm = Communicator::local(n);
  Executor ex(comm);
  std::vector<uint32_t> buf(64);
  auto expectError = [](auto &&call, ErrorCode code, const std::string &needle) {
    try {
      call();
      FAIL("no error");
    } catch (const Error &e) {
      CHECK(e.code() == code);
      CHECK_THAT(e.what(), Catch::Contains(needle));
    }
  };
  // Caught before the rendezvous: no other rank needed.
  expectError([&] { ex.executeV(0, buf.data(), buf.data(), 256, 256, Matrix(16, 1), plan::DataType::UInt32, fixed); },
              ErrorCode::InvalidArgument, "fixed sizes");
  expectError([&] {
    ex.execute(0, buf.data(), buf.data(), 256, 256, plan::DataType::UInt32, plan::ReduceOp::Sum, v);
  }, ErrorCode::InvalidArgument, "call executeV");
  // Caught in the round: every rank gets it.
  auto all = [&](const Matrix &m, size_t bytes) {
    std::vector<std::string> msgs(n);
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        std::vector<uint32_t> s(64), d(64);
        try {
          ex.executeV(int(r), s.data(), d.data(), bytes, bytes, m, plan::DataType::UInt32, v);
        } catch (const Error &e) {
          msgs[r] = e.what();
        }
      });
    for (auto &t : threads)
      t.join();
    return msgs;
  };
  for (auto &msg : all(Matrix(9, 1), 256))
    CHECK_THAT(msg, Catch::Contains("16 entries"));
  for (auto &msg : all(Matrix(16, 40), 256)) // 4 x 40 elements = 640 bytes > 256
    CHECK_THAT(msg, Catch::Contains("but its buffers hold"));
}

TEST_CASE("executeV: an alltoallv plan chosen by the registry", "[executev]") {
  const uint32_t n = 4;
  PlanRegistry registry;
  registry.add(stdlibPlan("allreduce/ring", {{"ranks", "4"}, {"inplace", "false"}}));
  registry.add(stdlibPlan("alltoallv/allpairs", {{"ranks", "4"}}));
  auto comm = Communicator::local(n);
  // messageBytes: the largest row/column sum in bytes (the nccl-tests size of the call).
  Matrix m = {10, 0, 3, 7, 1, 1, 1, 1, 0, 0, 0, 90, 5, 6, 7, 8};
  uint64_t largest = 0;
  for (uint32_t r = 0; r < n; ++r) {
    uint64_t row = 0, col = 0;
    for (uint32_t p = 0; p < n; ++p) {
      row += m[r * n + p];
      col += m[p * n + r];
    }
    largest = std::max({largest, row, col});
  }
  CHECK(largest == 106); // column 3
  const RegisteredPlan &chosen = registry.selectOrThrow(comm->request("alltoallv", largest * sizeof(uint32_t)));
  CHECK(chosen.info.collective == "alltoallv");
  Executor ex(comm);
  runAndCheck(ex, chosen.plan, n, m, 9);
}
