#include "trace/records/coll_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const CollRecord& r, JsonLine* line) {
  using K = CollKeys;
  line->Field(K::pg.name(), r.pg)
      .Field(K::seq.name(), r.seq)
      .Field(K::op.name(), r.op)
      .Field(K::dtype.name(), r.dtype)
      .Field(K::count.name(), r.count)
      .Field(K::bytes.name(), r.bytes)
      .Field(K::dur.name(), r.dur)
      .Field(K::tag.name(), r.tag);
  if (r.failed) line->Field(K::failed.name(), true);
  if (r.site != 0) line->Field(K::site.name(), r.site);
  if (r.counts != nullptr && !r.counts->empty()) {
    auto ints = [line](std::string_view key, const std::vector<int64_t>& values) {
      line->BeginArray(key);
      for (int64_t v : values) line->Add(v);
      line->EndArray();
    };
    ints(K::send.name(), r.counts->send);
    ints(K::recv.name(), r.counts->recv);
    if (!r.counts->peers.empty()) ints(K::peers.name(), r.counts->peers);
  }
}

bool CollView::counts(PeerCounts* out) const {
  *out = PeerCounts{};
  const bool found = r_.IntArray(CollKeys::send, &out->send);
  if (!found || !r_.IntArray(CollKeys::recv, &out->recv)) {
    *out = PeerCounts{};
    return false;
  }
  if (r_.Has(CollKeys::peers) && !r_.IntArray(CollKeys::peers, &out->peers)) {
    *out = PeerCounts{};
    return false;
  }
  return true;
}

}  // namespace dsdiag::trace::records
