//===- Dsl.h - The C++ mirror of the MSCCL++ Python DSL's user API ---------------------===//
//
// Every DSL object and operation of the MSCCL++ Python DSL (python/mscclpp/language/
// {program,collectives,rank,channel,loop,thread_block_group,general}.py) as a C++ call. The
// elaborator (interpreter of .msccl files) calls exactly one function here per DSL call of the
// program; the calls build the per-rank IR of IR.h, which the passes (msccl/passes/Pipeline.h)
// post-process and the backend (msccl/backend/Lower.h) lowers to msccl::plan::Plan.
//
// Conventions
//  * Units: every index, size and offset is in CHUNKS (integers); ranks are 0..num_ranks-1;
//    tb = threadblock id (>= 0). Values come in as int64_t so that the interpreter can pass
//    user values unchanged; all checks happen here.
//  * Handles (Rank, Buffer, Chunk, MemoryChannel, ...) are small values. Handles that act on the
//    program hold a `Program *` (the Program must outlive them; it is not copyable or movable).
//  * Errors: every error the Python DSL raises is thrown as msccl::ir::DslError whose message
//    is the Python message text (spec dsl#7), checks in the Python
//    order. Where Python fails with an unintended AttributeError/TypeError/IndexError/KeyError,
//    we raise the INTENDED error (documented per function).
//  * Deliberate deviations (also in docs/passes.md "Bug policy"): there is no process-global
//    state (channel/semaphore/switch counters and the barrier-id table belong to the Program);
//    negative ranks, negative tb ids, negative Buffer sizes, negative switch offsets/sizes and
//    negative pipeline unit/num_chunks are rejected (Python indexes lists from the end or
//    emits negative numbers); ReplicationPolicy::None keeps indices unchanged (Python crashes).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"
#include "msccl/runtime/Collective.h"

#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::ir {

/// The one error type of the DSL API. what() is the Python message text, e.g.
/// "Rank 9 is out of bounds. Number of ranks: 8".
/// `source()`, when not 0, is the op the error is about (an id into ProgramIR::sources, see
/// IR.h): errors found after elaboration (signal/wait pairing, values the plan cannot hold) carry
/// it so that the driver reports them at the .msccl call.
class DslError : public std::runtime_error {
public:
  explicit DslError(const std::string &message, uint32_t source = 0) : std::runtime_error(message), source_(source) {}
  uint32_t source() const { return source_; }
  /// A second location for a note (e.g. the last wait of a signal/wait mismatch); 0 = none.
  uint32_t related() const { return related_; }
  DslError &withRelated(uint32_t source) { related_ = source; return *this; }

private:
  uint32_t source_ = 0;
  uint32_t related_ = 0;
};

/// The DslError of a program that grew past Program::setMaxPlanSize: `perInstance` entities
/// (ops, threadblocks, channels, semaphores of all ranks, one instance) so far, more than
/// `limitPerInstance` (the limit divided by the instances). The elaborator reports it as
/// err_plan_too_large at the call that crossed the limit.
class PlanTooLarge : public DslError {
public:
  PlanTooLarge(uint64_t perInstance, uint64_t limitPerInstance)
      : DslError("the plan would have more than " + std::to_string(limitPerInstance) +
                 " ops, threadblocks, channels and semaphores per instance"),
        perInstance(perInstance), limitPerInstance(limitPerInstance) {}
  uint64_t perInstance, limitPerInstance;
};

// --- Enums (internal/types.py, utils.py) ------------------------------------------------

/// BufferType.{input, output, scratch}; JSON "i" "o" "s".
using BufferType = plan::BufferType;
/// ReduceOperationType.{sum, min, max}.
using ReduceOperationType = plan::ReduceOp;
/// ChannelType.{memory, port, switch, none}.
using ChannelType = plan::ChannelType;

/// SyncType: a 2-bit set (before = 1, after = 2). `none`, `before`, `after`, `both`.
enum class SyncType : uint8_t { None = 0, Before = 1, After = 2, Both = 3 };
inline SyncType operator|(SyncType a, SyncType b) { return SyncType(uint8_t(a) | uint8_t(b)); }
inline SyncType operator&(SyncType a, SyncType b) { return SyncType(uint8_t(a) & uint8_t(b)); }
inline SyncType operator^(SyncType a, SyncType b) { return SyncType(uint8_t(a) ^ uint8_t(b)); }
inline bool has(SyncType s, SyncType bit) { return (uint8_t(s) & uint8_t(bit)) == uint8_t(bit); }
/// "none" "before" "after" "both".
std::string_view syncTypeName(SyncType s);

/// ReplicationPolicy.{interleaved, none}. `None` keeps chunk indices unchanged (the Python
/// DSL crashes with a TypeError instead; deliberate deviation).
enum class ReplicationPolicy : uint8_t { Interleaved, None };

// --- Collectives (collectives.py) -----------------------------------------------------

/// A collective: its plan name and per-rank input/output buffer sizes in chunks.
/// Mirrors collectives.py (init_buffers). All factories throw DslError for negative sizes
/// (Python accepts them; deliberate deviation), for num_ranks < 1 or above kMaxRanks, and when
/// a chunk count (num_ranks * chunk_factor) does not fit in 64 bits (Python has no limits).
struct Collective {
  std::string name;        ///< "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "broadcast", "reduce", "test"
  int64_t numRanks = 0;
  int64_t chunkFactor = 1;
  bool inplace = false;    ///< Only metadata in the plan.
  int64_t inputChunks = 0;  ///< Per rank.
  int64_t outputChunks = 0; ///< Per rank.
  /// AllToAllV: block sizes are run-time counts (the plan gets `variable_sizes`); chunk indices
  /// are block indices (one chunk per block), a scratch chunk is a slot of `maxBlock` elements.
  bool variable = false;
  int64_t maxBlock = 0;     ///< AllToAllV: the largest count the plan takes (elements; 0 = no bound, no scratch).

  /// A collective of the collectives table with a DSL class (Collectives.def, Dsl = Yes:
  /// AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Broadcast, Reduce), as its class
  /// `Kind(num_ranks, chunk_factor, inplace)` makes it: the table's name, and input / output
  /// chunks from its DslIn / DslOut (Cf: chunk_factor, NCf: num_ranks * chunk_factor).
  /// Throws DslError for a kind without a DSL class (Other).
  static Collective make(runtime::CollectiveKind kind, int64_t numRanks, int64_t chunkFactor, bool inplace);
  /// AllToAllV(num_ranks, max_block): input = output = n blocks of run-time sizes, never in place.
  /// Throws DslError for max_block < 0.
  static Collective allToAllV(int64_t numRanks, int64_t maxBlock);
  /// TestCollective(num_ranks, input_size, output_size): inplace always false, name "test".
  static Collective testCollective(int64_t numRanks, int64_t inputSize, int64_t outputSize);
};

// --- Program options (program.py CollectiveProgram.__init__) ---------------------------

/// Limits on user values that size the program (deliberate deviations: Python has none). A
/// plan holds every rank; replication makes `instances` copies of every threadblock, and no GPU
/// keeps more than a few hundred threadblocks resident.
constexpr int64_t kMaxRanks = 65536;
constexpr int64_t kMaxInstances = 1024;

struct ProgramOptions {
  std::optional<std::string> name;   ///< Plan `name` (null when absent).
  Collective collective;
  /// num_ranks; < 0 means "the collective's rank count". Larger than the collective's count ->
  /// DslError "Number of ranks N exceeds the number of ranks of the collective (M)." (Python:
  /// IndexError). Smaller: the extra collective buffers are ignored, as in Python.
  int64_t numRanks = -1;
  int64_t instances = 1;             ///< Replication factor, 0..kMaxInstances (else DslError).
  std::string protocol = "Simple";   ///< "Simple" or "LL", else "Given protocol: X. Must be either Simple, LL".
  bool instrFusion = true;
  bool autoSync = true;
  ReplicationPolicy replicationPolicy = ReplicationPolicy::Interleaved;
  bool reuseResources = false;
  int64_t numThreadsPerBlock = 1024;
  bool useDoubleScratchBuffer = false;
  int64_t bufferAlignment = 16;      ///< Bytes.
  uint64_t minMessageSize = 0;       ///< Bytes.
  uint64_t maxMessageSize = UINT64_MAX; ///< Bytes.
};

// --- Value handles ------------------------------------------------------------------------

class Program;
struct ProgramIR;
class SourceTable;

/// A chunk range of one rank's buffer: (rank, buffer kind, index, size), all in chunks; the
/// index is absolute within that rank's buffer kind (scratch indices include the Buffer's
/// offset). Equality = equality of all four fields (internal/types.py Chunk).
struct Chunk {
  int64_t rank = 0;
  BufferType buffer = BufferType::Input;
  int64_t index = 0;
  int64_t size = 0;
  bool operator==(const Chunk &o) const { return rank == o.rank && buffer == o.buffer && index == o.index && size == o.size; }
  bool operator!=(const Chunk &o) const { return !(*this == o); }
};

/// A buffer of one rank: the collective's input/output buffer or a scratch `Buffer`.
/// Mirrors rank.py BaseBuffer / Buffer: [offset, end) in chunks of that rank's buffer kind.
struct Buffer {
  int64_t rank = 0;
  BufferType type = BufferType::Input;
  int64_t offset = 0; ///< First chunk.
  int64_t end = 0;    ///< One past the last chunk (Python's `size` attribute).

  /// Number of chunks (end - offset).
  int64_t length() const { return end - offset; }
  /// buf[start:stop:step] (BaseBuffer.__getitem__). Missing start = 0, missing stop = length.
  /// Errors, in order: step not missing/1 -> "Buffer slicing does not support step != 1 (got step=S)";
  /// negative -> "Buffer slicing does not support negative indices (got start=A, stop=B)" (None for
  /// missing); start > stop -> "Buffer slice start (A) must be <= stop (B)"; past the end ->
  /// "Index range from X - Y is out of bounds for buffer K. Buffer size: Z".
  Chunk slice(std::optional<int64_t> start, std::optional<int64_t> stop,
              std::optional<int64_t> step = std::nullopt) const;
  /// The error for a non-slice index, e.g. buf[3]: "Buffer indices must be slices, not int".
  /// `pythonTypeName` is the Python type name of the key ("int", "str", "tuple", ...).
  [[noreturn]] static void throwNotASlice(std::string_view pythonTypeName);
};

/// ThreadBlockGroup(tb_list) (thread_block_group.py). Member i gets tbg_info {tb_id: i,
/// tbg_size: len}. A repeated tb -> "Duplicate thread block found at index I: TB".
struct ThreadBlockGroup {
  std::vector<int64_t> tbList;
  explicit ThreadBlockGroup(std::vector<int64_t> tbs);
  int64_t numtb() const { return int64_t(tbList.size()); }
};

/// Rank(r) (rank.py). Construct with Program::rank().
class Rank {
public:
  int64_t rank() const { return rank_; }
  /// The collective's input / output buffer of this rank (offset 0).
  Buffer getInputBuffer() const;
  Buffer getOutputBuffer() const;
  /// copy / copy_packets (to packet: dst must be scratch) / unpack_packets (src must be scratch).
  /// Checks in order: "Inconsistent ranks: dst X, src Y, self R. They must match.";
  /// "Inconsistent chunk sizes: dst X, src Y. They must match."; unpack: "Source chunk must be of
  /// type scratch."; copy_packets: "Destination chunk must be of type scratch."; then the tb rule:
  /// tb if given, else every tb of tbGroup, else "Either 'tb' (thread block ID) or 'tb_group'
  /// (ThreadBlockGroup) must be provided, but both are None.". Emits copy / cpkt / upkt.
  void copy(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  void copyPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  void unpackPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  /// reduce(src_chunk, other_chunks, tb, tb_group, dst_chunk = src_chunk, reduce_op, packet).
  /// Checks in order: ranks; "Inconsistent chunk sizes: dst X, src Y. ..."; "Other chunk empty.";
  /// per other chunk: "Other chunk rank X does not match current rank R.", "Inconsistent chunk
  /// sizes: other X, src Y. They must match.", packet && not scratch -> "Other chunk must be of
  /// type scratch."; then the tb rule. Emits re / repkt.
  void reduce(const Chunk &src, const std::vector<Chunk> &others, std::optional<int64_t> tb,
              const ThreadBlockGroup *tbGroup = nullptr, std::optional<Chunk> dst = std::nullopt,
              ReduceOperationType reduceOp = ReduceOperationType::Sum, bool packet = false) const;
  /// barrier(tb_list): [] -> "Barrier requires at least thread block."; one tb -> a nop on it;
  /// more -> one barrier op on each listed tb, barrier id from this program's per-rank table
  /// keyed by the exact tb list (order matters).
  void barrier(const std::vector<int64_t> &tbList) const;

private:
  friend class Program;
  Rank(Program *p, int64_t r) : prog_(p), rank_(r) {}
  Program *prog_;
  int64_t rank_;
};

/// MemoryChannel(dst_rank, src_rank) (channel.py). Construct with Program::memoryChannel().
class MemoryChannel {
public:
  int64_t dstRank() const { return dst_; }
  int64_t srcRank() const { return src_; }
  /// Per-(memory, src rank) channel id (position in the src GPU's memory connected_to).
  uint32_t channelId() const { return id_; }
  /// signal / wait (rlxsignal / rlxwait when relaxed). Counted for the pairing validation.
  void signal(int64_t tb, SyncType dataSync = SyncType::Both, bool relaxed = false) const;
  void wait(int64_t tb, SyncType dataSync = SyncType::Both, bool relaxed = false) const;
  /// get(dst_chunk local, src_chunk remote). Checks: "Source chunk rank X does not match current
  /// channel source rank S." (dst, sic); "Dst chunk rank X does not match current channel dst rank
  /// D." (src); tb rule. Sizes are not compared (as in Python).
  void get(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  /// put(dst_chunk remote, src_chunk local): src rank; dst rank; "Destination chunk size X does
  /// not match source chunk size Y."; tb rule.
  void put(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  /// put_packets: src rank; dst rank; "Destination chunk must be of type scratch."; sizes; tb rule.
  void putPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  /// read_put_packets: src rank; "Source chunk must be of type scratch."; dst rank; dst scratch;
  /// sizes; tb rule (Python raises ValueError there; same message).
  void readPutPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;
  /// reduce(local_src_chunk, remote_src_chunks, tb, tb_group, local_dst_chunk = local_src, reduce_op):
  /// "Destination chunk rank X does not match current channel source rank S." (sic, local src);
  /// "Source chunk size X does not match destination chunk size Y."; per remote chunk: "Source
  /// chunk rank X does not match current channel dst rank D.", "Source chunk size X does not match
  /// local source chunk size Y."; tb rule. Emits rre (re with channel_type memory when empty).
  void reduce(const Chunk &localSrc, const std::vector<Chunk> &remoteSrcs, std::optional<int64_t> tb,
              const ThreadBlockGroup *tbGroup = nullptr, std::optional<Chunk> localDst = std::nullopt,
              ReduceOperationType reduceOp = ReduceOperationType::Sum) const;

private:
  friend class Program;
  MemoryChannel(Program *p, uint32_t id, int64_t dst, int64_t src) : prog_(p), id_(id), dst_(dst), src_(src) {}
  Program *prog_;
  uint32_t id_;
  int64_t dst_, src_;
};

/// PortChannel(dst_rank, src_rank) (channel.py). Construct with Program::portChannel().
class PortChannel {
public:
  int64_t dstRank() const { return dst_; }
  int64_t srcRank() const { return src_; }
  uint32_t channelId() const { return id_; }
  /// signal / wait (counted for pairing) / flush (not counted). No `relaxed`.
  void signal(int64_t tb, SyncType dataSync = SyncType::Both) const;
  void wait(int64_t tb, SyncType dataSync = SyncType::Both) const;
  void flush(int64_t tb, SyncType dataSync = SyncType::Both) const;
  /// put / put_with_signal (pws, counts a signal) / put_with_signal_and_flush (pwsf, counts a
  /// signal): src rank; dst rank; sizes. tb required (no tb_group).
  void put(const Chunk &dst, const Chunk &src, int64_t tb) const;
  void putWithSignal(const Chunk &dst, const Chunk &src, int64_t tb) const;
  void putWithSignalAndFlush(const Chunk &dst, const Chunk &src, int64_t tb) const;
  /// put_packets: src rank; dst rank; dst scratch; sizes.
  void putPackets(const Chunk &dst, const Chunk &src, int64_t tb) const;
  /// read_put_packets: as MemoryChannel::readPutPackets.
  void readPutPackets(const Chunk &dst, const Chunk &src, std::optional<int64_t> tb, const ThreadBlockGroup *tbGroup = nullptr) const;

private:
  friend class Program;
  PortChannel(Program *p, uint32_t id, int64_t dst, int64_t src) : prog_(p), id_(id), dst_(dst), src_(src) {}
  Program *prog_;
  uint32_t id_;
  int64_t dst_, src_;
};

class SwitchChannel;

/// SwitchChannel.at_rank(r): the executing rank's view (channel.py SwitchChannelRankView).
class SwitchChannelRankView {
public:
  int64_t rank() const { return rank_; }
  /// reduce(buffer_offset, size, dst_chunk, tb, reduce_op) -> glre. Checks: "Destination chunk rank X
  /// is not part of the rank group [..]."; "Destination chunk size X does not match the required size
  /// S."; per member: "Buffer size C is smaller than required size R for rank r." (scratch capacity
  /// = the member's scratch chunks at the time of the call).
  void reduce(int64_t bufferOffset, int64_t size, const Chunk &dst, int64_t tb,
              ReduceOperationType reduceOp = ReduceOperationType::Sum) const;
  /// broadcast(src_chunk, buffer_offset, size, tb) -> gstore (messages say "Destination chunk ..."; sic).
  void broadcast(const Chunk &src, int64_t bufferOffset, int64_t size, int64_t tb) const;
  /// broadcast_packets -> gstorepkt: "Source chunk rank X is not part of the rank group [..].";
  /// "Source chunk must be of type scratch for the packet broadcast."; "Destination buffer must be of
  /// type scratch for the packet broadcast."; "Source chunk size X does not match the required size
  /// S."; scratch capacity.
  void broadcastPackets(const Chunk &src, int64_t bufferOffset, int64_t size, int64_t tb) const;

private:
  friend class SwitchChannel;
  SwitchChannelRankView(Program *p, uint32_t ch, int64_t r) : prog_(p), channel_(ch), rank_(r) {}
  Program *prog_;
  uint32_t channel_;
  int64_t rank_;
};

/// SwitchChannel(rank_list, buffer_type) (channel.py). Construct with Program::switchChannel().
class SwitchChannel {
public:
  const std::vector<int64_t> &ranks() const;
  BufferType bufferType() const;
  /// at_rank(r): r not in the group -> "Rank r is not part of this SwitchChannel's rank group."
  SwitchChannelRankView atRank(int64_t rank) const;

private:
  friend class Program;
  SwitchChannel(Program *p, uint32_t index) : prog_(p), index_(index) {}
  Program *prog_;
  uint32_t index_; ///< Program-level switch channel record.
};

/// Semaphore(rank, initial_value) (rank.py). Construct with Program::semaphore().
class Semaphore {
public:
  int64_t rank() const { return rank_; }
  uint32_t id() const { return id_; }
  /// acquire / release -> sem_acquire / sem_release with semaphore_ids [id].
  void acquire(int64_t tb, SyncType dataSync = SyncType::Both) const;
  void release(int64_t tb, SyncType dataSync = SyncType::Both) const;

private:
  friend class Program;
  Semaphore(Program *p, int64_t rank, uint32_t id) : prog_(p), rank_(rank), id_(id) {}
  Program *prog_;
  int64_t rank_;
  uint32_t id_;
};

/// CollectiveProgram (program.py): owns every piece of state the Python DSL keeps in the program
/// and in its process-wide tables (here per program). Not copyable, not movable (handles point to it).
class Program {
public:
  /// CollectiveProgram(...). Errors: "Given protocol: P. Must be either Simple, LL"; num_ranks
  /// larger than the collective's; negative instances ("Number of instances must be >= 0, got N").
  explicit Program(ProgramOptions options);
  ~Program();
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  const ProgramOptions &options() const;
  int64_t numRanks() const;

  /// Rank(r): r >= num_ranks or r < 0 -> "Rank r is out of bounds. Number of ranks: n".
  Rank rank(int64_t r);
  /// Buffer(rank, size): scratch buffer of `size` chunks at the end of the rank's scratch space.
  /// Bad rank -> "Rank r is out of bounds. Number of ranks: n"; size < 0 -> "Buffer size S must be
  /// non-negative" (Python: accepted).
  Buffer scratchBuffer(int64_t rank, int64_t size);
  /// MemoryChannel(dst_rank, src_rank) / PortChannel(dst_rank, src_rank): DESTINATION FIRST.
  /// "Source rank S is out of bounds. Number of ranks: n" then "Destination rank D is out of
  /// bounds. Number of ranks: n". Every call is a new channel (next id of the src rank).
  MemoryChannel memoryChannel(int64_t dstRank, int64_t srcRank);
  PortChannel portChannel(int64_t dstRank, int64_t srcRank);
  /// SwitchChannel(rank_list, buffer_type): "One or more ranks in [..] are out of bounds. Number of
  /// ranks: n".
  SwitchChannel switchChannel(const std::vector<int64_t> &rankList, BufferType bufferType);
  /// Semaphore(rank, initial_value): "Source rank r is out of bounds. Number of ranks: n".
  Semaphore semaphore(int64_t rank, int64_t initialValue);

  /// `with LoopIterationContext(unit, num_chunks)`: enter / exit. Entering while one is active ->
  /// "Nested Pipelines are not Supported."; a unit that is not a positive multiple of 16 bytes
  /// (ours) -> "LoopIterationContext unit U is not a positive multiple of 16 bytes ..."; exiting
  /// without one -> "No pipeline is active." (ours).
  /// While active every op is collected; on exit one `pipeline` op per (rank, tb), in order of first
  /// appearance, is appended to its tb. unit is in bytes.
  void enterPipeline(int64_t unit, int64_t numChunks);
  void exitPipeline();
  bool inPipeline() const;

  /// Where the ops of the following DSL calls come from (the elaborator calls this before each
  /// DSL method call): `loc` is the .msccl call. The first op added after it adds a record to
  /// ir().sources (through the context provider, if set, which adds the frames around the call);
  /// every op and signal/wait count of the call gets that id. An invalid `loc` means "unknown"
  /// (source 0), the default for C++ users.
  void setSource(llvm::SMLoc loc);
  /// `provider(table, loc)` adds the record of a call at `loc` with its context frames
  /// (SourceTable::add) and returns its id; called at most once per setSource, only when an op
  /// is added.
  void setContextProvider(std::function<uint32_t(SourceTable &, llvm::SMLoc)> provider);

  /// Limit the plan to `limit` ops, threadblocks, channels and semaphores over all ranks and
  /// instances (mscclc --max-plan-size): a call that would grow the program past
  /// limit / instances per instance throws PlanTooLarge. Default: no limit.
  void setMaxPlanSize(uint64_t limit);
  /// Ops, threadblocks, channels and semaphores of all ranks so far, for one instance.
  uint64_t planSize() const;

  /// The program's IR (user ops as called, before any pass).
  const ProgramIR &ir() const;
  ProgramIR &ir();

  // Internal (used by the handles).
  struct Impl;
  Impl &impl() { return *impl_; }
  const Impl &impl() const { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

/// Message of the Python DSL when a DSL object is used outside a program ("No Program in context").
inline constexpr std::string_view kNoProgramInContext = "No Program in context";

} // namespace msccl::ir
