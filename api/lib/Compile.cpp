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

std::string readText(const std::string &path, bool &ok) {
  std::ifstream f(path, std::ios::binary);
  ok = bool(f);
  return ok ? std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()) : std::string();
}

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
                                       const driver::MscclcOptions &mo, const std::string &version,
                                       std::string &mainPath) {
  std::string stdlib = mo.stdlibDir.empty() ? elab::defaultStdlibDir() : mo.stdlibDir;
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
  for (auto &[n, v] : p.options)
    appendField(k, "option", n + "=" + v);
  appendField(k, "noVerify", p.noVerify ? "1" : "0");
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

/// Writes a file atomically (temporary + rename); false when that fails.
bool writeAtomically(const std::string &dir, const std::string &file, const std::string &contents) {
  if (llvm::sys::fs::create_directories(dir))
    return false;
  static std::atomic<unsigned> counter{0};
  std::string tmp = file + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      return false;
    f << contents;
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
  const std::string version =
      params.compilerVersionOverride.empty() ? compilerVersion() : params.compilerVersionOverride;
  std::string key, file, dir, mkey;
  if (params.useCache) {
    dir = params.cacheDir.empty() ? defaultCacheDir() : params.cacheDir;
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
      for (auto &[n, v] : params.options)
        appendField(k, "option", n + "=" + v);
      appendField(k, "noVerify", params.noVerify ? "1" : "0");
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
        if (writeAtomically(dir, file, kHeader + sha256Hex(body) + "\n" + body))
          ci.cacheFile = file;
      }
      if (!mkey.empty() && !ci.cacheFile.empty()) {
        std::string manifest = "msccl-plan-cache-manifest 1 " + key + "\n";
        for (size_t i = 1; i < sources->size(); ++i) // [0] is the main file, keyed by mkey itself
          manifest += sha256Hex((*sources)[i].second) + " " + absolute((*sources)[i].first) + "\n";
        manifest += "end\n";
        writeAtomically(dir, dir + "/" + mkey + ".manifest", manifest);
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
