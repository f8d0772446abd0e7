// In-process tests of msccl::driver::CompilerSession (Session.h): a run stops after the phase
// asked for (Load, Check, Elaborate, Passes, Plan) or at the first phase that fails, afterPhase
// sees each phase in order, and the plan of Phase::Plan (and of compilePlan with a typed
// CompilerInvocation) is the one mscclc writes for the same program and options.
#include <catch2/catch.hpp>

#include "msccl/driver/Driver.h"
#include "msccl/driver/Session.h"
#include "msccl/plan/PlanJson.h"

#include <sstream>
#include <string>
#include <vector>

using msccl::driver::CompilerInvocation;
using msccl::driver::CompilerSession;
using msccl::driver::Phase;

namespace {

/// mscclc's stdout for `args` (exit status 0 required).
std::string mscclcOutput(std::vector<std::string> args) {
  args.insert(args.begin(), "mscclc");
  std::vector<const char *> argv;
  for (auto &a : args)
    argv.push_back(a.c_str());
  std::istringstream in;
  std::string out, err;
  llvm::raw_string_ostream os(out), es(err);
  const int rc = msccl::driver::runMscclc(static_cast<int>(argv.size()), argv.data(), in, os, es);
  os.flush();
  es.flush();
  INFO(err);
  REQUIRE(rc == 0);
  return out;
}

/// A session on `inv` whose diagnostics go to `err`, with its input read; the phases that
/// completed are appended to `done`.
std::unique_ptr<CompilerSession> session(const CompilerInvocation &inv, llvm::raw_ostream &err,
                                         std::vector<Phase> &done) {
  msccl::driver::SessionOptions so;
  so.afterPhase = [&done](Phase p, CompilerSession &) {
    done.push_back(p);
    return true;
  };
  auto s = std::make_unique<CompilerSession>(inv, err, so);
  std::istringstream none;
  REQUIRE(s->readInput(none));
  return s;
}

CompilerInvocation ring() {
  CompilerInvocation inv;
  inv.input = "stdlib:allreduce/ring";
  return inv;
}

} // namespace

TEST_CASE("a session stops after the phase asked for") {
  std::string err;
  llvm::raw_string_ostream es(err);
  std::vector<Phase> done;

  auto load = session(ring(), es, done);
  REQUIRE(load->run(Phase::Load));
  CHECK(load->unit().main != nullptr); // parsed, with its imports
  CHECK(load->unit().modules.size() > 1);
  CHECK(done == std::vector<Phase>{Phase::Load});

  done.clear();
  auto check = session(ring(), es, done);
  REQUIRE(check->run(Phase::Check));
  CHECK(check->unit().program != nullptr); // the checked AST's program declaration
  CHECK(check->program() == nullptr);      // nothing elaborated
  CHECK(check->plan() == nullptr);
  CHECK(done == std::vector<Phase>{Phase::Load, Phase::Check});

  done.clear();
  auto elab = session(ring(), es, done);
  REQUIRE(elab->run(Phase::Elaborate));
  REQUIRE(elab->program() != nullptr);
  CHECK(elab->program()->ir().gpus.size() == 8); // the ring's default ranks
  CHECK(elab->plan() == nullptr);
  CHECK(done == std::vector<Phase>{Phase::Load, Phase::Check, Phase::Elaborate});

  done.clear();
  auto passes = session(ring(), es, done);
  REQUIRE(passes->run(Phase::Passes));
  CHECK(passes->program() != nullptr);
  CHECK(passes->plan() == nullptr);
  CHECK_FALSE(passes->streaming());
  CHECK(done == std::vector<Phase>{Phase::Load, Phase::Check, Phase::Elaborate, Phase::Passes});

  // Plan: the passes run while lowering (no separate Passes step), and the plan is verified.
  done.clear();
  auto planned = session(ring(), es, done);
  REQUIRE(planned->run(Phase::Plan));
  REQUIRE(planned->plan() != nullptr);
  CHECK(planned->sourceMap() != nullptr); // the verifier placed its findings through it
  CHECK(done == std::vector<Phase>{Phase::Load, Phase::Check, Phase::Elaborate, Phase::Plan});
  CHECK(msccl::plan::writePlan(*planned->plan()) == mscclcOutput({"stdlib:allreduce/ring"}));
  es.flush();
  CHECK(err.empty());
}

TEST_CASE("a session stops at the first phase that fails") {
  std::vector<Phase> done;
  std::string err;
  llvm::raw_string_ostream es(err);
  CompilerInvocation inv;
  inv.input = "-";
  // A check error: Check fails, nothing is elaborated.
  {
    CompilerSession s(inv, es);
    s.setMainBuffer(llvm::MemoryBuffer::getMemBufferCopy(
        "program p(collective = AllReduce(2, 1, true)) { let x = nope }\n", "<check>"));
    CHECK_FALSE(s.run(Phase::Plan));
    CHECK(s.unit().main != nullptr);
    CHECK(s.program() == nullptr);
    CHECK(s.plan() == nullptr);
  }
  // An elaboration error: no program, no plan.
  {
    CompilerSession s(inv, es);
    s.setMainBuffer(llvm::MemoryBuffer::getMemBufferCopy(
        "program p(collective = AllReduce(2, 1, true)) { let x = 1 / 0 }\n", "<elab>"));
    CHECK_FALSE(s.run(Phase::Plan));
    CHECK(s.program() == nullptr);
    CHECK(s.plan() == nullptr);
  }
  // afterPhase returning false stops the run there.
  {
    msccl::driver::SessionOptions so;
    so.afterPhase = [&done](Phase p, CompilerSession &) {
      done.push_back(p);
      return p != Phase::Check;
    };
    CompilerSession s(ring(), es, so);
    std::istringstream none;
    REQUIRE(s.readInput(none));
    CHECK_FALSE(s.run(Phase::Plan));
    CHECK(done == std::vector<Phase>{Phase::Load, Phase::Check});
    CHECK(s.program() == nullptr);
  }
  es.flush();
  CHECK(err.find("<check>:1:") != std::string::npos);
  CHECK(err.find("division by zero") != std::string::npos);
}

TEST_CASE("a typed invocation compiles as mscclc's command line does") {
  CompilerInvocation inv = ring();
  inv.instances = 2;
  inv.defines = {{"ranks", "4"}};
  std::istringstream none;
  std::string err;
  llvm::raw_string_ostream es(err);
  std::optional<msccl::plan::Plan> p = msccl::driver::compilePlan(inv, none, es);
  es.flush();
  INFO(err);
  REQUIRE(p);
  CHECK(msccl::plan::writePlan(*p) == mscclcOutput({"stdlib:allreduce/ring", "--instances=2", "-D", "ranks=4"}));
  // The protocol too, and the conversion of the command line types both.
  inv.protocol = "LL";
  std::istringstream none2;
  std::optional<msccl::plan::Plan> ll = msccl::driver::compilePlan(inv, none2, es);
  REQUIRE(ll);
  CHECK(msccl::plan::writePlan(*ll) ==
        mscclcOutput({"stdlib:allreduce/ring", "--instances=2", "--protocol=LL", "-D", "ranks=4"}));
  msccl::driver::MscclcOptions mo;
  mo.input = "stdlib:allreduce/ring";
  mo.instances = "2";
  mo.protocol = "LL";
  mo.defines = {"ranks=4"};
  std::optional<CompilerInvocation> conv = msccl::driver::toInvocation(mo, es);
  REQUIRE(conv);
  CHECK(conv->instances == std::optional<uint32_t>(2));
  CHECK(conv->protocol == std::optional<std::string>("LL"));
  CHECK(conv->optionOverrides.empty());
  CHECK(conv->defines == std::vector<std::pair<std::string, std::string>>{{"ranks", "4"}});
  // A value that is no decimal number is left for elaboration to report, as mscclc always has.
  mo.instances = "two";
  conv = msccl::driver::toInvocation(mo, es);
  REQUIRE(conv);
  CHECK_FALSE(conv->instances);
  CHECK(conv->optionOverrides ==
        std::vector<std::pair<std::string, std::string>>{{"instances", "two"}, {"protocol", "LL"}});
  mo.defines = {"ranks"};
  CHECK_FALSE(msccl::driver::toInvocation(mo, es));
  es.flush();
  CHECK(err.find("mscclc: error: bad -D argument `ranks`: expected NAME=VALUE") != std::string::npos);
}
