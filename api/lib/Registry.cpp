//===- Registry.cpp - PlanRegistry: register, select by rule or selector, explain --------===//
//
// Consumes plans with PlanInfo; produces, per SelectRequest, the chosen plan and one reason per
// registered plan. judge() decides whether a plan passes the hard filters and says why not;
// eligible() tests the same conditions without building text (select()'s per-call path; the
// api.registry test checks that select() and explain() agree on every request it makes).
// Then the eligible plans are ranked (preferred tags, narrowest range, registration order) or
// the selector chooses. A plan is eligible only at sizes its chunks can split (messageSizesFor),
// so a call never gets a plan that then refuses its size while another could run it.
// With RegistryFiles.cpp (plans of files, programs and directory indexes) and Compile.cpp it is
// the object library msccl_registry, part of libmsccl and of msccl-run, so that `msccl-run
// --plans` and every API client load plan directories and choose by this one rule.
// The ranks-per-node default is derived from the plan: the rank pairs its memory and switch
// channels join (loads and stores) must share a node.
//
//===------------------------------------------------------------------------------------===//
#include "Internal.h"

#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Resolve.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace msccl {
namespace {

std::string bytesText(uint64_t b) {
  if (b == UINT64_MAX)
    return "max";
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = b;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + units[u];
}

const char *inPlaceText(InPlace p) {
  switch (p) {
  case InPlace::OutOfPlace: return "out-of-place only";
  case InPlace::InPlace: return "in-place only";
  case InPlace::Both: return "in-place and out-of-place";
  }
  return "?";
}

bool hasTag(const RegisteredPlan &p, const std::string &t) {
  return std::find(p.info.tags.begin(), p.info.tags.end(), t) != p.info.tags.end();
}

size_t preferredCount(const RegisteredPlan &p, const SelectRequest &r) {
  size_t n = 0;
  for (auto &t : r.preferredTags)
    n += hasTag(p, t);
  return n;
}

uint64_t rangeWidth(const RegisteredPlan &p) { return *p.info.maxBytes - *p.info.minBytes; }

/// The hard filters without building a reason (the per-call path of select()).
bool eligible(const RegisteredPlan &p, const SelectRequest &r) {
  const PlanInfo &i = p.info;
  if (i.worldSize != r.worldSize || !llvm::StringRef(i.collective).equals_insensitive(r.collective))
    return false;
  if (r.messageBytes < *i.minBytes || r.messageBytes > *i.maxBytes)
    return false;
  if (!p.plan->variableSizes && !runtime::messageSizesFor(*p.plan, r.messageBytes, nullptr))
    return false;
  if ((r.inPlace && *i.inPlace == InPlace::OutOfPlace) || (!r.inPlace && *i.inPlace == InPlace::InPlace))
    return false;
  uint32_t rpn = r.ranksPerNode ? r.ranksPerNode : r.worldSize;
  if (i.ranksPerNode ? i.ranksPerNode != rpn : !p.fitsRanksPerNode(rpn))
    return false;
  for (auto &t : r.requiredTags)
    if (!hasTag(p, t))
      return false;
  return true;
}

/// Hard filters: empty when the plan is eligible, else why not (the same tests as eligible()).
std::string judge(const RegisteredPlan &p, const SelectRequest &r) {
  const PlanInfo &i = p.info;
  if (!llvm::StringRef(i.collective).equals_insensitive(r.collective))
    return "collective is " + i.collective + ", not " + r.collective;
  if (i.worldSize != r.worldSize)
    return "world size is " + std::to_string(i.worldSize) + ", not " + std::to_string(r.worldSize);
  uint32_t rpn = r.ranksPerNode ? r.ranksPerNode : r.worldSize;
  if (i.ranksPerNode) {
    if (i.ranksPerNode != rpn)
      return "registered for " + std::to_string(i.ranksPerNode) + " ranks per node, not " + std::to_string(rpn);
  } else {
    std::string why;
    if (!p.fitsRanksPerNode(rpn, &why))
      return "does not fit " + std::to_string(rpn) + " ranks per node: " + why;
  }
  if (r.messageBytes < *i.minBytes || r.messageBytes > *i.maxBytes)
    return "message size " + bytesText(r.messageBytes) + " (" + std::to_string(r.messageBytes) +
           " bytes) is outside its range [" + bytesText(*i.minBytes) + ", " + bytesText(*i.maxBytes) + "]";
  if (std::string why; !p.plan->variableSizes && !runtime::messageSizesFor(*p.plan, r.messageBytes, &why))
    return "cannot run " + std::to_string(r.messageBytes) + " bytes: " + why;
  if (r.inPlace && *i.inPlace == InPlace::OutOfPlace)
    return "the call is in place but the plan is " + std::string(inPlaceText(*i.inPlace));
  if (!r.inPlace && *i.inPlace == InPlace::InPlace)
    return "the call is out of place but the plan is " + std::string(inPlaceText(*i.inPlace));
  for (auto &t : r.requiredTags)
    if (!hasTag(p, t))
      return "lacks the required tag `" + t + "`";
  return "";
}

std::string describeRequest(const SelectRequest &r) {
  std::ostringstream os;
  os << r.collective << ", " << r.worldSize << " ranks, " << (r.ranksPerNode ? r.ranksPerNode : r.worldSize)
     << " per node, " << bytesText(r.messageBytes) << " (" << r.messageBytes << " bytes), "
     << (r.inPlace ? "in place" : "out of place");
  if (!r.requiredTags.empty()) {
    os << ", requires";
    for (auto &t : r.requiredTags)
      os << " " << t;
  }
  if (!r.preferredTags.empty()) {
    os << ", prefers";
    for (auto &t : r.preferredTags)
      os << " " << t;
  }
  return os.str();
}

} // namespace

bool RegisteredPlan::fitsRanksPerNode(uint32_t k, std::string *whyNot) const {
  if (k == 0)
    return true;
  for (auto &[a, b] : localPairs)
    if (a / k != b / k) {
      if (whyNot)
        *whyNot = "a memory or switch channel joins rank " + std::to_string(a) + " (node " + std::to_string(a / k) +
                  ") and rank " + std::to_string(b) + " (node " + std::to_string(b / k) + ")";
      return false;
    }
  return true;
}

struct PlanRegistry::Impl {
  std::vector<std::unique_ptr<RegisteredPlan>> plans;
  size_t nextIndex = 0;
  Selector selector;

  struct Judged {
    std::vector<Explanation> all;
    std::vector<const RegisteredPlan *> candidates;
    const RegisteredPlan *chosen = nullptr;
    std::string chooseReason;
  };

  Judged run(const SelectRequest &r) const {
    Judged j;
    for (auto &p : plans) {
      Explanation e;
      e.plan = p.get();
      e.reason = judge(*p, r);
      e.eligible = e.reason.empty();
      if (e.eligible)
        j.candidates.push_back(p.get());
      j.all.push_back(std::move(e));
    }
    if (selector) {
      j.chosen = selector(r, j.candidates);
      if (j.chosen && std::find(j.candidates.begin(), j.candidates.end(), j.chosen) == j.candidates.end())
        throw Error(ErrorCode::InvalidArgument, "the selector returned a plan that is not one of its candidates");
      j.chooseReason = "chosen by the selector";
    } else if (!j.candidates.empty()) {
      j.chosen = *std::min_element(j.candidates.begin(), j.candidates.end(),
                                   [&](const RegisteredPlan *a, const RegisteredPlan *b) {
                                     size_t pa = preferredCount(*a, r), pb = preferredCount(*b, r);
                                     if (pa != pb)
                                       return pa > pb;
                                     if (rangeWidth(*a) != rangeWidth(*b))
                                       return rangeWidth(*a) < rangeWidth(*b);
                                     return a->index < b->index;
                                   });
      j.chooseReason = "chosen";
      if (j.candidates.size() > 1)
        j.chooseReason += " (" + std::to_string(preferredCount(*j.chosen, r)) + " preferred tag(s), range [" +
                          bytesText(*j.chosen->info.minBytes) + ", " + bytesText(*j.chosen->info.maxBytes) + "])";
    }
    for (auto &e : j.all) {
      if (!e.eligible) {
        e.reason = "not eligible: " + e.reason;
        continue;
      }
      if (e.plan == j.chosen) {
        e.chosen = true;
        e.reason = j.chooseReason;
      } else if (selector) {
        e.reason = "eligible, not chosen by the selector";
      } else {
        size_t pe = preferredCount(*e.plan, r), pc = preferredCount(*j.chosen, r);
        if (pe < pc)
          e.reason = "eligible, but has " + std::to_string(pe) + " preferred tag(s) against " + std::to_string(pc) +
                     " of " + j.chosen->info.name;
        else if (rangeWidth(*e.plan) > rangeWidth(*j.chosen))
          e.reason = "eligible, but its range is wider than that of " + j.chosen->info.name;
        else
          e.reason = "eligible, but " + j.chosen->info.name + " was registered first";
      }
    }
    return j;
  }
};

PlanRegistry::PlanRegistry() : impl_(std::make_unique<Impl>()) {}
PlanRegistry::~PlanRegistry() = default;

const RegisteredPlan &PlanRegistry::add(PlanPtr plan, PlanInfo info) {
  if (!plan)
    throw Error(ErrorCode::InvalidArgument, "PlanRegistry::add: null plan");
  auto rp = std::make_unique<RegisteredPlan>();
  rp->index = impl_->nextIndex;
  const uint32_t n = uint32_t(plan->gpus.size());
  if (info.name.empty())
    info.name = plan->name && !plan->name->empty() ? *plan->name : "plan-" + std::to_string(impl_->nextIndex);
  if (find(info.name))
    throw Error(ErrorCode::InvalidArgument, "a plan named `" + info.name + "` is already registered");
  if (info.collective.empty())
    info.collective = plan->collective;
  if (info.worldSize == 0)
    info.worldSize = n;
  else if (info.worldSize != n)
    throw Error(ErrorCode::InvalidArgument, "plan `" + info.name + "` has " + std::to_string(n) +
                                                " ranks but is registered for world size " +
                                                std::to_string(info.worldSize));
  if (!info.minBytes)
    info.minBytes = plan->minMessageSize;
  if (!info.maxBytes)
    info.maxBytes = plan->maxMessageSize;
  if (*info.minBytes > *info.maxBytes)
    throw Error(ErrorCode::InvalidArgument, "plan `" + info.name + "`: empty message-size range [" +
                                                std::to_string(*info.minBytes) + ", " +
                                                std::to_string(*info.maxBytes) + "]");
  if (!info.inPlace)
    info.inPlace = plan->inplace ? InPlace::InPlace : InPlace::OutOfPlace;
  if (info.ranksPerNode && n % info.ranksPerNode != 0)
    throw Error(ErrorCode::InvalidArgument, "plan `" + info.name + "`: " + std::to_string(info.ranksPerNode) +
                                                " ranks per node does not divide its " + std::to_string(n) +
                                                " ranks");
  try {
    runtime::ResolvedPlan rs = runtime::resolvePlan(*plan);
    std::set<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t r = 0; r < rs.gpus.size(); ++r) {
      for (auto &c : rs.gpus[r].memoryChannels)
        pairs.insert({std::min(r, c.peer), std::max(r, c.peer)});
      for (auto &s : rs.gpus[r].switchChannels)
        for (uint32_t q : s.ranks)
          if (q != r)
            pairs.insert({std::min(r, q), std::max(r, q)});
    }
    rp->localPairs.assign(pairs.begin(), pairs.end());
  } catch (const runtime::ExecutionError &e) {
    throw Error(ErrorCode::InvalidPlan, "plan `" + info.name + "`: " + e.what());
  }
  if (info.ranksPerNode) {
    std::string why;
    if (!rp->fitsRanksPerNode(info.ranksPerNode, &why))
      throw Error(ErrorCode::InvalidArgument, "plan `" + info.name + "` cannot run with " +
                                                  std::to_string(info.ranksPerNode) + " ranks per node: " + why);
  }
  rp->plan = std::move(plan);
  rp->info = std::move(info);
  ++impl_->nextIndex;
  impl_->plans.push_back(std::move(rp));
  return *impl_->plans.back();
}

bool PlanRegistry::remove(const std::string &name) {
  auto &v = impl_->plans;
  auto it = std::find_if(v.begin(), v.end(), [&](auto &p) { return p->info.name == name; });
  if (it == v.end())
    return false;
  v.erase(it);
  return true;
}

std::vector<const RegisteredPlan *> PlanRegistry::plans() const {
  std::vector<const RegisteredPlan *> out;
  for (auto &p : impl_->plans)
    out.push_back(p.get());
  return out;
}

const RegisteredPlan *PlanRegistry::find(const std::string &name) const {
  for (auto &p : impl_->plans)
    if (p->info.name == name)
      return p.get();
  return nullptr;
}

void PlanRegistry::setSelector(Selector selector) { impl_->selector = std::move(selector); }

const RegisteredPlan *PlanRegistry::select(const SelectRequest &request) const {
  // The default rule without building the explanations (the per-call path).
  if (!impl_->selector) {
    const RegisteredPlan *best = nullptr;
    size_t bestPref = 0;
    for (auto &p : impl_->plans) {
      if (!eligible(*p, request))
        continue;
      size_t pref = preferredCount(*p, request);
      if (!best || pref > bestPref || (pref == bestPref && rangeWidth(*p) < rangeWidth(*best))) {
        best = p.get();
        bestPref = pref;
      }
    }
    return best;
  }
  return impl_->run(request).chosen;
}

const RegisteredPlan &PlanRegistry::selectOrThrow(const SelectRequest &request) const {
  if (const RegisteredPlan *p = select(request))
    return *p;
  throw Error(ErrorCode::NoPlan, "no registered plan fits the call:\n" + explainText(request));
}

std::vector<Explanation> PlanRegistry::explain(const SelectRequest &request) const {
  return impl_->run(request).all;
}

std::string PlanRegistry::explainText(const SelectRequest &request) const {
  Impl::Judged j = impl_->run(request);
  std::ostringstream os;
  os << "request: " << describeRequest(request) << "\n";
  if (j.all.empty())
    os << "  (no plan registered)\n";
  for (auto &e : j.all) {
    const PlanInfo &i = e.plan->info;
    os << (e.chosen ? "  * " : "    ") << i.name << " [" << i.collective << ", " << i.worldSize << " ranks";
    if (i.ranksPerNode)
      os << ", " << i.ranksPerNode << " per node";
    os << ", " << bytesText(*i.minBytes) << ".." << bytesText(*i.maxBytes) << ", " << inPlaceText(*i.inPlace);
    if (!i.tags.empty()) {
      os << ", tags";
      for (auto &t : i.tags)
        os << " " << t;
    }
    os << "]: " << e.reason << "\n";
  }
  if (!j.chosen)
    os << "  no plan chosen\n";
  return os.str();
}

std::string PlanRegistry::explainLine(const SelectRequest &request) const {
  std::string line;
  for (char ch : explainText(request)) {
    if (ch == '\n') {
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      line += "; ";
    } else if (!(ch == ' ' && !line.empty() && line.back() == ' ')) {
      line += ch;
    }
  }
  while (!line.empty() && (line.back() == ';' || line.back() == ' '))
    line.pop_back();
  return line;
}

} // namespace msccl
