//===- Analysis.h - One editor buffer through the compiler's phases, and what it knows ----===//
//
// Consumes: the text of one open document (and the unsaved texts of the other open documents,
// used for its imports), a search path and -D values.
// Produces: an Analysis: every diagnostic mscclc would print for that text (parse, check,
// elaborate, pass validation and any extra checks registered on the Analyzer), and an index of
// every name occurrence the checks phase resolved (what it is, where it is defined), used by the
// language server (Server.h) for hover, go to definition, references, semantic tokens and
// completion. The AST, SourceMgr and index stay alive together inside the Analysis.
// Guarantees: never throws on any text; the phases are mscclc's, run by the same
// driver::CompilerSession (Session.h), so elaboration is bounded by the same loop and depth
// limits and runs on a thread with a large stack.
// Positions: LSP positions are (line, UTF-16 code unit), 0-based; offsets are byte offsets into
// the document's text.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"
#include "msccl/driver/Session.h"
#include "msccl/elab/Builtins.h"
#include "msccl/elab/Elaborate.h"
#include "msccl/elab/Loader.h"
#include "msccl/frontend/Ast.h"

#include <llvm/Support/SourceMgr.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msccl::lsp {

/// A document's text with its line starts, converting byte offsets to LSP positions and back.
class Text {
public:
  Text() = default;
  explicit Text(std::string s);
  const std::string &str() const { return text_; }
  /// 0-based line and UTF-16 column of byte `offset` (clamped to the text).
  std::pair<unsigned, unsigned> position(size_t offset) const;
  /// Byte offset of LSP position (line, UTF-16 column), clamped to the line / text.
  size_t offset(unsigned line, unsigned col) const;
  unsigned lineCount() const { return static_cast<unsigned>(lineStarts_.size()); }

private:
  std::string text_;
  std::vector<size_t> lineStarts_;
};

/// What a resolved name occurrence refers to.
enum class SymKind : uint8_t {
  Local,       ///< let / for binder or fn parameter
  Param,       ///< top-level `param`
  Fn,          ///< user `fn`
  Program,     ///< the program's name
  BuiltinFn,   ///< range, len, ... (id: BuiltinFnId)
  Class,       ///< DSL class or value type (id: ClassId)
  Enum,        ///< SyncType, ... (id: EnumId)
  EnumMember,  ///< SyncType.before (id: EnumId, member)
  Method,      ///< obj.method (id: MethodId of the receiver's class when known, else -1)
  Attr,        ///< obj.attr (read-only attribute)
  KeywordArg,  ///< `tb = 0` in a call
  Option,      ///< a program option `collective = ...` (id: OptionId)
};

/// One name in the text: where it is, what it is, where its definition is.
struct Occurrence {
  unsigned buffer = 0;   ///< SourceMgr buffer id
  size_t offset = 0;     ///< byte offset in that buffer
  unsigned length = 0;   ///< bytes
  SymKind kind = SymKind::Local;
  bool isDefinition = false;
  int id = -1, member = -1;   ///< builtin ids (see SymKind)
  std::string name;
  /// For keyword args: the callee's description ("fn ring_ready", "Rank.copy", "MemoryChannel").
  std::string callee;
  /// The definition (user symbols): buffer + offset; defBuffer 0 when none (builtins).
  unsigned defBuffer = 0;
  size_t defOffset = 0;
  const ast::Expr *init = nullptr; ///< `let x = init` / `param x = init`: the initialiser
  std::optional<elab::ClassId> cls; ///< statically known class of the value (locals, receivers)
  /// The name is the buffer of a chunk expression `name[lo:hi]` (hover shows the chunk).
  const ast::SliceExpr *slice = nullptr;
};

/// A diagnostic with its location resolved to a buffer and byte range.
struct LocatedDiag {
  diag::Level level;
  std::string message;
  std::string kindName;   ///< e.g. "err_unknown_name"
  unsigned buffer = 0;    ///< 0: not tied to source
  size_t begin = 0, end = 0;
  std::vector<LocatedDiag> notes; ///< the notes that followed it (loop context, other end, ...)
};

/// Per-workspace configuration: -D values, -I directories, limits.
struct AnalysisOptions {
  elab::SearchPath path;
  std::vector<std::pair<std::string, std::string>> defines;
  int64_t maxLoopIterations = 10'000'000;
  unsigned maxCallDepth = 200;
  bool elaborate = true; ///< run elaboration and pass validation (not only parse + check)
};

/// An extra check run on an elaborated program (e.g. the static verifier): reports through
/// `diag` like every phase. Registered once on the Analyzer.
using ExtraCheck = std::function<void(const elab::Unit &, const ir::Program &, diag::DiagEngine &)>;

/// The result of analysing one document.
struct Analysis {
  /// Takes the compiler session that analysed the document: it owns the SourceMgr, the AST and
  /// the unit below, which the index points into.
  explicit Analysis(std::unique_ptr<driver::CompilerSession> s);
  ~Analysis();
  Analysis(const Analysis &) = delete;
  Analysis &operator=(const Analysis &) = delete;

  std::unique_ptr<driver::CompilerSession> session;
  std::string path;        ///< file path of the document (the main buffer's identifier)
  Text text;               ///< the analysed text
  llvm::SourceMgr &sm;     ///< session->sourceMgr()
  ast::AstContext &ctx;    ///< session->astContext()
  elab::Unit &unit;        ///< session->unit()
  unsigned mainBuffer = 0;
  bool parsed = false;     ///< the main module parsed (the index is meaningful)
  std::vector<LocatedDiag> diagnostics;
  std::vector<Occurrence> occurrences; ///< sorted by (buffer, offset)
  double millis = 0;       ///< wall time of the analysis

  /// The file path of a buffer (its identifier).
  std::string bufferPath(unsigned buffer) const;
  /// The occurrence at byte `offset` of the main buffer (offset may be one past its end), or null.
  const Occurrence *at(size_t offset) const;
  /// Line/column (LSP) of a byte offset in any buffer.
  std::pair<unsigned, unsigned> position(unsigned buffer, size_t offset) const;
};

class Analyzer {
public:
  explicit Analyzer(AnalysisOptions o = {}) : opts_(std::move(o)) {}
  AnalysisOptions &options() { return opts_; }
  /// Adds a check run after elaboration (the verifier: one call).
  void addCheck(ExtraCheck c) { checks_.push_back(std::move(c)); }
  /// Analyses `text` as file `path`; `overlay` maps real paths of other open documents to their
  /// unsaved text (used for imports).
  std::unique_ptr<Analysis> analyze(const std::string &path, const std::string &text,
                                    const std::map<std::string, std::string> &overlay) const;

private:
  AnalysisOptions opts_;
  std::vector<ExtraCheck> checks_;
};

/// Markdown hover text for an occurrence (signature and documentation from Builtins.def,
/// param values, the statically known chunk of a slice, ...), or "" when nothing is known.
std::string hoverText(const Analysis &a, const Occurrence &o, const AnalysisOptions &opts);

/// A completion item.
struct Completion {
  std::string label;
  int kind;              ///< LSP CompletionItemKind
  std::string detail;
  std::string doc;
  std::string insertText; ///< empty: label
};

/// Completions at byte `offset` of `text` (the current, possibly half-typed text). `last` is
/// the latest analysis whose main module parsed (may be null): it supplies user names and the
/// classes of `let` variables.
std::vector<Completion> complete(const std::string &text, size_t offset, const Analysis *last,
                                 const AnalysisOptions &opts);

/// "fn name(a, b = 1)" style signature texts of builtins (for hover and completion details).
std::string methodSignature(elab::MethodId id);
std::string classSignature(elab::ClassId id);

} // namespace msccl::lsp
