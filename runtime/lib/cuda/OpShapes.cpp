//===- OpShapes.cpp - Per-op roles of buffer entries ------------------------------------===//
//
// Consumes an op code, its channel type and its lowered entries; produces a yes/no per entry
// (packet addressing) and a shape diagnostic. The roles follow spec plan#8 (with the
// fixes of Lowering.h: every pair uses its own entries).
//
//===------------------------------------------------------------------------------------===//
#include "LoweringInternal.h"

namespace msccl::cuda {

using plan::ChannelType;
using plan::OpType;

bool isPacketOp(OpType t) {
  switch (t) {
  case OpType::PutPackets: case OpType::ReadPutPackets: case OpType::CopyPackets:
  case OpType::UnpackPackets: case OpType::ReducePackets: case OpType::ReduceCopyPackets:
  case OpType::ReduceSendPackets: case OpType::ReduceCopySendPackets: case OpType::MultiStorePackets:
    return true;
  default:
    return false;
  }
}

bool entryIsPacket(OpType t, ChannelType ct, bool isSrc, size_t k) {
  switch (t) {
  case OpType::CopyPackets: return !isSrc;
  case OpType::UnpackPackets: return isSrc;
  case OpType::PutPackets: return isSrc ? ct == ChannelType::Port : true;
  case OpType::ReadPutPackets: case OpType::MultiStorePackets: return true;
  case OpType::ReducePackets: case OpType::ReduceSendPackets: case OpType::ReduceCopySendPackets:
  case OpType::ReduceCopyPackets: {
    if (isSrc) return k >= 1;
    uint32_t first = 0, end = 0;
    packetReduceDsts((uint8_t)t, kMaxEntriesPerSide, first, end);
    return k >= first && k < end;
  }
  default: return false;
  }
}

namespace {

bool isLocal(const DevEntry &e) { return e.base <= (uint8_t)DevBase::Scratch; }
bool isRemote(const DevEntry &e) { return e.base == (uint8_t)DevBase::Remote; }
bool isSwitch(const DevEntry &e) { return e.base == (uint8_t)DevBase::Switch; }

std::string need(const char *what) { return std::string("needs ") + what; }

/// Entries [from, n) of `v` must satisfy `pred`.
template <class P> bool all(const std::vector<DevEntry> &v, size_t from, P pred) {
  for (size_t i = from; i < v.size(); ++i)
    if (!pred(v[i])) return false;
  return true;
}

std::string lengths(const std::vector<DevEntry> &src, const std::vector<DevEntry> &dst, uint64_t L) {
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i].length < L) return "src_buff[" + std::to_string(i) + "] is shorter than the op's length";
  for (size_t i = 0; i < dst.size(); ++i)
    if (dst[i].length < L) return "dst_buff[" + std::to_string(i) + "] is shorter than the op's length";
  return "";
}

} // namespace

std::string checkOpShape(OpType t, ChannelType ct, const std::vector<DevEntry> &src,
                         const std::vector<DevEntry> &dst, unsigned nIds) {
  const size_t ns = src.size(), nd = dst.size();
  const bool port = ct == ChannelType::Port, memory = ct == ChannelType::Memory;
  switch (t) {
  case OpType::Put: case OpType::PutWithSignal: case OpType::PutWithSignalAndFlush: case OpType::PutPackets: {
    if (nd == 0 || ns < nd) return need("one local src_buff entry per remote dst_buff entry");
    if (!memory && !port) return need("channel_type memory or port");
    if (!all(src, 0, isLocal) || !all(dst, 0, isRemote)) return need("local src_buff and remote (buffer_id) dst_buff entries");
    if (port && nIds < nd) return need("one channel id per dst_buff entry");
    for (size_t i = 0; i < nd; ++i) {
      uint64_t L = t == OpType::PutPackets ? src[i].length : dst[i].length;
      if (src[i].length < L || dst[i].length < L) return "src_buff[" + std::to_string(i) + "] and dst_buff[" + std::to_string(i) + "] differ in size";
    }
    return "";
  }
  case OpType::Get:
    if (ns == 0 || nd < ns) return need("one local dst_buff entry per remote src_buff entry");
    if (!memory) return need("channel_type memory");
    if (!all(src, 0, isRemote) || !all(dst, 0, isLocal)) return need("remote src_buff and local dst_buff entries");
    for (size_t i = 0; i < ns; ++i)
      if (dst[i].length < src[i].length) return "dst_buff[" + std::to_string(i) + "] is shorter than src_buff[" + std::to_string(i) + "]";
    return "";
  case OpType::Copy: case OpType::CopyPackets: case OpType::UnpackPackets:
    if (ns == 0 || nd == 0) return need("a src_buff and a dst_buff entry");
    if (!isLocal(src[0]) || !isLocal(dst[0])) return need("local entries");
    return dst[0].length < src[0].length ? "dst_buff[0] is shorter than src_buff[0]" : "";
  case OpType::Reduce: case OpType::ReducePackets:
    if (ns == 0 || nd == 0) return need("src_buff and dst_buff entries");
    if (!all(src, 0, isLocal) || !isLocal(dst[0])) return need("local entries");
    return lengths(src, {dst[0]}, src[0].length);
  case OpType::ReduceSend: case OpType::ReduceSendPackets:
    if (ns == 0 || nd == 0) return need("src_buff and dst_buff entries");
    if (!all(src, 0, isLocal) || !isLocal(dst[0])) return need("local src_buff entries and a local dst_buff[0]");
    if (nd > 1 && (!memory || !all(dst, 1, isRemote))) return need("remote dst_buff[1..] entries over memory channels");
    return lengths(src, dst, src[0].length);
  case OpType::ReadReduce: case OpType::ReadReduceSend:
    if (ns == 0 || nd == 0) return need("src_buff and dst_buff entries");
    if (!isLocal(src[0]) || !all(src, 1, isRemote) || !isLocal(dst[0])) return need("local src_buff[0], remote src_buff[1..] and local dst_buff[0]");
    if (ns > 1 && !memory) return need("channel_type memory");
    if (t == OpType::ReadReduceSend && !all(dst, 1, isRemote)) return need("remote dst_buff[1..] entries");
    if (t == OpType::ReadReduce && nd > 1) return "has more than one dst_buff entry";
    return lengths(src, dst, src[0].length);
  case OpType::ReduceCopyPackets: case OpType::ReduceCopySendPackets:
    if (ns == 0 || nd < 2) return need("src_buff entries and two local dst_buff entries");
    if (!all(src, 0, isLocal) || !isLocal(dst[0]) || !isLocal(dst[1])) return need("local src_buff and dst_buff[0..1] entries");
    if (t == OpType::ReduceCopySendPackets && nd > 2 && (!memory || !all(dst, 2, isRemote))) return need("remote dst_buff[2..] entries over memory channels");
    if (t == OpType::ReduceCopyPackets && nd > 2) return "has more than two dst_buff entries";
    return lengths(src, dst, src[0].length);
  case OpType::ReadPutPackets:
    if (ns == 0 || nd == 0) return need("a local src_buff entry and remote dst_buff entries");
    if (!isLocal(src[0]) || !all(dst, 0, isRemote)) return need("a local src_buff entry and remote dst_buff entries");
    if (!memory && !port) return need("channel_type memory or port");
    if (port && nIds < nd) return need("one channel id per dst_buff entry");
    return lengths({src[0]}, dst, src[0].length);
  case OpType::MultiLoadReduceStore:
    if (ns == 0 || nd == 0 || !isSwitch(src[0]) || !isSwitch(dst[0])) return need("switch src_buff[0] and dst_buff[0] entries");
    return lengths({src[0]}, {dst[0]}, src[0].length);
  case OpType::MultiLoadReduce: // glre: switch src, local dst
    if (ns == 0 || nd == 0 || !isSwitch(src[0]) || !isLocal(dst[0])) return need("a switch source and a local dst_chunk");
    return lengths({src[0]}, {dst[0]}, src[0].length);
  case OpType::MultiStore: case OpType::MultiStorePackets:
    if (ns == 0 || nd == 0 || !isLocal(src[0]) || !isSwitch(dst[0])) return need("a local src_buff[0] and a switch dst_buff[0] entry");
    return lengths({src[0]}, {dst[0]}, src[0].length);
  default:
    return "";
  }
}

} // namespace msccl::cuda
