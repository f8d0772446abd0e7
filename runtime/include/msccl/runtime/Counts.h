//===- Counts.h - Run-time count matrices of AllToAllV and their resolution --------------===//
//
// Consumes a symbolic plan (plan::Plan with variableSizes, plan#10.8)
// and, once per call, a count matrix; produces the concrete plan the executors run: every
// `index_expr`/`size_expr` evaluated into an entry in elements (one chunk = one element,
// buffer_alignment = the element size), every rank's buffers sized for the largest row / column
// sum, so ExecuteRequest keeps one S_in/S_out for all ranks (each rank uses a prefix of its buffers).
//
// The caller passes the FULL matrix counts[r][p] (elements rank r sends rank p), on every rank:
// a rank's puts land at offsets of its peers' outputs that depend on other ranks' counts, so a
// per-rank send-counts vector is not enough (an MPI_Alltoallv/ncclAlltoAllv-style caller first
// all-gathers its send-counts vector, which MoE layers do anyway to size their receive buffers).
//
// Resolution is O(n^2 + entries): prefix sums of the matrix, then one evaluation per expression
// compiled when the CountsResolver was built; the plan is never re-read, re-derived or re-lowered.
//
//===------------------------------------------------------------------------------------===//
#pragma once
#include "msccl/plan/Plan.h"
#include "msccl/plan/Symbolic.h"
#include "msccl/runtime/Collective.h"
#include <cstdint>
#include <string>
#include <vector>

namespace msccl::runtime {

/// counts[r][p] = elements rank r sends to rank p (row-major, n x n).
struct CountMatrix {
  uint32_t n = 0;
  std::vector<uint64_t> counts;
  uint64_t at(uint32_t r, uint32_t p) const { return counts[size_t(r) * n + p]; }
  uint64_t rowSum(uint32_t r) const;  ///< Elements rank r sends.
  uint64_t colSum(uint32_t p) const;  ///< Elements rank p receives.
  uint64_t total() const;             ///< Elements moved, over all pairs (self included).
  uint64_t maxCount() const;
};

/// A count matrix for `n` ranks from a msccl-run `--counts` spec, `scale` elements being the
/// typical block:
///   uniform        every count = scale
///   random[:SEED]  counts uniform in [0, 2*scale] (about a quarter zero), seeded (default 1)
///   skewed         one hot rank pair per row: counts[r][(r+1)%n] = 8*scale, others scale/8
///   zero           sparse: counts[r][p] = scale when (r + 2p) % 3 == 0, else 0
///   FILE           a JSON array of n arrays of n non-negative integers
/// Throws std::invalid_argument with a message naming the spec (or file, row and column).
CountMatrix makeCounts(const std::string &spec, uint32_t n, uint64_t scale);
/// Reads a JSON matrix (text). Throws std::invalid_argument naming the row/column at fault.
CountMatrix parseCountsJson(const std::string &text, uint32_t n);

/// Message for running a symbolic plan without counts (ExecutionError(InvalidSize) text).
std::string needsCountsMessage(const plan::Plan &plan);

/// Turns a symbolic plan into concrete plans, one count matrix at a time. Build it once per plan
/// (it parses and checks every expression); resolve() per call. Not copyable (it points into its
/// own plan copy).
class CountsResolver {
public:
  /// Throws ExecutionError(InvalidPlan) naming the JSON path of a malformed or out-of-range
  /// expression, or when `symbolic` has no variableSizes.
  explicit CountsResolver(const plan::Plan &symbolic);
  CountsResolver(const CountsResolver &) = delete;
  CountsResolver &operator=(const CountsResolver &) = delete;
  /// The concrete plan for `m` and element type `type` (valid until the next resolve()).
  /// Throws ExecutionError(InvalidSize) when m.n is not the plan's rank count, or a count
  /// exceeds the plan's block_bound while the plan uses scratch.
  const plan::Plan &resolve(const CountMatrix &m, plan::DataType type);
  /// S_in / S_out (bytes) of the last resolve(): the largest row / column sum, at least one element.
  MessageSizes sizes() const { return sizes_; }
  /// Number of expressions evaluated per resolve().
  size_t expressions() const { return slots_.size() * 2; }

private:
  struct Slot {
    plan::BufferRef *ref;
    plan::SymExpr index, size;
  };
  plan::Plan concrete_;
  std::vector<Slot> slots_;
  uint64_t bound_ = 0;
  bool usesScratch_ = false;
  MessageSizes sizes_;
  std::vector<uint64_t> rowPre_, colPre_; // (n+1) per row / column
};

/// Compare rank `rank`'s output (host copy, at least colSum(rank) elements of `type`) with the
/// AllToAllV end state for inputs made by fillInput: output block p (at col prefix) holds the
/// counts[p][rank] elements of rank p's input starting at its row prefix up to `rank`.
/// Adds `part` (one rank's result) into `all`: wrong and elements summed, first wrong element kept.
void mergeVerify(VerifyResult &all, const VerifyResult &part);
VerifyResult verifyAllToAllVRank(const CountMatrix &m, uint32_t rank, const void *output, plan::DataType type);

} // namespace msccl::runtime
