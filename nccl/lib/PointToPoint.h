//===- PointToPoint.h - Grouped ncclSend/ncclRecv sets that are an AllToAll(V) -----------===//
//
// PyTorch's all_to_all and all_to_all_single (with or without splits) reach NCCL as
// ncclGroupStart, one ncclSend and one ncclRecv per peer, ncclGroupEnd (torch/csrc/cuda/nccl.cpp;
// it leaves out the calls of a zero count). Such a set *is* an AllToAll (equal counts) or an
// AllToAllV, which plans serve. Consumes one rank's grouped calls on one communicator; produces:
//   * allToAllSide: whether this rank's calls are one send and one receive per rank (itself
//     included), of one element type, sent back to back in peer order from one base address and
//     received likewise (then its row and column of the count matrix);
//   * Mailbox: small messages between a rank and its point-to-point partners over the
//     communicator's one-sided memory (runtime::NodeSharedMemory), so that only ranks that talk
//     to each other anyway exchange anything: a rank with no send/recv in this group is never
//     waited for, and no set of calls that NCCL would run can deadlock here;
//   * agreeAllToAll: every rank tells each partner whether its side is complete, with its row;
//     a complete rank's partners are all ranks, so it learns every row (the full matrix) and
//     every rank's answer; any incomplete rank makes every rank fall back (each complete rank is
//     its partner and hears it). All ranks therefore decide alike.
// Limits: communicators of at most kMaxMailboxRanks ranks (the mailbox is O(n^2) bytes per
// rank); a group holding the send/recv sets of several communicators must issue them in the
// same communicator order on every rank (as PyTorch does: one communicator per collective).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Communicator.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace msccl::nccl {

/// One ncclSend or ncclRecv of a group.
struct P2pCall {
  bool isSend = false;
  const void *buffer = nullptr; ///< sendbuff or recvbuff
  uint64_t count = 0;           ///< elements
  int type = 0;                 ///< ncclDataType_t
  uint64_t elementBytes = 0;
  int peer = 0;
};

/// This rank's side of a send/recv set (see the file comment).
struct AllToAllSide {
  bool complete = false;
  std::string whyNot;           ///< when not complete
  int type = 0;
  uint64_t elementBytes = 0;
  const char *sendBase = nullptr;
  char *recvBase = nullptr;
  std::vector<uint64_t> sendCounts, recvCounts; ///< per peer, elements
  std::set<int> partners;       ///< every peer sent to or received from
};

/// Classify `calls` (in issue order) for a communicator of `nranks`.
AllToAllSide allToAllSide(const std::vector<P2pCall> &calls, int nranks);

constexpr int kMaxMailboxRanks = 256;

/// Messages of up to nranks + 2 words from each rank to each rank, two in flight per pair (a
/// rank's next message to a peer needs that peer's answer to this one first).
class Mailbox {
public:
  /// Collective over `comm` (allocateShared); null when the communicator is larger than
  /// kMaxMailboxRanks. Throws what allocateShared throws.
  static std::unique_ptr<Mailbox> create(runtime::Communicator &comm);
  /// Post `words` (at most nranks + 2) to `peer`.
  void send(int peer, const std::vector<uint64_t> &words);
  /// The next message from `peer`; throws std::runtime_error naming the peer at `deadline`
  /// (runtime::monotonicSeconds()).
  std::vector<uint64_t> receive(int peer, double deadline);

private:
  Mailbox(std::unique_ptr<runtime::NodeSharedMemory> mem, int rank, int nranks);
  uint64_t slotBytes() const { return 8 + 2 * payloadBytes(); }
  uint64_t payloadBytes() const { return 8 * (uint64_t(nranks_) + 2); }
  std::unique_ptr<runtime::NodeSharedMemory> mem_;
  int rank_, nranks_;
  std::vector<uint64_t> sent_, received_; // messages per peer
};

/// The full count matrix (counts[r*n + p], elements rank r sends rank p) when every rank's side
/// is complete and of one element type; nullopt (with `why`) otherwise. Every rank of the set
/// calls it; `deadline` bounds each wait. Throws std::runtime_error on a deadline.
std::optional<std::vector<uint64_t>> agreeAllToAll(Mailbox &mailbox, const AllToAllSide &side, int rank, int nranks,
                                                   double deadline, std::string &why);

} // namespace msccl::nccl
