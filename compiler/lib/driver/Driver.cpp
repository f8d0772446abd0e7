//===- Driver.cpp - The mscclc command line ---------------------------------------------===//
//
// Consumes argv; produces the emitted text (AST dump, IR dump or JSON plan) or diagnostics.
// Flow: parse (frontend) -> check (elab/Check.h) -> elaborate (elab/Elaborate.h) ->
// passes (passes/Pipeline.h) -> lower (backend/Lower.h) -> JSON (plan/PlanJson.h).
// A JSON compilation streams: backend/StreamCompile.h runs the passes, lowers and writes rank by
// rank on the elaborated IR (no copy); --print-after prints each rank as it streams. With
// verification (the default) the same calls build the plan in memory, which is verified first.
// The command line is parsed into MscclcOptions at entry (CommandLine below: llvm::cl options
// that are registered for one parse and removed after it); everything else reads the struct.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/Driver.h"
#include "msccl/driver/ChannelPairing.h"
#include "msccl/driver/ReplicationRanges.h"

#include "msccl/backend/Lower.h"
#include "msccl/backend/StreamCompile.h"
#include "msccl/driver/Verify.h"
#include "msccl/driver/VerifyPlan.h"
#include "msccl/elab/Check.h"
#include "msccl/elab/Elaborate.h"
#include "msccl/elab/Loader.h"
#include "msccl/frontend/AstDump.h"
#include "msccl/ir/IR.h"
#include "msccl/legacy/LegacyPasses.h"
#include "msccl/passes/Pipeline.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/Version.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/thread.h>

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

/// The largest --max-call-depth accepted (each level may need a few KiB of C++ stack).
constexpr unsigned kMaxCallDepthLimit = 100000;

/// What the phases need, derived from MscclcOptions (checked by makeOptions).
struct Options {
  elab::SearchPath path;
  elab::ElabOptions elab;
  std::vector<std::string> printAfter;
  Emit emit = Emit::Json;
  PlanFormat planFormat = PlanFormat::Current;
  bool noFusion = false, noAutoSync = false, noVerify = false, verifyIrEach = false;
  bool deviceLimits = true; ///< Target::Mscclpp
  std::string sourceMapFile;
};

/// What a compilation produces: text (AST/IR dumps), a plan (verified, or asked for in memory),
/// or an elaborated program validated by backend::prepareStream, compiled and streamed out by
/// writeOutput.
struct Output {
  std::string text;
  std::optional<plan::Plan> plan;
  std::unique_ptr<ir::Program> program;
  passes::PipelineOptions pipeline;
  /// Plan op path -> .msccl call (--source-map), filled while the plan is lowered.
  std::unique_ptr<backend::SourceMap> sourceMap;
};

/// Reports an error of the passes or lowering at the .msccl call of the op it is about (with the
/// loop values that led there, as elaboration errors have), or at `fallback` (the program) when
/// the error names no op.
void reportPassError(diag::DiagEngine &diag, const ir::SourceTable &sources, const ir::DslError &e, llvm::SMLoc fallback) {
  std::optional<ir::OpSource> src = sources.resolve(e.source());
  if (!src || !src->loc.isValid()) {
    diag.report(fallback, DiagId::err_pass, {e.what()});
    return;
  }
  diag.report(src->loc, DiagId::err_pass, {e.what()});
  reportSourceFrames(diag, *src);
  llvm::SMLoc related = sources.loc(e.related());
  if (related.isValid())
    diag.report(related, DiagId::note_pass_related);
}

/// The passes of an mscclpplang-style program (msccl/legacy/LegacyPasses.h) and its plan in
/// the asked format.
bool compileLegacyProgram(diag::DiagEngine &diag, llvm::SMLoc loc, legacy::Program &program, const Options &o,
                          Output &output, bool wantPlan) {
  if (o.emit == Emit::Ir) {
    diag.report(loc, DiagId::err_pass, {"`--emit=ir`: a program in the mscclpplang style has no DSL IR"});
    return false;
  }
  try {
    std::string text = legacy::compileLegacy(program);
    if (o.planFormat == PlanFormat::Legacy && !wantPlan) {
      output.text = std::move(text);
      return true;
    }
    // Today's format: the one plan reader converts the legacy plan (plan/LegacyPlan.h), so this
    // plan is exactly what `plan-convert` makes of the legacy one.
    output.plan = plan::parsePlan(text);
  } catch (const legacy::LegacyError &e) {
    diag.report(loc, DiagId::err_pass, {e.what()});
    return false;
  } catch (const plan::PlanError &e) {
    diag.report(loc, DiagId::err_pass, {std::string("the legacy plan does not convert to today's format: ") + e.what()});
    return false;
  }
  if (!o.noVerify && !verifyCompiledPlan(diag, loc, *output.plan, nullptr, o.deviceLimits))
    return false;
  return true;
}

/// Notes for a program whose plan failed verification, from its elaborated IR (computed only
/// then, so a compile that verifies pays nothing): ranges that interleaved replication splits
/// inconsistently (ReplicationRanges.h), and channels whose pairing crossed (ChannelPairing.h).
void explainFailedVerification(diag::DiagEngine &diag, const ir::ProgramIR &ir, llvm::SMLoc fallback) {
  const ir::SourceTable &st = ir.sources;
  if (ir.options.instances > 1 && ir.options.replicationPolicy == ir::ReplicationPolicy::Interleaved)
    if (std::optional<RangeConflict> conflict = findReplicationConflict(ir)) {
      const llvm::SMLoc a = st.loc(conflict->sourceA), b = st.loc(conflict->sourceB);
      const unsigned lineA = a.isValid() ? diag.sourceMgr().getLineAndColumn(a).first : 0;
      diag.report(b.isValid() ? b : fallback, DiagId::note_replication_ranges,
                  {std::to_string(ir.options.instances), conflict->rangeB, conflict->rangeA, std::to_string(lineA),
                   conflict->buffer});
    }
  if (std::optional<CrossedChannel> crossed = findCrossedChannel(ir)) {
    const llvm::SMLoc here = st.loc(crossed->sourceHere), peer = st.loc(crossed->sourcePeer);
    diag.report(here.isValid() ? here : fallback, DiagId::note_channel_pairing, {crossed->text});
    if (peer.isValid())
      diag.report(peer, DiagId::note_channel_partner, {});
  }
}

/// parse -> check -> elaborate -> (passes -> lower, with --print-after). The AST is dropped when
/// this returns; only the program or the plan is kept. Returns false on error (reported).
bool compileBuffer(diag::DiagEngine &diag, unsigned buffer, const Options &o, Output &output, llvm::raw_ostream &err,
                   bool wantPlan = false) {
  std::string &outText = output.text;
  ast::AstContext ctx;
  elab::Unit unit;
  if (!elab::loadUnit(ctx, diag, buffer, o.path, unit))
    return false;
  if (!elab::checkUnit(unit, diag))
    return false;
  if (o.emit == Emit::Ast) {
    llvm::raw_string_ostream os(outText);
    for (ast::Module *m : unit.modules)
      frontend::dumpAst(ctx, *m, diag.sourceMgr(), os);
    return true;
  }
  elab::ElabOptions eo = o.elab;
  eo.printStream = &err;
  elab::ElabResult r = elab::elaborate(unit, diag, eo);
  if (r.legacy)
    return compileLegacyProgram(diag, unit.program->loc, *r.legacy, o, output, wantPlan);
  if (!r.program)
    return false;
  if (o.planFormat == PlanFormat::Legacy) {
    diag.report(unit.program->loc, DiagId::err_pass,
                {"`--plan-format=legacy` writes programs in the mscclpplang style (`style = \"mscclpplang\"`) only"});
    return false;
  }
  if (o.emit == Emit::Ir) {
    outText = ir::printIR(r.program->ir());
    return true;
  }
  passes::PipelineOptions po;
  po.skipFusion = o.noFusion;
  po.skipAutoSync = o.noAutoSync;
  po.verifyEach = o.verifyIrEach;
  if (!o.printAfter.empty()) // each rank is printed as it streams
    po.afterPass = [printAfter = o.printAfter, &err](std::string_view pass, const ir::ProgramIR &irp, const ir::GpuIR *gpu) {
      for (auto &p : printAfter)
        if (p == "all" || p == pass) {
          err << "// ----- IR after " << std::string(pass);
          if (gpu) {
            err << " (rank " << gpu->id << ") -----\n" << ir::printGpuIR(*gpu);
            if (pass == "replication" && irp.options.instances != 1) // applied while lowering
              err << "  (each tb replicated x" << irp.options.instances << " by lowering)\n";
          } else
            err << " -----\n" << ir::printIR(irp);
          break;
        }
    };
  // The map places --source-map's entries and the verifier's findings at the .msccl calls.
  if (!o.sourceMapFile.empty() || !o.noVerify)
    output.sourceMap = std::make_unique<backend::SourceMap>(&diag.sourceMgr());
  try {
    // AllToAllV sizes are derived over the whole plan (deriveVariableSizes): no streaming.
    if (!wantPlan && o.noVerify && !r.program->ir().options.collective.variable) {
      backend::prepareStream(r.program->ir(), po);
      output.pipeline = po;
      output.program = std::move(r.program);
    } else {
      output.plan = backend::compile(*r.program, po, output.sourceMap.get());
    }
  } catch (const ir::DslError &e) {
    reportPassError(diag, r.program->ir().sources, e, unit.program->loc);
    return false;
  } catch (const plan::PlanError &e) {
    diag.report(unit.program->loc, DiagId::err_pass, {e.what()});
    return false;
  } catch (const std::logic_error &e) { // the IR verifier (--verify-ir-each): a compiler bug
    diag.report(unit.program->loc, DiagId::err_pass, {e.what()});
    return false;
  }
  if (output.plan && output.plan->variableSizes &&
      !deriveVariableSizes(diag, unit.program->loc, *output.plan, output.sourceMap.get()))
    return false;
  if (!o.noVerify &&
      !verifyCompiledPlan(diag, unit.program->loc, *output.plan, output.sourceMap.get(), o.deviceLimits)) {
    explainFailedVerification(diag, r.program->ir(), unit.program->loc); // compile() left the IR as elaborated
    return false;
  }
  return true;
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

/// Writes the output; false (reported on `err`) if streaming the plan failed, which
/// backend::prepareStream rules out for every error it knows of.
bool writeOutput(Output &output, bool compact, const std::string &sourceMapFile, std::ostream &os,
                 llvm::raw_ostream &err) {
  try {
    if (output.program)
      backend::streamPlan(output.program->ir(), output.pipeline, os, compact ? -1 : 2, output.sourceMap.get());
    else if (output.plan)
      plan::writePlan(os, *output.plan, compact ? -1 : 2);
    else
      os << output.text;
  } catch (const std::exception &e) {
    os.flush();
    err << "mscclc: error: " << e.what() << "\n";
    return false;
  }
  os.flush();
  if (output.sourceMap && !sourceMapFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream map(sourceMapFile, ec);
    if (ec) {
      err << "mscclc: error: cannot write source map '" << sourceMapFile << "': " << ec.message() << "\n";
      return false;
    }
    output.sourceMap->writeJson(map);
  }
  return true;
}

/// Runs `fn` on a thread whose stack fits --max-call-depth nested fn calls (the interpreter and
/// the ANTLR parser recurse on the C++ stack): 16 MiB plus 4 KiB per allowed call level.
void onBigStack(unsigned maxDepth, const std::function<void()> &fn) {
  unsigned stack = 16u << 20;
  stack += static_cast<unsigned>(std::min<uint64_t>(maxDepth, kMaxCallDepthLimit) * 4096u);
  std::exception_ptr failure; // an exception of fn (std::bad_alloc above all) reaches the caller
  llvm::thread t(llvm::Optional<unsigned>(stack), [&fn, &failure] {
    try {
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  t.join();
  if (failure)
    std::rethrow_exception(failure);
}

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

/// Checks the options and derives what the phases need. False after reporting an error.
bool makeOptions(const MscclcOptions &mo, diag::DiagEngine &diag, Options &o) {
  o.path.includeDirs = mo.includeDirs;
  o.path.stdlibDir = mo.stdlibDir.empty() ? elab::defaultStdlibDir() : mo.stdlibDir;
  o.printAfter = mo.printAfter;
  o.emit = mo.emit;
  o.planFormat = mo.planFormat;
  o.noFusion = mo.noFusion;
  o.noAutoSync = mo.noAutoSync;
  o.noVerify = mo.noVerify;
  o.deviceLimits = mo.target == Target::Mscclpp;
  o.verifyIrEach = mo.verifyIrEach;
  o.sourceMapFile = mo.sourceMap;
  if (!mo.sourceMap.empty() && mo.emit != Emit::Json) {
    diag.report(llvm::SMLoc(), DiagId::err_bad_argument, {"--source-map", "only with --emit=json"});
    return false;
  }
  for (auto &p : o.printAfter)
    if (p != "all" && !passes::isPassName(p)) {
      std::vector<std::string> names{"all"};
      for (auto n : passes::passNames())
        names.emplace_back(n);
      diag.report(llvm::SMLoc(), DiagId::err_bad_argument,
                  {"--print-after=" + p, "unknown pass" + diag::didYouMean(p, names)});
      return false;
    }
  if (mo.maxCallDepth > kMaxCallDepthLimit) {
    diag.report(llvm::SMLoc(), DiagId::err_bad_argument,
                {"--max-call-depth=" + std::to_string(mo.maxCallDepth), "at most " + std::to_string(kMaxCallDepthLimit)});
    return false;
  }
  o.elab.maxLoopIterations = mo.maxLoopIterations;
  o.elab.maxCallDepth = mo.maxCallDepth;
  o.elab.maxPlanSize = mo.maxPlanSize;
  o.elab.skipUnknownDefines = mo.skipUnknownDefines;
  for (auto &d : mo.defines) {
    std::pair<std::string, std::string> kv;
    if (!splitAssignment(d, kv)) {
      diag.report(llvm::SMLoc(), DiagId::err_bad_define, {d});
      return false;
    }
    o.elab.defines.push_back(kv);
  }
  if (!mo.instances.empty())
    o.elab.optionOverrides.push_back({"instances", mo.instances});
  if (!mo.protocol.empty())
    o.elab.optionOverrides.push_back({"protocol", mo.protocol});
  for (auto &ov : mo.optionOverrides) {
    std::pair<std::string, std::string> kv;
    if (!splitAssignment(ov, kv)) {
      diag.report(llvm::SMLoc(), DiagId::err_bad_option_override, {ov, "expected NAME=VALUE"});
      return false;
    }
    o.elab.optionOverrides.push_back(kv);
  }
  return true;
}

/// The input text: stdin for `-`, stdlib/NAME.msccl for `stdlib:NAME` (an unknown NAME is
/// reported with the closest stdlib name), else the file. Null after reporting an error.
std::unique_ptr<llvm::MemoryBuffer> loadInput(const std::string &name, const std::string &stdlibDir, std::istream &in,
                                              diag::DiagEngine &diag) {
  if (name == "-") {
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return llvm::MemoryBuffer::getMemBufferCopy(text, "<stdin>");
  }
  std::string file = name;
  if (llvm::StringRef(name).startswith("stdlib:")) {
    std::string prog = name.substr(7);
    llvm::SmallString<256> p(stdlibDir);
    llvm::sys::path::append(p, prog + ".msccl");
    file = std::string(p);
    if (!llvm::sys::fs::is_regular_file(file)) {
      diag.report(llvm::SMLoc(), DiagId::err_unknown_stdlib,
                  {prog, file, diag::didYouMean(prog, stdlibProgramNames(stdlibDir))});
      return nullptr;
    }
  }
  return elab::readSourceFile(file, diag, llvm::SMLoc());
}

/// Writes the compiled output to `out` or the -o file (created only now, after success).
int emitOutput(Output &output, const MscclcOptions &mo, diag::DiagEngine &diag, llvm::raw_ostream &out,
               llvm::raw_ostream &err) {
  // The plan is streamed (never built as one string).
  if (mo.output.empty() || mo.output == "-") {
    RawStreamBuf buf(out);
    std::ostream os(&buf);
    bool written = writeOutput(output, mo.compact, mo.sourceMap, os, err);
    out.flush();
    return written ? 0 : 1;
  }
  std::ofstream file(mo.output, std::ios::binary | std::ios::trunc);
  if (!file) {
    diag.report(llvm::SMLoc(), DiagId::err_cannot_write_output, {mo.output, std::strerror(errno)});
    return 1;
  }
  bool written = writeOutput(output, mo.compact, mo.sourceMap, file, err);
  file.close();
  if (!written)
    return 1;
  if (!file) {
    diag.report(llvm::SMLoc(), DiagId::err_cannot_write_output, {mo.output, "write failed"});
    return 1;
  }
  return 0;
}

} // namespace

std::vector<std::string> stdlibProgramNames(const std::string &stdlibDir) {
  std::vector<std::string> names;
  for (auto &row : scanStdlib(stdlibDir))
    names.push_back(row.first);
  return names;
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
  llvm::SourceMgr sm;
  diag::DiagEngine diag(sm, err);
  Options o;
  if (!makeOptions(mo, diag, o))
    return 1;
  if (mo.listStdlib)
    return listStdlibPrograms(o.path.stdlibDir, out, diag);
  if (mo.input.empty()) {
    err << "mscclc: error: no input file (use `-` for stdin; see --help)\n";
    return 1;
  }
  std::unique_ptr<llvm::MemoryBuffer> buf = loadInput(mo.input, o.path.stdlibDir, in, diag);
  if (!buf)
    return 1;

  if (mo.verifyDiagnostics) {
    bool ok = verifyDiagnostics(buf->getBufferIdentifier().str(), buf->getBuffer().str(),
                                [&](diag::DiagEngine &d, unsigned id) {
                                  Output ignored;
                                  std::string printed;
                                  llvm::raw_string_ostream sink(printed);
                                  onBigStack(mo.maxCallDepth, [&] { compileBuffer(d, id, o, ignored, sink); });
                                },
                                err);
    return ok ? 0 : 1;
  }

  unsigned id = sm.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
  Output output;
  bool ok = false;
  int rc = 1; // stays 1 unless the compile succeeds and the output is written
  if (!withinMemory(mo.input, err, [&] {
        onBigStack(mo.maxCallDepth, [&] { ok = compileBuffer(diag, id, o, output, err); });
        if (ok)
          rc = emitOutput(output, mo, diag, out, err);
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

std::optional<plan::Plan> compilePlan(const MscclcOptions &mo, std::istream &in, llvm::raw_ostream &err) {
  llvm::SourceMgr sm;
  diag::DiagEngine diag(sm, err);
  Options o;
  if (!makeOptions(mo, diag, o))
    return std::nullopt;
  o.emit = Emit::Json;
  std::unique_ptr<llvm::MemoryBuffer> buf = loadInput(mo.input, o.path.stdlibDir, in, diag);
  if (!buf)
    return std::nullopt;
  unsigned id = sm.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
  Output output;
  bool ok = false;
  if (!withinMemory(mo.input, err, [&] {
        onBigStack(mo.maxCallDepth, [&] { ok = compileBuffer(diag, id, o, output, err, /*wantPlan=*/true); });
      }))
    return std::nullopt;
  if (!ok || !output.plan)
    return std::nullopt;
  return std::move(output.plan);
}

std::optional<std::vector<std::pair<std::string, std::string>>>
compilationSources(const MscclcOptions &mo, std::istream &in, llvm::raw_ostream &err) {
  llvm::SourceMgr sm;
  diag::DiagEngine diag(sm, err);
  Options o;
  if (!makeOptions(mo, diag, o))
    return std::nullopt;
  std::unique_ptr<llvm::MemoryBuffer> buf = loadInput(mo.input, o.path.stdlibDir, in, diag);
  if (!buf)
    return std::nullopt;
  unsigned id = sm.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
  ast::AstContext ctx;
  elab::Unit unit;
  bool ok = false;
  onBigStack(mo.maxCallDepth, [&] { ok = elab::loadUnit(ctx, diag, id, o.path, unit); });
  if (!ok)
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> files;
  auto add = [&](unsigned buffer) {
    const llvm::MemoryBuffer *b = sm.getMemoryBuffer(buffer);
    files.emplace_back(b->getBufferIdentifier().str(), b->getBuffer().str());
  };
  add(id);
  for (const ast::Module *m : unit.modules)
    if (m->bufferId != id)
      add(m->bufferId);
  return files;
}

} // namespace msccl::driver
