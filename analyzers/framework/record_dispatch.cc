#include "analyzers/framework/record_dispatch.h"

#include <algorithm>
#include <string>

#include "trace/records/end_record.h"
#include "trace/records/phase_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;

bool IsLineOneHeader(const trace::Record& r) {
  return r.line() == 1 && r.type_id() == trace::rec_id::kHeader;
}

// What a delivered record tells about how its rank ends.
void ObserveRecord(const trace::Record& r, RankEnd* end) {
  ++end->records;
  end->max_step = std::max(end->max_step, r.step());
  end->last_ts = r.ts();
  end->last_line = r.line();
  const int type = r.type_id();
  if (type == trace::rec_id::kStepBegin) {
    end->last_step_begun = std::max(end->last_step_begun.value_or(r.step()), r.step());
  } else if (type == trace::rec_id::kStep) {
    end->last_step_done = std::max(end->last_step_done.value_or(r.step()), r.step());
  } else if (type == trace::rec_id::kPhase) {
    if (auto name = records::PhaseView(r).name())
      end->last_phase.assign(name->data(), name->size());
  } else if (type == trace::rec_id::kEnd) {
    end->end_seen = true;
    const records::EndView record(r);
    end->reason = std::string(record.reason().value_or(""));
    end->status = record.status();
    end->end_step = r.step();
    if (auto signal = record.signal()) {
      end->detail = std::string(*signal);
    } else if (auto error = record.error()) {
      end->detail = std::string(*error);
    }
  }
}

// What the reader went through, once its file has run out.
void TakeReaderEnd(const trace::TraceReader& reader, RankEnd* end) {
  end->lines_read = reader.lines_read();
  end->bytes_read = reader.bytes_read();
  end->issues = reader.issues();
  end->issue_count = reader.issue_count();
  end->truncated_tail = reader.saw_truncated_tail();
}

void AddReaderEnd(const RankEnd& reader_end, RankEnd* end) {
  end->lines_read = reader_end.lines_read;
  end->bytes_read = reader_end.bytes_read;
  end->issues = reader_end.issues;
  end->issue_count = reader_end.issue_count;
  end->truncated_tail = reader_end.truncated_tail;
}

}  // namespace dsdiag::analyzers
