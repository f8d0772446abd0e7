//===- SimExecutor.h - Performance model: a plan's time on a described topology ---------===//
//
// Consumes an execution plan, the per-rank message sizes (bytes) and a topology (GPUs, links,
// bandwidths, latencies: a JSON file under share/msccl/topologies, see docs/performance-model.md);
// produces the predicted time of one launch and what bounds it, without a GPU and without moving
// data. The plan is resolved and lowered exactly as the other backends do (Resolve.h: byte
// ranges, tbg slices, pipeline windows), then every rank's threadblocks are replayed in a
// discrete-event model:
//   - each data op moves its bytes over the resources its buffers and channel cross: memory
//     channel = NVLink (or PCIe) out of the writer and into the reader, through a non-blocking
//     switch; switch channel = NVLS multimem (every member's link, scaled by the NVLS efficiency);
//     port channel = proxy + NIC out/in between nodes (NVLink inside a node); local buffers =
//     HBM; LL packet buffers carry twice the payload (data + flags, LL16 and LL8);
//   - concurrent transfers share every resource max-min fairly (progressive filling), and every
//     threadblock has a copy/reduce throughput cap (a resource of its own);
//   - fixed latencies for op issue, signal/wait (one link hop), semaphores, barriers, proxy and
//     network hops, remote reads and kernel launch; packet reads wait for the packets they read.
// Guarantees: no resource carries more than its bandwidth at any time; the time of a plan whose
// only costs are link latency and bandwidth is the closed form of its steps.
//
// The "sim" executor backend (registerSimExecutor) wraps simulate() in the Executor interface:
// it allocates no real memory (allocate returns placeholder addresses that must not be
// dereferenced; upload/download do nothing), so results cannot be verified: drivers run it with
// checking off and report #wrong as N/A.
//
// Mirrors no MSCCL++ file: prior art is NCCL's tuning model (src/graph/tuning.cc), ASTRA-sim's
// analytical network backend and msccl-tools' simulator (docs/performance-model.md).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace msccl::runtime::sim {

/// A malformed or missing topology (file, JSON path and reason in what()).
class TopologyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One link of a fabric, full duplex: `GBps` each way (achievable), `latencyUs` to cross it.
struct FabricLink {
  uint32_t a = 0, b = 0;     ///< Vertices (Fabric::vertices).
  double GBps = 0, latencyUs = 0;
  std::string kind;          ///< The link class it was declared with ("pcie", "upi", "nvlink").
};

/// A node's interconnect as a graph: vertices 0..gpusPerNode-1 are the GPUs ("gpu0", ...), the
/// rest switches, bridges or CPUs that forward without computing. Each ordered pair of GPUs has
/// one fixed route (fewest hops, then least latency, then the links in file order), which every
/// memory-channel transfer between them loads link by link. Directed link d = 2 * link + (0 for
/// a -> b, 1 for b -> a).
struct Fabric {
  std::vector<std::string> vertices;
  std::vector<FabricLink> links;
  bool gpusForward = false;  ///< Whether routes may pass through GPUs (a torus), or only switches.
  /// "torus_dims" [X, Y, ...]: the GPUs form a torus of these sides, GPU g at coordinates
  /// (g % X, g / X % Y, ...), and every translation of it maps links to links of the same kind
  /// (the loader checks). Empty for other fabrics. msccl-synth packs one root's trees and
  /// translates them to the others.
  std::vector<uint32_t> torusDims;
  /// Per ordered GPU pair (a * gpusPerNode + b): the directed links of its route, and its latency.
  std::vector<std::vector<uint32_t>> routes;
  std::vector<double> routeLatencyUs;
  bool empty() const { return links.empty(); }
  /// The vertex directed link d leaves, and the one it enters.
  uint32_t linkFrom(uint32_t d) const { return d % 2 ? links[d / 2].b : links[d / 2].a; }
  uint32_t linkTo(uint32_t d) const { return d % 2 ? links[d / 2].a : links[d / 2].b; }
  /// "gpu3->sw0" for directed link d.
  std::string linkName(uint32_t d) const;
  /// For a torus (torusDims): the translation taking GPU 0 to GPU r, as the image of every GPU.
  std::vector<uint32_t> translation(uint32_t r) const;
  /// Bandwidth of directed link d, GB/s.
  double linkGBps(uint32_t d) const { return links[d / 2].GBps; }
};

/// A machine, as the model sees it. Bandwidths in GB/s (1e9 B/s) per direction, latencies in
/// microseconds. Ranks map to GPUs in order: rank r is GPU r % gpusPerNode of node r / gpusPerNode.
struct Topology {
  std::string name;         ///< "hgx-h100", or the file's "name".
  std::string description;  ///< One line.
  std::string file;         ///< Where it was read from.
  uint32_t nodes = 1, gpusPerNode = 8;
  std::string intraKind = "nvlink"; ///< "nvlink" or "pcie": what memory channels cross.
  double intraGBps = 0;       ///< Per GPU, per direction, achievable.
  double intraLatencyUs = 0;  ///< One hop GPU -> GPU inside a node (a flag write seen by the peer).
  bool nvls = false;          ///< Switch channels (NVLS multimem) available.
  double nvlsEfficiency = 1;  ///< Fraction of the link bandwidth multimem traffic achieves.
  double hbmGBps = 0;         ///< Per GPU, reads + writes.
  double tbGBps = 0;          ///< Per threadblock: bytes a copy/reduce loop moves (wire bytes).
  double nicGBps = 0;         ///< Per GPU, per direction (0: single node, no network).
  double netLatencyUs = 0;    ///< One network hop (first byte / a flag).
  double proxyUs = 0;         ///< Port channel: the proxy picking up a request.
  double launchUs = 0;        ///< Kernel launch and teardown, once per launch.
  double opUs = 0;            ///< Issue overhead of every op of a threadblock.
  double barrierUs = 0;       ///< A threadblock barrier once all have arrived.
  double semaphoreUs = 0;     ///< A sem_release seen by sem_acquire.
  /// The node's interconnect as a graph (a topology file's "fabric"); empty: every GPU of a node
  /// reaches every other through a non-blocking switch at intraGBps (NVSwitch, or PCIe modelled
  /// as one switch). Single-node topologies only.
  Fabric fabric;
  uint32_t gpus() const { return nodes * gpusPerNode; }
  /// One hop from local GPU `a` to local GPU `b` of a node, microseconds: the route's latency on
  /// a fabric, else intraLatencyUs.
  double hopLatencyUs(uint32_t a, uint32_t b) const {
    return fabric.empty() ? intraLatencyUs : fabric.routeLatencyUs[a * gpusPerNode + b];
  }
};

/// The folder holding the installed topology files: $MSCCL_TOPOLOGY_PATH if set, else
/// <prefix>/share/msccl/topologies beside an installed tool, else the source tree's
/// share/topologies.
std::string defaultTopologyDir();
/// Names of the topology files in defaultTopologyDir(), sorted ("hgx-h100", ...).
std::vector<std::string> builtinTopologies();
/// Load a topology by name (a file NAME.json in defaultTopologyDir()) or by path (anything with
/// a '/' or ending in .json). Every constant must be an object {"value": V, "source": "..."}.
/// Throws TopologyError naming the file, the JSON path and the problem (unknown name: lists the
/// built-in ones).
Topology loadTopology(const std::string &nameOrFile);

/// One resource of the model and its use over one launch.
struct ResourceUse {
  std::string name;        ///< "rank 3 nvlink out", "rank 0 tb 2", "rank 1 hbm", "rank 8 nic in".
  double bytes = 0;        ///< Bytes it carried.
  double capacityGBps = 0;
  double utilisation = 0;  ///< bytes / (capacity * time of the launch without launch overhead).
  bool isThreadblock = false;
};

/// One op on the critical path.
struct CriticalStep {
  uint32_t rank = 0, tb = 0, op = 0; ///< Flattened op index (Resolve.h LoweredTb::ops).
  uint64_t iteration = 0;            ///< Pipeline iteration (0 outside pipelines).
  std::string name;                  ///< Op name ("put", "wait", ...).
  double startUs = 0, endUs = 0;     ///< From the start of the kernel.
  bool transfer = false;             ///< A data op (else latency: sync, issue, packet wait).
};

struct SimReport {
  double seconds = 0;             ///< One launch, kernel launch overhead included.
  uint64_t ops = 0;               ///< Op instances simulated (pipeline iterations counted).
  std::vector<ResourceUse> resources; ///< Every resource that carried bytes, busiest first.
  std::vector<CriticalStep> criticalPath; ///< In time order.
  double criticalTransferUs = 0, criticalLatencyUs = 0; ///< Split of the critical path.
  /// One line: "bound by rank 0 nvlink out (97% busy); critical path 14 ops: 80% transfer, 20% latency".
  std::string boundBy() const;
};

/// Simulate one launch of `plan` for per-rank sizes S_in/S_out (bytes) on `topo`.
/// Throws ExecutionError: InvalidPlan/InvalidSize (validation, Layout.h), Unsupported (more
/// ranks than the topology has GPUs, a switch channel without NVLS, a memory channel between
/// nodes), Deadlock (one diagnostic per blocked threadblock, as the CPU executor words them).
/// `validate` false skips validatePlan (PlanValidate.h) for a plan the caller has validated
/// already (with allowGlre): validation costs more than the simulation on large plans.
SimReport simulate(const plan::Plan &plan, const Topology &topo, uint64_t inputBytes, uint64_t outputBytes,
                   PacketType packet = PacketType::LL16, bool validate = true);

/// The "sim" backend over `topo`. execute() returns the simulated time of `iterations` launches.
/// It validates a plan on its first execute call and not again while the same plan object (same
/// address and rank count) comes back, as in a size sweep; do not edit a plan between calls.
class SimExecutor : public Executor {
public:
  explicit SimExecutor(Topology topo);
  std::string_view name() const override { return "sim"; }
  std::string description() const override;
  DeviceBuffer allocate(size_t bytes) override;
  void release(DeviceBuffer &buffer) override;
  void upload(void *, const void *, size_t) override {}
  void download(void *, const void *, size_t) override {}
  bool movesData() const override { return false; }
  ExecuteResult execute(const ExecuteRequest &request) override;
  /// The report of the last execute call (empty before the first).
  const SimReport &lastReport() const { return last_; }
  const Topology &topology() const { return topo_; }

private:
  Topology topo_;
  SimReport last_;
  uintptr_t next_ = 0x1000;
  const plan::Plan *validated_ = nullptr; // the last plan validated (execute validates once per plan)
  size_t validatedRanks_ = 0;
};

/// A SimExecutor on topology `nameOrFile` (loadTopology). Throws TopologyError.
std::unique_ptr<SimExecutor> makeSimExecutor(const std::string &nameOrFile);

// --- Lower bound ----------------------------------------------------------------------------

/// The time no schedule of collective `kind` can beat on `topo` for nccl-tests size `bytes` and
/// `nranks` ranks (model output; the arguments are in docs/performance-model.md): one launch
/// (launchUs), then the longer of one hop (a flag must reach a peer: intraLatencyUs, or
/// netLatencyUs when the ranks span nodes) and the bandwidth term, the larger of
///   rankLink x S / intraGBps, or with NVLS the smaller of that and the switch-reduced traffic over
///                          intraGBps x nvlsEfficiency (every rank's link; across nodes plus
///                          nicGBps, the rank's NIC being a second way in and out);
///   nodeNetwork x S / (gpusPerNode x nicGBps) (every node's NICs together),
/// with rankLink and nodeNetwork from collectiveTraffic (Collectives.def). It leaves out what the
/// model charges per threadblock, per op and for HBM: a schedule may use as many threadblocks as
/// it likes. On a topology with a fabric (a graph-shaped node) the bandwidth term is instead the
/// min-cut bound: the largest, over every set of vertices with ranks on both sides, of the share
/// of S that must leave the set (cutTraffic) over the capacity of the links leaving it (phases
/// added), and the hop is the longest route a rank's data must take; limitedBy names the cut's
/// links ("cut cpu0->cpu1"). Fabrics of more than 24 vertices try single vertices and their
/// complements only (a weaker, still valid bound). Zero for a collective without a Traffic rule
/// (Other) or one rank.
struct LowerBound {
  double seconds = 0, latencySeconds = 0, bandwidthSeconds = 0;
  std::string limitedBy; ///< "latency (launch + one nvlink hop)", "nvlink", "nvls", "network", "cut ...".
};
LowerBound lowerBound(CollectiveKind kind, uint32_t nranks, const Topology &topo, uint64_t bytes);

// --- Suggested size ranges --------------------------------------------------------------------

/// One plan's predicted time per size, and the sizes where it wins.
struct PlanRange {
  std::string label;                 ///< As given (usually the file name).
  uint64_t minBytes = 0, maxBytes = 0; ///< Inclusive; meaningful only when `fastest`.
  bool fastest = false;              ///< Fastest at some swept size.
};

/// Plans of one collective and rank count, compared.
struct RangeGroup {
  std::string collective;
  uint32_t nranks = 0;
  std::vector<PlanRange> plans;          ///< In the order given.
  /// Per swept size (nccl-tests S): the winning plan's index in `plans` (-1: none can run it)
  /// and its time in seconds.
  std::vector<uint64_t> sizes;
  std::vector<int> winner;
  std::vector<double> winnerSeconds;
};

/// For plans grouped by (collective, ranks), the sizes of `sizes` (ascending nccl-tests S) at
/// which each is predicted fastest on `topo`, as contiguous ranges: a plan's range runs from the
/// first size it wins to just below the next size another plan wins; the last winner's range
/// ends at the largest size. A plan wins a size when it is more than 1% faster than every plan
/// given before it (list simpler plans first). A plan's own min/max_message_size is ignored (the
/// point is to suggest them); sizes a plan cannot run (indivisible, offsets past 4 GiB, a shape
/// the topology lacks such as NVLS) are skipped for it. Throws ExecutionError(InvalidPlan) for
/// an invalid plan.
std::vector<RangeGroup> suggestRanges(const std::vector<std::string> &labels,
                                      const std::vector<const plan::Plan *> &plans, const Topology &topo,
                                      const std::vector<uint64_t> &sizes, PacketType packet = PacketType::LL16);

/// Print the groups as text: a header line per group, then one line per plan
/// "LABEL  MIN  MAX" (bytes, or "never fastest"), then the winner per size.
void printRanges(std::ostream &out, const std::vector<RangeGroup> &groups, const Topology &topo);

/// `msccl-run --suggest-ranges`: read the plan files, suggestRanges on topology `topology`
/// (loadTopology), printRanges to `out` (labels are the file names). Returns 0, or 1 after
/// writing "msccl-run: error: ..." to `err` (bad topology, invalid plan; an unreadable plan file:
/// each is named, and the ranges of the readable ones are still printed).
int suggestRangesMain(const std::vector<std::string> &files, const std::string &topology,
                      const std::vector<uint64_t> &sizes, PacketType packet, std::ostream &out, std::ostream &err);

} // namespace msccl::runtime::sim

// registerSimExecutor() (declared in Executor.h, defined by msccl_sim) registers the "sim"
// backend: createExecutor("sim", {.topology = ...}) builds a SimExecutor for that topology.
