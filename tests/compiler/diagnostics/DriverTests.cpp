// In-process tests of msccl::driver::runMscclc: streams, exit codes, output files, repeated runs
// in one process (llvm::cl state is reset per call).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "msccl/driver/Driver.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

#include <sstream>
#include <string>
#include <vector>

namespace {
struct Run {
  int rc;
  std::string out, err;
};

Run run(std::vector<std::string> args, const std::string &stdinText = "") {
  args.insert(args.begin(), "mscclc");
  std::vector<const char *> argv;
  for (auto &a : args)
    argv.push_back(a.c_str());
  std::istringstream in(stdinText);
  std::string out, err;
  llvm::raw_string_ostream os(out), es(err);
  int rc = msccl::driver::runMscclc(static_cast<int>(argv.size()), argv.data(), in, os, es);
  os.flush();
  es.flush();
  return {rc, out, err};
}

const char *kProgram = R"(
param n = 2
program tiny(collective = AllReduce(n, 1, true)) {
  for r in range(n) {
    let i = Rank(r).get_input_buffer()
    Rank(r).copy(i[0:1], i[1:2], tb = 0)
  }
}
)";
} // namespace

// kProgram is no AllReduce (it copies a chunk): runs that test other things pass --no-verify.
TEST_CASE("stdin input compiles to a JSON plan on the out stream") {
  Run r = run({"-", "--no-verify"}, kProgram);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("\"name\": \"tiny\"") != std::string::npos);
  CHECK(r.out.back() == '\n');
}

TEST_CASE("options do not leak between in-process runs") {
  Run a = run({"-", "-D", "n=3", "--instances=2", "--no-verify"}, kProgram);
  REQUIRE(a.rc == 0);
  CHECK(a.out.find("\"id\": 2,") != std::string::npos);
  Run b = run({"-", "--no-verify"}, kProgram);
  REQUIRE(b.rc == 0);
  CHECK(b.out.find("\"id\": 2,") == std::string::npos); // only ranks 0 and 1, one instance
  CHECK(b.out.find("\"input_chunks\": 2,") != std::string::npos);
}

TEST_CASE("the plan is verified by default; --no-verify does not leak into the next run") {
  Run off = run({"-", "--no-verify"}, kProgram);
  CHECK(off.rc == 0);
  Run on = run({"-"}, kProgram);
  CHECK(on.rc == 1);
  CHECK(on.out.empty());
  // At the copy that wrote the wrong value (line 6 of kProgram), not at `program`.
  CHECK(on.err.find("<stdin>:6:13: error: the plan is wrong: postcondition: gpus[0]: at the end of launch 0, rank 0's "
                    "output chunk 0 holds input chunk 1 of rank 0; allreduce requires the sum of input chunk 0 of "
                    "ranks {0,1} (written last by rank 0 tb 0 op 0)") != std::string::npos);
}

TEST_CASE("compile errors go to the err stream with exit code 1") {
  Run r = run({"-"}, "program p(collective = AllReduce(2, 1, true)) {\n  let x = Rank(5)\n}\n");
  CHECK(r.rc == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("<stdin>:2:11: error: Rank 5 is out of bounds. Number of ranks: 2") != std::string::npos);
}

TEST_CASE("bad command lines fail cleanly") {
  CHECK(run({"-", "-D", "n"}, kProgram).rc == 1);
  CHECK(run({"-", "-D", "m=1"}, kProgram).rc == 1);
  CHECK(run({"/no/such/file.msccl"}).rc == 1);
  CHECK(run({}).rc == 1);
  CHECK(run({"-", "--emit=nope"}, kProgram).rc == 1); // llvm::cl reports value errors on llvm::errs()
  Run r = run({"-", "--no-such-flag"}, kProgram);
  CHECK(r.rc == 1);
  CHECK(r.err.find("--no-such-flag") != std::string::npos);
}

TEST_CASE("-o writes the file and only on success") {
  llvm::SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("mscclc-test", "json", path));
  llvm::sys::fs::remove(path);
  Run ok = run({"-", "-o", std::string(path), "--no-verify"}, kProgram);
  REQUIRE(ok.rc == 0);
  CHECK(ok.out.empty());
  auto buf = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buf);
  CHECK((*buf)->getBuffer().contains("\"collective\": \"allreduce\""));
  llvm::sys::fs::remove(path);
  Run bad = run({"-", "-o", std::string(path)}, "program p(collective = AllReduce(2, 1, true)) { let x = 1 / 0 }");
  CHECK(bad.rc == 1);
  CHECK(!llvm::sys::fs::exists(path));
  CHECK(run({"-", "-o", "/no/such/dir/x.json"}, kProgram).rc == 1);
}

TEST_CASE("--verify-diagnostics passes on matching and fails on mismatching expectations") {
  llvm::SmallString<128> path;
  int fd;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("mscclc-verify", "msccl", fd, path));
  {
    llvm::raw_fd_ostream os(fd, true);
    os << "program p(collective = AllReduce(2, 1, true)) {\n"
          "  let x = 1 % 0 // expected-error {{integer modulo by zero}}\n"
          "}\n// -----\n"
          "program p(collective = AllReduce(2, 1, true)) {\n"
          "  // expected-error@+1 {{unknown name `y`}}\n"
          "  let x = y\n}\n";
  }
  Run good = run({"--verify-diagnostics", std::string(path)});
  CHECK(good.rc == 0);
  CHECK(good.err.empty());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << "program p(collective = AllReduce(2, 1, true)) {\n  let x = 1 % 0 // expected-error {{other text}}\n}\n";
  }
  Run bad = run({"--verify-diagnostics", std::string(path)});
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("unexpected error: integer modulo by zero") != std::string::npos);
  CHECK(bad.err.find("expected error not produced: \"other text\"") != std::string::npos);
  llvm::sys::fs::remove(path);
}

TEST_CASE("the language example compiles as written") {
  std::string file = std::string(MSCCL_SHARED_DIR) + "/examples/allreduce_nvls.msccl";
  if (!llvm::sys::fs::exists(file)) {
    WARN("shared examples absent; skipped: " << file);
    return;
  }
  Run r = run({file});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\"name\": \"allreduce_nvls\"") != std::string::npos);
}

TEST_CASE("--version prints the project version and exits 0") {
  Run r = run({"--version"});
  CHECK(r.rc == 0);
  CHECK(r.out.rfind("mscclc (msccl) ", 0) == 0);
  CHECK(r.out.find('.') != std::string::npos);
}

TEST_CASE("misspelled pass and stdlib names get a suggestion") {
  Run pass = run({"-", "--print-after=fusoin"}, kProgram);
  CHECK(pass.rc == 1);
  CHECK(pass.err.find("unknown pass (did you mean `fusion`?)") != std::string::npos);
  Run lib = run({"stdlib:allreduce/rnig"});
  CHECK(lib.rc == 1);
  CHECK(lib.err.find("no stdlib program `allreduce/rnig`") != std::string::npos);
  CHECK(lib.err.find("(did you mean `allreduce/ring`?)") != std::string::npos);
  Run far = run({"stdlib:zzzzzzzzzz"});
  CHECK(far.rc == 1);
  CHECK(far.err.find("did you mean") == std::string::npos);
}

TEST_CASE("the options struct drives a run without a command line, and runs are independent") {
  msccl::driver::MscclcOptions o;
  o.input = "-";
  o.defines = {"n=3"};
  o.compact = true;
  o.noVerify = true; // kProgram is a toy, not a correct AllReduce
  std::istringstream in(kProgram);
  std::string out, err;
  llvm::raw_string_ostream os(out), es(err);
  REQUIRE(msccl::driver::runMscclc(o, in, os, es) == 0);
  os.flush();
  CHECK(out.find("\"id\":2,") != std::string::npos);
  CHECK(out.find('\n') == out.size() - 1); // compact: one line
  // A command-line run right after sees none of it: indented, two ranks.
  Run b = run({"-", "--no-verify"}, kProgram);
  REQUIRE(b.rc == 0);
  CHECK(b.out.find("\"id\": 2,") == std::string::npos);
  CHECK(b.out.find("\n  ") != std::string::npos);
  // Parsing fills the struct and nothing else.
  const char *argv[] = {"mscclc", "stdlib:allreduce/ring", "-Dranks=4", "--no-fusion", "--print-after=fusion,dependency"};
  msccl::driver::MscclcOptions parsed;
  std::string perr;
  llvm::raw_string_ostream pes(perr);
  REQUIRE(msccl::driver::parseMscclcCommandLine(5, argv, parsed, os, pes) == -1);
  CHECK(parsed.input == "stdlib:allreduce/ring");
  CHECK(parsed.defines == std::vector<std::string>{"ranks=4"});
  CHECK(parsed.noFusion);
  CHECK(parsed.printAfter == std::vector<std::string>{"fusion", "dependency"});
  msccl::driver::MscclcOptions again;
  const char *plain[] = {"mscclc", "x.msccl"};
  REQUIRE(msccl::driver::parseMscclcCommandLine(2, plain, again, os, pes) == -1);
  CHECK(again.defines.empty());
  CHECK_FALSE(again.noFusion);
  CHECK(again.printAfter.empty());
}

TEST_CASE("compilePlan returns the plan in memory") {
  msccl::driver::CompilerInvocation o;
  o.input = "-";
  o.defines = {{"n", "4"}};
  o.noVerify = true; // kProgram is a toy, not a correct AllReduce
  std::istringstream in(kProgram);
  std::string err;
  llvm::raw_string_ostream es(err);
  std::optional<msccl::plan::Plan> p = msccl::driver::compilePlan(o, in, es);
  REQUIRE(p);
  CHECK(p->gpus.size() == 4);
  CHECK(p->collective == "allreduce");
  std::istringstream bad("program p(collective = AllReduce(2, 1, true)) { let x = 1 / 0 }");
  o.defines.clear();
  CHECK_FALSE(msccl::driver::compilePlan(o, bad, es));
  es.flush();
  CHECK(err.find("division by zero") != std::string::npos);
}

TEST_CASE("a file without tokens is a located error, not an abort") {
  for (const char *text : {"", "\n\n  \t\n", "// only a comment", "/* block */\n// line\n"}) {
    Run r = run({"-"}, text);
    CHECK(r.rc == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("<stdin>:1:1: error: no `program` in `<stdin>`") != std::string::npos);
  }
}

TEST_CASE("hostile sources end in a diagnostic") {
  // Bytes that are not UTF-8 (ANTLR's decoder used to throw and abort mscclc).
  Run bad = run({"-"}, std::string("program p(collective = AllReduce(2, 1, true)) {\n  let s = \"\xfe\"\n}\n"));
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("<stdin>:2:12: error: invalid UTF-8 in source file (byte 0xFE)") != std::string::npos);
  // Thousands of nested parentheses (stack overflow, and super-linear time before it).
  std::string deep = "program p(collective = AllReduce(2, 1, true)) {\n  let x = " + std::string(20000, '(') + "1" +
                     std::string(20000, ')') + "\n}\n";
  Run nested = run({"-"}, deep);
  CHECK(nested.rc == 1);
  CHECK(nested.err.find("<stdin>:2:210: error: too many nested brackets (more than 200)") != std::string::npos);
  // An instances override above the limit.
  Run inst = run({"-", "--instances=5000", "--no-verify"}, kProgram);
  CHECK(inst.rc == 1);
  CHECK(inst.err.find("program option `instances`: must be at most 1024, got 5000") != std::string::npos);
}
