//===- main.cpp - msccl-lsp: the .msccl language server over stdio ----------------------===//
// All logic lives in msccl/lsp/Server.h; this parses the few flags and serves stdin/stdout.
#include "msccl/lsp/Server.h"

#include <cstring>
#include <iostream>

int main(int argc, char **argv) {
  msccl::lsp::ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!std::strcmp(a, "--stdio"))
      continue; // what LSP clients pass for the stdio transport (the only one)
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      std::cout << "usage: msccl-lsp [--stdio] [-D NAME=VALUE] [-I DIR]\n"
                   "The .msccl language server (LSP 3.17 over stdin/stdout). Settings: see docs/editor.md.\n";
      return 0;
    }
    if (!std::strcmp(a, "--version")) {
      std::cout << "msccl-lsp 0.1.0\n";
      return 0;
    }
    if (!std::strncmp(a, "-D", 2) || !std::strncmp(a, "-I", 2)) {
      std::string v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "");
      if (a[1] == 'I') {
        o.analysis.path.includeDirs.push_back(v);
        continue;
      }
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "msccl-lsp: error: bad -D value `" << v << "` (expected NAME=VALUE)\n";
        return 1;
      }
      o.analysis.defines.push_back({v.substr(0, eq), v.substr(eq + 1)});
      continue;
    }
    std::cerr << "msccl-lsp: error: unknown argument `" << a << "` (see --help)\n";
    return 1;
  }
  std::ios::sync_with_stdio(false);
  return msccl::lsp::runServer(std::cin, std::cout, std::move(o));
}
