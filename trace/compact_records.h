// CompactRecordExpander: turns trace format v2's compact records back into the v1 records
// they stand for, so that everything downstream of TraceReader reads one format.
//
//   `colls`                        -> one `coll` record per op (trace/collective_template.h)
//   `step` with "pre_step_fp":"grad,param"
//                                  -> the pre-step fingerprints the writer left out as
//                                     repeats (probes/records/fingerprint_repeats.h): "gran"
//                                     and "h" of the latest grad / param fp record, ts the
//                                     step's end; then the step itself
//   `fp` with "same":"<why>"       -> the same, where the step ended without its record
//   `step` with "coll":{"wait":W}  -> "coll":{"n","bytes","dur","wait"}: the step's ops
//                                     were all in `colls` records, which sum to the rest
//   `step` with "phases":[…]       -> "phases":{"data":…,…} (v3; `cpu`, `runq` alike): ns
//                                     per phase in trace::phase::kStepOrder
//   `step` with "phases_us":[…]    -> the same from whole µs (v4; `cpu_us`, `runq_us`)
//   `step` without "epoch", "lr",  -> the last step record's value of each (v3); one written
//   "samples" or "load"               as null is cut (v2 left an unknown value out)
//
// The reader shows it every record it parses, in file order; the expander answers whether
// to deliver the record as it is or the lines it wrote in its place (JSON text, parsed by
// the reader like any line). v1 traces pass through untouched.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/collective_template.h"
#include "trace/record.h"

namespace dsdiag::trace {

class CompactRecordExpander {
 public:
  // From the header: expansion is on for v2 and later.
  void SetSchemaMajor(int major) {
    on_ = major >= 2;
    repeats_ = major >= 3;
  }
  bool on() const { return on_; }

  enum class Verdict {
    kDeliver,  // the record as it is
    kReplace,  // the lines in *lines instead (possibly none, after an issue)
  };
  // `r` in file order. kReplace fills *lines (each a JSON object, no '\n'); an ill-formed
  // compact record sets *issue (what was expected) and delivers nothing in its place.
  Verdict Observe(const Record& r, std::vector<std::string>* lines, std::string* issue);

 private:
  void NoteCollective(const Record& r);
  Verdict ExpandCollectives(const Record& r, std::vector<std::string>* lines, std::string* issue);
  Verdict ExpandPreStep(const Record& r, std::vector<std::string>* lines, std::string* issue);
  struct StepTotals {
    int64_t step = -1;  // the step the `colls` records summed are of
    int64_t n = 0, bytes = 0, dur = 0;
  };
  Verdict ExpandStep(const Record& r, std::vector<std::string>* lines, std::string* issue);
  // The pre-step records a step's "pre_step_fp" stands for, into *lines; cuts the member.
  void ExpandPreStepFlag(const Record& r, std::vector<std::string>* lines, std::string* step_line,
                         std::string* issue);
  // v3: the step members the writer left out as the previous step's, put back into *line
  // (records::StepRepeats); a null one is cut (v2 left an unknown value out).
  void PutBackRepeats(std::string* line);
  // v3's and v4's per-phase arrays in the step line -> v2's objects; an ill-formed one sets
  // *issue.
  void ExpandPhaseArrays(const Record& r, std::string* step_line, std::string* issue);
  // "array":[…] in *line -> "object":{"data":…,…}, each time times ns_per_unit; false when
  // it is spelt otherwise.
  static bool ObjectFromArray(const FieldKey& array, const FieldKey& object, int64_t ns_per_unit,
                              const std::vector<int64_t>& times, std::string* line);
  // Puts the sums into the step line's "coll":{"wait":W}; false when it is spelt otherwise.
  static bool InsertStepTotals(const StepTotals& totals, std::string* line);

  bool on_ = false;
  bool repeats_ = false;                       // v3: step records leave out what did not change
  static constexpr size_t kRepeatedCount = 4;  // epoch, lr, samples, load
  std::string repeated_[kRepeatedCount];       // their last values' text, "": none
  CollectiveTemplate template_;
  StepTotals totals_;                               // of the current step's `colls` records
  std::vector<Record::NumberMember> coll_members_;  // a step record's "coll", reused
  std::vector<int64_t> colls_at_, colls_dur_;       // a colls record's times, reused
  std::vector<int64_t> phase_ns_;                   // a step record's phase array, reused
  // Appends to *line `,"gran":…,"h":…` of the latest `what` fp record; false if none.
  bool AppendRepeated(std::string_view what, std::string* line) const;
  // `,"gran":…,"h":[…]` of the latest grad and param `fp` records, by "what" (pre-step ones
  // aside).
  std::map<std::string, std::string, std::less<>> latest_fp_;
};

}  // namespace dsdiag::trace
