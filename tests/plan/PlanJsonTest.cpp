// The plan model's JSON reader and writer: every golden plan reads and writes back to the same
// bytes (the writer matches Python's json.dumps(indent=2)), and malformed plans name the JSON path.
#include "msccl/plan/PlanJson.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace msccl::plan;

namespace {

std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> goldenPlans() {
  std::vector<fs::path> out;
  fs::path root = fs::path(MSCCL_SHARED_DIR) / "golden";
  if (!fs::exists(root))
    return out;
  for (const auto &e : fs::recursive_directory_iterator(root))
    if (e.path().extension() == ".json")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string errorOf(const std::string &text) {
  try {
    parsePlan(text);
  } catch (const PlanError &e) {
    return e.what();
  }
  return "no error";
}

const char *kMinimal = R"({"name": "p", "collective": "allreduce", "protocol": "Simple", "inplace": false,
  "gpus": [{"id": 0, "input_chunks": 1, "output_chunks": 1, "scratch_chunks": 0,
            "threadblocks": [{"id": 0, "ops": [%OP%], "channels": []}],
            "channels": [], "remote_buffers": []}]})";

std::string withOp(const std::string &op) {
  std::string s = kMinimal;
  s.replace(s.find("%OP%"), 4, op);
  return s;
}

} // namespace

TEST_CASE("every golden plan round-trips byte for byte", "[plan][golden]") {
  auto plans = goldenPlans();
  if (plans.empty()) {
    WARN("skipped: no golden plans under " MSCCL_SHARED_DIR "/golden");
    return;
  }
  CHECK(plans.size() >= 40);
  for (const auto &p : plans) {
    INFO(p.string());
    std::string text = slurp(p);
    Plan plan = parsePlan(text);
    CHECK(writePlan(plan) == text);
    std::ostringstream streamed;
    writePlan(streamed, plan);
    CHECK(streamed.str() == text);
    // Reading what we wrote gives an equal model, and the compact form is the same value.
    CHECK(parsePlan(writePlan(plan, -1)) == plan);
    CHECK(toJson(plan) == nlohmann::ordered_json::parse(text));
  }
}

TEST_CASE("the model keeps optional fields", "[plan]") {
  Plan p = parsePlan(withOp(R"({"name": "put", "src_buff": [{"type": "i", "index": 0, "size": 1}],
      "dst_buff": [{"buffer_id": 0, "index": 1, "size": 1}], "channel_type": "memory"})"));
  const Op &op = p.gpus[0].threadblocks[0].ops[0];
  CHECK(op.type == OpType::Put);
  CHECK_FALSE(op.channelIds.has_value());
  REQUIRE(op.channelType.has_value());
  CHECK(*op.channelType == ChannelType::Memory);
  CHECK(op.dst[0].loc == BufferRef::Loc::Remote);
  CHECK(p.maxMessageSize == UINT64_MAX);
  CHECK(p.numThreadsPerBlock == 1024);
}

TEST_CASE("malformed plans name the JSON path", "[plan][errors]") {
  CHECK(errorOf(withOp(R"({"name": "frobnicate"})")) ==
        "gpus[0].threadblocks[0].ops[0].name: unknown operation `frobnicate`");
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [{"type": "x", "index": 0, "size": 1}], "dst_buff": []})")) ==
        "gpus[0].threadblocks[0].ops[0].src_buff[0].type: unknown buffer type `x` (expected `i`, `o` or `s`)");
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [{"type": "i", "index": -1, "size": 1}], "dst_buff": []})")) ==
        "gpus[0].threadblocks[0].ops[0].src_buff[0].index: expected a non-negative integer, got -1");
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [{"type": "i", "size": 1}], "dst_buff": []})")) ==
        "gpus[0].threadblocks[0].ops[0].src_buff[0]: missing required key `index`");
  CHECK(errorOf(withOp(R"({"name": "signal", "channel_ids": [0]})")) ==
        "gpus[0].threadblocks[0].ops[0]: `signal` needs `channel_type`");
  CHECK(errorOf(withOp(R"({"name": "wait", "channel_ids": [0], "channel_type": "carrier-pigeon"})")) ==
        "gpus[0].threadblocks[0].ops[0].channel_type: unknown channel type `carrier-pigeon` (expected `memory`, `port`, `switch` or `none`)");
  CHECK(errorOf(withOp(R"({"name": "pipeline", "iter_context": {"unit_size": 16, "num_chunks": 1},
      "ops": [{"name": "pipeline", "iter_context": {"unit_size": 16, "num_chunks": 1}, "ops": []}]})")) ==
        "gpus[0].threadblocks[0].ops[0].ops[0]: nested pipelines are not supported");
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [], "dst_buff": [], "tbg_info": {"tb_id": 2, "tbg_size": 2}})")) ==
        "gpus[0].threadblocks[0].ops[0].tbg_info.tb_id: tb_id 2 is not below tbg_size 2");
  CHECK(errorOf(R"({"name": "p", "collective": "allreduce", "protocol": "Simple", "inplace": 1, "gpus": []})") ==
        "inplace: expected a boolean, got number");
  CHECK(errorOf(R"({"name": "p", "collective": "allreduce"})") == "missing required key `protocol`");
  CHECK(errorOf("{\"name\": ") .rfind("name: invalid JSON: parse error at line 1, column 10", 0) == 0);
  CHECK(errorOf("[]") == "expected an object, got array");
}

TEST_CASE("spellings come from one list", "[plan]") {
  for (unsigned i = 0; i < kNumOpTypes; ++i) {
    auto t = static_cast<OpType>(i);
    REQUIRE(parseOpName(opName(t)) == t);
  }
  CHECK(opName(OpType::ReadReduceSend) == "rres");
  CHECK_FALSE(opIsExecutable(OpType::MultiLoadReduce));
  CHECK(opIsExecutable(OpType::MultiLoadReduceStore));
  CHECK_FALSE(parseOpName("put_packets").has_value());
  CHECK(bufferTypeName(BufferType::Scratch) == "s");
  CHECK(static_cast<int>(BufferType::Output) == 1);
  CHECK(dataTypeBytes(*parseDataType("bfloat16")) == 2);
}

// Hostile input: every exception of the JSON library becomes a PlanError naming the JSON path
// of the value where reading stopped (msccl-run used to abort on `1e999`).
TEST_CASE("JSON library errors are plan errors naming the path", "[plan][errors]") {
  CHECK(errorOf(R"({"name": 1e999})") == "name: invalid JSON: number overflow parsing '1e999'");
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [{"type": "i", "index": 0, "size": -1e400}], "dst_buff": []})")) ==
        "gpus[0].threadblocks[0].ops[0].src_buff[0].size: invalid JSON: number overflow parsing '-1e400'");
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [], "dst_buff": [{"index": 0, "size": 1}, )")).rfind(
            "gpus[0].threadblocks[0].ops[0].dst_buff[1]: invalid JSON: parse error", 0) == 0);
  // Not UTF-8 inside a string.
  CHECK(errorOf("{\"name\": \"\xff\"}").rfind("name: invalid JSON: parse error", 0) == 0);
  // Between members, the path is the object's.
  CHECK(errorOf(R"({"gpus": [{"id": 0,,}]})").rfind("gpus[0]: invalid JSON: parse error", 0) == 0);
  // Numbers the plan cannot hold: integers above 2**64-1 are doubles to the JSON library.
  CHECK(errorOf(withOp(R"({"name": "copy", "src_buff": [{"type": "i", "index": 18446744073709551616, "size": 1}], "dst_buff": []})")) ==
        "gpus[0].threadblocks[0].ops[0].src_buff[0].index: expected a non-negative integer, got number");
  CHECK(errorOf(R"({"name": "p", "collective": "a", "protocol": "Simple", "inplace": true, "gpus": [{"id": 4294967296}]})") ==
        "gpus[0].id: value 4294967296 does not fit in 32 bits");
}

TEST_CASE("deeply nested or empty JSON is refused without a crash", "[plan][errors]") {
  std::string deep = "{\"name\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK(errorOf(deep) == "name: expected a string, got array");
  CHECK(errorOf("").rfind("invalid JSON: ", 0) == 0);
  CHECK(errorOf(std::string(100000, '[')).rfind(
            "[0][0]", 0) == 0); // the path of the innermost array reached
}
