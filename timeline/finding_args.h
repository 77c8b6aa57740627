// A finding's args on a timeline, once for both formats: `Args` is the JSON's EventArgs or
// Perfetto's PerfettoInlineArgs (where an absent value is no annotation at all).
#pragma once

#include <string>
#include <string_view>

#include "analyzers/framework/finding.h"

namespace dsdiag::timeline {

// "error: hang", the instant's name.
inline std::string FindingEventName(const analyzers::Finding& f) {
  return std::string(analyzers::SeverityName(f.severity)) + ": " + f.kind;
}

template <class Args>
void AddFindingArgs(const analyzers::Finding& f, Args* a) {
  a->Field("kind", f.kind).Field("severity", analyzers::SeverityName(f.severity));
  a->Field("summary", f.summary);
  if (f.subject) {
    a->Field("subject", *f.subject);
  } else {
    a->Null("subject");
  }
  if (f.step) {
    a->Field("step", *f.step);
  } else {
    a->Null("step");
  }
  a->Field("ranks", analyzers::FormatRankRanges(f.ranks));
  if (!f.hint.empty()) a->Field("hint", f.hint);
}

}  // namespace dsdiag::timeline
