//===- LegacyIR.h - MSCCLPPLang's program model: chunk refs, the instruction DAG ----------===//
//
// The chunk-oriented style of .msccl (`program NAME(style = "mscclpplang", ...)`) records its
// operations here, exactly as MSCCLPPLang (microsoft/mscclpp be6a941f~1,
// python/mscclpp/language/{program,types,buffer,collectives}.py and dag/instruction_dag.py)
// does: `chunk(rank, Buffer.input, index, size)` is a Ref; each Ref method (put, put_packet,
// get, signal, wait, flush, copy, copy_packet, reduce, reduce_packet, group_load_reduce,
// group_store) tracks the chunks it moves (apply_send) and adds its Op to the instruction DAG,
// whose edges are the read/write dependencies on buffer slots (rank, buffer, index).
// The passes that follow (LegacyOptimize.h, LegacyLower.h, LegacyEmit.h) turn the DAG into
// the plan. Units: every index and size counts chunks of one instance.
// Errors: a misuse the Python compiler asserts on throws LegacyError (a message in the
// diagnostics' style); the elaborator reports it at the call.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace msccl::legacy {

class LegacyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Buffer (buffer.py): the values are the plan's spellings "i", "o", "s".
enum class Buf : uint8_t { Input, Output, Scratch };
const char *bufName(Buf b);

/// ChannelType (types.py); `sm` and `proxy` are the older spellings of memory and port.
enum class ChanType : uint8_t { Port, Memory, None, Nvls };
const char *chanName(ChanType t);

/// Instruction (types.py), in its order; instName gives the plan's op name.
enum class Inst : uint8_t {
  Start, Nop, ReadReduceCopy, ReadReduceCopySend, ReduceSend, Copy, Reduce, CopyPacket,
  TransformToPacket, ReduceSendPacket, ReducePacket, Put, ReadPutPacket, PutPacket, PutWithSignal,
  PutWithSignalAndFlush, Get, Wait, Signal, Flush, Barrier, GroupStore, GroupLoadReduce,
  GroupLoadReduceStore
};
const char *instName(Inst i);

/// ReplicationPolicy (types.py).
enum class Policy : uint8_t { Duplicated, Interleaved, Packed };

/// ChunkRef: `size` chunks from `index` of `buffer` on `rank`.
struct Ref {
  int rank = 0;
  Buf buffer = Buf::Input;
  int64_t index = 0;
  int64_t size = 1;
  bool operator==(const Ref &o) const {
    return rank == o.rank && buffer == o.buffer && index == o.index && size == o.size;
  }
};

/// One DAG node / plan op (types.py Op). `srcs` / `dsts` carry the step of the op they came
/// from until lowering sorts them by it.
struct Op {
  Inst inst = Inst::Nop;
  int rank = -1;
  std::optional<Ref> src, dst;
  std::vector<Op *> depends;
  int64_t step = -1;
  int64_t tb = -1;
  std::vector<Op *> prev, next; ///< used as sets (no duplicates), in insertion order
  ChanType channelType = ChanType::None;
  std::vector<std::pair<Ref, int64_t>> srcs, dsts;
  std::vector<int64_t> tbList; ///< barrier
  int64_t barrierId = -1;      ///< barrier
  uint64_t mark = 0;           ///< scratch of graph walks (LegacyOptimize.cpp)
  /// Number of chunks (Op.cnt): the source's size, else the destination's, else 0.
  int64_t cnt() const;
};

/// A channel a threadblock uses (types.py Channel); `peers` has one rank, or the group (nvls).
struct Channel {
  Buf srcBuffer, dstBuffer;
  ChanType type;
  std::vector<int> peers;
  bool operator==(const Channel &o) const {
    return srcBuffer == o.srcBuffer && dstBuffer == o.dstBuffer && type == o.type && peers == o.peers;
  }
};

struct Threadblock {
  int64_t id = -1;
  std::vector<Op *> ops;
  std::vector<Channel> channels;
};

/// The collectives of collectives.py: buffers at the start, in-place aliasing, checks.
enum class CollKind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Broadcast };
struct Collective {
  CollKind kind = CollKind::AllReduce;
  int numRanks = 0;
  int64_t chunkFactor = 1;
  bool inplace = false;
  int numRanksPerNode = -1; ///< -1: all ranks on one node
  int64_t numChunkGroups = 1;
  int root = 0; ///< Broadcast
  const char *name() const;
  /// get_buffer_index: in-place collectives alias one buffer into the other.
  std::pair<Buf, int64_t> bufferIndex(int rank, Buf b, int64_t index) const;
  /// get_output_chunk_count.
  int64_t outputChunkCount(int64_t bufferLength, int64_t instances) const;
};

/// MSCCLPPProgram's options.
struct ProgramOptions {
  std::string name;
  Collective collective;
  int numRanks = 0;
  int64_t instances = 1;
  std::string protocol = "Simple";
  bool instrFusion = true;
  Policy replicationPolicy = Policy::Duplicated;
  int64_t numThreadsPerBlock = 1024;
  bool useDoubleScratchBuffer = false;
  uint64_t minMessageSize = 0;
  uint64_t maxMessageSize = UINT64_MAX;
};

/// What a buffer slot holds, for Check(): a chunk of origin (rank, index), or the sum of such
/// chunks (sorted), or nothing.
struct Content {
  std::vector<std::pair<int, int64_t>> parts; ///< empty: no chunk
  bool present() const { return !parts.empty(); }
  bool operator==(const Content &o) const { return parts == o.parts; }
};

/// MSCCLPPProgram with its InstructionDAG: the builder the elaborator calls.
class Program {
public:
  /// Throws LegacyError for a bad protocol or rank count.
  explicit Program(ProgramOptions opts);
  const ProgramOptions &options() const { return opts_; }

  /// chunk(rank, buffer, index, size): the Ref, or nullopt where the slot holds no chunk.
  std::optional<Ref> chunk(int rank, Buf buffer, int64_t index, int64_t size);

  // Ref methods (program.py Ref). `buffer` nullopt = the Python None; index -1 = default.
  Ref put(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, ChanType ct);
  Ref putPacket(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb,
                bool srcIsPacket, ChanType ct, std::optional<Buf> tempBuffer, int64_t tempIndex);
  void get(const Ref &self, int src, std::optional<Buf> buffer, int64_t index, int64_t recvtb, ChanType ct);
  void signal(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, ChanType ct);
  void flush(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, ChanType ct);
  void wait(const Ref &self, int src, std::optional<Buf> buffer, int64_t index, int64_t recvtb, ChanType ct);
  /// copy / copy_packet: nullopt when the destination is the chunk itself (nothing done).
  std::optional<Ref> copy(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb,
                          bool fromPacket);
  Ref reduce(const Ref &self, const Ref &other, int64_t recvtb, ChanType ct, bool packet);
  Ref groupLoadReduce(const Ref &self, const std::vector<Ref> &others, int64_t recvtb, ChanType ct);
  void groupStore(const Ref &self, const std::vector<int> &dsts, int64_t index, std::optional<Buf> buffer,
                  int64_t sendtb, ChanType ct);
  std::vector<Ref> split(const Ref &self, int64_t num);
  Ref group(const Ref &self, const Ref &other);
  /// rank(r).barrier(tb_list).
  void barrier(int rank, const std::vector<int64_t> &tbList);

  /// Check(): whether every rank's output holds what the collective promises; each wrong chunk
  /// is one line of `problems` ("rank 1 chunk 0 ...").
  bool check(std::vector<std::string> &problems) const;

  // ---- state read by the passes ----
  int numRanks() const { return opts_.numRanks; }
  std::deque<Op> &ops() { return ops_; }
  /// Threadblocks per rank, by id (filled by LegacyLower's first step).
  std::vector<std::map<int64_t, Threadblock>> tbs;
  /// Length of a buffer of a rank (buffers[rank][buffer] in Python), 0 if it does not exist.
  int64_t bufferLength(int rank, Buf b) const;
  bool hasScratch(int rank) const { return scratchCreated_[static_cast<size_t>(rank)]; }

private:
  void checkRank(int r, const char *what) const;
  Ref getRef(int rank, Buf buffer, int64_t index, int64_t size) const;
  std::pair<Buf, int64_t> defaultIndex(const Ref &self, int remoteRank, std::optional<Buf> buffer, int64_t index) const;
  void ensureScratch(int rank, std::optional<Buf> buffer);
  std::vector<Content> &buf(int rank, Buf b);
  const std::vector<Content> *bufPtr(int rank, Buf b) const;
  void applySend(int src, Buf sb, int64_t si, int dst, Buf db, int64_t di, int64_t size);
  void applyReduce(const Ref &dst, const std::vector<Ref> &others);
  Ref copyImpl(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, bool fromPacket,
               bool toPacket, bool &same);
  Ref putImpl(const Ref &self, int dst, std::optional<Buf> buffer, int64_t index, int64_t sendtb, bool srcIsPacket,
              ChanType ct, bool packet);

  // InstructionDAG
  Op *newOp(Inst inst, int rank, std::optional<Ref> src, std::optional<Ref> dst, int64_t tb, ChanType ct);
  int64_t tbStep(int rank, int64_t tb);
  void write(int rank, Buf b, int64_t index, int64_t size, Op *op, bool read = false);
  void read(int rank, Buf b, int64_t index, int64_t size, Op *op);
  void addStart(int rank, Buf b, int64_t index, const Ref &ref);

  ProgramOptions opts_;
  std::deque<Op> ops_;
  /// Per rank: input, output (shared with input when aliased) and scratch contents.
  std::vector<std::shared_ptr<std::vector<Content>>> input_, output_, scratch_;
  std::vector<bool> scratchCreated_;
  struct SlotState {
    Op *lastWriter = nullptr;
    std::vector<Op *> lastReaders;
  };
  std::unordered_map<uint64_t, SlotState> slots_;
  std::vector<std::map<int64_t, int64_t>> tbSteps_;
  std::vector<std::map<std::vector<int64_t>, int64_t>> barrierIds_;
  std::vector<int64_t> maxBarrierId_;
  /// Reduce semantics for Check(): slot contents after each reduce (Python tracks only sends).
  uint64_t slotKey(int rank, Buf b, int64_t index) const {
    return (uint64_t(uint32_t(rank)) << 40) | (uint64_t(b) << 36) | uint64_t(index & 0xFFFFFFFFF);
  }
};

/// Adds `x` to a set-like vector unless present.
void addUnique(std::vector<Op *> &v, Op *x);
/// Removes `x` from a set-like vector (if present).
void removeValue(std::vector<Op *> &v, Op *x);

} // namespace msccl::legacy
