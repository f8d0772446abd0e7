//===- TuneOutput.cpp - msccl-tune: the plan directory, the chart, the table, the main -----===//
#include "Tune.h"

#include "msccl/elab/Loader.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"

#include <nlohmann/json.hpp>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

namespace msccl::tools::tune {
using runtime::sim::Topology;

namespace {

double busbw(const Envelope &e, size_t i, double seconds, uint32_t ranks) {
  if (seconds <= 0)
    return 0;
  return double(e.runSizes[i]) / seconds / 1e9 *
         runtime::busBandwidthFactor(runtime::collectiveKind(e.collective), ranks);
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f)
    throw std::runtime_error("cannot write " + path);
}

} // namespace

void writePlanDirectory(const std::string &dir, const std::vector<Envelope> &envelopes, const TuneOptions &o,
                        const Topology &topo, uint32_t ranks, uint32_t ranksPerNode) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  nlohmann::ordered_json index;
  index["plans"] = nlohmann::ordered_json::array();
  std::set<std::string> written, names;
  for (const Envelope &e : envelopes) {
    // One index entry for candidate k over [minBytes, maxBytes] (its plan file written once).
    auto add = [&](int k, Range r, bool fallback) {
      const Candidate &c = e.candidates[size_t(k)];
      const std::string stem = c.fileStem() + (e.inPlace ? "_ip" : "");
      if (written.insert(stem).second)
        writeFile(dir + "/" + stem + ".json", plan::writePlan(*c.plan));
      std::string name = fallback ? stem + "_fallback" : stem;
      for (int n = 2; !fallback && !names.insert(name).second; ++n)
        name = stem + "_" + std::to_string(n); // the same plan wins two separate ranges
      nlohmann::ordered_json entry;
      entry["file"] = stem + ".json";
      entry["name"] = name;
      entry["min_bytes"] = r.minBytes;
      if (r.maxBytes != UINT64_MAX)
        entry["max_bytes"] = r.maxBytes;
      entry["in_place"] = e.inPlace ? "in" : "out";
      if (ranksPerNode && ranksPerNode < ranks)
        entry["ranks_per_node"] = ranksPerNode;
      entry["tags"] = {"tuned", topo.name};
      if (fallback)
        entry["tags"].push_back("fallback");
      index["plans"].push_back(entry);
    };
    for (const Range &r : rangesOf(e))
      add(r.candidate, r, false);
    if (e.fallback >= 0) // every size; the registry takes a narrower range first
      add(e.fallback, Range{}, true);
    writeFile(dir + "/tune-" + e.collective + (e.inPlace ? "-inplace" : "") + ".svg", envelopeSvg(e, topo, ranks));
  }
  writeFile(dir + "/msccl-plans.json", index.dump(2) + "\n");
}

std::string envelopeSvg(const Envelope &e, const Topology &topo, uint32_t ranks) {
  const double W = 900, H = 520, left = 70, right = 250, top = 40, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  double ymax = 1;
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    for (const Candidate &c : e.candidates)
      if (c.plan)
        ymax = std::max(ymax, busbw(e, i, c.seconds[i], ranks));
    ymax = std::max(ymax, busbw(e, i, e.bound[i].seconds, ranks));
  }
  const double lx0 = std::log2(double(e.sizes.front())), lx1 = std::log2(double(e.sizes.back()));
  auto X = [&](size_t i) { return left + (lx1 > lx0 ? (std::log2(double(e.sizes[i])) - lx0) / (lx1 - lx0) : 0) * pw; };
  auto Y = [&](double v) { return top + ph - v / ymax * ph; };
  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">" << e.collective << (e.inPlace ? " (in place)" : "")
    << " on " << topo.name << ", " << ranks << " ranks: busbw against size (model output)</text>\n";
  s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int k = 0; k <= 4; ++k) { // y ticks
    const double v = ymax * k / 4;
    s << "<text x=\"" << left - 6 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">" << std::setprecision(0) << v
      << std::setprecision(1) << "</text>\n";
  }
  for (size_t i = 0; i < e.sizes.size(); i += 3)
    s << "<text x=\"" << X(i) << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << runtime::messageSizeText(e.sizes[i])
      << "</text>\n";
  s << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 15 << "\" text-anchor=\"middle\">message size (nccl-tests S)</text>\n"
    << "<text x=\"18\" y=\"" << top + ph / 2 << "\" transform=\"rotate(-90 18 " << top + ph / 2
    << ")\" text-anchor=\"middle\">busbw (GB/s, model output)</text>\n";
  // One polyline per run of sizes with a value: a size a candidate cannot run (or that the
  // search did not replay) breaks its line.
  auto line = [&](const std::vector<double> &v, const std::string &style) {
    std::string pts;
    auto flush = [&] {
      if (!pts.empty())
        s << "<polyline fill=\"none\" " << style << " points=\"" << pts << "\"/>\n";
      pts.clear();
    };
    for (size_t i = 0; i < v.size(); ++i) {
      if (!(v[i] > 0)) {
        flush();
        continue;
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", X(i), Y(v[i]));
      pts += buf;
    }
    flush();
  };
  for (const Candidate &c : e.candidates) {
    if (!c.plan)
      continue;
    std::vector<double> v;
    for (size_t i = 0; i < e.sizes.size(); ++i)
      v.push_back(busbw(e, i, c.seconds[i], ranks));
    line(v, "stroke=\"#c8c8c8\" stroke-width=\"1\"");
  }
  std::vector<double> env, def, bnd;
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    env.push_back(e.winner[i] < 0 ? 0 : busbw(e, i, e.candidates[size_t(e.winner[i])].seconds[i], ranks));
    def.push_back(e.bestDefault[i] < 0 ? 0 : busbw(e, i, e.candidates[size_t(e.bestDefault[i])].seconds[i], ranks));
    bnd.push_back(busbw(e, i, e.bound[i].seconds, ranks));
  }
  line(bnd, "stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"2,3\"");
  line(def, "stroke=\"#2ca02c\" stroke-width=\"2\" stroke-dasharray=\"6,4\"");
  line(env, "stroke=\"#1f77b4\" stroke-width=\"3\"");
  const char *legend[][2] = {{"#1f77b4", "tuned envelope"},
                             {"#2ca02c", "best stdlib plan at its defaults"},
                             {"#d62728", "lower bound"},
                             {"#c8c8c8", "each candidate (where replayed)"}};
  for (int k = 0; k < 4; ++k)
    s << "<line x1=\"" << left + pw + 15 << "\" x2=\"" << left + pw + 45 << "\" y1=\"" << top + 10 + 20 * k
      << "\" y2=\"" << top + 10 + 20 * k << "\" stroke=\"" << legend[k][0] << "\" stroke-width=\"3\"/><text x=\""
      << left + pw + 52 << "\" y=\"" << top + 14 + 20 * k << "\">" << legend[k][1] << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

} // namespace msccl::tools::tune
