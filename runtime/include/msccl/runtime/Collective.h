//===- Collective.h - Message sizes, test data and verification of collectives -----------===//
//
// Consumes a plan, an nccl-tests style message size S (bytes) and per-rank host copies of the
// buffers; produces the per-rank S_in/S_out, deterministic rank- and index-dependent input
// values, and the comparison of every output element with the collective's end state
// (spec dsl#1.4, plan#10.5):
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
#include <string_view>
#include <vector>

namespace msccl::runtime {

/// The collectives of Collectives.def (one row each: name, whether it reduces, bus bandwidth).
enum class CollectiveKind : uint8_t {
#define MSCCL_COLLECTIVE(Kind, ...) Kind,
#include "msccl/runtime/Collectives.def"
};

/// "allreduce" -> AllReduce, ... (the table's names); anything else -> Other.
CollectiveKind collectiveKind(const std::string &collective);
/// The table's name of `kind` ("" for Other).
std::string_view collectiveName(CollectiveKind kind);

/// The DSL class of a collective (Collectives.def Dsl, DslIn, DslOut): whether the DSL has
/// `Kind(num_ranks, chunk_factor, inplace)`, and the chunks per rank of its input and output
/// buffers: chunk_factor (Cf) or num_ranks * chunk_factor (NCf).
enum class DslChunks : uint8_t { Cf, NCf };
struct DslClass {
  bool exists = false;
  DslChunks input = DslChunks::Cf, output = DslChunks::Cf;
};
DslClass collectiveDslClass(CollectiveKind kind);

/// Whether a collective's end state depends on a reduction op (its reduce_op applies).
enum class Reduces : uint8_t { No, Yes, Maybe };
/// The table's answer: Maybe for Other (a plan of a collective without a row may reduce).
Reduces collectiveReduces(CollectiveKind kind);

/// nccl-tests bus-bandwidth factor (the table's BusBw): allreduce 2(n-1)/n; allgather,
/// reducescatter, alltoall (n-1)/n; sendrecv and others 1; 1 for n = 0.
double busBandwidthFactor(CollectiveKind kind, uint32_t nranks);

/// The least traffic any schedule of `kind` moves (Collectives.def Traffic), per byte of the
/// nccl-tests size S, for `nranks` ranks in `nodes` equal nodes: `rankLink`, the bytes that must
/// cross every rank's link in its busier direction (through point-to-point links; with
/// `switchReduces`, the fabric reduces in the switch as NVLS multimem does, which brings
/// AllReduce's from 2(n-1)/n to 1); `nodeNetwork`, the bytes that must leave or enter every node through its network
/// links (all its NICs together; 0 for one node). Zero for Other. Used by the model's lower bound
/// (SimExecutor.h lowerBound; arguments in docs/performance-model.md).
struct CollectiveTraffic {
  double rankLink = 0, nodeNetwork = 0;
};
CollectiveTraffic collectiveTraffic(CollectiveKind kind, uint32_t nranks, uint32_t nodes, bool switchReduces);

/// Cut form of the Traffic rule, for graph-shaped machines: the shares of S that must cross from
/// a set of vertices holding `inside` of the `nranks` ranks (and the root, rank 0, when
/// `rootInside`) to the rest, one per phase (AllReduce: its reduce-scatter's, then its
/// all-gather's; a phase is bounded over every cut on its own and the phases' bounds add: the
/// model takes an AllReduce, reducing on GPUs, to cost at least a reduce-scatter and an
/// all-gather, Patarasuk and Yuan's argument on one switch and an assumption on other graphs).
/// Empty when
/// one side holds no rank, or for Other. Used by the model's lower bound on fabrics (Bound.cpp).
std::vector<double> cutTraffic(CollectiveKind kind, uint32_t nranks, uint32_t inside, bool rootInside);

/// How a collective's caller cuts a buffer into equal blocks (Collectives.def InBlocks/OutBlocks).
enum class Blocks : uint8_t { One, PerRank, Unknown };
struct BufferBlocks {
  Blocks input = Blocks::Unknown, output = Blocks::Unknown;
};
/// The table's block structure of `kind`'s input and output buffers.
BufferBlocks collectiveBlocks(CollectiveKind kind);

/// How an in-place call of a collective aliases its buffers (Collectives.def InPlace).
enum class InPlace : uint8_t { Same, InputInOutput, OutputInInput, Unknown };
InPlace collectiveInPlace(CollectiveKind kind);
/// Where the input and the output of rank `rank`'s in-place call sit in its one buffer, in bytes
/// from its start, and that buffer's size, for S_in/S_out bytes: Same and Unknown {0, 0,
/// max(S_in, S_out)}; InputInOutput {rank*S_in, 0, S_out}; OutputInInput {0, rank*S_out, S_in}.
struct InPlaceLayout {
  uint64_t input = 0, output = 0, bytes = 0;
};
InPlaceLayout inPlaceLayout(CollectiveKind kind, uint32_t rank, uint64_t inputBytes, uint64_t outputBytes);
/// The rule in the API's words: "send == recv + rank * send_bytes", "recv == send + rank *
/// recv_bytes" or "send == recv".
std::string_view inPlaceRule(CollectiveKind kind);

/// Where element `u` of a rank's output comes from (Collectives.def Output). `run`: the elements
/// u, u+1, ..., u+run-1 come from the same source with the index advancing by one (at least 1).
struct OutputSource {
  enum class From : uint8_t {
    Undefined, ///< no end state (Other, Reduce's non-root ranks)
    AllRanks,  ///< the reduction over every rank of input element `index`
    OneRank,   ///< input element `index` of rank `rank`
  } from = From::Undefined;
  uint32_t rank = 0;
  uint64_t index = 0;
  uint64_t run = 1;
};

/// The source of output element `u` of rank `rank` for `nranks` ranks whose inputs hold
/// `inCount` and outputs `outCount` elements each (units of the caller's choosing: elements,
/// or the static verifier's units). Requires outputShapeFits and u < outCount.
OutputSource outputSource(CollectiveKind kind, uint32_t nranks, uint32_t rank, uint64_t inCount, uint64_t outCount,
                          uint64_t u);

/// Whether per-rank input and output counts have the shape `kind` defines (AllGather: out =
/// n * in > 0; ReduceScatter: in = n * out; AllToAll: in = out, a multiple of n * `align`; the
/// others: in = out). Always true for Other.
bool outputShapeFits(CollectiveKind kind, uint32_t nranks, uint64_t inCount, uint64_t outCount, uint64_t align = 1);

/// Whether rank `rank`'s output has an end state (false for Other, and for Reduce's non-root
/// ranks).
bool outputDefinedOn(CollectiveKind kind, uint32_t rank);

/// Whether every rank's output is the same function of the inputs (AllReduce, AllGather,
/// Broadcast): a checker may compute it once for all ranks.
bool outputSameForAllRanks(CollectiveKind kind);

/// NCCL's entry point for `kind` ("ncclAllReduce"), "" where NCCL has none (Collectives.def).
std::string_view ncclEntryPoint(CollectiveKind kind);

/// Per-rank message sizes in bytes for nccl-tests size S.
struct MessageSizes {
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
};

/// S_in/S_out for size S (bytes), or nullopt with `whyNot` set when the plan cannot run size S
/// (outside [min,max]_message_size, ...). S_in = S * input_chunks / max(chunks) and S_out likewise;
/// when S is not a multiple of max(chunks) * buffer_alignment the plan runs with uneven chunks
/// where UnevenChunks.h allows it (our extension; MSCCL++'s executor refuses such sizes), and
/// `whyNot` then gives both rules' reasons. Uneven chunks hold whole `elementBytes`-byte elements
/// (the three-argument form: 1, any size in bytes).
std::optional<MessageSizes> messageSizesFor(const plan::Plan &plan, uint64_t size, uint64_t elementBytes,
                                            std::string *whyNot);
std::optional<MessageSizes> messageSizesFor(const plan::Plan &plan, uint64_t size, std::string *whyNot);

/// A message size as tools take it on their command lines: an integer with an optional suffix
/// B, K/k/KiB, M/m/MiB or G/g/GiB (powers of 1024). nullopt for anything else.
std::optional<uint64_t> parseMessageSize(const std::string &text);
/// A size for people: "1 KiB", "64 MiB", "1.5 MiB", "100 B" (one decimal when not whole).
std::string messageSizeText(uint64_t bytes);

/// The input value of element `index` of rank `rank` for `type` (a small positive integer, so
/// sums over `nranks` ranks stay exact in the type).
double inputValue(uint32_t rank, uint64_t index, uint32_t nranks, plan::DataType type);

/// Fill `bytes` bytes at `host` (rank `rank`'s input) with inputValue.
void fillInput(void *host, uint64_t bytes, uint32_t rank, uint32_t nranks, plan::DataType type);

/// Fill `bytes` bytes at `host` with the part of rank `rank`'s input that starts at byte
/// `offset` (a multiple of the element size), so inputs can be uploaded a block at a time.
void fillInputAt(void *host, uint64_t offset, uint64_t bytes, uint32_t rank, uint32_t nranks, plan::DataType type);

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

/// Compares outputs with the end state of a collective a block at a time, so that a caller
/// needs only one block of each output on the host (memory O(block), not O(ranks x S_out)).
/// Inputs are 1 + (a residue modulo m), and the reduction over the ranks of an element is a
/// function of rank 0's residue, so the end state of a block is one vectorised residue pass
/// gathered through a per-residue table of elements (built once), shared by the ranks whose end
/// state is the same (allreduce, allgather); it is compared with memcmp, and only a block that
/// differs element by element (exact, or within the relative tolerance for float16/bfloat16). The result is the
/// same as comparing all outputs at once: `wrong` counts all wrong elements, `first*` is the
/// wrong element with the smallest (rank, index), whatever order the blocks come in.
class OutputChecker {
public:
  /// Suggested block size for check() (bytes; a multiple of every element size).
  static constexpr uint64_t kBlockBytes = 1u << 20;

  /// `nranks` outputs of S_out = `outputBytes` bytes each, made from inputs of S_in =
  /// `inputBytes` bytes each filled by fillInput. `op` is the reduction of allreduce and
  /// reducescatter. For kind Other, check() does nothing and result().checked is false.
  OutputChecker(CollectiveKind kind, uint32_t nranks, uint64_t inputBytes, uint64_t outputBytes,
                plan::DataType type, plan::ReduceOp op);

  /// Compare bytes [offset, offset + bytes) of rank `rank`'s output, whose host copy is `got`.
  /// `offset` and `bytes` are multiples of the element size; offset + bytes <= S_out.
  void check(uint32_t rank, uint64_t offset, const void *got, uint64_t bytes);

  const VerifyResult &result() const { return result_; }

private:
  void expectedValues(uint32_t rank, uint64_t first, uint64_t count);
  CollectiveKind kind_;
  uint32_t n_;
  uint64_t inCount_, outCount_;
  plan::DataType type_;
  plan::ReduceOp op_;
  VerifyResult result_;
  int32_t m_ = 1;                        // inputs are 1 + (a residue modulo m_)
  std::vector<int32_t> step_ = std::vector<int32_t>(128); // 131 k mod m_
  std::vector<double> valueOf_;          // end-state value per residue (a reduction, or x + 1)
  std::vector<uint8_t> valueBytes_;      // the same as elements of the type
  std::vector<int32_t> residue_;         // per element of the block held; -1: no source
  std::vector<uint8_t> expectedBytes_;
  // The block held in residue_/expectedBytes_ (rank is ignored for rank-independent kinds).
  bool haveBlock_ = false;
  uint32_t blockRank_ = 0;
  uint64_t blockFirst_ = 0, blockCount_ = 0;
};

/// Compare the outputs (host copies, S_out bytes each, one per rank) with the end state of
/// `kind` for inputs made by fillInput. `op` is the reduction of allreduce/reducescatter.
/// (OutputChecker over whole buffers.)
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
