//===- RegistryFiles.cpp - PlanRegistry::addFile / addDirectory (plans from disk) ---------===//
//
// The part of PlanRegistry that reads plan files and compiles .msccl programs (through
// compile(), the cache): in libmsccl only, beside Compile.cpp; the rule itself is Registry.cpp.
//
//===------------------------------------------------------------------------------------===//
#include "Internal.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace msccl {

const RegisteredPlan &PlanRegistry::addFile(const std::string &path, PlanInfo info, const CompileParams &params) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  PlanPtr plan;
  if (ext == ".msccl" || llvm::StringRef(path).startswith("stdlib:")) {
    plan = compile(path, params);
    if (info.source.empty())
      info.source = "compile:" + path;
  } else {
    plan = loadPlan(path);
    if (info.source.empty())
      info.source = path;
  }
  if (info.name.empty() && !(plan->name && !plan->name->empty()))
    info.name = llvm::sys::path::stem(path).str();
  if (info.name.empty() && plan->name && find(*plan->name)) // two files of one program: the file names them
    info.name = llvm::sys::path::stem(path).str();
  return add(std::move(plan), std::move(info));
}

size_t PlanRegistry::addDirectory(const std::string &dir, const CompileParams &params) {
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    llvm::StringRef ext = llvm::sys::path::extension(it->path());
    if ((ext == ".json" || ext == ".msccl") && llvm::sys::fs::is_regular_file(it->path()))
      files.push_back(it->path());
  }
  if (ec)
    throw Error(ErrorCode::System, "cannot read plan directory " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  size_t added = 0;
  for (auto &f : files) {
    if (llvm::sys::path::extension(f) == ".msccl") {
      // A library module (no `program`) is not a plan.
      std::ifstream in(f);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("program") == std::string::npos)
        continue;
    }
    CompileParams forDirectory = params; // the defines are the directory's, not one program's
    forDirectory.skipUnknownDefines = true;
    addFile(f, {}, forDirectory);
    ++added;
  }
  return added;
}

} // namespace msccl
