//===- Session.cpp - One compilation: the compiler's phases, written once ---------------===//
//
// Consumes a CompilerInvocation and a main file; produces what its phases make (Session.h):
// the loaded and checked unit, the elaborated program, the legacy plan text or the plan, each
// kept by the session, and every error reported through the session's DiagEngine.
// The phase order is written here and nowhere else: runPhases (Load -> Check -> Elaborate ->
// Passes | Plan). The passes run once: Phase::Plan runs them while lowering (backend::compile),
// so Passes runs on its own only when it is the last phase asked for, when the plan is left to
// be streamed (backend::prepareStream checks what streaming would find), or for an
// mscclpplang-style program, whose passes make the legacy plan's text.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/Session.h"

#include "msccl/backend/Lower.h"
#include "msccl/backend/StreamCompile.h"
#include "msccl/driver/ChannelPairing.h"
#include "msccl/driver/Driver.h"
#include "msccl/driver/ReplicationRanges.h"
#include "msccl/driver/VerifyPlan.h"
#include "msccl/elab/Check.h"
#include "msccl/ir/IR.h"
#include "msccl/legacy/MscclpplangStyle.h"
#include "msccl/plan/PlanJson.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/thread.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <iterator>

namespace msccl::driver {

using diag::DiagId;

namespace {

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

/// Runs `step` (the passes, lowering); false after reporting what it threw: a DSL error at the
/// .msccl call of its op (reportPassError), a plan error or an IR-verifier finding
/// (--verify-ir-each, a compiler bug: std::logic_error) at the program.
bool reportingPassErrors(diag::DiagEngine &diag, const ir::SourceTable &sources, llvm::SMLoc program,
                         const std::function<void()> &step) {
  try {
    step();
  } catch (const ir::DslError &e) {
    reportPassError(diag, sources, e, program);
    return false;
  } catch (const plan::PlanError &e) {
    diag.report(program, DiagId::err_pass, {e.what()});
    return false;
  } catch (const std::logic_error &e) {
    diag.report(program, DiagId::err_pass, {e.what()});
    return false;
  }
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

} // namespace

std::string CompilerInvocation::stdlibDirOrDefault() const {
  return stdlibDir.empty() ? elab::defaultStdlibDir() : stdlibDir;
}

bool checkInvocation(const CompilerInvocation &inv, diag::DiagEngine &diag) {
  for (auto &p : inv.printAfter)
    if (p != "all" && !passes::isPassName(p)) {
      std::vector<std::string> names{"all"};
      for (auto n : passes::passNames())
        names.emplace_back(n);
      diag.report(llvm::SMLoc(), DiagId::err_bad_argument,
                  {"--print-after=" + p, "unknown pass" + diag::didYouMean(p, names)});
      return false;
    }
  if (inv.maxCallDepth > kMaxCallDepthLimit) {
    diag.report(llvm::SMLoc(), DiagId::err_bad_argument,
                {"--max-call-depth=" + std::to_string(inv.maxCallDepth), "at most " + std::to_string(kMaxCallDepthLimit)});
    return false;
  }
  return true;
}

std::unique_ptr<llvm::MemoryBuffer> readInput(const CompilerInvocation &inv, std::istream &in,
                                              diag::DiagEngine &diag) {
  const std::string &name = inv.input;
  if (name == "-") {
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return llvm::MemoryBuffer::getMemBufferCopy(text, "<stdin>");
  }
  std::string file = name;
  if (llvm::StringRef(name).startswith("stdlib:")) {
    const std::string stdlibDir = inv.stdlibDirOrDefault();
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

void onBigStack(unsigned maxCallDepth, const std::function<void()> &fn) {
  unsigned stack = 16u << 20;
  stack += static_cast<unsigned>(std::min<uint64_t>(maxCallDepth, kMaxCallDepthLimit) * 4096u);
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

// ---- CompilerSession -----------------------------------------------------------------------
CompilerSession::CompilerSession(CompilerInvocation invocation, llvm::raw_ostream &diagOut, SessionOptions options)
    : inv_(std::move(invocation)), options_(std::move(options)), ownSm_(std::make_unique<llvm::SourceMgr>()),
      ownDiag_(std::make_unique<diag::DiagEngine>(*ownSm_, diagOut, options_.tool)), diag_(ownDiag_.get()) {
  diag_->setCapture(options_.captureDiagnostics);
}

CompilerSession::CompilerSession(CompilerInvocation invocation, diag::DiagEngine &diag, SessionOptions options)
    : inv_(std::move(invocation)), options_(std::move(options)), diag_(&diag) {}

CompilerSession::~CompilerSession() = default;

bool CompilerSession::readInput(std::istream &in) {
  std::unique_ptr<llvm::MemoryBuffer> buf = driver::readInput(inv_, in, *diag_);
  if (!buf)
    return false;
  setMainBuffer(std::move(buf));
  return true;
}

unsigned CompilerSession::setMainBuffer(std::unique_ptr<llvm::MemoryBuffer> text) {
  mainBuffer_ = sourceMgr().AddNewSourceBuffer(std::move(text), llvm::SMLoc());
  return mainBuffer_;
}

bool CompilerSession::run(Phase upTo) {
  if (!checkInvocation(inv_, *diag_))
    return false;
  bool ok = false;
  onBigStack(inv_.maxCallDepth, [&] { ok = runPhases(upTo); });
  return ok;
}

/// The phase sequence: the one place it is written.
bool CompilerSession::runPhases(Phase upTo) {
  elab::SearchPath path;
  path.includeDirs = inv_.includeDirs;
  path.stdlibDir = inv_.stdlibDirOrDefault();
  path.overlay = inv_.overlay;
  if (!elab::loadUnit(ctx_, *diag_, mainBuffer_, path, unit_) || !after(Phase::Load))
    return false;
  if (upTo == Phase::Load)
    return true;
  if (!elab::checkUnit(unit_, *diag_) || !after(Phase::Check))
    return false;
  if (upTo == Phase::Check)
    return true;
  if (!elaboratePhase() || !after(Phase::Elaborate))
    return false;
  if (upTo == Phase::Elaborate)
    return true;
  makePipeline();
  // The plan of an unverified program without variable sizes (AllToAllV's are derived over the
  // whole plan) is left to be streamed when it is for writing: the passes are only checked.
  streaming_ = upTo == Phase::Plan && options_.planForWriting && program_ && inv_.noVerify &&
               !program_->ir().options.collective.variable;
  // The map places --source-map's entries and the verifier's findings at the .msccl calls.
  if (program_ && upTo == Phase::Plan && (inv_.sourceMap || !inv_.noVerify))
    sourceMap_ = std::make_unique<backend::SourceMap>(&sourceMgr());
  if (upTo == Phase::Passes || streaming_ || style_) {
    if (!passesPhase() || !after(Phase::Passes))
      return false;
    if (upTo == Phase::Passes || streaming_)
      return true;
  }
  return (style_ ? stylePlanPhase() : planPhase()) && after(Phase::Plan);
}

bool CompilerSession::elaboratePhase() {
  elab::ElabOptions eo;
  eo.defines = inv_.defines;
  eo.skipUnknownDefines = inv_.skipUnknownDefines;
  if (inv_.instances)
    eo.optionOverrides.push_back({"instances", std::to_string(*inv_.instances)});
  if (inv_.protocol)
    eo.optionOverrides.push_back({"protocol", *inv_.protocol});
  eo.optionOverrides.insert(eo.optionOverrides.end(), inv_.optionOverrides.begin(), inv_.optionOverrides.end());
  eo.maxLoopIterations = inv_.maxLoopIterations;
  eo.maxCallDepth = inv_.maxCallDepth;
  eo.maxPlanSize = inv_.maxPlanSize;
  eo.printStream = options_.printStream;
  eo.styles = {&legacy::mscclpplangStyle()}; // the plugged-in styles
  elab::ElabResult r = elab::elaborate(unit_, *diag_, eo);
  style_ = std::move(r.style);
  program_ = std::move(r.program);
  if (style_)
    return true;
  if (!program_)
    return false;
  if (inv_.planFormat == PlanFormat::Legacy) {
    diag_->report(unit_.program->loc, DiagId::err_pass,
                  {"`--plan-format=legacy` writes programs in the mscclpplang style (`style = \"mscclpplang\"`) only"});
    return false;
  }
  return true;
}

void CompilerSession::makePipeline() {
  passes::PipelineOptions &po = pipeline_;
  po.skipFusion = inv_.noFusion;
  po.skipAutoSync = inv_.noAutoSync;
  po.verifyEach = inv_.verifyIrEach;
  if (inv_.printAfter.empty())
    return;
  llvm::raw_ostream &os = options_.printStream ? *options_.printStream : llvm::errs();
  // Streamed, each rank is printed as it is written.
  po.afterPass = [printAfter = inv_.printAfter, &os](std::string_view pass, const ir::ProgramIR &irp, const ir::GpuIR *gpu) {
    for (auto &p : printAfter)
      if (p == "all" || p == pass) {
        os << "// ----- IR after " << std::string(pass);
        if (gpu) {
          os << " (rank " << gpu->id << ") -----\n" << ir::printGpuIR(*gpu);
          if (pass == "replication" && irp.options.instances != 1) // applied while lowering
            os << "  (each tb replicated x" << irp.options.instances << " by lowering)\n";
        } else
          os << " -----\n" << ir::printIR(irp);
        break;
      }
  };
}

/// The passes' checks (backend::prepareStream), or a plugged-in style's passes (its plan).
bool CompilerSession::passesPhase() {
  const llvm::SMLoc loc = unit_.program->loc;
  if (style_) { // its passes report what the Python compiler asserts
    try {
      const bool native = inv_.planFormat == PlanFormat::Legacy && options_.planForWriting;
      elab::StylePlan sp = style_->compile(native);
      legacyText_ = std::move(sp.nativeText);
      plan_ = std::move(sp.plan);
    } catch (const elab::StyleError &e) {
      diag_->report(loc, DiagId::err_pass, {e.what()});
      return false;
    } catch (const plan::PlanError &e) {
      diag_->report(loc, DiagId::err_pass, {std::string("the legacy plan does not convert to today's format: ") + e.what()});
      return false;
    }
    return true;
  }
  return reportingPassErrors(*diag_, program_->ir().sources, loc,
                             [&] { backend::prepareStream(program_->ir(), pipeline_); });
}

/// Passes and lowering into the plan, variable sizes, then the checks and the verifier.
bool CompilerSession::planPhase() {
  const llvm::SMLoc loc = unit_.program->loc;
  if (!reportingPassErrors(*diag_, program_->ir().sources, loc,
                           [&] { plan_ = backend::compile(*program_, pipeline_, sourceMap_.get()); }))
    return false;
  if (plan_->variableSizes && !deriveVariableSizes(*diag_, loc, *plan_, sourceMap_.get()))
    return false;
  if (!inv_.noVerify && !verifyCompiledPlan(*diag_, loc, *plan_, sourceMap_.get(), inv_.target == Target::Mscclpp)) {
    explainFailedVerification(*diag_, program_->ir(), loc); // compile() left the IR as elaborated
    return false;
  }
  return true;
}

/// A plugged-in style's plan (made by its passes, converted to today's model by the style):
/// its own text as it is when written in its format, else verified.
bool CompilerSession::stylePlanPhase() {
  const llvm::SMLoc loc = unit_.program->loc;
  if (!plan_) // written as its text (legacyPlanText)
    return true;
  return inv_.noVerify || verifyCompiledPlan(*diag_, loc, *plan_, nullptr, inv_.target == Target::Mscclpp);
}

} // namespace msccl::driver
