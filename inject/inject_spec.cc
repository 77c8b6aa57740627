// Parsing of `--inject KIND[:key=value[,key=value...]]` (docs/contract.md). One table below lists
// every kind with its keys; the parser and --help both read it, so they cannot disagree.
//
// Examples of accepted specs:
//   no-broadcast                  a kind without keys
//   straggler:rank=1,ms=50        keys in any order, each exactly once
//   overflow:step=7               `rank` is optional for overflow only
// Every error message starts with "--inject <spec>: " and says what was expected instead.
#include "inject/inject_spec.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>

namespace dsdiag::inject {
namespace {

enum class Key { kRank, kStep, kMs };

struct KeyUse {
  Key key;
  bool required;
};

struct KindInfo {
  Kind kind;
  std::string_view name;
  std::vector<KeyUse> keys;
  std::string_view description;
  bool synth_only = false;  // SynthOnly(): `dsdiag train` refuses it
};

const std::vector<KindInfo>& Kinds() {
  static const std::vector<KindInfo> kinds = {
      {Kind::kUnusedParam,
       "unused-param",
       {{Key::kRank, true}},
       "a submodule is skipped on that rank, so its parameters get no gradient there"},
      {Kind::kGradDesync,
       "grad-desync",
       {{Key::kRank, true}, {Key::kStep, true}},
       "that rank's gradient of one parameter is altered after the allreduce"},
      {Kind::kNoBroadcast,
       "no-broadcast",
       {},
       "ranks initialise with seed+rank and the initial broadcast is skipped"},
      {Kind::kRngCollision,
       "rng-collision",
       {},
       "every rank seeds its dropout / augmentation RNG identically"},
      {Kind::kSamplerSeed,
       "sampler-seed",
       {{Key::kRank, true}},
       "that rank's distributed sampler uses a different shuffle seed"},
      {Kind::kNoSetEpoch, "no-set-epoch", {}, "the sampler's epoch is never advanced"},
      {Kind::kSlowLoader,
       "slow-loader",
       {{Key::kRank, true}, {Key::kMs, true}},
       "each batch on that rank takes `ms` longer to produce"},
      {Kind::kOverflow,
       "overflow",
       {{Key::kStep, true}, {Key::kRank, false}},
       "non-finite gradients at that step (on that rank only, if given)"},
      {Kind::kScalerDesync,
       "scaler-desync",
       {{Key::kRank, true}},
       "that rank skips the cross-rank reduction of the found-inf flag"},
      {Kind::kClipBeforeUnscale,
       "clip-before-unscale",
       {},
       "gradients are clipped while still scaled"},
      {Kind::kCkptAllRanks,
       "ckpt-all-ranks",
       {},
       "every rank writes the checkpoint to the same path"},
      {Kind::kCkptStale,
       "ckpt-stale",
       {{Key::kRank, true}},
       "on --resume, that rank loads an older checkpoint"},
      {Kind::kStraggler,
       "straggler",
       {{Key::kRank, true}, {Key::kMs, true}},
       "that rank's compute takes `ms` longer each step"},
      {Kind::kClockSkew,
       "clock-skew",
       {{Key::kRank, true}, {Key::kMs, true}},
       "that rank's wall clock runs `ms` ahead of the others"},
      {Kind::kConfigMismatch,
       "config-mismatch",
       {{Key::kRank, true}},
       "that rank was launched with other settings: batch_size doubled, OMP_NUM_THREADS 4, "
       "NCCL_DEBUG INFO (synth only)",
       /*synth_only=*/true},
      {Kind::kCollectiveMismatch,
       "collective-mismatch",
       {{Key::kRank, true}, {Key::kStep, true}},
       "at that step the rank issues a different collective (or size)"},
      {Kind::kHang,
       "hang",
       {{Key::kRank, true}, {Key::kStep, true}},
       "that rank stops making progress at that step"},
      {Kind::kCrash,
       "crash",
       {{Key::kRank, true}, {Key::kStep, true}},
       "that rank dies (SIGKILL to itself) at that step"},
  };
  return kinds;
}

std::string_view KeyName(Key key) {
  switch (key) {
    case Key::kRank:
      return "rank";
    case Key::kStep:
      return "step";
    case Key::kMs:
      return "ms";
  }
  return "?";
}

// The placeholder shown after `key=` in syntax lines.
std::string_view KeyPlaceholder(Key key) {
  switch (key) {
    case Key::kRank:
      return "R";
    case Key::kStep:
      return "S";
    case Key::kMs:
      return "MS";
  }
  return "?";
}

// "straggler:rank=R,ms=MS", "overflow:step=S[,rank=R]", "no-broadcast".
std::string Syntax(const KindInfo& info) {
  std::string out(info.name);
  bool first = true;
  for (const KeyUse& use : info.keys) {
    std::string item = std::string(KeyName(use.key)) + "=" + std::string(KeyPlaceholder(use.key));
    const char* sep = first ? ":" : ",";
    out += use.required ? std::string(sep) + item : "[" + std::string(sep) + item + "]";
    first = false;
  }
  return out;
}

std::string KeyList(const KindInfo& info) {
  std::string out;
  for (const KeyUse& use : info.keys) {
    if (!out.empty()) out += ", ";
    out += KeyName(use.key);
    if (!use.required) out += " (optional)";
  }
  return out;
}

std::string KnownKindList() {
  std::string out;
  for (const KindInfo& info : Kinds()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word`, when close enough to be a plausible typo.
std::string_view Closest(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_distance = std::string_view::npos;
  for (std::string_view c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  const size_t limit = std::max<size_t>(2, best.size() / 3);
  return best_distance <= limit ? best : std::string_view();
}

// Builds the "--inject <spec>: <what>" messages.
class Errors {
 public:
  explicit Errors(std::string_view text) : text_(text) {}
  [[noreturn]] void Fail(const std::string& what) const {
    throw InjectSpecError("--inject " + std::string(text_) + ": " + what);
  }

 private:
  std::string_view text_;
};

const KindInfo& LookUpKind(std::string_view name, const Errors& errors) {
  std::vector<std::string_view> names;
  for (const KindInfo& info : Kinds()) {
    if (info.name == name) return info;
    names.push_back(info.name);
  }
  std::string what = "unknown kind '" + std::string(name) + "'";
  std::string_view guess = Closest(name, names);
  if (!guess.empty()) what += " (did you mean '" + std::string(guess) + "'?)";
  errors.Fail(what + "; known kinds: " + KnownKindList());
}

const KeyUse& LookUpKey(const KindInfo& info, std::string_view key, const Errors& errors) {
  std::vector<std::string_view> names;
  for (const KeyUse& use : info.keys) {
    if (KeyName(use.key) == key) return use;
    names.push_back(KeyName(use.key));
  }
  std::string what = "unknown key '" + std::string(key) + "' for " + std::string(info.name);
  if (info.keys.empty()) {
    errors.Fail(what + "; " + std::string(info.name) + " takes no keys (write just '" +
                std::string(info.name) + "')");
  }
  std::string_view guess = Closest(key, names);
  if (!guess.empty()) what += " (did you mean '" + std::string(guess) + "'?)";
  errors.Fail(what + "; " + std::string(info.name) + " takes: " + KeyList(info) + " (" +
              Syntax(info) + ")");
}

// A non-negative decimal integer with nothing after it.
int64_t ParseValue(std::string_view key, std::string_view value, const Errors& errors) {
  const std::string k(key);
  if (value.empty()) errors.Fail("empty value for '" + k + "'; expected " + k + "=<integer>");
  if (value[0] == '-') {
    errors.Fail("'" + k + "' must be a non-negative integer, got '" + std::string(value) + "'");
  }
  int64_t result = 0;
  const char* begin = value.data();
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(begin, end, result);
  if (ec == std::errc::result_out_of_range) {
    errors.Fail("'" + k + "' value '" + std::string(value) + "' is too large");
  }
  if (ec != std::errc() || ptr == begin) {
    errors.Fail("'" + k + "' must be a non-negative integer, got '" + std::string(value) + "'");
  }
  if (ptr != end) {
    errors.Fail("trailing characters '" + std::string(ptr, end) + "' after " + k + "=" +
                std::string(begin, ptr) + "; expected a plain integer");
  }
  return result;
}

void Assign(InjectSpec* spec, Key key, int64_t value, int world_size, const Errors& errors) {
  switch (key) {
    case Key::kRank:
      if (world_size >= 0 && value >= world_size) {
        errors.Fail("rank " + std::to_string(value) + " is out of range for " +
                    std::to_string(world_size) + (world_size == 1 ? " rank" : " ranks") +
                    (world_size > 0 ? " (0.." + std::to_string(world_size - 1) + ")" : ""));
      }
      if (value > std::numeric_limits<int>::max()) {
        errors.Fail("rank " + std::to_string(value) + " is too large");
      }
      spec->rank = static_cast<int>(value);
      return;
    case Key::kStep:
      spec->step = value;
      return;
    case Key::kMs:
      if (value == 0) errors.Fail("ms must be > 0, got 0");
      spec->ms = value;
      return;
  }
}

bool Has(const InjectSpec& spec, Key key) {
  switch (key) {
    case Key::kRank:
      return spec.rank.has_value();
    case Key::kStep:
      return spec.step.has_value();
    case Key::kMs:
      return spec.ms.has_value();
  }
  return false;
}

// Parses the `key=value,...` part after the colon into *spec.
void ParseKeys(std::string_view rest, const KindInfo& info, int world_size, InjectSpec* spec,
               const Errors& errors) {
  if (rest.empty()) {
    errors.Fail("nothing after ':'; expected " + Syntax(info) +
                (info.keys.empty() ? " (this kind takes no keys: drop the ':')" : ""));
  }
  size_t pos = 0;
  while (pos <= rest.size()) {
    const size_t comma = std::min(rest.find(',', pos), rest.size());
    const std::string_view item = rest.substr(pos, comma - pos);
    if (item.empty()) {
      errors.Fail(comma == rest.size() ? "trailing ',' with nothing after it"
                                       : "stray ',' with no key=value before it");
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      errors.Fail("'" + std::string(item) + "' is not key=value; expected " + Syntax(info));
    }
    const std::string_view key = item.substr(0, eq);
    const KeyUse& use = LookUpKey(info, key, errors);
    if (Has(*spec, use.key)) errors.Fail("key '" + std::string(key) + "' given twice");
    Assign(spec, use.key, ParseValue(key, item.substr(eq + 1), errors), world_size, errors);
    pos = comma + 1;
  }
}

}  // namespace

InjectSpec ParseInjectSpec(std::string_view text, int world_size) {
  const Errors errors(text);
  if (text.empty()) errors.Fail("empty spec; expected KIND[:key=value,...]");
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  if (name.empty()) errors.Fail("missing kind before ':'; known kinds: " + KnownKindList());
  const KindInfo& info = LookUpKind(name, errors);

  InjectSpec spec{info.kind, std::nullopt, std::nullopt, std::nullopt, std::string(text)};
  if (colon != std::string_view::npos) {
    ParseKeys(text.substr(colon + 1), info, world_size, &spec, errors);
  }
  for (const KeyUse& use : info.keys) {
    if (use.required && !Has(spec, use.key)) {
      errors.Fail("missing key '" + std::string(KeyName(use.key)) + "'; expected " + Syntax(info));
    }
  }
  return spec;
}

std::string_view KindName(Kind kind) {
  for (const KindInfo& info : Kinds())
    if (info.kind == kind) return info.name;
  return "?";
}

bool SynthOnly(Kind kind) {
  for (const KindInfo& info : Kinds())
    if (info.kind == kind) return info.synth_only;
  return false;
}

std::string DescribeKinds() {
  size_t width = 0;
  for (const KindInfo& info : Kinds())
    if (!info.synth_only) width = std::max(width, Syntax(info).size());
  std::string out;
  for (const KindInfo& info : Kinds()) {
    if (info.synth_only) continue;
    const std::string syntax = Syntax(info);
    out += "  " + syntax + std::string(width - syntax.size() + 2, ' ');
    out += info.description;
    out += "\n";
  }
  return out;
}

InjectPlan InjectPlan::Parse(const std::vector<std::string>& texts, int world_size) {
  std::vector<InjectSpec> specs;
  specs.reserve(texts.size());
  for (const std::string& text : texts) specs.push_back(ParseInjectSpec(text, world_size));
  return InjectPlan(std::move(specs));
}

const InjectSpec* InjectPlan::Find(Kind kind) const {
  for (const InjectSpec& spec : specs_)
    if (spec.kind == kind) return &spec;
  return nullptr;
}

const InjectSpec* InjectPlan::FindFor(Kind kind, int rank) const {
  for (const InjectSpec& spec : specs_)
    if (spec.kind == kind && (!spec.rank || *spec.rank == rank)) return &spec;
  return nullptr;
}

std::vector<std::string> InjectPlan::texts() const {
  std::vector<std::string> out;
  for (const InjectSpec& spec : specs_) out.push_back(spec.text);
  return out;
}

}  // namespace dsdiag::inject
