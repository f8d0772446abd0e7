// Unit tests of the language server library (msccl/lsp/Server.h, Analysis.h), driven
// in-process: messages in, framed messages out, parsed back and checked.
#include "msccl/elab/Builtins.h"
#include "msccl/elab/Loader.h"
#include "msccl/lsp/Server.h"

#include <catch2/catch.hpp>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <fstream>
#include <map>
#include <sstream>

using nlohmann::json;
using namespace msccl;

namespace {

std::string stdlibFile(const std::string &rel) {
  llvm::SmallString<256> p(elab::defaultStdlibDir());
  llvm::sys::path::append(p, rel);
  return std::string(p);
}

std::string readFile(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A server with its output parsed back into messages.
struct Session {
  std::stringstream out;
  lsp::Server server{out};
  int nextId = 1;

  Session() {
    request("initialize", {{"capabilities", json::object()}});
    notify("initialized", json::object());
  }
  std::vector<json> drain() {
    std::vector<json> msgs;
    std::string body;
    while (lsp::readMessage(out, body))
      msgs.push_back(json::parse(body));
    out.clear();
    out.str("");
    return msgs;
  }
  void notify(const std::string &method, const json &params) {
    server.handle({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
  }
  json request(const std::string &method, const json &params) {
    int id = nextId++;
    server.handle({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    for (const json &m : drain())
      if (m.value("id", -1) == id)
        return m;
    FAIL("no response to " << method);
    return {};
  }
  void open(const std::string &uri, const std::string &text) {
    notify("textDocument/didOpen", {{"textDocument", {{"uri", uri}, {"languageId", "msccl"}, {"version", 1}, {"text", text}}}});
  }
  /// Flushes and returns the diagnostics published for `uri` (last publication).
  json diagnostics(const std::string &uri) {
    server.flush();
    json last;
    for (const json &m : drain())
      if (m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri)
        last = m["params"]["diagnostics"];
    return last;
  }
  json at(const std::string &uri, int line, int ch) {
    return {{"textDocument", {{"uri", uri}}}, {"position", {{"line", line}, {"character", ch}}}};
  }
};

/// Line and column of the first occurrence of `needle` in `text` (0-based).
std::pair<int, int> find(const std::string &text, const std::string &needle) {
  size_t off = text.find(needle);
  REQUIRE(off != std::string::npos);
  int line = 0;
  size_t ls = 0;
  for (size_t i = 0; i < off; ++i)
    if (text[i] == '\n') {
      ++line;
      ls = i + 1;
    }
  return {line, static_cast<int>(off - ls)};
}

bool hasLabel(const json &items, const std::string &label) {
  for (auto &i : items)
    if (i["label"] == label)
      return true;
  return false;
}

const char *kProgram = R"(param gpus = 4

program p(collective = AllReduce(gpus, 1, true)) {
    let ch = MemoryChannel(1, 0)
    for r in range(gpus) {
        let input = Rank(r).get_input_buffer()
        Rank(r).copy(dst_chunk = input[0:1], src_chunk = input[0:1], tb = 0)
    }
}
)";

} // namespace

TEST_CASE("Text converts byte offsets to UTF-16 positions and back", "[lsp]") {
  lsp::Text t("ab\n\xc3\xa9x\xf0\x9f\x98\x80y\n");
  CHECK(t.position(0) == std::make_pair(0u, 0u));
  CHECK(t.position(3) == std::make_pair(1u, 0u));
  CHECK(t.position(5) == std::make_pair(1u, 1u));  // after the 2-byte é: 1 unit
  CHECK(t.position(10) == std::make_pair(1u, 4u)); // after x and a 4-byte emoji: 1 + 1 + 2
  CHECK(t.offset(1, 4) == 10);
  CHECK(t.offset(1, 99) == 11); // clamped to the line
  CHECK(t.offset(7, 0) == t.str().size());
}

TEST_CASE("framing round-trips and rejects a bad header", "[lsp]") {
  std::stringstream s;
  lsp::writeMessage(s, R"({"a":1})");
  lsp::writeMessage(s, "{}");
  std::string body;
  REQUIRE(lsp::readMessage(s, body));
  CHECK(body == R"({"a":1})");
  REQUIRE(lsp::readMessage(s, body));
  CHECK(body == "{}");
  CHECK_FALSE(lsp::readMessage(s, body));
  std::stringstream bad("Content-Length: x\r\n\r\n{}");
  CHECK_FALSE(lsp::readMessage(bad, body));
}

TEST_CASE("a typo gets the checker's diagnostic at its range; fixing it clears it", "[lsp]") {
  Session s;
  std::string text = kProgram;
  s.open("file:///tmp/lsp-a.msccl", text);
  CHECK(s.diagnostics("file:///tmp/lsp-a.msccl").empty());
  std::string typo = text;
  typo.replace(typo.find("Rank(r).copy"), 4, "Rnak");
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///tmp/lsp-a.msccl"}, {"version", 2}}},
                                      {"contentChanges", {{{"text", typo}}}}});
  json d = s.diagnostics("file:///tmp/lsp-a.msccl");
  REQUIRE(d.size() == 1);
  auto [line, col] = find(typo, "Rnak");
  CHECK(d[0]["range"]["start"]["line"] == line);
  CHECK(d[0]["range"]["start"]["character"] == col);
  CHECK(d[0]["range"]["end"]["character"] == col + 4);
  CHECK(d[0]["severity"] == 1);
  CHECK(d[0]["code"] == "err_unknown_name");
  CHECK(d[0]["message"].get<std::string>().find("did you mean `Rank`") != std::string::npos);
  // Incremental change: replace just the typo.
  s.notify("textDocument/didChange",
           {{"textDocument", {{"uri", "file:///tmp/lsp-a.msccl"}, {"version", 3}}},
            {"contentChanges",
             {{{"range", {{"start", {{"line", line}, {"character", col}}}, {"end", {{"line", line}, {"character", col + 4}}}}},
               {"text", "Rank"}}}}});
  CHECK(s.diagnostics("file:///tmp/lsp-a.msccl").empty());
}

TEST_CASE("elaboration errors carry the loop context as related information", "[lsp]") {
  Session s;
  std::string text = R"(program p(collective = AllReduce(4, 1, true)) {
    for r in range(4) {
        let x = 10 / (r - 2)
    }
}
)";
  s.open("file:///tmp/lsp-b.msccl", text);
  json d = s.diagnostics("file:///tmp/lsp-b.msccl");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["range"]["start"]["line"] == 2);
  REQUIRE(d[0].contains("relatedInformation"));
  bool loop = false;
  for (auto &r : d[0]["relatedInformation"])
    loop = loop || r["message"].get<std::string>().find("r = 2") != std::string::npos;
  CHECK(loop);
}

TEST_CASE("an unpaired signal is reported from the pass validation", "[lsp]") {
  Session s;
  std::string text = R"(program p(collective = AllReduce(2, 1, true)) {
    let ch = MemoryChannel(1, 0)
    ch.signal(tb = 0)
}
)";
  s.open("file:///tmp/lsp-c.msccl", text);
  json d = s.diagnostics("file:///tmp/lsp-c.msccl");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["code"] == "err_pass");
  CHECK(d[0]["message"].get<std::string>().find("signal") != std::string::npos);
}

TEST_CASE("hover shows Builtins.def's documentation, params' values and chunk facts", "[lsp]") {
  Session s;
  std::string text = kProgram;
  s.open("file:///tmp/lsp-d.msccl", text);
  auto [l, c] = find(text, "range(");
  json h = s.request("textDocument/hover", s.at("file:///tmp/lsp-d.msccl", l, c + 1));
  std::string v = h["result"]["contents"]["value"];
  CHECK(v.find(elab::builtins().fn(elab::BuiltinFnId::Fn_range).summary) != std::string::npos);
  std::tie(l, c) = find(text, ".copy(");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d.msccl", l, c + 2))["result"]["contents"]["value"];
  CHECK(v.find("Rank.copy(dst_chunk: Chunk") != std::string::npos);
  CHECK(v.find(elab::builtins().method(elab::MethodId::Rank_copy).summary) != std::string::npos);
  std::tie(l, c) = find(text, "tb = 0)");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d.msccl", l, c))["result"]["contents"]["value"];
  CHECK(v.find("tb: int | none = none") != std::string::npos);
  std::tie(l, c) = find(text, "gpus, 1");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d.msccl", l, c))["result"]["contents"]["value"];
  CHECK(v.find("param gpus = 4") != std::string::npos);
  CHECK(v.find("value: `4`") != std::string::npos);
  std::tie(l, c) = find(text, "input = ");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d.msccl", l, c))["result"]["contents"]["value"];
  CHECK(v.find("type: `Buffer`") != std::string::npos);
  CHECK(v.find("input buffer of rank `r`") != std::string::npos);
  // Semantic tokens follow the checker's resolution: decode (line, col, length, type, mods).
  json data = s.request("textDocument/semanticTokens/full", {{"textDocument", {{"uri", "file:///tmp/lsp-d.msccl"}}}})["result"]["data"];
  REQUIRE(data.size() % 5 == 0);
  std::map<std::pair<int, int>, std::pair<int, int>> tokens;
  for (size_t i = 0, line = 0, col = 0; i < data.size(); i += 5) {
    line += data[i].get<size_t>();
    col = data[i].get<size_t>() ? data[i + 1].get<size_t>() : col + data[i + 1].get<size_t>();
    tokens[{static_cast<int>(line), static_cast<int>(col)}] = {data[i + 3].get<int>(), data[i + 4].get<int>()};
  }
  auto tokenAt = [&](const std::string &needle) { return tokens[find(text, needle)]; };
  CHECK(tokenAt("range(") == std::make_pair(2, 4));     // function, defaultLibrary
  CHECK(tokenAt("gpus = 4") == std::make_pair(0, 3));   // variable, declaration|readonly (a param)
  CHECK(tokenAt("gpus) {") == std::make_pair(0, 2));    // variable, readonly
  CHECK(tokenAt("MemoryChannel") == std::make_pair(4, 4)); // class, defaultLibrary
  CHECK(tokenAt("copy(") == std::make_pair(3, 4));      // method
  CHECK(tokenAt("tb = 0") == std::make_pair(1, 0));     // parameter (keyword argument)
  CHECK(tokenAt("ch = ") == std::make_pair(0, 1));      // variable, declaration
  // A chunk expression: its buffer, index and size.
  std::tie(l, c) = find(text, "input[0:1], src");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d.msccl", l, c + 1))["result"]["contents"]["value"];
  CHECK(v.find("chunk of the input buffer of rank `r`, index 0, size 1") != std::string::npos);
  std::string text2 = "param n = 4\nprogram p(collective = AllGather(n, 1, false)) {\n"
                      "    for i in range(n) {\n        let c = Rank(0).get_output_buffer()[i : i + 2]\n"
                      "        let d = Rank(1).get_input_buffer()[n - 1 : n]\n    }\n}\n";
  s.open("file:///tmp/lsp-d2.msccl", text2);
  std::tie(l, c) = find(text2, "get_output_buffer");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d2.msccl", l, c + 1))["result"]["contents"]["value"];
  CHECK(v.find("chunk of the output buffer of rank 0, index `i`, size 2") != std::string::npos);
  std::tie(l, c) = find(text2, "get_input_buffer");
  v = s.request("textDocument/hover", s.at("file:///tmp/lsp-d2.msccl", l, c + 1))["result"]["contents"]["value"];
  CHECK(v.find("chunk of the input buffer of rank 1, index 3, size 1") != std::string::npos);
}

TEST_CASE("completion: methods of the receiver's class, keyword arguments, enum members, modules", "[lsp]") {
  Session s;
  std::string text = kProgram;
  s.open("file:///tmp/lsp-e.msccl", text);
  s.diagnostics("file:///tmp/lsp-e.msccl");
  // Type `ch.` on a new line in the loop (the buffer does not parse).
  std::string typed = text;
  size_t at = typed.find("    }\n}");
  typed.insert(at, "        ch.\n");
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///tmp/lsp-e.msccl"}, {"version", 2}}},
                                      {"contentChanges", {{{"text", typed}}}}});
  auto [l, c] = find(typed, "ch.\n");
  json items = s.request("textDocument/completion", s.at("file:///tmp/lsp-e.msccl", l, c + 3))["result"]["items"];
  CHECK(hasLabel(items, "signal"));
  CHECK(hasLabel(items, "put"));
  CHECK_FALSE(hasLabel(items, "get_input_buffer")); // a Rank method, not a MemoryChannel one
  // While the buffer does not parse, hover answers from the last analysis where names stayed.
  std::tie(l, c) = find(typed, "range(");
  json h = s.request("textDocument/hover", s.at("file:///tmp/lsp-e.msccl", l, c + 1));
  CHECK(h["result"]["contents"]["value"].get<std::string>().find("builtin range") != std::string::npos);
  std::tie(l, c) = find(typed, "ch.\n");
  CHECK(s.request("textDocument/hover", s.at("file:///tmp/lsp-e.msccl", l, c))["result"].is_null()); // the new line
  // A keyword argument of the call being typed.
  typed = text;
  typed.insert(typed.find("    }\n}"), "        ch.signal(\n");
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///tmp/lsp-e.msccl"}, {"version", 3}}},
                                      {"contentChanges", {{{"text", typed}}}}});
  std::tie(l, c) = find(typed, "signal(\n");
  items = s.request("textDocument/completion", s.at("file:///tmp/lsp-e.msccl", l, c + 7))["result"]["items"];
  CHECK(hasLabel(items, "data_sync ="));
  CHECK(hasLabel(items, "relaxed ="));
  CHECK(hasLabel(items, "range")); // an expression may follow too
  // Enum members.
  typed = text;
  typed.insert(typed.find("    }\n}"), "        let q = SyncType.\n");
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///tmp/lsp-e.msccl"}, {"version", 4}}},
                                      {"contentChanges", {{{"text", typed}}}}});
  std::tie(l, c) = find(typed, "SyncType.\n");
  items = s.request("textDocument/completion", s.at("file:///tmp/lsp-e.msccl", l, c + 9))["result"]["items"];
  REQUIRE(items.size() == elab::builtins().enumInfo(elab::EnumId::SyncType).members.size());
  CHECK(hasLabel(items, "before"));
  // stdlib modules in an import.
  typed = "import \"comm\n" + text;
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", "file:///tmp/lsp-e.msccl"}, {"version", 5}}},
                                      {"contentChanges", {{{"text", typed}}}}});
  items = s.request("textDocument/completion", s.at("file:///tmp/lsp-e.msccl", 0, 12))["result"]["items"];
  CHECK(hasLabel(items, "common/ring.msccl"));
  CHECK_FALSE(hasLabel(items, "allreduce/ring.msccl")); // holds a program: not importable
}

TEST_CASE("go to definition and references reach into imported stdlib modules", "[lsp]") {
  Session s;
  std::string path = stdlibFile("allreduce/ring.msccl");
  std::string uri = lsp::pathToUri(path);
  std::string text = readFile(path);
  s.open(uri, text);
  CHECK(s.diagnostics(uri).empty());
  auto [l, c] = find(text, "ring_mesh(");
  json r = s.request("textDocument/definition", s.at(uri, l, c + 2))["result"];
  REQUIRE(r.size() == 1);
  std::string target = lsp::uriToPath(r[0]["uri"]);
  CHECK(llvm::StringRef(target).endswith("common/channels.msccl"));
  std::string lib = readFile(target);
  auto [dl, dc] = find(lib, "fn ring_mesh(");
  CHECK(r[0]["range"]["start"]["line"] == dl);
  CHECK(r[0]["range"]["start"]["character"] == dc + 3);
  // A local: definition in the same file, references include every use.
  std::tie(l, c) = find(text, "ch, r, ranks, i, i");
  r = s.request("textDocument/definition", s.at(uri, l, c))["result"];
  auto [ll, lc] = find(text, "let ch");
  CHECK(r[0]["range"]["start"]["line"] == ll);
  CHECK(r[0]["range"]["start"]["character"] == lc + 4);
  json refs = s.request("textDocument/references", {{"textDocument", {{"uri", uri}}},
                                                     {"position", {{"line", l}, {"character", c}}},
                                                     {"context", {{"includeDeclaration", true}}}})["result"];
  CHECK(refs.size() == 3); // let ch, and the two calls
  json syms = s.request("textDocument/documentSymbol", {{"textDocument", {{"uri", uri}}}})["result"];
  CHECK(syms.size() == 5); // 4 params + the program
}

TEST_CASE("an open buffer's unsaved text is used for imports", "[lsp]") {
  llvm::SmallString<128> dir;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("lsp-overlay", dir));
  std::string lib = std::string(dir) + "/lib.msccl", main = std::string(dir) + "/main.msccl";
  std::ofstream(lib) << "fn helper(x) { return x }\n";
  std::string mainText = "import \"lib.msccl\"\nprogram p(collective = AllReduce(2, 1, true)) { let y = helper(1) }\n";
  std::ofstream(main) << mainText;
  Session s;
  s.open(lsp::pathToUri(main), mainText);
  CHECK(s.diagnostics(lsp::pathToUri(main)).empty());
  // Rename the fn in the (unsaved) library buffer: the main file now has an unknown name.
  s.open(lsp::pathToUri(lib), "fn helper2(x) { return x }\n");
  json d = s.diagnostics(lsp::pathToUri(main));
  REQUIRE(d.size() == 1);
  CHECK(d[0]["code"] == "err_unknown_name");
  // An error inside the import is shown at the import line with the real place as related info.
  s.notify("textDocument/didChange", {{"textDocument", {{"uri", lsp::pathToUri(lib)}, {"version", 2}}},
                                      {"contentChanges", {{{"text", "fn helper(x) { return y }\n"}}}}});
  d = s.diagnostics(lsp::pathToUri(main));
  REQUIRE(d.size() == 1);
  CHECK(d[0]["range"]["start"]["line"] == 0);
  CHECK(d[0]["relatedInformation"][0]["location"]["uri"] == lsp::pathToUri(lib));
  // Closing the library buffer: the file on disk (unchanged, correct) is read again.
  s.notify("textDocument/didClose", {{"textDocument", {{"uri", lsp::pathToUri(lib)}}}});
  CHECK(s.diagnostics(lsp::pathToUri(main)).empty());
  llvm::sys::fs::remove_directories(dir);
}

TEST_CASE("-D values from a .mscclc file change the elaboration", "[lsp]") {
  llvm::SmallString<128> dir;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("lsp-flags", dir));
  std::string main = std::string(dir) + "/m.msccl";
  std::string text = "param n = 4\nprogram p(collective = AllReduce(n, 1, true)) { assert(n == 4, \"n is not 4\") }\n";
  Session s;
  s.open(lsp::pathToUri(main), text);
  CHECK(s.diagnostics(lsp::pathToUri(main)).empty());
  std::ofstream(std::string(dir) + "/.mscclc") << "# settings\n-D n=8\n";
  s.notify("workspace/didChangeConfiguration", {{"settings", json::object()}});
  json d = s.diagnostics(lsp::pathToUri(main));
  REQUIRE(d.size() == 1);
  CHECK(d[0]["message"].get<std::string>().find("n is not 4") != std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

TEST_CASE("protocol errors get JSON-RPC errors, not crashes", "[lsp]") {
  std::stringstream out;
  lsp::Server server(out);
  server.handle({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "textDocument/hover"}, {"params", json::object()}});
  std::string body;
  REQUIRE(lsp::readMessage(out, body));
  CHECK(json::parse(body)["error"]["code"] == -32002);
  server.handle({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "initialize"}, {"params", json::object()}});
  REQUIRE(lsp::readMessage(out, body));
  server.handle({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "textDocument/hover"}, {"params", {{"nope", 1}}}});
  REQUIRE(lsp::readMessage(out, body));
  CHECK(json::parse(body)["error"]["code"] == -32602);
  server.handle({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "textDocument/formatting"}, {"params", json::object()}});
  REQUIRE(lsp::readMessage(out, body));
  CHECK(json::parse(body)["error"]["code"] == -32601);
}

TEST_CASE("runServer: a whole session over streams", "[lsp]") {
  std::stringstream in, out;
  auto put = [&](const json &m) { lsp::writeMessage(in, m.dump()); };
  put({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}});
  put({{"jsonrpc", "2.0"}, {"method", "textDocument/didOpen"},
       {"params", {{"textDocument", {{"uri", "file:///tmp/lsp-r.msccl"}, {"version", 1}, {"text", "param x = \n"}}}}}});
  put({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "shutdown"}});
  put({{"jsonrpc", "2.0"}, {"method", "exit"}});
  CHECK(lsp::runServer(in, out) == 0);
  std::string body;
  bool gotInit = false, gotShutdown = false;
  while (lsp::readMessage(out, body)) {
    json m = json::parse(body);
    if (m.value("id", 0) == 1)
      gotInit = m["result"]["serverInfo"]["name"] == "msccl-lsp";
    if (m.value("id", 0) == 2)
      gotShutdown = m.contains("result") && m["result"].is_null();
  }
  CHECK(gotInit);
  CHECK(gotShutdown);
}

TEST_CASE("every line prefix of stdlib programs gets answers", "[lsp][prefix]") {
  for (const char *rel : {"allreduce/ring.msccl", "allreduce/nvls.msccl", "common/ring.msccl", "alltoall/allpairs.msccl"}) {
    std::string path = stdlibFile(rel);
    std::string text = readFile(path);
    std::string uri = lsp::pathToUri(path + ".prefix");
    Session s;
    s.open(uri, "");
    size_t pos = 0;
    int line = 0, version = 1;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      ++line;
      s.notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", ++version}}},
                                          {"contentChanges", {{{"text", text.substr(0, pos)}}}}});
      json d = s.diagnostics(uri);
      REQUIRE(d.is_array());
      // Hover, completion and semantic tokens at the end of the prefix and at its middle line.
      for (int l : {line - 1, line / 2}) {
        json h = s.request("textDocument/hover", s.at(uri, l, 8));
        CHECK(h.contains("result"));
        json c = s.request("textDocument/completion", s.at(uri, l, 12));
        CHECK(c["result"]["items"].is_array());
      }
      json t = s.request("textDocument/semanticTokens/full", {{"textDocument", {{"uri", uri}}}});
      CHECK(t["result"]["data"].size() % 5 == 0);
    }
  }
}
