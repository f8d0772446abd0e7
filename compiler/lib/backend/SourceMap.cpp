//===- SourceMap.cpp - Plan op path -> .msccl call site ---------------------------------===//
//
// Resolves ir::SourceTable ids through the llvm::SourceMgr of the compilation and writes the
// map with llvm::json::OStream. Replicated instances and the ops of one DSL call share source
// ids, so each id's JSON text is built once and reused.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/backend/SourceMap.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/JSON.h>

#include <functional>
#include <unordered_map>

namespace msccl::backend {

namespace {
const char *kindName(ir::SourceContext::Kind k) {
  switch (k) {
  case ir::SourceContext::For: return "for";
  case ir::SourceContext::Call: return "call";
  case ir::SourceContext::With: return "with";
  case ir::SourceContext::Param: return "param";
  }
  return "for";
}

/// Parses "[N]" at the front of `s`.
bool index(llvm::StringRef &s, size_t &out) {
  if (!s.consume_front("[")) return false;
  size_t close = s.find(']');
  if (close == llvm::StringRef::npos || s.take_front(close).getAsInteger(10, out)) return false;
  s = s.drop_front(close + 1);
  return true;
}

void writeLocation(llvm::json::OStream &j, const SourceLocation &l) {
  j.attribute("file", l.file);
  j.attribute("line", int64_t(l.line));
  j.attribute("col", int64_t(l.col));
  j.attributeArray("context", [&] {
    for (auto &f : l.context)
      j.object([&] {
        j.attribute("kind", f.kind);
        j.attribute("file", f.file);
        j.attribute("line", int64_t(f.line));
        j.attribute("col", int64_t(f.col));
        if (!f.name.empty()) j.attribute("name", f.name);
        if (f.kind == "for") j.attribute("value", f.value);
      });
  });
}
} // namespace

std::vector<std::vector<OpSourceEntry>> &SourceMap::gpu(size_t g) {
  if (gpus_.size() <= g) gpus_.resize(g + 1);
  return gpus_[g];
}

std::optional<SourceLocation> SourceMap::resolve(uint32_t id, const ir::SourceIdList *fused) const {
  std::optional<ir::OpSource> src = sm_ ? table_.resolve(id) : std::nullopt;
  if (!src || !src->loc.isValid()) return std::nullopt;
  auto place = [&](llvm::SMLoc loc, std::string &file, unsigned &line, unsigned &col) {
    unsigned buf = sm_->FindBufferContainingLoc(loc);
    if (!buf) return;
    file = sm_->getMemoryBuffer(buf)->getBufferIdentifier().str();
    std::tie(line, col) = sm_->getLineAndColumn(loc, buf);
  };
  SourceLocation out;
  place(src->loc, out.file, out.line, out.col);
  for (auto it = src->frames.rbegin(); it != src->frames.rend(); ++it) {
    SourceFrame f;
    f.kind = kindName(it->kind);
    place(it->loc, f.file, f.line, f.col);
    f.name = it->name;
    f.value = it->value;
    out.context.push_back(std::move(f));
  }
  if (fused)
    for (uint32_t m : *fused)
      if (auto l = resolve(m)) out.fused.push_back(std::move(*l));
  return out;
}

const OpSourceEntry *SourceMap::entry(size_t g, size_t tb, llvm::ArrayRef<size_t> ops) const {
  if (g >= gpus_.size() || tb >= gpus_[g].size() || ops.empty()) return nullptr;
  const std::vector<OpSourceEntry> *level = &gpus_[g][tb];
  const OpSourceEntry *e = nullptr;
  for (size_t i : ops) {
    if (i >= level->size()) return nullptr;
    e = &(*level)[i];
    level = &e->inner;
  }
  return e;
}

std::optional<SourceLocation> SourceMap::lookupSource(size_t g, size_t tb, llvm::ArrayRef<size_t> ops) const {
  const OpSourceEntry *e = entry(g, tb, ops);
  if (!e) return std::nullopt;
  return resolve(e->source, &e->fused);
}

std::optional<SourceLocation> SourceMap::lookupSource(std::string_view path) const {
  llvm::StringRef s(path.data(), path.size());
  size_t g = 0, tb = 0;
  llvm::SmallVector<size_t, 2> ops;
  if (!s.consume_front("gpus") || !index(s, g) || !s.consume_front(".threadblocks") || !index(s, tb)) return std::nullopt;
  while (!s.empty()) {
    size_t i = 0;
    if (!s.consume_front(".ops") || !index(s, i)) return std::nullopt;
    ops.push_back(i);
  }
  return lookupSource(g, tb, ops);
}

void SourceMap::writeJson(llvm::raw_ostream &os) const {
  // The JSON text of each (source, fused list) is the same for every instance of a replicated
  // op: cache it by source id for ops that fused nothing.
  std::unordered_map<uint32_t, std::string> cache;
  auto known = [&](uint32_t id) { return sm_ && table_.loc(id).isValid(); };
  llvm::json::OStream j(os, 1);
  auto value = [&](const OpSourceEntry &e) -> std::string {
    auto build = [&] {
      std::string text;
      llvm::raw_string_ostream s(text);
      llvm::json::OStream inner(s);
      auto l = resolve(e.source, &e.fused);
      inner.object([&] {
        writeLocation(inner, *l);
        if (!l->fused.empty())
          inner.attributeArray("fused", [&] {
            for (auto &f : l->fused) inner.object([&] { writeLocation(inner, f); });
          });
      });
      s.flush();
      return text;
    };
    if (!e.fused.empty()) return build();
    auto it = cache.find(e.source);
    if (it == cache.end()) it = cache.emplace(e.source, build()).first;
    return it->second;
  };
  std::function<void(const std::string &, const std::vector<OpSourceEntry> &)> ops =
      [&](const std::string &prefix, const std::vector<OpSourceEntry> &list) {
        for (size_t i = 0; i < list.size(); ++i) {
          std::string path = prefix + ".ops[" + std::to_string(i) + "]";
          if (known(list[i].source)) {
            std::string v = value(list[i]);
            j.attributeBegin(path);
            j.rawValue(v);
            j.attributeEnd();
          }
          ops(path, list[i].inner);
        }
      };
  j.object([&] {
    j.attribute("version", 1);
    j.attributeObject("ops", [&] {
      for (size_t g = 0; g < gpus_.size(); ++g)
        for (size_t t = 0; t < gpus_[g].size(); ++t)
          ops("gpus[" + std::to_string(g) + "].threadblocks[" + std::to_string(t) + "]", gpus_[g][t]);
    });
  });
  os << "\n";
}

} // namespace msccl::backend
