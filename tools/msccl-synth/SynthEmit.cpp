//===- SynthEmit.cpp - msccl-synth: a packing as a commented .msccl program --------------===//
//
// Consumes a TreePacking and the topology it was packed for; produces the program text: a
// header that says what it does, for which machine, and what the model predicts, then the
// trees as a table of parent lists and one call per tree and rank into common/packing.msccl.
//
//===------------------------------------------------------------------------------------===//
#include "Synth.h"

#include <sstream>
#include <stdexcept>

namespace msccl::tools::synth {
using runtime::sim::Topology;

namespace {

struct Words {
  const char *title;       // "AllGather"
  const char *constructor; // "AllGather"
  const char *what;        // the "What it does" paragraph
};

Words wordsOf(const std::string &collective) {
  if (collective == "allgather")
    return {"AllGather", "AllGather",
            "part q of rank r's block travels down\n// spanning tree (r, q): the root puts it to its "
            "children, every other rank waits for its\n// parent's put and forwards it to its own children."};
  if (collective == "reducescatter")
    return {"ReduceScatter", "ReduceScatter",
            "part q of block r is summed\n// up spanning tree (r, q) reversed: every rank adds its "
            "children's partial sums (put into its scratch) to its own input piece and puts the sum\n"
            "// into its parent's scratch; rank r writes the total to its output."};
  if (collective == "allreduce")
    return {"AllReduce", "AllReduce",
            "part q of block r is summed\n// up spanning tree (r, q) reversed into rank r (a "
            "reduce-scatter), then travels down the same\n// tree to every rank (an all-gather)."};
  throw std::invalid_argument("msccl-synth: cannot write '" + collective +
                              "' (allgather, reducescatter or allreduce)");
}

std::string bodyOf(const std::string &collective) {
  if (collective == "allgather")
    return "    for t in range(len(parents)) {\n"
           "        for v in range(ranks) { packing_down_ready(ch, parents, t, v) }\n"
           "    }\n"
           "    with LoopIterationContext(unit = unit, num_chunks = 1) {\n"
           "        for t in range(len(parents)) {\n"
           "            for v in range(ranks) { packing_gather_tree(ch, parents, per_root, inplace, t, v) }\n"
           "        }\n"
           "    }\n";
  // ReduceScatter: the total of part (root, q) goes to output chunk q; in place that is input
  // chunk root * per_root + q = t. AllReduce: to chunk t of the result buffer.
  std::string dst = collective == "reducescatter"
                        ? "Rank(v).get_input_buffer()[t : t + 1] if inplace else Rank(v).get_output_buffer()[t % "
                          "per_root : t % per_root + 1]"
                        : "(Rank(v).get_input_buffer() if inplace else Rank(v).get_output_buffer())[t : t + 1]";
  std::string spread =
      collective == "allreduce" ? "                packing_spread_tree(down, parents, t, v, inplace, len(parents) + t, done[t])\n" : "";
  const bool ar = collective == "allreduce";
  return std::string(ar ? "    let down = packing_channels(parents)\n"
                          "    let done = []\n"
                          "    for t in range(len(parents)) { done.append(Semaphore(rank = t / per_root, initial_value = 0)) }\n"
                        : "") +
         "    let (slots, scratch) = packing_slots(parents)\n"
         "    for t in range(len(parents)) {\n"
         "        for v in range(ranks) { packing_up_ready(ch, parents, t, v) }\n"
         "    }\n"
         "    with LoopIterationContext(unit = unit, num_chunks = 1) {\n"
         "        for t in range(len(parents)) {\n"
         "            for v in range(ranks) {\n"
         "                let dst = " + dst + "\n"
         "                packing_reduce_tree(ch, parents, slots, scratch, t, v, dst" + (ar ? ", done[t]" : "") + ")\n" + spread +
         "            }\n"
         "        }\n"
         "    }\n";
}

} // namespace

std::string emitProgram(const std::string &collective, const TreePacking &p, const Topology &topo) {
  const Words sh = wordsOf(collective);
  const uint32_t n = p.ranks;
  std::ostringstream o;
  o << "// " << sh.title << ", spanning-tree packing (Simple) for topology " << topo.name << ", " << n
    << " ranks: written by msccl-synth.\n//\n";
  o << "// What it does: every rank block is cut into " << p.perRoot << " part" << (p.perRoot > 1 ? "s" : "")
    << " (one chunk each); " << sh.what << "\n";
  o << "// The trees (the table below) were chosen so that no link carries much more than its share\n"
       "// (model output: the busiest link, "
    << p.busiest << ", carries " << p.busiestParts << " of the " << p.trees.size() << " parts per pass).\n";
  o << "// When to use: large messages on " << topo.name << " (" << topo.description << ").\n";
  o << "// Layout: " << (collective == "allreduce" ? "two threadblocks" : "one threadblock") << " per tree on every rank ("
    << (collective == "allreduce" ? 2 : 1) * p.trees.size() << "), times `instances`; the transfers run in pipeline\n// windows of `unit` bytes. Edit the table to try "
       "other trees: the program checks that each is a\n// spanning tree.\n";
  o << "import \"common/checks.msccl\"\nimport \"common/packing.msccl\"\n\n";
  o << "param ranks = " << n << "      // the packing's rank count: fixed\n";
  o << "param unit = 1MiB   // pipeline window, bytes: a window moves one hop while the next leaves\n";
  o << "param instances = 1\nparam inplace = true\n\n";
  o << "program " << collective << "_synth(\n    collective = " << sh.constructor << "(ranks, " << p.perRoot
    << ", inplace),\n    instances = instances,\n    protocol = \"Simple\",\n) {\n";
  o << "    if unit < 16 or unit % 16 != 0 {\n        error(\"synth/" << collective
    << ": unit must be a positive multiple of 16 bytes (got unit = \" + str(unit) + \")\")\n    }\n";
  o << "    let per_root = " << p.perRoot << "\n";
  o << "    // parents[t][v]: rank v's parent in tree t (root t / per_root, part t % per_root); -1 at the root.\n";
  o << "    let parents = [\n";
  for (size_t t = 0; t < p.trees.size(); ++t) {
    o << "        [";
    for (uint32_t v = 0; v < n; ++v)
      o << (v ? ", " : "") << p.trees[t].parent[v];
    o << "], // tree " << t << ": root " << p.trees[t].root << ", part " << t % p.perRoot << "\n";
  }
  o << "    ]\n";
  o << "    require_packing(\"synth/" << collective << "\", parents, per_root, ranks)\n";
  o << "    let ch = packing_channels(parents)\n";
  o << bodyOf(collective);
  o << "}\n";
  return o.str();
}

} // namespace msccl::tools::synth
