//===- Style.h - Front-end styles: other builtins over the same language -------------------===//
//
// A program picks its style with the `style` option. Today's DSL ("current") is the
// elaborator's own; any other style plugs in here and is given to the elaborator by its caller
// (ElabOptions::styles; the compiler session passes the mscclpplang style of
// compiler/lib/legacy, MSCCLPPLang's chunk-oriented builtins). For a program of a plugged-in
// style the elaborator:
//   1. asks the style for a StyleProgram (Style::begin) with the program's options;
//   2. runs the body, handing the builtins Builtins.def declares for the style (the functions
//      `chunk`, `rank`, `Check`; the methods and attributes of its classes, ChunkRef and RankRef)
//      to Style::call / method / attr, whose values carry the style's handles as StyleHandle;
//   3. returns the StyleProgram (ElabResult::style) instead of an ir::Program.
// The compiler session then compiles it with StyleProgram::compile, which runs the style's own
// passes and gives the plan in today's model (plan::Plan), plus the text of the format the
// style writes natively (MSCCLPPLang's plan format, for `mscclc --plan-format=legacy`).
// Errors: a style reports a bad call by throwing StyleError (the argument at fault, or the call
// itself); the elaborator turns it into err_dsl at that argument, with the loop and call notes.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/elab/Builtins.h"
#include "msccl/elab/Value.h"
#include "msccl/ir/Dsl.h"
#include "msccl/plan/Plan.h"

#include <llvm/ADT/ArrayRef.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace msccl::elab {

/// A style's refusal of a call: `message`, at argument `arg` (an index into the call's
/// arguments) or, for kNoArg, at the call.
struct StyleError : std::runtime_error {
  static constexpr int kNoArg = -1;
  int arg;
  explicit StyleError(std::string message, int arg = kNoArg) : std::runtime_error(std::move(message)), arg(arg) {}
};

/// What the options of a program of a style say (the program's options, with the command
/// line's overrides applied): today's ProgramOptions, and the raw ReplicationPolicy member
/// (styles may have members today's DSL refuses) with whether the program set it.
struct StyleOptions {
  ir::ProgramOptions program;
  int64_t replicationPolicy = 0;
  bool replicationPolicySet = false;
};

/// A style's compiled program: the plan in today's model, or its text in the style's own
/// format (when asked for that).
struct StylePlan {
  std::optional<plan::Plan> plan;
  std::string nativeText;
};

/// The program a style builds while the body runs.
class StyleProgram {
public:
  virtual ~StyleProgram() = default;
  /// Runs the style's passes. Throws StyleError (the style's first failure; kNoArg) and
  /// plan::PlanError when its plan does not convert to today's model. `nativeText`: give the
  /// plan as text in the style's own format instead (StylePlan::nativeText; no conversion).
  virtual StylePlan compile(bool nativeText) = 0;
};

/// The arguments of one call of a style's builtin, in parameter order (defaults filled in).
using StyleArgs = llvm::ArrayRef<Value>;

/// A front-end style: its name and its builtins.
class Style {
public:
  virtual ~Style() = default;
  /// The `style` option's value that selects it ("mscclpplang").
  virtual std::string_view name() const = 0;
  /// A program with `options`. Throws StyleError for options the style refuses.
  virtual std::unique_ptr<StyleProgram> begin(const StyleOptions &options) const = 0;
  /// Builtin function `fn` of the style. Throws StyleError.
  virtual Value call(StyleProgram &p, BuiltinFnId fn, StyleArgs args) const = 0;
  /// Method `m` of one of the style's classes on `self` (a DslObj holding a StyleHandle).
  virtual Value method(StyleProgram &p, MethodId m, const Value &self, StyleArgs args) const = 0;
  /// Attribute `a` of `self`.
  virtual Value attr(AttrId a, const Value &self) const = 0;
};

} // namespace msccl::elab
