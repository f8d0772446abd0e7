//===- Parser.h - Text to AST ------------------------------------------------------------===//
//
// parseBuffer runs the ANTLR-generated lexer and parser (grammar/MscclLexer.g4,
// grammar/MscclParser.g4) over one buffer of the diagnostics engine's llvm::SourceMgr and
// builds our AST (Ast.h) with source locations. ANTLR is quarantined in Parser.cpp: nothing
// else includes generated code. Lexical and syntax errors become diagnostics
// (err_unexpected_char, err_unterminated_string, err_syntax, ...); the parser recovers and
// reports several errors per file where it can.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"
#include "msccl/frontend/Ast.h"

namespace msccl::frontend {

/// Parses buffer `bufferId` of `diag.sourceMgr()`. Returns the module (owned by `ctx`) or
/// nullptr when any lexical or syntax error was reported.
ast::Module *parseBuffer(ast::AstContext &ctx, diag::DiagEngine &diag, unsigned bufferId);

/// Parses a -D value or a command-line option value: an integer literal (with `_` and size
/// suffixes), `true`, `false`, `none` or a string (quoted or, when it is no literal, the raw
/// text). Returns false with `error` set if the text is malformed.
struct LiteralValue {
  enum Kind { Int, U64, Bool, None, Str } kind = None;
  int64_t i = 0; ///< Int and Bool; U64: the bits of a value above INT64_MAX
  std::string s;
};
bool parseLiteral(llvm::StringRef text, LiteralValue &out, std::string &error);

/// Parses the digits of an INT token (`0x1F`, `1_000`, `4K`, `1MiB`) into an unsigned 64-bit
/// value. False when malformed or above 2**64-1.
bool parseIntToken(llvm::StringRef text, uint64_t &value);

} // namespace msccl::frontend
