//===- Server.h - The .msccl language server (LSP 3.17 over JSON-RPC) ------------------------===//
//
// Consumes: Language Server Protocol messages (JSON-RPC 2.0 with `Content-Length` framing).
// Produces: responses and notifications on an output stream: diagnostics (every error, warning
// and note mscclc gives for the buffer, published after each change once no further message is
// queued), hover, completion, go to definition, references, document symbols and semantic
// tokens. Formatting is not offered: the project has no formatter that keeps comments.
// The compiler knowledge comes from Analysis.h (the compiler's own phases and Builtins.def).
//
// Settings, per document: the LSP settings (`initializationOptions` or
// `workspace/didChangeConfiguration`, either `{"msccl": {...}}` or the object itself) with
//   "defines": {"ranks": 8, ...}   -D values      "includeDirs": ["dir", ...]   -I directories
//   "maxLoopIterations": N          "stdlibDir": "dir"
// then a `.mscclc` file found in the document's folder or the nearest parent folder: mscclc
// flags, several per line, `#` starts a comment: `-D ranks=8`, `-Dranks=8`, `-I dir` (relative
// to the file's folder), `--max-loop-iterations=N`. The file's values win.
//
// Tests drive a Server in-process through handle()/flush() or runServer() on string streams;
// tools/msccl-lsp/main.cpp calls runServer on stdin/stdout.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/lsp/Analysis.h"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <map>
#include <memory>
#include <string>

namespace msccl::lsp {

struct ServerOptions {
  AnalysisOptions analysis;  ///< defaults under the LSP settings and `.mscclc` files
  int debounceMs = 30;       ///< runServer: wait this long for more messages before analysing
};

class Server {
public:
  /// Messages are written to `out` with Content-Length framing.
  explicit Server(std::ostream &out, ServerOptions o = {});
  ~Server();

  /// Handles one message (request, response or notification). Changes only mark the document
  /// stale; diagnostics are published by flush() (requests on a stale document analyse it
  /// first). Never throws: malformed messages get JSON-RPC errors.
  void handle(const nlohmann::json &msg);
  /// Analyses every stale document and publishes its diagnostics.
  void flush();
  /// True once `exit` was received; exitCode() is 0 if `shutdown` came first, else 1.
  bool exited() const { return exited_; }
  int exitCode() const { return shutdown_ ? 0 : 1; }
  /// The analyzer (register extra checks, e.g. the verifier, with addCheck).
  Analyzer &analyzer() { return analyzer_; }
  /// Writes one message.
  void send(const nlohmann::json &msg);
  /// Number of open documents and the analyses held (for the memory benchmark).
  size_t openDocuments() const { return docs_.size(); }

private:
  struct Doc;
  Doc *doc(const nlohmann::json &params);
  void analyze(Doc &d);
  void publish(Doc &d);
  /// Marks stale the open documents whose last analysis imported `d`'s file.
  void markImporters(const Doc &d);
  AnalysisOptions optionsFor(const Doc &d) const;
  /// The analysis to answer position requests on `d` and the byte offset in its text of
  /// `position` (mapped from the current text); null if none.
  const Analysis *forPosition(Doc &d, const nlohmann::json &position, size_t &offset);
  nlohmann::json request(const std::string &method, const nlohmann::json &params);
  nlohmann::json location(const Doc &d, const Analysis &a, unsigned buffer, size_t offset, size_t length) const;

  std::ostream &out_;
  ServerOptions opts_;
  Analyzer analyzer_;
  nlohmann::json settings_ = nlohmann::json::object();
  std::map<std::string, std::unique_ptr<Doc>> docs_;
  bool initialized_ = false, shutdown_ = false, exited_ = false;
};

/// Reads one framed message body. False at end of input or on a malformed header.
bool readMessage(std::istream &in, std::string &body);
/// Writes `body` with its Content-Length header.
void writeMessage(std::ostream &out, const std::string &body);

/// Serves `in` -> `out` until `exit` or end of input: a reader thread queues messages;
/// `$/cancelRequest` removes a queued request (answered with RequestCancelled); queued
/// `didChange`s are applied in order and analysed once (debounce). Returns the exit code.
int runServer(std::istream &in, std::ostream &out, ServerOptions o = {});

/// file:// URIs <-> paths (percent-encoding).
std::string uriToPath(const std::string &uri);
std::string pathToUri(const std::string &path);

} // namespace msccl::lsp
