#include "trace/json_from_tape.h"

#include <cstring>

#include "trace/record_tape.h"

namespace dsdiag::trace::tape {

JsonValue ToJsonValue(const uint64_t* words, const uint8_t* strings, uint32_t at) {
  const uint64_t word = words[at];
  switch (Type(word)) {
    case '[': {
      JsonValue a = JsonValue::Array();
      const uint32_t close = static_cast<uint32_t>(word) - 1;
      for (uint32_t i = at + 1; i < close; i = After(words, i))
        a.Push(ToJsonValue(words, strings, i));
      return a;
    }
    case '{': {
      JsonValue o = JsonValue::Object();
      const uint32_t close = static_cast<uint32_t>(word) - 1;
      for (uint32_t i = at + 1; i < close; i = After(words, i + 1)) {
        const std::string_view key = String(strings, words[i]);
        if (o.Find(key) == nullptr) o.Set(key, ToJsonValue(words, strings, i + 1));  // first wins
      }
      return o;
    }
    case 'l': {
      int64_t v;
      std::memcpy(&v, &words[at + 1], sizeof v);
      return JsonValue(v);
    }
    case 'u':  // past int64: a double rather than wrapping around
      return JsonValue(static_cast<double>(words[at + 1]));
    case 'd': {
      double v;
      std::memcpy(&v, &words[at + 1], sizeof v);
      return JsonValue(v);
    }
    case '"':
      return JsonValue(String(strings, word));
    case 't':
      return JsonValue(true);
    case 'f':
      return JsonValue(false);
    default:  // 'n'
      return JsonValue();
  }
}

}  // namespace dsdiag::trace::tape
