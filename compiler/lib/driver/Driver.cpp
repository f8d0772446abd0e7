//===- Driver.cpp - The mscclc command line ---------------------------------------------===//
//
// Consumes argv; produces the emitted text (AST dump, IR dump or JSON plan) or diagnostics.
// The command line is parsed into MscclcOptions at entry (CommandLine below: llvm::cl options
// that are registered for one parse and removed after it) and converted once into a
// CompilerInvocation (toInvocation); the compilation is a CompilerSession (Session.h), which
// runs the phases in their one order (load -> check -> elaborate -> passes -> plan). What is
// mscclc's alone hangs on the session's options: --emit=ast/ir dump after Check/Elaborate
// (mscclcSession's afterPhase), print(...) and --print-after write to stderr, and the plan is
// for writing: unverified (--no-verify), it streams (backend/StreamCompile.h runs the passes,
// lowers and writes rank by rank on the elaborated IR, no copy; --print-after prints each rank
// as it streams); verified (the default), the session builds it in memory and verifies it first.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/Driver.h"

#include "msccl/backend/StreamCompile.h"
#include "msccl/driver/Session.h"
#include "msccl/driver/Verify.h"
#include "msccl/frontend/AstDump.h"
#include "msccl/ir/IR.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/Version.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <iterator>
#include <sstream>

namespace msccl::driver {

using diag::DiagId;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory cat("mscclc options");

/// mscclc's llvm::cl options. They exist only while one command line is parsed: the
/// constructor registers them with llvm::cl's parser and the destructor removes them, so no
/// value survives into another call, and msccl-run's options (which share names such as -o)
/// never meet these. (The category is static: llvm::cl keeps categories for good.)
struct CommandLine {
  cl::opt<std::string> inputFile{cl::Positional, cl::desc("<input.msccl | - | stdlib:NAME>"), cl::init(""), cl::cat(cat)};
  cl::opt<std::string> outputFile{"o", cl::desc("Output file (default: stdout)"), cl::value_desc("file"), cl::init(""),
                                  cl::cat(cat)};
  cl::list<std::string> defines{"D", cl::Prefix, cl::desc("Override a param: -D NAME=VALUE"),
                                cl::value_desc("NAME=VALUE"), cl::cat(cat)};
  cl::list<std::string> includeDirs{"I", cl::Prefix, cl::desc("Add an import search directory"), cl::value_desc("dir"),
                                    cl::cat(cat)};
  cl::opt<Emit> emit{"emit", cl::desc("What to emit"), cl::init(Emit::Json),
                     cl::values(clEnumValN(Emit::Ast, "ast", "the checked AST"),
                                clEnumValN(Emit::Ir, "ir", "the DSL IR before passes"),
                                clEnumValN(Emit::Json, "json", "the MSCCL++ JSON execution plan (default)")),
                     cl::cat(cat)};
  cl::opt<PlanFormat> planFormat{"plan-format", cl::desc("The JSON plan format"), cl::init(PlanFormat::Current),
                                 cl::values(clEnumValN(PlanFormat::Current, "current", "today's MSCCL++ plan format (default)"),
                                            clEnumValN(PlanFormat::Legacy, "legacy",
                                                       "MSCCLPPLang's older format (mscclpplang-style programs)")),
                                 cl::cat(cat)};
  cl::opt<Target> target{"target", cl::desc("The executors the plan is for"), cl::init(Target::Mscclpp),
                         cl::values(clEnumValN(Target::Mscclpp, "mscclpp",
                                               "MSCCL++'s executor and ours: its per-threadblock limits hold (default)"),
                                    clEnumValN(Target::Msccl, "msccl",
                                               "this project's executors only: no per-threadblock op or channel limit")),
                         cl::cat(cat)};
  cl::list<std::string> printAfter{"print-after",
                                   cl::desc("Print the IR to stderr after a pass (pairing, fusion, "
                                            "sync-insertion, dependency, replication, or all)"),
                                   cl::value_desc("pass"), cl::CommaSeparated, cl::cat(cat)};
  cl::opt<bool> noFusion{"no-fusion", cl::desc("Skip instruction fusion"), cl::init(false), cl::cat(cat)};
  cl::opt<bool> noVerify{"no-verify", cl::desc("Skip the plan checks and the verification of the plan (docs/verification.md)"),
                         cl::init(false), cl::cat(cat)};
  cl::opt<bool> noAutoSync{"no-auto-sync", cl::desc("Skip the data-dependency sync pass"), cl::init(false),
                           cl::cat(cat)};
  cl::opt<std::string> instances{"instances", cl::desc("Override the program option `instances`"),
                                 cl::value_desc("N"), cl::init(""), cl::cat(cat)};
  cl::opt<std::string> protocol{"protocol", cl::desc("Override the program option `protocol` (Simple, LL)"),
                                cl::value_desc("P"), cl::init(""), cl::cat(cat)};
  cl::list<std::string> optionOverrides{"option", cl::desc("Override a program option: --option NAME=VALUE"),
                                        cl::value_desc("NAME=VALUE"), cl::cat(cat)};
  cl::opt<bool> verify{"verify-diagnostics", cl::desc("Check `// expected-error {{...}}` comments"), cl::init(false),
                       cl::cat(cat)};
  cl::opt<bool> listStdlib{"list-stdlib", cl::desc("List the stdlib programs with their summaries"), cl::init(false),
                           cl::cat(cat)};
  cl::opt<int64_t> maxLoop{"max-loop-iterations", cl::desc("Limit on loop iterations of one compilation"),
                           cl::init(50'000'000), cl::cat(cat)};
  cl::opt<unsigned> maxDepth{"max-call-depth", cl::desc("Limit on nested fn calls"), cl::init(200), cl::cat(cat)};
  cl::opt<uint64_t> maxPlanSize{"max-plan-size",
                                cl::desc("Limit on the plan's ops, threadblocks, channels and semaphores "
                                         "(all ranks and instances)"),
                                cl::init(uint64_t(1) << 22), cl::cat(cat)};
  cl::opt<bool> compact{"compact", cl::desc("Emit the JSON plan without indentation"), cl::init(false), cl::cat(cat)};
  cl::opt<bool> verifyIrEach{"verify-ir-each", cl::desc("Run the IR verifier after each pass (debugging the compiler)"),
                             cl::init(false), cl::cat(cat)};
  cl::opt<std::string> sourceMapFile{"source-map",
                                     cl::desc("Write the plan op -> .msccl call map (JSON, docs/source-map.md)"),
                                     cl::value_desc("file"), cl::init(""), cl::cat(cat)};

  CommandLine() = default;
  CommandLine(const CommandLine &) = delete;
  CommandLine &operator=(const CommandLine &) = delete;
  ~CommandLine() {
    // std::addressof: cl::list's operator& yields its vector.
    cl::Option *all[] = {std::addressof(inputFile), std::addressof(outputFile), std::addressof(defines), std::addressof(includeDirs), std::addressof(emit), std::addressof(planFormat), std::addressof(target), std::addressof(printAfter), std::addressof(noFusion), std::addressof(noAutoSync), std::addressof(noVerify), std::addressof(instances), std::addressof(protocol), std::addressof(optionOverrides), std::addressof(verify), std::addressof(listStdlib), std::addressof(maxLoop), std::addressof(maxDepth), std::addressof(maxPlanSize), std::addressof(compact), std::addressof(verifyIrEach), std::addressof(sourceMapFile)};
    for (cl::Option *o : all)
      o->removeArgument();
  }

  void copyTo(MscclcOptions &o) const {
    o.input = inputFile;
    o.output = outputFile;
    o.defines.assign(defines.begin(), defines.end());
    o.includeDirs.assign(includeDirs.begin(), includeDirs.end());
    o.emit = emit;
    o.planFormat = planFormat;
    o.target = target;
    o.printAfter.assign(printAfter.begin(), printAfter.end());
    o.noFusion = noFusion;
    o.noAutoSync = noAutoSync;
    o.noVerify = noVerify;
    o.instances = instances;
    o.protocol = protocol;
    o.optionOverrides.assign(optionOverrides.begin(), optionOverrides.end());
    o.verifyDiagnostics = verify;
    o.listStdlib = listStdlib;
    o.compact = compact;
    o.maxLoopIterations = maxLoop;
    o.maxCallDepth = maxDepth;
    o.maxPlanSize = maxPlanSize;
    o.verifyIrEach = verifyIrEach;
    o.sourceMap = sourceMapFile;
  }
};

/// The last phase an output needs: the checked AST, the IR as elaborated, or the plan.
Phase lastPhase(Emit emit) {
  return emit == Emit::Ast ? Phase::Check : emit == Emit::Ir ? Phase::Elaborate : Phase::Plan;
}

/// mscclc's session: the program's print(...) and --print-after write to `printed`; the plan is
/// for writing; after Check (--emit=ast) the AST and after Elaborate (--emit=ir) the IR are
/// dumped into `dumped`.
SessionOptions mscclcSession(llvm::raw_ostream &printed, std::string &dumped) {
  SessionOptions so;
  so.printStream = &printed;
  so.planForWriting = true;
  so.afterPhase = [&dumped](Phase done, CompilerSession &s) {
    const Emit emit = s.invocation().emit;
    if (done == Phase::Check && emit == Emit::Ast) {
      llvm::raw_string_ostream os(dumped);
      for (ast::Module *m : s.unit().modules)
        frontend::dumpAst(s.astContext(), *m, s.sourceMgr(), os);
    } else if (done == Phase::Elaborate && emit == Emit::Ir) {
      if (s.styleProgram()) {
        s.diag().report(s.unit().program->loc, DiagId::err_pass,
                        {"`--emit=ir`: a program in the mscclpplang style has no DSL IR"});
        return false;
      }
      dumped = ir::printIR(s.program()->ir());
    }
    return true;
  };
  return so;
}

/// A std::streambuf that forwards to an llvm::raw_ostream (for streaming the plan to `out`).
class RawStreamBuf : public std::streambuf {
public:
  explicit RawStreamBuf(llvm::raw_ostream &os) : os_(os) {}

protected:
  std::streamsize xsputn(const char *s, std::streamsize n) override {
    os_.write(s, static_cast<size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof())
      os_ << static_cast<char>(c);
    return traits_type::not_eof(c);
  }

private:
  llvm::raw_ostream &os_;
};


/// Runs `fn`; an allocation that fails becomes a clear error on `err` (false), not an abort.
bool withinMemory(const std::string &input, llvm::raw_ostream &err, const std::function<void()> &fn) {
  try {
    fn();
    return true;
  } catch (const std::bad_alloc &) {
    err << "mscclc: error: out of memory compiling " << (input.empty() ? std::string("the program") : input)
        << ": the program's plan is too large for this machine (fewer ranks, chunks or instances?)\n";
    return false;
  }
}

/// The first `//` comment line of a file, without the slashes.
std::string summaryOf(llvm::StringRef text) {
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    llvm::StringRef t = line.trim();
    if (t.startswith("//"))
      return t.drop_front(2).trim().str();
    if (!t.empty())
      break;
    text = rest;
  }
  return "";
}

bool hasProgram(llvm::StringRef text) {
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    if (line.ltrim().startswith("program "))
      return true;
    text = rest;
  }
  return false;
}

/// (name, summary) of every stdlib program under `dir`, sorted by name.
std::vector<std::pair<std::string, std::string>> scanStdlib(const std::string &dir) {
  std::error_code ec;
  std::vector<std::pair<std::string, std::string>> rows;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef p = it->path();
    if (!p.endswith(".msccl"))
      continue;
    auto buf = llvm::MemoryBuffer::getFile(p);
    if (!buf || !hasProgram((*buf)->getBuffer()))
      continue;
    llvm::StringRef rel = p.drop_front(dir.size());
    while (rel.startswith("/"))
      rel = rel.drop_front();
    rows.push_back({rel.drop_back(6).str(), summaryOf((*buf)->getBuffer())});
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

int listStdlibPrograms(const std::string &dir, llvm::raw_ostream &out, diag::DiagEngine &diag) {
  if (!llvm::sys::fs::is_directory(dir)) {
    diag.report(llvm::SMLoc(), DiagId::err_cannot_open_file, {dir, "not a directory"});
    return 1;
  }
  auto rows = scanStdlib(dir);
  size_t width = 0;
  for (auto &r : rows)
    width = std::max(width, r.first.size());
  for (auto &r : rows) {
    out << r.first;
    out.indent(static_cast<unsigned>(width - r.first.size() + 2)) << r.second << "\n";
  }
  return 0;
}

/// Splits NAME=VALUE; false when there is no `=` or no NAME.
bool splitAssignment(const std::string &s, std::pair<std::string, std::string> &kv) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  kv = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}


/// Writes what session `s` compiled: the plan (streamed from the program, or written from the
/// plan in memory), the legacy plan's text, or the `dumped` AST/IR; then the --source-map file.
/// False (reported on `err`) if streaming the plan failed, which backend::prepareStream rules
/// out for every error it knows of.
bool writeOutput(CompilerSession &s, const std::string &dumped, bool compact, const std::string &sourceMapFile,
                 std::ostream &os, llvm::raw_ostream &err) {
  try {
    if (s.streaming())
      backend::streamPlan(s.program()->ir(), s.pipeline(), os, compact ? -1 : 2, s.sourceMap());
    else if (s.plan())
      plan::writePlan(os, *s.plan(), compact ? -1 : 2);
    else
      os << (s.invocation().emit == Emit::Json ? s.legacyPlanText() : dumped);
  } catch (const std::exception &e) {
    os.flush();
    err << "mscclc: error: " << e.what() << "\n";
    return false;
  }
  os.flush();
  if (s.sourceMap() && !sourceMapFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream map(sourceMapFile, ec);
    if (ec) {
      err << "mscclc: error: cannot write source map '" << sourceMapFile << "': " << ec.message() << "\n";
      return false;
    }
    s.sourceMap()->writeJson(map);
  }
  return true;
}

/// Writes the compiled output to `out` or the -o file (created only now, after success).
int emitOutput(CompilerSession &s, const std::string &dumped, const MscclcOptions &mo, llvm::raw_ostream &out,
               llvm::raw_ostream &err) {
  // The plan is streamed (never built as one string).
  if (mo.output.empty() || mo.output == "-") {
    RawStreamBuf buf(out);
    std::ostream os(&buf);
    bool written = writeOutput(s, dumped, mo.compact, mo.sourceMap, os, err);
    out.flush();
    return written ? 0 : 1;
  }
  std::ofstream file(mo.output, std::ios::binary | std::ios::trunc);
  if (!file) {
    s.diag().report(llvm::SMLoc(), DiagId::err_cannot_write_output, {mo.output, std::strerror(errno)});
    return 1;
  }
  bool written = writeOutput(s, dumped, mo.compact, mo.sourceMap, file, err);
  file.close();
  if (!written)
    return 1;
  if (!file) {
    s.diag().report(llvm::SMLoc(), DiagId::err_cannot_write_output, {mo.output, "write failed"});
    return 1;
  }
  return 0;
}

/// `s` when it is a decimal number in uint32_t's range written as std::to_string writes it (no
/// sign, no leading zero, no suffix), else nullopt.
std::optional<uint32_t> canonicalUint32(const std::string &s) {
  if (s.empty() || s.size() > 10 || (s.size() > 1 && s[0] == '0') ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const uint64_t v = std::stoull(s);
  if (v > UINT32_MAX)
    return std::nullopt;
  return static_cast<uint32_t>(v);
}

/// toInvocation's checks, reporting through `diag`.
bool convertOptions(const MscclcOptions &mo, diag::DiagEngine &diag, CompilerInvocation &inv) {
  if (!mo.sourceMap.empty() && mo.emit != Emit::Json) {
    diag.report(llvm::SMLoc(), DiagId::err_bad_argument, {"--source-map", "only with --emit=json"});
    return false;
  }
  inv.input = mo.input;
  inv.skipUnknownDefines = mo.skipUnknownDefines;
  inv.includeDirs = mo.includeDirs;
  inv.stdlibDir = mo.stdlibDir;
  inv.emit = mo.emit;
  inv.planFormat = mo.planFormat;
  inv.target = mo.target;
  inv.printAfter = mo.printAfter;
  inv.noFusion = mo.noFusion;
  inv.noAutoSync = mo.noAutoSync;
  inv.noVerify = mo.noVerify;
  inv.verifyIrEach = mo.verifyIrEach;
  inv.sourceMap = !mo.sourceMap.empty();
  inv.maxLoopIterations = mo.maxLoopIterations;
  inv.maxCallDepth = mo.maxCallDepth;
  inv.maxPlanSize = mo.maxPlanSize;
  if (!checkInvocation(inv, diag))
    return false;
  if (!splitDefines(mo.defines, inv.defines, diag.stream()))
    return false;
  // --instances=N in decimal is typed; any other text goes to the elaborator as written (ahead
  // of --protocol, as given), which reports it as today: after the program loaded and checked.
  const std::optional<uint32_t> instances = canonicalUint32(mo.instances);
  const bool instancesAsWritten = !instances && !mo.instances.empty();
  inv.instances = instances;
  if (instancesAsWritten)
    inv.optionOverrides.push_back({"instances", mo.instances});
  if (!mo.protocol.empty()) {
    if (instancesAsWritten)
      inv.optionOverrides.push_back({"protocol", mo.protocol});
    else
      inv.protocol = mo.protocol;
  }
  for (auto &ov : mo.optionOverrides) {
    std::pair<std::string, std::string> kv;
    if (!splitAssignment(ov, kv)) {
      diag.report(llvm::SMLoc(), DiagId::err_bad_option_override, {ov, "expected NAME=VALUE"});
      return false;
    }
    inv.optionOverrides.push_back(kv);
  }
  return true;
}

} // namespace

std::vector<std::string> stdlibProgramNames(const std::string &stdlibDir) {
  std::vector<std::string> names;
  for (auto &row : scanStdlib(stdlibDir))
    names.push_back(row.first);
  return names;
}

bool splitDefines(const std::vector<std::string> &args, std::vector<std::pair<std::string, std::string>> &defines,
                  llvm::raw_ostream &err) {
  llvm::SourceMgr sm; // the error has no location
  diag::DiagEngine diag(sm, err);
  for (auto &d : args) {
    std::pair<std::string, std::string> kv;
    if (!splitAssignment(d, kv)) {
      diag.report(llvm::SMLoc(), DiagId::err_bad_define, {d});
      return false;
    }
    defines.push_back(kv);
  }
  return true;
}

std::optional<CompilerInvocation> toInvocation(const MscclcOptions &mo, llvm::raw_ostream &err) {
  llvm::SourceMgr sm; // the errors have no location
  diag::DiagEngine diag(sm, err);
  CompilerInvocation inv;
  if (!convertOptions(mo, diag, inv))
    return std::nullopt;
  return inv;
}

int parseMscclcCommandLine(int argc, const char *const *argv, MscclcOptions &options, llvm::raw_ostream &out,
                           llvm::raw_ostream &err) {
  // --version is ours (llvm::cl's prints LLVM's version and exits the process).
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a(argv[i]);
    if (a == "--")
      break;
    if (a == "--version" || a == "-version") {
      out << "mscclc (msccl) " << MSCCL_VERSION << "\n";
      return 0;
    }
  }
  CommandLine cmd;
  cl::ResetAllOptionOccurrences();
  cl::HideUnrelatedOptions(cat);
  if (!cl::ParseCommandLineOptions(argc, argv, "mscclc: compile .msccl collective algorithms to MSCCL++ JSON plans\n",
                                   &err))
    return 1;
  options = MscclcOptions();
  cmd.copyTo(options);
  return -1;
}


int runMscclc(const MscclcOptions &mo, std::istream &in, llvm::raw_ostream &out, llvm::raw_ostream &err) {
  std::optional<CompilerInvocation> inv = toInvocation(mo, err);
  if (!inv)
    return 1;
  llvm::SourceMgr sm; // for what is reported before a session (location-less)
  diag::DiagEngine diag(sm, err);
  if (mo.listStdlib)
    return listStdlibPrograms(inv->stdlibDirOrDefault(), out, diag);
  if (mo.input.empty()) {
    err << "mscclc: error: no input file (use `-` for stdin; see --help)\n";
    return 1;
  }
  std::unique_ptr<llvm::MemoryBuffer> buf = readInput(*inv, in, diag);
  if (!buf)
    return 1;

  if (mo.verifyDiagnostics) {
    bool ok = verifyDiagnostics(buf->getBufferIdentifier().str(), buf->getBuffer().str(),
                                [&](diag::DiagEngine &d, unsigned id) {
                                  std::string printed, dumped;
                                  llvm::raw_string_ostream sink(printed);
                                  CompilerSession s(*inv, d, mscclcSession(sink, dumped));
                                  s.setMainBuffer(id);
                                  s.run(lastPhase(inv->emit));
                                },
                                err);
    return ok ? 0 : 1;
  }

  std::string dumped;
  CompilerSession s(std::move(*inv), err, mscclcSession(err, dumped));
  s.setMainBuffer(std::move(buf));
  int rc = 1; // stays 1 unless the compile succeeds and the output is written
  if (!withinMemory(mo.input, err, [&] {
        if (s.run(lastPhase(s.invocation().emit)))
          rc = emitOutput(s, dumped, mo, out, err);
      }))
    return 1;
  return rc;
}

int runMscclc(int argc, const char *const *argv, std::istream &in, llvm::raw_ostream &out, llvm::raw_ostream &err) {
  MscclcOptions options;
  int rc = parseMscclcCommandLine(argc, argv, options, out, err);
  if (rc >= 0)
    return rc;
  return runMscclc(options, in, out, err);
}

std::optional<plan::Plan> compilePlan(const CompilerInvocation &inv, std::istream &in, llvm::raw_ostream &err) {
  SessionOptions so;
  so.printStream = &err;
  CompilerSession s(inv, err, so);
  if (!checkInvocation(inv, s.diag()) || !s.readInput(in))
    return std::nullopt;
  bool ok = false;
  if (!withinMemory(inv.input, err, [&] { ok = s.run(Phase::Plan); }) || !ok || !s.plan())
    return std::nullopt;
  return s.takePlan();
}

std::optional<std::vector<std::pair<std::string, std::string>>>
compilationSources(const CompilerInvocation &inv, std::istream &in, llvm::raw_ostream &err) {
  CompilerSession s(inv, err);
  if (!checkInvocation(inv, s.diag()) || !s.readInput(in) || !s.run(Phase::Load))
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> files;
  auto add = [&](unsigned buffer) {
    const llvm::MemoryBuffer *b = s.sourceMgr().getMemoryBuffer(buffer);
    files.emplace_back(b->getBufferIdentifier().str(), b->getBuffer().str());
  };
  add(s.mainBuffer());
  for (const ast::Module *m : s.unit().modules)
    if (m->bufferId != s.mainBuffer())
      add(m->bufferId);
  return files;
}

} // namespace msccl::driver
