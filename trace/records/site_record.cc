#include "trace/records/site_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const SiteRecord& r, JsonLine* line) {
  line->Field(SiteKeys::id.name(), r.id)
      .Field(SiteKeys::file.name(), r.file)
      .Field(SiteKeys::line.name(), r.line)
      .Field(SiteKeys::fn.name(), r.fn);
}

std::string ShortSite(std::string_view file, int64_t line) {
  const size_t slash = file.find_last_of('/');
  if (slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(line);
}

}  // namespace dsdiag::trace::records
