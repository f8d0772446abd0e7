//===- OnRanks.h - Ranks of a unique-id job as threads of one test process ---------------===//
//
// Each rank is a thread with its own Communicator built from one unique id (the sockets and
// segments are the same as between processes). RCHECK asserts under one lock (Catch2 v2's
// assertions are not thread-safe) and evaluates its expression under it too: a call that
// waits for another rank belongs outside (its result in a local, then RCHECK the local).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Communicator.h"

#include <catch2/catch.hpp>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace msccl::test {

inline std::mutex gCatchMu;

#define RCHECK(...)                                                                                                    \
  do {                                                                                                                 \
    std::lock_guard<std::mutex> catchLock(msccl::test::gCatchMu);                                                      \
    CHECK(__VA_ARGS__);                                                                                                \
  } while (0)

/// Run `body(rank, comm)` on `n` threads joined through `id`; fails the test with the first error.
inline void onRanks(const runtime::UniqueId &id, int n, const std::function<void(int, runtime::Communicator &)> &body) {
  std::mutex mu;
  std::string error;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        auto comm = runtime::Communicator::initFromUniqueId(id, r, n);
        body(r, *comm);
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> lock(mu);
        if (error.empty()) error = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  for (auto &t : threads) t.join();
  if (!error.empty()) FAIL(error);
}
inline void onRanks(int n, const std::function<void(int, runtime::Communicator &)> &body) {
  onRanks(runtime::Communicator::createUniqueId(), n, body);
}

} // namespace msccl::test
