//===- BenchLsp.cpp - msccl-lsp: change -> diagnostics latency, memory after edits ------===//
//
// Drives the language server in-process (msccl/lsp/Server.h) the way an editor does:
// 1. for every stdlib program at 8 and 64 ranks (a `param ranks` set through the LSP settings'
//    defines): the time from a didChange to its published diagnostics (median and max of
//    several edits; each edit re-runs parse, check, elaboration and pass validation);
// 2. the largest program (slowest at 64 ranks) edited N times (default 1000), with the server's
//    memory (resident set, and bytes in use by malloc) before and after;
// 3. every line prefix of every stdlib file: the slowest answer (analysis + hover + completion).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/elab/Loader.h"
#include "msccl/lsp/Server.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using nlohmann::json;
using namespace msccl;

namespace {

/// Process CPU time in ms (the machine may be shared: wall times include waiting for a core).
double cpuNow() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }
double now() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

size_t rssBytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}
size_t heapBytes() { return mallinfo2().uordblks; }

std::string readFile(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A server writing into a string stream that is emptied after each step.
struct Bench {
  std::stringstream out;
  lsp::Server server{out};
  int version = 1, id = 1;
  explicit Bench(int ranks) {
    server.handle({{"jsonrpc", "2.0"}, {"id", id++}, {"method", "initialize"},
                   {"params", {{"initializationOptions", {{"defines", {{"ranks", ranks}}}}}}}});
    drain();
  }
  size_t drain() {
    size_t n = out.str().size();
    out.str("");
    out.clear();
    return n;
  }
  void open(const std::string &uri, const std::string &text) {
    server.handle({{"jsonrpc", "2.0"}, {"method", "textDocument/didOpen"},
                   {"params", {{"textDocument", {{"uri", uri}, {"version", version}, {"text", text}}}}}});
    server.flush();
    drain();
  }
  /// didChange (full text) -> published diagnostics; returns ms, and whether any was an error.
  double lastCpu = 0;
  double change(const std::string &uri, const std::string &text, bool *errors = nullptr) {
    double c0 = cpuNow();
    double t0 = now();
    server.handle({{"jsonrpc", "2.0"}, {"method", "textDocument/didChange"},
                   {"params", {{"textDocument", {{"uri", uri}, {"version", ++version}}}, {"contentChanges", {{{"text", text}}}}}}});
    server.flush();
    double t = now() - t0;
    lastCpu = cpuNow() - c0;
    if (errors)
      *errors = out.str().find("\"severity\":1") != std::string::npos;
    drain();
    return t;
  }
  void request(const std::string &method, const std::string &uri, int line, int ch) {
    server.handle({{"jsonrpc", "2.0"}, {"id", id++}, {"method", method},
                   {"params", {{"textDocument", {{"uri", uri}}}, {"position", {{"line", line}, {"character", ch}}}}}});
    drain();
  }
};

std::vector<std::string> stdlibFiles(bool programsOnly) {
  std::vector<std::string> out;
  std::string dir = elab::defaultStdlibDir();
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    std::string p = it->path();
    if (llvm::StringRef(p).endswith(".msccl") && (!programsOnly || readFile(p).find("\nprogram ") != std::string::npos))
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

int main(int argc, char **argv) {
  int edits = 1000;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--edits") && i + 1 < argc)
      edits = std::max(1, std::atoi(argv[++i]));
  std::string stdlib = elab::defaultStdlibDir();

  std::printf("msccl-lsp benchmark: change -> published diagnostics (parse, check, elaborate, pass validation)\n");
  std::printf("wall ms (median, max of 9 edits) and CPU ms (median); CPU time does not count waiting for a shared core\n");
  std::printf("%-32s %10s %10s %10s %10s %10s %10s\n", "program", "8r med", "8r max", "8r cpu", "64r med", "64r max", "64r cpu");
  std::string largest;
  double largestMs = -1;
  for (const std::string &path : stdlibFiles(true)) {
    std::string text = readFile(path);
    std::string rel = path.substr(stdlib.size() + 1);
    double med[2], mx[2], cpu[2];
    bool errs = false;
    for (int k = 0; k < 2; ++k) {
      Bench b(k == 0 ? 8 : 64);
      std::string uri = lsp::pathToUri(path);
      b.open(uri, text);
      std::vector<double> ts, cs;
      for (int e = 0; e < 9; ++e) {
        bool err = false;
        ts.push_back(b.change(uri, text + std::string(static_cast<size_t>(e % 2), '\n'), &err));
        cs.push_back(b.lastCpu);
        errs = errs || err;
      }
      std::sort(ts.begin(), ts.end());
      std::sort(cs.begin(), cs.end());
      cpu[k] = cs[cs.size() / 2];
      med[k] = ts[ts.size() / 2];
      mx[k] = ts.back();
    }
    std::printf("%-32s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f%s\n", rel.c_str(), med[0], mx[0], cpu[0], med[1], mx[1], cpu[1],
                errs ? "  (has errors at these ranks)" : "");
    if (cpu[1] > largestMs) {
      largestMs = cpu[1];
      largest = path;
    }
  }
  std::printf("largest program (slowest at 64 ranks): %s\n\n", largest.substr(stdlib.size() + 1).c_str());

  // Memory after N edits of the largest program (8 ranks); the one live document.
  {
    Bench b(8);
    std::string uri = lsp::pathToUri(largest);
    std::string text = readFile(largest);
    b.open(uri, text);
    for (int e = 0; e < 20; ++e) // warm-up: allocator pools, the builtin tables
      b.change(uri, text + (e % 2 ? " " : ""));
    malloc_trim(0);
    size_t rss0 = rssBytes(), heap0 = heapBytes();
    double t0 = now();
    for (int e = 0; e < edits; ++e) {
      // Alternate a typo (an error) and the fixed text, with incremental changes.
      std::string edited = text;
      if (e % 2) {
        size_t at = edited.find("range(");
        if (at != std::string::npos)
          edited.replace(at, 5, "rnage");
      }
      edited += "// edit " + std::to_string(e) + "\n";
      b.change(uri, edited);
    }
    double t = now() - t0;
    malloc_trim(0);
    size_t rss1 = rssBytes(), heap1 = heapBytes();
    std::printf("%d edits of %s at 8 ranks: %.2f ms per edit (analysed and published)\n", edits,
                largest.substr(stdlib.size() + 1).c_str(), t / edits);
    std::printf("server memory: resident %.1f MiB -> %.1f MiB; malloc in use %.2f MiB -> %.2f MiB (1 open document)\n\n",
                rss0 / 1048576.0, rss1 / 1048576.0, heap0 / 1048576.0, heap1 / 1048576.0);
  }

  // Every line prefix of every stdlib file: the slowest analysis + hover + completion.
  {
    double worst = 0;
    std::string worstAt;
    size_t answers = 0;
    for (const std::string &path : stdlibFiles(false)) {
      Bench b(8);
      std::string uri = lsp::pathToUri(path + ".prefix");
      std::string text = readFile(path);
      b.open(uri, "");
      size_t pos = 0;
      int line = 0;
      while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        pos = nl == std::string::npos ? text.size() : nl + 1;
        ++line;
        double t0 = now();
        b.change(uri, text.substr(0, pos));
        b.request("textDocument/hover", uri, line - 1, 8);
        b.request("textDocument/completion", uri, line - 1, 12);
        double t = now() - t0;
        answers += 3;
        if (t > worst) {
          worst = t;
          worstAt = path.substr(stdlib.size() + 1) + ":" + std::to_string(line);
        }
      }
    }
    std::printf("every line prefix of every stdlib file (8 ranks): %zu answers, slowest change+hover+completion %.2f ms (%s)\n",
                answers, worst, worstAt.c_str());
  }
  return 0;
}
