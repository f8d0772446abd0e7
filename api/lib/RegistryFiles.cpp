//===- RegistryFiles.cpp - PlanRegistry::addFile / addDirectory (plans from disk) ---------===//
//
// The part of PlanRegistry that reads plan files and compiles .msccl programs (through
// compile(), the cache); the rule itself is Registry.cpp (both in msccl_registry).
// A directory with an index (msccl-plans.json) registers what the index lists: each entry a file
// of the directory with its own defines, options and PlanInfo, so that one program can sit there
// in several builds (in place and out of place, per size range); without one, every plan file
// and program of the directory.
//
//===------------------------------------------------------------------------------------===//
#include "Internal.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <nlohmann/json.hpp>

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

namespace {

constexpr const char *kIndexName = "msccl-plans.json";

/// A value of the index as a define/option value: strings as they are, numbers and booleans as
/// their JSON text.
std::string valueText(const nlohmann::json &v, const std::string &path) {
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_number_integer() || v.is_boolean())
    return v.dump();
  throw Error(ErrorCode::InvalidArgument, path + ": must be a string, an integer or a boolean");
}

/// One entry of the index: the file it names (inside `dir`), its PlanInfo and its CompileParams.
struct IndexEntry {
  std::string file;
  PlanInfo info;
  CompileParams params;
};

IndexEntry readIndexEntry(const nlohmann::json &e, const std::string &p, const std::string &dir,
                          const CompileParams &params) {
  auto bad = [&](const std::string &field, const std::string &why) -> Error {
    return Error(ErrorCode::InvalidArgument, p + (field.empty() ? "" : "." + field) + ": " + why);
  };
  if (!e.is_object())
    throw bad("", "must be an object");
  static const char *known[] = {"file", "name", "defines", "options", "min_bytes", "max_bytes", "in_place",
                                "tags", "ranks_per_node"};
  for (auto it = e.begin(); it != e.end(); ++it)
    if (std::find_if(std::begin(known), std::end(known), [&](const char *k) { return it.key() == k; }) ==
        std::end(known))
      throw bad(it.key(), "unknown field (file, name, defines, options, min_bytes, max_bytes, in_place, tags, "
                          "ranks_per_node)");
  IndexEntry out;
  if (!e.contains("file") || !e["file"].is_string() || e["file"].get<std::string>().empty())
    throw bad("file", "a file of the directory is required");
  const std::string file = e["file"].get<std::string>();
  if (file.find('/') != std::string::npos || file == "." || file == "..")
    throw bad("file", "must name a file of the directory itself, not a path (" + file + ")");
  out.file = dir + "/" + file;
  out.params = params;
  out.params.skipUnknownDefines = true; // the directory's defines; the entry's own follow
  if (e.contains("defines")) {
    if (!e["defines"].is_object())
      throw bad("defines", "must be an object of param values");
    for (auto it = e["defines"].begin(); it != e["defines"].end(); ++it)
      out.params.defines.push_back({it.key(), valueText(it.value(), p + ".defines." + it.key())});
  }
  if (e.contains("options")) {
    if (!e["options"].is_object())
      throw bad("options", "must be an object of program options");
    for (auto it = e["options"].begin(); it != e["options"].end(); ++it)
      out.params.options.push_back({it.key(), valueText(it.value(), p + ".options." + it.key())});
  }
  if (e.contains("name")) {
    if (!e["name"].is_string())
      throw bad("name", "must be a string");
    out.info.name = e["name"].get<std::string>();
  }
  for (const char *k : {"min_bytes", "max_bytes", "ranks_per_node"})
    if (e.contains(k) && !e[k].is_number_unsigned())
      throw bad(k, "must be a non-negative integer");
  if (e.contains("min_bytes"))
    out.info.minBytes = e["min_bytes"].get<uint64_t>();
  if (e.contains("max_bytes"))
    out.info.maxBytes = e["max_bytes"].get<uint64_t>();
  if (e.contains("ranks_per_node"))
    out.info.ranksPerNode = e["ranks_per_node"].get<uint32_t>();
  if (e.contains("in_place")) {
    const std::string v = e["in_place"].is_string() ? e["in_place"].get<std::string>() : "";
    if (v == "in")
      out.info.inPlace = InPlace::InPlace;
    else if (v == "out")
      out.info.inPlace = InPlace::OutOfPlace;
    else if (v == "both")
      out.info.inPlace = InPlace::Both;
    else
      throw bad("in_place", "must be \"in\", \"out\" or \"both\"");
  }
  if (e.contains("tags")) {
    if (!e["tags"].is_array())
      throw bad("tags", "must be an array of strings");
    for (size_t i = 0; i < e["tags"].size(); ++i) {
      if (!e["tags"][i].is_string())
        throw bad("tags[" + std::to_string(i) + "]", "must be a string");
      out.info.tags.push_back(e["tags"][i].get<std::string>());
    }
  }
  return out;
}

} // namespace

size_t PlanRegistry::addDirectory(const std::string &dir, const CompileParams &params) {
  return addDirectory(dir, params, nullptr);
}

size_t PlanRegistry::addDirectory(const std::string &dir, const CompileParams &params,
                                  std::vector<std::string> *skipped) {
  // One file: added, or (with `skipped`) passed over with its reason.
  auto addOne = [&](const std::string &file, const PlanInfo &info, const CompileParams &p) -> bool {
    if (!skipped) {
      addFile(file, info, p);
      return true;
    }
    try {
      addFile(file, info, p);
      return true;
    } catch (const Error &e) {
      skipped->push_back(file + ": " + e.what());
      return false;
    }
  };
  const std::string index = dir + "/" + kIndexName;
  if (llvm::sys::fs::exists(index)) { // the index says what the directory holds
    std::ifstream in(index);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      throw Error(ErrorCode::InvalidArgument, index + ": not valid JSON");
    if (!j.is_object() || !j.contains("plans") || !j["plans"].is_array())
      throw Error(ErrorCode::InvalidArgument, index + ": plans: an array of entries is required");
    std::vector<IndexEntry> entries;
    for (size_t i = 0; i < j["plans"].size(); ++i)
      entries.push_back(readIndexEntry(j["plans"][i], index + ": plans[" + std::to_string(i) + "]", dir, params));
    size_t added = 0;
    for (const IndexEntry &e : entries)
      added += addOne(e.file, e.info, e.params); // addFile names the source

    return added;
  }
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
    added += addOne(f, {}, forDirectory);
  }
  return added;
}

} // namespace msccl
