//===- BenchPlans.cpp - Synthetic plans for the CUDA benchmarks --------------------------===//
//
// See BenchPlans.h. Plans are built directly in the model; ids follow the DSL's conventions
// (one memory channel per (tb, peer), remote buffers de-duplicated per (peer, type)).
//
//===------------------------------------------------------------------------------------===//
#include "BenchPlans.h"

namespace msccl::bench {

using namespace msccl::plan;

namespace {

Plan skeleton(const char *name, const char *collective, unsigned nranks, const char *protocol) {
  Plan p;
  p.name = name;
  p.collective = collective;
  p.protocol = protocol;
  p.gpus.resize(nranks);
  for (unsigned r = 0; r < nranks; ++r) p.gpus[r].id = r;
  return p;
}

Op nop() { return Op(); }

Op dataOp(OpType t, std::vector<BufferRef> src, std::vector<BufferRef> dst, std::optional<ChannelType> ct = {}) {
  Op op;
  op.type = t;
  op.src = std::move(src);
  op.dst = std::move(dst);
  op.channelType = ct;
  return op;
}

Op syncOp(OpType t, std::vector<uint32_t> ids) {
  Op op;
  op.type = t;
  op.channelIds = std::move(ids);
  op.channelType = ChannelType::Memory;
  return op;
}

Plan oneRank(const char *name, unsigned tbs, bool reduce) {
  Plan p = skeleton(name, "custom", 1, "Simple");
  Gpu &g = p.gpus[0];
  g.inputChunks = g.outputChunks = 1;
  for (unsigned t = 0; t < tbs; ++t) {
    Threadblock tb;
    tb.id = t;
    Op op = reduce ? dataOp(OpType::Reduce, {BufferRef::local(BufferType::Input, 0, 1), BufferRef::local(BufferType::Output, 0, 1)},
                            {BufferRef::local(BufferType::Output, 0, 1)})
                   : dataOp(OpType::Copy, {BufferRef::local(BufferType::Input, 0, 1)}, {BufferRef::local(BufferType::Output, 0, 1)});
    if (reduce) op.reduceOp = ReduceOp::Sum;
    op.tbg = TbgInfo{t, tbs};
    tb.ops.push_back(op);
    g.threadblocks.push_back(tb);
  }
  return p;
}

} // namespace

Plan copyPlan(unsigned tbs) { return oneRank("bench_copy", tbs, false); }
Plan reducePlan(unsigned tbs) { return oneRank("bench_reduce", tbs, true); }

Plan allPairsPacketAllReduce(unsigned n) {
  Plan p = skeleton("bench_allpairs_packet_allreduce", "allreduce", n, "LL");
  for (unsigned r = 0; r < n; ++r) {
    Gpu &g = p.gpus[r];
    g.inputChunks = g.outputChunks = n;
    g.scratchChunks = 2 * n;
    ChannelDecl mem;
    mem.channelType = ChannelType::Memory;
    Threadblock tb;
    tb.id = 0;
    RemoteBufferRefs refs;
    refs.accessChannelType = ChannelType::Memory;
    std::vector<BufferRef> putSrc, putDst, redSrc{BufferRef::local(BufferType::Input, r, 1)},
        redDst{BufferRef::local(BufferType::Output, r, 1)};
    for (unsigned q = 0, k = 0; q < n; ++q) {
      if (q == r) continue;
      mem.connectedTo.push_back(q);
      g.remoteBuffers.push_back(RemoteBuffer{q, BufferType::Scratch, {ChannelType::Memory}});
      refs.remoteBufferIds.push_back(k);
      putSrc.push_back(BufferRef::local(BufferType::Input, q, 1));
      putDst.push_back(BufferRef::remote(k, r, 1));        // peer q's scratch slot r
      redSrc.push_back(BufferRef::local(BufferType::Scratch, q, 1));
      redDst.push_back(BufferRef::remote(k, n + r, 1));    // peer q's scratch slot n+r
      ++k;
    }
    g.channels.push_back(mem);
    TbChannels tc;
    tc.channelType = ChannelType::Memory;
    for (unsigned k = 0; k + 1 < n; ++k) tc.channelIds.push_back(k);
    tb.channels.push_back(tc);
    tb.remoteBufferRefs.push_back(refs);
    tb.ops.push_back(dataOp(OpType::PutPackets, putSrc, putDst, ChannelType::Memory));
    Op red = dataOp(OpType::ReduceSendPackets, redSrc, redDst, ChannelType::Memory);
    red.reduceOp = ReduceOp::Sum;
    tb.ops.push_back(red);
    for (unsigned q = 0; q < n; ++q)
      if (q != r)
        tb.ops.push_back(dataOp(OpType::UnpackPackets, {BufferRef::local(BufferType::Scratch, n + q, 1)},
                                {BufferRef::local(BufferType::Output, q, 1)}));
    g.threadblocks.push_back(tb);
  }
  return p;
}

Plan allPairsAllReduce(unsigned n, unsigned tbs) {
  Plan p = skeleton("bench_allpairs_allreduce", "allreduce", n, "Simple");
  for (unsigned r = 0; r < n; ++r) {
    Gpu &g = p.gpus[r];
    g.inputChunks = g.outputChunks = n;
    g.scratchChunks = n;
    ChannelDecl mem;
    mem.channelType = ChannelType::Memory;
    // Remote buffers: per peer q, its scratch (k = 2*i) and its output (k = 2*i+1).
    std::vector<unsigned> peers;
    for (unsigned q = 0; q < n; ++q)
      if (q != r) peers.push_back(q);
    for (unsigned q : peers) {
      g.remoteBuffers.push_back(RemoteBuffer{q, BufferType::Scratch, {ChannelType::Memory}});
      g.remoteBuffers.push_back(RemoteBuffer{q, BufferType::Output, {ChannelType::Memory}});
    }
    for (unsigned t = 0; t < tbs; ++t)
      for (unsigned q : peers) mem.connectedTo.push_back(q); // channel t*(n-1)+i: tb t toward peers[i]
    g.channels.push_back(mem);
    for (unsigned t = 0; t < tbs; ++t) {
      Threadblock tb;
      tb.id = t;
      TbChannels tc;
      tc.channelType = ChannelType::Memory;
      RemoteBufferRefs refs;
      refs.accessChannelType = ChannelType::Memory;
      std::vector<uint32_t> all;
      std::vector<BufferRef> putSrc, putDst, redSrc{BufferRef::local(BufferType::Input, r, 1)},
          redDst{BufferRef::local(BufferType::Output, r, 1)};
      for (unsigned i = 0; i < peers.size(); ++i) {
        tc.channelIds.push_back(t * (n - 1) + i);
        all.push_back(i);
        refs.remoteBufferIds.push_back(2 * i);
        refs.remoteBufferIds.push_back(2 * i + 1);
        putSrc.push_back(BufferRef::local(BufferType::Input, peers[i], 1));
        putDst.push_back(BufferRef::remote(2 * i, r, 1));          // peer's scratch slot r
        redSrc.push_back(BufferRef::local(BufferType::Scratch, peers[i], 1));
        redDst.push_back(BufferRef::remote(2 * i + 1, r, 1));      // peer's output chunk r
      }
      tb.channels.push_back(tc);
      tb.remoteBufferRefs.push_back(refs);
      const TbgInfo tbg{t, tbs};
      Op put = dataOp(OpType::Put, putSrc, putDst, ChannelType::Memory);
      put.tbg = tbg;
      Op res = dataOp(OpType::ReduceSend, redSrc, redDst, ChannelType::Memory);
      res.reduceOp = ReduceOp::Sum;
      res.tbg = tbg;
      tb.ops = {put, nop(), syncOp(OpType::Signal, all), syncOp(OpType::Wait, all), nop(), res, nop(),
                syncOp(OpType::Signal, all), syncOp(OpType::Wait, all), nop()};
      g.threadblocks.push_back(tb);
    }
  }
  return p;
}

} // namespace msccl::bench
