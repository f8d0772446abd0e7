//===- CommandLine.cpp - msccl-run's command line: llvm::cl options into Options ----------===//
//
// The options exist only while one command line is parsed (CommandLine below); toOptions checks
// and converts them into run::Options. See Driver.h (parseCommandLine).
//
//===------------------------------------------------------------------------------------===//
#include "Driver.h"

#include "msccl/Version.h"
#include "msccl/plan/Plan.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_os_ostream.h>

#include <optional>
#include <ostream>
#include <string>

namespace msccl::run {
namespace {
using namespace msccl::plan;
using namespace msccl::runtime;
namespace cl = llvm::cl;

cl::OptionCategory Cat("msccl-run options");

/// msccl-run's llvm::cl options. They exist only while one command line is parsed: the
/// constructor registers them with llvm::cl's parser and the destructor removes them, so no
/// value survives into another call (and mscclc's options, which msccl-run uses in-process to
/// compile .msccl inputs, never meet these). The category is static: llvm::cl keeps it.
struct CommandLine {
  cl::opt<std::string> input{cl::Positional, cl::desc("[PLAN.json | ALGO.msccl | stdlib:NAME]"), cl::init(""),
                             cl::cat(Cat)};
  cl::list<std::string> defines{"D", cl::Prefix, cl::desc("For a .msccl input: override a param, -D NAME=VALUE"),
                                cl::value_desc("NAME=VALUE"), cl::cat(Cat)};
  cl::list<std::string> includeDirs{"I", cl::Prefix, cl::desc("For a .msccl input: add an import search directory"),
                                    cl::value_desc("dir"), cl::cat(Cat)};
  cl::opt<std::string> backend{"backend",
                               cl::desc("Executor backend: cpu, sim (performance model, see --topology), or when "
                                        "built cuda, cuda-virtual (all ranks on GPU 0), cuda-gpus (one rank per GPU), "
                                        "cuda-host, cuda-host-gpus (the CUDA executor's device code on host threads)"),
                               cl::init("cpu"), cl::cat(Cat)};
  cl::opt<std::string> minBytes{"b", cl::desc("Smallest message size (bytes; K/M/G suffixes)"), cl::init(""),
                                cl::cat(Cat)};
  cl::opt<std::string> maxBytes{"e", cl::desc("Largest message size (bytes; K/M/G suffixes)"), cl::init(""),
                                cl::cat(Cat)};
  cl::opt<unsigned> factor{"f", cl::desc("Size multiplication factor of the sweep"), cl::init(4), cl::cat(Cat)};
  cl::opt<std::string> size{"size", cl::desc("Run a single message size (bytes; K/M/G suffixes)"), cl::init(""),
                            cl::cat(Cat)};
  cl::opt<std::string> dataType{"d", cl::desc("Data type: float16, bfloat16, float32, int32, uint32, uint8"),
                                cl::init("float32"), cl::cat(Cat)};
  cl::opt<std::string> reduceOp{"o", cl::desc("Reduction: sum, min or max (default: the plan's reduce_op, else sum)"),
                                cl::init(""), cl::cat(Cat)};
  cl::opt<bool> inPlace{"in-place", cl::desc("Alias input and output (default: the plan's `inplace`)"),
                        cl::init(false), cl::cat(Cat)};
  cl::opt<bool> outOfPlace{"out-of-place", cl::desc("Separate input and output buffers"), cl::init(false),
                           cl::cat(Cat)};
  cl::opt<unsigned> iters{"n", cl::desc("Timed iterations (launches) per size"), cl::init(5), cl::cat(Cat)};
  cl::opt<unsigned> warmup{"w", cl::desc("Warmup iterations per size"), cl::init(1), cl::cat(Cat)};
  cl::opt<bool> check{"check", cl::desc("Verify every output element (default on)"), cl::init(true), cl::cat(Cat)};
  cl::opt<bool> noCheck{"no-check", cl::desc("Do not verify results"), cl::init(false), cl::cat(Cat)};
  cl::opt<int> checkNum{"c", cl::desc("nccl-tests style: 1 verifies the results, 0 does not"), cl::init(-1),
                        cl::value_desc("0|1"), cl::cat(Cat)};
  cl::opt<bool> raceCheck{"race-check",
                          cl::desc("cpu backend: report data races a GPU could exhibit (missing nop, signal/wait, "
                                   "barrier, flush, entry/exit handshake, scratch reused by the next launch while a "
                                   "peer is still in this one) as errors; needs 3 launches per size (-w + -n) to see "
                                   "every race across launches"),
                          cl::init(false), cl::cat(Cat)};
  cl::opt<bool> noRaceCheck{"no-race-check", cl::desc("cpu backend: do not check for data races"), cl::init(false),
                            cl::cat(Cat)};
  cl::opt<std::string> target{"target",
                              cl::desc("The executors the plan is for: mscclpp (default: the MSCCL++ executor's "
                                       "per-threadblock limits of 64 ops and 16 channels or remote buffers of a type "
                                       "hold) or msccl (this project's executors only: no such limit)"),
                              cl::value_desc("mscclpp|msccl"), cl::init("mscclpp"), cl::cat(Cat)};
  cl::opt<bool> allowOverLimits{"allow-over-limits", cl::desc("The same as --target=msccl (its older spelling)"),
                                cl::init(false), cl::cat(Cat)};
  cl::opt<std::string> counts{"counts",
                              cl::desc("AllToAllV plans: count matrix uniform, random[:SEED], skewed, zero or FILE.json"),
                              cl::init(""), cl::cat(Cat)};
  cl::opt<std::string> packet{"packet", cl::desc("LL packet type: LL16 or LL8"), cl::init("LL16"), cl::cat(Cat)};
  cl::opt<std::string> jsonl{"jsonl", cl::desc("Append one JSON object per row to FILE"), cl::init(""),
                             cl::cat(Cat)};
  cl::opt<std::string> plans{"plans", cl::desc("Pick per size a plan from DIR (with --collective/--nranks)"),
                             cl::init(""), cl::cat(Cat)};
  cl::opt<std::string> collective{"collective", cl::desc("With --plans: the collective to run"),
                                  cl::init("allreduce"), cl::cat(Cat)};
  cl::opt<unsigned> nranks{"nranks", cl::desc("With --plans: the rank count (0 = any)"), cl::init(0), cl::cat(Cat)};
  // Performance model (backend sim, msccl/runtime/SimExecutor.h).
  cl::opt<std::string> topology{"topology", cl::desc("sim backend: topology NAME (hgx-h100, ...) or FILE.json"),
                                cl::init(""), cl::cat(Cat)};
  cl::opt<bool> suggestRanges{"suggest-ranges",
                              cl::desc("sim backend: print the size range in which each of PLAN.json... is fastest"),
                              cl::init(false), cl::cat(Cat)};
  cl::list<std::string> morePlans{cl::Positional, cl::ZeroOrMore, cl::desc("[PLAN.json...] (with --suggest-ranges)"),
                                  cl::cat(Cat)};
  cl::opt<std::string> sourceMap{"source-map",
                                 cl::desc("mscclc's --source-map FILE of the plan: reports name the .msccl call of "
                                          "each op"),
                                 cl::value_desc("FILE"), cl::init(""), cl::cat(Cat)};
  cl::opt<double> timeout{"timeout",
                          cl::desc("Under mpirun: seconds a launch may take before every rank reports its "
                                   "threadblocks and the run fails (default 60)"),
                          cl::init(60), cl::value_desc("SECONDS"), cl::cat(Cat)};
  cl::opt<double> progressAfter{"progress-after",
                                cl::desc("Print progress on stderr once the run takes longer than SECONDS "
                                         "(default 3; negative: never)"),
                                cl::init(3.0), cl::value_desc("SECONDS"), cl::cat(Cat)};

  CommandLine() = default;
  CommandLine(const CommandLine &) = delete;
  CommandLine &operator=(const CommandLine &) = delete;
  ~CommandLine() {
    // std::addressof: cl::list's operator& yields its vector.
    cl::Option *all[] = {std::addressof(input), std::addressof(defines), std::addressof(includeDirs), std::addressof(backend), std::addressof(minBytes), std::addressof(maxBytes), std::addressof(factor), std::addressof(size), std::addressof(dataType), std::addressof(reduceOp), std::addressof(inPlace), std::addressof(outOfPlace), std::addressof(iters), std::addressof(warmup), std::addressof(check), std::addressof(noCheck), std::addressof(checkNum), std::addressof(raceCheck), std::addressof(noRaceCheck), std::addressof(packet), std::addressof(jsonl), std::addressof(plans), std::addressof(collective), std::addressof(nranks), std::addressof(progressAfter), std::addressof(topology), std::addressof(suggestRanges), std::addressof(morePlans), std::addressof(sourceMap), std::addressof(timeout), std::addressof(counts), std::addressof(target), std::addressof(allowOverLimits)};
    for (cl::Option *o : all)
      o->removeArgument();
  }
};

/// Copies the parsed command line into `o`, checking values and combinations. Returns "" or
/// the usage error.
std::string toOptions(const CommandLine &c, Options &o) {
  o = Options();
  o.input = c.input;
  o.defines.assign(c.defines.begin(), c.defines.end());
  o.includeDirs.assign(c.includeDirs.begin(), c.includeDirs.end());
  o.backend = c.backend;
  if (c.inPlace && c.outOfPlace)
    return "--in-place and --out-of-place are exclusive";
  if (c.inPlace || c.outOfPlace)
    o.inPlace = bool(c.inPlace);
  if (!o.input.empty() && !c.plans.empty())
    return "give either a PLAN.json or --plans DIR, not both";
  if (o.input.empty() && c.plans.empty())
    return "no plan: give PLAN.json, ALGO.msccl, stdlib:NAME or --plans DIR";
  o.plansDir = c.plans;
  o.collective = c.collective;
  o.nranks = c.nranks;
  if (!(c.timeout > 0))
    return "--timeout must be positive";
  o.sourceMap = c.sourceMap;
  o.topology = c.topology;
  o.suggestRanges = c.suggestRanges;
  o.morePlans.assign(c.morePlans.begin(), c.morePlans.end());
  if (!o.topology.empty() && o.backend != "sim")
    return "--topology needs --backend sim";
  if (o.suggestRanges && o.backend != "sim")
    return "--suggest-ranges needs --backend sim";
  if (!o.morePlans.empty() && !o.suggestRanges)
    return "several PLAN.json files need --suggest-ranges";
  o.timeoutSeconds = c.timeout;
  std::optional<DataType> dt = parseDataType(c.dataType);
  if (!dt)
    return "unknown data type '" + c.dataType + "' (float16, bfloat16, float32, int32, uint32, uint8)";
  o.dataType = *dt;
  if (!c.reduceOp.empty()) {
    o.reduceOp = parseReduceOp(c.reduceOp);
    if (!o.reduceOp)
      return "unknown reduce op '" + c.reduceOp + "' (sum, min, max)";
  }
  if (c.packet == "LL16")
    o.packet = PacketType::LL16;
  else if (c.packet == "LL8")
    o.packet = PacketType::LL8;
  else
    return "unknown packet type '" + c.packet + "' (LL16, LL8)";
  if (c.checkNum.getNumOccurrences() && c.checkNum != 0 && c.checkNum != 1)
    return "-c takes 0 or 1, not " + std::to_string(c.checkNum);
  o.check = c.check && !c.noCheck;
  if (c.checkNum.getNumOccurrences()) {
    if ((c.checkNum == 1 && c.noCheck) || (c.checkNum == 0 && c.check.getNumOccurrences() && c.check))
      return "-c " + std::to_string(c.checkNum) + " contradicts --" + (c.noCheck ? "no-check" : "check");
    o.check = c.checkNum == 1;
  }
  o.iterations = c.iters;
  o.warmup = c.warmup;
  if (o.iterations == 0 && !o.check)
    return "-n 0 without checking would run nothing";
  if (c.raceCheck && c.noRaceCheck)
    return "--race-check and --no-race-check contradict each other";
  o.raceCheck = c.raceCheck && !c.noRaceCheck;
  if (o.raceCheck && o.backend != "cpu")
    return "--race-check needs the cpu backend";
  if (c.target != "mscclpp" && c.target != "msccl")
    return "--target=" + c.target + ": expected mscclpp or msccl";
  o.allowOverLimits = c.allowOverLimits || c.target == "msccl";
  o.factor = c.factor;
  o.counts = c.counts;
  if (!o.counts.empty() && !c.plans.empty())
    return "--counts runs one AllToAllV plan, not --plans";
  struct SizeFlag {
    const cl::opt<std::string> &flag;
    std::optional<uint64_t> &value;
    const char *name;
  };
  for (SizeFlag f : {SizeFlag{c.minBytes, o.minBytes, "-b"}, SizeFlag{c.maxBytes, o.maxBytes, "-e"},
                     SizeFlag{c.size, o.size, "--size"}})
    if (!f.flag.empty()) {
      f.value = parseMessageSize(f.flag);
      if (!f.value)
        return std::string("bad ") + f.name + " '" + f.flag + "' (bytes, with an optional K, M or G suffix)";
    }
  if (o.factor < 2 && !o.size)
    return "-f must be at least 2";
  if ((o.minBytes && *o.minBytes == 0) || (o.minBytes && o.maxBytes && *o.minBytes > *o.maxBytes))
    return "need 0 < -b <= -e";
  if (o.maxBytes && *o.maxBytes == 0)
    return "-e must be positive";
  o.jsonlPath = c.jsonl;
  o.progressAfterSeconds = c.progressAfter;
  return "";
}

} // namespace

int parseCommandLine(int argc, const char *const *argv, Options &options, std::ostream &out, std::ostream &err) {
  // --version is ours (llvm::cl's prints LLVM's version and exits the process).
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a(argv[i]);
    if (a == "--")
      break;
    if (a == "--version" || a == "-version") {
      out << "msccl-run (msccl) " << MSCCL_VERSION << "\n";
      return 0;
    }
  }
  CommandLine c;
  cl::ResetAllOptionOccurrences();
  cl::HideUnrelatedOptions(Cat);
  {
    llvm::raw_os_ostream errs(err);
    if (!cl::ParseCommandLineOptions(argc, argv,
                                     "msccl-run: run MSCCL++ execution plans on an executor backend, verify the "
                                     "results and report nccl-tests style bandwidth\n",
                                     &errs))
      return 2;
  }
  std::string problem = toOptions(c, options);
  if (!problem.empty()) {
    err << "msccl-run: error: " << problem << "\n";
    return 2;
  }
  return -1;
}

} // namespace msccl::run
