#include "analyzers/kinds/common/watchdog_message.h"

#include <cctype>
#include <cstdio>

namespace dsdiag::analyzers {

std::optional<NamedCollective> ParseNamedCollective(std::string_view text) {
  for (size_t at = text.find("pg "); at != std::string_view::npos; at = text.find("pg ", at + 1)) {
    if (at > 0 && std::isalnum(static_cast<unsigned char>(text[at - 1]))) continue;
    int pg = 0;
    long long seq = 0;
    int used = 0;
    const std::string rest(text.substr(at, 64));
    if (std::sscanf(rest.c_str(), "pg %d seq %lld%n", &pg, &seq, &used) != 2 || used <= 0 || pg < 0)
      continue;
    NamedCollective named{pg, static_cast<int64_t>(seq), {}, {}};
    const std::string_view after = text.substr(at + static_cast<size_t>(used));
    const size_t close = after.find(')');
    if (after.size() > 2 && after.substr(0, 2) == " (" && close != std::string_view::npos) {
      const std::string_view inside = after.substr(2, close - 2);
      const size_t comma = inside.find(", ");
      if (comma != std::string_view::npos) {
        named.op = std::string(inside.substr(0, comma));
        named.tag = std::string(inside.substr(comma + 2));
      } else {
        named.tag = std::string(inside);
      }
    }
    return named;
  }
  return std::nullopt;
}

}  // namespace dsdiag::analyzers
