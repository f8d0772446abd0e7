//===- RealInit.cpp - libmsccl_nccl.so: the real NCCL's communicator beside ours ----------===//
//
// ncclCommInitRank makes the real NCCL's communicator alongside ours, for the calls no plan takes.
// When the real NCCL cannot (no GPU, several ranks on one GPU, an NCCL_* setting), plans still
// run; the reason, in NCCL's own words, is kept for the errors of the calls that would have gone
// to NCCL, and every rank's reason is gathered over our communicator so that rank 0 says each
// distinct one once per process, naming the ranks it holds for, with what to do about it.
//
//===------------------------------------------------------------------------------------===//
#include "Shim.h"

#include "msccl/runtime/Communicator.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

namespace msccl::nccl::shim {

namespace {

constexpr size_t kMaxWords = 1024; // of one rank's reason, gathered by rank 0

constexpr const char *kRemedy =
    "Calls that no registered plan takes will fail with ncclInvalidUsage. Usual causes: no GPU visible to this "
    "process (CUDA_VISIBLE_DEVICES), several ranks on one GPU (NCCL wants one GPU per rank), an NCCL_* setting, "
    "an NCCL library that does not fit the driver (MSCCL_NCCL_LIB_PATH picks another); NCCL_DEBUG=INFO prints "
    "NCCL's own reason. MSCCL_BACKEND=cpu with plans for every call (MSCCL_PLANS) needs no NCCL";

/// The real NCCL's words for `rc`: "error 5 (ncclGetErrorString's text): ncclGetLastError's text",
/// each part where that NCCL has it.
std::string realWords(ncclResult_t rc) {
  std::string what = "error " + std::to_string(int(rc));
  if (auto f = realFn<const char *(*)(ncclResult_t)>("ncclGetErrorString"))
    if (const char *t = f(rc))
      what += " (" + std::string(t) + ")";
  if (auto g = realFn<const char *(*)(ncclComm_t)>("ncclGetLastError"))
    if (const char *t = g(nullptr); t && *t)
      what += ": " + std::string(t);
  return what;
}

/// "all 4 ranks", "rank 2 of 4", "ranks 1, 3 of 4" (`ranks` ascending, not empty).
std::string rankList(const std::vector<int> &ranks, int size) {
  if (int(ranks.size()) == size)
    return size == 1 ? "its only rank" : "all " + std::to_string(size) + " ranks";
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + " of " + std::to_string(size);
}

/// A reason with its numbers blotted out: NCCL names ranks and devices in its words ("Duplicate
/// GPU detected : rank 1 and rank 0 both on CUDA device 60"), which would make one warning per rank.
std::string numberless(const std::string &w) {
  std::string k;
  for (char c : w)
    if (!std::isdigit(static_cast<unsigned char>(c)) || k.empty() || k.back() != '#')
      k += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
  return k;
}

/// Rank 0: every rank's reason (`words`, gathered; empty where the real NCCL's init succeeded), one
/// warning per reason that differs in more than its numbers (the first rank's words quoted), each
/// said once in this process whatever communicators repeat it.
void sayFailures(const std::vector<std::vector<uint8_t>> &words, int size) {
  struct Reason {
    std::string key, words;
    std::vector<int> ranks;
    bool varies = false; ///< the ranks' words differ in their numbers
  };
  std::vector<Reason> reasons; // in rank order of first appearance
  for (size_t r = 0; r < words.size(); ++r) {
    std::string w(words[r].begin(), std::find(words[r].begin(), words[r].end(), uint8_t(0)));
    if (w.empty())
      continue;
    const std::string key = numberless(w);
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const Reason &x) { return x.key == key; });
    if (it == reasons.end()) {
      reasons.push_back({key, w, {int(r)}, false});
    } else {
      it->ranks.push_back(int(r));
      it->varies = it->varies || it->words != w;
    }
  }
  static std::mutex mu;
  static std::set<std::string> said;
  for (const Reason &x : reasons) {
    const std::string line = "the real NCCL's ncclCommInitRank failed on " + rankList(x.ranks, size) + " with " + x.words +
                             (x.varies ? " (rank " + std::to_string(x.ranks.front()) +
                                             "'s words; the others' differ only in their numbers)"
                                       : "") +
                             ". " + kRemedy;
    std::lock_guard<std::mutex> lock(mu);
    if (said.insert(line).second)
      std::fprintf(stderr, "MSCCL WARN %s\n", line.c_str());
  }
}

} // namespace

std::string realFailure(const char *api, ncclResult_t rc) {
  return std::string("the real NCCL's ") + api + " failed with " + realWords(rc);
}

void initReal(Comm &c, const ncclUniqueId *rootId, ncclConfig_t *config) {
  if (!rootId) { // no rank tries: NCCL's init is collective
    if (realHandle()) // else the reason it could not be loaded here tells the calls' errors
      c.realWhy = "rank 0 made no id of the real NCCL (it could not be loaded there, or its ncclGetUniqueId "
                  "failed), so no NCCL communicator was made";
    return;
  }
  using InitConfig = ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
  using Init = ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t rc = ncclSuccess;
  if (auto f = config ? realFn<InitConfig>("ncclCommInitRankConfig") : nullptr)
    rc = f(&c.real, c.size, *rootId, c.rank, config);
  else if (auto g = realFn<Init>("ncclCommInitRank"))
    rc = g(&c.real, c.size, *rootId, c.rank);
  else
    c.realWhy = "the real NCCL has no ncclCommInitRank";
  std::string words; // empty: the real NCCL's communicator is made
  if (rc != ncclSuccess) { // e.g. a real NCCL on a machine without a GPU: plans still run
    c.real = nullptr;
    words = realWords(rc).substr(0, kMaxWords);
    c.realWhy = "the real NCCL's ncclCommInitRank failed with " + words + ". " + kRemedy;
    if (infoLogging())
      logLine("rank %d: %s", c.rank, c.realWhy.c_str());
  }
  // Every rank's reason to rank 0 (a node without a usable GPU among good ones shows too).
  msccl::runtime::Communicator &rt = *c.comm->runtimeCommunicator();
  const uint64_t longest = rt.allReduceMax(uint64_t(words.size()));
  if (longest == 0)
    return;
  words.resize(size_t(longest), '\0');
  auto all = rt.allGather(words.data(), words.size());
  if (c.rank == 0)
    sayFailures(all, c.size);
}

} // namespace msccl::nccl::shim
