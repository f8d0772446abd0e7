//===- Compile.cpp - compile(): mscclc in-process behind an on-disk plan cache -----------===//
//
// Consumes a program (file, `stdlib:NAME` or text) and CompileParams; produces a plan, from the
// cache when an entry with the same key exists and checks out. The key is SHA-256 over a format
// tag, the compiler version, the parameters (defines, option overrides, include directories are
// NOT in it: only what they resolve to is) and the text of every file the compilation reads (the
// main file and each import, driver::compilationSources), so editing an imported stdlib module
// invalidates every program that imports it while moving a file does not.
// An entry is `<dir>/<key>.plan`: one header line "msccl-plan-cache 1 <sha256 of the body>" and
// the plan JSON; written to a temporary file in the same directory and renamed over the entry
// (atomic on POSIX), so readers see a whole old or a whole new entry. An entry whose checksum or
// JSON does not check out is compiled again and replaced.
//
//===------------------------------------------------------------------------------------===//
#include "Internal.h"

#include "msccl/Version.h"
#include "msccl/driver/Driver.h"
#include "msccl/plan/PlanJson.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace msccl {
namespace {

constexpr const char *kHeader = "msccl-plan-cache 1 ";

std::string sha256Hex(llvm::StringRef data) {
  llvm::SHA256 h;
  h.update(data);
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

/// An installed libmsccl finds the stdlib beside itself (`<prefix>/lib/../share/msccl/stdlib`),
/// whatever program loaded it; otherwise mscclc's default applies ($MSCCL_STDLIB_PATH, the
/// running executable's share/, the source tree).
std::string libraryStdlibDir() {
  static const std::string dir = []() -> std::string {
    if (const char *env = std::getenv("MSCCL_STDLIB_PATH"); env && *env)
      return "";
    Dl_info dl;
    if (!dladdr(reinterpret_cast<void *>(&compilerVersion), &dl) || !dl.dli_fname)
      return "";
    llvm::SmallString<256> p(llvm::sys::path::parent_path(llvm::sys::path::parent_path(dl.dli_fname)));
    llvm::sys::path::append(p, "share", "msccl", "stdlib");
    return llvm::sys::fs::is_directory(p) ? std::string(p) : "";
  }();
  return dir;
}

driver::MscclcOptions toOptions(const std::string &input, const CompileParams &p) {
  driver::MscclcOptions o;
  o.input = input;
  for (auto &[k, v] : p.defines)
    o.defines.push_back(k + "=" + v);
  for (auto &[k, v] : p.options)
    o.optionOverrides.push_back(k + "=" + v);
  o.includeDirs = p.includeDirs;
  o.stdlibDir = p.stdlibDir.empty() ? libraryStdlibDir() : p.stdlibDir;
  o.noVerify = p.noVerify;
  return o;
}

void appendField(std::string &key, llvm::StringRef tag, llvm::StringRef value) {
  key += tag.str();
  key += std::to_string(value.size());
  key += ':';
  key += value.str();
  key += '\n';
}

/// Reads and checks an entry; nullopt (with `corrupt` set when a file was there) otherwise.
std::optional<plan::Plan> readEntry(const std::string &file, bool &corrupt) {
  corrupt = false;
  std::ifstream f(file, std::ios::binary);
  if (!f)
    return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  corrupt = true;
  size_t nl = text.find('\n');
  if (nl == std::string::npos || text.compare(0, std::strlen(kHeader), kHeader) != 0)
    return std::nullopt;
  std::string sum = text.substr(std::strlen(kHeader), nl - std::strlen(kHeader));
  llvm::StringRef body = llvm::StringRef(text).drop_front(nl + 1);
  if (sum != sha256Hex(body))
    return std::nullopt;
  try {
    plan::Plan p = plan::parsePlan(body.str());
    corrupt = false;
    return p;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

/// Writes an entry atomically; false (nothing left behind) when the directory is not writable.
bool writeEntry(const std::string &dir, const std::string &file, const plan::Plan &p) {
  if (llvm::sys::fs::create_directories(dir))
    return false;
  static std::atomic<unsigned> counter{0};
  std::string tmp = file + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  std::string body = plan::writePlan(p, -1);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      return false;
    f << kHeader << sha256Hex(body) << '\n' << body;
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

PlanPtr compileImpl(const std::string &input, const std::string *text, const CompileParams &params,
                    CompileInfo *info) {
  CompileInfo local;
  CompileInfo &ci = info ? *info : local;
  ci = CompileInfo();
  driver::MscclcOptions mo = toOptions(text ? "-" : input, params);
  std::string key, file, dir;
  if (params.useCache) {
    std::string errors;
    llvm::raw_string_ostream es(errors);
    std::istringstream in(text ? *text : std::string());
    auto sources = driver::compilationSources(mo, in, es);
    if (sources) {
      std::string k = "msccl-plan-cache-key 1\n";
      appendField(k, "version", params.compilerVersionOverride.empty() ? compilerVersion()
                                                                       : params.compilerVersionOverride);
      for (auto &[n, v] : params.defines)
        appendField(k, "define", n + "=" + v);
      for (auto &[n, v] : params.options)
        appendField(k, "option", n + "=" + v);
      appendField(k, "noVerify", params.noVerify ? "1" : "0");
      for (auto &[name, contents] : *sources) {
        ci.sources.push_back(name);
        appendField(k, "source", contents);
      }
      key = sha256Hex(k);
      dir = params.cacheDir.empty() ? defaultCacheDir() : params.cacheDir;
      file = dir + "/" + key + ".plan";
      ci.key = key;
      bool corrupt = false;
      if (auto p = readEntry(file, corrupt)) {
        ci.cacheHit = true;
        ci.cacheFile = file;
        return std::make_shared<const plan::Plan>(std::move(*p));
      }
      ci.cacheRepaired = corrupt;
    }
    // Sources that do not load: the compile below reports why.
  }
  std::string errors;
  llvm::raw_string_ostream es(errors);
  std::istringstream in(text ? *text : std::string());
  std::optional<plan::Plan> p = driver::compilePlan(mo, in, es);
  es.flush();
  if (!p) {
    std::string what = text ? "the program text" : input;
    ErrorCode code = ErrorCode::CompileError;
    if (!text && errors.find("cannot open") != std::string::npos)
      code = ErrorCode::System;
    throw Error(code, "cannot compile " + what + ":\n" + errors);
  }
  auto plan = std::make_shared<const plan::Plan>(std::move(*p));
  if (!key.empty() && writeEntry(dir, file, *plan))
    ci.cacheFile = file;
  return plan;
}

} // namespace

std::string defaultCacheDir() {
  if (const char *d = std::getenv("MSCCL_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/msccl";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/msccl";
  return "/tmp/msccl-cache-" + std::to_string(::getuid());
}

std::string compilerVersion() {
  // The release alone would keep entries of an older build of the same release: add the
  // identity (size, modification time) of the binary holding the compiler.
  static const std::string version = [] {
    std::string v = std::string("msccl ") + MSCCL_VERSION;
    Dl_info dl;
    if (dladdr(reinterpret_cast<void *>(&compilerVersion), &dl) && dl.dli_fname) {
      struct stat st;
      if (::stat(dl.dli_fname, &st) == 0)
        v += " (" + std::to_string(uint64_t(st.st_size)) + " bytes, built " + std::to_string(int64_t(st.st_mtime)) +
             ")";
    }
    return v;
  }();
  return version;
}

PlanPtr compile(const std::string &input, const CompileParams &params, CompileInfo *info) {
  if (input.empty())
    throw Error(ErrorCode::InvalidArgument, "compile: no input (a .msccl file or stdlib:NAME)");
  if (input == "-")
    throw Error(ErrorCode::InvalidArgument, "compile: `-` is not a file; use compileSource for program text");
  return compileImpl(input, nullptr, params, info);
}

PlanPtr compileSource(const std::string &source, const CompileParams &params, const std::string &name,
                      CompileInfo *info) {
  (void)name;
  return compileImpl(name, &source, params, info);
}

PlanPtr loadPlan(const std::string &path) {
  if (!llvm::sys::fs::exists(path))
    throw Error(ErrorCode::System, "cannot read plan " + path + ": no such file");
  try {
    return std::make_shared<const plan::Plan>(plan::readPlanFile(path));
  } catch (const plan::PlanError &e) {
    throw Error(ErrorCode::InvalidPlan, "invalid plan " + path + ": " + e.what());
  } catch (const std::exception &e) {
    throw Error(ErrorCode::InvalidPlan, "invalid plan " + path + ": " + e.what());
  }
}

} // namespace msccl
