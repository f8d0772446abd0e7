//===- SourceMapFileTest.cpp - Reading mscclc's --source-map files ----------------------===//
#include "msccl/runtime/SourceMapFile.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <string>

using msccl::runtime::SourceMapFile;

namespace {
std::string writeTemp(const std::string &text) {
  char name[] = "/tmp/msccl-srcmap-XXXXXX";
  int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}
} // namespace

TEST_CASE("a source map names the call of each op path, with its loop values", "[sourcemap]") {
  std::string f = writeTemp(R"({"version": 1, "ops": {
    "gpus[0].threadblocks[1].ops[3]": {"file": "ring.msccl", "line": 13, "col": 6,
      "context": [{"kind": "for", "file": "ring.msccl", "line": 10, "col": 3, "name": "gpu", "value": "2"},
                  {"kind": "call", "file": "ring.msccl", "line": 11, "col": 5, "name": "send"}]},
    "gpus[0].threadblocks[1].ops[4].ops[0]": {"file": "ring.msccl", "line": 20, "col": 9}}})");
  SourceMapFile m = SourceMapFile::read(f);
  std::remove(f.c_str());
  CHECK(m.size() == 2);
  CHECK(m.describe("gpus[0].threadblocks[1].ops[3]") == std::string("ring.msccl:13:6 (in for gpu = 2)"));
  CHECK(m.describe("gpus[0].threadblocks[1].ops[4].ops[0]") == std::string("ring.msccl:20:9"));
  CHECK_FALSE(m.describe("gpus[0].threadblocks[1].ops[5]"));
  // Every op path of a report gets the call after it, field suffixes included; others stay.
  CHECK(m.annotate("rank 0 tb 1 op 3 (put) at gpus[0].threadblocks[1].ops[3].dst_buff[0]: waits; "
                   "gpus[0].threadblocks[1].ops[4].ops[0] and gpus[1].threadblocks[0].ops[0]") ==
        "rank 0 tb 1 op 3 (put) at gpus[0].threadblocks[1].ops[3].dst_buff[0] [ring.msccl:13:6 (in for gpu = 2)]: "
        "waits; gpus[0].threadblocks[1].ops[4].ops[0] [ring.msccl:20:9] and gpus[1].threadblocks[0].ops[0]");
  CHECK(m.annotate("no paths here") == "no paths here");
}

TEST_CASE("a malformed source map is a clear error", "[sourcemap]") {
  CHECK_THROWS_WITH(SourceMapFile::read("/nonexistent/map.json"), Catch::Contains("cannot read source map"));
  for (auto [text, what] : {std::pair<const char *, const char *>{"{", "invalid JSON"},
                            {R"({"version": 2, "ops": {}})", "not a version 1 source map"},
                            {R"({"version": 1, "ops": {"gpus[0].threadblocks[0].ops[0]": {"line": 1}}})",
                             "ops[\"gpus[0].threadblocks[0].ops[0]\"]: needs `file` and `line`"},
                            {R"({"version": 1, "ops": {"gpus[0].threadblocks[0].ops[0]": {"file": 1, "line": 1}}})",
                             "ops[\"gpus[0].threadblocks[0].ops[0]\"]"}}) {
    std::string f = writeTemp(text);
    INFO(text);
    CHECK_THROWS_WITH(SourceMapFile::read(f), Catch::Contains(what));
    std::remove(f.c_str());
  }
}
