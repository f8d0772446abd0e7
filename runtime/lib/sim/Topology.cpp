//===- Topology.cpp - Topology files of the performance model ----------------------------===//
//
// Consumes a topology name or a JSON file; produces a sim::Topology. Every constant of a file is
// an object {"value": V, "source": "..."} so each number says where it comes from; a missing
// source, a wrong type or a non-positive bandwidth is a TopologyError naming the file and the
// JSON path. Installed files live in <prefix>/share/msccl/topologies (found relative to the
// tool, like mscclc's stdlib), the source tree's in share/topologies.
//
//===------------------------------------------------------------------------------------===//
#include "Fabric.h"

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
/// "fabric": {"switches": [names], "gpus_forward": bool, "torus_dims": [X, Y] (optional),
/// "link_kinds": {KIND: {"bandwidth_GBps": constant, "latency_us": constant}},
/// "links": [["gpu0", "sw0", KIND], ...]}.
Fabric readFabric(const Reader &r, const json &f, uint32_t gpus) {
  const std::string p = "$.fabric";
  Fabric fab;
  for (uint32_t g = 0; g < gpus; ++g)
    fab.vertices.push_back("gpu" + std::to_string(g));
  const json &sw = r.member(f, p, "switches");
  if (!sw.is_array())
    r.fail(p + ".switches", "expected an array of vertex names");
  for (size_t i = 0; i < sw.size(); ++i) {
    std::string name = sw[i].is_string() ? sw[i].get<std::string>() : "";
    if (name.empty() || name.rfind("gpu", 0) == 0 ||
        std::find(fab.vertices.begin(), fab.vertices.end(), name) != fab.vertices.end())
      r.fail(p + ".switches[" + std::to_string(i) + "]", "expected a new name that does not start with \"gpu\"");
    fab.vertices.push_back(name);
  }
  const json &fwd = r.member(f, p, "gpus_forward");
  if (!fwd.is_boolean())
    r.fail(p + ".gpus_forward", "expected true or false");
  fab.gpusForward = fwd.get<bool>();
  if (f.contains("torus_dims")) {
    const json &dims = f["torus_dims"];
    if (!dims.is_array() || dims.empty())
      r.fail(p + ".torus_dims", "expected an array of the torus's sides");
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!dims[i].is_number_unsigned() || dims[i].get<uint64_t>() < 2 || dims[i].get<uint64_t>() > gpus)
        r.fail(p + ".torus_dims[" + std::to_string(i) + "]", "expected a side of 2.." + std::to_string(gpus));
      fab.torusDims.push_back(dims[i].get<uint32_t>());
    }
  }
  const json &kinds = r.member(f, p, "link_kinds");
  if (!kinds.is_object() || kinds.empty())
    r.fail(p + ".link_kinds", "expected an object of link kinds");
  const json &links = r.member(f, p, "links");
  if (!links.is_array() || links.empty())
    r.fail(p + ".links", "expected an array of [vertex, vertex, kind]");
  auto vertex = [&](const json &v, const std::string &at) {
    auto it = v.is_string() ? std::find(fab.vertices.begin(), fab.vertices.end(), v.get<std::string>())
                            : fab.vertices.end();
    if (it == fab.vertices.end())
      r.fail(at, "expected a vertex: gpu0..gpu" + std::to_string(gpus - 1) + " or a name in $.fabric.switches");
    return uint32_t(it - fab.vertices.begin());
  };
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string at = p + ".links[" + std::to_string(i) + "]";
    const json &l = links[i];
    if (!l.is_array() || l.size() != 3 || !l[2].is_string())
      r.fail(at, "expected [vertex, vertex, kind]");
    FabricLink x;
    x.a = vertex(l[0], at + "[0]");
    x.b = vertex(l[1], at + "[1]");
    if (x.a == x.b)
      r.fail(at, "a link joins two different vertices");
    x.kind = l[2].get<std::string>();
    if (!kinds.contains(x.kind))
      r.fail(at + "[2]", "unknown link kind '" + x.kind + "' (declare it in $.fabric.link_kinds)");
    const std::string kp = p + ".link_kinds." + x.kind;
    x.GBps = r.constant(kinds[x.kind], kp, "bandwidth_GBps", true);
    x.latencyUs = r.constant(kinds[x.kind], kp, "latency_us", false);
    fab.links.push_back(x);
  }
  return fab;
}

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
  if (j.contains("fabric")) {
    if (t.nodes != 1)
      r.fail("$.fabric", "a fabric describes a single-node machine (nodes must be 1)");
    if (t.nvls)
      r.fail("$.fabric", "a fabric topology has no NVLS (switch channels need NVSwitch)");
    t.fabric = readFabric(r, j["fabric"], t.gpusPerNode);
    computeRoutes(t.fabric, t.gpusPerNode, file);
    if (!t.fabric.torusDims.empty())
      checkTorus(t.fabric, t.gpusPerNode, file);
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
