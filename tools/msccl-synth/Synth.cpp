//===- Synth.cpp - Spanning-tree packings for msccl-synth (see Synth.h) ---------------------===//
#include "Synth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace msccl::tools::synth {
using runtime::sim::Topology;

LinkGraph linkGraph(const Topology &topo, uint32_t ranks) {
  if (ranks < 2 || ranks > topo.gpusPerNode)
    throw std::runtime_error("msccl-synth writes programs for the ranks of one node: 2.." +
                             std::to_string(topo.gpusPerNode) + " on topology " + topo.name + " (got " +
                             std::to_string(ranks) + ")");
  LinkGraph g;
  g.ranks = ranks;
  g.routes.resize(size_t(ranks) * ranks);
  if (!topo.fabric.empty()) {
    const auto &f = topo.fabric;
    for (uint32_t d = 0; d < 2 * f.links.size(); ++d) {
      g.capBps.push_back(f.linkGBps(d) * 1e9);
      g.names.push_back(f.linkName(d));
    }
    if (!f.torusDims.empty() && ranks == topo.gpusPerNode)
      for (uint32_t r = 0; r < ranks; ++r)
        g.translations.push_back(f.translation(r));
    g.throughRank.assign(size_t(ranks) * ranks, false);
    for (uint32_t a = 0; a < ranks; ++a)
      for (uint32_t b = 0; b < ranks; ++b)
        if (a != b) {
          g.routes[a * ranks + b] = f.routes[a * topo.gpusPerNode + b];
          const auto &r = g.routes[a * ranks + b];
          for (size_t i = 0; i + 1 < r.size(); ++i) // the vertex after each link but the last
            if (f.linkTo(r[i]) < ranks)
              g.throughRank[a * ranks + b] = true;
        }
    return g;
  }
  // One switch: the sender's link out, the receiver's link in.
  const std::string link = topo.intraKind;
  for (uint32_t r = 0; r < ranks; ++r) {
    g.capBps.push_back(topo.intraGBps * 1e9);
    g.names.push_back("rank " + std::to_string(r) + " " + link + " out");
    g.capBps.push_back(topo.intraGBps * 1e9);
    g.names.push_back("rank " + std::to_string(r) + " " + link + " in");
  }
  for (uint32_t a = 0; a < ranks; ++a)
    for (uint32_t b = 0; b < ranks; ++b)
      if (a != b)
        g.routes[a * ranks + b] = {2 * a, 2 * b + 1};
  g.throughRank.assign(size_t(ranks) * ranks, false);
  return g;
}

namespace {
struct Edge {
  uint32_t u, v;
  double w;
  uint32_t id;
};

/// Chu-Liu/Edmonds on an edge list; returns the ids of the chosen edges (one into every vertex
/// but the root). Every vertex is reachable from the root (the callers' graphs are complete).
std::vector<uint32_t> edmonds(uint32_t n, uint32_t root, const std::vector<Edge> &edges) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr uint32_t kNo = std::numeric_limits<uint32_t>::max();
  std::vector<double> inW(n, kInf);
  std::vector<uint32_t> inE(n, kNo);
  for (uint32_t i = 0; i < edges.size(); ++i) {
    const Edge &e = edges[i];
    if (e.u != e.v && e.v != root && e.w < inW[e.v])
      inW[e.v] = e.w, inE[e.v] = i;
  }
  // Cycles among the cheapest in-edges.
  std::vector<uint32_t> comp(n, kNo), mark(n, kNo);
  uint32_t ncomp = 0;
  std::vector<bool> inCycle(n, false);
  for (uint32_t v = 0; v < n; ++v) {
    uint32_t x = v;
    while (x != root && mark[x] == kNo && comp[x] == kNo) {
      mark[x] = v;
      x = edges[inE[x]].u;
    }
    if (x != root && mark[x] == v && comp[x] == kNo) { // a new cycle through x
      uint32_t y = x;
      do {
        comp[y] = ncomp;
        inCycle[y] = true;
        y = edges[inE[y]].u;
      } while (y != x);
      ++ncomp;
    }
  }
  if (ncomp == 0) {
    std::vector<uint32_t> out;
    for (uint32_t v = 0; v < n; ++v)
      if (v != root)
        out.push_back(edges[inE[v]].id);
    return out;
  }
  for (uint32_t v = 0; v < n; ++v)
    if (comp[v] == kNo)
      comp[v] = ncomp++;
  // Contract: an edge into a cycle vertex costs what it saves over the cycle's own edge.
  std::vector<Edge> sub;
  std::vector<uint32_t> origin; // sub edge -> index in `edges`
  for (uint32_t i = 0; i < edges.size(); ++i) {
    const Edge &e = edges[i];
    if (comp[e.u] == comp[e.v])
      continue;
    sub.push_back({comp[e.u], comp[e.v], inCycle[e.v] ? e.w - inW[e.v] : e.w, uint32_t(sub.size())});
    origin.push_back(i);
  }
  std::vector<uint32_t> chosen = edmonds(ncomp, comp[root], sub);
  std::vector<uint32_t> out;
  std::vector<bool> entered(n, false); // cycle vertex whose in-edge comes from outside
  for (uint32_t s : chosen) {
    const Edge &e = edges[origin[s]];
    out.push_back(e.id);
    entered[e.v] = true;
  }
  for (uint32_t v = 0; v < n; ++v)
    if (inCycle[v] && !entered[v])
      out.push_back(edges[inE[v]].id);
  return out;
}
} // namespace

std::vector<int> minArborescence(uint32_t n, uint32_t root, const std::vector<double> &cost) {
  std::vector<Edge> edges;
  for (uint32_t u = 0; u < n; ++u)
    for (uint32_t v = 0; v < n; ++v)
      if (u != v && v != root)
        edges.push_back({u, v, cost[u * n + v], uint32_t(edges.size())});
  std::vector<int> parent(n, -1);
  for (uint32_t id : edmonds(n, root, edges))
    parent[edges[id].v] = int(edges[id].u);
  return parent;
}

namespace {
/// The cheapest Hamiltonian path from `root`, exactly (dynamic programming over vertex sets:
/// O(2^n n^2), for small n).
std::vector<int> exactPath(uint32_t n, uint32_t root, const std::vector<double> &cost) {
  const uint32_t full = (1u << n) - 1;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> best(size_t(1u << n) * n, kInf); // best[set * n + last]
  std::vector<uint8_t> prev(size_t(1u << n) * n, 0);
  best[size_t(1u << root) * n + root] = 0;
  for (uint32_t set = 1; set <= full; ++set) {
    if (!(set >> root & 1))
      continue;
    for (uint32_t last = 0; last < n; ++last) {
      const double b = best[size_t(set) * n + last];
      if (b == kInf)
        continue;
      for (uint32_t v = 0; v < n; ++v)
        if (!(set >> v & 1)) {
          const size_t k = size_t(set | 1u << v) * n + v;
          if (b + cost[last * n + v] < best[k])
            best[k] = b + cost[last * n + v], prev[k] = uint8_t(last);
        }
    }
  }
  uint32_t last = 0;
  for (uint32_t v = 1; v < n; ++v)
    if (best[size_t(full) * n + v] < best[size_t(full) * n + last])
      last = v;
  std::vector<int> parent(n, -1);
  for (uint32_t set = full; last != root;) {
    const uint32_t p = prev[size_t(set) * n + last];
    parent[last] = int(p);
    set &= ~(1u << last);
    last = p;
  }
  return parent;
}
} // namespace

std::vector<int> minCostPath(uint32_t n, uint32_t root, const std::vector<double> &cost) {
  if (n <= 8)
    return exactPath(n, root, cost);
  std::vector<uint32_t> order{root};
  std::vector<bool> used(n, false);
  used[root] = true;
  while (order.size() < n) { // nearest neighbour
    uint32_t u = order.back(), best = n;
    for (uint32_t v = 0; v < n; ++v)
      if (!used[v] && (best == n || cost[u * n + v] < cost[u * n + best]))
        best = v;
    used[best] = true;
    order.push_back(best);
  }
  auto total = [&](const std::vector<uint32_t> &o) {
    double c = 0;
    for (size_t i = 1; i < o.size(); ++i)
      c += cost[o[i - 1] * n + o[i]];
    return c;
  };
  double now = total(order);
  auto tryOrder = [&](std::vector<uint32_t> &&o) {
    const double c = total(o);
    if (c >= now * (1 - 1e-12))
      return false;
    order = std::move(o), now = c;
    return true;
  };
  for (bool improved = true; improved;) {
    improved = false;
    // 2-opt: reverse positions i..j (the root stays first).
    for (size_t i = 1; i + 1 < order.size(); ++i)
      for (size_t j = i + 1; j < order.size(); ++j) {
        std::vector<uint32_t> o = order;
        std::reverse(o.begin() + long(i), o.begin() + long(j) + 1);
        improved = tryOrder(std::move(o)) || improved;
      }
    // Or-opt: move a run of 1..3 vertices elsewhere.
    for (size_t len = 1; len <= 3; ++len)
      for (size_t i = 1; i + len <= order.size(); ++i)
        for (size_t j = 1; j + len <= order.size(); ++j) {
          if (j == i)
            continue;
          std::vector<uint32_t> o = order;
          std::vector<uint32_t> run(o.begin() + long(i), o.begin() + long(i + len));
          o.erase(o.begin() + long(i), o.begin() + long(i + len));
          o.insert(o.begin() + long(j), run.begin(), run.end());
          improved = tryOrder(std::move(o)) || improved;
        }
  }
  std::vector<int> parent(n, -1);
  for (size_t i = 1; i < order.size(); ++i)
    parent[order[i]] = int(order[i - 1]);
  return parent;
}

namespace {
double congestion(const LinkGraph &g, const std::vector<double> &load, uint32_t *busiest) {
  double worst = 0;
  for (uint32_t d = 0; d < load.size(); ++d)
    if (load[d] / g.capBps[d] > worst) {
      worst = load[d] / g.capBps[d];
      if (busiest)
        *busiest = d;
    }
  return worst;
}

/// Tree `t` moved by translation `image` (rank v becomes image[v]).
Tree translate(const Tree &t, const std::vector<uint32_t> &image) {
  Tree out;
  out.root = image[t.root];
  out.parent.assign(t.parent.size(), -1);
  for (uint32_t v = 0; v < t.parent.size(); ++v)
    if (t.parent[v] >= 0)
      out.parent[image[v]] = int(image[uint32_t(t.parent[v])]);
  return out;
}

/// Calls f(d) for every directed link the edge u -> v crosses: its route, or with g.symmetric
/// (u -> v an edge of a generator) the routes of all its translates.
template <class F> void forEachLink(const LinkGraph &g, uint32_t u, uint32_t v, F &&f) {
  const size_t copies = g.symmetric ? g.translations.size() : 1;
  for (size_t r = 0; r < copies; ++r) {
    const uint32_t a = g.symmetric ? g.translations[r][u] : u, b = g.symmetric ? g.translations[r][v] : v;
    for (uint32_t d : g.routes[a * g.ranks + b])
      f(d);
  }
}

/// Add `sign` parts to every link tree `t` crosses (with g.symmetric: every translate of it).
void addTree(const LinkGraph &g, const Tree &t, std::vector<double> &load, double sign) {
  for (uint32_t v = 0; v < g.ranks; ++v)
    if (t.parent[v] >= 0)
      forEachLink(g, uint32_t(t.parent[v]), v, [&](uint32_t d) { load[d] += sign; });
}

/// The links' loads (in parts) of a packing.
std::vector<double> loadOf(const LinkGraph &g, const std::vector<Tree> &trees) {
  std::vector<double> load(g.capBps.size(), 0);
  for (const Tree &t : trees)
    addTree(g, t, load, 1);
  return load;
}

/// The links at the busiest utilisation `worst` (within rounding).
std::vector<bool> atWorst(const LinkGraph &g, const std::vector<double> &load, double worst) {
  std::vector<bool> mark(load.size());
  for (uint32_t d = 0; d < load.size(); ++d)
    mark[d] = load[d] / g.capBps[d] >= worst * (1 - 1e-9);
  return mark;
}

/// Whether tree `t` (with g.symmetric: one of its translates) crosses a link of `mark`.
bool crosses(const LinkGraph &g, const Tree &t, const std::vector<bool> &mark) {
  std::vector<double> mine(mark.size(), 0);
  addTree(g, t, mine, 1);
  for (uint32_t d = 0; d < mark.size(); ++d)
    if (mark[d] && mine[d] > 0)
      return true;
  return false;
}

/// The cheapest tree (or path) from `root` when crossing directed link d costs price[d].
Tree treeFor(const LinkGraph &g, uint32_t root, const std::vector<double> &price, Shape shape) {
  const uint32_t n = g.ranks;
  std::vector<double> cost(size_t(n) * n, 0);
  double most = 0;
  for (uint32_t u = 0; u < n; ++u)
    for (uint32_t v = 0; v < n; ++v)
      if (u != v) {
        forEachLink(g, u, v, [&](uint32_t d) { cost[u * n + v] += price[d]; }); // a generator pays for its translates
        most = std::max(most, cost[u * n + v]);
      }
  // An edge whose route passes through another rank's GPU (a torus forwarding) moves the part
  // past a rank that could have taken it on the way: priced out unless nothing else connects.
  for (uint32_t u = 0; u < n; ++u)
    for (uint32_t v = 0; v < n; ++v)
      if (u != v && g.throughRank[u * n + v])
        cost[u * n + v] += 1e3 * most;
  Tree t;
  t.root = root;
  t.parent = shape == Shape::Paths ? minCostPath(n, root, cost) : minArborescence(n, root, cost);
  return t;
}

/// Multiplicative-weights pricing: one more part on a link costs exponentially more the busier
/// the link is relative to the busiest (`alpha` sets how steeply); `noise` perturbs the prices.
Tree buildTree(const LinkGraph &g, uint32_t root, const std::vector<double> &load, Shape shape, double alpha,
               std::mt19937 *noise = nullptr) {
  double norm = congestion(g, load, nullptr);
  if (norm <= 0)
    norm = 1.0 / *std::max_element(g.capBps.begin(), g.capBps.end());
  std::vector<double> price(load.size());
  for (uint32_t d = 0; d < load.size(); ++d)
    price[d] = std::exp(alpha * ((load[d] + 1) / g.capBps[d]) / norm) / g.capBps[d] *
               (noise ? std::uniform_real_distribution<double>(0.7, 1.3)(*noise) : 1.0);
  return treeFor(g, root, price, shape);
}

/// How good a load is: the busiest link's utilisation, then how many links are that busy, then
/// the sum of squared utilisations (smaller is better in each).
struct Score {
  double worst = 0;
  uint32_t atWorst = 0;
  double squares = 0;
  bool operator<(const Score &o) const {
    if (worst < o.worst * (1 - 1e-9)) return true;
    if (o.worst < worst * (1 - 1e-9)) return false;
    if (atWorst != o.atWorst) return atWorst < o.atWorst;
    return squares < o.squares * (1 - 1e-12);
  }
};
Score score(const LinkGraph &g, const std::vector<double> &load) {
  Score s;
  s.worst = congestion(g, load, nullptr);
  for (uint32_t d = 0; d < load.size(); ++d) {
    const double u = load[d] / g.capBps[d];
    s.squares += u * u;
    if (u >= s.worst * (1 - 1e-9) && s.worst > 0)
      ++s.atWorst;
  }
  return s;
}

/// Spread the load evenly first: rebuild every tree in turn against the marginal cost of the sum
/// of squared link utilisations (a convex stand-in for the busiest link), keeping a new tree only
/// when that sum drops, until a sweep changes nothing.
void balance(const LinkGraph &g, std::vector<Tree> &trees, Shape shape) {
  std::vector<double> load = loadOf(g, trees);
  double now = score(g, load).squares;
  for (int sweep = 0; sweep < 64; ++sweep) {
    bool changed = false;
    for (Tree &t : trees) {
      addTree(g, t, load, -1);
      std::vector<double> price(load.size());
      for (uint32_t d = 0; d < load.size(); ++d)
        price[d] = (2 * load[d] + 1) / (g.capBps[d] * g.capBps[d]);
      Tree c = treeFor(g, t.root, price, shape);
      addTree(g, c, load, 1);
      const double s = score(g, load).squares;
      if (s < now * (1 - 1e-12)) {
        t = c, now = s, changed = true;
      } else {
        addTree(g, c, load, -1);
        addTree(g, t, load, 1);
      }
    }
    if (!changed)
      return;
  }
}

/// Local search after the sweeps: rebuild, one at a time, the trees crossing the busiest link
/// with a steep price, keeping a new tree only when the score improves; stop when none does.
void refine(const LinkGraph &g, std::vector<Tree> &trees, Shape shape) {
  std::vector<double> load = loadOf(g, trees);
  Score now = score(g, load);
  for (int round = 0; round < 4000; ++round) {
    const std::vector<bool> worst = atWorst(g, load, now.worst);
    bool improved = false;
    for (Tree &t : trees) {
      if (!crosses(g, t, worst))
        continue;
      addTree(g, t, load, -1);
      for (double alpha : {4.0, 16.0, 64.0, 256.0}) {
        Tree c = buildTree(g, t.root, load, shape, alpha);
        addTree(g, c, load, 1);
        const Score s = score(g, load);
        if (s < now) {
          t = c, now = s, improved = true;
          break;
        }
        addTree(g, c, load, -1);
      }
      if (improved)
        break;
      addTree(g, t, load, 1);
    }
    if (!improved)
      return;
  }
}

/// Exchanges when single rebuilds are stuck: for a tree crossing a busiest link and any other
/// tree, rebuild both (the first against steep prices, then the second), keeping the pair only
/// when the score improves; stop when no pair does.
void refinePairs(const LinkGraph &g, std::vector<Tree> &trees, Shape shape) {
  std::vector<double> load = loadOf(g, trees);
  Score now = score(g, load);
  for (int round = 0; round < 200; ++round) {
    const std::vector<bool> worst = atWorst(g, load, now.worst);
    bool improved = false;
    for (size_t a = 0; a < trees.size() && !improved; ++a) {
      if (!crosses(g, trees[a], worst))
        continue;
      for (size_t b = 0; b < trees.size() && !improved; ++b) {
        if (b == a)
          continue;
        addTree(g, trees[a], load, -1);
        addTree(g, trees[b], load, -1);
        for (double alpha : {16.0, 64.0}) {
          Tree ca = buildTree(g, trees[a].root, load, shape, alpha);
          addTree(g, ca, load, 1);
          Tree cb = buildTree(g, trees[b].root, load, shape, alpha);
          addTree(g, cb, load, 1);
          const Score sc = score(g, load);
          if (sc < now) {
            trees[a] = ca, trees[b] = cb, now = sc, improved = true;
            break;
          }
          addTree(g, ca, load, -1);
          addTree(g, cb, load, -1);
        }
        if (!improved) {
          addTree(g, trees[a], load, 1);
          addTree(g, trees[b], load, 1);
        }
      }
    }
    if (!improved)
      return;
  }
}

/// One multiplicative-weights search: trees built one at a time against the loads so far, then
/// rebuilt in sweeps with a rising price exponent (early sweeps spread load cheaply, late ones
/// punish the busiest links hard), then refined. `noise` perturbs the prices (a restart).
std::vector<Tree> searchOnce(const LinkGraph &g, uint32_t perRoot, Shape shape, std::mt19937 *noise) {
  const uint32_t n = g.ranks;
  std::vector<double> load(g.capBps.size(), 0);
  const uint32_t roots = g.symmetric ? 1 : n; // symmetric: the generators, rooted at rank 0
  std::vector<Tree> trees(size_t(roots) * perRoot);
  for (uint32_t q = 0; q < perRoot; ++q)
    for (uint32_t r = 0; r < roots; ++r) {
      trees[r * perRoot + q] = buildTree(g, r, load, shape, 2.0, noise);
      addTree(g, trees[r * perRoot + q], load, 1);
    }
  std::vector<Tree> best = trees;
  Score bestScore = score(g, load);
  constexpr int kSweeps = 48;
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    const double alpha = 2.0 + 30.0 * sweep / (kSweeps - 1);
    for (Tree &t : trees) {
      addTree(g, t, load, -1);
      t = buildTree(g, t.root, load, shape, alpha, noise);
      addTree(g, t, load, 1);
    }
    const Score sc = score(g, load);
    if (sc < bestScore)
      bestScore = sc, best = trees;
  }
  balance(g, best, shape);
  refine(g, best, shape);
  return best;
}

Score scoreOf(const LinkGraph &g, const std::vector<Tree> &trees) { return score(g, loadOf(g, trees)); }

/// The search on `g` as given: restarts with perturbed prices (a fixed seed: the same topology
/// gives the same program), the best refined by exchanges.
std::vector<Tree> search(const LinkGraph &g, uint32_t perRoot, Shape shape) {
  constexpr int kRestarts = 12;
  std::mt19937 rng(12345);
  std::vector<Tree> best = searchOnce(g, perRoot, shape, nullptr);
  Score bestScore = scoreOf(g, best);
  for (int i = 1; i < kRestarts; ++i) {
    std::vector<Tree> t = searchOnce(g, perRoot, shape, &rng);
    const Score sc = scoreOf(g, t);
    if (sc < bestScore)
      bestScore = sc, best = std::move(t);
  }
  refinePairs(g, best, shape);
  return best;
}

} // namespace

TreePacking packTrees(const LinkGraph &g, uint32_t perRoot, Shape shape) {
  const uint32_t n = g.ranks;
  std::vector<Tree> best;
  if (!g.translations.empty()) {
    // A torus: pack rank 0's trees against the load of all their translates, then translate
    // them to every root (root-major, as the program's table lists them). The unconstrained
    // search below runs too and the better packing is kept.
    LinkGraph sym = g;
    sym.symmetric = true;
    std::vector<Tree> gens = search(sym, perRoot, shape);
    for (uint32_t r = 0; r < n; ++r)
      for (const Tree &t : gens)
        best.push_back(translate(t, g.translations[r]));
  }
  std::vector<Tree> plain = search(g, perRoot, shape);
  if (best.empty() || scoreOf(g, plain) < scoreOf(g, best))
    best = std::move(plain);
  TreePacking p;
  p.ranks = n;
  p.perRoot = perRoot;
  p.trees = std::move(best);
  const std::vector<double> finalLoad = loadOf(g, p.trees);
  for (double x : finalLoad)
    p.load.push_back(uint32_t(std::lround(x)));
  uint32_t busiest = 0;
  // One part is S / (n * perRoot) bytes (S: the gathered size).
  p.secondsPerByte = congestion(g, finalLoad, &busiest) / (double(n) * perRoot);
  p.busiest = g.names.empty() ? "" : g.names[busiest];
  p.busiestParts = p.load.empty() ? 0 : p.load[busiest];
  return p;
}

TreePacking bestPacking(const LinkGraph &g, uint32_t maxPerRoot, Shape shape) {
  TreePacking best;
  for (uint32_t k = 1; k <= std::max<uint32_t>(maxPerRoot, 1); ++k) {
    TreePacking p = packTrees(g, k, shape);
    if (best.trees.empty() || p.secondsPerByte < 0.99 * best.secondsPerByte)
      best = std::move(p);
  }
  return best;
}

} // namespace msccl::tools::synth
