//===- Diagnostics.cpp - The diagnostics engine of mscclc -------------------------------===//
#include "msccl/diag/Diagnostics.h"

#include <llvm/ADT/StringRef.h>

namespace msccl::diag {

namespace {
struct Info {
  const char *name;
  Level level;
  const char *format;
};
constexpr Level Error = Level::Error;
constexpr Level Warning = Level::Warning;
constexpr Level Note = Level::Note;
const Info kInfos[] = {
#define DIAG(ID, LEVEL, MESSAGE) {#ID, LEVEL, MESSAGE},
#include "msccl/diag/Diagnostics.def"
};
} // namespace

Level levelOf(DiagId id) { return kInfos[static_cast<size_t>(id)].level; }
const char *nameOf(DiagId id) { return kInfos[static_cast<size_t>(id)].name; }

std::string formatMessage(DiagId id, const std::vector<std::string> &args) {
  const char *f = kInfos[static_cast<size_t>(id)].format;
  std::string out;
  for (const char *p = f; *p; ++p) {
    if (*p == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}') {
      size_t k = static_cast<size_t>(p[1] - '0');
      if (k < args.size())
        out += args[k];
      p += 2;
      continue;
    }
    out += *p;
  }
  return out;
}

DiagEngine::DiagEngine(llvm::SourceMgr &sm, llvm::raw_ostream &os, std::string tool)
    : sm_(sm), os_(os), tool_(std::move(tool)) {}

void DiagEngine::report(llvm::SMLoc loc, DiagId id, std::vector<std::string> args) {
  Diagnostic d{id, levelOf(id), loc, formatMessage(id, args)};
  if (d.level == Level::Error)
    ++errors_;
  if (capture_) {
    captured_.push_back(std::move(d));
    return;
  }
  print(d);
}

void DiagEngine::print(const Diagnostic &d) {
  llvm::SourceMgr::DiagKind kind = d.level == Level::Error     ? llvm::SourceMgr::DK_Error
                                   : d.level == Level::Warning ? llvm::SourceMgr::DK_Warning
                                                               : llvm::SourceMgr::DK_Note;
  if (d.loc.isValid() && sm_.FindBufferContainingLoc(d.loc) != 0) {
    sm_.PrintMessage(os_, d.loc, kind, d.message);
    return;
  }
  const char *lvl = d.level == Level::Error ? "error" : d.level == Level::Warning ? "warning" : "note";
  os_ << tool_ << ": " << lvl << ": " << d.message << "\n";
}

std::vector<Diagnostic> DiagEngine::takeCaptured() {
  std::vector<Diagnostic> out;
  out.swap(captured_);
  return out;
}

std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  unsigned best = ~0u;
  const std::string *bestName = nullptr;
  unsigned limit = std::max<unsigned>(1, (static_cast<unsigned>(name.size()) + 2) / 3);
  for (const auto &c : candidates) {
    if (c == name)
      continue;
    unsigned d = llvm::StringRef(name).edit_distance(c, true, limit + 1);
    if (d <= limit && d < best) {
      best = d;
      bestName = &c;
    }
  }
  if (!bestName && name.size() >= 2)
    for (const auto &c : candidates)
      if (c.size() > name.size() && llvm::StringRef(c).startswith(name)) {
        bestName = &c;
        break;
      }
  if (!bestName)
    return "";
  return " (did you mean `" + *bestName + "`?)";
}

} // namespace msccl::diag
