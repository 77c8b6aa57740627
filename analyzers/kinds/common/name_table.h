// NameTable: names an analyzer keeps per rank (phase names, a fingerprint's `why`), kept
// once for the whole analysis. At 131,072 ranks a std::string in every rank's entries cost
// kilobytes a rank (issue 35); the entries hold an InternedName instead: a view of the one
// copy here, which lives as long as the table (the analyzer that interned it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>

namespace dsdiag::analyzers {

// A name interned in a NameTable; only a NameTable makes one, so an entry's name never
// views a record's buffer.
class InternedName {
 public:
  std::string_view view() const { return view_; }
  friend bool operator==(InternedName a, std::string_view b) { return a.view_ == b; }
  friend bool operator==(InternedName a, InternedName b) { return a.view_ == b.view_; }

 private:
  friend class NameTable;
  explicit InternedName(std::string_view view) : view_(view) {}
  std::string_view view_;
};

class NameTable {
 public:
  InternedName Intern(std::string_view name) {
    auto it = names_.find(std::string(name));  // callers intern a name once, on first sight
    if (it == names_.end()) it = names_.emplace(name).first;  // nodes: the string stays put
    return InternedName(*it);
  }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_set<std::string> names_;
};

}  // namespace dsdiag::analyzers
