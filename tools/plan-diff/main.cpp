// plan-diff A.json B.json [--all]: compares two JSON plans as values.
// Exit status: 0 equal, 1 different (first difference printed, or all with --all), 2 unreadable
// input or bad usage.
// plan-diff --canonical A.json: prints A in a canonical form (compact, object keys sorted), so that
// two plans are equal as values iff their canonical forms are byte-identical (used to compare
// with a recorded digest of a plan too large to keep in the tree).
#include "PlanDiff.h"

#include <fstream>
#include <iostream>
#include <string>

namespace {

void usage() {
  std::cerr << "usage: plan-diff [--all] A.json B.json\n"
               "       plan-diff --canonical A.json\n"
               "  Compares two JSON files as values (key order irrelevant, list order significant).\n"
               "  Prints the first difference as `PATH: A-value vs B-value` (--all: every difference).\n"
               "  Exit status: 0 equal, 1 different, 2 unreadable input.\n"
               "  --canonical prints A compact with sorted keys (equal values <=> equal text).\n";
}

bool load(const std::string &path, nlohmann::json &out) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "plan-diff: cannot open '" << path << "'\n";
    return false;
  }
  try {
    out = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    std::cerr << "plan-diff: '" << path << "' is not valid JSON: " << e.what() << "\n";
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  bool all = false, canonical = false;
  std::string files[2];
  int nfiles = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--all" || arg == "-a") all = true;
    else if (arg == "--canonical") canonical = true;
    else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (nfiles < 2 && (arg.empty() || arg[0] != '-')) files[nfiles++] = arg;
    else {
      usage();
      return 2;
    }
  }
  if (canonical) {
    nlohmann::json a;
    if (nfiles != 1 || all) {
      usage();
      return 2;
    }
    if (!load(files[0], a)) return 2;
    // nlohmann::json keeps object keys in a std::map: dump() is sorted and compact.
    std::cout << a.dump() << "\n";
    return 0;
  }
  if (nfiles != 2) {
    usage();
    return 2;
  }
  nlohmann::json a, b;
  if (!load(files[0], a) || !load(files[1], b)) return 2;
  auto diffs = msccl::plandiff::diffJson(a, b, all ? 0 : 1);
  for (const auto &d : diffs) std::cout << msccl::plandiff::formatDifference(d) << "\n";
  if (!diffs.empty() && all) std::cout << diffs.size() << " difference(s)\n";
  return diffs.empty() ? 0 : 1;
}
