// What the step driver does with each record, whichever way it reads the ranks (one
// thread, reader threads, rank by rank): hand it to the analyzers that take its type, and
// note what it says about how its rank ends (RankEnd).
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "analyzers/framework/analyzer.h"
#include "analyzers/framework/run_context.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

// Whether `r` is the header on line 1 (not an event: the loader has read it already).
bool IsLineOneHeader(const trace::Record& r);

// What a delivered record tells about how its rank ends.
void ObserveRecord(const trace::Record& r, RankEnd* end);

// What the reader went through, once its file has run out.
void TakeReaderEnd(const trace::TraceReader& reader, RankEnd* end);
// The same, from a RankEnd the reading side filled with TakeReaderEnd, into the one the
// analyzers' side observed the rank's records into (ObserveRecord).
void AddReaderEnd(const RankEnd& reader_end, RankEnd* end);

// Hands each record to the analyzers that take its type (Analyzer::record_types), in the
// analyzers' order.
class Dispatch {
 public:
  explicit Dispatch(const std::vector<std::unique_ptr<Analyzer>>& analyzers) : all_(analyzers) {
    for (const auto& a : analyzers) {
      if (!a->wants_records()) continue;
      const std::vector<std::string_view> types = a->record_types();
      for (int id = 0; id <= trace::kOtherRecordType; ++id) {
        const bool wanted =
            types.empty() || std::any_of(types.begin(), types.end(), [id](std::string_view t) {
              return trace::RecordTypeId(t) == id;
            });
        if (wanted) by_type_[static_cast<size_t>(id)].push_back(a.get());
      }
    }
  }

  void Record(const RankInfo& rank, const trace::Record& record) const {
    for (Analyzer* a : by_type_[static_cast<size_t>(record.type_id())]) a->OnRecord(rank, record);
  }
  void RankEnded(const RankInfo& rank, const RankEnd& end) const {
    for (const auto& a : all_) a->OnRankEnd(rank, end);
  }
  void StepDone(int64_t step) const {
    for (const auto& a : all_) a->OnStepDone(step);
  }

 private:
  const std::vector<std::unique_ptr<Analyzer>>& all_;
  // By RecordTypeId; the last entry takes the types record_types.h does not list.
  std::array<std::vector<Analyzer*>, trace::kOtherRecordType + 1> by_type_;
};

}  // namespace dsdiag::analyzers
