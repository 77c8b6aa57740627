// What `dsdiag timeline` writes: Chrome Trace Event JSON (every viewer; its events are
// spooled until the pass is over, for their origin-relative times: event_spool.h) or
// Perfetto's protobuf trace (ui.perfetto.dev, trace_processor; about half the size, written
// during the pass: perfetto_trace_writer.h).
#pragma once

namespace dsdiag::timeline {

enum class TimelineFormat { kJson, kPerfetto };

}  // namespace dsdiag::timeline
