//===- PlanJson.cpp - JSON writer of execution plans (the reader: PlanJsonRead.cpp) -------===//
//
// The writer streams text directly (plans reach tens of megabytes) in the layout of Python's
// json.dumps(indent=2): one member per line, two spaces per level, `[]`/`{}` for empty
// containers, ASCII only. toJson() parses that text back, so the key order lives in one place.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

namespace msccl::plan {

PlanError::PlanError(std::string path, const std::string &message)
    : std::runtime_error(path.empty() ? message : path + ": " + message), path_(std::move(path)),
      message_(message) {}

//===------------------------------------------------------------------------------------===//
// Writer
//===------------------------------------------------------------------------------------===//
namespace {

/// The writer's text buffer: appends without the per-character calls of std::string.
class TextBuffer {
public:
  TextBuffer() { reserve(1 << 17); }
  void put(char c) {
    if (size_ == cap_)
      reserve(cap_ * 2 + 1);
    data_[size_++] = c;
  }
  void append(const char *s, size_t n) {
    if (cap_ - size_ < n)
      reserve(std::max(cap_ * 2, size_ + n));
    std::memcpy(data_.get() + size_, s, n);
    size_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void spaces(size_t n) {
    if (cap_ - size_ < n)
      reserve(std::max(cap_ * 2, size_ + n));
    std::memset(data_.get() + size_, ' ', n);
    size_ += n;
  }
  void number(uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    append(buf, size_t(r.ptr - buf));
  }
  void number(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    append(buf, size_t(r.ptr - buf));
  }
  const char *data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

private:
  void reserve(size_t cap) {
    if (cap <= cap_)
      return;
    std::unique_ptr<char[]> d(new char[cap]);
    if (size_)
      std::memcpy(d.get(), data_.get(), size_);
    data_ = std::move(d);
    cap_ = cap;
  }
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

class Writer {
public:
  explicit Writer(int indent, std::ostream *sink = nullptr) : indent_(indent), sink_(sink) {}

  std::string take() { return std::string(out_.data(), out_.size()); }
  /// The final newline after the top-level value (what Python's print adds).
  void newlineAtEnd() { out_.put('\n'); }
  /// With a sink: hands the text written so far to it once it exceeds 64 KiB (or always).
  void flush(bool force = false) {
    if (sink_ && (force || out_.size() >= (1 << 16))) {
      sink_->write(out_.data(), std::streamsize(out_.size()));
      out_.clear();
    }
  }

  void beginObject() { open('{'); }
  void endObject() { close('}'); }
  void beginArray() { open('['); }
  void endArray() { close(']'); }

  /// Starts an object member; the value follows. `k` is one of this file's key literals (plain
  /// ASCII, nothing to escape).
  void key(std::string_view k) {
    element();
    out_.put('"');
    out_.append(k);
    if (indent_ >= 0)
      out_.append("\": ", 3);
    else
      out_.append("\":", 2);
    pendingValue_ = true;
  }

  void value(uint64_t v) {
    element();
    out_.number(v);
  }
  void valueSigned(int64_t v) {
    element();
    out_.number(v);
  }
  void value(bool v) {
    element();
    out_.append(v ? std::string_view("true") : std::string_view("false"));
  }
  void value(std::string_view s) {
    element();
    string(s);
  }
  void null() {
    element();
    out_.append("null", 4);
  }

  template <typename T> void member(std::string_view k, const T &v) {
    key(k);
    value(v);
  }
  void memberList(std::string_view k, const std::vector<uint32_t> &ids) {
    key(k);
    beginArray();
    for (uint32_t id : ids)
      value(uint64_t(id));
    endArray();
  }

private:
  void open(char c) {
    element();
    out_.put(c);
    empty_.push_back(true);
  }
  void close(char c) {
    bool empty = empty_.back();
    empty_.pop_back();
    if (!empty)
      newline();
    out_.put(c);
  }
  /// Emits the separator and indentation before a new element, unless it is the value of a
  /// member whose key was just written.
  void element() {
    if (pendingValue_) {
      pendingValue_ = false;
      return;
    }
    if (empty_.empty())
      return;
    if (!empty_.back())
      out_.put(',');
    empty_.back() = false;
    newline();
  }
  void newline() {
    if (indent_ < 0)
      return;
    out_.put('\n');
    out_.spaces(empty_.size() * size_t(indent_));
  }
  void string(std::string_view s);
  void escapedString(std::string_view s);

  TextBuffer out_;
  std::vector<char> empty_; ///< Per open object/array: whether it has no element yet.
  int indent_;
  std::ostream *sink_;
  bool pendingValue_ = false;
};

/// Python json.dumps(ensure_ascii=True) string escaping. Fast path: printable ASCII without
/// quotes or backslashes (every key and enum spelling) is copied as is.
void Writer::string(std::string_view s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      escapedString(s);
      return;
    }
  }
  out_.put('"');
  out_.append(s);
  out_.put('"');
}

void Writer::escapedString(std::string_view s) {
  static const char *hex = "0123456789abcdef";
  auto u16 = [&](unsigned cu) {
    out_.append("\\u", 2);
    for (int shift = 12; shift >= 0; shift -= 4)
      out_.put(hex[(cu >> shift) & 0xF]);
  };
  out_.put('"');
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
    case '"': out_.append("\\\"", 2); continue;
    case '\\': out_.append("\\\\", 2); continue;
    case '\n': out_.append("\\n", 2); continue;
    case '\r': out_.append("\\r", 2); continue;
    case '\t': out_.append("\\t", 2); continue;
    case '\b': out_.append("\\b", 2); continue;
    case '\f': out_.append("\\f", 2); continue;
    default: break;
    }
    if (c < 0x20) {
      u16(c);
    } else if (c < 0x80) {
      out_.put(char(c));
    } else {
      // Decode one UTF-8 sequence; invalid bytes are written as U+FFFD.
      unsigned cp = 0xFFFD, len = 1;
      if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; len = 2; }
      else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; len = 3; }
      else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; len = 4; }
      if (len == 1 || i + len > s.size()) {
        cp = 0xFFFD;
        len = 1;
      } else {
        for (unsigned k = 1; k < len; ++k)
          cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      }
      i += len - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        u16(0xD800 + (cp >> 10));
        u16(0xDC00 + (cp & 0x3FF));
      } else {
        u16(cp);
      }
    }
  }
  out_.put('"');
}

void writeBufferRef(Writer &w, const BufferRef &b) {
  w.beginObject();
  switch (b.loc) {
  case BufferRef::Loc::Local:
    if (b.rank)
      w.member("rank", uint64_t(*b.rank));
    w.member("type", bufferTypeName(b.type));
    break;
  case BufferRef::Loc::Remote:
    w.member("buffer_id", uint64_t(b.id));
    break;
  case BufferRef::Loc::Switch:
    w.member("switch_channel_id", uint64_t(b.id));
    break;
  }
  w.member("index", b.index);
  w.member("size", b.size);
  if (!b.indexExpr.empty())
    w.member("index_expr", std::string_view(b.indexExpr));
  if (!b.sizeExpr.empty())
    w.member("size_expr", std::string_view(b.sizeExpr));
  w.endObject();
}

void writeBufferRefs(Writer &w, std::string_view key, const std::vector<BufferRef> &refs) {
  w.key(key);
  w.beginArray();
  for (const BufferRef &b : refs)
    writeBufferRef(w, b);
  w.endArray();
}

void writeOp(Writer &w, const Op &op) {
  OpShape shape = opShape(op.type);
  w.beginObject();
  w.member("name", opName(op.type));
  if (shape == OpShape::GroupLoadReduce) {
    w.member("buffer_type", bufferTypeName(op.glreBufferType));
    w.member("buffer_offset", op.glreBufferOffset);
    w.member("size", op.glreSize);
    w.key("dst_chunk");
    writeBufferRef(w, op.glreDstChunk);
  }
  if (shape == OpShape::Pipeline) {
    w.key("iter_context");
    w.beginObject();
    w.member("unit_size", op.iterContext.unitSize);
    w.member("num_chunks", op.iterContext.numChunks);
    w.endObject();
    w.key("ops");
    w.beginArray();
    for (const Op &inner : op.ops)
      writeOp(w, inner);
    w.endArray();
  }
  if (shape == OpShape::Data) {
    writeBufferRefs(w, "src_buff", op.src);
    writeBufferRefs(w, "dst_buff", op.dst);
  }
  if (op.channelIds)
    w.memberList("channel_ids", *op.channelIds);
  if (op.channelType)
    w.member("channel_type", channelTypeName(*op.channelType));
  if (op.reduceOp)
    w.member("reduce_op", reduceOpName(*op.reduceOp));
  if (shape == OpShape::Sem)
    w.memberList("semaphore_ids", op.semaphoreIds);
  if (shape == OpShape::Barrier) {
    w.member("barrier_id", uint64_t(op.barrierId));
    w.member("num_threadblocks", uint64_t(op.numThreadblocks));
  }
  if (op.tbg) {
    w.key("tbg_info");
    w.beginObject();
    w.member("tb_id", uint64_t(op.tbg->tbId));
    w.member("tbg_size", uint64_t(op.tbg->tbgSize));
    w.endObject();
  }
  w.endObject();
}

void writeThreadblock(Writer &w, const Threadblock &tb) {
  w.beginObject();
  w.member("id", uint64_t(tb.id));
  w.key("ops");
  w.beginArray();
  for (const Op &op : tb.ops) {
    writeOp(w, op);
    w.flush();
  }
  w.endArray();
  w.key("channels");
  w.beginArray();
  for (const TbChannels &c : tb.channels) {
    w.beginObject();
    w.member("channel_type", channelTypeName(c.channelType));
    w.memberList("channel_ids", c.channelIds);
    w.endObject();
  }
  w.endArray();
  w.key("remote_buffer_refs");
  w.beginArray();
  for (const RemoteBufferRefs &r : tb.remoteBufferRefs) {
    w.beginObject();
    w.member("access_channel_type", channelTypeName(r.accessChannelType));
    w.memberList("remote_buffer_ids", r.remoteBufferIds);
    w.endObject();
  }
  w.endArray();
  w.endObject();
}

void writeGpu(Writer &w, const Gpu &gpu) {
  w.beginObject();
  w.member("id", uint64_t(gpu.id));
  w.member("input_chunks", gpu.inputChunks);
  w.member("output_chunks", gpu.outputChunks);
  w.member("scratch_chunks", gpu.scratchChunks);
  w.key("threadblocks");
  w.beginArray();
  for (const Threadblock &tb : gpu.threadblocks)
    writeThreadblock(w, tb);
  w.endArray();
  w.key("channels");
  w.beginArray();
  for (const ChannelDecl &c : gpu.channels) {
    w.beginObject();
    w.member("channel_type", channelTypeName(c.channelType));
    if (c.channelType == ChannelType::Switch) {
      w.member("buffer_type", bufferTypeName(c.bufferType));
      w.key("rank_groups");
      w.beginArray();
      for (const RankGroup &g : c.rankGroups) {
        w.beginObject();
        w.member("size", uint64_t(g.size));
        w.memberList("ranks", g.ranks);
        w.endObject();
      }
      w.endArray();
    } else if (c.channelType != ChannelType::None) {
      w.memberList("connected_to", c.connectedTo);
    }
    w.endObject();
  }
  w.endArray();
  w.key("remote_buffers");
  w.beginArray();
  for (const RemoteBuffer &r : gpu.remoteBuffers) {
    w.beginObject();
    w.member("rank", uint64_t(r.rank));
    w.member("type", bufferTypeName(r.type));
    w.key("access_channel_types");
    w.beginArray();
    for (ChannelType t : r.accessChannelTypes)
      w.value(channelTypeName(t));
    w.endArray();
    w.endObject();
  }
  w.endArray();
  w.key("semaphores");
  w.beginArray();
  for (const Semaphore &s : gpu.semaphores) {
    w.beginObject();
    w.key("init_value");
    w.valueSigned(s.initValue);
    w.endObject();
  }
  w.endArray();
  w.endObject();
}

} // namespace

namespace {

void writeHeader(Writer &w, const Plan &plan) {
  w.beginObject();
  w.key("name");
  if (plan.name)
    w.value(std::string_view(*plan.name));
  else
    w.null();
  w.member("collective", std::string_view(plan.collective));
  w.member("protocol", std::string_view(plan.protocol));
  w.member("inplace", plan.inplace);
  w.member("reuse_resources", plan.reuseResources);
  w.key("gpus");
  w.beginArray();
}

void writeFooter(Writer &w, const Plan &plan) {
  w.endArray();
  w.member("num_threads_per_block", uint64_t(plan.numThreadsPerBlock));
  w.member("use_double_scratch_buffer", plan.useDoubleScratchBuffer);
  w.member("buffer_alignment", plan.bufferAlignment);
  w.member("min_message_size", plan.minMessageSize);
  w.member("max_message_size", plan.maxMessageSize);
  if (plan.variableSizes) {
    w.key("variable_sizes");
    w.beginObject();
    w.member("counts", std::string_view(plan.variableSizes->counts));
    w.member("block_bound", plan.variableSizes->blockBound);
    w.endObject();
  }
  w.endObject();
}

} // namespace

struct PlanStreamWriter::Impl {
  Impl(std::ostream &os, int indent) : w(indent, &os) {}
  Writer w;
  Plan meta;
};

PlanStreamWriter::PlanStreamWriter(std::ostream &os, const Plan &meta, int indent)
    : impl_(std::make_unique<Impl>(os, indent)) {
  impl_->meta = meta;
  impl_->meta.gpus.clear();
  writeHeader(impl_->w, impl_->meta);
}

PlanStreamWriter::~PlanStreamWriter() = default;

void PlanStreamWriter::gpu(const Gpu &gpu) {
  writeGpu(impl_->w, gpu);
  impl_->w.flush();
}

void PlanStreamWriter::finish() {
  writeFooter(impl_->w, impl_->meta);
  impl_->w.newlineAtEnd();
  impl_->w.flush(true);
}

std::string writePlan(const Plan &plan, int indent) {
  Writer w(indent);
  writeHeader(w, plan);
  for (const Gpu &gpu : plan.gpus)
    writeGpu(w, gpu);
  writeFooter(w, plan);
  w.newlineAtEnd();
  return w.take();
}

void writePlan(std::ostream &os, const Plan &plan, int indent) {
  PlanStreamWriter writer(os, plan, indent);
  for (const Gpu &gpu : plan.gpus)
    writer.gpu(gpu);
  writer.finish();
}

nlohmann::ordered_json toJson(const Plan &plan) { return nlohmann::ordered_json::parse(writePlan(plan, -1)); }

} // namespace msccl::plan
