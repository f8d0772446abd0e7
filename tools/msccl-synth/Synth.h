//===- Synth.h - msccl-synth: .msccl programs from a topology (spanning-tree packings) ------===//
//
// Consumes a topology (runtime/SimExecutor.h: a fabric graph, or a node whose GPUs share one
// switch) and a collective; produces a commented .msccl program that mscclc compiles to a proven
// plan. The bandwidth algorithm is a packing of spanning trees (ForestColl, Blink): every rank's
// block is cut into K parts, part q of rank r's block travels down spanning tree (r, q)
// (AllGather), up the same tree reversed (ReduceScatter), or up and then down (AllReduce). By
// default the trees are paths (chains: a threadblock puts to one child, so a slow link's put never
// waits behind a fast one's); `Shape::Trees` allows any tree. They are chosen so that no link
// carries much more than its share: a multiplicative-weights search whose oracle is the cheapest
// path (exact up to 8 ranks, local search beyond) or arborescence (Chu-Liu/Edmonds) over
// GPU-to-GPU edges priced by the routes' links (a tree pays for every link each of its edges
// crosses, so copies of one part that cross a slow link twice cost twice), with restarts, a
// balancing pass and exchanges; on a torus, rank 0's trees are searched against the load of all
// their translates. The program carries its trees as tables a person can read and edit; it is
// proven by the verifier like any other.
//
// Guarantees: the packing's predicted congestion (max over links of bytes / bandwidth) is
// reported beside the min-cut lower bound (runtime::sim::lowerBound); every program written
// compiles and proves (synthesize() compiles it before returning). Single-node topologies only.
//
// Mirrors no MSCCL++ file: prior art is ForestColl (spanning-tree packing on arbitrary
// topologies), Blink (packing spanning trees) and TACCL/SCCL (synthesis from a topology).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/SimExecutor.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace msccl::tools::synth {

/// A spanning out-tree over the ranks: parent[v] (-1 at the root).
struct Tree {
  uint32_t root = 0;
  std::vector<int> parent;
};

/// Trees for every root: trees[r * perRoot + q] is part q of rank r's block.
struct TreePacking {
  uint32_t ranks = 0, perRoot = 0;
  std::vector<Tree> trees;
  /// Per directed fabric link (Fabric numbering; a node without a fabric: 2 per GPU, out then in),
  /// how many tree parts cross it when every edge moves its part (child -> parent reversed).
  std::vector<uint32_t> load;
  /// Seconds per byte of S (the collective's nccl-tests size) the busiest link needs for one
  /// all-gather pass (model output, ignoring latency and threadblock limits).
  double secondsPerByte = 0;
  std::string busiest;      ///< The busiest link's name (load over bandwidth).
  uint32_t busiestParts = 0; ///< How many parts cross it.
};

/// The links a GPU-to-GPU transfer crosses, and their bandwidths, for packing: a fabric's routes,
/// or on a node without one, the sender's link out and the receiver's link in (one switch).
struct LinkGraph {
  uint32_t ranks = 0;
  std::vector<double> capBps;                  ///< Per directed link, bytes per second.
  std::vector<std::string> names;              ///< Per directed link.
  std::vector<std::vector<uint32_t>> routes;   ///< Per ordered pair a * ranks + b.
  /// Per ordered pair: whether its route passes through another rank's GPU (a torus forwarding):
  /// the packing avoids such edges when it can.
  std::vector<bool> throughRank;
  /// A torus's translations (Fabric::torusDims), per r the image of every rank under the one
  /// taking rank 0 to r; empty for other fabrics or fewer ranks than GPUs. With `symmetric`
  /// set, a packing's trees are the generators rooted at rank 0 and stand for all their
  /// translates (packTrees searches that way first).
  std::vector<std::vector<uint32_t>> translations;
  bool symmetric = false;
};
LinkGraph linkGraph(const runtime::sim::Topology &topo, uint32_t ranks);

/// A spanning path from `root` (a chain: every rank forwards to at most one other) of least
/// total cost[u * n + v]: exact up to 8 vertices (dynamic programming over vertex sets), beyond
/// by nearest neighbour, then segment reversals (2-opt) and moves of runs of up to 3 vertices
/// (or-opt) until none helps (a local optimum, not always the least):
/// the parent of each vertex (-1 at the root).
std::vector<int> minCostPath(uint32_t n, uint32_t root, const std::vector<double> &cost);

/// What the packing is made of: spanning paths (chains: one transfer per threadblock and window,
/// so no threadblock serialises a slow link's transfer with a fast one's), or general trees
/// (fewer hops, but a threadblock puts to its children one after another).
enum class Shape { Paths, Trees };

/// Pack `perRoot` spanning trees per rank on `g` by multiplicative weights: trees are built one
/// at a time against the links' loads so far, rebuilt in sweeps with a rising price exponent,
/// balanced (sum of squared utilisations) and refined (single and pair rebuilds), over 12
/// restarts with perturbed prices (a fixed seed: deterministic); with g.translations the
/// symmetric search runs too and the better packing is kept.
TreePacking packTrees(const LinkGraph &g, uint32_t perRoot, Shape shape = Shape::Paths);

/// The best packing for perRoot in 1..maxPerRoot (least congestion, fewer trees on ties within 1%).
TreePacking bestPacking(const LinkGraph &g, uint32_t maxPerRoot, Shape shape = Shape::Paths);

/// Minimum-cost arborescence rooted at `root` of the complete digraph with cost[u * n + v] for
/// the edge u -> v (Chu-Liu/Edmonds): the parent of each vertex (-1 at the root).
std::vector<int> minArborescence(uint32_t n, uint32_t root, const std::vector<double> &cost);

/// What to write (msccl-synth's command line).
struct SynthOptions {
  std::string topology = "pcie-tree"; ///< --topology NAME|FILE
  std::string collective = "allgather"; ///< allgather, reducescatter or allreduce
  uint32_t ranks = 0;                 ///< --ranks (0: every GPU of the node)
  uint32_t maxTrees = 4;              ///< --max-trees: trees per rank searched, 1..this
  uint32_t trees = 0;                 ///< --trees: exactly this many per rank (0: search)
  Shape shape = Shape::Paths;         ///< --shape paths|trees
  std::string output;                 ///< -o FILE ("" or "-": stdout)
  std::string stdlibDir;              ///< "" = mscclc's default (imports of the program)
};

/// The program for `collective` on packing `p` (a .msccl text with `param chunks` for
/// pipelining, `param instances` and `param inplace`). Throws std::invalid_argument for a
/// collective it cannot write.
std::string emitProgram(const std::string &collective, const TreePacking &p, const runtime::sim::Topology &topo);

/// Search, write and check: the program text, which was compiled and proven with its default
/// params before returning. Throws std::runtime_error with the reason (unknown topology or
/// collective, multi-node topology, a program that does not prove: a bug, said so).
std::string synthesize(const SynthOptions &o, std::ostream &log);

/// msccl-synth's main: parse, synthesize, write. Returns 0, 1 on a failure (named on `err`), 2
/// on bad usage.
int runSynth(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace msccl::tools::synth
