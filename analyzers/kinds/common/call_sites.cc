#include "analyzers/kinds/common/call_sites.h"

#include "trace/records/site_record.h"

namespace dsdiag::analyzers {

void RunSites::Add(int rank, const trace::Record& r) {
  const trace::records::SiteView v(r);
  const auto id = v.id();
  if (!id || *id == 0) return;
  Add(rank, *id, std::string(v.file().value_or("")), v.line().value_or(0),
      std::string(v.fn().value_or("")));
}

void RunSites::Add(int rank, int64_t id, const std::string& file, int64_t line,
                   const std::string& fn) {
  if (id == 0) return;
  auto [it, fresh] = numbers_.try_emplace({file, line, fn}, static_cast<int>(sites_.size()));
  if (fresh) sites_.push_back({file, line, fn});
  by_rank_[rank][id] = it->second;
}

int RunSites::Of(int rank, int64_t id) const {
  if (id == 0) return 0;
  const auto r = by_rank_.find(rank);
  if (r == by_rank_.end()) return 0;
  const auto s = r->second.find(id);
  return s == r->second.end() ? 0 : s->second;
}

std::string RunSites::Short(int site) const {
  if (site <= 0 || static_cast<size_t>(site) >= sites_.size()) return "an unknown line";
  return trace::records::ShortSite(file(site), line(site));
}

}  // namespace dsdiag::analyzers
