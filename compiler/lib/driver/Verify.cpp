//===- Verify.cpp - `mscclc --verify-diagnostics` ---------------------------------------===//
#include "msccl/driver/Verify.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Regex.h>

namespace msccl::driver {

using diag::DiagId;
using diag::Level;

namespace {
struct Expected {
  Level level;
  unsigned line;
  std::string text;
  llvm::SMLoc loc;
  bool matched = false;
};

const char *levelName(Level l) { return l == Level::Error ? "error" : l == Level::Warning ? "warning" : "note"; }
} // namespace

bool verifyDiagnostics(const std::string &filename, const std::string &text, const CaseCompiler &compile,
                       llvm::raw_ostream &err) {
  // Split into cases at `// -----` lines, keeping line numbers.
  std::vector<std::pair<size_t, size_t>> cases; // [begin, end) byte ranges
  std::vector<unsigned> firstLine;
  size_t begin = 0;
  unsigned line = 1, caseLine = 1;
  for (size_t pos = 0; pos <= text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos)
      eol = text.size();
    llvm::StringRef l = llvm::StringRef(text).slice(pos, eol).trim();
    if (l.startswith("// -----")) {
      cases.push_back({begin, pos});
      firstLine.push_back(caseLine);
      begin = eol + 1;
      caseLine = line + 1;
    }
    pos = eol + 1;
    ++line;
  }
  if (begin <= text.size()) {
    cases.push_back({begin, text.size()});
    firstLine.push_back(caseLine);
  }

  bool ok = true;
  llvm::Regex re("expected-(error|warning|note)(@([+-][0-9]+))? *\\{\\{(.*)\\}\\}");
  for (size_t c = 0; c < cases.size(); ++c) {
    std::string body(firstLine[c] - 1, '\n');
    body += text.substr(cases[c].first, cases[c].second - cases[c].first);
    llvm::SourceMgr sm;
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(body, filename), llvm::SMLoc());
    diag::DiagEngine engine(sm, err);
    const char *start = sm.getMemoryBuffer(id)->getBufferStart();

    // Collect expectations.
    std::vector<Expected> expected;
    unsigned ln = 1;
    for (size_t pos = 0; pos < body.size();) {
      size_t eol = body.find('\n', pos);
      if (eol == std::string::npos)
        eol = body.size();
      llvm::StringRef l = llvm::StringRef(body).slice(pos, eol);
      size_t at = l.find("expected-");
      if (at != llvm::StringRef::npos && l.find("//") != llvm::StringRef::npos) {
        llvm::SmallVector<llvm::StringRef, 5> m;
        llvm::SMLoc loc = llvm::SMLoc::getFromPointer(start + pos + at);
        if (re.match(l, &m)) {
          Level lvl = m[1] == "error" ? Level::Error : m[1] == "warning" ? Level::Warning : Level::Note;
          int off = 0;
          if (!m[3].empty()) {
            m[3].drop_front().getAsInteger(10, off);
            if (m[3].front() == '-')
              off = -off;
          }
          // Several {{...}} on one line are not supported; the regex is greedy.
          expected.push_back({lvl, static_cast<unsigned>(static_cast<int>(ln) + off), m[4].str(), loc});
        } else {
          engine.report(loc, DiagId::err_verify_bad_comment, {l.substr(at).str()});
          ok = false;
        }
      }
      pos = eol + 1;
      ++ln;
    }

    engine.setCapture(true);
    compile(engine, id);
    engine.setCapture(false);
    std::vector<diag::Diagnostic> got = engine.takeCaptured();

    for (auto &d : got) {
      bool inMain = d.loc.isValid() && sm.FindBufferContainingLoc(d.loc) == id;
      unsigned dl = inMain ? sm.getLineAndColumn(d.loc, id).first : 0;
      bool matched = false;
      for (auto &e : expected)
        if (!e.matched && e.level == d.level && e.line == dl && d.message.find(e.text) != std::string::npos) {
          e.matched = matched = true;
          break;
        }
      if (!matched && d.level != Level::Note) {
        engine.print({DiagId::err_verify_unexpected, Level::Error, d.loc, formatMessage(DiagId::err_verify_unexpected, {levelName(d.level), d.message})});
        ok = false;
      }
    }
    for (auto &e : expected)
      if (!e.matched) {
        engine.print({DiagId::err_verify_missing, Level::Error, e.loc,
                      formatMessage(DiagId::err_verify_missing, {levelName(e.level), "\"" + e.text + "\" on line " + std::to_string(e.line)})});
        ok = false;
      }
  }
  return ok;
}

} // namespace msccl::driver
