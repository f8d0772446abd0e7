//===- SourceMapFile.cpp - Reading mscclc's --source-map files --------------------------===//
#include "msccl/runtime/SourceMapFile.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace msccl::runtime {

SourceMapFile SourceMapFile::read(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read source map '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error("source map '" + path + "': invalid JSON: " + e.what());
  }
  if (!j.is_object() || j.value("version", 0) != 1 || !j.contains("ops") || !j["ops"].is_object())
    throw std::runtime_error("source map '" + path + "': not a version 1 source map (docs/source-map.md)");
  SourceMapFile m;
  for (auto &[opPath, loc] : j["ops"].items()) {
    if (!loc.is_object() || !loc.contains("file") || !loc.contains("line"))
      throw std::runtime_error("source map '" + path + "': ops[\"" + opPath + "\"]: needs `file` and `line`");
    try {
      std::string s = loc["file"].get<std::string>() + ":" + std::to_string(loc["line"].get<unsigned>()) + ":" +
                      std::to_string(loc.value("col", 0u));
      std::string ctx;
      for (const auto &f : loc.value("context", nlohmann::json::array()))
        if (f.value("kind", "") == "for")
          ctx += (ctx.empty() ? "" : ", ") + f.value("name", std::string("?")) + " = " + f.value("value", std::string("?"));
      if (!ctx.empty())
        s += " (in for " + ctx + ")";
      m.ops_.emplace(opPath, std::move(s));
    } catch (const nlohmann::json::exception &e) {
      throw std::runtime_error("source map '" + path + "': ops[\"" + opPath + "\"]: " + e.what());
    }
  }
  return m;
}

std::optional<std::string> SourceMapFile::describe(std::string_view opPath) const {
  auto it = ops_.find(std::string(opPath));
  if (it == ops_.end())
    return std::nullopt;
  return it->second;
}

std::string SourceMapFile::annotate(std::string_view text) const {
  static const std::regex opPath(R"(gpus\[\d+\]\.threadblocks\[\d+\]\.ops\[\d+\](\.ops\[\d+\])?)");
  std::string out;
  std::string s(text);
  auto begin = std::sregex_iterator(s.begin(), s.end(), opPath);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch &m = *it;
    if (size_t(m.position(0)) < last)
      continue; // inside a suffix already copied
    size_t end = size_t(m.position(0) + m.length(0));
    // Extend over a field suffix (".src_buff[0].index") so the note follows the whole path.
    while (end < s.size() && (std::isalnum((unsigned char)s[end]) || s[end] == '_' || s[end] == '.' ||
                              s[end] == '[' || s[end] == ']'))
      ++end;
    out.append(s, last, end - last);
    if (auto d = describe(m.str(0)))
      out += " [" + *d + "]";
    last = end;
  }
  out.append(s, last, std::string::npos);
  return out;
}

} // namespace msccl::runtime
