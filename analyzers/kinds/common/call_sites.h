// RunSites: the call sites of every rank's `site` records (trace/records/site_record.h), one
// number per distinct (file, line, function) across the run — a rank's own ids differ from
// another's for the same line, so analyzers compare these numbers, never the records' ids.
// 0 is "unknown": a record without `site`, a trace from before sites, an id no record named.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "trace/record.h"

namespace dsdiag::analyzers {

class RunSites {
 public:
  // A `site` record of `rank`.
  void Add(int rank, const trace::Record& r);
  // A site given as text (a flight dump's `sites`).
  void Add(int rank, int64_t id, const std::string& file, int64_t line, const std::string& fn);
  // The run's number of `rank`'s site `id`; 0 when unknown.
  int Of(int rank, int64_t id) const;

  // "train.py:35": the file's last component and the line.
  std::string Short(int site) const;
  const std::string& file(int site) const { return sites_[static_cast<size_t>(site)].file; }
  int64_t line(int site) const { return sites_[static_cast<size_t>(site)].line; }
  const std::string& fn(int site) const { return sites_[static_cast<size_t>(site)].fn; }

 private:
  struct Site {
    std::string file;
    int64_t line = 0;
    std::string fn;
  };
  std::vector<Site> sites_{Site{}};  // by run number; 0: unknown
  std::map<std::tuple<std::string, int64_t, std::string>, int> numbers_;
  std::unordered_map<int, std::unordered_map<int64_t, int>> by_rank_;  // rank -> id -> number
};

}  // namespace dsdiag::analyzers
