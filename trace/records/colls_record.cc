#include "trace/records/colls_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const CollsRecord& r, JsonLine* line) {
  line->Field(CollsKeys::pg.name(), r.pg).Field(CollsKeys::seq.name(), r.seq);
  line->BeginArray(CollsKeys::gap_us.name());
  for (size_t i = 1; i < r.at_us.size() && i <= r.dur_us.size(); ++i)
    line->Add(r.at_us[i] - r.at_us[i - 1] - r.dur_us[i - 1]);
  line->EndArray().BeginArray(CollsKeys::dur_us.name());
  for (int64_t dur : r.dur_us) line->Add(dur);
  line->EndArray();
}

}  // namespace dsdiag::trace::records

namespace dsdiag::trace::records {

bool CollsView::times_us(std::vector<int64_t>* at, std::vector<int64_t>* dur) const {
  if (!r_.IntArray(CollsKeys::dur_us, dur) || dur->empty()) return false;
  if (r_.IntArray(CollsKeys::at_us, at)) return at->size() == dur->size();
  // v3: the first op at ts, each next one its gap after the one before it completed.
  if (!r_.IntArray(CollsKeys::gap_us, at) || at->size() + 1 != dur->size()) return false;
  at->insert(at->begin(), 0);
  for (size_t i = 1; i < at->size(); ++i) (*at)[i] += (*at)[i - 1] + (*dur)[i - 1];
  return true;
}

}  // namespace dsdiag::trace::records
