//===- TestSupport.h - Temporary directories and stdlib plans for the libmsccl tests -----===//
#pragma once

#include "msccl/msccl.hpp"

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace msccl::test {

/// A fresh directory under the system's temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "msccl-api-test-XXXXXX").string();
    char *p = ::mkdtemp(tmpl.data());
    if (!p)
      throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  std::string file(const std::string &name) const { return (path / name).string(); }
};

inline void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

inline std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// A stdlib program compiled through a private cache directory (shared by the calls of one test
/// binary, so a second use of the same program is a cache hit).
inline PlanPtr stdlibPlan(const std::string &name, std::vector<std::pair<std::string, std::string>> defines) {
  static TempDir cache;
  CompileParams p;
  p.defines = std::move(defines);
  p.cacheDir = cache.str();
  return compile("stdlib:" + name, p);
}

/// One thread per rank, kept for many calls: `run(job)` runs job(r) on thread r for every rank
/// and returns when all are done. Tests that execute thousands of collectives use it instead of
/// starting n threads per call: a new thread costs little in a normal build, but under ASan with
/// detect_stack_use_after_return every new thread builds its fake stacks again (page faults on
/// first use), which took most of the counts sweep's time there.
class RankThreads {
public:
  explicit RankThreads(uint32_t ranks) {
    for (uint32_t r = 0; r < ranks; ++r)
      threads_.emplace_back([this, r] { loop(r); });
  }
  RankThreads(const RankThreads &) = delete;
  RankThreads &operator=(const RankThreads &) = delete;
  ~RankThreads() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    start_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }
  /// Runs job(r) on rank r's thread for every rank; returns when every call returned. The job
  /// must not throw (catch inside it).
  void run(const std::function<void(uint32_t)> &job) {
    std::unique_lock<std::mutex> lock(m_);
    job_ = &job;
    pending_ = uint32_t(threads_.size());
    ++generation_;
    start_.notify_all();
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

private:
  void loop(uint32_t rank) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(uint32_t)> *job;
      {
        std::unique_lock<std::mutex> lock(m_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        job = job_;
      }
      (*job)(rank);
      std::lock_guard<std::mutex> lock(m_);
      if (--pending_ == 0)
        done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable start_, done_;
  const std::function<void(uint32_t)> *job_ = nullptr;
  uint64_t generation_ = 0;
  uint32_t pending_ = 0;
  bool stop_ = false;
};

} // namespace msccl::test
