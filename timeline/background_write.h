// BackgroundWrite: writes full buffers to an output stream on a thread of its own, one at a
// time, so that the next buffer is formatted while the last one is copied into the file.
// `dsdiag timeline` writes its output after the pass over the traces, when the reading
// thread has finished: on two cores the write(2) copies of a 2.1 GB timeline (1,024 ranks x
// 1,000 steps) otherwise ran on the one thread that also formats the events.
//
//   BackgroundWrite writes(&out, capacity);
//   writes.Hand(&buffer);  // buffer is now an empty one, of the same capacity
//   writes.Wait();         // then check `out` for write errors
#pragma once

#include <condition_variable>
#include <mutex>
#include <ostream>
#include <thread>

#include "timeline/event_buffer.h"

namespace dsdiag::timeline {

class BackgroundWrite {
 public:
  // `capacity`: the buffers' size, so that the one handed back is as large as the one given.
  BackgroundWrite(std::ostream* out, size_t capacity);
  ~BackgroundWrite();  // waits for the write in flight
  BackgroundWrite(const BackgroundWrite&) = delete;
  BackgroundWrite& operator=(const BackgroundWrite&) = delete;

  // Once the previous write is done, trades *full for its (now empty) buffer and starts
  // writing it.
  void Hand(EventBuffer* full);
  // Returns once every buffer handed over is written (the stream is the caller's again).
  void Wait();

 private:
  void Loop();

  std::ostream* out_;
  EventBuffer writing_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool busy_ = false;  // writing_ holds bytes to write
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above are made
};

}  // namespace dsdiag::timeline
