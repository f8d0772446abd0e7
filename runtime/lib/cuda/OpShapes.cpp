//===- OpShapes.cpp - Per-op roles of buffer entries ------------------------------------===//
//
// Consumes an op code, its channel type and its lowered entries; produces a shape diagnostic.
// Every rule comes from the op's row of the op table (plan/OpTable.h, PlanEnums.def): entry
// counts, roles (location, refused entries), channel types and the length rule (spec plan#8,
// with the fixes of Lowering.h: every pair uses its own entries).
//
//===------------------------------------------------------------------------------------===//
#include "LoweringInternal.h"

#include <algorithm>

namespace msccl::cuda {

using plan::ChannelType;
using plan::OpType;

namespace {

bool isLocal(const DevEntry &e) { return e.base <= (uint8_t)DevBase::Scratch; }
bool isRemote(const DevEntry &e) { return e.base == (uint8_t)DevBase::Remote; }
bool isSwitch(const DevEntry &e) { return e.base == (uint8_t)DevBase::Switch; }

std::string need(const std::string &what) { return "needs " + what; }

/// "one", "two", "3", ...
std::string number(size_t n) {
  static const char *const kWords[] = {"no", "one", "two"};
  return n < 3 ? kWords[n] : std::to_string(n);
}
/// "a src_buff", "two src_buff", ...
std::string count(size_t n, const char *key) { return (n == 1 ? std::string("a") : number(n)) + " " + key; }

/// "memory or port" for a channel mask.
std::string channelWords(plan::ChannelMask m) {
  std::string out;
  for (ChannelType ct : {ChannelType::Memory, ChannelType::Port, ChannelType::Switch})
    if (m & (1u << unsigned(ct))) out += (out.empty() ? "" : " or ") + std::string(plan::channelTypeName(ct));
  return out;
}

} // namespace

std::string checkOpShape(OpType t, ChannelType ct, const std::vector<DevEntry> &src,
                         const std::vector<DevEntry> &dst, unsigned nIds) {
  using namespace plan::oprole;
  const plan::OpRow row = plan::opRow(t);
  if (!(row.traits & plan::optrait::Data))
    return "";
  const size_t ns = src.size(), nd = dst.size();
  // Counts.
  if (row.src.min == PerOther || row.dst.min == PerOther) {
    const bool perDst = row.src.min == PerOther;
    const size_t per = perDst ? ns : nd, by = perDst ? nd : ns;
    if (by == 0 || per < by)
      return perDst ? need("one local src_buff entry per remote dst_buff entry")
                    : need("one local dst_buff entry per remote src_buff entry");
  } else if (ns < row.src.min || nd < row.dst.min) {
    return need(count(row.src.min, "src_buff") + " and " + count(row.dst.min, "dst_buff") +
                (row.dst.min > 1 ? " entries" : " entry"));
  }
  // Locations, and entries the handler refuses.
  bool remote = false;
  for (int side = 0; side < 2; ++side) {
    const std::vector<DevEntry> &v = side == 0 ? src : dst;
    const plan::OpSide &s = side == 0 ? row.src : row.dst;
    const char *key = side == 0 ? "src_buff" : "dst_buff";
    for (size_t k = 0; k < v.size(); ++k) {
      const plan::EntryRole role = s.role(k);
      if (role & Rej)
        return "has more than " + number(k) + " " + key + (k == 1 ? " entry" : " entries");
      const plan::EntryRole loc = role & LocMask;
      if (loc == L && !isLocal(v[k])) return need(std::string("a local ") + key + "[" + std::to_string(k) + "] entry");
      if (loc == R && !isRemote(v[k])) return need(std::string("a remote ") + key + "[" + std::to_string(k) + "] entry");
      if (loc == S && !isSwitch(v[k])) return need(std::string("a switch ") + key + "[" + std::to_string(k) + "] entry");
      remote = remote || isRemote(v[k]);
    }
  }
  // Channels: a remote entry is reached through one of the op's channel types.
  if (remote && !plan::opAcceptsChannel(t, ct)) return need("channel_type " + channelWords(row.channels));
  if ((row.traits & plan::optrait::Put) && ct == ChannelType::Port && nIds < nd)
    return need("one channel id per dst_buff entry");
  // Lengths.
  switch (row.length) {
  case plan::OpLength::NoLength:
    return "";
  case plan::OpLength::PairsByDst: // the transfer size is dst[i]'s; src[i] must hold it
    for (size_t i = 0; i < nd; ++i)
      if (src[i].length < dst[i].length) return "src_buff[" + std::to_string(i) + "] is shorter than dst_buff[" + std::to_string(i) + "]";
    return "";
  case plan::OpLength::PairsBySrc: // the transfer size is src[i]'s; dst[i] must hold it
    for (size_t i = 0; i < std::min(ns, nd); ++i)
      if (dst[i].length < src[i].length) return "dst_buff[" + std::to_string(i) + "] is shorter than src_buff[" + std::to_string(i) + "]";
    return "";
  case plan::OpLength::BySrc0:
    break;
  }
  const uint64_t len = src[0].length;
  for (int side = 0; side < 2; ++side) {
    const std::vector<DevEntry> &v = side == 0 ? src : dst;
    const plan::OpSide &s = side == 0 ? row.src : row.dst;
    for (size_t k = 0; k < v.size(); ++k)
      if (!(s.role(k) & Ign) && v[k].length < len)
        return std::string(side == 0 ? "src_buff[" : "dst_buff[") + std::to_string(k) + "] is shorter than the op's length";
  }
  return "";
}

} // namespace msccl::cuda
