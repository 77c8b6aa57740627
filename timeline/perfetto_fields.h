// The field numbers of Perfetto's trace format (protos/perfetto/trace/*.proto) that
// `dsdiag timeline --format perfetto` writes, each spelled once. The names are the protos'
// own, so that a reader can look each one up there; the tests decode our output with
// Perfetto's own perfetto_trace_pb2 (tests/timeline/perfetto_decode_test.py).
#pragma once

#include <cstdint>

namespace dsdiag::timeline::perfetto_fields {

// Trace: the file is a Trace message, i.e. `packet` fields one after the other.
inline constexpr uint32_t kTracePacket = 1;

// TracePacket
inline constexpr uint32_t kTimestamp = 8;
inline constexpr uint32_t kTrustedPacketSequenceId = 10;
inline constexpr uint32_t kTrackEvent = 11;
inline constexpr uint32_t kInternedData = 12;
inline constexpr uint32_t kSequenceFlags = 13;
inline constexpr uint32_t kTrackDescriptor = 60;
// TracePacket.SequenceFlags
inline constexpr uint64_t kSeqIncrementalStateCleared = 1;
inline constexpr uint64_t kSeqNeedsIncrementalState = 2;

// TrackDescriptor
inline constexpr uint32_t kTrackUuid = 1;
inline constexpr uint32_t kTrackName = 2;
inline constexpr uint32_t kTrackParentUuid = 5;
inline constexpr uint32_t kTrackCounter = 8;  // a CounterDescriptor: a counter track
inline constexpr uint32_t kTrackChildOrdering = 11;
inline constexpr uint32_t kTrackSiblingOrderRank = 12;
inline constexpr uint32_t kTrackDescription = 14;
inline constexpr uint64_t kChildOrderingExplicit = 3;  // TrackDescriptor.ChildTracksOrdering

// TrackEvent
inline constexpr uint32_t kEventCategoryIids = 3;
inline constexpr uint32_t kEventDebugAnnotations = 4;
inline constexpr uint32_t kEventType = 9;
inline constexpr uint32_t kEventNameIid = 10;
inline constexpr uint32_t kEventTrackUuid = 11;
inline constexpr uint32_t kEventCategories = 22;
inline constexpr uint32_t kEventName = 23;
inline constexpr uint32_t kEventDoubleCounterValue = 44;
// TrackEvent.Type
inline constexpr uint64_t kTypeSliceBegin = 1;
inline constexpr uint64_t kTypeSliceEnd = 2;
inline constexpr uint64_t kTypeInstant = 3;
inline constexpr uint64_t kTypeCounter = 4;

// DebugAnnotation
inline constexpr uint32_t kAnnotationNameIid = 1;
inline constexpr uint32_t kAnnotationBool = 2;
inline constexpr uint32_t kAnnotationUint = 3;
inline constexpr uint32_t kAnnotationInt = 4;
inline constexpr uint32_t kAnnotationDouble = 5;
inline constexpr uint32_t kAnnotationString = 6;
inline constexpr uint32_t kAnnotationName = 10;  // the name inline, not interned

// InternedData, and its entries (EventCategory, EventName, DebugAnnotationName alike)
inline constexpr uint32_t kInternedCategories = 1;
inline constexpr uint32_t kInternedEventNames = 2;
inline constexpr uint32_t kInternedAnnotationNames = 3;
inline constexpr uint32_t kInternedIid = 1;
inline constexpr uint32_t kInternedName = 2;

}  // namespace dsdiag::timeline::perfetto_fields
