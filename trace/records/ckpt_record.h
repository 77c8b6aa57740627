// The `ckpt` record (docs/trace-format.md, "Other records"): one checkpoint save or load, a
// span record (`ts` = its start, `dur`) with the path, size, digest and the checkpoint's own
// step and epoch; a load also says where tensors were mapped and which keys did not match.
// Written by the trainer and the Python package's checkpoint probes; read by checkpoint-race
// (who wrote a path, when) and checkpoint-mismatch.
//
//   {"type":"ckpt","ts":..,"step":20,"op":"save","path":"/ckpt/step20.pt","bytes":81234,
//    "h":"9f3c...","ckpt_step":20,"epoch":1,"dur":4100000}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/record.h"
#include "trace/records/span.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct CkptKeys {
  static constexpr FieldKey op{"op"};  // "save", "load"
  static constexpr FieldKey path{"path"};
  static constexpr FieldKey bytes{"bytes"};
  static constexpr FieldKey h{"h"};  // digest of what was saved / loaded
  static constexpr FieldKey ckpt_step{"ckpt_step"};
  static constexpr FieldKey epoch{"epoch"};
  static constexpr FieldKey dur = SpanKeys::dur;
  // Loads only:
  static constexpr FieldKey map_location{"map_location"};
  static constexpr FieldKey prefix_stripped{"prefix_stripped"};
  static constexpr FieldKey missing{"missing"};
  static constexpr FieldKey unexpected{"unexpected"};
};

inline constexpr std::string_view kCkptSave = "save";
inline constexpr std::string_view kCkptLoad = "load";

struct CkptRecord {
  static constexpr std::string_view kType = rec::kCheckpoint;
  std::string op;  // kCkptSave, kCkptLoad
  std::string path;
  int64_t bytes = 0;
  uint64_t hash = 0;
  int64_t ckpt_step = 0;
  int64_t epoch = 0;
  int64_t dur = 0;
  std::string map_location;  // load only, as the rest
  bool prefix_stripped = false;
  std::vector<std::string> missing, unexpected;
};
void AppendFields(const CkptRecord& r, JsonLine* line);

class CkptView {
 public:
  explicit CkptView(const Record& r) : r_(r) {}
  std::optional<std::string_view> op() const { return r_.Str(CkptKeys::op); }
  std::optional<std::string_view> path() const { return r_.Str(CkptKeys::path); }
  std::optional<int64_t> bytes() const { return r_.Int(CkptKeys::bytes); }
  std::optional<uint64_t> hash() const { return r_.Hex(CkptKeys::h); }
  std::optional<int64_t> ckpt_step() const { return r_.Int(CkptKeys::ckpt_step); }
  std::optional<int64_t> epoch() const { return r_.Int(CkptKeys::epoch); }
  std::optional<int64_t> dur() const { return r_.Int(CkptKeys::dur); }
  std::optional<std::string_view> map_location() const { return r_.Str(CkptKeys::map_location); }
  std::optional<bool> prefix_stripped() const { return r_.Bool(CkptKeys::prefix_stripped); }
  bool missing(std::vector<std::string>* out) const { return r_.StrArray(CkptKeys::missing, out); }
  bool unexpected(std::vector<std::string>* out) const {
    return r_.StrArray(CkptKeys::unexpected, out);
  }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
