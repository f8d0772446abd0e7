// MSCCLPPLang's older plan format (LegacyPlan.h): detection, how each kind of old op and name
// (channel keys, cids, remote buffers) maps onto today's model, and errors that name the JSON path.
#include "msccl/plan/LegacyPlan.h"
#include "msccl/plan/PlanJson.h"

#include <catch2/catch.hpp>

using namespace msccl::plan;
using json = nlohmann::json;

namespace {

/// Two ranks; rank 0 declares memory channels (i -> o) to rank 1 twice and a port channel (s -> s);
/// its tb 0 uses memory channel 1 and the port channel; `ops` are tb 0's ops.
json twoRanks(json ops) {
  json gpu0 = {{"id", 0}, {"inputChunks", 4}, {"outputChunks", 4}, {"scratchChunks", 2}, {"chunkGroups", 2},
               {"threadblocks", json::array({{{"id", 0}, {"ops", ops},
                                             {"channels", json::array({{{"src", "i"}, {"dst", "o"}, {"ctype", "sm"}, {"cids", {1}}},
                                                                       {{"src", "s"}, {"dst", "s"}, {"ctype", "proxy"}, {"cids", {0}}}})}}})},
               {"channels", json::array({{{"srcbuff", "i"}, {"dstbuff", "o"}, {"type", "memory"}, {"connectedTo", {1, 1}}},
                                         {{"srcbuff", "s"}, {"dstbuff", "s"}, {"type", "port"}, {"connectedTo", {1}}}})}};
  json gpu1 = {{"id", 1}, {"inputChunks", 4}, {"outputChunks", 4}, {"scratchChunks", 2}, {"chunkGroups", 2},
               {"threadblocks", json::array()}, {"channels", json::array()}};
  return {{"name", "t"}, {"collective", "custom"}, {"protocol", "Simple"}, {"inplace", false}, {"gpus", {gpu0, gpu1}}};
}

std::string errorOf(const json &j) {
  try {
    fromJson(j);
  } catch (const PlanError &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("older plans are detected, current ones are not", "[legacy]") {
  json old = twoRanks(json::array());
  CHECK(isLegacyPlan(old));
  json current = {{"gpus", {{{"input_chunks", 1}}}}};
  CHECK_FALSE(isLegacyPlan(current));
  CHECK_FALSE(isLegacyPlan(json::array()));
  CHECK_FALSE(isLegacyPlan(json{{"gpus", 3}}));
}

TEST_CASE("channels and chunk counts become today's tables", "[legacy]") {
  Plan p = fromJson(twoRanks(json::array()));
  REQUIRE(p.gpus.size() == 2);
  const Gpu &g = p.gpus[0];
  CHECK(g.inputChunks == 4);
  CHECK(g.scratchChunks == 2);
  REQUIRE(g.channels.size() == 2);
  CHECK(g.channels[0].channelType == ChannelType::Memory);
  CHECK(g.channels[0].connectedTo == std::vector<uint32_t>{1, 1});
  CHECK(g.channels[1].channelType == ChannelType::Port);
  REQUIRE(g.threadblocks[0].channels.size() == 2);
  // cids are indices among the gpu's channels of the key: memory cid 1 is gpu-level memory channel 1.
  CHECK(g.threadblocks[0].channels[0].channelIds == std::vector<uint32_t>{1});
  CHECK(g.threadblocks[0].channels[1].channelIds == std::vector<uint32_t>{0});
}

TEST_CASE("a put names its peer's buffer through the channel's key", "[legacy]") {
  json put = {{"name", "put"}, {"o_buff", {{"src", "i"}, {"dst", "o"}}}, {"o_cids", {{{"id", 0}, {"off", 3}}}},
              {"srcs", {{{"buff", "i"}, {"off", 1}}}}, {"ctype", "memory"}, {"cnt", 1}};
  Plan p = fromJson(twoRanks(json::array({put})));
  const Gpu &g = p.gpus[0];
  const Op &op = g.threadblocks[0].ops[0];
  CHECK(op.type == OpType::Put);
  CHECK(op.src[0] == BufferRef::local(BufferType::Input, 1, 1));
  CHECK(op.dst[0] == BufferRef::remote(0, 3, 1));
  CHECK_FALSE(op.channelIds.has_value()); // memory puts carry none, as mscclc writes them
  REQUIRE(g.remoteBuffers.size() == 1);
  CHECK(g.remoteBuffers[0] == RemoteBuffer{1, BufferType::Output, {ChannelType::Memory}});
  REQUIRE(g.threadblocks[0].remoteBufferRefs.size() == 1);
  CHECK(g.threadblocks[0].remoteBufferRefs[0].remoteBufferIds == std::vector<uint32_t>{0});
}

TEST_CASE("old op names map to today's ops", "[legacy]") {
  json rrcs = {{"name", "rrcs"}, {"i_buff", {{"src", "i"}, {"dst", "o"}}}, {"i_cids", {{{"id", 0}, {"off", 2}}}},
               {"o_buff", {{"src", "i"}, {"dst", "o"}}}, {"o_cids", {{{"id", 0}, {"off", 0}}}},
               {"src", 0}, {"srcbuff", "i"}, {"srcoff", 0}, {"dst", 0}, {"dstbuff", "o"}, {"dstoff", 1}, {"ctype", "memory"}, {"cnt", 2}};
  json tpkt = {{"name", "tpkt"}, {"srcbuff", "i"}, {"srcoff", 0}, {"dstbuff", "s"}, {"dstoff", 0}, {"ctype", "none"}, {"cnt", 1}};
  json cpkt = {{"name", "cpkt"}, {"srcbuff", "s"}, {"srcoff", 1}, {"dstbuff", "o"}, {"dstoff", 0}, {"ctype", "none"}, {"cnt", 1}};
  json ppkt = {{"name", "ppkt"}, {"o_buff", {{"src", "s"}, {"dst", "s"}}}, {"o_cids", {{{"id", 0}, {"off", 1}}}},
               {"srcs", {{{"buff", "s"}, {"off", 0}}}}, {"ctype", "port"}, {"cnt", 1}};
  json wait = {{"name", "wait"}, {"i_buff", {{"src", "s"}, {"dst", "s"}}}, {"i_cids", {{{"id", 0}, {"off", 0}}}}, {"ctype", "port"}, {"cnt", 1}};
  json nop = {{"name", "nop"}, {"deps", {{{"tb", 0}, {"step", 1}}}}};
  json barrier = {{"name", "barrier"}, {"barrier_id", 2}, {"nthread_blocks", 3}};
  Plan p = fromJson(twoRanks(json::array({rrcs, tpkt, cpkt, ppkt, wait, nop, barrier})));
  const auto &ops = p.gpus[0].threadblocks[0].ops;
  REQUIRE(ops.size() == 7);
  CHECK(ops[0].type == OpType::ReadReduceSend);
  CHECK(ops[0].src == std::vector<BufferRef>{BufferRef::local(BufferType::Input, 0, 2), BufferRef::remote(0, 2, 2)});
  CHECK(ops[0].dst == std::vector<BufferRef>{BufferRef::local(BufferType::Output, 1, 2), BufferRef::remote(0, 0, 2)});
  CHECK(ops[0].reduceOp == ReduceOp::Sum);
  CHECK(ops[1].type == OpType::CopyPackets);   // old tpkt: data -> packets
  CHECK(ops[2].type == OpType::UnpackPackets); // old cpkt: packets -> data
  CHECK(ops[3].type == OpType::ReadPutPackets); // old port ppkt sends packets already in scratch
  CHECK(ops[3].channelIds == std::vector<uint32_t>{0});
  CHECK(ops[4].type == OpType::Wait);
  CHECK(ops[4].channelType == ChannelType::Port);
  CHECK(ops[4].channelIds == std::vector<uint32_t>{0});
  CHECK(ops[5].type == OpType::Nop);
  CHECK(ops[6].barrierId == 2);
  CHECK(ops[6].numThreadblocks == 3);
  // Written in today's format and read back: the same plan.
  CHECK(parsePlan(writePlan(p)) == p);
}

TEST_CASE("what cannot be converted is an error at its JSON path", "[legacy]") {
  json badName = {{"name", "frob"}};
  CHECK(errorOf(twoRanks(json::array({badName}))).rfind("gpus[0].threadblocks[0].ops[0].name: unknown operation `frob`", 0) == 0);
  json badCid = {{"name", "signal"}, {"o_buff", {{"src", "i"}, {"dst", "o"}}}, {"o_cids", {{{"id", 1}, {"off", 0}}}}, {"ctype", "memory"}, {"cnt", 1}};
  CHECK(errorOf(twoRanks(json::array({badCid}))) ==
        "gpus[0].threadblocks[0].ops[0].o_cids[0].id: channel 1 of key (i, o, memory) does not exist: the threadblock has 1 "
        "such channel(s) in its `channels`");
  json j = twoRanks(json::array());
  j["gpus"][0]["threadblocks"][0]["channels"][0]["cids"] = {5};
  CHECK(errorOf(j) == "gpus[0].threadblocks[0].channels[0].cids[0]: channel 5 of key (i, o, memory) is not declared: gpu 0 "
                      "declares 2 such channel(s)");
  j = twoRanks(json::array());
  j["gpus"][1]["chunkGroups"] = 3;
  CHECK(errorOf(j) == "gpus[1].chunkGroups: `chunkGroups` 3 does not divide the 4 chunks that offsets are counted in");
  j = twoRanks(json::array());
  j["gpus"][0]["channels"][0]["type"] = "carrier-pigeon";
  CHECK(errorOf(j).rfind("gpus[0].channels[0].type: unknown channel type `carrier-pigeon`", 0) == 0);
  json missing = {{"name", "copy"}, {"srcbuff", "i"}, {"srcoff", 0}, {"dstbuff", "o"}, {"cnt", 1}};
  CHECK(errorOf(twoRanks(json::array({missing}))) == "gpus[0].threadblocks[0].ops[0]: missing required key `dstoff`");
}

TEST_CASE("get, reduce-send and nvls ops", "[legacy]") {
  json get = {{"name", "get"}, {"i_buff", {{"src", "i"}, {"dst", "o"}}}, {"i_cids", {{{"id", 0}, {"off", 2}}}},
              {"dsts", {{{"buff", "i"}, {"off", 3}}}}, {"ctype", "memory"}, {"cnt", 1}};
  json rs = {{"name", "rs"}, {"o_buff", {{"src", "i"}, {"dst", "o"}}}, {"o_cids", {{{"id", 0}, {"off", 1}}}},
             {"srcs", {{{"buff", "o"}, {"off", 2}}, {{"buff", "i"}, {"off", 3}}}},
             {"srcbuff", "i"}, {"srcoff", 0}, {"dstbuff", "i"}, {"dstoff", 0}, {"ctype", "memory"}, {"cnt", 1}};
  Plan p = fromJson(twoRanks(json::array({get, rs})));
  const auto &ops = p.gpus[0].threadblocks[0].ops;
  CHECK(ops[0].type == OpType::Get);
  CHECK(ops[0].src == std::vector<BufferRef>{BufferRef::remote(0, 2, 1)});
  CHECK(ops[0].dst == std::vector<BufferRef>{BufferRef::local(BufferType::Input, 3, 1)});
  CHECK(ops[0].channelIds == std::vector<uint32_t>{0});
  CHECK(ops[1].type == OpType::ReduceSend);
  // Every `srcs` entry is read from the first one's buffer, as the old executor did.
  CHECK(ops[1].src == std::vector<BufferRef>{BufferRef::local(BufferType::Input, 0, 1), BufferRef::local(BufferType::Output, 2, 1),
                                             BufferRef::local(BufferType::Output, 3, 1)});
  CHECK(ops[1].dst == std::vector<BufferRef>{BufferRef::local(BufferType::Input, 0, 1), BufferRef::remote(0, 1, 1)});

  json j = twoRanks(json::array({{{"name", "glres"}, {"i_cids", {{{"id", 0}}}}, {"o_cids", {{{"id", 0}}}}, {"srcbuff", "i"},
                                  {"srcoff", 1}, {"dstbuff", "i"}, {"dstoff", 1}, {"ctype", "nvls"}, {"cnt", 1}}}));
  j["gpus"][0]["channels"].push_back({{"buff", "i"}, {"type", "nvls"}, {"rankGroups", {{{"size", 4}, {"ranks", {0, 1}}}}}});
  j["gpus"][0]["threadblocks"][0]["channels"].push_back({{"src", "i"}, {"dst", "i"}, {"ctype", "nvls"}, {"cids", {0}}});
  Plan q = fromJson(j);
  const Gpu &g = q.gpus[0];
  REQUIRE(g.channels.size() == 3);
  CHECK(g.channels[2].channelType == ChannelType::Switch);
  CHECK(g.channels[2].rankGroups == std::vector<RankGroup>{RankGroup{2, {0, 1}}});
  const Op &op = g.threadblocks[0].ops[0];
  CHECK(op.type == OpType::MultiLoadReduceStore);
  CHECK(op.src == std::vector<BufferRef>{BufferRef::switchRef(0, 1, 1)});
  CHECK(op.dst == std::vector<BufferRef>{BufferRef::switchRef(0, 1, 1)});

  // A put over an nvls channel has no peer buffer to name.
  json bad = {{"name", "put"}, {"o_buff", {{"src", "i"}, {"dst", "i"}}}, {"o_cids", {{{"id", 0}, {"off", 0}}}},
              {"srcs", {{{"buff", "i"}, {"off", 0}}}}, {"ctype", "nvls"}, {"cnt", 1}};
  j["gpus"][0]["threadblocks"][0]["ops"] = json::array({bad});
  CHECK(errorOf(j) == "gpus[0].threadblocks[0].ops[0].o_cids[0]: a peer's buffer is reached through a memory or port channel, not `nvls`");
}
