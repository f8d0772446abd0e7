//===- Compile.cpp - compile(): mscclc in-process behind an on-disk plan cache -----------===//
//
// Consumes a program (file, `stdlib:NAME` or text) and CompileParams; produces a plan, from the
// cache when an entry with the same key exists and checks out. The key is SHA-256 over a format
// tag, the compiler version, the parameters (defines, option overrides, include directories are
// NOT in it: only what they resolve to is) and the text of every file the compilation reads (the
// main file and each import, driver::compilationSources), so editing an imported stdlib module
// invalidates every program that imports it while moving a file does not.
// Looking the key up parses every file (ANTLR dominates a hit's time), so a manifest
// `<dir>/<manifest key>.manifest`, keyed by the main file's path and text and by everything that
// decides where imports resolve (params, -I, stdlib directory), records the imports read and the
// SHA-256 of each: a hit re-hashes those files instead of parsing them (ccache's direct mode).
// Its one blind spot is ccache's too: a NEW file that would now shadow an import (an earlier
// search directory) goes unnoticed until the main file or an import changes.
// An entry is `<dir>/<key>.plan`: one header line "msccl-plan-cache 1 <sha256 of the body>" and
// the plan JSON; written to a temporary file in the same directory and renamed over the entry
// (atomic on POSIX), so readers see a whole old or a whole new entry. An entry whose checksum or
// JSON does not check out is compiled again and replaced.
//
//===------------------------------------------------------------------------------------===//
#include "Internal.h"

#include "msccl/Version.h"
#include "msccl/driver/Driver.h"
#include "msccl/elab/Loader.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/plan/Relabel.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <set>
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

/// The compiler invocation of CompileParams (what mscclc's command line would say), typed.
driver::CompilerInvocation toInvocation(const std::string &input, const CompileParams &p) {
  driver::CompilerInvocation o;
  o.input = input;
  o.defines = p.defines;
  o.skipUnknownDefines = p.skipUnknownDefines;
  o.optionOverrides = p.options;
  o.includeDirs = p.includeDirs;
  o.stdlibDir = p.stdlibDir.empty() ? libraryStdlibDir() : p.stdlibDir;
  o.noVerify = p.noVerify;
  if (p.target == "msccl")
    o.target = driver::Target::Msccl;
  else if (!p.target.empty() && p.target != "mscclpp")
    throw Error(ErrorCode::InvalidArgument, "CompileParams::target \"" + p.target + "\": expected mscclpp or msccl");
  return o;
}

void appendField(std::string &key, llvm::StringRef tag, llvm::StringRef value) {
  key += tag.str();
  key += std::to_string(value.size());
  key += ':';
  key += value.str();
  key += '\n';
}

/// The bytes of `path` when it is a regular file (`ok` false otherwise, and for a FIFO, a device
/// or a directory: opened non-blocking and checked before a byte is read, so a name planted in a
/// manifest can never make a read wait forever). `noFollow`: a symbolic link is refused too.
std::string readRegular(const std::string &path, bool &ok, bool noFollow) {
  ok = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (noFollow ? O_NOFOLLOW : 0));
  if (fd < 0)
    return {};
  struct stat st;
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    text.resize(size_t(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += size_t(n);
    }
    text.resize(got);
    ok = true;
  }
  ::close(fd);
  return text;
}

/// Reads and checks an entry; nullopt (with `corrupt` set when a file was there) otherwise.
std::optional<plan::Plan> readEntry(const std::string &file, bool &corrupt) {
  corrupt = false;
  bool ok = false;
  std::string text = readRegular(file, ok, /*noFollow=*/true);
  if (!ok)
    return std::nullopt;
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

std::string readText(const std::string &path, bool &ok) { return readRegular(path, ok, /*noFollow=*/false); }

std::string absolute(const std::string &path) {
  llvm::SmallString<256> p(path);
  llvm::sys::fs::make_absolute(p);
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(p);
}

/// The fast path's key: everything that decides which files an import resolves to (options,
/// search path, the main file's place) and the main file's text, without parsing anything.
/// nullopt when the main file cannot be read (the compile reports that).
std::optional<std::string> manifestKey(const std::string &input, const std::string *text, const CompileParams &p,
                                       const driver::CompilerInvocation &mo, const std::string &version,
                                       std::string &mainPath) {
  std::string stdlib = mo.stdlibDirOrDefault();
  std::string mainText;
  if (text) {
    llvm::SmallString<256> cwd;
    llvm::sys::fs::current_path(cwd);
    mainPath = "<stdin>";
    mainText = *text;
    stdlib += "\n" + std::string(cwd); // relative imports of text resolve from here
  } else {
    std::string file = input;
    if (llvm::StringRef(input).startswith("stdlib:"))
      file = stdlib + "/" + input.substr(7) + ".msccl";
    bool ok = false;
    mainText = readText(file, ok);
    if (!ok)
      return std::nullopt;
    mainPath = absolute(file);
  }
  std::string k = "msccl-plan-cache-manifest 1\n";
  appendField(k, "version", version);
  for (auto &[n, v] : p.defines)
    appendField(k, "define", n + "=" + v);
  if (p.skipUnknownDefines) // only when set: the keys of every other compile stay as they were
    appendField(k, "skipUnknownDefines", "1");
  for (auto &[n, v] : p.options)
    appendField(k, "option", n + "=" + v);
  appendField(k, "noVerify", p.noVerify ? "1" : "0");
  if (p.target == "msccl") // only when set: the keys of every other compile stay as they were
    appendField(k, "target", p.target);
  for (auto &d : p.includeDirs)
    appendField(k, "include", absolute(d));
  appendField(k, "stdlib", stdlib);
  appendField(k, "main", mainPath);
  appendField(k, "text", mainText);
  return sha256Hex(k);
}

/// A manifest: the entry key and the imports (absolute path, SHA-256 of the text) it was made
/// from. Returns the key when every import still has its recorded text.
std::optional<std::string> checkManifest(const std::string &file, std::vector<std::string> &imports) {
  bool ok = false;
  std::string text = readText(file, ok);
  if (!ok)
    return std::nullopt;
  std::istringstream in(text);
  std::string line;
  const std::string head = "msccl-plan-cache-manifest 1 ";
  if (!std::getline(in, line) || line.compare(0, head.size(), head) != 0 || line.size() != head.size() + 64)
    return std::nullopt;
  std::string key = line.substr(head.size());
  bool complete = false;
  while (std::getline(in, line)) {
    if (line == "end") {
      complete = true;
      break;
    }
    if (line.size() < 66 || line[64] != ' ')
      return std::nullopt;
    std::string path = line.substr(65);
    // Only absolute .msccl paths (imports are nothing else); readText reads regular files only.
    if (!llvm::sys::path::is_absolute(path) || !llvm::StringRef(path).endswith(".msccl"))
      return std::nullopt;
    bool readable = false;
    std::string contents = readText(path, readable);
    if (!readable || sha256Hex(contents) != line.substr(0, 64))
      return std::nullopt;
    imports.push_back(path);
  }
  if (!complete)
    return std::nullopt;
  return key;
}

/// Writes a file atomically: a new temporary file of an unpredictable name (mkstemp: O_EXCL, mode
/// 0600, so nothing planted at a name can be written through), then rename over `file`; false
/// when that fails.
bool writeAtomically(const std::string &file, const std::string &contents) {
  std::string tmp = file + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return false;
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += size_t(n);
  }
  bool ok = ::close(fd) == 0 && done == contents.size();
  if (!ok || std::rename(tmp.c_str(), file.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

/// Whether `dir` may hold this user's cache: created with mode 0700 when missing (its parents as
/// usual); refused, with the reason in `why`, when it cannot be created, is not a directory, is
/// owned by another user or is writable by the group or by others (anyone who can write it could
/// plant plans this process would run: the checksum detects damage, not forgery).
bool usableCacheDir(const std::string &dir, std::string &why) {
  llvm::SmallString<256> parent(dir);
  llvm::sys::path::remove_filename(parent);
  if (!parent.empty())
    (void)llvm::sys::fs::create_directories(parent);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    why = std::string("cannot create it: ") + std::strerror(errno);
    return false;
  }
  struct stat st, link;
  if (::stat(dir.c_str(), &st) != 0 || ::lstat(dir.c_str(), &link) != 0) {
    why = std::string("cannot stat it: ") + std::strerror(errno);
    return false;
  }
  const uid_t me = ::geteuid();
  if (!S_ISDIR(st.st_mode))
    why = "it is not a directory";
  else if (st.st_uid != me || link.st_uid != me)
    why = "it is owned by uid " + std::to_string(st.st_uid != me ? st.st_uid : link.st_uid) + ", not by this user (uid " +
          std::to_string(me) + ")";
  else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    why = std::string("it is writable by ") + (st.st_mode & S_IWOTH ? "others" : "its group") + " (mode " + mode + ")";
  }
  return why.empty();
}

/// One warning per refused directory and process (stderr, as NCCL's WARN lines).
void warnCacheRefused(const std::string &dir, const std::string &why) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (warned.insert(dir).second)
    std::fprintf(stderr, "msccl: warning: not using the plan cache %s: %s; compiling without it\n", dir.c_str(),
                 why.c_str());
}

PlanPtr compileImpl(const std::string &input, const std::string *text, const CompileParams &params,
                    CompileInfo *info) {
  CompileInfo local;
  CompileInfo &ci = info ? *info : local;
  ci = CompileInfo();
  driver::CompilerInvocation mo = toInvocation(text ? "-" : input, params);
  const std::string version =
      params.compilerVersionOverride.empty() ? compilerVersion() : params.compilerVersionOverride;
  std::string key, file, dir, mkey;
  if (params.useCache) {
    dir = params.cacheDir.empty() ? defaultCacheDir() : params.cacheDir;
    if (!usableCacheDir(dir, ci.cacheRefused))
      warnCacheRefused(dir, ci.cacheRefused);
  }
  if (params.useCache && ci.cacheRefused.empty()) {
    // Fast path (no parse): the manifest of the main file's text says which imports it read last
    // time; when they still have their recorded text, the entry's key is the recorded one.
    std::string mainPath;
    if (auto mk = manifestKey(input, text, params, mo, version, mainPath)) {
      mkey = *mk;
      std::vector<std::string> imports;
      if (auto k = checkManifest(dir + "/" + mkey + ".manifest", imports)) {
        bool corrupt = false;
        std::string f = dir + "/" + *k + ".plan";
        if (auto p = readEntry(f, corrupt)) {
          ci.cacheHit = true;
          ci.key = *k;
          ci.cacheFile = f;
          ci.sources.push_back(mainPath);
          ci.sources.insert(ci.sources.end(), imports.begin(), imports.end());
          return std::make_shared<const plan::Plan>(std::move(*p));
        }
        ci.cacheRepaired = corrupt;
      }
    }
    // Full path: load (parse) the program and its imports; the key covers all their texts.
    std::string errors;
    llvm::raw_string_ostream es(errors);
    std::istringstream in(text ? *text : std::string());
    auto sources = driver::compilationSources(mo, in, es);
    if (sources) {
      std::string k = "msccl-plan-cache-key 1\n";
      appendField(k, "version", version);
      for (auto &[n, v] : params.defines)
        appendField(k, "define", n + "=" + v);
      if (params.skipUnknownDefines)
        appendField(k, "skipUnknownDefines", "1");
      for (auto &[n, v] : params.options)
        appendField(k, "option", n + "=" + v);
      appendField(k, "noVerify", params.noVerify ? "1" : "0");
      if (params.target == "msccl")
        appendField(k, "target", params.target);
      for (auto &[name, contents] : *sources) {
        ci.sources.push_back(name);
        appendField(k, "source", contents);
      }
      key = sha256Hex(k);
      file = dir + "/" + key + ".plan";
      ci.key = key;
      bool corrupt = false;
      std::optional<plan::Plan> p = readEntry(file, corrupt);
      ci.cacheRepaired |= corrupt;
      PlanPtr plan;
      if (p) {
        ci.cacheHit = true;
        ci.cacheFile = file;
        plan = std::make_shared<const plan::Plan>(std::move(*p));
      } else {
        std::string cerrors;
        llvm::raw_string_ostream ces(cerrors);
        std::istringstream cin(text ? *text : std::string());
        std::optional<plan::Plan> compiled = driver::compilePlan(mo, cin, ces);
        ces.flush();
        if (!compiled)
          throw Error(ErrorCode::CompileError,
                      "cannot compile " + (text ? std::string("the program text") : input) + ":\n" + cerrors);
        plan = std::make_shared<const plan::Plan>(std::move(*compiled));
        std::string body = plan::writePlan(*plan, -1);
        if (writeAtomically(file, kHeader + sha256Hex(body) + "\n" + body))
          ci.cacheFile = file;
      }
      if (!mkey.empty() && !ci.cacheFile.empty()) {
        std::string manifest = "msccl-plan-cache-manifest 1 " + key + "\n";
        for (size_t i = 1; i < sources->size(); ++i) // [0] is the main file, keyed by mkey itself
          manifest += sha256Hex((*sources)[i].second) + " " + absolute((*sources)[i].first) + "\n";
        manifest += "end\n";
        writeAtomically(dir + "/" + mkey + ".manifest", manifest);
      }
      return plan;
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
  return std::make_shared<const plan::Plan>(std::move(*p));
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

std::string installedPlansDir() {
  if (const char *d = std::getenv("MSCCL_INSTALLED_PLANS"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_DATA_HOME"); x && *x)
    return std::string(x) + "/msccl/plans";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.local/share/msccl/plans";
  return "";
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

PlanPtr rootedPlan(const PlanPtr &plan, uint32_t root, uint32_t ranksPerNode) {
  if (!plan)
    throw Error(ErrorCode::InvalidArgument, "rootedPlan: null plan");
  const auto n = uint32_t(plan->gpus.size());
  if (root >= n)
    throw Error(ErrorCode::InvalidArgument,
                "rootedPlan: root " + std::to_string(root) + " is not one of the plan's " + std::to_string(n) + " ranks");
  if (root == 0)
    return plan;
  std::vector<uint32_t> perm;
  try {
    perm = plan::rootPermutation(n, ranksPerNode, root);
  } catch (const std::invalid_argument &e) {
    throw Error(ErrorCode::InvalidArgument, std::string("rootedPlan: ") + e.what());
  }
  try {
    return std::make_shared<const plan::Plan>(plan::relabelRanks(*plan, perm));
  } catch (const plan::PlanError &e) {
    throw Error(ErrorCode::InvalidPlan, std::string("rootedPlan: ") + e.what());
  }
}

} // namespace msccl
