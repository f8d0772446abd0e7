// compile(): in-process mscclc behind the on-disk cache. A second compile is a hit; a change of
// the source, of an imported file (relative or stdlib), of a -D value or option override, or of
// the compiler version is a miss; a corrupt entry is recompiled and replaced, never trusted.
#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace msccl;
namespace fs = std::filesystem;

namespace {

const std::string kStdlib = MSCCL_STDLIB_SOURCE_DIR;

CompileParams paramsIn(const test::TempDir &cache) {
  CompileParams p;
  p.cacheDir = cache.str();
  p.defines = {{"ranks", "2"}};
  return p;
}

size_t entries(const test::TempDir &cache) {
  size_t n = 0;
  for (auto &e : fs::directory_iterator(cache.path)) {
    std::string name = e.path().filename().string();
    CHECK(name.find(".tmp.") == std::string::npos); // no temporary file left behind
    n += e.path().extension() == ".plan";
  }
  return n;
}

/// src/main.msccl: stdlib sendrecv/pairs importing src/lib.msccl (one unused function).
void writeProgramWithImport(const test::TempDir &src) {
  test::writeFile(src.file("lib.msccl"), "fn unused_helper(x) { return x + 1 }\n");
  test::writeFile(src.file("main.msccl"),
                  "import \"lib.msccl\"\n" + test::readFile(kStdlib + "/sendrecv/pairs.msccl"));
}

} // namespace

TEST_CASE("a second compile is a cache hit with the same plan", "[cache]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  CompileInfo first, second;
  PlanPtr a = compile("stdlib:sendrecv/pairs", p, &first);
  CHECK_FALSE(first.cacheHit);
  CHECK(first.key.size() == 64);
  CHECK(fs::exists(first.cacheFile));
  REQUIRE(first.sources.size() >= 3); // the program and its imports
  CHECK_THAT(first.sources[0], Catch::EndsWith("sendrecv/pairs.msccl"));
  PlanPtr b = compile("stdlib:sendrecv/pairs", p, &second);
  CHECK(second.cacheHit);
  CHECK(second.key == first.key);
  CHECK(*a == *b);
  CHECK(entries(cache) == 1);
  // Without the cache nothing is read or written.
  test::TempDir other;
  CompileParams off = paramsIn(other);
  off.useCache = false;
  CompileInfo none;
  compile("stdlib:sendrecv/pairs", off, &none);
  CHECK_FALSE(none.cacheHit);
  CHECK(none.key.empty());
  CHECK(fs::is_empty(other.path));
}

TEST_CASE("source text: a change of the text is a miss", "[cache]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  std::string text = test::readFile(kStdlib + "/sendrecv/pairs.msccl");
  CompileInfo i1, i2, i3;
  compileSource(text, p, "pairs", &i1);
  compileSource(text, p, "pairs", &i2);
  CHECK_FALSE(i1.cacheHit);
  CHECK(i2.cacheHit);
  compileSource(text + "\n// an edit\n", p, "pairs", &i3);
  CHECK_FALSE(i3.cacheHit);
  CHECK(i3.key != i1.key);
  CHECK(entries(cache) == 2);
}

TEST_CASE("an import's change is a miss (relative import and stdlib module)", "[cache]") {
  test::TempDir cache, src, stdlib;
  CompileParams p = paramsIn(cache);
  // A program importing a file beside it.
  writeProgramWithImport(src);
  CompileInfo i1, i2, i3, i4;
  compile(src.file("main.msccl"), p, &i1);
  CHECK(std::find(i1.sources.begin(), i1.sources.end(), src.file("lib.msccl")) != i1.sources.end());
  compile(src.file("main.msccl"), p, &i2);
  CHECK(i2.cacheHit);
  test::writeFile(src.file("lib.msccl"), "fn unused_helper(x) { return x + 2 }\n");
  compile(src.file("main.msccl"), p, &i3);
  CHECK_FALSE(i3.cacheHit);
  CHECK(i3.key != i1.key);
  compile(src.file("main.msccl"), p, &i4);
  CHECK(i4.cacheHit);

  // A stdlib module imported by a stdlib program (a private copy of the stdlib).
  fs::copy(kStdlib, stdlib.path, fs::copy_options::recursive);
  p.stdlibDir = stdlib.str();
  CompileInfo s1, s2, s3;
  compile("stdlib:sendrecv/pairs", p, &s1);
  compile("stdlib:sendrecv/pairs", p, &s2);
  CHECK(s2.cacheHit);
  std::string checks = stdlib.file("common/checks.msccl");
  test::writeFile(checks, test::readFile(checks) + "\n// edited\n");
  compile("stdlib:sendrecv/pairs", p, &s3);
  CHECK_FALSE(s3.cacheHit);
}

TEST_CASE("parameters and the compiler version key the cache", "[cache]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  CompileInfo base, define, option, version, again;
  compile("stdlib:sendrecv/pairs", p, &base);
  CompileParams d = p;
  d.defines = {{"ranks", "4"}};
  PlanPtr four = compile("stdlib:sendrecv/pairs", d, &define);
  CHECK_FALSE(define.cacheHit);
  CHECK(four->gpus.size() == 4);
  CompileParams o = p;
  o.options = {{"instances", "2"}};
  compile("stdlib:sendrecv/pairs", o, &option);
  CHECK_FALSE(option.cacheHit);
  CompileParams v = p;
  v.compilerVersionOverride = "msccl 99.0.0 (test)";
  compile("stdlib:sendrecv/pairs", v, &version);
  CHECK_FALSE(version.cacheHit);
  std::set<std::string> keys{base.key, define.key, option.key, version.key};
  CHECK(keys.size() == 4);
  compile("stdlib:sendrecv/pairs", p, &again);
  CHECK(again.cacheHit);
  CHECK(again.key == base.key);
  CHECK_THAT(compilerVersion(), Catch::StartsWith("msccl "));
}

TEST_CASE("the target: mscclpp's per-threadblock limits, or msccl's executors without them", "[cache]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  p.defines = {{"ranks", "64"}};
  // 73 ops in one threadblock: past the MSCCL++ executor's 64 for the default target.
  try {
    compile("stdlib:allreduce/rabenseifner", p);
    FAIL("the default target accepted 73 ops in one threadblock");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::CompileError);
    CHECK_THAT(e.what(), Catch::Contains("exceed the executor limit of 64 (MAX_OPERATION)"));
  }
  CompileParams m = p;
  m.target = "msccl";
  CompileInfo info;
  PlanPtr plan = compile("stdlib:allreduce/rabenseifner", m, &info);
  CHECK(plan->gpus.size() == 64);
  CHECK(plan->gpus[0].threadblocks[0].ops.size() == 73);
  // The target keys the cache: the same program for mscclpp at 32 ranks is another entry.
  CompileParams small = paramsIn(cache), smallMsccl = paramsIn(cache);
  small.defines = smallMsccl.defines = {{"ranks", "32"}};
  smallMsccl.target = "msccl";
  CompileInfo a, b;
  compile("stdlib:allreduce/rabenseifner", small, &a);
  compile("stdlib:allreduce/rabenseifner", smallMsccl, &b);
  CHECK(a.key != b.key);
  CompileParams bad = p;
  bad.target = "nccl";
  try {
    compile("stdlib:allreduce/rabenseifner", bad);
    FAIL("an unknown target was accepted");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
  }
}

TEST_CASE("a corrupt entry is recompiled and replaced", "[cache]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  CompileInfo i1;
  PlanPtr good = compile("stdlib:sendrecv/pairs", p, &i1);
  const std::string entry = i1.cacheFile;
  std::string original = test::readFile(entry);

  SECTION("garbage") { test::writeFile(entry, "not a cache entry"); }
  SECTION("truncated") { test::writeFile(entry, original.substr(0, original.size() / 2)); }
  SECTION("valid JSON with a changed value (checksum)") {
    std::string tampered = original;
    size_t at = tampered.find("\"collective\":\"sendrecv\"");
    REQUIRE(at != std::string::npos);
    tampered.replace(at, 23, "\"collective\":\"allgather\"");
    test::writeFile(entry, tampered);
  }
  CompileInfo i2, i3;
  PlanPtr again = compile("stdlib:sendrecv/pairs", p, &i2);
  CHECK_FALSE(i2.cacheHit);
  CHECK(i2.cacheRepaired);
  CHECK(*again == *good);
  CHECK(test::readFile(entry) == original);
  compile("stdlib:sendrecv/pairs", p, &i3);
  CHECK(i3.cacheHit);
  CHECK(entries(cache) == 1);
}

TEST_CASE("the cache directory: MSCCL_CACHE_DIR, XDG_CACHE_HOME, HOME", "[cache]") {
  auto saved = [](const char *n) -> std::optional<std::string> {
    const char *v = std::getenv(n);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char *n, const std::optional<std::string> &v) {
    if (v)
      ::setenv(n, v->c_str(), 1);
    else
      ::unsetenv(n);
  };
  auto c = saved("MSCCL_CACHE_DIR"), x = saved("XDG_CACHE_HOME"), h = saved("HOME");
  ::setenv("MSCCL_CACHE_DIR", "/tmp/a", 1);
  ::setenv("XDG_CACHE_HOME", "/tmp/x", 1);
  ::setenv("HOME", "/tmp/h", 1);
  CHECK(defaultCacheDir() == "/tmp/a");
  ::unsetenv("MSCCL_CACHE_DIR");
  CHECK(defaultCacheDir() == "/tmp/x/msccl");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(defaultCacheDir() == "/tmp/h/.cache/msccl");
  restore("MSCCL_CACHE_DIR", c);
  restore("XDG_CACHE_HOME", x);
  restore("HOME", h);
  // An unwritable cache directory is not an error.
  CompileParams p;
  p.defines = {{"ranks", "2"}};
  p.cacheDir = "/proc/msccl-cannot-write-here";
  CompileInfo info;
  PlanPtr plan = compile("stdlib:sendrecv/pairs", p, &info);
  CHECK(plan->gpus.size() == 2);
  CHECK(info.cacheFile.empty());
}

TEST_CASE("compile errors carry mscclc's diagnostics", "[cache]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  try {
    compileSource("program broken(collective = AllReduce(2, 1, false)) {\n  let x = \n}\n", p);
    FAIL("no error");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::CompileError);
    CHECK_THAT(e.what(), Catch::Contains(":2:"));
  }
  try {
    compile(cache.file("missing.msccl"), p);
    FAIL("no error");
  } catch (const Error &e) {
    CHECK(e.code() == ErrorCode::System);
    CHECK_THAT(e.what(), Catch::Contains("missing.msccl"));
  }
  CompileParams bad = p;
  bad.defines = {{"ranks", "1"}};
  CHECK_THROWS_WITH(compile("stdlib:sendrecv/pairs", bad), Catch::Contains("needs at least 2 ranks"));
  CHECK(fs::is_empty(cache.path)); // failures are not cached
}

TEST_CASE("the manifest: hits without parsing, never trusted blindly", "[cache]") {
  test::TempDir cache, src;
  CompileParams p = paramsIn(cache);
  writeProgramWithImport(src);
  CompileInfo first, hit;
  compile(src.file("main.msccl"), p, &first);
  std::vector<fs::path> manifests;
  for (auto &e : fs::directory_iterator(cache.path))
    if (e.path().extension() == ".manifest")
      manifests.push_back(e.path());
  REQUIRE(manifests.size() == 1);
  std::string manifest = test::readFile(manifests[0].string());
  CHECK_THAT(manifest, Catch::StartsWith("msccl-plan-cache-manifest 1 " + first.key + "\n"));
  CHECK_THAT(manifest, Catch::Contains(" " + src.file("lib.msccl") + "\n"));
  CHECK_THAT(manifest, Catch::EndsWith("end\n"));
  // The fast path names the files it checked: the main file and its imports, absolute.
  compile(src.file("main.msccl"), p, &hit);
  CHECK(hit.cacheHit);
  CHECK(hit.key == first.key);
  CHECK(hit.sources.front() == src.file("main.msccl"));
  CHECK(std::find(hit.sources.begin(), hit.sources.end(), src.file("lib.msccl")) != hit.sources.end());
  // A damaged manifest (garbage, a truncated one, one pointing at a wrong key) is ignored: the
  // full path finds the entry by its own key and rewrites the manifest.
  for (std::string bad : {std::string("garbage"), manifest.substr(0, manifest.size() - 4),
                          "msccl-plan-cache-manifest 1 " + std::string(64, '0') + "\nend\n"}) {
    test::writeFile(manifests[0].string(), bad);
    CompileInfo again;
    compile(src.file("main.msccl"), p, &again);
    CHECK(again.cacheHit);
    CHECK(again.key == first.key);
    CHECK(test::readFile(manifests[0].string()) == manifest);
  }
}

TEST_CASE("hostile cache: a group- or world-writable directory is refused, with the reason", "[cache][hostile]") {
  test::TempDir cache;
  CompileParams p = paramsIn(cache);
  ::chmod(cache.str().c_str(), 0777);
  CompileInfo info;
  PlanPtr plan = compile("stdlib:sendrecv/pairs", p, &info);
  CHECK(plan->gpus.size() == 2);
  CHECK(info.cacheFile.empty());
  CHECK_FALSE(info.cacheHit);
  CHECK_THAT(info.cacheRefused, Catch::Contains("writable by others") && Catch::Contains("mode 0777"));
  CHECK(entries(cache) == 0);
  ::chmod(cache.str().c_str(), 0770);
  compile("stdlib:sendrecv/pairs", p, &info);
  CHECK_THAT(info.cacheRefused, Catch::Contains("writable by its group"));
  // A missing directory is created 0700 and used.
  std::string fresh = cache.file("fresh");
  ::chmod(cache.str().c_str(), 0700);
  p.cacheDir = fresh;
  compile("stdlib:sendrecv/pairs", p, &info);
  CHECK(info.cacheRefused.empty());
  CHECK_FALSE(info.cacheFile.empty());
  struct stat st;
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("hostile cache: a directory owned by another user is refused", "[cache][hostile]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to give a directory to another user");
    return;
  }
  test::TempDir cache;
  REQUIRE(::chown(cache.str().c_str(), 65534, 65534) == 0); // nobody
  CompileParams p = paramsIn(cache);
  CompileInfo info;
  compile("stdlib:sendrecv/pairs", p, &info);
  CHECK(info.cacheFile.empty());
  CHECK_THAT(info.cacheRefused, Catch::Contains("owned by uid 65534"));
}

TEST_CASE("hostile cache: nothing planted at a temporary name is written through", "[cache][hostile]") {
  test::TempDir cache, victimDir;
  CompileParams p = paramsIn(cache);
  CompileInfo first;
  compile("stdlib:sendrecv/pairs", p, &first);
  const std::string victim = victimDir.file("victim");
  test::writeFile(victim, "precious\n");
  // The old temporary names were <entry>.tmp.<pid>.<counter>: plant links at all of them.
  fs::remove(first.cacheFile);
  for (int c = 0; c < 64; ++c)
    fs::create_symlink(victim, first.cacheFile + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(c));
  CompileInfo again;
  compile("stdlib:sendrecv/pairs", p, &again);
  CHECK_FALSE(again.cacheHit);
  CHECK(again.cacheFile == first.cacheFile);
  CHECK(test::readFile(victim) == "precious\n");
  // An entry that is a symbolic link is not read (it is recompiled and replaced by a file).
  fs::remove(first.cacheFile);
  fs::create_symlink(victim, first.cacheFile);
  CompileInfo third;
  compile("stdlib:sendrecv/pairs", p, &third);
  CHECK_FALSE(third.cacheHit);
  CHECK_FALSE(fs::is_symlink(first.cacheFile));
  CHECK(test::readFile(victim) == "precious\n");
}

TEST_CASE("hostile cache: a manifest naming a FIFO or a non-.msccl file is a miss, not a hang", "[cache][hostile]") {
  test::TempDir cache, src;
  CompileParams p = paramsIn(cache);
  writeProgramWithImport(src);
  CompileInfo first;
  compile(src.file("main.msccl"), p, &first);
  fs::path manifest;
  for (auto &e : fs::directory_iterator(cache.path))
    if (e.path().extension() == ".manifest")
      manifest = e.path();
  REQUIRE(!manifest.empty());
  const std::string fifo = src.file("fifo.msccl");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string head = "msccl-plan-cache-manifest 1 " + first.key + "\n";
  for (const std::string &target : {fifo, std::string("/dev/zero"), std::string("/etc/hostname")}) {
    test::writeFile(manifest.string(), head + std::string(64, 'a') + " " + target + "\nend\n");
    CompileInfo again;
    compile(src.file("main.msccl"), p, &again); // returns (the full path finds the entry)
    CHECK(again.cacheHit);
    CHECK(again.key == first.key);
    CHECK(std::find(again.sources.begin(), again.sources.end(), target) == again.sources.end());
  }
}
