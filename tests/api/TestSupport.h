//===- TestSupport.h - Temporary directories and stdlib plans for the libmsccl tests -----===//
#pragma once

#include "msccl/msccl.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

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

} // namespace msccl::test
