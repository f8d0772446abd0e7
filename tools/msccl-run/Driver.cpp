//===- Driver.cpp - msccl-run: run and verify execution plans ----------------------------===//
//
// Command line (CommandLine.cpp: llvm::cl, into Options) -> plans (read, or compiled in-process, validated once)
// -> sizes -> backend -> per size: pick a plan, execute (timed, then a checked run on fresh
// inputs), print the row (flushed) and its JSON line. See Driver.h.
//
//===------------------------------------------------------------------------------------===//
#include "Driver.h"

#include "msccl/Version.h"
#include "msccl/driver/Driver.h"
#include "msccl/msccl.hpp"
#include "msccl/plan/LegacyPlan.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/SimExecutor.h"
#include "msccl/runtime/SourceMapFile.h"
#include "msccl/runtime/Verify.h"
#include "msccl/runtime/DistributedRun.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_os_ostream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace msccl::run {
// msccl.hpp (the registry) declares msccl::Executor and msccl::Communicator too: here the
// runtime's are meant.
using msccl::runtime::Communicator;
using msccl::runtime::Executor;
namespace {
using namespace msccl::plan;
using namespace msccl::runtime;
struct LoadedPlan {
  std::string file;
  Plan plan;
  std::string registryName; ///< --plans: its name in PlanChoice::registry.
  std::string label;        ///< The plan column; "" = the file name.
};

/// --plans: the folder's plans in a PlanRegistry as addDirectory registered them (api/, the rule
/// libmsccl, Python and the NCCL shim select by), and the request's fixed parts. Empty
/// `registry` for a single plan.
struct PlanChoice {
  std::unique_ptr<msccl::PlanRegistry> registry;
  std::map<std::string, const LoadedPlan *> byName;
  uint32_t worldSize = 0, ranksPerNode = 0;
};

std::string planLabel(const LoadedPlan &p) {
  if (!p.label.empty())
    return p.label;
  if (llvm::StringRef(p.file).startswith("stdlib:"))
    return p.file;
  return std::filesystem::path(p.file).filename().string();
}

bool isMscclInput(const std::string &input) {
  llvm::StringRef s(input);
  return s.startswith("stdlib:") || s.endswith(".msccl");
}

/// One problem line per plan diagnostic (at most 20, then a count).
std::string describeProblems(const std::vector<PlanDiagnostic> &problems) {
  std::string s;
  for (size_t i = 0; i < problems.size() && i < 20; ++i)
    s += "\n  " + problems[i].str();
  if (problems.size() > 20)
    s += "\n  (and " + std::to_string(problems.size() - 20) + " more)";
  return s;
}

/// The single input: read (JSON) or compiled in-process (.msccl, stdlib:NAME), then validated.
/// Returns the exit status on failure (reported on `err`).
std::optional<int> loadSinglePlan(const Options &o, std::vector<LoadedPlan> &plans, std::ostream &err) {
  const bool msccl = isMscclInput(o.input);
  if (!msccl && (!o.defines.empty() || !o.includeDirs.empty())) {
    err << "msccl-run: error: -D and -I apply to .msccl and stdlib:NAME inputs, not to " << o.input << "\n";
    return 2;
  }
  LoadedPlan lp{o.input, Plan(), "", ""};
  if (msccl) {
    driver::CompilerInvocation inv;
    inv.input = o.input;
    inv.includeDirs = o.includeDirs;
    inv.target = o.allowOverLimits ? driver::Target::Msccl : driver::Target::Mscclpp;
    std::istringstream noStdin;
    llvm::raw_os_ostream errs(err);
    std::optional<Plan> compiled;
    if (driver::splitDefines(o.defines, inv.defines, errs))
      compiled = driver::compilePlan(inv, noStdin, errs);
    errs.flush();
    if (!compiled) {
      err << "msccl-run: error: cannot compile " << o.input << "\n";
      return 1;
    }
    lp.plan = std::move(*compiled);
  } else {
    try {
      lp.plan = readPlanFile(o.input);
    } catch (const PlanError &e) {
      err << "msccl-run: error: " << o.input << ": " << e.what() << "\n";
      return 1;
    }
  }
  ValidateOptions vo;
  vo.allowGlre = true; // both executors run glre
  vo.deviceLimits = !o.allowOverLimits;
  std::vector<PlanDiagnostic> problems = checkPlan(lp.plan, vo);
  if (!problems.empty()) {
    err << "msccl-run: error: " << o.input << ": invalid plan (" << problems.size() << " problem"
        << (problems.size() > 1 ? "s" : "") << "):" << describeProblems(problems) << "\n";
    if (isLegacyPlanFile(o.input))
      err << "msccl-run: note: " << o.input << " is in MSCCLPPLang's older plan format; the paths name the plan converted to "
          << "today's format (`plan-convert " << o.input << "` prints it)\n";
    if (std::all_of(problems.begin(), problems.end(), [](const PlanDiagnostic &d) { return d.deviceLimit; }))
      err << "msccl-run: note: only the MSCCL++ executor's per-threadblock limits are exceeded; "
          << "--target=msccl runs the plan on this project's executors\n";
    return 1;
  }
  if (o.allowOverLimits) {
    std::vector<PlanDiagnostic> over = deviceLimitProblems(lp.plan);
    if (!over.empty())
      err << "msccl-run: warning: " << o.input << ": " << over[0].str()
          << (over.size() > 1 ? " (and " + std::to_string(over.size() - 1) + " more)" : std::string())
          << "; the MSCCL++ executor refuses the plan (--target=msccl: this project's executors run it)\n";
  }
  if (lp.plan.variableSizes && o.counts.empty()) {
    err << "msccl-run: error: " << o.input << ": " << needsCountsMessage(lp.plan)
        << "; give --counts uniform|random[:SEED]|skewed|zero|FILE.json\n";
    return 1;
  }
  if (!lp.plan.variableSizes && !o.counts.empty()) {
    err << "msccl-run: error: --counts needs a plan with variable sizes (an AllToAllV); " << o.input
        << " is a fixed-size \"" << lp.plan.collective << "\" plan\n";
    return 1;
  }
  if (lp.plan.variableSizes) {
    try { // a bad spec or matrix file is an error before any row
      (void)makeCounts(o.counts, uint32_t(lp.plan.gpus.size()), 1);
    } catch (const std::invalid_argument &e) {
      err << "msccl-run: error: " << e.what() << "\n";
      return 1;
    }
  }
  plans.push_back(std::move(lp));
  return std::nullopt;
}

/// Every valid plan of --plans DIR with the collective and rank count asked for, loaded as
/// libmsccl and the NCCL shim load a plan directory (PlanRegistry::addDirectory: .json plans,
/// .msccl programs compiled through the cache with -D/-I, or what the index msccl-plans.json
/// lists) into `choice.registry`, except that a file that cannot be loaded, or a plan this run's
/// checks refuse, is skipped with a warning (and left out of the registry).
std::optional<int> loadPlanFolder(const Options &o, std::vector<LoadedPlan> &plans, PlanChoice &choice,
                                  std::ostream &err) {
  msccl::CompileParams params;
  for (const std::string &d : o.defines) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "msccl-run: error: -D " << d << ": expected NAME=VALUE\n";
      return 2;
    }
    params.defines.push_back({d.substr(0, eq), d.substr(eq + 1)});
  }
  params.includeDirs = o.includeDirs;
  choice.registry = std::make_unique<msccl::PlanRegistry>();
  msccl::PlanRegistry &loader = *choice.registry;
  std::vector<std::string> skipped;
  try {
    loader.addDirectory(o.plansDir, params, &skipped);
  } catch (const msccl::Error &e) {
    err << "msccl-run: error: --plans " << o.plansDir << ": " << e.what() << "\n";
    return 2;
  }
  for (const std::string &s : skipped)
    err << "msccl-run: warning: skipping " << s << "\n";
  std::map<std::string, int> perFile; // a file several index entries build: label them by name
  for (const msccl::RegisteredPlan *rp : loader.plans())
    perFile[rp->info.source]++;
  std::vector<std::string> leftOut;
  for (const msccl::RegisteredPlan *rp : loader.plans()) {
    const Plan &plan = *rp->plan;
    leftOut.push_back(rp->info.name); // until it is kept
    if (rp->info.collective != o.collective || (o.nranks != 0 && plan.gpus.size() != o.nranks))
      continue;
    llvm::StringRef source(rp->info.source);
    source.consume_front("compile:");
    LoadedPlan lp{source.str(), plan, rp->info.name, perFile[rp->info.source] > 1 ? rp->info.name : ""};
    ValidateOptions vo;
    vo.allowGlre = true; // cpu and sim run glre; the CUDA executor refuses it when run
    vo.deviceLimits = !o.allowOverLimits;
    std::vector<PlanDiagnostic> problems = checkPlan(lp.plan, vo);
    if (!problems.empty()) {
      err << "msccl-run: warning: skipping " << lp.file << ": invalid plan: " << problems[0].str()
          << (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : std::string())
          << "\n";
      continue;
    }
    leftOut.pop_back();
    plans.push_back(std::move(lp));
  }
  for (const std::string &name : leftOut)
    loader.remove(name);
  if (plans.empty()) {
    err << "msccl-run: error: no plan in " << o.plansDir << " has collective \"" << o.collective << "\""
        << (o.nranks ? " and " + std::to_string(o.nranks) + " ranks" : std::string()) << "\n";
    return 1;
  }
  return std::nullopt;
}

/// The sweep: --size; else -b..-e by -f (defaults 4 KiB..1 MiB, raised to a single plan's
/// min_message_size). Sizes the user did not give (-b absent) are moved up to the nearest size
/// a single plan can run (a plan with 3 chunks cannot run 4 KiB but can run 4128 B), without
/// passing -e when -e is given.
std::vector<uint64_t> sweepSizes(const Options &o, const std::vector<LoadedPlan> &plans) {
  if (o.size)
    return {*o.size};
  uint64_t b = 4096, e = 1 << 20;
  if (plans.size() == 1 && plans[0].plan.minMessageSize > b) {
    b = plans[0].plan.minMessageSize;
    e = std::max(e, b * 4);
  }
  if (o.minBytes) {
    b = *o.minBytes;
    if (!o.maxBytes)
      e = std::max(e, b);
  }
  if (o.maxBytes) {
    e = *o.maxBytes;
    if (!o.minBytes)
      b = std::min(b, e); // -e alone: the default start, or -e itself when smaller
  }
  std::vector<uint64_t> sizes;
  for (uint64_t s = b; s <= e; s *= o.factor) {
    sizes.push_back(s);
    if (s > e / o.factor)
      break;
  }
  if (o.minBytes || plans.size() != 1)
    return sizes;
  const Plan &plan = plans[0].plan;
  const uint64_t step = std::max<uint64_t>(plan.bufferAlignment, 1);
  const uint64_t limit = o.maxBytes ? *o.maxBytes : UINT64_MAX;
  std::vector<uint64_t> fitted;
  for (uint64_t s : sizes) {
    uint64_t pick = s; // none fits: keep s, its row says why
    for (uint64_t t = (s + step - 1) / step * step; t < 2 * s + step && t <= limit; t += step)
      if (messageSizesFor(plan, t, dataTypeBytes(o.dataType), nullptr)) {
        pick = t;
        break;
      }
    if (fitted.empty() || fitted.back() != pick)
      fitted.push_back(pick);
  }
  return fitted;
}

std::unique_ptr<Executor> makeBackend(const Options &o, std::ostream &err) {
  registerBuiltExecutors();
  BackendOptions bo;
  bo.raceCheck = o.raceCheck;
  bo.topology = o.topology;
  try {
    return createExecutor(o.backend, bo);
  } catch (const std::exception &e) { // ExecutionError, sim::TopologyError
    err << "msccl-run: error: " << e.what() << "\n";
    return nullptr;
  }
}

/// Whether the collective's result depends on a reduction op (the redop column applies).
/// (Collectives.def: Yes, or Maybe for a collective without a row.)
bool reduces(CollectiveKind kind) { return collectiveReduces(kind) != Reduces::No; }

struct Row {
  uint64_t size = 0, count = 0;
  std::string status; // ok, wrong, skipped, error
  std::string message;
  std::vector<std::string> warnings; // race checker: relaxed handshakes (do not fail the run)
  bool ran = false;   // times and algbw/busbw are measured
  double timeUs = 0, algbw = 0, busbw = 0;
  int64_t wrong = -1; // -1: not verified
  std::string plan;   // "" when no plan could take the size (--plans)
  std::string redop;  // "" for collectives that do not reduce
  bool inplace = false;
  uint32_t nranks = 0; // 0: unknown (--plans without --nranks, no plan chosen)
  std::string collective;
  uint64_t moved = 0;  // AllToAllV (--counts): bytes of all blocks; 0 otherwise
};

void printHeader(std::ostream &out, const Options &o, const Executor &ex, const std::vector<LoadedPlan> &plans) {
  out << "# msccl-run: backend " << ex.name() << " (" << ex.description() << ")\n";
  if (plans.size() == 1)
    out << "# plan " << plans[0].file << ": collective " << plans[0].plan.collective << ", "
        << plans[0].plan.gpus.size() << " ranks, protocol " << plans[0].plan.protocol << "\n";
  else
    out << "# plans from " << o.plansDir << ": " << plans.size() << " with collective " << o.collective << "\n";
  out << "# data type " << dataTypeName(o.dataType) << ", packet " << packetTypeName(o.packet) << ", "
      << o.iterations << " iteration(s) + " << o.warmup << " warmup, check " << (o.check ? "on" : "off")
      << (o.dataType == DataType::Float16 || o.dataType == DataType::BFloat16 ? " (relative tolerance 1e-2)"
                                                                             : " (exact)")
      << "\n";
  if (!o.counts.empty()) // AllToAllV: algbw = moved / ranks / time; size = average per-rank buffer
    out << "# counts " << o.counts << " (size = average bytes per rank; moved = bytes of all blocks)\n";
  out << "#\n#        size         count      type   redop    time(us)  algbw    busbw   #wrong  plan"
      << (o.counts.empty() ? "" : "  moved(B)") << "\n"
      << "#         (B)    (elements)                                (GB/s)   (GB/s)\n"
      << std::flush;
}

void printRow(std::ostream &out, const Row &r, DataType dt) {
  char buf[512];
  if (r.status == "skipped") {
    std::snprintf(buf, sizeof buf, "%12llu  skipped: %s\n", (unsigned long long)r.size, r.message.c_str());
  } else {
    std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
    if (r.status == "error")
      wrong = "error";
    std::snprintf(buf, sizeof buf, "%12llu  %12llu  %8s  %6s  %10.2f  %7.3f  %7.3f  %7s  %s\n",
                  (unsigned long long)r.size, (unsigned long long)r.count, std::string(dataTypeName(dt)).c_str(),
                  r.redop.empty() ? "none" : r.redop.c_str(), r.timeUs, r.algbw, r.busbw, wrong.c_str(),
                  r.plan.c_str());
    if (r.moved && r.status != "error") { // AllToAllV: one more column
      std::string line(buf);
      line.pop_back();
      std::snprintf(buf, sizeof buf, "%s  %llu\n", line.c_str(), (unsigned long long)r.moved);
    }
  }
  out << buf << std::flush; // a row is visible as soon as it is measured, also through a pipe
}

/// One JSON object per row, with the same keys for every status (null where unknown).
std::string jsonLine(const Row &r, const Options &o, const Executor &ex, const std::string &boundBy = "",
                     double boundUs = 0) {
  auto orNull = [](const std::string &s) { return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s); };
  nlohmann::ordered_json j;
  j["plan"] = orNull(r.plan);
  j["backend"] = std::string(ex.name());
  j["collective"] = orNull(r.collective);
  j["nranks"] = r.nranks ? nlohmann::ordered_json(r.nranks) : nlohmann::ordered_json();
  j["size"] = r.size;
  j["count"] = r.count;
  j["type"] = std::string(dataTypeName(o.dataType));
  j["redop"] = orNull(r.redop);
  j["inplace"] = r.inplace;
  j["time_us"] = r.ran ? nlohmann::ordered_json(r.timeUs) : nlohmann::ordered_json();
  j["algbw_GBps"] = r.ran ? nlohmann::ordered_json(r.algbw) : nlohmann::ordered_json();
  j["busbw_GBps"] = r.ran ? nlohmann::ordered_json(r.busbw) : nlohmann::ordered_json();
  j["wrong"] = r.wrong >= 0 ? nlohmann::ordered_json(r.wrong) : nlohmann::ordered_json();
  j["status"] = r.status;
  j["message"] = r.message;
  if (!o.counts.empty())
    j["bytes_moved"] = r.moved;
  if (!boundBy.empty())
    j["bound_by"] = boundBy; // sim backend: what limits the predicted time
  if (boundUs > 0) {         // sim backend: the model's lower bound and the share of it reached
    j["bound_us"] = boundUs;
    j["of_bound"] = r.timeUs > 0 ? boundUs / r.timeUs : 0.0;
  }
  return j.dump();
}

/// Runs one size on `chosen` and fills the row's measurements and status.
/// The communicator when msccl-run runs one process per rank (null: all ranks in this process),
/// and how the job was started.
struct Distributed {
  std::unique_ptr<Communicator> comm;
  std::string launcher; ///< "mpi" or "environment" (RANK, WORLD_SIZE, MASTER_ADDR)
};

void runSize(Executor &ex, const Distributed &dist, const LoadedPlan &chosen, const Options &o, Row &row) {
  const Plan &plan = chosen.plan;
  RunOptions ro;
  ro.size = row.size;
  ro.dataType = o.dataType;
  ro.reduceOp = o.reduceOp;
  ro.inPlace = o.inPlace;
  ro.packetType = o.packet;
  ro.iterations = o.iterations;
  ro.warmup = o.warmup;
  ro.check = o.check;
  ro.planValidated = true; // loadSinglePlan / loadPlanFolder validated it once
  CountMatrix counts;
  try {
    if (plan.variableSizes) {
      const uint32_t n = uint32_t(plan.gpus.size());
      counts = makeCounts(o.counts, n, std::max<uint64_t>(1, row.size / dataTypeBytes(o.dataType) / n));
      ro.counts = &counts;
      row.moved = counts.total() * dataTypeBytes(o.dataType);
    }
    RunReport rep = dist.comm ? runCollectiveRanks(o.backend, *dist.comm, plan, ro, DistributedOptions{o.timeoutSeconds})
                              : runCollective(ex, plan, ro);
    if (!row.redop.empty())
      row.redop = std::string(reduceOpName(rep.reduceOp));
    row.ran = true;
    row.timeUs = rep.secondsPerLaunch * 1e6;
    row.algbw = rep.algbw;
    row.busbw = rep.busbw;
    row.status = "ok";
    row.warnings = rep.warnings;
    if (rep.verify.checked) {
      row.wrong = int64_t(rep.verify.wrong);
      if (rep.verify.wrong) {
        row.status = "wrong";
        row.message = rep.verify.describe();
      }
    }
  } catch (const ExecutionError &e) {
    if (e.kind() == ErrorKind::Unsupported && o.reduceOp) {
      row.status = "skipped";
      row.message = e.what();
    } else {
      row.status = "error";
      row.message = std::string(errorKindName(e.kind())) + ": " + e.what();
    }
  } catch (const std::exception &e) {
    row.status = "error";
    row.message = std::string("error: ") + e.what();
  }
}

/// The registry keeps the plans startDistributed kept, each found by name. The world size:
/// --nranks, else the job's process count (startDistributed kept only those plans), else the
/// one rank count of the plans (several: an error asking for --nranks). Ranks per node:
/// MSCCL_RANKS_PER_NODE, as the API's communicators read it. Returns the exit status on failure.
std::optional<int> registerPlans(const Options &o, const std::vector<LoadedPlan> &plans, PlanChoice &choice,
                                 std::ostream &err) {
  if (!choice.registry)
    return std::nullopt;
  std::set<uint32_t> worlds;
  for (const LoadedPlan &lp : plans) {
    choice.byName[lp.registryName] = &lp;
    worlds.insert(uint32_t(lp.plan.gpus.size()));
  }
  for (const msccl::RegisteredPlan *rp : choice.registry->plans())
    if (!choice.byName.count(rp->info.name)) // another rank count than the job's
      choice.registry->remove(std::string(rp->info.name)); // (a copy: remove destroys rp)
  if (o.nranks)
    choice.worldSize = o.nranks;
  else if (worlds.size() == 1)
    choice.worldSize = *worlds.begin();
  else if (!worlds.empty()) {
    std::string list;
    for (uint32_t w : worlds)
      list += (list.empty() ? "" : ", ") + std::to_string(w);
    err << "msccl-run: error: the " << o.collective << " plans in " << o.plansDir << " are for " << list
        << " ranks: give --nranks\n";
    return 2;
  }
  if (const char *k = std::getenv("MSCCL_RANKS_PER_NODE"); k && *k)
    choice.ranksPerNode = uint32_t(std::strtoul(k, nullptr, 10));
  return std::nullopt;
}

/// The plan for `size`: the registry's choice for the request (in place as -i/--in-place says;
/// unset: in place first, the mode of most plans, then out of place), or the single plan when it
/// can take the size.
/// Null with `reasons` when none.
const LoadedPlan *choosePlan(const PlanChoice &choice, const std::vector<LoadedPlan> &plans, uint64_t size,
                             const Options &o, std::string &reasons) {
  if (!choice.registry) {
    const LoadedPlan &lp = plans[0];
    if (lp.plan.variableSizes || messageSizesFor(lp.plan, size, dataTypeBytes(o.dataType), &reasons)) // AllToAllV: sized by --counts
      return &lp;
    return nullptr;
  }
  std::vector<bool> modes = o.inPlace ? std::vector<bool>{*o.inPlace} : std::vector<bool>{true, false};
  msccl::SelectRequest req;
  req.collective = o.collective;
  req.worldSize = choice.worldSize;
  req.ranksPerNode = choice.ranksPerNode;
  req.messageBytes = size;
  for (bool inPlace : modes) {
    req.inPlace = inPlace;
    if (const msccl::RegisteredPlan *p = choice.registry->select(req))
      return choice.byName.at(p->info.name);
  }
  req.inPlace = modes.front();
  reasons = choice.registry->explainLine(req);
  return nullptr;
}

/// Makes the row of one size: picks its plan (choosePlan), or says why none can take it.
Row measureSize(Executor &ex, const Distributed &dist, uint64_t size, const Options &o,
                const std::vector<LoadedPlan> &plans, const PlanChoice &choice) {
  Row row;
  row.size = size;
  row.count = size / dataTypeBytes(o.dataType);
  // What is known before a plan is chosen (a single plan, or --plans' filters).
  row.collective = plans.size() == 1 ? plans[0].plan.collective : o.collective;
  row.nranks = plans.size() == 1 ? uint32_t(plans[0].plan.gpus.size()) : o.nranks;
  if (plans.size() == 1)
    row.plan = planLabel(plans[0]);
  const Plan *ref = plans.size() == 1 ? &plans[0].plan : nullptr;
  auto setRedop = [&](const Plan *p) {
    row.redop.clear();
    if (reduces(collectiveKind(row.collective)) && row.collective != "alltoallv")
      row.redop = std::string(
          reduceOpName(o.reduceOp.value_or(p ? planReduceOp(*p).value_or(ReduceOp::Sum) : ReduceOp::Sum)));
  };
  setRedop(ref);
  row.inplace = o.inPlace.value_or(ref ? ref->inplace : false);
  std::string reasons;
  const LoadedPlan *chosen = choosePlan(choice, plans, size, o, reasons);
  if (!chosen) {
    row.status = "skipped";
    row.message = reasons;
    return row;
  }
  row.plan = planLabel(*chosen);
  row.nranks = uint32_t(chosen->plan.gpus.size());
  row.collective = chosen->plan.collective;
  row.inplace = o.inPlace.value_or(chosen->plan.inplace);
  setRedop(&chosen->plan);
  runSize(ex, dist, *chosen, o, row);
  return row;
}

/// Progress on `err` for long runs: a line before a size once the run has taken `after`
/// seconds or the size is predicted (from the last one, linearly in bytes) to take that long,
/// and, while one size runs, a line every max(`after`, 1) seconds once `after` seconds have
/// passed (from a ticker thread; the driver writes nothing else to `err` while a size runs).
class Progress {
public:
  Progress(std::ostream &err, double after, size_t total) : err_(err), after_(after), total_(total), start_(now()) {}
  ~Progress() { stopTicker(); }

  void beforeSize(size_t index, uint64_t size) {
    double elapsed = now() - start_;
    double predicted = lastSize_ ? lastSeconds_ * double(size) / double(lastSize_) : 0;
    if (after_ >= 0 && (elapsed >= after_ || predicted >= after_))
      line("size " + std::to_string(size) + " B (" + std::to_string(index + 1) + " of " + std::to_string(total_) +
           ")");
    sizeStart_ = now();
    lastSize_ = size;
    if (after_ >= 0)
      startTicker(index, size);
  }
  void afterSize() {
    stopTicker();
    lastSeconds_ = now() - sizeStart_;
  }

private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  void line(const std::string &what) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "# msccl-run: %s, %.1f s so far\n", what.c_str(), now() - start_);
    err_ << buf << std::flush;
  }
  void startTicker(size_t index, uint64_t size) {
    stop_ = false;
    ticker_ = std::thread([this, index, size] {
      const auto tick = std::chrono::duration<double>(std::max(after_, 1.0));
      std::unique_lock<std::mutex> lock(mutex_);
      while (!cv_.wait_for(lock, tick, [this] { return stop_; }))
        if (now() - start_ >= after_)
          line("size " + std::to_string(size) + " B (" + std::to_string(index + 1) + " of " +
               std::to_string(total_) + ") still running");
    });
  }
  void stopTicker() {
    if (!ticker_.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    ticker_.join();
  }
  std::ostream &err_;
  double after_;
  size_t total_;
  double start_, sizeStart_ = 0, lastSeconds_ = 0;
  uint64_t lastSize_ = 0;
  std::thread ticker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
};

} // namespace

/// Whether torchrun or a script started this process as one rank of a job: RANK, WORLD_SIZE and
/// MASTER_ADDR set (Communicator::initFromEnvironment; the GPU machine has no mpirun).
bool launchedByEnvironment() {
  return std::getenv("RANK") && std::getenv("WORLD_SIZE") && std::getenv("MASTER_ADDR");
}

/// One process per rank when started by mpirun/srun or with torchrun's environment
/// (DistributedRun.h): joins the job, keeps the plans for its rank count, and lets rank 0 alone
/// print the table (every rank prints its own errors). Returns an exit status to stop with, or
/// nullopt to go on (also outside a job).
std::optional<int> startDistributed(const Options &o, std::vector<LoadedPlan> &plans, Distributed &dist,
                                    std::ostream &out, std::ostream &err) {
  const bool mpi = Communicator::launchedByMpi();
  if (!mpi && !launchedByEnvironment())
    return std::nullopt;
  registerBuiltRankBackends();
  const std::vector<std::string> backends = registeredRankBackends();
  if (std::find(backends.begin(), backends.end(), o.backend) == backends.end() || o.raceCheck) {
    std::string names;
    for (const std::string &b : backends)
      names += (names.empty() ? "" : ", ") + b;
    err << "msccl-run: error: with one process per rank the backends are " << names << " (not " << o.backend
        << (o.raceCheck ? ", and not --race-check" : "") << ")\n";
    return 2;
  }
  try {
    dist.launcher = mpi ? "mpi" : "environment";
    dist.comm = mpi ? Communicator::initWorld(nullptr, nullptr) : Communicator::initFromEnvironment();
  } catch (const ExecutionError &e) {
    err << "msccl-run: error: " << e.what() << "\n";
    return 1;
  }
  const size_t world = size_t(dist.comm->size());
  if (!o.plansDir.empty()) // --plans: those for the job's rank count
    plans.erase(std::remove_if(plans.begin(), plans.end(),
                               [&](const LoadedPlan &lp) { return lp.plan.gpus.size() != world; }),
                plans.end());
  if (plans.empty()) {
    err << ("msccl-run: error: no plan in " + o.plansDir + " has " + std::to_string(world) +
            " ranks (the job's process count)\n")
        << std::flush;
    return 1;
  }
  for (const LoadedPlan &lp : plans)
    if (lp.plan.gpus.size() != world) {
      // One write per line: the ranks share the terminal.
      err << ("msccl-run: error: rank " + std::to_string(dist.comm->rank()) + ": plan " + lp.file + " has " +
              std::to_string(lp.plan.gpus.size()) + " ranks but the job has " + std::to_string(world) +
              " processes (run it with mpirun -np " + std::to_string(lp.plan.gpus.size()) + ")\n")
          << std::flush;
      return 1;
    }
  if (dist.comm->rank() != 0)
    out.setstate(std::ios::badbit); // rank 0 prints
  std::setvbuf(stderr, nullptr, _IOLBF, 1 << 16); // whole lines, so ranks' reports do not interleave
  return std::nullopt;
}

/// --suggest-ranges: the sim backend's message-size range per plan (SimExecutor.h).
int suggestRanges(const Options &o, std::ostream &out, std::ostream &err) {
  std::vector<std::string> files{o.input};
  files.insert(files.end(), o.morePlans.begin(), o.morePlans.end());
  const uint64_t lo = o.minBytes.value_or(256), hi = o.maxBytes.value_or(uint64_t(1) << 30);
  std::vector<uint64_t> sweep;
  for (uint64_t s = lo; s <= hi; s *= o.factor) {
    sweep.push_back(s);
    if (s > hi / o.factor)
      break;
  }
  return sim::suggestRangesMain(files, o.topology.empty() ? "hgx-h100" : o.topology, sweep, o.packet, out, err);
}

int runDriver(const Options &options, std::ostream &out, std::ostream &err) {
  if (options.suggestRanges)
    return suggestRanges(options, out, err);
  Options o = options;
  if (o.backend == "sim")
    o.check = false; // the model moves no data
  std::vector<LoadedPlan> plans;
  PlanChoice choice;
  if (std::optional<int> rc =
          o.plansDir.empty() ? loadSinglePlan(o, plans, err) : loadPlanFolder(o, plans, choice, err))
    return *rc;
  Distributed dist;
  if (std::optional<int> rc = startDistributed(o, plans, dist, out, err))
    return *rc;
  if (std::optional<int> rc = registerPlans(o, plans, choice, err))
    return *rc;
  const std::vector<uint64_t> sizes = sweepSizes(o, plans);
  std::unique_ptr<Executor> ex = makeBackend(o, err);
  if (!ex)
    return 1;
  std::optional<SourceMapFile> sources;
  if (!o.sourceMap.empty()) {
    try {
      sources = SourceMapFile::read(o.sourceMap);
    } catch (const std::exception &e) {
      err << "msccl-run: error: " << e.what() << "\n";
      return 2;
    }
  }
  std::unique_ptr<std::ofstream> jsonl;
  if (!o.jsonlPath.empty()) {
    jsonl = std::make_unique<std::ofstream>(o.jsonlPath, std::ios::app);
    if (!*jsonl) {
      err << "msccl-run: error: cannot open --jsonl file '" << o.jsonlPath << "'\n";
      return 1;
    }
  }

  printHeader(out, o, *ex, plans);
  if (dist.comm)
    out << "# " << dist.launcher << ": " << dist.comm->size() << " processes, one rank each, backend " << o.backend
        << "; " << dist.comm->describeNodes() << "\n"
        << std::flush;
  bool failed = false;
  unsigned ran = 0;
  Progress progress(err, o.progressAfterSeconds, sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    progress.beforeSize(i, sizes[i]);
    Row row = measureSize(*ex, dist, sizes[i], o, plans, choice);
    if (sources) { // name the .msccl call after every op path of a deadlock, race or misuse report
      row.message = sources->annotate(row.message);
      for (std::string &w : row.warnings)
        w = sources->annotate(w);
    }
    progress.afterSize();
    if (row.status != "skipped")
      ++ran;
    printRow(out, row, o.dataType);
    std::string boundBy;
    double boundUs = 0;
    if (auto *simEx = dynamic_cast<sim::SimExecutor *>(ex.get()); simEx && row.status == "ok") {
      boundBy = simEx->lastReport().boundBy();
      // The time no schedule can beat on this topology (model output, SimExecutor.h lowerBound).
      const sim::LowerBound lb =
          sim::lowerBound(collectiveKind(row.collective), row.nranks, simEx->topology(), row.size);
      boundUs = lb.seconds * 1e6;
      out << "#   " << boundBy;
      if (boundUs > 0 && row.timeUs > 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "; lower bound %.2f us (set by %s), %.0f%% of it reached", boundUs,
                      lb.limitedBy.c_str(), 100 * boundUs / row.timeUs);
        out << buf;
      }
      out << "\n" << std::flush;
    }
    if (!row.warnings.empty()) {
      err << "msccl-run: size " << row.size << " (" << row.plan << "): warning: " << row.warnings[0] << "\n";
      for (size_t w = 1; w < row.warnings.size(); ++w)
        err << "  " << row.warnings[w] << "\n";
      err << std::flush;
    }
    if (row.status == "wrong" || row.status == "error") {
      failed = true;
      err << "msccl-run: size " << row.size << " (" << row.plan << "): " << row.message << "\n" << std::flush;
    }
    if (jsonl)
      *jsonl << jsonLine(row, o, *ex, boundBy, boundUs) << "\n" << std::flush;
  }
  if (ran == 0 && !failed) {
    err << "msccl-run: error: no message size could run (see the skipped rows)\n";
    return 1;
  }
  out << "# "
      << (failed                 ? "FAILED"
          : o.backend == "sim"   ? "all sizes simulated (model output; nothing verified)"
          : o.backend != "cpu"   ? "all results correct"
          : o.raceCheck          ? "all results correct, no data race (--race-check)"
                                 : "all results correct (data races not checked: --race-check, or msccl-verify)")
      << "\n" << std::flush;
  return failed ? 1 : 0;
}

int runDriver(int argc, const char *const *argv, std::ostream &out, std::ostream &err) {
  Options options;
  int rc = parseCommandLine(argc, argv, options, out, err);
  if (rc >= 0)
    return rc;
  return runDriver(options, out, err);
}

} // namespace msccl::run
