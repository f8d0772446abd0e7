//===- PointToPoint.cpp - Grouped ncclSend/ncclRecv sets that are an AllToAll(V) ---------===//
//
// See PointToPoint.h.
//
//===------------------------------------------------------------------------------------===//
#include "PointToPoint.h"

#include <sched.h>

#include <algorithm>
#include <stdexcept>

namespace msccl::nccl {

AllToAllSide allToAllSide(const std::vector<P2pCall> &calls, int nranks) {
  AllToAllSide s;
  const size_t n = size_t(std::max(nranks, 0));
  std::vector<const P2pCall *> sendOf(n, nullptr), recvOf(n, nullptr);
  auto fail = [&](std::string why) {
    s.whyNot = std::move(why);
    return s;
  };
  for (const P2pCall &c : calls) {
    if (c.peer < 0 || size_t(c.peer) >= n)
      return fail("peer " + std::to_string(c.peer) + " is outside the communicator");
    s.partners.insert(c.peer);
    const P2pCall *&slot = c.isSend ? sendOf[size_t(c.peer)] : recvOf[size_t(c.peer)];
    if (slot)
      return fail(std::string("two ") + (c.isSend ? "sends to" : "receives from") + " rank " + std::to_string(c.peer));
    slot = &c;
  }
  if (calls.empty())
    return fail("no send or receive");
  s.type = calls.front().type;
  s.elementBytes = calls.front().elementBytes;
  uint64_t sendAt = 0, recvAt = 0;
  for (size_t p = 0; p < n; ++p) {
    if (!sendOf[p] || !recvOf[p])
      return fail("no " + std::string(sendOf[p] ? "receive from" : "send to") + " rank " + std::to_string(p) +
                  " (a count of 0 leaves its call out)");
    for (const P2pCall *c : {sendOf[p], recvOf[p]})
      if (c->type != s.type)
        return fail("element types differ");
    if (p == 0) {
      s.sendBase = static_cast<const char *>(sendOf[0]->buffer);
      s.recvBase = static_cast<char *>(const_cast<void *>(recvOf[0]->buffer));
    }
    if (static_cast<const char *>(sendOf[p]->buffer) != s.sendBase + sendAt * s.elementBytes ||
        static_cast<const char *>(recvOf[p]->buffer) != s.recvBase + recvAt * s.elementBytes)
      return fail("the blocks of rank " + std::to_string(p) + " do not follow the previous ones");
    s.sendCounts.push_back(sendOf[p]->count);
    s.recvCounts.push_back(recvOf[p]->count);
    sendAt += sendOf[p]->count;
    recvAt += recvOf[p]->count;
  }
  s.complete = true;
  return s;
}

std::unique_ptr<Mailbox> Mailbox::create(runtime::Communicator &comm) {
  const int n = comm.size();
  if (n > kMaxMailboxRanks)
    return nullptr;
  Mailbox probe(nullptr, comm.rank(), n);
  auto mem = comm.allocateShared(size_t(n) * probe.slotBytes());
  return std::unique_ptr<Mailbox>(new Mailbox(std::move(mem), comm.rank(), n));
}

Mailbox::Mailbox(std::unique_ptr<runtime::NodeSharedMemory> mem, int rank, int nranks)
    : mem_(std::move(mem)), rank_(rank), nranks_(nranks), sent_(size_t(nranks), 0), received_(size_t(nranks), 0) {}

void Mailbox::send(int peer, const std::vector<uint64_t> &words) {
  if (words.size() * 8 > payloadBytes())
    throw std::invalid_argument("mailbox message of " + std::to_string(words.size()) + " words is too long");
  const uint64_t k = sent_.at(size_t(peer))++;
  const uint64_t slot = uint64_t(rank_) * slotBytes();
  mem_->put(peer, slot + 8 + (k % 2) * payloadBytes(), words.data(), words.size() * 8);
  mem_->flush(peer); // the payload lands before the count that announces it
  mem_->add(peer, slot, 1);
  mem_->flush(peer);
}

std::vector<uint64_t> Mailbox::receive(int peer, double deadline) {
  const uint64_t k = received_.at(size_t(peer));
  const uint8_t *slot = mem_->local() + uint64_t(peer) * slotBytes();
  const auto *seq = reinterpret_cast<const uint64_t *>(slot);
  for (unsigned spins = 0;; ++spins) {
    mem_->progress();
    if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) > k)
      break;
    if (runtime::monotonicSeconds() > deadline)
      throw std::runtime_error("rank " + std::to_string(rank_) + " waited in vain for rank " + std::to_string(peer) +
                               "'s answer about a grouped send/recv set (MSCCL_TIMEOUT): it made no matching call");
    if (spins > 64)
      sched_yield();
  }
  received_[size_t(peer)] = k + 1;
  std::vector<uint64_t> words(size_t(nranks_) + 2);
  const uint8_t *payload = slot + 8 + (k % 2) * payloadBytes();
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = __atomic_load_n(reinterpret_cast<const uint64_t *>(payload) + i, __ATOMIC_RELAXED);
  return words;
}

std::optional<std::vector<uint64_t>> agreeAllToAll(Mailbox &mailbox, const AllToAllSide &side, int rank, int nranks,
                                                   double deadline, std::string &why) {
  const size_t n = size_t(nranks);
  std::vector<uint64_t> msg(n + 2, 0);
  msg[0] = side.complete ? 1 : 0;
  msg[1] = uint64_t(side.type);
  if (side.complete)
    std::copy(side.sendCounts.begin(), side.sendCounts.end(), msg.begin() + 2);
  for (int p : side.partners)
    if (p != rank)
      mailbox.send(p, msg);
  std::vector<uint64_t> matrix(n * n, 0);
  bool all = side.complete;
  why = side.whyNot;
  if (side.complete)
    std::copy(side.sendCounts.begin(), side.sendCounts.end(), matrix.begin() + ptrdiff_t(size_t(rank) * n));
  for (int p : side.partners) {
    if (p == rank)
      continue;
    std::vector<uint64_t> m = mailbox.receive(p, deadline);
    if (!m[0]) {
      if (all)
        why = "rank " + std::to_string(p) + "'s calls are not one send and one receive per rank";
      all = false;
    } else if (m[1] != uint64_t(side.type)) {
      if (all)
        why = "rank " + std::to_string(p) + " sends another element type";
      all = false;
    } else {
      std::copy(m.begin() + 2, m.end(), matrix.begin() + ptrdiff_t(size_t(p) * n));
    }
  }
  if (!all)
    return std::nullopt;
  for (size_t p = 0; p < n; ++p)
    if (matrix[p * n + size_t(rank)] != side.recvCounts[p]) {
      why = "rank " + std::to_string(p) + " sends " + std::to_string(matrix[p * n + size_t(rank)]) +
            " elements where rank " + std::to_string(rank) + " receives " + std::to_string(side.recvCounts[p]);
      return std::nullopt;
    }
  return matrix;
}

} // namespace msccl::nccl
