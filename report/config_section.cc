// The run's settings as every rank's header recorded them (config_diff.h): what differs
// across ranks first, each value with the ranks that hold it, then what all agree on, folded.
#include "report/html.h"
#include "report/sections.h"

namespace dsdiag::report {
namespace {

// Past this many distinct values of one key (e.g. a per-rank id), the rest are counted.
constexpr size_t kMaxValuesShown = 12;

void AppendKeyName(const ConfigKey& k, std::string* out) {
  out->append("<code>");
  AppendEscaped(out, k.section);
  out->append(".");
  AppendEscaped(out, k.key);
  out->append("</code>");
}

void AppendDiffering(const std::vector<ConfigKey>& keys, std::string* out) {
  out->append(
      "<table class=\"config-diff\"><thead><tr><th>setting</th><th>value</th><th>ranks</th>"
      "<th>#</th></tr></thead><tbody>");
  for (const ConfigKey& k : keys) {
    const size_t shown = std::min(k.values.size(), kMaxValuesShown);
    for (size_t i = 0; i < shown; ++i) {
      const ConfigValue& v = k.values[i];
      out->append("<tr data-key=\"" + Escape(k.section + "." + k.key) + "\">");
      if (i == 0) {
        const size_t span = shown + (k.values.size() > shown ? 1 : 0);
        out->append("<th rowspan=\"" + std::to_string(span) + "\">");
        AppendKeyName(k, out);
        out->append("</th>");
      }
      out->append(std::string("<td") + (v.absent ? " class=\"absent\"" : "") + "><code>");
      AppendEscaped(out, v.value);
      out->append("</code></td><td>" + Escape(analyzers::FormatRankRanges(v.ranks)) + "</td><td>" +
                  std::to_string(v.ranks.size()) + "</td></tr>");
    }
    if (k.values.size() > shown) {
      size_t ranks = 0;
      for (size_t i = shown; i < k.values.size(); ++i) ranks += k.values[i].ranks.size();
      out->append("<tr><td colspan=\"2\">&hellip; " + std::to_string(k.values.size() - shown) +
                  " more values</td><td>" + std::to_string(ranks) + "</td></tr>");
    }
  }
  out->append("</tbody></table>");
}

void AppendCommon(const std::vector<ConfigKey>& keys, std::string* out) {
  out->append("<details class=\"common\"><summary>Settings every rank shares (" +
              std::to_string(keys.size()) + ")</summary><table class=\"config-common\"><tbody>");
  for (const ConfigKey& k : keys) {
    out->append("<tr><th>");
    AppendKeyName(k, out);
    out->append("</th><td><code>");
    AppendEscaped(out, k.values.front().value);
    out->append("</code></td></tr>");
  }
  out->append("</tbody></table></details>");
}

}  // namespace

void AppendConfigSection(const ConfigDiff& diff, std::string* out) {
  out->append(
      "<section id=\"config\"><h2>Configuration across ranks</h2><p class=\"note\">The "
      "<code>versions</code>, <code>env</code> and <code>config</code> of every rank's trace "
      "header.</p>");
  if (diff.differing.empty()) {
    out->append("<p class=\"same\">Every rank recorded the same settings.</p>");
  } else {
    out->append("<h3>Settings that differ (" + std::to_string(diff.differing.size()) + ")</h3>");
    AppendDiffering(diff.differing, out);
  }
  AppendCommon(diff.common, out);
  out->append("</section>");
}

}  // namespace dsdiag::report
