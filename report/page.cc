// The frame of the report page: head and inline style sheet, the run summary, the
// navigation, and at the end the findings as JSON. Self-contained: no external script,
// style sheet, font or image, so that the file can be mailed, attached to a ticket or
// opened on an air-gapped cluster login node.
#include "analyzers/output/findings_output.h"
#include "report/html.h"
#include "report/sections.h"

namespace dsdiag::report {
namespace {

constexpr char kStyle[] = R"css(
:root{--fg:#212529;--muted:#6c757d;--line:#dee2e6;--bg:#fff;--panel:#f8f9fa;
--error:#c92a2a;--warning:#d9480f;--info:#1864ab}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:0 0 6px}
h3{font-size:15px;margin:12px 0 6px}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:break-word}
.wide{max-width:100%;overflow-x:auto}
header.run dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
header.run dt{color:var(--muted)}header.run dd{margin:0}
nav{position:sticky;top:0;background:var(--bg);border-bottom:1px solid var(--line);
padding:6px 0;margin-bottom:8px;z-index:1}
nav a{margin-right:14px;color:var(--info);text-decoration:none}
nav a:hover{text-decoration:underline}
section{margin:18px 0 26px;padding-top:4px}
.note{color:var(--muted);margin:2px 0 8px;max-width:70em}
.none,.same{color:var(--muted);font-style:italic}
.error{color:var(--error)}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
thead th{color:var(--muted);font-weight:600}
.counts .count{display:inline-block;margin-right:18px;font-size:15px}
.counts .count b{font-size:20px}.counts .zero{opacity:.45}
.sev-error{--sev:var(--error)}.sev-warning{--sev:var(--warning)}.sev-info{--sev:var(--info)}
.count.sev-error b,.count.sev-warning b,.count.sev-info b{color:var(--sev)}
.badge{display:inline-block;min-width:58px;text-align:center;border-radius:3px;padding:0 6px;
color:#fff;background:var(--sev);font-size:12px;font-weight:600;text-decoration:none}
table.index td:last-child{max-width:560px}
article.finding{border-left:4px solid var(--sev);background:var(--panel);padding:6px 14px 8px;
margin:10px 0;border-radius:0 4px 4px 0}
article.finding h3{margin:4px 0}
dl.where{display:flex;flex-wrap:wrap;gap:0 6px;margin:2px 0;color:var(--muted)}
dl.where dt::after{content:":"}dl.where dd{margin:0 14px 0 0;color:var(--fg)}
p.summary{font-weight:600;margin:4px 0}
table.evidence th{font-weight:normal;color:var(--muted);padding-right:14px}
table.evidence table{margin:0}table.evidence table th{font-weight:600;font-size:12px}
table.evidence table td,table.evidence table th{padding:1px 10px 1px 0}
table.evidence{width:100%;table-layout:fixed}table.evidence>tbody>tr>th{width:170px}
table.evidence table{width:auto;table-layout:auto}table.evidence table td{white-space:nowrap}
table.evidence table td.obj{white-space:normal;min-width:24em}
p.hint{margin:4px 0}
svg.chart{display:block;max-width:100%;height:auto;font-size:11px;fill:var(--fg)}
svg .axis line{stroke:#868e96}svg .axis line.grid{stroke:#eceff1}
svg .label{fill:var(--muted);font-size:12px}
svg .plot-bg{fill:#f1f3f5}
svg .series polyline{stroke-width:1.6;stroke-linejoin:round}
svg .series circle{stroke:none}svg .series circle:hover{r:5}
svg .whisker{stroke-width:1.5}
svg .band{fill:#adb5bd;opacity:.35;stroke:none}
svg .marker line{stroke:#495057;stroke-dasharray:5 4}svg .marker text{fill:#495057}
svg.heatmap g.hm-row rect:hover{stroke:#000;stroke-width:1;vector-effect:non-scaling-stroke}
svg .bar text.total{fill:var(--muted)}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0 0 70px;color:var(--muted)}
.legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;
border-radius:2px}
.legend i.band-swatch{background:#adb5bd;opacity:.5}
tr.recommended td{font-weight:600;background:#e7f5ff}
.recommendation{margin:4px 0}
table.config-diff td.absent code{color:var(--muted);font-style:italic}
details.common summary{cursor:pointer;color:var(--info);margin:8px 0}
footer{color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:8px}
)css";

void AppendItem(const std::string& term, const std::string& html, std::string* out) {
  out->append("<dt>" + term + "</dt><dd>" + html + "</dd>");
}

std::string RanksLine(const std::vector<int>& ranks) {
  return std::to_string(ranks.size()) + " (" + Escape(analyzers::FormatRankRanges(ranks)) + ")";
}

void AppendRunSummary(const analyzers::CompareResult& c, const RunCollector& data,
                      std::string* out) {
  const analyzers::RunSummary& run = c.run;
  const analyzers::ReaderStats& st = c.stats;
  out->append("<dl>");
  AppendItem("run dir", "<code>" + Escape(run.dir) + "</code>", out);
  AppendItem("run id", "<code>" + Escape(run.run_id) + "</code>", out);
  AppendItem("world size", std::to_string(run.world_size), out);
  AppendItem("ranks analysed", RanksLine(run.ranks_found), out);
  if (!run.ranks_missing.empty()) AppendItem("ranks missing", RanksLine(run.ranks_missing), out);
  if (!run.ranks_excluded.empty()) AppendItem("ranks excluded", RanksLine(run.ranks_excluded), out);
  AppendItem("steps", Thousands(run.steps), out);
  std::string read = Thousands(st.records) + " records, " + Thousands(st.lines) + " lines, " +
                     Num(static_cast<double>(st.bytes) / 1e6, 4) + " MB in " + Thousands(st.files) +
                     " files";
  if (st.flight_dumps) read += ", " + Thousands(st.flight_dumps) + " flight-recorder dumps";
  read += "; " + Thousands(st.malformed_lines) + " malformed lines, " +
          Thousands(st.truncated_tails) + " truncated tails";
  AppendItem("read", read, out);
  if (data.rows().per_row() > 1 || data.axis().width() > 1) {
    const int per_row = data.rows().per_row();
    const int64_t width = data.axis().width();
    AppendItem("charts",
               "binned to " + std::to_string(data.rows().rows()) + " rows of " +
                   std::to_string(per_row) + (per_row == 1 ? " rank" : " ranks") + " and " +
                   std::to_string(data.axis().bins()) + " columns of " + std::to_string(width) +
                   (width == 1 ? " step" : " steps"),
               out);
  }
  out->append("</dl>");
}

void AppendNav(bool has_scale, bool has_sweep, std::string* out) {
  out->append(
      "<nav><a href=\"#findings\">Findings</a><a href=\"#heatmap\">Collective wait</a>"
      "<a href=\"#heatmap-delay\">Arrival delay</a><a href=\"#phases\">Step phases</a>"
      "<a href=\"#loss\">Loss</a>");
  if (has_scale) out->append("<a href=\"#loss-scale\">Loss scale</a>");
  if (has_sweep) out->append("<a href=\"#loader-sweep\">Loader sweep</a>");
  out->append("<a href=\"#config\">Configuration</a></nav>");
}

}  // namespace

void AppendPageStart(const std::string& title, const analyzers::CompareResult& compare,
                     const RunCollector& data, bool has_sweep, std::string* out) {
  out->append(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta name=\"generator\" content=\"dsdiag " DSDIAG_VERSION "\"><title>");
  AppendEscaped(out, title);
  out->append("</title><style>");
  out->append(kStyle);
  out->append("</style></head>\n<body><main><header class=\"run\" id=\"run\"><h1>");
  AppendEscaped(out, title);
  out->append("</h1>");
  AppendRunSummary(compare, data, out);
  out->append("</header>");
  AppendNav(!data.scale().all.empty(), has_sweep, out);
  out->push_back('\n');
}

void AppendPageEnd(const analyzers::CompareResult& compare, std::string* out) {
  out->append("<footer>Made by <code>dsdiag report</code> " DSDIAG_VERSION
              ". The findings are those of <code>dsdiag compare</code>; the same as JSON "
              "(dsdiag.findings/1) are in the page source, element <code>findings-json</code>."
              "</footer></main>\n<script type=\"application/json\" id=\"findings-json\">");
  // '<' only occurs inside JSON strings, where \u003c means the same: no "</script>" can
  // end the element early.
  for (char c : analyzers::FindingsToJson(compare)) {
    if (c == '<') {
      out->append("\\u003c");
    } else {
      out->push_back(c);
    }
  }
  out->append("</script>\n</body></html>\n");
}

}  // namespace dsdiag::report
