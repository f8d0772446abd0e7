//===- PlanChecks.cpp - Loader and device constraints of a plan (issue 11 item 1) -------===//
//
// Consumes a Plan; produces findings for what the runtime (validatePlan) and the MSCCL++ loader
// reject or silently mis-read, and warnings for MSCCL++ hazards. Also the one shape fix the
// compiler may apply itself: splitting sync ops over more than 8 channels. See PlanVerify.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/verify/PlanVerify.h"

#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/Resolve.h"

#include <cstdio>

namespace msccl::verify {
using namespace msccl::plan;

const char *findingKindName(FindingKind k) {
  switch (k) {
  case FindingKind::Plan: return "plan";
  case FindingKind::Hazard: return "hazard";
  case FindingKind::Postcondition: return "postcondition";
  case FindingKind::Deadlock: return "deadlock";
  case FindingKind::Race: return "race";
  case FindingKind::Unsupported: return "unsupported";
  }
  return "?";
}

std::string OpRef::str() const {
  std::string s = "rank " + std::to_string(rank) + " tb " + std::to_string(tb) + " op " + std::to_string(op);
  if (inner >= 0)
    s += "." + std::to_string(inner);
  if (launch)
    s += " (launch " + std::to_string(launch) + ")";
  if (!path.empty())
    s += " at " + path;
  return s;
}

std::string Finding::str() const {
  std::string s = std::string(warning ? "warning: " : "error: ") + findingKindName(kind) + ": ";
  if (!path.empty())
    s += path + ": ";
  return s + message;
}

bool VerifyResult::proven() const {
  for (const Finding &f : findings)
    if (!f.warning)
      return false;
  return true;
}

/// "gpus[3].threadblocks[1].ops[7].src_buff[0]" -> rank 3, tb 1, op 7 (inner op when nested).
static OpRef opRefOfPath(const std::string &path) {
  OpRef r;
  r.path = path;
  int g = -1, t = -1, o = -1, i = -1;
  if (std::sscanf(path.c_str(), "gpus[%d].threadblocks[%d].ops[%d].ops[%d]", &g, &t, &o, &i) >= 3) {
    r.rank = g;
    r.tb = t;
    r.op = o;
    r.inner = i;
    // Keep the op's own path.
    std::string prefix = "gpus[" + std::to_string(g) + "].threadblocks[" + std::to_string(t) + "].ops[" +
                         std::to_string(o) + "]";
    if (i >= 0)
      prefix += ".ops[" + std::to_string(i) + "]";
    r.path = prefix;
  }
  return r;
}

namespace {
struct Checker {
  const Plan &plan;
  bool deviceLimits;
  std::vector<Finding> out;

  void add(FindingKind k, bool warning, const std::string &path, const std::string &msg) {
    Finding f;
    f.kind = k;
    f.warning = warning;
    f.path = path;
    f.message = msg;
    OpRef r = opRefOfPath(path);
    if (r.rank >= 0)
      f.ops.push_back(r);
    out.push_back(std::move(f));
  }

  /// Hazards of the MSCCL++ executor only: flush (a no-op there), a reduce_op other than sum
  /// (ignored there), and ops its loader rejects (glre and any op the table marks not executable).
  void mscclppHazards(const Op &o, const std::string &path) {
    if (o.type == OpType::Flush)
      add(FindingKind::Hazard, true, path,
          "`flush` is a no-op in the MSCCL++ kernel (its channel count comes from dst_buff, which is empty): "
          "use `put_with_signal_and_flush` (`pwsf`) for the last put instead");
    if (o.reduceOp && *o.reduceOp != ReduceOp::Sum)
      add(FindingKind::Hazard, true, path + ".reduce_op",
          "reduce_op `" + std::string(reduceOpName(*o.reduceOp)) +
              "`: the MSCCL++ executor ignores reduce_op and always sums (use sum, or run on our executors only)");
    if (o.type == OpType::MultiLoadReduce)
      add(FindingKind::Hazard, true, path,
          "`glre` (an unfused switch reduce) is rejected by the MSCCL++ loader: follow the reduce by a switch "
          "broadcast of the same chunk on the same threadblock so that fusion makes a `glres`");
    else if (!opIsExecutable(o.type)) // any other op the table marks as not run by MSCCL++
      add(FindingKind::Hazard, true, path,
          "`" + std::string(opName(o.type)) +
              "` is not an MSCCL++ executor op: the MSCCL++ loader rejects the plan (this project's executors run it)");
  }

  void op(const Op &o, const std::string &path, bool inPipeline, const IterContext *ctx) {
    const bool ll = plan.protocol == "LL";
    if (runtime::isPacketOp(o.type) && !ll)
      add(FindingKind::Plan, false, path,
          "packet op `" + std::string(opName(o.type)) + "` in a plan with protocol `" + plan.protocol +
              "`: the MSCCL++ executor sizes scratch for packets only under `LL` (use protocol LL or plain ops)");
    // The MSCCL++ executor's own hazards: this project's executors run flush, honour reduce_op and
    // run every op of the table, so for them (deviceLimits false: mscclc/msccl-verify --target
    // msccl) these would be noise.
    if (deviceLimits)
      mscclppHazards(o, path);
    if (inPipeline && ctx && runtime::honoursPipeline(o.type)) {
      auto entries = [&](const std::vector<BufferRef> &v, const char *side) {
        for (size_t j = 0; j < v.size(); ++j)
          if (v[j].size != ctx->numChunks)
            add(FindingKind::Plan, false, path + "." + side + "[" + std::to_string(j) + "].size",
                "pipeline entry spans " + std::to_string(v[j].size) + " chunks but the pipeline's num_chunks is " +
                    std::to_string(ctx->numChunks) +
                    (v[j].size < ctx->numChunks ? " (the executor would run past the end of a shorter entry)"
                                                : " (the executor would process only the first num_chunks chunks "
                                                  "of a longer entry)"));
      };
      entries(o.src, "src_buff");
      entries(o.dst, "dst_buff");
      if (o.tbg && o.tbg->tbgSize > 1)
        add(FindingKind::Plan, false, path + ".tbg_info",
            "a pipeline op must not be split over a threadblock group (its slices are shorter than num_chunks)");
    }
    if (o.type == OpType::Pipeline)
      for (size_t j = 0; j < o.ops.size(); ++j)
        op(o.ops[j], path + ".ops[" + std::to_string(j) + "]", true, &o.iterContext);
  }

  void run() {
    runtime::ValidateOptions vo;
    vo.allowGlre = true; // reported as a hazard below
    for (const runtime::PlanDiagnostic &d : runtime::checkPlan(plan, vo))
      if (d.deviceLimit && !deviceLimits) {
        add(FindingKind::Plan, true, d.path,
            d.message + "; the MSCCL++ executor refuses the plan (this project's executors run it)");
        out.back().deviceLimit = true;
      } else
        add(FindingKind::Plan, false, d.path, d.message);
    uint64_t ops = 0;
    for (const Gpu &g : plan.gpus)
      for (const Threadblock &tb : g.threadblocks)
        ops += tb.ops.size();
    if (plan.gpus.empty() || ops == 0)
      add(FindingKind::Plan, false, plan.gpus.empty() ? "gpus" : "",
          "the plan has no operations (is `instances` 0?): an executor would run it and report every result "
          "correct without moving any data");
    // min/max_message_size ranges are checked by checkPlan.
    for (size_t r = 0; r < plan.gpus.size(); ++r)
      for (size_t t = 0; t < plan.gpus[r].threadblocks.size(); ++t) {
        const auto &ops = plan.gpus[r].threadblocks[t].ops;
        for (size_t k = 0; k < ops.size(); ++k)
          op(ops[k], "gpus[" + std::to_string(r) + "].threadblocks[" + std::to_string(t) + "].ops[" + std::to_string(k) + "]",
             false, nullptr);
      }
  }
};
} // namespace

std::vector<Finding> checkPlanShape(const Plan &plan, bool deviceLimits) {
  Checker c{plan, deviceLimits, {}};
  c.run();
  return std::move(c.out);
}

constexpr size_t kMaxChannelsPerOp = 8;

size_t splitPieces(const Op &op) {
  if (!isChannelSyncOp(op.type) || !op.channelIds || op.channelIds->size() <= kMaxChannelsPerOp)
    return 1;
  return (op.channelIds->size() + kMaxChannelsPerOp - 1) / kMaxChannelsPerOp;
}

unsigned splitWideSyncOps(Plan &plan) {
  constexpr size_t kMax = kMaxChannelsPerOp;
  unsigned split = 0;
  auto fix = [&](std::vector<Op> &ops) {
    std::vector<Op> out;
    out.reserve(ops.size());
    for (Op &o : ops) {
      if (splitPieces(o) == 1) {
        out.push_back(std::move(o));
        continue;
      }
      ++split;
      const std::vector<uint32_t> ids = *o.channelIds;
      for (size_t b = 0; b < ids.size(); b += kMax) {
        Op piece = o;
        piece.channelIds = std::vector<uint32_t>(ids.begin() + long(b), ids.begin() + long(std::min(ids.size(), b + kMax)));
        out.push_back(std::move(piece));
      }
    }
    ops = std::move(out);
  };
  for (Gpu &g : plan.gpus)
    for (Threadblock &tb : g.threadblocks) {
      fix(tb.ops);
      for (Op &o : tb.ops)
        if (o.type == OpType::Pipeline)
          fix(o.ops);
    }
  return split;
}

} // namespace msccl::verify
