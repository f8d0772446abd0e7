//===- JsonNode.h - A JSON value with its path, for plan readers (private) -------------===//
//
// The plan readers (PlanJsonRead.cpp for the current format, LegacyPlan.cpp for MSCCLPPLang's
// older one) walk an nlohmann::json value through Node, which carries the JSON path of every
// value it looks at, so that each error is a PlanError naming it. Every call into the JSON library
// goes through guard(), so none of its exceptions escapes without the path.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/PlanJson.h"

#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::plan::json_read {

using json = nlohmann::json;

/// The message of a JSON library exception without its "[json.exception.KIND.N] " prefix.
inline std::string jsonMessage(const json::exception &e) {
  std::string msg = e.what();
  auto pos = msg.find("] ");
  return pos == std::string::npos ? msg : msg.substr(pos + 2);
}

/// A JSON value together with its path, for error messages. Every call into the JSON library
/// goes through guard(), so that none of its exceptions escapes without the path.
struct Node {
  const json &v;
  std::string path;

  [[noreturn]] void fail(const std::string &msg) const { throw PlanError(path, msg); }

  template <typename F> auto guard(F f) const -> decltype(f()) {
    try {
      return f();
    } catch (const json::exception &e) {
      fail(jsonMessage(e));
    }
  }

  Node at(std::string_view key) const {
    auto it = guard([&] { return v.find(key); });
    if (it == v.end())
      fail("missing required key `" + std::string(key) + "`");
    return {*it, sub(key)};
  }
  std::optional<Node> find(std::string_view key) const {
    auto it = guard([&] { return v.find(key); });
    if (it == v.end())
      return std::nullopt;
    return Node{*it, sub(key)};
  }
  Node operator[](size_t i) const {
    std::string p = path + "[" + std::to_string(i) + "]";
    return {guard([&]() -> const json & { return v.at(i); }), std::move(p)};
  }
  std::string sub(std::string_view key) const {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  const Node &object() const {
    if (!v.is_object())
      fail(std::string("expected an object, got ") + v.type_name());
    return *this;
  }
  size_t array() const {
    if (!v.is_array())
      fail(std::string("expected an array, got ") + v.type_name());
    return v.size();
  }
  uint64_t u64() const {
    if (v.is_number_unsigned())
      return guard([&] { return v.get<uint64_t>(); });
    if (v.is_number_integer()) {
      int64_t x = guard([&] { return v.get<int64_t>(); });
      if (x < 0)
        fail("expected a non-negative integer, got " + std::to_string(x));
      return uint64_t(x);
    }
    fail(std::string("expected a non-negative integer, got ") + v.type_name());
  }
  uint32_t u32() const {
    uint64_t x = u64();
    if (x > std::numeric_limits<uint32_t>::max())
      fail("value " + std::to_string(x) + " does not fit in 32 bits");
    return uint32_t(x);
  }
  int32_t i32() const {
    if (!v.is_number_integer())
      fail(std::string("expected an integer, got ") + v.type_name());
    if (v.is_number_unsigned()) {
      uint64_t u = guard([&] { return v.get<uint64_t>(); });
      if (u > uint64_t(std::numeric_limits<int32_t>::max()))
        fail("value " + std::to_string(u) + " does not fit in 32 bits");
      return int32_t(u);
    }
    int64_t x = guard([&] { return v.get<int64_t>(); });
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      fail("value " + std::to_string(x) + " does not fit in 32 bits");
    return int32_t(x);
  }
  bool boolean() const {
    if (!v.is_boolean())
      fail(std::string("expected a boolean, got ") + v.type_name());
    return guard([&] { return v.get<bool>(); });
  }
  const std::string &str() const {
    if (!v.is_string())
      fail(std::string("expected a string, got ") + v.type_name());
    return guard([&]() -> const std::string & { return v.get_ref<const std::string &>(); });
  }
  std::vector<uint32_t> u32List() const {
    size_t n = array();
    std::vector<uint32_t> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
      out.push_back((*this)[i].u32());
    return out;
  }
  BufferType bufferType() const {
    if (auto t = parseBufferType(str()))
      return *t;
    fail("unknown buffer type `" + str() + "` (expected `i`, `o` or `s`)");
  }
  ChannelType channelType() const {
    if (auto t = parseChannelType(str()))
      return *t;
    fail("unknown channel type `" + str() + "` (expected `memory`, `port`, `switch` or `none`)");
  }
};


/// The top-level fields both formats share (name, collective, protocol, inplace,
/// num_threads_per_block, use_double_scratch_buffer, buffer_alignment, min/max_message_size),
/// read from `root` (an object) into `plan`. Throws PlanError at the field's path.
void readPlanHeader(const Node &root, Plan &plan);

} // namespace msccl::plan::json_read
