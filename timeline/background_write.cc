#include "timeline/background_write.h"

#include <utility>

namespace dsdiag::timeline {

BackgroundWrite::BackgroundWrite(std::ostream* out, size_t capacity)
    : out_(out), thread_(&BackgroundWrite::Loop, this) {
  writing_.Reserve(capacity);  // before any Hand: the thread only reads it once busy_
}

BackgroundWrite::~BackgroundWrite() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundWrite::Hand(EventBuffer* full) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !busy_; });
  swap(*full, writing_);
  busy_ = true;
  lock.unlock();
  changed_.notify_all();
}

void BackgroundWrite::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !busy_; });
}

void BackgroundWrite::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return busy_ || stop_; });
    if (!busy_) return;  // stopped with nothing left to write
    lock.unlock();
    out_->write(writing_.data(), static_cast<std::streamsize>(writing_.size()));
    writing_.clear();
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace dsdiag::timeline
