// The message of an exception for traces and logs: c10::Error's what() appends a C++
// backtrace of LibTorch frames, which helps nobody reading a trace; keep the message.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace dsdiag::trainer {

inline std::string ErrorText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

}  // namespace dsdiag::trainer
