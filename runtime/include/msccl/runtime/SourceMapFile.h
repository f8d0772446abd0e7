//===- SourceMapFile.h - Reading mscclc's --source-map files ----------------------------===//
//
// mscclc --source-map FILE writes, per plan op path (`gpus[G].threadblocks[T].ops[I]`, plus
// `.ops[J]` inside a pipeline), the .msccl call that made the op (docs/source-map.md). The tools
// that report problems in a plan (msccl-run's deadlock, race and misuse reports, msccl-verify's
// findings) take `--source-map FILE` and name the .msccl line next to each op path.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace msccl::runtime {

class SourceMapFile {
public:
  /// Reads FILE. Throws std::runtime_error naming the file (and the JSON path of a malformed
  /// entry) when it cannot be read or is not a version-1 source map.
  static SourceMapFile read(const std::string &path);

  /// "file:line:col" of the op at `opPath`, plus " (in for r = 0, ...)" with the loop values
  /// that led there; nullopt for a path the map does not name.
  std::optional<std::string> describe(std::string_view opPath) const;

  /// `text` with " [file:line:col]" inserted after every op path it contains that the map names
  /// (paths of fields below an op, e.g. `...ops[3].src_buff[0]`, use the op's entry).
  std::string annotate(std::string_view text) const;

  size_t size() const { return ops_.size(); }

private:
  std::unordered_map<std::string, std::string> ops_; ///< op path -> describe() text
};

} // namespace msccl::runtime
