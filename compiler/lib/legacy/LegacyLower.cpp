//===- LegacyLower.cpp - Dependencies, replication over instances, lowered refs -----------===//
//
// Consumes the optimized DAG (program.tbs); produces the Lowered program: per rank its
// threadblocks, each op with `depends` (the last op of every other tb it waits for, from the DAG
// edges), its step (index in its tb), and its sources / destinations in the order of the steps
// they came from. With instances > 1 every tb t becomes tbs t*instances+i, i < instances, whose
// ops address chunk index*instances + i*size (interleaved) or len(buffer)*i + index (duplicated,
// packed); barrier ids and tb lists are replicated the same way. Mirrors DagLower
// (dag/lower.py). Named scratch buffers do not exist in this style, so the scratch offset of
// _lower_buffers is always 0 and lowering a ref keeps it.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/legacy/LegacyPasses.h"

#include <algorithm>

namespace msccl::legacy {

Lowered lowerDag(Program &program) {
  const ProgramOptions &o = program.options();
  // _infer_dependencies
  for (auto &rankTbs : program.tbs)
    for (auto &[id, tb] : rankTbs)
      for (Op *op : tb.ops) {
        std::vector<Op *> deps;
        for (Op *d : op->prev) {
          if (d->inst == Inst::Start)
            continue;
          auto it = std::find_if(deps.begin(), deps.end(), [&](Op *x) { return x->tb == d->tb; });
          if (it == deps.end())
            deps.push_back(d);
          else if (d->step > (*it)->step)
            *it = d;
        }
        op->depends = std::move(deps);
      }
  // _replicate: steps first
  for (auto &rankTbs : program.tbs)
    for (auto &[id, tb] : rankTbs)
      for (size_t s = 0; s < tb.ops.size(); ++s)
        tb.ops[s]->step = int64_t(s);

  Lowered out;
  int64_t instances = o.instances;
  std::vector<std::map<int64_t, Threadblock>> itbs;
  if (instances == 1) {
    itbs = program.tbs;
  } else {
    itbs.resize(program.tbs.size());
    auto newIndex = [&](const Ref &r, int64_t i) {
      if (o.replicationPolicy == Policy::Interleaved)
        return r.index * instances + i * r.size;
      return program.bufferLength(r.rank, r.buffer) * i + r.index;
    };
    auto inst = [&](const std::optional<Ref> &r, int64_t i) -> std::optional<Ref> {
      if (!r)
        return std::nullopt;
      Ref x = *r;
      x.index = newIndex(*r, i);
      return x;
    };
    for (int64_t i = 0; i < instances; ++i)
      for (size_t rank = 0; rank < program.tbs.size(); ++rank)
        for (auto &[tbid, tb] : program.tbs[rank]) {
          int64_t itbid = tbid * instances + i;
          Threadblock itb;
          itb.id = itbid;
          for (Op *op : tb.ops) {
            out.ownedOps.emplace_back();
            Op *iop = &out.ownedOps.back();
            iop->inst = op->inst;
            iop->rank = op->rank;
            iop->src = inst(op->src, i);
            iop->dst = inst(op->dst, i);
            iop->step = op->step;
            iop->tb = itbid;
            iop->channelType = op->channelType;
            iop->tbList = op->tbList;
            iop->barrierId = op->barrierId;
            if (op->inst == Inst::Barrier) {
              for (auto &t : iop->tbList)
                t = t * instances + i;
              iop->barrierId = op->barrierId * instances + i;
            }
            for (auto &[r, s] : op->srcs)
              iop->srcs.push_back({*inst(r, i), s});
            for (auto &[r, s] : op->dsts)
              iop->dsts.push_back({*inst(r, i), s});
            itb.ops.push_back(iop);
          }
          itb.channels = tb.channels;
          itbs[rank][itbid] = std::move(itb);
        }
    for (size_t rank = 0; rank < program.tbs.size(); ++rank)
      for (auto &[tbid, tb] : program.tbs[rank])
        for (int64_t i = 0; i < instances; ++i) {
          Threadblock &itb = itbs[rank][tbid * instances + i];
          for (size_t s = 0; s < tb.ops.size(); ++s) {
            Op *op = tb.ops[s];
            Op *iop = itb.ops[s];
            iop->depends.clear();
            for (Op *dep : op->depends) {
              auto it = itbs[rank].find(dep->tb * instances + i);
              if (it == itbs[rank].end() || dep->step < 0 || size_t(dep->step) >= it->second.ops.size())
                throw LegacyError("internal: a dependency names an op outside the program");
              iop->depends.push_back(it->second.ops[size_t(dep->step)]);
            }
          }
        }
  }
  // _lower_tbs
  for (size_t rank = 0; rank < itbs.size(); ++rank) {
    Gpu g;
    g.rank = int(rank);
    for (auto &[id, tb] : itbs[rank]) {
      for (Op *op : tb.ops) {
        auto byStep = [](const std::pair<Ref, int64_t> &a, const std::pair<Ref, int64_t> &b) {
          return a.second < b.second;
        };
        std::stable_sort(op->srcs.begin(), op->srcs.end(), byStep);
        std::stable_sort(op->dsts.begin(), op->dsts.end(), byStep);
      }
      g.threadblocks.push_back(std::move(tb));
    }
    g.inputChunks = program.bufferLength(int(rank), Buf::Input) * instances;
    g.outputChunks = o.collective.outputChunkCount(program.bufferLength(int(rank), Buf::Output), instances);
    out.gpus.push_back(std::move(g));
  }
  return out;
}

} // namespace msccl::legacy
