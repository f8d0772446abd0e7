//===- Server.cpp - The .msccl language server -------------------------------------------===//
#include "msccl/lsp/Server.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <istream>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

namespace msccl::lsp {

using nlohmann::json;

namespace {
enum ErrorCode {
  ParseError = -32700, InvalidRequest = -32600, MethodNotFound = -32601, InvalidParams = -32602,
  InternalError = -32603, ServerNotInitialized = -32002, RequestCancelled = -32800
};

const char *const kTokenTypes[] = {"variable", "parameter", "function", "method", "class", "enum", "enumMember", "property"};
const char *const kTokenModifiers[] = {"declaration", "readonly", "defaultLibrary"};

std::pair<int, int> tokenOf(const Occurrence &o) {
  int decl = o.isDefinition ? 1 : 0;
  switch (o.kind) {
  case SymKind::Local: return {0, decl};
  case SymKind::Param: return {0, decl | 2};
  case SymKind::Fn: return {2, decl};
  case SymKind::Program: return {2, decl};
  case SymKind::BuiltinFn: return {2, 4};
  case SymKind::Class: return {4, 4};
  case SymKind::Enum: return {5, 4};
  case SymKind::EnumMember: return {6, 4};
  case SymKind::Method: return {3, 4};
  case SymKind::Attr: return {7, 4};
  case SymKind::KeywordArg: return {1, 0};
  case SymKind::Option: return {7, 4};
  }
  return {0, 0};
}

std::string realPath(const std::string &p) {
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(p, real))
    return p;
  return std::string(real);
}

json errorResponse(const json &id, int code, const std::string &message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}
} // namespace

std::string uriToPath(const std::string &uri) {
  llvm::StringRef s(uri);
  if (!s.consume_front("file://"))
    return uri;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      unsigned v;
      if (!s.substr(i + 1, 2).getAsInteger(16, v)) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::string pathToUri(const std::string &path) {
  std::string out = "file://";
  static const char *hex = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// ---- Framing -------------------------------------------------------------------------------
bool readMessage(std::istream &in, std::string &body) {
  size_t length = 0;
  bool haveLength = false;
  std::string line;
  while (true) {
    if (!std::getline(in, line))
      return false;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty()) {
      if (haveLength)
        break;
      continue; // stray blank line between messages
    }
    llvm::StringRef l(line);
    if (l.consume_front_insensitive("content-length:")) {
      if (l.trim().getAsInteger(10, length) || length > (1u << 30))
        return false;
      haveLength = true;
    }
  }
  body.assign(length, '\0');
  in.read(body.data(), static_cast<std::streamsize>(length));
  return static_cast<size_t>(in.gcount()) == length;
}

void writeMessage(std::ostream &out, const std::string &body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

// ---- Server --------------------------------------------------------------------------------
struct Server::Doc {
  std::string uri, path;
  std::string text;
  int64_t version = 0;
  bool stale = true;
  std::shared_ptr<Analysis> current;  ///< analysis of `text` (when not stale)
  std::shared_ptr<Analysis> lastGood; ///< latest analysis whose main module parsed
};

Server::Server(std::ostream &out, ServerOptions o) : out_(out), opts_(std::move(o)), analyzer_(opts_.analysis) {}
Server::~Server() = default;

void Server::send(const json &msg) { writeMessage(out_, msg.dump(-1, ' ', false, json::error_handler_t::replace)); }

Server::Doc *Server::doc(const json &params) {
  auto it = docs_.find(params.at("textDocument").at("uri").get<std::string>());
  return it == docs_.end() ? nullptr : it->second.get();
}

AnalysisOptions Server::optionsFor(const Doc &d) const {
  AnalysisOptions o = opts_.analysis;
  const json *s = &settings_;
  if (s->is_object() && s->contains("msccl") && (*s)["msccl"].is_object())
    s = &(*s)["msccl"];
  if (s->is_object()) {
    if (auto it = s->find("defines"); it != s->end() && it->is_object())
      for (auto &[k, v] : it->items())
        o.defines.push_back({k, v.is_string() ? v.get<std::string>() : v.dump()});
    if (auto it = s->find("includeDirs"); it != s->end() && it->is_array())
      for (auto &v : *it)
        if (v.is_string())
          o.path.includeDirs.push_back(v.get<std::string>());
    if (auto it = s->find("maxLoopIterations"); it != s->end() && it->is_number_integer())
      o.maxLoopIterations = it->get<int64_t>();
    if (auto it = s->find("stdlibDir"); it != s->end() && it->is_string())
      o.path.stdlibDir = it->get<std::string>();
  }
  // The nearest `.mscclc` flags file.
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(d.path));
  while (!dir.empty()) {
    llvm::SmallString<256> f(dir);
    llvm::sys::path::append(f, ".mscclc");
    if (auto buf = llvm::MemoryBuffer::getFile(f)) {
      std::vector<std::string> words;
      llvm::StringRef text = (*buf)->getBuffer();
      while (!text.empty()) {
        auto [line, rest] = text.split('\n');
        text = rest;
        line = line.split('#').first;
        llvm::SmallVector<llvm::StringRef, 8> parts;
        line.split(parts, ' ', -1, false);
        for (auto p : parts)
          if (!p.trim().empty())
            words.push_back(p.trim().str());
      }
      for (size_t i = 0; i < words.size(); ++i) {
        llvm::StringRef w(words[i]);
        auto value = [&](llvm::StringRef flag) -> std::string {
          if (w == flag)
            return i + 1 < words.size() ? words[++i] : "";
          return w.drop_front(flag.size()).str();
        };
        if (w.startswith("-D")) {
          std::string v = value("-D");
          size_t eq = v.find('=');
          if (eq != std::string::npos && eq > 0)
            o.defines.push_back({v.substr(0, eq), v.substr(eq + 1)});
        } else if (w.startswith("-I")) {
          llvm::SmallString<256> p(value("-I"));
          if (!llvm::sys::path::is_absolute(p)) {
            llvm::SmallString<256> q(dir);
            llvm::sys::path::append(q, p);
            p = q;
          }
          o.path.includeDirs.push_back(std::string(p));
        } else if (w.consume_front("--max-loop-iterations=")) {
          int64_t n;
          if (!w.getAsInteger(10, n))
            o.maxLoopIterations = n;
        }
      }
      break;
    }
    llvm::StringRef parent = llvm::sys::path::parent_path(dir);
    if (parent == dir)
      break;
    dir = parent;
  }
  return o;
}

void Server::analyze(Doc &d) {
  std::map<std::string, std::string> overlay;
  for (auto &[uri, other] : docs_)
    if (other.get() != &d)
      overlay[realPath(other->path)] = other->text;
  analyzer_.options() = optionsFor(d);
  std::shared_ptr<Analysis> a = analyzer_.analyze(d.path, d.text, overlay);
  d.current = a;
  if (a->parsed)
    d.lastGood = a;
  d.stale = false;
}

void Server::markImporters(const Doc &d) {
  std::string real = realPath(d.path);
  for (auto &[uri, other] : docs_) {
    if (other.get() == &d || !other->current)
      continue;
    for (unsigned b = 1; b <= other->current->sm.getNumBuffers(); ++b)
      if (b != other->current->mainBuffer && realPath(other->current->bufferPath(b)) == real)
        other->stale = true;
  }
}

void Server::publish(Doc &d) {
  const Analysis &a = *d.current;
  auto range = [&](unsigned buffer, size_t b, size_t e) {
    auto [l0, c0] = a.position(buffer, b);
    auto [l1, c1] = a.position(buffer, e);
    return json{{"start", {{"line", l0}, {"character", c0}}}, {"end", {{"line", l1}, {"character", c1}}}};
  };
  auto uriOf = [&](unsigned buffer) { return buffer == a.mainBuffer ? d.uri : pathToUri(a.bufferPath(buffer)); };
  json list = json::array();
  for (const LocatedDiag &ld : a.diagnostics) {
    json item;
    item["range"] = ld.buffer ? range(ld.buffer, ld.begin, ld.end) : range(a.mainBuffer, 0, 0);
    item["severity"] = ld.level == diag::Level::Error ? 1 : ld.level == diag::Level::Warning ? 2 : 3;
    item["source"] = "mscclc";
    item["code"] = ld.kindName;
    std::string message = ld.message;
    json related = json::array();
    for (const LocatedDiag &n : ld.notes) {
      if (n.buffer == 0) {
        message += "\nnote: " + n.message;
        continue;
      }
      related.push_back({{"location", {{"uri", uriOf(n.buffer)}, {"range", range(n.buffer, n.begin, n.end)}}},
                         {"message", n.message}});
    }
    item["message"] = message;
    if (!related.empty())
      item["relatedInformation"] = related;
    list.push_back(std::move(item));
  }
  send({{"jsonrpc", "2.0"},
        {"method", "textDocument/publishDiagnostics"},
        {"params", {{"uri", d.uri}, {"version", d.version}, {"diagnostics", list}}}});
}

void Server::flush() {
  std::vector<Doc *> stale;
  for (auto &[uri, d] : docs_)
    if (d->stale)
      stale.push_back(d.get());
  for (Doc *d : stale) {
    analyze(*d);
    publish(*d);
  }
}

const Analysis *Server::forPosition(Doc &d, const json &position, size_t &offset) {
  if (d.stale) {
    analyze(d);
    publish(d);
  }
  unsigned line = position.at("line").get<unsigned>();
  unsigned col = position.at("character").get<unsigned>();
  const Analysis *a = d.current && d.current->parsed ? d.current.get() : d.lastGood.get();
  if (!a)
    return nullptr;
  offset = a->text.offset(line, col);
  return a;
}

json Server::location(const Doc &d, const Analysis &a, unsigned buffer, size_t offset, size_t length) const {
  auto [l0, c0] = a.position(buffer, offset);
  auto [l1, c1] = a.position(buffer, offset + length);
  return {{"uri", buffer == a.mainBuffer ? d.uri : pathToUri(a.bufferPath(buffer))},
          {"range", {{"start", {{"line", l0}, {"character", c0}}}, {"end", {{"line", l1}, {"character", c1}}}}}};
}

namespace {
/// Whether the occurrence `o` of analysis `a` is still in `current` (an older analysis may be
/// used while the buffer does not parse): the name is at the same line and column.
bool stillThere(const Analysis &a, const Occurrence &o, const Text &current) {
  if (a.text.str() == current.str())
    return true;
  auto [line, col] = a.text.position(o.offset);
  size_t at = current.offset(line, col);
  return at + o.name.size() <= current.str().size() && current.str().compare(at, o.name.size(), o.name) == 0;
}

/// The occurrence under the cursor (byte `offset` of the analysis' text), if still in place.
const Occurrence *occurrenceAt(const Analysis &a, size_t offset, const std::string &current) {
  const Occurrence *o = a.at(offset);
  if (!o || !stillThere(a, *o, Text(current)))
    return nullptr;
  return o;
}

/// Thrown by Server::request for a method it does not implement.
struct UnknownMethod {};
} // namespace

json Server::request(const std::string &method, const json &params) {
  if (method == "textDocument/hover") {
    Doc *d = doc(params);
    size_t off = 0;
    const Analysis *a = d ? forPosition(*d, params.at("position"), off) : nullptr;
    const Occurrence *o = a ? occurrenceAt(*a, off, d->text) : nullptr;
    if (!o)
      return nullptr;
    std::string text = hoverText(*a, *o, analyzer_.options());
    if (text.empty())
      return nullptr;
    return {{"contents", {{"kind", "markdown"}, {"value", text}}},
            {"range", location(*d, *a, o->buffer, o->offset, o->length)["range"]}};
  }
  if (method == "textDocument/definition") {
    Doc *d = doc(params);
    size_t off = 0;
    const Analysis *a = d ? forPosition(*d, params.at("position"), off) : nullptr;
    const Occurrence *o = a ? occurrenceAt(*a, off, d->text) : nullptr;
    if (!o || o->defBuffer == 0)
      return nullptr;
    // The definition's name length: the occurrence's name (definitions are names too).
    return json::array({location(*d, *a, o->defBuffer, o->defOffset, o->name.size())});
  }
  if (method == "textDocument/references") {
    Doc *d = doc(params);
    size_t off = 0;
    const Analysis *a = d ? forPosition(*d, params.at("position"), off) : nullptr;
    const Occurrence *o = a ? occurrenceAt(*a, off, d->text) : nullptr;
    json out = json::array();
    if (!o || o->defBuffer == 0 || o->kind == SymKind::KeywordArg)
      return out;
    bool withDecl = params.value("/context/includeDeclaration"_json_pointer, true);
    for (const Occurrence &r : a->occurrences) {
      if (r.kind == SymKind::KeywordArg || r.defBuffer != o->defBuffer || r.defOffset != o->defOffset)
        continue;
      if (r.isDefinition && !withDecl)
        continue;
      out.push_back(location(*d, *a, r.buffer, r.offset, r.length));
    }
    return out;
  }
  if (method == "textDocument/documentSymbol") {
    Doc *d = doc(params);
    json out = json::array();
    if (!d)
      return out;
    if (d->stale) {
      analyze(*d);
      publish(*d);
    }
    const Analysis *a = d->current && d->current->parsed ? d->current.get() : d->lastGood.get();
    if (!a)
      return out;
    for (const Occurrence &o : a->occurrences) {
      if (o.buffer != a->mainBuffer || !o.isDefinition)
        continue;
      int kind = o.kind == SymKind::Param ? 14 : o.kind == SymKind::Fn ? 12 : o.kind == SymKind::Program ? 2 : 0;
      if (!kind)
        continue;
      json r = location(*d, *a, o.buffer, o.offset, o.length)["range"];
      out.push_back({{"name", o.name},
                     {"kind", kind},
                     {"detail", o.kind == SymKind::Param ? "param" : o.kind == SymKind::Fn ? "fn" : "program"},
                     {"range", r},
                     {"selectionRange", r}});
    }
    return out;
  }
  if (method == "textDocument/semanticTokens/full") {
    Doc *d = doc(params);
    json data = json::array();
    if (d) {
      if (d->stale) {
        analyze(*d);
        publish(*d);
      }
      const Analysis *a = d->current && d->current->parsed ? d->current.get() : d->lastGood.get();
      Text current(d->text);
      unsigned prevLine = 0, prevCol = 0;
      if (a)
        for (const Occurrence &o : a->occurrences) {
          if (o.buffer != a->mainBuffer)
            continue;
          if (!stillThere(*a, o, current))
            continue; // an older analysis: the name moved
          auto [line, col] = a->text.position(o.offset);
          auto [type, mods] = tokenOf(o);
          data.push_back(line - prevLine);
          data.push_back(line == prevLine ? col - prevCol : col);
          data.push_back(o.length);
          data.push_back(type);
          data.push_back(mods);
          prevLine = line;
          prevCol = col;
        }
    }
    return {{"data", data}};
  }
  if (method == "textDocument/completion") {
    Doc *d = doc(params);
    json items = json::array();
    if (!d)
      return {{"isIncomplete", false}, {"items", items}};
    if (d->stale) {
      analyze(*d);
      publish(*d);
    }
    Text t(d->text);
    size_t off = t.offset(params.at("position").at("line").get<unsigned>(), params.at("position").at("character").get<unsigned>());
    for (const Completion &c : complete(d->text, off, d->lastGood.get(), optionsFor(*d))) {
      json item = {{"label", c.label}, {"kind", c.kind}};
      if (!c.detail.empty())
        item["detail"] = c.detail;
      if (!c.doc.empty())
        item["documentation"] = {{"kind", "markdown"}, {"value", c.doc}};
      if (!c.insertText.empty())
        item["insertText"] = c.insertText;
      item["sortText"] = std::string(c.kind == 5 ? "0" : c.kind == 2 || c.kind == 20 ? "1" : "2") + c.label;
      items.push_back(std::move(item));
    }
    return {{"isIncomplete", false}, {"items", items}};
  }
  throw UnknownMethod{};
}

void Server::handle(const json &msg) {
  if (!msg.is_object()) {
    send(errorResponse(nullptr, InvalidRequest, "a message is a JSON object"));
    return;
  }
  bool isRequest = msg.contains("id") && msg.contains("method");
  json id = msg.value("id", json());
  if (!msg.contains("method"))
    return; // a response to a request of ours (none are sent)
  std::string method = msg["method"].is_string() ? msg["method"].get<std::string>() : "";
  const json params = msg.value("params", json::object());
  try {
    if (method == "initialize") {
      initialized_ = true;
      if (params.contains("initializationOptions") && params["initializationOptions"].is_object())
        settings_ = params["initializationOptions"];
      json legend = {{"tokenTypes", kTokenTypes}, {"tokenModifiers", kTokenModifiers}};
      json caps = {
          {"positionEncoding", "utf-16"},
          {"textDocumentSync", {{"openClose", true}, {"change", 2}}},
          {"hoverProvider", true},
          {"completionProvider", {{"triggerCharacters", {".", "(", ",", "\"", "/"}}, {"resolveProvider", false}}},
          {"definitionProvider", true},
          {"referencesProvider", true},
          {"documentSymbolProvider", true},
          {"semanticTokensProvider", {{"legend", legend}, {"full", true}}},
      };
      send({{"jsonrpc", "2.0"},
            {"id", id},
            {"result", {{"capabilities", caps}, {"serverInfo", {{"name", "msccl-lsp"}, {"version", "0.1.0"}}}}}});
      return;
    }
    if (method == "exit") {
      exited_ = true;
      return;
    }
    if (!initialized_) {
      if (isRequest)
        send(errorResponse(id, ServerNotInitialized, "initialize first"));
      return;
    }
    if (method == "shutdown") {
      shutdown_ = true;
      send({{"jsonrpc", "2.0"}, {"id", id}, {"result", nullptr}});
      return;
    }
    if (shutdown_) {
      if (isRequest)
        send(errorResponse(id, InvalidRequest, "the server is shutting down"));
      return;
    }
    if (method == "initialized" || method == "$/setTrace" || method == "$/cancelRequest")
      return;
    if (method == "workspace/didChangeConfiguration" || method == "workspace/didChangeWatchedFiles") {
      // New settings, or a `.mscclc` / imported file changed on disk: analyse everything again.
      if (method == "workspace/didChangeConfiguration" && params.contains("settings") && !params["settings"].is_null())
        settings_ = params["settings"];
      for (auto &[uri, d] : docs_)
        d->stale = true;
      return;
    }
    if (method == "textDocument/didOpen") {
      const json &td = params.at("textDocument");
      auto d = std::make_unique<Doc>();
      d->uri = td.at("uri").get<std::string>();
      d->path = uriToPath(d->uri);
      d->text = td.at("text").get<std::string>();
      d->version = td.value("version", 0);
      docs_[d->uri] = std::move(d);
      // Documents importing this one see its text from now on.
      for (auto &[uri, other] : docs_)
        if (uri != td.at("uri").get<std::string>() && other->current)
          other->stale = true;
      return;
    }
    if (method == "textDocument/didChange") {
      Doc *d = doc(params);
      if (!d)
        return;
      for (const json &ch : params.at("contentChanges")) {
        if (ch.contains("range")) {
          Text t(d->text);
          const json &r = ch["range"];
          size_t b = t.offset(r["start"]["line"].get<unsigned>(), r["start"]["character"].get<unsigned>());
          size_t e = t.offset(r["end"]["line"].get<unsigned>(), r["end"]["character"].get<unsigned>());
          if (e < b)
            std::swap(b, e);
          d->text.replace(b, e - b, ch.at("text").get<std::string>());
        } else {
          d->text = ch.at("text").get<std::string>();
        }
      }
      d->version = params.at("textDocument").value("version", d->version);
      d->stale = true;
      markImporters(*d);
      return;
    }
    if (method == "textDocument/didClose") {
      auto it = docs_.find(params.at("textDocument").at("uri").get<std::string>());
      if (it != docs_.end()) {
        markImporters(*it->second); // they read the file on disk again
        send({{"jsonrpc", "2.0"},
              {"method", "textDocument/publishDiagnostics"},
              {"params", {{"uri", it->first}, {"diagnostics", json::array()}}}});
        docs_.erase(it);
      }
      return;
    }
    if (method == "textDocument/didSave")
      return;
    if (!isRequest)
      return; // unknown notification: ignored
    json result;
    try {
      result = request(method, params);
    } catch (const UnknownMethod &) {
      send(errorResponse(id, MethodNotFound, "unsupported method `" + method + "`"));
      return;
    }
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
  } catch (const json::exception &e) {
    if (isRequest)
      send(errorResponse(id, InvalidParams, std::string("invalid params: ") + e.what()));
  } catch (const std::exception &e) {
    if (isRequest)
      send(errorResponse(id, InternalError, e.what()));
  }
}

// ---- The stdio loop ------------------------------------------------------------------------
namespace {
struct Queue {
  std::mutex m;
  std::condition_variable cv;
  std::deque<json> items;
  bool eof = false;
};
} // namespace

int runServer(std::istream &in, std::ostream &out, ServerOptions o) {
  int debounce = o.debounceMs;
  Server server(out, std::move(o));
  auto q = std::make_shared<Queue>();
  // std::cin is tied to std::cout: every read would flush the output from the reader thread
  // while the main thread writes (a data race that duplicates and tears messages). Untie.
  std::ostream *tied = in.tie(nullptr);
  std::thread reader([q, &in, &server] {
    std::string body;
    while (readMessage(in, body)) {
      json msg = json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (msg.is_discarded()) {
        server.send(errorResponse(nullptr, ParseError, "malformed JSON"));
        continue;
      }
      bool isExit = msg.is_object() && msg.value("method", "") == "exit";
      {
        std::lock_guard<std::mutex> l(q->m);
        // $/cancelRequest: drop the queued request and answer it as cancelled.
        if (msg.is_object() && msg.value("method", "") == "$/cancelRequest" && msg.contains("params")) {
          json id = msg["params"].value("id", json());
          for (auto it = q->items.begin(); it != q->items.end(); ++it)
            if (it->is_object() && it->contains("method") && it->value("id", json()) == id && !id.is_null()) {
              server.send(errorResponse(id, RequestCancelled, "cancelled"));
              q->items.erase(it);
              break;
            }
        }
        q->items.push_back(std::move(msg));
      }
      q->cv.notify_one();
      if (isExit)
        break;
    }
    std::lock_guard<std::mutex> l(q->m);
    q->eof = true;
    q->cv.notify_one();
  });
  // Note: send() is called from both threads only for parse errors and cancellations; both
  // write whole messages under the queue lock on the reader's side. The main thread writes
  // while holding no lock; to keep messages whole, every write from the main thread happens
  // with the lock taken too (below).
  while (!server.exited()) {
    json msg;
    {
      std::unique_lock<std::mutex> l(q->m);
      if (q->items.empty() && !q->eof) {
        // Debounce: a burst of changes is analysed once, when the input is quiet.
        if (!q->cv.wait_for(l, std::chrono::milliseconds(debounce), [&] { return !q->items.empty() || q->eof; })) {
          server.flush();
          q->cv.wait(l, [&] { return !q->items.empty() || q->eof; });
        }
      }
      if (q->items.empty() && q->eof)
        break;
      msg = std::move(q->items.front());
      q->items.pop_front();
      server.handle(msg);
    }
  }
  reader.join();
  in.tie(tied);
  return server.exited() ? server.exitCode() : 1;
}

} // namespace msccl::lsp
