//===- LegacyPlanFormat.h - The MSCCLPPLang (pre-PR #579) JSON plan format -----------------===//
//
// The plan format written by MSCCLPPLang, the chunk-oriented compiler of microsoft/mscclpp up to
// be6a941f~1 (python/mscclpp/language/ir.py, `ir_to_json` / `_dump_to_json`), and executed by the
// MSCCL++ releases of that time. mscclc writes it with `--plan-format=legacy`
// (compiler/lib/legacy/LegacyEmit.cpp); the runtime's legacy reader converts it to the one plan
// model. This header is the single description of the format, shared by writer and reader: the
// field names and op names below are its spellings, and nothing else of the format exists.
//
// Text: `json.dumps(obj, indent=2)` plus the newline of print(): 2-space indentation, ": " and
// "," separators, an empty list as `[]`, keys in the order listed here.
//
// Top level (an object):
//   "name"                      str   program name (MSCCLPPProgram's first argument)
//   "collective"                str   allreduce | allgather | reducescatter | alltoall | sendrecv |
//                                     broadcast | custom
//   "protocol"                  str   "Simple" | "LL"
//   "inplace"                   bool
//   "gpus"                      list  one object per rank, in rank order (below)
//   "num_threads_per_block"     int
//   "use_double_scratch_buffer" bool
//   "min_message_size"          int   bytes
//   "max_message_size"          int   bytes (default 2**64-1)
//
// gpus[r] (an object):
//   "id"            int   the rank
//   "inputChunks"   int   chunks of the input buffer (all instances)
//   "outputChunks"  int   chunks of the output buffer (0 for an in-place collective unless used)
//   "scratchChunks" int   chunks of the scratch buffer (the maximum over ranks under LL)
//   "chunkGroups"   int   number of chunk groups = collective.num_chunk_groups * instances
//                         (AllReduce: num_ranks by default; others 1)
//   "threadblocks"  list  by id (below); threadblocks with a negative id are not written
//   "channels"      list  sorted by (srcbuff, dstbuff, type); a channel of type "none" is not written
//       memory / port: {"srcbuff": "i|o|s", "dstbuff": "i|o|s", "type": "memory"|"port",
//                       "connectedTo": [peer rank per channel id]}  channel id = index in the list
//       nvls:          {"buff": "i|o|s", "type": "nvls",
//                       "rankGroups": [{"size": chunks of that buffer (max over ranks),
//                                       "ranks": [sorted member ranks]}]}
//
// gpus[r].threadblocks[t] (an object):
//   "id"        int   threadblock id (= original tb * instances + instance)
//   "ops"       list  in execution order (below)
//   "channels"  list  [{"src": buff, "dst": buff, "ctype": type, "cids": [channel ids of
//                       gpus[r].channels entry (src, dst, type) this tb uses]}], sorted like
//                       the gpu's channels. For nvls, "src" and "dst" are the op's buffers.
//
// An op (an object; a field appears only when non-empty, in this order):
//   "name"           str   op name (kLegacyOpNames)
//   "i_buff"         {"src": buff, "dst": buff}  incoming channel's (local, remote) buffers
//   "i_cids"         [{"id": channel index within the tb's channel list, "off": chunk offset}]
//                    (nvls: [{"id": i}] without "off")
//   "o_buff"         {"src": buff, "dst": buff}  outgoing channel's (local, remote) buffers
//   "o_cids"         as i_cids, for the remote destinations
//   "src"            int   rank of the local source chunk
//   "srcs"           [{"buff": buff, "off": chunk offset}]  local sources
//   "srcbuff"        str   buffer of the local source
//   "srcoff"         int   chunk offset of the local source
//   "dst"            int   rank of the local destination chunk
//   "dsts"           [{"buff": buff, "off": chunk offset}]  local destinations (get)
//   "dstbuff"        str
//   "dstoff"         int
//   "ctype"          str   "memory" | "port" | "nvls" | "none"
//   "cnt"            int   chunks moved by each source/destination pair
//   "deps"           [{"tb": int, "step": int}]  (nop only) wait for these ops of this rank
//   "nthread_blocks" int   (barrier only) number of tbs in the barrier
//   "barrier_id"     int   (barrier only)
// "off", "srcoff", "dstoff" count chunks of the whole buffer (instances included); "tb"/"step"
// name an op by its threadblock id and its index in that tb's "ops".
//
// Buffers: "i" input, "o" output, "s" scratch.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <string_view>

namespace msccl::legacy {

/// Every op name of the format, with its MSCCLPPLang Instruction member (types.py) and meaning.
///   nop     dependency wait (deps)                  barrier  tb barrier (nthread_blocks, barrier_id)
///   put     remote write (o_cids, srcs)             get      remote read (i_cids, dsts)
///   ppkt    put_packet: remote write in LL packets  rppkt    read_put_packet: forward packets
///   pws     put_with_signal                         pwsf     put_with_signal_and_flush
///   signal  signal peers (o_cids)                   wait     wait for peers' signals (i_cids)
///   flush   flush a port channel (o_cids)           copy     local copy (src*, dst*)
///   cpkt    copy_packet: unpack packets locally     tpkt     transform_to_packet: pack locally
///   re      local reduce (srcs into dst)            rpkt     reduce_packet
///   rrc     read_reduce_copy: reduce remote chunks (i_cids) into dst
///   rrcs    read_reduce_copy_send: rrc, then write the result to peers (o_cids)
///   rs      reduce_send: re, then write to peers    rspkt    reduce_send_packet
///   glre    group_load_reduce (nvls)                gstore   group_store (nvls)
///   glres   group_load_reduce_store (nvls; i_cids, o_cids, src*, dst*)
inline constexpr std::string_view kLegacyOpNames[] = {
    "nop",  "barrier", "put",  "get",  "ppkt", "rppkt",  "pws",  "pwsf",  "signal", "wait", "flush",
    "copy", "cpkt",    "tpkt", "re",   "rpkt", "rrc",    "rrcs", "rs",    "rspkt",  "glre", "gstore",
    "glres"};

/// Buffer spellings ("i", "o", "s") and channel types ("memory", "port", "nvls", "none").
inline constexpr std::string_view kLegacyBuffers[] = {"i", "o", "s"};
inline constexpr std::string_view kLegacyChannelTypes[] = {"memory", "port", "nvls", "none"};

} // namespace msccl::legacy
