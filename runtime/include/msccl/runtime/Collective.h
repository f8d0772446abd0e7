//===- Collective.h - Message sizes, test data and verification of collectives -----------===//
//
// Consumes a plan, an nccl-tests style message size S (bytes) and per-rank host copies of the
// buffers; produces the per-rank S_in/S_out, deterministic rank- and index-dependent input
// values, and the comparison of every output element with the collective's end state
// (dsl-semantics §1.4, plan-format §10.5):
//   allreduce     S_in = S_out = S         out = reduce over ranks of the inputs
//   allgather     S_out = S, S_in = S/n    out block r = input of rank r
//   reducescatter S_in = S, S_out = S/n    out of rank r = reduce over ranks of input block r
//   alltoall      S_in = S_out = S         out block s of rank r = input block r of rank s
//   sendrecv      S_in = S_out = S         out of rank r = input of rank (r-1) mod n
//   other ("test", "custom"): not verified.
// In general the chunk size is c = S / max(input_chunks, output_chunks) (scratch_chunks when
// both are 0), S_in = c*input_chunks and S_out = c*output_chunks, which gives the table above
// for the DSL's collectives. Input values are small integers, so every reduction is exact in
// every type; the comparison is exact for integer types and float32, and within a relative
// tolerance of 1e-2 for float16/bfloat16 (stated in the report).
// busbw factors are those of nccl-tests (doc/PERFORMANCE.md).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msccl::runtime {

enum class CollectiveKind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Other };

/// "allreduce" -> AllReduce, ...; anything else -> Other.
CollectiveKind collectiveKind(const std::string &collective);

/// nccl-tests bus-bandwidth factor: allreduce 2(n-1)/n; allgather, reducescatter, alltoall
/// (n-1)/n; sendrecv and others 1.
double busBandwidthFactor(CollectiveKind kind, uint32_t nranks);

/// Per-rank message sizes in bytes for nccl-tests size S.
struct MessageSizes {
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
};

/// S_in/S_out for size S (bytes), or nullopt with `whyNot` set when the plan cannot run size S
/// (S not a multiple of max(chunks) * buffer_alignment, outside [min,max]_message_size, ...).
std::optional<MessageSizes> messageSizesFor(const plan::Plan &plan, uint64_t size, std::string *whyNot);

/// The input value of element `index` of rank `rank` for `type` (a small positive integer, so
/// sums over `nranks` ranks stay exact in the type).
double inputValue(uint32_t rank, uint64_t index, uint32_t nranks, plan::DataType type);

/// Fill `bytes` bytes at `host` (rank `rank`'s input) with inputValue.
void fillInput(void *host, uint64_t bytes, uint32_t rank, uint32_t nranks, plan::DataType type);

/// Result of comparing every output element.
struct VerifyResult {
  bool checked = false;       ///< false for collectives without an end state ("test").
  uint64_t wrong = 0;         ///< Number of wrong elements over all ranks (nccl-tests #wrong).
  uint64_t elements = 0;      ///< Elements compared.
  int64_t firstRank = -1;     ///< First wrong rank, or -1.
  uint64_t firstIndex = 0;    ///< Its element index in the output buffer.
  double expected = 0, got = 0;
  std::string describe() const; ///< "3 wrong of 1024; first: rank 1 element 17 expected 12 got 5"
};

/// Compare the outputs (host copies, S_out bytes each, one per rank) with the end state of
/// `kind` for inputs made by fillInput. `op` is the reduction of allreduce/reducescatter.
VerifyResult verifyOutputs(CollectiveKind kind, const std::vector<const void *> &outputs, uint64_t inputBytes,
                           uint64_t outputBytes, plan::DataType type, plan::ReduceOp op);

/// The same for one rank `rank` of `nranks` (its output alone): what each process of a
/// one-process-per-rank run checks (DistributedRun.h).
VerifyResult verifyRankOutput(CollectiveKind kind, uint32_t rank, uint32_t nranks, const void *output,
                              uint64_t inputBytes, uint64_t outputBytes, plan::DataType type, plan::ReduceOp op);

/// The reduce op the plan's own ops fix (all `reduce_op` fields agree), or nullopt when no op
/// has one or they disagree (`conflict` set then).
std::optional<plan::ReduceOp> planReduceOp(const plan::Plan &plan, bool *conflict = nullptr);

} // namespace msccl::runtime
