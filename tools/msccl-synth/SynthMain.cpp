//===- SynthMain.cpp - msccl-synth's command line, search and check ----------------------===//
#include "Synth.h"

#include "msccl/driver/Driver.h"
#include "msccl/runtime/Collective.h"

#include <llvm/Support/raw_ostream.h>

#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

namespace msccl::tools::synth {
using runtime::sim::Topology;

namespace {

void usage(std::ostream &os) {
  os << "usage: msccl-synth [--topology NAME|FILE] [--collective C] [--ranks N] [--max-trees K]\n"
        "                   [--shape paths|trees] [--stdlib DIR] [-o FILE]\n"
        "  Writes a .msccl program for collective C (allgather, reducescatter, allreduce) on the\n"
        "  topology: a packing of K spanning trees per rank chosen so that no link carries much more\n"
        "  than its share (searched for K = 1..--max-trees, default 4), as a table of trees a person\n"
        "  can edit. The program is compiled and proven before it is written; the packing's\n"
        "  predicted link time is printed beside the min-cut lower bound (model output).\n"
        "  --topology   pcie-tree (default), torus-4x4, hgx-h100, ..., or a topology file (one node)\n"
        "  --ranks      ranks (default: every GPU of the node)\n"
        "  --trees K    exactly K trees per rank (default: the best of 1..--max-trees)\n"
        "  --shape      paths (default: chains, one transfer per threadblock at a time) or trees\n"
        "               (fewer hops; a threadblock puts to its children one after another)\n"
        "  -o FILE      where to write the program (default: stdout)\n";
}

int parse(int argc, const char *const *argv, SynthOptions &o, std::ostream &out, std::ostream &err) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(out);
      return 0;
    }
    if (a != "--topology" && a != "--collective" && a != "--ranks" && a != "--max-trees" && a != "--trees" && a != "--stdlib" &&
        a != "-o" && a != "--shape") {
      err << "msccl-synth: unknown argument " << a << " (--help)\n";
      return 2;
    }
    if (i + 1 >= argc) {
      err << "msccl-synth: " << a << " needs a value\n";
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--topology") o.topology = v;
    else if (a == "--collective") o.collective = v;
    else if (a == "--stdlib") o.stdlibDir = v;
    else if (a == "-o") o.output = v;
    else if (a == "--shape") {
      if (v != "paths" && v != "trees") {
        err << "msccl-synth: --shape is paths or trees (got " << v << ")\n";
        return 2;
      }
      o.shape = v == "paths" ? Shape::Paths : Shape::Trees;
    }
    else {
      std::optional<uint64_t> n = runtime::parseMessageSize(v);
      if (!n || *n == 0 || *n > (a == "--ranks" ? 1024u : 16u)) {
        err << "msccl-synth: bad value for " << a << ": " << v << (a == "--max-trees" ? " (1..16)" : "") << "\n";
        return 2;
      }
      (a == "--ranks" ? o.ranks : a == "--trees" ? o.trees : o.maxTrees) = uint32_t(*n);
    }
  }
  return -1;
}

} // namespace

std::string synthesize(const SynthOptions &o, std::ostream &log) {
  const Topology topo = runtime::sim::loadTopology(o.topology); // TopologyError is a runtime_error
  if (topo.nodes != 1)
    throw std::runtime_error("msccl-synth: topology " + topo.name + " has " + std::to_string(topo.nodes) +
                             " nodes; it writes single-node programs (across nodes, compose with the stdlib's "
                             "hierarchical algorithms)");
  const uint32_t ranks = o.ranks ? o.ranks : topo.gpusPerNode;
  const LinkGraph g = linkGraph(topo, ranks);
  const TreePacking p = o.trees ? packTrees(g, o.trees, o.shape) : bestPacking(g, o.maxTrees, o.shape);
  const std::string text = emitProgram(o.collective, p, topo); // checks the collective's name
  // One pass moves S for AllGather/ReduceScatter; AllReduce makes two (up, then down).
  const auto kind = runtime::collectiveKind(o.collective);
  const double passes = kind == runtime::CollectiveKind::AllReduce ? 2 : 1;
  const uint64_t S = uint64_t(1) << 30;
  const auto bound = runtime::sim::lowerBound(kind, ranks, topo, S);
  const double linkSeconds = passes * p.secondsPerByte * double(S);
  log << "msccl-synth: " << o.collective << " on " << topo.name << ", " << ranks << " ranks: " << p.perRoot
      << " tree(s) per rank; busiest link " << p.busiest << "; link time at 1 GiB " << std::fixed
      << std::setprecision(1) << linkSeconds * 1e6 << " us against the lower bound's " << bound.bandwidthSeconds * 1e6
      << " us (" << bound.limitedBy << "): " << std::setprecision(1)
      << (linkSeconds > 0 ? 100.0 * bound.bandwidthSeconds / linkSeconds : 0) << "% (model output)\n";
  // Prove it: compile with the default params.
  driver::CompilerInvocation inv;
  inv.input = "-";
  inv.stdlibDir = o.stdlibDir;
  std::istringstream in(text);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  std::optional<plan::Plan> plan = driver::compilePlan(inv, in, es);
  es.flush();
  if (!plan)
    throw std::runtime_error("msccl-synth: internal error: the written program does not compile or prove:\n" + errors);
  return text;
}

int runSynth(int argc, const char *const *argv, std::ostream &out, std::ostream &err) {
  SynthOptions o;
  if (int rc = parse(argc, argv, o, out, err); rc >= 0)
    return rc;
  std::string text;
  try {
    text = synthesize(o, err);
  } catch (const std::exception &e) {
    err << e.what() << "\n";
    return 1;
  }
  if (o.output.empty() || o.output == "-") {
    out << text;
    return 0;
  }
  std::ofstream f(o.output);
  f << text;
  if (!f.good()) {
    err << "msccl-synth: cannot write " << o.output << "\n";
    return 1;
  }
  return 0;
}

} // namespace msccl::tools::synth
