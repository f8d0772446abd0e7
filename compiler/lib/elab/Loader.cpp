//===- Loader.cpp - A main file and its imports -> a Unit -------------------------------===//
#include "msccl/elab/Loader.h"

#include "msccl/frontend/Parser.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#ifndef MSCCL_STDLIB_DIR
#define MSCCL_STDLIB_DIR "stdlib"
#endif
#ifndef MSCCL_INSTALL_STDLIB_REL
#define MSCCL_INSTALL_STDLIB_REL "../share/msccl/stdlib"
#endif

namespace msccl::elab {

using diag::DiagId;

std::string defaultStdlibDir() {
  if (const char *env = std::getenv("MSCCL_STDLIB_PATH"); env && *env)
    return env;
  // An installed tool finds the stdlib beside itself: <prefix>/bin/X -> <prefix>/share/msccl/stdlib.
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  if (!exe.empty()) {
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(exe));
    llvm::sys::path::append(dir, MSCCL_INSTALL_STDLIB_REL);
    llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    if (llvm::sys::fs::is_directory(dir))
      return std::string(dir);
  }
  return MSCCL_STDLIB_DIR; // a build tree: the source tree's stdlib/
}

std::unique_ptr<llvm::MemoryBuffer> readSourceFile(const std::string &file, diag::DiagEngine &diag, llvm::SMLoc loc) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    diag.report(loc, DiagId::err_cannot_open_file, {file, std::strerror(errno)});
    return nullptr;
  }
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      diag.report(loc, DiagId::err_cannot_open_file, {file, std::strerror(e)});
      return nullptr;
    }
    if (n == 0)
      break;
    if (text.size() + size_t(n) > kMaxSourceBytes) {
      ::close(fd);
      diag.report(loc, DiagId::err_source_too_large, {file, std::to_string(kMaxSourceBytes)});
      return nullptr;
    }
    text.append(chunk, size_t(n));
  }
  ::close(fd);
  return llvm::MemoryBuffer::getMemBufferCopy(text, file);
}

namespace {
class Loader {
public:
  Loader(ast::AstContext &c, diag::DiagEngine &d, const SearchPath &p, Unit &u) : ctx_(c), diag_(d), path_(p), unit_(u) {}

  bool load(unsigned buffer, bool isMain) {
    ast::Module *m = frontend::parseBuffer(ctx_, diag_, buffer);
    if (!m)
      return false;
    bool ok = true;
    for (auto &imp : m->imports) {
      std::string file = resolve(imp.path, m->filename);
      if (file.empty()) {
        diag_.report(imp.loc, DiagId::err_import_not_found, {imp.path});
        ok = false;
        continue;
      }
      llvm::SmallString<256> real;
      if (llvm::sys::fs::real_path(file, real))
        real = file;
      if (!loaded_.insert(real).second)
        continue; // idempotent
      std::unique_ptr<llvm::MemoryBuffer> mb;
      if (auto o = path_.overlay.find(std::string(real)); o != path_.overlay.end()) {
        mb = llvm::MemoryBuffer::getMemBufferCopy(o->second, file);
      } else {
        mb = readSourceFile(file, diag_, imp.loc);
        if (!mb) {
          ok = false;
          continue;
        }
      }
      unsigned id = diag_.sourceMgr().AddNewSourceBuffer(std::move(mb), imp.loc);
      if (!load(id, false)) {
        ok = false;
        continue;
      }
      ast::Module *im = unit_.modules.back();
      for (auto *p : im->programs) {
        diag_.report(imp.loc, DiagId::err_import_has_program, {imp.path});
        diag_.report(p->loc, DiagId::note_previous_definition);
        ok = false;
      }
    }
    unit_.modules.push_back(m);
    if (isMain)
      unit_.main = m;
    return ok;
  }

  void markLoaded(const std::string &file) {
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(file, real))
      real = file;
    loaded_.insert(real);
  }

private:
  std::string resolve(const std::string &name, const std::string &fromFile) {
    auto exists = [](const llvm::Twine &p) { return llvm::sys::fs::is_regular_file(p); };
    if (llvm::StringRef(name).startswith("stdlib:")) {
      llvm::SmallString<256> p(path_.stdlibDir);
      llvm::sys::path::append(p, name.substr(7) + ".msccl");
      return exists(p) ? std::string(p) : "";
    }
    if (llvm::sys::path::is_absolute(name))
      return exists(name) ? name : "";
    llvm::SmallString<256> p(llvm::sys::path::parent_path(fromFile));
    llvm::sys::path::append(p, name);
    if (exists(p))
      return std::string(p);
    for (auto &dir : path_.includeDirs) {
      llvm::SmallString<256> q(dir);
      llvm::sys::path::append(q, name);
      if (exists(q))
        return std::string(q);
    }
    llvm::SmallString<256> s(path_.stdlibDir);
    llvm::sys::path::append(s, name);
    if (exists(s))
      return std::string(s);
    return "";
  }

  ast::AstContext &ctx_;
  diag::DiagEngine &diag_;
  const SearchPath &path_;
  Unit &unit_;
  llvm::StringSet<> loaded_;
};
} // namespace

bool loadUnit(ast::AstContext &ctx, diag::DiagEngine &diag, unsigned mainBuffer, const SearchPath &path, Unit &unit) {
  unit.ctx = &ctx;
  Loader l(ctx, diag, path, unit);
  l.markLoaded(diag.sourceMgr().getMemoryBuffer(mainBuffer)->getBufferIdentifier().str());
  return l.load(mainBuffer, true) && !diag.hadError();
}

} // namespace msccl::elab
