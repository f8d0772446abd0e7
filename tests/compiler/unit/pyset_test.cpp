// PySet: CPython 3.11 set iteration order (spec dsl#6.8), checked against orders recorded
// from CPython (data/pyset_cases.json, made by data/make_pyset_cases.py).
#include "msccl/ir/PySet.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

using msccl::ir::PySet;

TEST_CASE("small sets iterate in ascending order; 9 fused with 1 gives [9, 1]", "[pyset]") {
  PySet s = PySet::unionOf(PySet::single(3), PySet::single(0));
  CHECK(s.toList() == std::vector<uint32_t>{0, 3});
  PySet t = PySet::unionOf(PySet::single(9), PySet::single(1));
  CHECK(t.toList() == std::vector<uint32_t>{9, 1});
  CHECK(t.contains(9));
  CHECK(!t.contains(2));
  CHECK(t.intersects(PySet::single(1)));
  CHECK(!t.intersects(PySet::single(8)));
}

TEST_CASE("fusion chains and deepcopy rebuilds match CPython", "[pyset]") {
  std::ifstream in(MSCCL_DSL_DATA_DIR "/pyset_cases.json");
  REQUIRE(in);
  auto cases = nlohmann::json::parse(in);
  REQUIRE(cases.size() >= 100);
  size_t unsorted = 0;
  for (auto &c : cases) {
    auto ids = c.at("ids").get<std::vector<uint32_t>>();
    PySet s = PySet::single(ids[0]);
    for (size_t i = 1; i < ids.size(); ++i) s = PySet::unionOf(s, PySet::single(ids[i]));
    auto fused = c.at("fused").get<std::vector<uint32_t>>();
    INFO("ids " << c.at("ids").dump());
    CHECK(s.toList() == fused);
    CHECK(PySet::fromList(s.toList()).toList() == c.at("deepcopied").get<std::vector<uint32_t>>());
    CHECK(s.size() == ids.size());
    unsorted += !std::is_sorted(fused.begin(), fused.end());
  }
  CHECK(unsorted > 10); // the data really exercises non-sorted orders
}

TEST_CASE("unionWith builds exactly the table unionOf builds", "[pyset]") {
  // Fusion-like chains (one id at a time) and unions of larger sets, ids small and large.
  uint64_t seed = 12345;
  auto next = [&seed](uint32_t bound) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t((seed >> 33) % bound);
  };
  size_t resized = 0;
  for (int round = 0; round < 300; ++round) {
    uint32_t bound = round % 3 == 0 ? 16 : round % 3 == 1 ? 200 : 100000;
    PySet viaUnion, inPlace;
    int steps = 1 + int(next(90));
    for (int i = 0; i < steps; ++i) {
      PySet other;
      int n = round % 4 == 0 ? int(next(12)) : 1;
      for (int k = 0; k < n; ++k) other.insert(next(bound));
      size_t before = inPlace.rawTableSize();
      viaUnion = PySet::unionOf(viaUnion, other);
      inPlace.unionWith(other);
      INFO("round " << round << " step " << i);
      REQUIRE(inPlace.rawSlots() == viaUnion.rawSlots());
      REQUIRE(inPlace.size() == viaUnion.size());
      resized += inPlace.rawTableSize() != before;
    }
  }
  PySet empty;
  empty.unionWith(PySet());
  CHECK(empty.rawTableSize() == PySet::unionOf(PySet(), PySet()).rawTableSize());
  CHECK(resized > 100);
}
