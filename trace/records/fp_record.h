// The `fp` record (docs/trace-format.md, "`fp`"): fingerprints of gradients, parameters or
// buffers at one point of a step (`why`), one xxHash3 per bucket (`gran` "bucket", light
// mode) or per parameter (`gran` "param"). Written by the probes (records::WriteFingerprints)
// and synth; in v2 a pre-step record that repeats the latest of its kind is left out or
// written short (`same`), and the reader puts it back (trace/compact_records.h). Read by
// grad-desync, init-divergence, replica-divergence and checkpoint-mismatch
// (analyzers/kinds/common/fingerprints.h).
//
//   {"type":"fp","ts":..,"step":3,"what":"grad","why":"after-sync","gran":"bucket",
//    "h":["9f3c0a...","..."]}
// `fn` (optional, written between `gran` and `h` so that a `same` record's expansion keeps
// it): how the hashes were taken; absent: xxHash3 of the bytes; "dsum": the device sums
// of the Python package's device path (docs/trace-format.md). Hashes of different `fn`
// are never compared.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct FpKeys {
  static constexpr FieldKey what{"what"};  // "grad", "param", "buffer"
  static constexpr FieldKey why{"why"};    // "after-sync", "pre-step", "init", "resume", ...
  static constexpr FieldKey gran{"gran"};  // "bucket" or "param"
  static constexpr FieldKey fn{"fn"};      // absent: xxHash3 of the bytes; or kFnDeviceSum
  static constexpr FieldKey h{"h"};        // the hashes, 16 hex digits each
  static constexpr FieldKey same{"same"};  // v2, a short pre-step record: the `why` it repeats
};

// The values of `what`: what was hashed.
namespace fp_what {
inline constexpr std::string_view kGrad = "grad";
inline constexpr std::string_view kParam = "param";
inline constexpr std::string_view kBuffer = "buffer";
}  // namespace fp_what

// The values of `why`: the point of the run the hashes were taken at, in the order a step
// meets them (replica-divergence orders a step's records by it). A newer writer may add one.
namespace fp_why {
inline constexpr std::string_view kInit = "init";             // after the model is built
inline constexpr std::string_view kResume = "resume";         // after a checkpoint is loaded
inline constexpr std::string_view kForward = "forward";       // buffers, as forward begins
inline constexpr std::string_view kAfterSync = "after-sync";  // gradients, the sync done
inline constexpr std::string_view kPreStep = "pre-step";      // what the optimizer is given
inline constexpr std::string_view kPeriodic = "periodic";     // params after every N steps
inline constexpr std::string_view kFinal = "final";           // params at the end of the run
}  // namespace fp_why

inline constexpr std::string_view kGranParam = "param";
inline constexpr std::string_view kGranBucket = "bucket";
// Sums of the elements' bit patterns taken on the tensors' device (python/dsdiag/torch/
// _device_fingerprint.py): never equal to an xxHash3 of the same bytes.
inline constexpr std::string_view kFnDeviceSum = "dsum";

struct FpRecord {
  static constexpr std::string_view kType = rec::kFingerprint;
  std::string_view what;
  std::string_view why;
  bool per_param = false;  // gran "param", else "bucket"
  std::string_view fn;     // empty: xxHash3 (not written)
  const std::vector<uint64_t>* hashes = nullptr;
};
void AppendFields(const FpRecord& r, JsonLine* line);

// A v2 pre-step record written short: the same hashes as the latest `what` record whose
// `why` is `same`.
struct FpSameRecord {
  static constexpr std::string_view kType = rec::kFingerprint;
  std::string_view what;
  std::string_view why;
  std::string_view same;
};
void AppendFields(const FpSameRecord& r, JsonLine* line);

class FpView {
 public:
  explicit FpView(const Record& r) : r_(r) {}
  std::optional<std::string_view> what() const { return r_.Str(FpKeys::what); }
  std::optional<std::string_view> why() const { return r_.Str(FpKeys::why); }
  std::optional<std::string_view> gran() const { return r_.Str(FpKeys::gran); }
  std::optional<std::string_view> fn() const { return r_.Str(FpKeys::fn); }
  bool hashes(std::vector<uint64_t>* out) const { return r_.HexArray(FpKeys::h, out); }
  std::optional<std::string_view> same() const { return r_.Str(FpKeys::same); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
