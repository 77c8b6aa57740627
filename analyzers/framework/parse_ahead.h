// Parse-ahead: the step driver's reading side (reading, parsing and checking every rank's
// records, window by window) on a thread of its own, the analyzers on the driver thread.
// simdjson's parse and the reader's checks are about half of compare's work: on two cores
// the driver thread is left the other half, plus reading the copies.
//
// The reading thread copies what it reads into chunks (records as RecordBatch copies them,
// with the rank ends, steps done and progress between them, in order) and queues them; the
// driver thread replays each chunk to its sink, so the analyzers see exactly the sequence
// of the serial drive and the findings are the same. At most kChunksInFlight chunks are in
// flight, so memory stays flat whatever the run's size.
// An error of the reading side (an exception: a trace that cannot be reopened) reaches the
// driver thread where it happened in the sequence, and is rethrown there.
#pragma once

#include <functional>

#include "analyzers/framework/drive_sink.h"

namespace dsdiag::analyzers {

// How far the reading thread may run ahead: kChunksInFlight chunks of about kChunkBytes of
// copied records each, 16 MiB whatever the run's size. Small chunks, because the driver
// thread reads a chunk soon after it is filled (the reading side is the longer thread): a
// chunk that fits the caches is read from them, a 4 MiB one from memory. Measured on 2 cores
// (CPU of compare, 1,024 ranks x 100 steps, the binaries alternating): 16 x 4 MiB 0.74-0.92 s,
// 32 x 1 MiB 0.74-0.78, 64 x 256 KiB 0.67-0.72, 16 x 128 KiB 0.65-0.67, 16 x 256 KiB
// 0.58-0.68 (and 8,192 ranks x 25 steps: 1.38-1.51 s -> 1.30-1.35, peak RSS 220 -> 151 MB).
// Many of them, because the driver thread falls behind in bursts (a window's steps done at
// once, across every rank): at 1,024 ranks x 1,000 steps the reading thread waited for a free
// chunk 395 ms of 4.6 s with 16 in flight, 236 with 32, 53-67 with 64, 52 with 128
// (perf sched timehist), for 12 MB more at its peak (26 -> 39 MB).
// Earlier, at 16,384 ranks x 100 steps by wall time: 16 x 4 MiB 7.8-8.1 s, 16 x 1 MiB
// 8.5-10.0 s, 4 x 4 MiB 8.9-10.6 s, the serial drive 8.9-9.9 s.
inline constexpr size_t kChunkBytes = size_t{256} << 10;
inline constexpr size_t kChunksInFlight = 64;

// Runs `read` on a new thread, sending to a sink that queues; replays the queue to `to` on
// this thread. Returns once `read` has returned and its last chunk was replayed; rethrows
// what `read` threw, and what `to` throws (the reading thread then stops at its next chunk).
// `chunk_bytes`: where a chunk is handed over (tests make it small).
void DriveParseAhead(const std::function<void(DriveSink&)>& read, DriveSink& to,
                     size_t chunk_bytes = kChunkBytes);

}  // namespace dsdiag::analyzers
