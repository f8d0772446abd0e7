//===- Tune.cpp - msccl-tune: candidates, the sweep on the model, the envelope ---------------===//
#include "Tune.h"

#include "Synth.h"

#include "msccl/driver/Driver.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Verify.h"
#include "msccl/verify/PlanVerify.h"

#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <thread>
#include <atomic>
#include <fstream>
#include <map>
#include <tuple>
#include <mutex>
#include <regex>
#include <unistd.h>
#include <sstream>

namespace msccl::tools::tune {
using runtime::sim::Topology;

std::string Candidate::label() const {
  std::string s = algorithm;
  for (const auto &[k, v] : defines)
    if (k != "ranks" && k != "ranks_per_node" && k != "inplace")
      s += " " + k + "=" + v;
  return s;
}

std::string Candidate::fileStem() const {
  std::string s = algorithm;
  std::replace(s.begin(), s.end(), '/', '_');
  for (const auto &[k, v] : defines)
    if (k != "ranks" && k != "ranks_per_node" && k != "inplace")
      s += "_" + k + v;
  return s;
}

namespace {

/// A `param NAME = ...` line of a program, with the values a `// tune: V1, V2, ...` comment on
/// that line gives the tuner for it (empty: the tuner's own grid, kGrid, where it has the param).
struct Param {
  std::string name;
  std::vector<std::string> tune;
};

/// The params of a program, in order.
std::vector<Param> paramsOf(const std::string &file) {
  std::ifstream in(file);
  std::vector<Param> params;
  static const std::regex re(R"(^\s*param\s+(\w+)\s*=)");
  static const std::regex tuneRe(R"(//.*\btune:\s*([\w\s,]+))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, re))
      continue;
    Param p{m[1], {}};
    std::smatch t;
    if (std::regex_search(line, t, tuneRe)) {
      std::istringstream values(t[1].str());
      for (std::string v; std::getline(values, v, ',');) {
        v.erase(0, v.find_first_not_of(" \t"));
        v.erase(v.find_last_not_of(" \t") + 1);
        if (!v.empty())
          p.tune.push_back(v);
      }
    }
    params.push_back(std::move(p));
  }
  return params;
}

const Param *find(const std::vector<Param> &params, const std::string &n) {
  for (const Param &p : params)
    if (p.name == n)
      return &p;
  return nullptr;
}
bool has(const std::vector<Param> &params, const std::string &n) { return find(params, n) != nullptr; }

/// The grid's columns: a twod grid near square, then instances and chunks.
uint32_t squareCols(uint32_t n) {
  uint32_t best = 0;
  for (uint32_t c = 2; c * c <= n; ++c)
    if (n % c == 0 && n / c >= 2)
      best = c;
  return best;
}

std::string firstLine(const std::string &s) {
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

/// The tuner's parameter grid, per stdlib `param`: threadblocks (instances: replication; chunks:
/// one threadblock per chunk in most programs; peers_per_tb: all-pairs fan-out per threadblock)
/// and the pipeline window. A program's `// tune: ...` comment on a param line replaces the
/// param's values here (or adds an axis for a param this grid does not have).
struct GridAxis {
  const char *param;
  std::vector<const char *> values;
};
const GridAxis kGrid[] = {
    {"instances", {"1", "2", "4", "8"}},
    {"chunks", {"1", "4", "16"}},
    {"peers_per_tb", {"1", "2", "8"}},
    {"unit", {"256K", "1M", "4M"}},
};

} // namespace

std::vector<Candidate> candidatesFor(const std::string &collective, uint32_t ranks, uint32_t ranksPerNode,
                                     const std::string &stdlibDir, bool quick) {
  std::vector<Candidate> out;
  for (const std::string &name : driver::stdlibProgramNames(stdlibDir)) {
    if (name.rfind(collective + "/", 0) != 0)
      continue;
    const std::vector<Param> params = paramsOf(stdlibDir + "/" + name + ".msccl");
    Candidate base;
    base.algorithm = name;
    base.hasInplaceParam = has(params, "inplace");
    base.defines.push_back({"ranks", std::to_string(ranks)});
    if (has(params, "ranks_per_node")) {
      if (ranksPerNode == 0 || ranksPerNode >= ranks)
        continue; // a multi-node algorithm on one node
      base.defines.push_back({"ranks_per_node", std::to_string(ranksPerNode)});
    }
    if (has(params, "cols")) {
      const uint32_t cols = squareCols(ranks);
      if (cols == 0)
        continue;
      base.defines.push_back({"cols", std::to_string(cols)});
    }
    if (base.hasInplaceParam)
      base.defines.push_back({"inplace", "false"});
    base.isDefault = true;
    out.push_back(base);
    // The grid: one axis per parameter the program has (instances always; the others not with
    // --quick), the cartesian product of their values.
    std::vector<Candidate> grid{base};
    grid[0].isDefault = false;
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    for (const GridAxis &axis : kGrid)
      if (const Param *p = find(params, axis.param))
        axes.push_back({axis.param, p->tune.empty() ? std::vector<std::string>(axis.values.begin(), axis.values.end())
                                                    : p->tune});
    for (const Param &p : params)
      if (!p.tune.empty() && std::none_of(std::begin(kGrid), std::end(kGrid),
                                          [&](const GridAxis &a) { return p.name == a.param; }))
        axes.push_back({p.name, p.tune});
    for (const auto &[param, values] : axes) {
      if (quick && param != "instances")
        continue;
      std::vector<Candidate> next;
      for (const Candidate &g : grid)
        for (const std::string &v : values) {
          Candidate k = g;
          k.defines.push_back({param, v});
          next.push_back(k);
        }
      grid = std::move(next);
    }
    if (grid.size() == 1 && grid[0].defines.size() == base.defines.size())
      continue; // no parameter to vary: the default is the only candidate
    for (Candidate &k : grid)
      out.push_back(std::move(k));
  }
  return out;
}

std::vector<Candidate> synthCandidates(const std::string &collective, const Topology &topo, uint32_t ranks,
                                       const std::string &stdlibDir, bool quick) {
  std::vector<Candidate> out;
  // Only graph-shaped nodes (a fabric): on one switch the packing is the stdlib's ring or
  // all-pairs again, and its search grows fast with the rank count (minutes at 72 ranks).
  if (topo.nodes != 1 || topo.fabric.empty() ||
      (collective != "allgather" && collective != "reducescatter" && collective != "allreduce"))
    return out;
  // One search per collective and machine: both buffer modes take the same program.
  static std::mutex mu;
  static std::map<std::tuple<std::string, std::string, uint32_t, std::string>, std::string> written;
  const auto key = std::make_tuple(topo.file, collective, ranks, stdlibDir);
  Candidate base;
  base.algorithm = "synth/paths";
  base.hasInplaceParam = true;
  try {
    std::lock_guard<std::mutex> lock(mu);
    auto it = written.find(key);
    if (it == written.end()) {
      synth::SynthOptions so;
      so.topology = topo.file;
      so.collective = collective;
      so.ranks = ranks;
      so.stdlibDir = stdlibDir;
      std::ostringstream log;
      it = written.emplace(key, synth::synthesize(so, log)).first;
    }
    base.source = it->second;
  } catch (const std::exception &e) {
    base.leftOut = firstLine(e.what());
    out.push_back(base);
    return out;
  }
  base.defines.push_back({"inplace", "false"});
  for (const char *unit : quick ? std::vector<const char *>{"256K"} : std::vector<const char *>{"64K", "256K", "1M"}) {
    Candidate k = base;
    k.defines.push_back({"unit", unit});
    out.push_back(k);
  }
  return out;
}

std::shared_ptr<const plan::Plan> compileCandidate(const Candidate &c, const std::string &stdlibDir, bool inPlace,
                                                   std::string &why, driver::Target target, bool verify) {
  driver::CompilerInvocation inv;
  inv.target = target;
  inv.noVerify = !verify;
  inv.input = c.source.empty() ? "stdlib:" + c.algorithm : "-";
  inv.stdlibDir = stdlibDir;
  for (const auto &[k, v] : c.defines)
    inv.defines.push_back({k, k == "inplace" ? (inPlace ? "true" : "false") : v});
  std::istringstream source(c.source);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  std::optional<plan::Plan> p = driver::compilePlan(inv, source, es);
  es.flush();
  if (!p) {
    // The first error line (an error in an imported file comes after "Included from" lines),
    // without the file name mscclc puts first.
    std::istringstream lines(errors);
    std::string line = firstLine(errors);
    for (std::string l; std::getline(lines, l);)
      if (l.find("error: ") != std::string::npos) {
        line = l;
        break;
      }
    const size_t at = line.find("error: ");
    why = at == std::string::npos ? line : line.substr(at + 7);
    return nullptr;
  }
  return std::make_shared<const plan::Plan>(std::move(*p));
}

namespace {

/// The smallest pipeline window of plan `p` in bytes (0: no pipeline).
uint64_t smallestWindow(const plan::Plan &p) {
  uint64_t unit = 0;
  for (const plan::Gpu &g : p.gpus)
    for (const plan::Threadblock &tb : g.threadblocks)
      for (const plan::Op &op : tb.ops)
        if (op.iterContext.unitSize > 0)
          unit = unit == 0 ? op.iterContext.unitSize : std::min(unit, op.iterContext.unitSize);
  return unit;
}

/// Whether replaying `p`, whose smallest pipeline window is `unit` bytes, at these sizes would
/// walk more than 1024 windows per pipeline (the model replays every window: seconds per
/// candidate and size). The grid's larger windows cover those sizes.
bool tooManyWindows(const plan::Plan &p, uint64_t unit, const runtime::MessageSizes &ms) {
  if (unit == 0 || p.gpus.empty())
    return false;
  const uint64_t chunks = std::max<uint64_t>(1, std::max(p.gpus[0].inputChunks, p.gpus[0].outputChunks));
  const uint64_t chunkBytes = std::max(ms.inputBytes, ms.outputBytes) / chunks;
  return chunkBytes / unit > 1024;
}

/// A candidate within this factor of a size's fastest time ties with it; the first listed of the
/// tied wins (simpler plans come first).
constexpr double kTie = 1.01;
/// The model's time may fall this much (relative) as the size grows without breaking the
/// search's bound (uneven chunk layouts at the smallest sizes move times by a few ppm).
constexpr double kSlack = 1e-3;

/// The fastest of `times` (seconds, < 0: cannot run or not timed) among `eligible`; < 0: none.
double fastestOf(const std::vector<double> &times, const std::vector<bool> &eligible) {
  double fastest = -1;
  for (size_t i = 0; i < times.size(); ++i)
    if (eligible[i] && times[i] >= 0 && (fastest < 0 || times[i] < fastest))
      fastest = times[i];
  return fastest;
}

/// Index of the winner among `times`: the first eligible one whose time is within 1% of the
/// fastest (kTie) and at most `cap` seconds (the fastest default's, so that a tie never makes
/// the tuned plan slower than a plan at its defaults). -1 when none is eligible and timed.
int pick(const std::vector<double> &times, const std::vector<bool> &eligible, double cap = -1) {
  const double fastest = fastestOf(times, eligible);
  const double limit = cap >= fastest ? std::min(kTie * fastest, cap) : kTie * fastest;
  for (size_t i = 0; i < times.size() && fastest >= 0; ++i)
    if (eligible[i] && times[i] >= 0 && times[i] <= limit)
      return int(i);
  return -1;
}

/// How many of the awkward sizes of `e` (1, 3, 12 bytes, each swept size plus 1 and plus 4)
/// candidate `c` runs: fallbackOf's first criterion.
size_t awkwardRuns(const Candidate &c, const Envelope &e) {
  if (!c.plan)
    return 0;
  std::vector<uint64_t> awkward{1, 3, 12};
  for (uint64_t s : e.sizes) {
    awkward.push_back(s + 1);
    awkward.push_back(s + 4);
  }
  size_t runs = 0;
  for (uint64_t s : awkward)
    runs += c.plan->variableSizes || runtime::messageSizesFor(*c.plan, s, nullptr).has_value();
  return runs;
}

} // namespace

namespace {

/// Runs `work(k)` for k in [0, n) on up to `jobs` threads, each taking the next k.
template <typename Work> void forEachOnThreads(size_t n, unsigned jobs, Work &&work) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next++) < n;)
      work(k);
  };
  std::vector<std::thread> pool;
  for (unsigned j = 1; j < std::max(1u, std::min<unsigned>(jobs, unsigned(n))); ++j)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

/// Why `topo` cannot run plan `p` at all ("" when it can, or when the model fails for another
/// reason, which the sweep then reports): the model at the smallest swept size the plan runs
/// stops at the first op the topology lacks (a memory channel across nodes, a switch channel
/// without NVLS or across NVLink domains).
std::string topologyRefusal(const plan::Plan &p, const Envelope &e, const TuneOptions &o, const Topology &topo) {
  for (uint64_t s : e.runSizes) {
    auto ms = s == 0 ? std::nullopt : runtime::messageSizesFor(p, s, plan::dataTypeBytes(o.type()), nullptr);
    if (!ms)
      continue;
    try {
      // validate: the plan is not verified yet; the plan checks refuse a malformed one first.
      runtime::sim::simulate(p, topo, ms->inputBytes, ms->outputBytes, runtime::PacketType::LL16, true);
    } catch (const runtime::ExecutionError &x) {
      if (x.kind() == runtime::ErrorKind::Unsupported)
        return "the topology cannot run it: " + firstLine(x.what());
    } catch (const std::exception &) {
    }
    return "";
  }
  return "";
}

/// A proven plan, or why there is none, per (algorithm, target, SHA-256 of the unverified
/// plan): the verifier's verdict depends on the plan and the target only, and the two buffer
/// modes of a program without an `inplace` param compile the same plan (msccl-tune tunes both in
/// one process). Keyed by the plan, not the file names, so a program edited between two tunes in
/// one process is proven again.
struct ProvenCache {
  std::mutex mu;
  std::map<std::string, std::pair<std::shared_ptr<const plan::Plan>, std::string>> plans;
};
ProvenCache &provenCache() {
  static ProvenCache cache;
  return cache;
}

/// How many candidates to prove at once: `jobs`, but at most one per 2 x the static verifier's
/// vector-clock limit (VerifyOptions::maxClockBytes, 4 GiB: a 72-rank plan may need it all, and
/// the plan and its other tables besides) of the machine's memory, so that --jobs on a machine
/// with many cores does not run it out of memory.
unsigned proverThreads(unsigned jobs) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0)
    return 1;
  const uint64_t perProver = 2 * verify::VerifyOptions{}.maxClockBytes;
  const uint64_t fit = uint64_t(pages) * uint64_t(page) / perProver;
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>(jobs, fit)));
}

/// Compile every candidate of `e` in place or not, in three steps, so that the static verifier
/// (most of a compile at 32 ranks: seconds, and a gigabyte for a deep pipeline) runs only on
/// plans that can take part: (1) compile without verification (`jobs` threads); (2) in order,
/// leave out a grid point whose plan is the same as an earlier candidate's (by SHA-256 of its
/// JSON; a parameter at its default, a value the program clamps: it would be timed the same), a
/// plan for the other buffer mode only, and on the model a plan the topology cannot run
/// (topologyRefusal); (3) compile the rest with verification (proverThreads; ProvenCache),
/// which proves them or leaves them out with the verifier's error. Every plan kept is the
/// verified compile's.
void compileAll(Envelope &e, bool inPlace, const TuneOptions &o, const Topology &topo) {
  const std::string &stdlib = o.stdlibDir;
  // Per candidate: whether it compiled, its plan's SHA-256 (the JSON, name aside: a deep
  // pipeline at 32 ranks writes tens of megabytes, so the text is not kept), the buffer mode it
  // is written for, and the topology's refusal. The drafts themselves are dropped at once.
  struct Draft {
    bool compiled = false, inplace = false;
    std::array<uint8_t, 32> sha{};
    std::string refusal;
  };
  std::vector<Draft> drafts(e.candidates.size());
  forEachOnThreads(e.candidates.size(), o.jobs, [&](size_t k) {
    Candidate &c = e.candidates[k];
    c.seconds.assign(e.sizes.size(), -1);
    std::shared_ptr<const plan::Plan> draft = compileCandidate(c, stdlib, inPlace, c.leftOut, o.target, false);
    if (!draft)
      return;
    Draft &d = drafts[k];
    d.compiled = true;
    d.inplace = draft->inplace;
    {
      plan::Plan unnamed = *draft;
      unnamed.name.reset();
      const std::string text = plan::writePlan(unnamed, -1);
      d.sha = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
    }
    if (o.backend.empty() || o.backend == "sim") // measuring runs what the backend can
      d.refusal = topologyRefusal(*draft, e, o, topo);
  });
  std::map<std::array<uint8_t, 32>, std::string> seen; // plan SHA-256 -> first candidate's label
  std::vector<size_t> prove;
  for (size_t k = 0; k < e.candidates.size(); ++k) {
    Candidate &c = e.candidates[k];
    const Draft &d = drafts[k];
    if (!d.compiled)
      continue;
    auto [it, fresh] = seen.emplace(d.sha, c.label());
    if (!fresh && !c.isDefault)
      c.leftOut = "the same plan as " + it->second;
    else if (!c.hasInplaceParam && d.inplace != inPlace)
      c.leftOut = std::string("written for ") + (d.inplace ? "in-place" : "out-of-place") + " calls only";
    else if (!d.refusal.empty())
      c.leftOut = d.refusal;
    else
      prove.push_back(k);
  }
  ProvenCache &cache = provenCache();
  forEachOnThreads(prove.size(), proverThreads(o.jobs), [&](size_t n) {
    Candidate &c = e.candidates[prove[n]];
    const std::array<uint8_t, 32> &sha = drafts[prove[n]].sha;
    const std::string key = c.algorithm + '\n' + std::to_string(int(o.target)) + '\n' +
                            std::string(reinterpret_cast<const char *>(sha.data()), sha.size());
    {
      std::lock_guard<std::mutex> lock(cache.mu);
      if (auto it = cache.plans.find(key); it != cache.plans.end()) {
        std::tie(c.plan, c.leftOut) = it->second;
        return;
      }
    }
    c.plan = compileCandidate(c, stdlib, inPlace, c.leftOut, o.target);
    std::lock_guard<std::mutex> lock(cache.mu);
    cache.plans.emplace(key, std::make_pair(c.plan, c.leftOut));
  });
}

/// Time candidate `c` at size index `i` of `sizes` (its smallest pipeline window is `window`
/// bytes): on `measure` when given (results checked), else on the model. Leaves c.seconds[i] < 0
/// where the plan cannot run that size; a topology that cannot run it at all (NVLS on a machine
/// without it, ...) leaves the candidate out.
void timeAt(Candidate &c, size_t i, const std::vector<uint64_t> &sizes, uint64_t window, const TuneOptions &o,
            bool inPlace, const Topology &topo, runtime::Executor *measure) {
  if (!c.plan || sizes[i] == 0)
    return; // sizes[i] == 0: fewer bytes than ranks x element, no call of that size
  const plan::DataType dtype = o.type();
  auto ms = runtime::messageSizesFor(*c.plan, sizes[i], plan::dataTypeBytes(dtype), nullptr);
  if (!ms)
    return;
  if (!measure && tooManyWindows(*c.plan, window, *ms))
    return; // a smaller window of the grid is slower to replay than it can gain; a larger one runs
  try {
    if (measure) {
      runtime::RunOptions ro;
      ro.size = sizes[i];
      ro.dataType = dtype;
      ro.inPlace = inPlace;
      ro.iterations = 5;
      ro.warmup = 2;
      ro.check = true; // a wrong result leaves the candidate out at this size
      const runtime::RunReport rep = runtime::runCollective(*measure, *c.plan, ro);
      if (rep.verify.checked && rep.verify.wrong == 0)
        c.seconds[i] = rep.secondsPerLaunch;
      return;
    }
    c.seconds[i] =
        runtime::sim::simulate(*c.plan, topo, ms->inputBytes, ms->outputBytes, runtime::PacketType::LL16, false)
            .seconds;
  } catch (const runtime::ExecutionError &x) {
    if (x.kind() == runtime::ErrorKind::Unsupported) {
      c.leftOut = std::string("the topology cannot run it: ") + firstLine(x.what());
      c.plan.reset();
    }
  }
}

/// Times candidates `ks` of `e` at size index `i` on the model, on up to `jobs` threads (each
/// takes the next candidate; the result does not depend on the count).
void timeOnModel(Envelope &e, const std::vector<size_t> &ks, size_t i, const std::vector<uint64_t> &windows,
                 const TuneOptions &o, const Topology &topo) {
  forEachOnThreads(ks.size(), o.jobs,
                   [&](size_t n) { timeAt(e.candidates[ks[n]], i, e.runSizes, windows[ks[n]], o, e.inPlace, topo, nullptr); });
}

/// The model's search, size by size, ascending, as branch and bound. The model's time of a plan
/// does not fall as the message grows, so a candidate's time at the largest smaller size where it
/// ran is a lower bound L of its time here. Defaults (for the best-default column), the
/// fallback's contenders (fallbackOf reads their whole sweep) and candidates with no L are timed;
/// the others in order of L, `jobs` at a time, while L is within 1% (kTie) of the fastest time
/// found at this size: once it is not, no remaining candidate can tie with the fastest, so none
/// can win (pick), and they are left untimed (`e.pruned`). A timed candidate faster than its L
/// (the model not monotone for it) makes the search time every pruned point after all, so the
/// result is always the exhaustive search's. `o.exhaustive` times everything.
void searchModel(Envelope &e, const TuneOptions &o, const Topology &topo) {
  const size_t n = e.candidates.size();
  std::vector<uint64_t> windows(n);
  std::vector<size_t> runs(n);
  for (size_t k = 0; k < n; ++k) {
    windows[k] = e.candidates[k].plan ? smallestWindow(*e.candidates[k].plan) : 0;
    runs[k] = awkwardRuns(e.candidates[k], e);
  }
  const size_t mostRuns = n ? *std::max_element(runs.begin(), runs.end()) : 0;
  std::vector<bool> always(n);
  for (size_t k = 0; k < n; ++k)
    always[k] = o.exhaustive || e.candidates[k].isDefault || (mostRuns > 0 && runs[k] == mostRuns);
  // Per candidate, its time at the largest smaller size where it was timed and ran (< 0: none).
  // (Extrapolating from two sizes, as if the time were convex in size, would prune more, but
  // the model's pipelined plans are not convex: allreduce/pipelined at 16 MiB on hgx-h100.)
  std::vector<double> last(n, -1);
  std::vector<double> lower(n, -1); // L per candidate at this size; < 0: none
  std::vector<std::vector<size_t>> pruned(e.sizes.size());
  bool monotone = true;
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    std::vector<size_t> first, rest;
    for (size_t k = 0; k < n; ++k) {
      lower[k] = last[k] < 0 ? -1 : last[k] * (1 - kSlack);
      if (e.candidates[k].plan)
        (always[k] || lower[k] < 0 ? first : rest).push_back(k);
    }
    timeOnModel(e, first, i, windows, o, topo);
    double fastest = -1;
    auto seen = [&](size_t k) {
      const double t = e.candidates[k].seconds[i];
      if (t < 0)
        return;
      if (lower[k] >= 0 && t < lower[k] && monotone) {
        monotone = false;
        std::ostringstream why;
        why << e.candidates[k].label() << ": " << t * 1e6 << " us at " << e.runSizes[i] << " B, below its bound "
            << lower[k] * 1e6 << " us from smaller sizes";
        e.nonMonotone = why.str();
      }
      fastest = fastest < 0 ? t : std::min(fastest, t);
    };
    for (size_t k : first)
      seen(k);
    std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) { return lower[a] < lower[b]; });
    // Whether the next candidate in L order can still tie with the fastest found so far.
    size_t r = 0;
    auto nextCanTie = [&] { return r < rest.size() && (fastest < 0 || lower[rest[r]] <= kTie * fastest); };
    while (nextCanTie()) {
      std::vector<size_t> batch;
      for (; nextCanTie() && batch.size() < std::max(1u, o.jobs); ++r)
        batch.push_back(rest[r]);
      timeOnModel(e, batch, i, windows, o, topo);
      for (size_t k : batch)
        seen(k);
    }
    pruned[i].assign(rest.begin() + long(r), rest.end());
    for (size_t k = 0; k < n; ++k)
      if (e.candidates[k].plan && e.candidates[k].seconds[i] >= 0)
        last[k] = e.candidates[k].seconds[i];
  }
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    if (!monotone)
      timeOnModel(e, pruned[i], i, windows, o, topo);
    else
      e.pruned += pruned[i].size();
  }
  e.monotone = monotone;
}

} // namespace

Envelope tuneCollective(const std::string &collective, bool inPlace, const TuneOptions &o, const Topology &topo,
                        uint32_t ranks, uint32_t ranksPerNode) {
  Envelope e;
  e.collective = collective;
  e.inPlace = inPlace;
  for (uint64_t s = 1; s <= o.maxBytes && s != 0; s <<= 1)
    if (s >= o.minBytes)
      e.sizes.push_back(s);
  // nccl-tests' counts (getCollByteCount): a per-rank count of floor(count / ranks) elements.
  const runtime::BufferBlocks blocks = runtime::collectiveBlocks(runtime::collectiveKind(collective));
  const uint64_t elem = plan::dataTypeBytes(o.type());
  const uint64_t quantum =
      blocks.input == runtime::Blocks::PerRank || blocks.output == runtime::Blocks::PerRank ? uint64_t(ranks) * elem : 1;
  for (uint64_t s : e.sizes)
    e.runSizes.push_back(s / quantum * quantum);
  const std::string stdlib = o.stdlibDir;
  e.candidates = candidatesFor(collective, ranks, ranksPerNode, stdlib, o.quick);
  if (o.synth)
    for (Candidate &c : synthCandidates(collective, topo, ranks, stdlib, o.quick))
      e.candidates.push_back(std::move(c));
  const auto start = std::chrono::steady_clock::now();
  compileAll(e, inPlace, o, topo);
  const auto compiled = std::chrono::steady_clock::now();
  e.compileSeconds = std::chrono::duration<double>(compiled - start).count();
  if (!o.backend.empty() && o.backend != "sim") {
    // Measured: one executor, one candidate at a time (they share the device), every size
    // (measurements are not monotone in size to the last digit, so no pruning).
    std::unique_ptr<runtime::Executor> measure = runtime::createExecutor(o.backend);
    for (Candidate &c : e.candidates) {
      const uint64_t window = c.plan ? smallestWindow(*c.plan) : 0;
      for (size_t i = 0; i < e.sizes.size(); ++i)
        timeAt(c, i, e.runSizes, window, o, inPlace, topo, measure.get());
    }
  } else {
    searchModel(e, o, topo);
  }
  e.timeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - compiled).count();
  const auto kind = runtime::collectiveKind(collective);
  std::vector<bool> any(e.candidates.size()), defaults(e.candidates.size());
  for (size_t k = 0; k < e.candidates.size(); ++k) {
    any[k] = e.candidates[k].plan != nullptr;
    defaults[k] = any[k] && e.candidates[k].isDefault;
  }
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    std::vector<double> t;
    for (const Candidate &c : e.candidates)
      t.push_back(c.seconds[i]);
    e.winner.push_back(pick(t, any, fastestOf(t, defaults)));
    e.bestDefault.push_back(pick(t, defaults));
    e.bound.push_back(runtime::sim::lowerBound(kind, ranks, topo, e.runSizes[i]));
  }
  e.fallback = fallbackOf(e);
  return e;
}

int fallbackOf(const Envelope &e) {
  int best = -1;
  size_t bestRuns = 0;
  double bestScore = 0;
  for (size_t k = 0; k < e.candidates.size(); ++k) {
    const Candidate &c = e.candidates[k];
    if (!c.plan)
      continue;
    const size_t runs = awkwardRuns(c, e);
    double logRatio = 0; // geometric mean of time / the winner's, over the sweep
    for (size_t i = 0; i < e.sizes.size(); ++i) {
      if (e.winner[i] < 0)
        continue;
      const double w = e.candidates[size_t(e.winner[i])].seconds[i];
      logRatio += c.seconds[i] > 0 && w > 0 ? std::log(c.seconds[i] / w) : std::log(100.0);
    }
    if (runs > 0 && (best < 0 || runs > bestRuns || (runs == bestRuns && logRatio < bestScore))) {
      best = int(k);
      bestRuns = runs;
      bestScore = logRatio;
    }
  }
  return best;
}

std::vector<Range> rangesOf(const Envelope &e) {
  std::vector<Range> out;
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    if (e.winner[i] < 0)
      continue;
    if (!out.empty() && out.back().candidate == e.winner[i] && out.back().maxBytes == UINT64_MAX) {
      continue; // the run goes on
    }
    if (!out.empty() && out.back().maxBytes == UINT64_MAX)
      out.back().maxBytes = e.sizes[i] - 1;
    Range r;
    r.candidate = e.winner[i];
    r.minBytes = out.empty() ? 0 : e.sizes[i];
    out.push_back(r);
  }
  return out;
}

} // namespace msccl::tools::tune
