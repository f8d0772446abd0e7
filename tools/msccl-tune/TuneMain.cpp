//===- TuneMain.cpp - msccl-tune's command line and table --------------------------------===//
#include "Tune.h"

#include "msccl/elab/Loader.h"
#include "msccl/msccl.hpp"
#include "msccl/runtime/Collective.h"

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

namespace msccl::tools::tune {
using runtime::sim::Topology;

namespace {

void usage(std::ostream &os) {
  os << "usage: msccl-tune [--topology NAME|FILE] [--ranks N] [--collective LIST] [--min-bytes S]\n"
        "                  [--max-bytes S] [--dtype T] [--quick] [--no-synth] [--backend NAME] [--verbose]\n"
        "                  [--jobs N] [--stdlib DIR] [--target mscclpp|msccl] [--exhaustive]\n"
        "                  [-o DIR | --install]\n"
        "  Searches every stdlib algorithm of each collective over its parameter grid (instances,\n"
        "  chunks, peers_per_tb, unit; a program's `// tune: V1, V2` comment on a param line sets that\n"
        "  param's values) on the performance model, keeps the plans the verifier proves, and prints the\n"
        "  fastest per power-of-two size with the lower bound and the best plan at its defaults\n"
        "  (every figure is model output). -o DIR writes the winners and an index msccl-plans.json\n"
        "  that PlanRegistry, MSCCL_PLANS and msccl-run --plans load, and a chart tune-COLL.svg.\n"
        "  --topology      hgx-h100 (default), hgx-h200, 2x-hgx-h100, ..., or a topology file\n"
        "  --ranks         world size (default: every GPU of the topology)\n"
        "  --collective    comma-separated (default allreduce,allgather,reducescatter,alltoall)\n"
        "  --min-bytes, --max-bytes  the sweep (default 1K .. 4G; K, M, G suffixes)\n"
        "  --quick         defaults and instances only (no other grid axis)\n"
        "  --jobs N        candidates compiled and replayed on the model at once (default: every core;\n"
        "                  proven on at most one thread per 8 GiB of memory; same result)\n"
        "  --exhaustive    replay every candidate at every size (by default a candidate already slower\n"
        "                  than a size's fastest by more than the 1% tie at a smaller size is not\n"
        "                  replayed: the model's time does not fall with size; same result)\n"
        "  --no-synth      leave out msccl-synth's programs (on a graph-shaped node they join the stdlib's:\n"
        "                  spanning-path packings for the topology, at pipeline windows 64K, 256K, 1M)\n"
        "  --backend NAME  time the candidates on that executor (cpu, cuda, cuda-virtual, ...: measured,\n"
        "                  results checked) instead of the model; the bound stays model output\n"
        "  --target        mscclpp (default): plans MSCCL++'s executor runs too (64 ops per threadblock,\n"
        "                  ...); msccl: this project's executors only (the API, the NCCL shim,\n"
        "                  msccl-run --target=msccl), which lifts those limits (deeper pipelines)\n"
        "  --install       -o the installed plans directory, which libmsccl_nccl.so loads when MSCCL_PLANS\n"
        "                  is unset ($MSCCL_INSTALLED_PLANS, $XDG_DATA_HOME/msccl/plans or\n"
        "                  ~/.local/share/msccl/plans)\n";
}

std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

/// Parses argv into `o`; returns -1 to go on, else the exit status.
int parse(int argc, const char *const *argv, TuneOptions &o, std::ostream &out, std::ostream &err) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char *name) -> std::optional<std::string> {
      if (i + 1 >= argc) {
        err << "msccl-tune: " << name << " needs a value\n";
        return std::nullopt;
      }
      return std::string(argv[++i]);
    };
    std::optional<std::string> v;
    if (a == "--help" || a == "-h") {
      usage(out);
      return 0;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--verbose") {
      o.verbose = true;
    } else if (a == "--exhaustive") {
      o.exhaustive = true;
    } else if (a == "--install") {
      o.install = true;
    } else if (a == "--no-synth") {
      o.synth = false;
    } else if (a == "--topology" || a == "--collective" || a == "--dtype" || a == "--stdlib" || a == "-o" ||
               a == "--backend" || a == "--target" ||
               a == "--ranks" || a == "--min-bytes" || a == "--max-bytes" || a == "--jobs") {
      if (!(v = value(a.c_str())))
        return 2;
      if (a == "--topology") o.topology = *v;
      else if (a == "--collective") o.collectives = splitList(*v);
      else if (a == "--dtype") o.dataType = *v;
      else if (a == "--stdlib") o.stdlibDir = *v;
      else if (a == "-o") o.outDir = *v;
      else if (a == "--backend") o.backend = *v;
      else if (a == "--target") {
        if (*v != "mscclpp" && *v != "msccl") {
          err << "msccl-tune: bad value for --target: " << *v << " (mscclpp or msccl)\n";
          return 2;
        }
        o.target = *v == "msccl" ? driver::Target::Msccl : driver::Target::Mscclpp;
      }
      else {
        std::optional<uint64_t> n = runtime::parseMessageSize(*v);
        if (!n || (a == "--ranks" && *n > 1024) || (a == "--jobs" && (*n == 0 || *n > 1024))) {
          err << "msccl-tune: bad value for " << a << ": " << *v << "\n";
          return 2;
        }
        if (a == "--ranks") o.ranks = uint32_t(*n);
        else if (a == "--jobs") o.jobs = unsigned(*n);
        else if (a == "--min-bytes") o.minBytes = *n;
        else o.maxBytes = *n;
      }
    } else {
      err << "msccl-tune: unknown argument " << a << " (--help)\n";
      return 2;
    }
  }
  if (o.install) {
    if (!o.outDir.empty()) {
      err << "msccl-tune: --install and -o contradict each other\n";
      return 2;
    }
    o.outDir = msccl::installedPlansDir();
    if (o.outDir.empty()) {
      err << "msccl-tune: --install: no directory (set MSCCL_INSTALLED_PLANS or HOME)\n";
      return 2;
    }
  }
  if (o.minBytes == 0 || o.minBytes > o.maxBytes) {
    err << "msccl-tune: --min-bytes must be in 1 .. --max-bytes\n";
    return 2;
  }
  if (!plan::parseDataType(o.dataType)) {
    err << "msccl-tune: unknown --dtype " << o.dataType << "\n";
    return 2;
  }
  return -1;
}

void printEnvelope(std::ostream &out, const Envelope &e, uint32_t ranks, const TuneOptions &o) {
  size_t proven = 0;
  for (const Candidate &c : e.candidates)
    proven += c.plan != nullptr;
  out << "# " << e.collective << (e.inPlace ? " in place" : " out of place") << ": " << e.candidates.size()
      << " candidates, " << proven << " compiled, proven and runnable here ("
      << (o.backend.empty() || o.backend == "sim" ? "model output" : "measured on " + o.backend + "; bound: model output")
      << " below)\n";
  if (o.verbose)
    for (const Candidate &c : e.candidates)
      out << "#   " << (c.plan ? "ok   " : "left ") << c.label() << (c.isDefault ? " (defaults)" : "")
          << (c.plan ? "" : ": " + c.leftOut) << "\n";
  if (e.runSizes != e.sizes) {
    const uint64_t elem = plan::dataTypeBytes(o.type());
    out << "# sizes cut per rank are timed as nccl-tests counts them: S rounded down to a multiple of "
        << uint64_t(ranks) * elem << " bytes (" << ranks << " ranks x " << elem << ")\n";
  }
  out << "#        size  plan                                         time(us)  busbw(GB/s)  default(GB/s)  "
         "bound(us)  of bound  bound by\n";
  const double factor = runtime::busBandwidthFactor(runtime::collectiveKind(e.collective), ranks);
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    const double S = double(e.runSizes[i]);
    const runtime::sim::LowerBound &b = e.bound[i];
    out << std::setw(13) << e.sizes[i] << "  ";
    if (e.winner[i] < 0) {
      out << "(no candidate runs this size)\n";
      continue;
    }
    const Candidate &w = e.candidates[size_t(e.winner[i])];
    const double t = w.seconds[i];
    const double def = e.bestDefault[i] < 0 ? 0 : e.candidates[size_t(e.bestDefault[i])].seconds[i];
    std::ostringstream row;
    row << std::left << std::setw(44) << w.label() << std::right << std::fixed << std::setprecision(2)
        << std::setw(10) << t * 1e6 << std::setw(13) << S / t / 1e9 * factor << std::setw(15)
        << (def > 0 ? S / def / 1e9 * factor : 0.0) << std::setw(11) << b.seconds * 1e6 << std::setw(9)
        << std::setprecision(0) << (b.seconds > 0 ? 100 * b.seconds / t : 0) << "%  " << b.limitedBy;
    out << row.str() << "\n";
  }
  if (e.pruned > 0)
    out << "# " << e.pruned << " (candidate, size) points not replayed: slower than the size's fastest by more than "
           "the 1% tie already at a smaller size (the model's time does not fall with size; --exhaustive replays "
           "them, same result)\n";
  if (!e.monotone)
    out << "# a candidate's model time fell as the size grew (" << e.nonMonotone << "): every point was replayed\n";
  out << "# compiled and proven in " << std::fixed << std::setprecision(1) << e.compileSeconds << " s, timed in "
      << e.timeSeconds << " s (wall time, measured, this machine)\n";
  if (e.fallback >= 0)
    out << "# sizes no winner can run (e.g. odd byte counts): " << e.candidates[size_t(e.fallback)].label() << "\n";
}

} // namespace

int runTune(int argc, const char *const *argv, std::ostream &out, std::ostream &err) {
  TuneOptions o;
  if (int rc = parse(argc, argv, o, out, err); rc >= 0)
    return rc;
  if (o.stdlibDir.empty())
    o.stdlibDir = elab::defaultStdlibDir();
  Topology topo;
  try {
    topo = runtime::sim::loadTopology(o.topology);
  } catch (const std::exception &e) {
    err << "msccl-tune: " << e.what() << "\n";
    return 1;
  }
  const uint32_t ranks = o.ranks ? o.ranks : topo.gpus();
  if (ranks < 2 || ranks > topo.gpus()) {
    err << "msccl-tune: --ranks " << ranks << " must be in 2.." << topo.gpus() << " (topology " << topo.name << ")\n";
    return 2;
  }
  const uint32_t perNode = ranks > topo.gpusPerNode ? topo.gpusPerNode : ranks;
  const bool measured = !o.backend.empty() && o.backend != "sim";
  if (measured) {
    runtime::registerBuiltExecutors();
    try {
      (void)runtime::createExecutor(o.backend);
    } catch (const std::exception &e) {
      err << "msccl-tune: --backend " << o.backend << ": " << e.what() << "\n";
      return 2;
    }
  }
  out << "# msccl-tune: topology " << topo.name << " (" << topo.description << "), " << ranks << " ranks, " << perNode
      << " per node, " << o.dataType << "; "
      << (measured ? "times and busbw measured on backend " + o.backend + " (this machine), the bound is model output"
                   : std::string("every time, busbw and bound is model output"))
      << "\n";
  const auto start = std::chrono::steady_clock::now();
  std::vector<Envelope> envelopes;
  for (const std::string &c : o.collectives) {
    if (runtime::collectiveKind(c) == runtime::CollectiveKind::Other) {
      err << "msccl-tune: unknown collective " << c << "\n";
      return 2;
    }
    for (bool inPlace : {false, true}) {
      envelopes.push_back(tuneCollective(c, inPlace, o, topo, ranks, perNode));
      printEnvelope(out, envelopes.back(), ranks, o);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << "# searched in " << std::fixed << std::setprecision(1) << secs << " s (measured, this machine)\n";
  if (!o.outDir.empty()) {
    try {
      writePlanDirectory(o.outDir, envelopes, o, topo, ranks, perNode);
    } catch (const std::exception &e) {
      err << "msccl-tune: " << e.what() << "\n";
      return 1;
    }
    out << "# wrote " << o.outDir << "/msccl-plans.json, the winners' plans and tune-*.svg\n";
  }
  return 0;
}

} // namespace msccl::tools::tune
