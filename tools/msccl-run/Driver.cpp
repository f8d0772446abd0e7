//===- Driver.cpp - msccl-run: run and verify execution plans ----------------------------===//
//
// Command line (llvm::cl) -> plan selection per size -> backend execute (timed, then a checked
// run on fresh inputs) -> nccl-tests style table / JSON lines. See Driver.h.
//
//===------------------------------------------------------------------------------------===//
#include "Driver.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/SimExecutor.h"
#include "msccl/runtime/Verify.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_os_ostream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace msccl::run {
namespace {
using namespace msccl::plan;
using namespace msccl::runtime;
namespace cl = llvm::cl;

cl::OptionCategory Cat("msccl-run options");
cl::opt<std::string> PlanPath(cl::Positional, cl::desc("[PLAN.json]"), cl::init(""), cl::cat(Cat));
cl::opt<std::string> Backend("backend", cl::desc("Executor backend: cpu, sim (performance model, see --topology), or when built cuda, cuda-virtual (all ranks on GPU 0), cuda-gpus (one rank per GPU)"), cl::init("cpu"), cl::cat(Cat));
cl::opt<std::string> MinBytes("b", cl::desc("Smallest message size (bytes; K/M/G suffixes)"), cl::init(""), cl::cat(Cat));
cl::opt<std::string> MaxBytes("e", cl::desc("Largest message size (bytes; K/M/G suffixes)"), cl::init(""), cl::cat(Cat));
cl::opt<unsigned> Factor("f", cl::desc("Size multiplication factor of the sweep"), cl::init(4), cl::cat(Cat));
cl::opt<std::string> SizeOpt("size", cl::desc("Run a single message size (bytes; K/M/G suffixes)"), cl::init(""), cl::cat(Cat));
cl::opt<std::string> DataTypeOpt("d", cl::desc("Data type: float16, bfloat16, float32, int32, uint32, uint8"),
                                 cl::init("float32"), cl::cat(Cat));
cl::opt<std::string> ReduceOpOpt("o", cl::desc("Reduction: sum, min or max (default: the plan's reduce_op, else sum)"),
                                 cl::init(""), cl::cat(Cat));
cl::opt<bool> InPlace("in-place", cl::desc("Alias input and output (default: the plan's `inplace`)"), cl::cat(Cat));
cl::opt<bool> OutOfPlace("out-of-place", cl::desc("Separate input and output buffers"), cl::cat(Cat));
cl::opt<unsigned> Iters("n", cl::desc("Timed iterations (launches) per size"), cl::init(5), cl::cat(Cat));
cl::opt<unsigned> Warmup("w", cl::desc("Warmup iterations per size"), cl::init(1), cl::cat(Cat));
cl::opt<bool> Check("check", cl::desc("Verify every output element (default on)"), cl::init(true), cl::cat(Cat));
cl::opt<bool> NoCheck("no-check", cl::desc("Do not verify results"), cl::cat(Cat));
cl::opt<bool> RaceCheck("race-check",
                        cl::desc("cpu backend: report data races a GPU could exhibit (missing nop, signal/wait, "
                                 "barrier, flush) as errors"),
                        cl::cat(Cat));
cl::opt<bool> NoRaceCheck("no-race-check", cl::desc("cpu backend: do not check for data races"), cl::cat(Cat));
cl::opt<std::string> Packet("packet", cl::desc("LL packet type: LL16 or LL8"), cl::init("LL16"), cl::cat(Cat));
cl::opt<std::string> JsonlPath("jsonl", cl::desc("Append one JSON object per row to FILE"), cl::init(""), cl::cat(Cat));
cl::opt<std::string> PlansDir("plans", cl::desc("Pick per size a plan from DIR (with --collective/--nranks)"),
                              cl::init(""), cl::cat(Cat));
cl::opt<std::string> CollectiveOpt("collective", cl::desc("With --plans: the collective to run"), cl::init("allreduce"),
                                   cl::cat(Cat));
cl::opt<unsigned> NRanks("nranks", cl::desc("With --plans: the rank count (0 = any)"), cl::init(0), cl::cat(Cat));
// Performance model (backend sim, msccl/runtime/SimExecutor.h).
cl::opt<std::string> TopologyOpt("topology", cl::desc("sim backend: topology NAME (hgx-h100, ...) or FILE.json"),
                                 cl::init(""), cl::cat(Cat));
cl::opt<bool> SuggestRanges("suggest-ranges",
                            cl::desc("sim backend: print the size range in which each of PLAN.json... is fastest"),
                            cl::cat(Cat));
cl::list<std::string> MorePlans(cl::Positional, cl::ZeroOrMore, cl::desc("[PLAN.json...] (with --suggest-ranges)"),
                                cl::cat(Cat));

std::optional<uint64_t> parseBytes(const std::string &s) {
  if (s.empty())
    return std::nullopt;
  size_t pos = 0;
  unsigned long long v;
  try {
    v = std::stoull(s, &pos);
  } catch (...) {
    return std::nullopt;
  }
  std::string suf = s.substr(pos);
  uint64_t mul = 1;
  if (suf == "" || suf == "B") mul = 1;
  else if (suf == "K" || suf == "k" || suf == "KiB") mul = 1ull << 10;
  else if (suf == "M" || suf == "m" || suf == "MiB") mul = 1ull << 20;
  else if (suf == "G" || suf == "g" || suf == "GiB") mul = 1ull << 30;
  else return std::nullopt;
  return v * mul;
}

struct LoadedPlan {
  std::string file;
  Plan plan;
};

std::string planLabel(const LoadedPlan &p) {
  std::string base = std::filesystem::path(p.file).filename().string();
  return base;
}

struct Row {
  uint64_t size = 0, count = 0;
  std::string status; // ok, wrong, skipped, error
  std::string message;
  double timeUs = 0, algbw = 0, busbw = 0;
  int64_t wrong = -1; // -1: not verified
  std::string plan;
  std::string redop;
  bool inplace = false;
  uint32_t nranks = 0;
  std::string collective;
};

void printRow(std::ostream &out, const Row &r, DataType dt) {
  char buf[512];
  if (r.status == "skipped") {
    std::snprintf(buf, sizeof buf, "%12llu  skipped: %s\n", (unsigned long long)r.size, r.message.c_str());
    out << buf;
    return;
  }
  std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  if (r.status == "error")
    wrong = "error";
  std::snprintf(buf, sizeof buf, "%12llu  %12llu  %8s  %6s  %10.2f  %7.3f  %7.3f  %7s  %s\n",
                (unsigned long long)r.size, (unsigned long long)r.count, std::string(dataTypeName(dt)).c_str(),
                r.redop.c_str(), r.timeUs, r.algbw, r.busbw, wrong.c_str(), r.plan.c_str());
  out << buf;
}

} // namespace

int runDriver(int argc, const char *const *argv, std::ostream &out, std::ostream &err) {
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
  auto usage = [&](const std::string &msg) {
    err << "msccl-run: error: " << msg << "\n";
    return 2;
  };
  if (InPlace && OutOfPlace)
    return usage("--in-place and --out-of-place are exclusive");
  if (!PlanPath.empty() && !PlansDir.empty())
    return usage("give either a PLAN.json or --plans DIR, not both");
  if (PlanPath.empty() && PlansDir.empty())
    return usage("no plan: give PLAN.json or --plans DIR");
  std::optional<DataType> dt = parseDataType(DataTypeOpt);
  if (!dt)
    return usage("unknown data type '" + DataTypeOpt + "' (float16, bfloat16, float32, int32, uint32, uint8)");
  std::optional<ReduceOp> userOp;
  if (!ReduceOpOpt.empty()) {
    userOp = parseReduceOp(ReduceOpOpt);
    if (!userOp)
      return usage("unknown reduce op '" + ReduceOpOpt + "' (sum, min, max)");
  }
  PacketType packet;
  if (Packet == "LL16")
    packet = PacketType::LL16;
  else if (Packet == "LL8")
    packet = PacketType::LL8;
  else
    return usage("unknown packet type '" + Packet + "' (LL16, LL8)");
  if (Iters == 0 && (NoCheck || !Check))
    return usage("-n 0 with --no-check would run nothing");
  if (Factor < 2 && SizeOpt.empty())
    return usage("-f must be at least 2");
  if (!TopologyOpt.empty() && Backend != "sim")
    return usage("--topology needs --backend sim");
  if (SuggestRanges && Backend != "sim")
    return usage("--suggest-ranges needs --backend sim");
  if (!MorePlans.empty() && !SuggestRanges)
    return usage("several PLAN.json files need --suggest-ranges");
  if (SuggestRanges) {
    std::vector<std::string> files{PlanPath};
    files.insert(files.end(), MorePlans.begin(), MorePlans.end());
    std::optional<uint64_t> lo = MinBytes.empty() ? std::optional<uint64_t>(256) : parseBytes(MinBytes);
    std::optional<uint64_t> hi = MaxBytes.empty() ? std::optional<uint64_t>(1ull << 30) : parseBytes(MaxBytes);
    if (!lo || !hi || *lo == 0 || *lo > *hi)
      return usage("need 0 < -b <= -e");
    std::vector<uint64_t> sweep;
    for (uint64_t s = *lo; s <= *hi; s *= Factor) {
      sweep.push_back(s);
      if (s > *hi / Factor)
        break;
    }
    return sim::suggestRangesMain(files, TopologyOpt.empty() ? "hgx-h100" : std::string(TopologyOpt), sweep, packet,
                                  out, err);
  }

  // Plans.
  std::vector<LoadedPlan> plans;
  try {
    if (!PlanPath.empty()) {
      plans.push_back(LoadedPlan{PlanPath, readPlanFile(PlanPath)});
    } else {
      std::vector<std::string> files;
      std::error_code ec;
      for (const auto &e : std::filesystem::directory_iterator(std::string(PlansDir), ec))
        if (e.path().extension() == ".json")
          files.push_back(e.path().string());
      if (ec)
        return usage("cannot read --plans directory '" + PlansDir + "': " + ec.message());
      std::sort(files.begin(), files.end());
      for (const std::string &f : files) {
        try {
          LoadedPlan lp{f, readPlanFile(f)};
          if (lp.plan.collective != CollectiveOpt || (NRanks != 0 && lp.plan.gpus.size() != NRanks))
            continue;
          ValidateOptions vo;
          vo.allowGlre = Backend == "cpu" || Backend == "sim";
          std::vector<PlanDiagnostic> problems = checkPlan(lp.plan, vo);
          if (!problems.empty()) {
            err << "msccl-run: warning: skipping " << f << ": invalid plan: " << problems[0].str()
                << (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : std::string())
                << "\n";
            continue;
          }
          plans.push_back(std::move(lp));
        } catch (const PlanError &e) {
          err << "msccl-run: warning: skipping " << f << ": " << e.what() << "\n";
        }
      }
      if (plans.empty()) {
        err << "msccl-run: error: no plan in " << PlansDir << " has collective \"" << CollectiveOpt << "\""
            << (NRanks ? " and " + std::to_string(NRanks) + " ranks" : std::string()) << "\n";
        return 1;
      }
    }
  } catch (const PlanError &e) {
    err << "msccl-run: error: " << PlanPath << ": " << e.what() << "\n";
    return 1;
  }

  // Sizes.
  std::vector<uint64_t> sizes;
  if (!SizeOpt.empty()) {
    auto s = parseBytes(SizeOpt);
    if (!s)
      return usage("bad --size '" + SizeOpt + "'");
    sizes.push_back(*s);
  } else {
    uint64_t b = 4096, e = 1 << 20;
    if (plans.size() == 1 && plans[0].plan.minMessageSize > b) {
      b = plans[0].plan.minMessageSize;
      e = std::max(e, b * 4);
    }
    if (!MinBytes.empty()) {
      auto v = parseBytes(MinBytes);
      if (!v)
        return usage("bad -b '" + MinBytes + "'");
      b = *v;
      if (MaxBytes.empty())
        e = std::max(e, b);
    }
    if (!MaxBytes.empty()) {
      auto v = parseBytes(MaxBytes);
      if (!v)
        return usage("bad -e '" + MaxBytes + "'");
      e = *v;
    }
    if (b == 0 || b > e)
      return usage("need 0 < -b <= -e");
    for (uint64_t s = b; s <= e; s *= Factor) {
      sizes.push_back(s);
      if (s > e / Factor)
        break;
    }
    // With no size flags at all, serve a newcomer: move each default size up to the nearest
    // size the plan can run (e.g. a plan with 3 chunks cannot run 4 KiB but can run 4128 B).
    bool defaultSweep = MinBytes.empty() && MaxBytes.empty() && plans.size() == 1;
    if (defaultSweep) {
      const Plan &plan = plans[0].plan;
      std::vector<uint64_t> fitted;
      for (uint64_t s : sizes) {
        uint64_t step = std::max<uint64_t>(plan.bufferAlignment, 1);
        uint64_t t = (s + step - 1) / step * step;
        for (; t < 2 * s + step; t += step)
          if (messageSizesFor(plan, t, nullptr))
            break;
        uint64_t pick = t < 2 * s + step ? t : s; // none fits: keep s, its row says why
        if (fitted.empty() || fitted.back() != pick)
          fitted.push_back(pick);
      }
      sizes = std::move(fitted);
    }
  }

  // Backend.
  registerCpuExecutor();
  registerSimExecutor();
#ifdef MSCCL_HAVE_CUDA_EXECUTOR
  registerCudaExecutor();
#endif
  std::unique_ptr<Executor> ex;
  if (RaceCheck && NoRaceCheck)
    return usage("--race-check and --no-race-check contradict each other");
  const bool raceCheck = RaceCheck && !NoRaceCheck;
  if (RaceCheck && Backend != "cpu")
    return usage("--race-check needs the cpu backend");
  try {
    if (Backend == "cpu") {
      CpuExecutorOptions co;
      co.raceCheck = raceCheck;
      ex = makeCpuExecutor(co);
    } else if (Backend == "sim") {
      ex = sim::makeSimExecutor(TopologyOpt.empty() ? "hgx-h100" : std::string(TopologyOpt));
    } else {
      ex = createExecutor(Backend);
    }
  } catch (const std::exception &e) { // ExecutionError, sim::TopologyError
    err << "msccl-run: error: " << e.what() << "\n";
    return 1;
  }
  auto *simEx = dynamic_cast<sim::SimExecutor *>(ex.get());

  std::unique_ptr<std::ofstream> jsonl;
  if (!JsonlPath.empty()) {
    jsonl = std::make_unique<std::ofstream>(JsonlPath, std::ios::app);
    if (!*jsonl) {
      err << "msccl-run: error: cannot open --jsonl file '" << JsonlPath << "'\n";
      return 1;
    }
  }

  const bool check = Check && !NoCheck && !simEx; // the model moves no data
  out << "# msccl-run: backend " << ex->name() << " (" << ex->description() << ")\n";
  if (plans.size() == 1)
    out << "# plan " << plans[0].file << ": collective " << plans[0].plan.collective << ", "
        << plans[0].plan.gpus.size() << " ranks, protocol " << plans[0].plan.protocol << "\n";
  else
    out << "# plans from " << PlansDir << ": " << plans.size() << " with collective " << CollectiveOpt << "\n";
  out << "# data type " << dataTypeName(*dt) << ", packet " << packetTypeName(packet) << ", " << Iters
      << " iteration(s) + " << Warmup << " warmup, check " << (check ? "on" : "off")
      << (*dt == DataType::Float16 || *dt == DataType::BFloat16 ? " (relative tolerance 1e-2)" : " (exact)") << "\n";
  out << "#\n#        size         count      type   redop    time(us)  algbw    busbw   #wrong  plan\n"
      << "#         (B)    (elements)                                (GB/s)   (GB/s)\n";

  bool failed = false;
  unsigned ran = 0;
  for (uint64_t size : sizes) {
    Row row;
    row.size = size;
    row.count = size / dataTypeBytes(*dt);
    const LoadedPlan *chosen = nullptr;
    MessageSizes ms;
    std::string reasons;
    for (const LoadedPlan &lp : plans) {
      std::string why;
      auto m = messageSizesFor(lp.plan, size, &why);
      if (m) {
        chosen = &lp;
        ms = *m;
        break;
      }
      reasons += (reasons.empty() ? "" : "; ") + (plans.size() > 1 ? planLabel(lp) + ": " : std::string()) + why;
    }
    if (!chosen) {
      row.status = "skipped";
      row.message = reasons;
    } else {
      const Plan &plan = chosen->plan;
      row.plan = planLabel(*chosen);
      row.nranks = uint32_t(plan.gpus.size());
      row.collective = plan.collective;
      RunOptions ro;
      ro.size = size;
      ro.dataType = *dt;
      ro.reduceOp = userOp;
      if (InPlace || OutOfPlace)
        ro.inPlace = bool(InPlace);
      ro.packetType = packet;
      ro.iterations = Iters;
      ro.warmup = Warmup;
      ro.check = check;
      row.inplace = ro.inPlace.value_or(plan.inplace);
      row.redop = std::string(reduceOpName(userOp.value_or(planReduceOp(plan).value_or(ReduceOp::Sum))));
      try {
        RunReport rep = runCollective(*ex, plan, ro);
        row.redop = std::string(reduceOpName(rep.reduceOp));
        row.timeUs = rep.secondsPerLaunch * 1e6;
        row.algbw = rep.algbw;
        row.busbw = rep.busbw;
        row.status = "ok";
        if (rep.verify.checked) {
          row.wrong = int64_t(rep.verify.wrong);
          if (rep.verify.wrong) {
            row.status = "wrong";
            row.message = rep.verify.describe();
          }
        }
        ++ran;
      } catch (const ExecutionError &e) {
        if (e.kind() == ErrorKind::Unsupported && userOp) {
          row.status = "skipped";
          row.message = e.what();
        } else {
          row.status = "error";
          row.message = std::string(errorKindName(e.kind())) + ": " + e.what();
          ++ran;
        }
      } catch (const std::exception &e) {
        row.status = "error";
        row.message = std::string("error: ") + e.what();
        ++ran;
      }
    }
    printRow(out, row, *dt);
    if (simEx && row.status == "ok")
      out << "#   " << simEx->lastReport().boundBy() << "\n";
    if (row.status == "wrong" || row.status == "error") {
      failed = true;
      err << "msccl-run: size " << size << " (" << row.plan << "): " << row.message << "\n";
    }
    if (jsonl) {
      nlohmann::ordered_json j;
      j["plan"] = row.plan;
      j["backend"] = std::string(ex->name());
      j["collective"] = row.collective;
      j["nranks"] = row.nranks;
      j["size"] = row.size;
      j["count"] = row.count;
      j["type"] = std::string(dataTypeName(*dt));
      j["redop"] = row.redop;
      j["inplace"] = row.inplace;
      j["time_us"] = row.timeUs;
      j["algbw_GBps"] = row.algbw;
      j["busbw_GBps"] = row.busbw;
      if (row.wrong >= 0)
        j["wrong"] = row.wrong;
      else
        j["wrong"] = nullptr;
      j["status"] = row.status;
      if (simEx && row.status == "ok")
        j["bound_by"] = simEx->lastReport().boundBy();
      if (!row.message.empty())
        j["message"] = row.message;
      *jsonl << j.dump() << "\n";
    }
  }
  if (ran == 0 && !failed) {
    err << "msccl-run: error: no message size could run (see the skipped rows)\n";
    return 1;
  }
  out << "# " << (failed ? "FAILED" : simEx ? "all sizes simulated (model output; nothing verified)" : "all results correct")
      << "\n";
  return failed ? 1 : 0;
}

} // namespace msccl::run
