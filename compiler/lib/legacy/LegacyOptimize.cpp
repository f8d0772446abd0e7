//===- LegacyOptimize.cpp - Packet sync removal and instruction fusion ---------------------===//
//
// Consumes the scheduled DAG (program.tbs); produces fewer, fused ops with the DAG edges kept
// consistent. First the signal after each packet put and the wait before each packet reduce /
// copy go (packets carry their own flags). With fusion on, in this order over every tb:
// put+signal -> pws and pws+flush -> pwsf on port channels; rrc/re/rpkt/signal/wait with the same
// op on the same chunk merge into one op with several sources or destinations; rrc/re/rpkt
// followed by a put of its result -> rrcs/rs/rspkt; glre+gstore -> glres; and adjacent gets,
// puts, packet puts, pws, pwsf, signals, flushes and waits on the same buffers compact into one
// op. A fusion is skipped when it would close a cycle or reorder a dependency. Mirrors
// DagOptimizer and _InstructionOptimizer (dag/optimizer.py) and utils.py.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/legacy/LegacyPasses.h"

#include <algorithm>

namespace msccl::legacy {
namespace {

uint64_t gStamp = 0;

void removeOp(Op *op) {
  for (Op *p : op->prev) {
    removeValue(p->next, op);
    for (Op *n : op->next)
      addUnique(p->next, n);
  }
  for (Op *n : op->next) {
    removeValue(n->prev, op);
    std::vector<Op *> u = op->prev;
    for (Op *x : n->prev)
      addUnique(u, x);
    n->prev = std::move(u);
  }
  op->next.clear();
  op->prev.clear();
}

void mergeOp(Op *op, Op *other) {
  if (std::find(op->next.begin(), op->next.end(), other) != op->next.end()) {
    removeValue(op->next, other);
    removeValue(other->prev, op);
  }
  for (Op *p : other->prev) {
    removeValue(p->next, other);
    addUnique(p->next, op);
  }
  for (Op *n : other->next) {
    removeValue(n->prev, other);
    addUnique(n->prev, op);
  }
  for (Op *p : other->prev)
    addUnique(op->prev, p);
  for (Op *n : other->next)
    addUnique(op->next, n);
}

bool circularAfterMerge(Op *op, Op *other) {
  uint64_t stamp = ++gStamp;
  std::vector<Op *> frontier;
  for (Op *n : op->next)
    if (n != other)
      frontier.push_back(n);
  for (Op *n : other->next)
    if (std::find(frontier.begin(), frontier.end(), n) == frontier.end())
      frontier.push_back(n);
  for (size_t k = 0; k < frontier.size(); ++k)
    for (Op *n : frontier[k]->next) {
      if (n == op || n == other)
        return true;
      if (n->mark != stamp) {
        n->mark = stamp;
        frontier.push_back(n);
      }
    }
  return false;
}

bool allPrevsVisited(Op *op, Op *other) {
  for (Op *p : other->prev)
    if (p->step > op->step)
      return false;
  return true;
}

bool sameBufDst(Op *a, Op *b) { return a->dst->buffer == b->dst->buffer && a->dst->index == b->dst->index; }
bool sameBufSrc(Op *a, Op *b) { return a->src->buffer == b->src->buffer && a->src->index == b->src->index; }
bool sameSrcDstBufferType(Op *a, Op *b) { return a->src->buffer == b->src->buffer && a->dst->buffer == b->dst->buffer; }
bool bufDstSrcMatch(Op *a, Op *b) { return a->dst->buffer == b->src->buffer && a->dst->index == b->src->index; }

void drop(Threadblock &tb, std::vector<Op *> &queue, Op *x) {
  removeValue(tb.ops, x);
  removeValue(queue, x);
}

bool canFuse(Op *op, Op *next) { return !circularAfterMerge(op, next) && allPrevsVisited(op, next); }

/// Runs `step(op, tb, queue)` over each tb's queue as the Python passes do: an op stays at the
/// head of the queue while `step` fuses something into it.
template <typename F> void overQueues(Program &p, bool skipNegative, F step) {
  for (auto &rankTbs : p.tbs)
    for (auto &[id, tb] : rankTbs) {
      if (skipNegative && tb.id == -1)
        continue;
      std::vector<Op *> queue = tb.ops;
      while (!queue.empty()) {
        Op *op = queue.front();
        if (step(op, tb, queue))
          continue;
        queue.erase(queue.begin());
      }
    }
}

} // namespace

void optimizeDag(Program &program, bool fuse) {
  // remove_redundant_signal_wait
  overQueues(program, false, [](Op *op, Threadblock &, std::vector<Op *> &) {
    if (op->inst == Inst::PutPacket) {
      for (Op *n : std::vector<Op *>(op->next))
        if (n->inst == Inst::Signal) {
          removeOp(n);
          return true;
        }
    } else if (op->inst == Inst::ReducePacket || op->inst == Inst::CopyPacket) {
      for (Op *p : std::vector<Op *>(op->prev))
        if (p->inst == Inst::Wait) {
          removeOp(p);
          return true;
        }
    }
    return false;
  });
  if (!fuse)
    return;

  // _fuse_instructions_using_port_channel
  overQueues(program, false, [](Op *op, Threadblock &tb, std::vector<Op *> &queue) {
    Inst expected;
    if (op->inst == Inst::Put)
      expected = Inst::Signal;
    else if (op->inst == Inst::PutWithSignal)
      expected = Inst::Flush;
    else
      return false;
    for (Op *n : std::vector<Op *>(op->next)) {
      if (n->inst == expected && op->tb == n->tb && op->cnt() == n->cnt() && sameBufDst(op, n) && sameBufSrc(op, n) &&
          op->channelType == n->channelType && op->channelType == ChanType::Port && canFuse(op, n)) {
        op->inst = op->inst == Inst::Put ? Inst::PutWithSignal : Inst::PutWithSignalAndFlush;
        mergeOp(op, n);
        drop(tb, queue, n);
        return true;
      }
    }
    return false;
  });

  // _fuse_same_instructions
  overQueues(program, false, [](Op *op, Threadblock &tb, std::vector<Op *> &queue) {
    bool (*same)(Op *, Op *);
    switch (op->inst) {
    case Inst::ReadReduceCopy:
    case Inst::Reduce:
    case Inst::ReducePacket:
    case Inst::Wait: same = sameBufDst; break;
    case Inst::Signal: same = sameBufSrc; break;
    default: return false;
    }
    for (Op *n : std::vector<Op *>(op->next)) {
      if (n->inst == op->inst && op->tb == n->tb && same(op, n) && op->cnt() == n->cnt() &&
          op->channelType == n->channelType && canFuse(op, n)) {
        op->srcs.push_back({*n->src, n->step});
        if (op->inst == Inst::Signal || op->inst == Inst::Wait || op->inst == Inst::Flush)
          op->dsts.push_back({*n->dst, n->step});
        mergeOp(op, n);
        drop(tb, queue, n);
        return true;
      }
    }
    return false;
  });

  // _optimize_rrcs_rs
  overQueues(program, false, [](Op *op, Threadblock &tb, std::vector<Op *> &queue) {
    switch (op->inst) {
    case Inst::ReadReduceCopy:
    case Inst::Reduce:
    case Inst::ReducePacket:
    case Inst::ReadReduceCopySend:
    case Inst::ReduceSend:
    case Inst::ReduceSendPacket: break;
    default: return false;
    }
    for (Op *n : std::vector<Op *>(op->next)) {
      if ((n->inst == Inst::Put || n->inst == Inst::PutPacket) && op->tb == n->tb && op->cnt() == n->cnt() &&
          bufDstSrcMatch(op, n) && n->channelType == ChanType::Memory &&
          (op->channelType == ChanType::None || op->channelType == ChanType::Memory) && canFuse(op, n)) {
        if (!op->dsts.empty() && op->dsts[0].first.buffer != n->dst->buffer)
          return false;
        if (op->inst == Inst::ReadReduceCopy)
          op->inst = Inst::ReadReduceCopySend;
        else if (op->inst == Inst::Reduce) {
          op->inst = Inst::ReduceSend;
          op->channelType = ChanType::Memory;
        } else if (op->inst == Inst::ReducePacket) {
          op->inst = Inst::ReduceSendPacket;
          op->channelType = ChanType::Memory;
        }
        op->dsts.push_back({*n->dst, n->step});
        mergeOp(op, n);
        drop(tb, queue, n);
        return true;
      }
    }
    return false;
  });

  // _optimize_group_ops
  overQueues(program, false, [](Op *op, Threadblock &tb, std::vector<Op *> &queue) {
    if (op->inst != Inst::GroupLoadReduce)
      return false;
    for (Op *n : std::vector<Op *>(op->next)) {
      if (n->inst == Inst::GroupStore && op->cnt() == n->cnt() && bufDstSrcMatch(op, n) &&
          op->channelType == n->channelType && canFuse(op, n)) {
        op->inst = Inst::GroupLoadReduceStore;
        op->src = n->src;
        for (auto &d : n->dsts)
          op->dsts.push_back(d);
        mergeOp(op, n);
        drop(tb, queue, n);
        return true;
      }
    }
    return false;
  });

  // _compact_instructions
  overQueues(program, true, [](Op *op, Threadblock &tb, std::vector<Op *> &queue) {
    switch (op->inst) {
    case Inst::Get:
    case Inst::Put:
    case Inst::PutPacket:
    case Inst::PutWithSignal:
    case Inst::PutWithSignalAndFlush:
    case Inst::Signal:
    case Inst::Flush:
    case Inst::Wait: break;
    default: return false;
    }
    if (queue.size() < 2)
      return false;
    Op *n = queue[1];
    if (n->inst == op->inst && sameSrcDstBufferType(op, n) && op->channelType == n->channelType &&
        op->cnt() == n->cnt() && canFuse(op, n)) {
      op->dsts.push_back({*n->dst, n->step});
      op->srcs.push_back({*n->src, n->step});
      mergeOp(op, n);
      drop(tb, queue, n);
      return true;
    }
    return false;
  });
}

} // namespace msccl::legacy
