//===- Topology.cpp - Topology files of the performance model ----------------------------===//
//
// Consumes a topology name or a JSON file; produces a sim::Topology. Every constant of a file is
// an object {"value": V, "source": "..."} so each number says where it comes from; a missing
// source, a wrong type or a non-positive bandwidth is a TopologyError naming the file and the
// JSON path. Installed files live in <prefix>/share/msccl/topologies (found relative to the
// tool, like mscclc's stdlib), the source tree's in share/topologies.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/SimExecutor.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace msccl::runtime::sim {

std::string defaultTopologyDir() {
  if (const char *env = std::getenv("MSCCL_TOPOLOGY_PATH"); env && *env)
    return env;
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  if (!exe.empty()) {
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(exe));
    llvm::sys::path::append(dir, MSCCL_INSTALL_TOPOLOGY_REL);
    llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    if (llvm::sys::fs::is_directory(dir))
      return std::string(dir);
  }
  return MSCCL_TOPOLOGY_DIR; // a build tree: the source tree's share/topologies
}

std::vector<std::string> builtinTopologies() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(defaultTopologyDir(), ec))
    if (e.path().extension() == ".json")
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {
using nlohmann::json;

struct Reader {
  std::string file;
  [[noreturn]] void fail(const std::string &path, const std::string &msg) const {
    throw TopologyError("topology " + file + ": " + path + ": " + msg);
  }
  const json &member(const json &obj, const std::string &path, const char *key) const {
    if (!obj.is_object())
      fail(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end())
      fail(path, std::string("missing `") + key + "`");
    return *it;
  }
  /// A cited constant {"value": V, "source": "..."}.
  double constant(const json &obj, const std::string &path, const char *key, bool positive) const {
    const json &c = member(obj, path, key);
    std::string p = path + "." + key;
    if (!c.is_object() || !c.contains("value") || !c.contains("source"))
      fail(p, "expected {\"value\": number, \"source\": \"where the number comes from\"}");
    if (!c["source"].is_string() || c["source"].get<std::string>().empty())
      fail(p + ".source", "expected a non-empty string naming the source of the value");
    const json &v = c["value"];
    if (!v.is_number())
      fail(p + ".value", "expected a number");
    double d = v.get<double>();
    if (d < 0 || (positive && d <= 0))
      fail(p + ".value", positive ? "must be positive" : "must not be negative");
    return d;
  }
  std::string string(const json &obj, const std::string &path, const char *key) const {
    const json &v = member(obj, path, key);
    if (!v.is_string())
      fail(path + "." + key, "expected a string");
    return v.get<std::string>();
  }
  uint32_t count(const json &obj, const std::string &path, const char *key) const {
    const json &v = member(obj, path, key);
    if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > 65536)
      fail(path + "." + key, "expected a positive integer");
    return v.get<uint32_t>();
  }
};
} // namespace

Topology loadTopology(const std::string &nameOrFile) {
  std::string file = nameOrFile;
  bool isPath = nameOrFile.find('/') != std::string::npos ||
                (nameOrFile.size() > 5 && nameOrFile.substr(nameOrFile.size() - 5) == ".json");
  if (!isPath) {
    file = defaultTopologyDir() + "/" + nameOrFile + ".json";
    if (!std::filesystem::exists(file)) {
      std::string known;
      for (const std::string &n : builtinTopologies())
        known += (known.empty() ? "" : ", ") + n;
      throw TopologyError("unknown topology '" + nameOrFile + "' (built in: " + (known.empty() ? "none found in " +
                          defaultTopologyDir() : known) + "; or give a FILE.json)");
    }
  }
  std::ifstream in(file);
  if (!in)
    throw TopologyError("cannot read topology file '" + file + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception &e) {
    throw TopologyError("topology " + file + ": not valid JSON: " + e.what());
  }
  Reader r{file};
  Topology t;
  t.file = file;
  t.name = r.string(j, "$", "name");
  t.description = r.string(j, "$", "description");
  t.nodes = r.count(j, "$", "nodes");
  t.gpusPerNode = r.count(j, "$", "gpus_per_node");
  const json &intra = r.member(j, "$", "intra_node");
  t.intraKind = r.string(intra, "$.intra_node", "kind");
  if (t.intraKind != "nvlink" && t.intraKind != "pcie")
    r.fail("$.intra_node.kind", "expected \"nvlink\" or \"pcie\"");
  t.intraGBps = r.constant(intra, "$.intra_node", "bandwidth_GBps", true);
  t.intraLatencyUs = r.constant(intra, "$.intra_node", "latency_us", false);
  const json &nvls = r.member(j, "$", "nvls");
  const json &avail = r.member(nvls, "$.nvls", "available");
  if (!avail.is_boolean())
    r.fail("$.nvls.available", "expected true or false");
  t.nvls = avail.get<bool>();
  if (t.nvls) {
    t.nvlsEfficiency = r.constant(nvls, "$.nvls", "efficiency", true);
    if (t.nvlsEfficiency > 1)
      r.fail("$.nvls.efficiency.value", "must be at most 1");
  }
  const json &gpu = r.member(j, "$", "gpu");
  t.hbmGBps = r.constant(gpu, "$.gpu", "hbm_GBps", true);
  t.tbGBps = r.constant(gpu, "$.gpu", "threadblock_GBps", true);
  if (t.nodes > 1) {
    const json &net = r.member(j, "$", "network");
    t.nicGBps = r.constant(net, "$.network", "nic_GBps", true);
    t.netLatencyUs = r.constant(net, "$.network", "latency_us", false);
  } else if (j.contains("network")) {
    const json &net = j["network"];
    t.nicGBps = r.constant(net, "$.network", "nic_GBps", true);
    t.netLatencyUs = r.constant(net, "$.network", "latency_us", false);
  }
  const json &lat = r.member(j, "$", "latency");
  t.launchUs = r.constant(lat, "$.latency", "launch_us", false);
  t.opUs = r.constant(lat, "$.latency", "op_us", false);
  t.barrierUs = r.constant(lat, "$.latency", "barrier_us", false);
  t.semaphoreUs = r.constant(lat, "$.latency", "semaphore_us", false);
  t.proxyUs = r.constant(lat, "$.latency", "proxy_us", false);
  return t;
}

} // namespace msccl::runtime::sim
