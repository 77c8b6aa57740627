// CallSites: the rank's call sites — where its loop issued collectives and point-to-point
// messages — each numbered the first time it is used, so that a record names its site by a
// small id and the site's file, line and function are written once (the `site` record,
// trace/records/site_record.h).
//
// A LibTorch loop's site is a SourceLocation the compiler fills in at the caller (a default
// argument of CollectiveScope, CollectiveOp and PeerOp: the C++17 form of
// std::source_location::current()), looked up by its file pointer and line without building a
// string. The Python package hands file, line and function as text, once per line of its
// caller (it caches the id). Both kinds meet in one numbering. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace dsdiag::probes {

struct SourceLocation {
  const char* file = nullptr;  // null: unknown
  int line = 0;
  const char* fn = "";

  // Where the caller is (as a default argument: where the caller's caller is).
  static constexpr SourceLocation Current(const char* file = __builtin_FILE(),
                                          int line = __builtin_LINE(),
                                          const char* fn = __builtin_FUNCTION()) noexcept {
    return {file, line, fn};
  }
};

class CallSites {
 public:
  struct Id {
    int64_t id = 0;      // 0: none (an unknown location, or out of memory)
    bool fresh = false;  // first use: its `site` record is owed
  };
  Id Of(SourceLocation where) noexcept;
  Id Of(std::string_view file, int64_t line, std::string_view fn) noexcept;

 private:
  Id OfTextLocked(std::string_view file, int64_t line, std::string_view fn);
  std::mutex mu_;
  std::map<std::pair<const char*, int>, int64_t> by_location_;  // guarded by mu_
  std::map<std::tuple<std::string, int64_t, std::string>, int64_t> by_text_;
};

}  // namespace dsdiag::probes
