// PlanDiff: recursive value comparison of two JSON documents (see PlanDiff.h).
#include "PlanDiff.h"

#include <set>

namespace msccl::plandiff {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxRendered = 160;

std::string render(const json &v) {
  std::string s = v.dump();
  if (s.size() > kMaxRendered) s = s.substr(0, kMaxRendered) + "...";
  return s;
}

std::string childKey(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

std::string childIndex(const std::string &path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

bool isNumber(const json &v) { return v.is_number(); }

// Numbers: integers compare exactly (signed vs unsigned included), floats by value.
bool numbersEqual(const json &a, const json &b) {
  if (a.is_number_float() || b.is_number_float()) return a.get<double>() == b.get<double>();
  if (a.is_number_unsigned() && b.is_number_unsigned())
    return a.get<std::uint64_t>() == b.get<std::uint64_t>();
  if (a.is_number_integer() && b.is_number_integer() && !a.is_number_unsigned() && !b.is_number_unsigned())
    return a.get<std::int64_t>() == b.get<std::int64_t>();
  // One unsigned, one signed.
  const json &s = a.is_number_unsigned() ? b : a;
  const json &u = a.is_number_unsigned() ? a : b;
  std::int64_t sv = s.get<std::int64_t>();
  return sv >= 0 && static_cast<std::uint64_t>(sv) == u.get<std::uint64_t>();
}

struct Walker {
  std::size_t limit;
  std::vector<Difference> out;

  bool full() const { return limit != 0 && out.size() >= limit; }

  void add(const std::string &path, std::string l, std::string r) {
    if (!full()) out.push_back({path.empty() ? "(root)" : path, std::move(l), std::move(r)});
  }

  void walk(const json &a, const json &b, const std::string &path) {
    if (full()) return;
    if (isNumber(a) && isNumber(b)) {
      if (!numbersEqual(a, b)) add(path, render(a), render(b));
      return;
    }
    if (a.type() != b.type()) {
      add(path, render(a), render(b));
      return;
    }
    if (a.is_object()) {
      std::set<std::string> keys;
      for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
      for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
      for (const std::string &k : keys) {
        if (full()) return;
        auto ia = a.find(k), ib = b.find(k);
        if (ia == a.end()) add(childKey(path, k), "<missing>", render(*ib));
        else if (ib == b.end()) add(childKey(path, k), render(*ia), "<missing>");
        else walk(*ia, *ib, childKey(path, k));
      }
      return;
    }
    if (a.is_array()) {
      std::size_t n = std::min(a.size(), b.size());
      for (std::size_t i = 0; i < n && !full(); ++i) walk(a[i], b[i], childIndex(path, i));
      if (a.size() != b.size())
        add(path, "list of " + std::to_string(a.size()) + " elements",
            "list of " + std::to_string(b.size()) + " elements");
      return;
    }
    if (a != b) add(path, render(a), render(b));
  }
};

} // namespace

std::vector<Difference> diffJson(const nlohmann::json &a, const nlohmann::json &b, std::size_t limit) {
  Walker w{limit, {}};
  w.walk(a, b, "");
  return std::move(w.out);
}

std::string formatDifference(const Difference &d) { return d.path + ": " + d.left + " vs " + d.right; }

} // namespace msccl::plandiff
