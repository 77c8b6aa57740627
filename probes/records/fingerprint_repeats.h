// PreStepRepeats: leaves out the pre-step fingerprint records that repeat an earlier one
// (trace format v2).
//
// Just before the optimizer uses them, the gradients usually hash as they did after the
// sync, and the parameters as they did after the last optimizer step ("periodic"): nothing
// touched them in between. Then no pre-step record is written; the step record lists the
// kinds left out, each repeating the latest fingerprint record of its kind,
//
//   "pre_step_fp":"grad,param"
//
// or, when the step ends without a step record (an error, a new step begun first), a short
// {"type":"fp",...,"what":"grad","why":"pre-step","same":"after-sync"}. The reader puts the
// record back (trace/compact_records.h). One per session; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

class PreStepRepeats {
 public:
  // A fingerprint record about to be written. True when it is a pre-step record that
  // repeats the latest of its kind: leave it out, it is owed.
  bool LeaveOut(std::string_view what, std::string_view why, int64_t step, bool per_param,
                const std::vector<uint64_t>& hashes);
  // The step record's "pre_step_fp" list of what is owed ("grad,param"; empty: nothing);
  // pays the debt.
  std::string TakeOwed();
  // Writes what is owed as `"same"` records: all of it, or only what `what` is owed (before
  // a record that will be the latest of its kind: the step record's flag would otherwise
  // be read back as repeating that newer record — a step of several optimizers writes its
  // parameters' pre-step hashes at its end, just before the `periodic` ones).
  void WriteOwed(probes::Session* session, std::string_view what = {}) noexcept;

 private:
  struct Latest {
    std::string why;
    int64_t step = -1;
    bool per_param = false;
    std::vector<uint64_t> hashes;
  };
  struct Owed {
    std::string same;  // the `why` it repeats
    int64_t ts = 0;    // when it would have been written
  };
  std::mutex mu_;
  std::map<std::string, Latest, std::less<>> latest_;  // by `what`: grad, param
  std::map<std::string, Owed, std::less<>> owed_;      // by `what`
};

}  // namespace dsdiag::probes::records
