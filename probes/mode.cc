#include "probes/mode.h"

namespace dsdiag::probes {

std::optional<Mode> ParseMode(std::string_view text) {
  if (text == "off") return Mode::kOff;
  if (text == "light") return Mode::kLight;
  if (text == "full") return Mode::kFull;
  return std::nullopt;
}

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kOff:
      return "off";
    case Mode::kLight:
      return "light";
    case Mode::kFull:
      return "full";
  }
  return "?";
}

}  // namespace dsdiag::probes
