// The `site` record (docs/trace-format.md, "`site`"): a call site — the line of the job's own
// code that issued a collective or a point-to-point message — written once, the first time a
// rank uses it; `coll` and `p2p` records name it by `id` (their `site` field), so a trace
// grows by a site, not by a call. Ids are the rank's own (another rank may number the same
// line otherwise): readers compare `file`, `line` and `fn`. Written by the probes' CallSites
// (probes/call_sites.h); read by collective-mismatch, hang and straggler.
//
//   {"type":"site","ts":7000,"step":0,"id":3,"file":"train.py","line":35,"fn":"train_step"}
//
// A Python job's site is the innermost frame outside torch and dsdiag; a LibTorch loop's is
// where it called the probes (its source path as its build gave it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct SiteKeys {
  static constexpr FieldKey id{"id"};      // the rank's number for it, from 1
  static constexpr FieldKey file{"file"};  // source file
  static constexpr FieldKey line{"line"};  // line in it
  static constexpr FieldKey fn{"fn"};      // function (Python: the code object's name)
};

struct SiteRecord {
  static constexpr std::string_view kType = rec::kSite;
  int64_t id = 0;
  std::string_view file;
  int64_t line = 0;
  std::string_view fn;
};
void AppendFields(const SiteRecord& r, JsonLine* line);

// "train.py:35": the file's last path component and the line, as findings name a site.
std::string ShortSite(std::string_view file, int64_t line);

class SiteView {
 public:
  explicit SiteView(const Record& r) : r_(r) {}
  std::optional<int64_t> id() const { return r_.Int(SiteKeys::id); }
  std::optional<std::string_view> file() const { return r_.Str(SiteKeys::file); }
  std::optional<int64_t> line() const { return r_.Int(SiteKeys::line); }
  std::optional<std::string_view> fn() const { return r_.Str(SiteKeys::fn); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
