//===- VerifyDriver.cpp - msccl-verify: prove a plan or report why not ------------------===//
//
// Consumes plan files; produces findings (text or JSON lines) and an exit status. See
// VerifyDriver.h.
//
//===------------------------------------------------------------------------------------===//
#include "VerifyDriver.h"

#include "msccl/plan/LegacyPlan.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/SourceMapFile.h"
#include "msccl/verify/PlanVerify.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace msccl::tools {

static void usage(std::ostream &os) {
  os << "usage: msccl-verify [--jsonl] [--out-of-place] [--no-races] [--target=mscclpp|msccl] [--quiet] [--source-map FILE] PLAN.json...\n"
        "  Proves that each execution plan computes its collective (postcondition), cannot deadlock and\n"
        "  has no data race under the GPU launch model (docs/verification.md), or reports why not.\n"
        "  --jsonl         one JSON object per finding and one summary object per plan\n"
        "  --source-map FILE  name the .msccl call of every op (mscclc --source-map FILE)\n"
        "  --out-of-place  verify with separate input/output buffers even if the plan says inplace\n"
        "  --no-races      skip the race check (postcondition and deadlock only)\n"
        "  --target=mscclpp|msccl  the executors the plan is for: mscclpp (default) holds it to the MSCCL++\n"
        "                  executor's per-threadblock limits (64 ops, 16 channels or remote buffers of a type);\n"
        "                  msccl (this project's executors) reports them as warnings only\n"
        "  --allow-over-limits  the same as --target=msccl\n"
        "  --quiet         print errors only (no warnings, no summary line)\n"
        "  Exit status: 0 proven (warnings allowed), 1 findings, 2 unreadable input or bad usage.\n";
}

static nlohmann::json findingJson(const std::string &file, const verify::Finding &f,
                                  const runtime::SourceMapFile *sources) {
  nlohmann::json j;
  j["plan"] = file;
  j["severity"] = f.warning ? "warning" : "error";
  j["kind"] = verify::findingKindName(f.kind);
  j["path"] = f.path;
  j["message"] = f.message;
  nlohmann::json ops = nlohmann::json::array();
  for (const verify::OpRef &r : f.ops) {
    nlohmann::json o;
    o["rank"] = r.rank;
    o["tb"] = r.tb;
    o["op"] = r.op;
    if (r.inner >= 0)
      o["inner"] = r.inner;
    o["launch"] = r.launch;
    o["path"] = r.path;
    if (sources)
      if (auto d = sources->describe(r.path))
        o["source"] = *d;
    ops.push_back(std::move(o));
  }
  j["ops"] = std::move(ops);
  return j;
}

int runMscclVerify(int argc, const char *const *argv, std::ostream &out, std::ostream &err) {
  bool jsonl = false, quiet = false;
  verify::VerifyOptions vo;
  std::vector<std::string> files;
  std::optional<runtime::SourceMapFile> sources;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--jsonl") jsonl = true;
    else if (a == "--source-map" || a.rfind("--source-map=", 0) == 0) {
      std::string f = a.size() > 12 ? a.substr(13) : (i + 1 < argc ? argv[++i] : "");
      if (f.empty()) {
        err << "msccl-verify: --source-map needs a FILE\n";
        return 2;
      }
      try {
        sources = runtime::SourceMapFile::read(f);
      } catch (const std::exception &e) {
        err << "msccl-verify: " << e.what() << "\n";
        return 2;
      }
    }
    else if (a == "--out-of-place") vo.followInplace = false;
    else if (a == "--no-races") vo.races = false;
    else if (a == "--allow-over-limits" || a == "--target=msccl") vo.deviceLimits = false;
    else if (a == "--target=mscclpp") vo.deviceLimits = true;
    else if (a == "--quiet" || a == "-q") quiet = true;
    else if (a == "--help" || a == "-h") {
      usage(out);
      return 0;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      err << "msccl-verify: unknown option '" << a << "'\n";
      usage(err);
      return 2;
    } else files.push_back(a);
  }
  if (files.empty()) {
    usage(err);
    return 2;
  }
  int status = 0;
  for (const std::string &file : files) {
    plan::Plan p;
    try {
      p = plan::readPlanFile(file);
    } catch (const std::exception &e) {
      err << "msccl-verify: " << file << ": " << e.what() << "\n";
      status = 2;
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    verify::VerifyResult r = verify::verifyPlan(p, vo);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    size_t errors = 0, warnings = 0;
    for (const verify::Finding &f : r.findings) {
      (f.warning ? warnings : errors)++;
      if (quiet && f.warning)
        continue;
      if (jsonl) {
        out << findingJson(file, f, sources ? &*sources : nullptr).dump() << "\n";
        continue;
      }
      out << file << ": " << (sources ? sources->annotate(f.str()) : f.str()) << "\n";
      for (const verify::OpRef &o : f.ops)
        out << "  note: " << (sources ? sources->annotate(o.str()) : o.str()) << "\n";
    }
    bool proven = r.proven();
    if (!proven && status == 0)
      status = 1;
    if (!proven && !jsonl && plan::isLegacyPlanFile(file))
      out << file << ": note: in MSCCLPPLang's older plan format; the paths name the plan converted to today's format "
          << "(`plan-convert " << file << "` prints it)\n";
    if (jsonl) {
      nlohmann::json s;
      s["plan"] = file;
      s["summary"] = true;
      s["proven"] = proven;
      s["collective"] = p.collective;
      s["postcondition_checked"] = r.postconditionChecked;
      s["errors"] = errors;
      s["warnings"] = warnings;
      s["ranks"] = r.stats.ranks;
      s["launches"] = r.stats.launches;
      s["ops_executed"] = r.stats.opsExecuted;
      s["racing_accesses"] = r.stats.races;
      s["seconds"] = secs;
      out << s.dump() << "\n";
    } else if (!quiet) {
      out << file << ": " << (proven ? "proven" : "NOT proven") << " (" << p.collective << ", " << r.stats.ranks
          << " ranks, " << r.stats.launches << " launches; "
          << (r.postconditionChecked ? "postcondition, " : "no postcondition for this collective, ")
          << (vo.races ? "deadlock and race freedom" : "deadlock freedom") << "; " << errors << " errors, " << warnings
          << " warnings)\n";
    }
  }
  return status;
}

} // namespace msccl::tools
