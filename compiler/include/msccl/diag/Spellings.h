//===- Spellings.h - Look up the design documents' spellings (Spellings.def) ------------===//
//
// The old -> new spelling table as data, for the checks phase, the parser's error listener and
// the documentation test. A lookup returns the row for an old spelling of a given kind, or null.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace msccl::diag {

struct Spelling {
  enum class Kind { Name, Attr, Method, Keyword, Syntax, Same };
  enum class Action { Alias, Error, Same };
  Kind kind;
  std::string_view old;   ///< "Channel", "Buffer.scratch", "relaxedSignal", "sync", ...
  Action action;
  std::string_view today; ///< Alias: the method or `Enum.member` it compiles as; else empty
  std::string_view extra; ///< Method alias: a keyword argument set to true; else empty
  std::string_view fixIt; ///< today's spelling, as shown to the user (markdown code in backticks)
};

/// Every row of Spellings.def, in file order.
const std::vector<Spelling> &spellings();

/// The row of kind `kind` for `old`, or nullptr.
const Spelling *findSpelling(Spelling::Kind kind, std::string_view old);

/// "`old`" as the diagnostics quote it: `Channel`, `Buffer.scratch`, `.relaxedSignal(...)`,
/// `sync = ...`, `with ... as NAME`.
std::string quoteOld(const Spelling &s);

} // namespace msccl::diag
