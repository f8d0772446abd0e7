//===- Tune.h - msccl-tune: the best stdlib plan per message size, on the performance model -===//
//
// Consumes a topology (runtime/SimExecutor.h), a world size, collectives and a size range;
// produces, per collective, the plan the performance model predicts fastest at every power-of-two
// size (the envelope), as a directory PlanRegistry, MSCCL_PLANS and msccl-run --plans load
// unchanged: the winners' plans (out-of-place and in-place builds) and an index msccl-plans.json
// whose entries give each its size range. Every candidate is a stdlib algorithm at one point of
// its parameter grid (instances, chunks, peers_per_tb, unit where the program has them),
// compiled in-process by mscclc's driver and therefore proven by the static verifier; a
// candidate that does not compile
// or prove is left out and listed; on one node msccl-synth's programs for the topology join them
// (synthCandidates). Beside each prediction: the model's lower bound (lowerBound)
// and the best stdlib plan at its defaults. All figures are model output.
//
// Mirrors: MSCCL++'s grid-search autotuner (`--autotune --write-config`) over its own kernels,
// here over the stdlib and the model, with the verifier in the loop.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/driver/Session.h"
#include "msccl/plan/Plan.h"
#include "msccl/runtime/SimExecutor.h"

#include <algorithm>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace msccl::tools::tune {

/// What to tune (msccl-tune's command line).
struct TuneOptions {
  std::string topology = "hgx-h100";   ///< --topology NAME|FILE
  uint32_t ranks = 0;                  ///< --ranks (0: every GPU of the topology)
  std::vector<std::string> collectives{"allreduce", "allgather", "reducescatter", "alltoall"};
  uint64_t minBytes = 1024;            ///< --min-bytes (nccl-tests size S)
  uint64_t maxBytes = uint64_t(1) << 32; ///< --max-bytes
  std::string dataType = "float32";    ///< --dtype: element size for the chunk rule
  /// dataType parsed (runTune refuses an unknown one; float32 where it is not checked).
  plan::DataType type() const { return plan::parseDataType(dataType).value_or(plan::DataType::Float32); }
  std::string outDir;                  ///< -o DIR ("" = print only)
  bool install = false;                ///< --install: -o msccl::installedPlansDir() (the shim's default)
  bool quick = false;                  ///< --quick: defaults and instances only (no other grid axis)
  /// --backend NAME: time each candidate by running it on that executor backend (cpu, cuda,
  /// cuda-virtual, ...: measured, 2 warm-up and 5 timed launches, results checked once) instead of
  /// the model; "" or "sim": the model. The lower bound stays model output.
  std::string backend;
  bool verbose = false;                ///< --verbose: every candidate and why one was left out
  /// --jobs N: candidates compiled, and replayed on the model, at once (threads; default: the
  /// machine's cores; candidates are proven on at most one thread per 8 GiB of memory, twice the
  /// verifier's vector-clock limit). The result does not depend on it. Measuring (--backend)
  /// times one candidate at a time.
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  /// --no-synth: leave out msccl-synth's programs (on a graph-shaped node they are candidates
  /// beside the stdlib: a spanning-path packing for the topology, AllGather, ReduceScatter and
  /// AllReduce).
  bool synth = true;
  std::string stdlibDir;               ///< "" = mscclc's default
  /// --target mscclpp|msccl (mscclc's --target): mscclpp (default) keeps only plans MSCCL++'s
  /// executor also runs (its 64 ops and 16 channels per threadblock; no unfused switch reduce);
  /// msccl lifts those limits for plans that only this project's executors (the API, the NCCL
  /// shim, msccl-run --target=msccl) run, e.g. deep pipelines (chunks=16).
  driver::Target target = driver::Target::Mscclpp;
  /// --exhaustive: time every candidate at every size on the model (the default search prunes
  /// what provably cannot win, with the same result: searchModel in Tune.cpp).
  bool exhaustive = false;
};

/// One point of the search: a stdlib algorithm with its -D values.
struct Candidate {
  std::string algorithm;                                 ///< "allreduce/ring", or "synth/paths"
  /// A synthesized program's text (msccl-synth), compiled instead of stdlib:`algorithm`.
  std::string source;
  std::vector<std::pair<std::string, std::string>> defines; ///< shape and grid values, in order
  bool isDefault = false;          ///< only the shape defines (ranks, ranks_per_node, cols)
  bool hasInplaceParam = false;
  std::string label() const;       ///< "allreduce/ring instances=4 chunks=16"
  std::string fileStem() const;    ///< "allreduce_ring_instances4_chunks16"
  std::shared_ptr<const plan::Plan> plan; ///< out of place; null when left out
  std::string leftOut;             ///< why (compile or verification error, first line)
  /// Per swept size; < 0 where the plan cannot run it or the model's search left it untimed
  /// (Envelope::pruned: it could not win there).
  std::vector<double> seconds;
};

/// Per collective and buffer mode: the sweep and its winners. In place and out of place are
/// tuned apart: a plan's two builds can differ (out of place, a rank's own block is copied to
/// its output).
struct Envelope {
  std::string collective;
  bool inPlace = false;
  std::vector<uint64_t> sizes;         ///< powers of two, ascending
  /// Per size: the size timed, as nccl-tests sizes a call: for a collective whose buffers are
  /// cut per rank (AllGather, ReduceScatter, AllToAll) rounded down to a multiple of ranks x
  /// element size (72 ranks divide no power of two), else the size itself.
  std::vector<uint64_t> runSizes;
  std::vector<Candidate> candidates;   ///< defaults first, then the grid, per algorithm
  /// Per size: candidate index, -1 where none runs: the first listed candidate whose time is
  /// within 1% of the size's fastest (simpler plans come first) and no slower than the fastest
  /// candidate at its defaults.
  std::vector<int> winner;
  std::vector<int> bestDefault;        ///< per size: the fastest candidate with isDefault
  std::vector<runtime::sim::LowerBound> bound; ///< per size
  /// The candidate for message sizes a winner cannot run (fallbackOf), -1 for none.
  int fallback = -1;
  /// The model's search: (candidate, size) points left untimed because the candidate was
  /// already slower than the size's fastest by more than the 1% tie at a smaller size (the
  /// model's time does not fall as the size grows); their seconds stay < 0.
  size_t pruned = 0;
  /// False when some candidate's model time fell as the size grew: the search then timed every
  /// pruned point after all (pruned = 0).
  bool monotone = true;
  std::string nonMonotone; ///< when not: the first candidate whose time fell, with the two times
  /// Wall time (measured, this machine): compiling and proving the candidates, then timing them
  /// (the model's search, or the measurements).
  double compileSeconds = 0, timeSeconds = 0;
};

/// The plan for the sizes between and around the powers of two that a winner cannot run (an LL
/// plan needs blocks of 8-byte multiples; a plan whose chunks must be equal needs a multiple of
/// its chunk count): among the candidates that run the most of a set of awkward sizes (1, 3, 12,
/// and each swept size plus 1 and plus 4 bytes; PlanRegistry's test with 1-byte elements), the
/// one whose time is closest to the winners' (least geometric mean of the ratio over the sweep).
/// -1 when no candidate runs any of them.
int fallbackOf(const Envelope &e);

/// The candidates of `collective` for `ranks` ranks in nodes of `ranksPerNode` (stdlib programs
/// named COLLECTIVE/*, with their params read from the file). `quick` varies instances only.
std::vector<Candidate> candidatesFor(const std::string &collective, uint32_t ranks, uint32_t ranksPerNode,
                                     const std::string &stdlibDir, bool quick);

/// msccl-synth's programs for `collective` on a graph-shaped node of `topo` (a fabric; none on a
/// single switch, for other collectives or several nodes), each at the pipeline windows of the
/// grid (`quick`: one); the search runs once per (topology, collective, ranks) in a process. A
/// synthesis that fails is one candidate left out with the reason.
std::vector<Candidate> synthCandidates(const std::string &collective, const runtime::sim::Topology &topo,
                                       uint32_t ranks, const std::string &stdlibDir, bool quick);

/// Compile `c` with mscclc's driver (in place when `inPlace` and the program has `inplace`),
/// which proves the plan for `target`'s executors (`verify` false: mscclc --no-verify, no plan
/// checks or static verifier: for a screen before the proof, never a plan to write); null with
/// the error's first line in `why`.
std::shared_ptr<const plan::Plan> compileCandidate(const Candidate &c, const std::string &stdlibDir, bool inPlace,
                                                   std::string &why, driver::Target target = driver::Target::Mscclpp,
                                                   bool verify = true);

/// Compile (proving each plan; in place or not, by `inPlace`) and simulate every candidate at
/// every size, then pick the winner per size: the fastest, unless an earlier candidate is within
/// 1% (defaults first). A program without an `inplace` param takes part in the mode its plan is
/// written for only.
Envelope tuneCollective(const std::string &collective, bool inPlace, const TuneOptions &o,
                        const runtime::sim::Topology &topo, uint32_t ranks, uint32_t ranksPerNode);

/// The registry ranges of an envelope: per run of sizes with one winner, [first size, next run's
/// first size - 1]; the first run starts at 0 and the last ends at UINT64_MAX.
struct Range {
  int candidate = -1;
  uint64_t minBytes = 0, maxBytes = UINT64_MAX;
};
std::vector<Range> rangesOf(const Envelope &e);

/// Write the winners of `envelopes` into `dir` (created): NAME.json (out of place) or NAME_ip.json
/// (in place), msccl-plans.json (one entry per range, "in_place" "out" or "in", tagged "tuned";
/// then the envelope's fallback over every size, tagged "fallback" too, which PlanRegistry's
/// narrowest-range rule picks only where no winner can run the size), and
/// tune-COLLECTIVE[-inplace].svg per envelope. Throws std::runtime_error naming the file
/// that cannot be written.
void writePlanDirectory(const std::string &dir, const std::vector<Envelope> &envelopes, const TuneOptions &o,
                        const runtime::sim::Topology &topo, uint32_t ranks, uint32_t ranksPerNode);

/// The chart of one envelope: busbw (model output) against size, every candidate thin, the
/// envelope thick, the best default dashed and the lower bound dotted, as an SVG document.
std::string envelopeSvg(const Envelope &e, const runtime::sim::Topology &topo, uint32_t ranks);

/// msccl-tune's main: parse, tune, print the table, write the directory. Returns 0, 1 on a
/// failure (named on `err`), 2 on bad usage.
int runTune(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace msccl::tools::tune
