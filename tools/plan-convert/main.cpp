//===- main.cpp - plan-convert: upgrade an older-format plan to today's format ----------===//
//
// plan-convert [--check] IN.json [-o OUT.json]
//   Reads IN.json in either plan format (MSCCLPPLang's older one is detected, LegacyPlan.h) and
//   writes it in today's format with the one writer (PlanJson.h: the layout mscclc writes), to
//   OUT.json or standard output. --check only reports which format IN.json is in and whether it
//   reads. Exit status: 0 done, 1 malformed plan (the message names the JSON path), 2 bad usage or
//   unwritable output.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/LegacyPlan.h"
#include "msccl/plan/PlanJson.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

void usage(std::ostream &os) {
  os << "usage: plan-convert [--check] IN.json [-o OUT.json]\n"
        "  Upgrades a plan in MSCCLPPLang's older JSON format (camelCase chunk counts, o_buff, srcs,\n"
        "  o_cids, ctype, chunkGroups, ...) to today's format, written as mscclc writes plans.\n"
        "  A plan already in today's format is rewritten unchanged in meaning.\n"
        "  --check   only say which format IN.json is in and whether it reads\n"
        "  -o FILE   write to FILE instead of standard output\n"
        "  Exit status: 0 done, 1 malformed plan, 2 bad usage or unwritable output.\n";
}

} // namespace

int main(int argc, char **argv) {
  std::string in, out;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(std::cout);
      return 0;
    } else if (a == "--check") {
      check = true;
    } else if (a == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (in.empty() && !a.empty() && a[0] != '-') {
      in = a;
    } else {
      usage(std::cerr);
      return 2;
    }
  }
  if (in.empty()) {
    usage(std::cerr);
    return 2;
  }
  std::ifstream file(in, std::ios::binary);
  if (!file) {
    std::cerr << "plan-convert: cannot open '" << in << "'\n";
    return 2;
  }
  std::ostringstream text;
  text << file.rdbuf();
  try {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception &) {
      msccl::plan::parsePlan(text.str()); // throws the reader's PlanError, with the path
      throw;
    }
    bool legacy = msccl::plan::isLegacyPlan(j);
    msccl::plan::Plan plan = msccl::plan::fromJson(j);
    if (check) {
      std::cout << in << ": " << (legacy ? "older (MSCCLPPLang) format" : "current format") << ", " << plan.gpus.size()
                << " gpu(s), reads\n";
      return 0;
    }
    if (out.empty()) {
      msccl::plan::writePlan(std::cout, plan);
      return 0;
    }
    std::ofstream os(out, std::ios::binary);
    if (!os) {
      std::cerr << "plan-convert: cannot write '" << out << "'\n";
      return 2;
    }
    msccl::plan::writePlan(os, plan);
    os.close();
    if (!os) {
      std::cerr << "plan-convert: cannot write '" << out << "'\n";
      return 2;
    }
    return 0;
  } catch (const msccl::plan::PlanError &e) {
    std::cerr << "plan-convert: " << in << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "plan-convert: " << in << ": " << e.what() << "\n";
    return 1;
  }
}
