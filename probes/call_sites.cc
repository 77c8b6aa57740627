#include "probes/call_sites.h"

#include <exception>

namespace dsdiag::probes {

CallSites::Id CallSites::OfTextLocked(std::string_view file, int64_t line, std::string_view fn) {
  auto [it, fresh] = by_text_.try_emplace({std::string(file), line, std::string(fn)},
                                          static_cast<int64_t>(by_text_.size()) + 1);
  return {it->second, fresh};
}

CallSites::Id CallSites::Of(SourceLocation where) noexcept {
  if (where.file == nullptr) return {};
  std::lock_guard<std::mutex> lock(mu_);
  try {
    if (auto it = by_location_.find({where.file, where.line}); it != by_location_.end())
      return {it->second, false};
    // Another pointer may spell a file already numbered (the same header in two objects).
    const Id id = OfTextLocked(where.file, where.line, where.fn ? where.fn : "");
    by_location_.emplace(std::make_pair(where.file, where.line), id.id);
    return id;
  } catch (const std::exception&) {  // out of memory: the op goes without its site
    return {};
  }
}

CallSites::Id CallSites::Of(std::string_view file, int64_t line, std::string_view fn) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    return OfTextLocked(file, line, fn);
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace dsdiag::probes
