#include "analyzers/torch_fr/fr_p2p.h"

#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "analyzers/framework/finding_kinds.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::JsonValue;

// One send or recv of one rank, its peer a global rank.
struct P2p {
  int rank = 0;
  int peer = 0;
  const FrOp* op = nullptr;
};

// The messages from src to dst in one group, each side in its own order.
struct Channel {
  const FrGroup* group = nullptr;
  int src = 0, dst = 0;
  std::vector<P2p> sends;  // on src
  std::vector<P2p> recvs;  // on dst
};

std::optional<int64_t> ToInt(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "0->1" of a send, "1<-0" of a recv: (self, peer) group ranks.
std::optional<std::pair<int64_t, int64_t>> Peers(std::string_view detail, bool send) {
  const std::string_view arrow = send ? "->" : "<-";
  const size_t at = detail.find(arrow);
  if (at == std::string_view::npos) return std::nullopt;
  const auto self = ToInt(detail.substr(0, at));
  const auto peer = ToInt(detail.substr(at + 2));
  if (!self || !peer) return std::nullopt;
  return std::make_pair(*self, *peer);
}

// The group's members, global ranks sorted: its pg_config's list, else the world for the
// default group, else the ranks whose dumps hold its entries.
std::vector<int64_t> Members(const FrRun& run, const std::vector<FrGroup>& groups,
                             const FrGroup& g) {
  if (!g.id->ranks.empty()) return g.id->ranks;
  std::vector<int64_t> out;
  if (g.is_default()) {
    for (int r = 0; r < run.world_size; ++r) out.push_back(r);
    return out;
  }
  std::set<int64_t> seen;
  for (const FrGroup& other : groups)
    if (other.name() == g.name())
      for (const FrRankOps& r : other.ranks) seen.insert(r.rank);
  return std::vector<int64_t>(seen.begin(), seen.end());
}

bool Wrapped(const FrRun& run, int rank) {
  const FrRankDump* d = run.DumpOf(rank);
  return d == nullptr || d->first_record_id.value_or(0) > 0;
}

std::vector<Channel> Channels(const FrRun& run, const std::vector<FrGroup>& groups) {
  std::map<std::tuple<const FrGroup*, int, int>, Channel> by_key;
  for (const FrGroup& g : groups) {
    if (!g.p2p()) continue;
    const std::vector<int64_t> members = Members(run, groups, g);
    auto global = [&](int64_t group_rank) -> std::optional<int> {
      if (group_rank < 0 || group_rank >= static_cast<int64_t>(members.size())) return std::nullopt;
      return static_cast<int>(members[group_rank]);
    };
    for (const FrRankOps& r : g.ranks)
      for (const FrOp& op : r.ops) {
        const std::string& name = run.Str(op.entry->op);
        const bool send = name == "send";
        if (!send && name != "recv") continue;
        const auto peers = Peers(run.Str(op.entry->op_detail), send);
        if (!peers) continue;
        const std::optional<int> self = global(peers->first);
        const std::optional<int> peer = global(peers->second);
        if (!self || !peer || *self != r.rank) continue;  // members unknown or wrong
        const int src = send ? r.rank : *peer;
        const int dst = send ? *peer : r.rank;
        Channel& c = by_key[{&g, src, dst}];
        c.group = &g;
        c.src = src;
        c.dst = dst;
        (send ? c.sends : c.recvs).push_back(P2p{r.rank, *peer, &op});
      }
  }
  std::vector<Channel> out;
  for (auto& [key, c] : by_key)
    if (!Wrapped(run, c.src) && !Wrapped(run, c.dst)) out.push_back(std::move(c));
  return out;
}

// What a send and its recv must agree on: the elements and the dtypes.
using Signature = std::pair<int64_t, int32_t>;  // numel, dtypes string

Signature SignatureOf(const FrEntry& e) { return {e.numel, e.dtypes}; }

std::string SignatureText(const FrRun& run, const Signature& s) {
  std::string text = std::to_string(s.first) + (s.first == 1 ? " element" : " elements");
  if (!run.Str(s.second).empty()) text += " " + run.Str(s.second);
  return text;
}

std::string ChannelText(const Channel& c, size_t message) {
  std::string label = c.group->Label();  // "group 0 (default_pg) p2p": the p2p goes
  if (label.size() > 4 && label.compare(label.size() - 4, 4, " p2p") == 0)
    label.resize(label.size() - 4);
  return "send/recv " + label + " rank " + std::to_string(c.src) + " -> rank " +
         std::to_string(c.dst) + " message " + std::to_string(message + 1);
}

JsonValue SideRow(const FrRun& run, const P2p& p, const char* side) {
  const FrEntry& e = *p.op->entry;
  JsonValue row = JsonValue::Object();
  row.Set("rank", p.rank);
  row.Set("side", side);
  if (const FrRankDump* d = run.DumpOf(p.rank)) row.Set("file", d->file_name);
  row.Set("p2p_seq", p.op->seq);
  row.Set("numel", e.numel);
  row.Set("input_sizes", run.Str(e.sizes));
  row.Set("input_dtypes", run.Str(e.dtypes));
  row.Set("done", p.op->done);
  row.Set("torch_state", trace::TorchFrStateName(e.state));
  row.Set("profiling_name", run.Str(e.profiling_name));
  row.Set("python_where", run.Str(e.where));
  return row;
}

std::string Where(const FrRun& run, const FrEntry* e) {
  const std::string where = e ? ShortWhere(run.Str(e->where)) : "";
  return where.empty() ? "" : " (" + where + ")";
}

void Mismatches(const FrRun& run, const std::vector<Channel>& channels,
                std::vector<Finding>* findings) {
  // The signatures of the pairs that agree, per group: what a message there looks like.
  std::map<const FrGroup*, std::set<Signature>> agreed;
  for (const Channel& c : channels)
    for (size_t i = 0; i < std::min(c.sends.size(), c.recvs.size()); ++i)
      if (SignatureOf(*c.sends[i].op->entry) == SignatureOf(*c.recvs[i].op->entry))
        agreed[c.group].insert(SignatureOf(*c.sends[i].op->entry));
  for (const Channel& c : channels) {
    const size_t pairs = std::min(c.sends.size(), c.recvs.size());
    for (size_t i = 0; i < pairs; ++i) {
      const P2p& send = c.sends[i];
      const P2p& recv = c.recvs[i];
      const Signature s = SignatureOf(*send.op->entry);
      const Signature r = SignatureOf(*recv.op->entry);
      if (s == r) continue;
      int later = 0;
      for (size_t j = i + 1; j < pairs; ++j)
        later += SignatureOf(*c.sends[j].op->entry) == SignatureOf(*c.recvs[j].op->entry) ? 0 : 1;
      const std::set<Signature>& known = agreed[c.group];
      const bool send_known = known.count(s) > 0;
      const bool recv_known = known.count(r) > 0;
      Finding f;
      f.kind = std::string(kind::kCollectiveMismatch);
      f.severity = Severity::kError;
      const std::string what = ChannelText(c, i);
      f.subject = what;
      std::string basis = "none";
      if (send_known != recv_known) {
        basis = "history";
        const P2p& odd = send_known ? recv : send;
        f.ranks = {odd.rank};
        f.summary = "rank " + std::to_string(odd.rank) + (send_known ? " receives " : " sends ") +
                    SignatureText(run, send_known ? r : s) + " at " + what + " where rank " +
                    std::to_string(send_known ? send.rank : recv.rank) +
                    (send_known ? " sends " : " receives ") +
                    SignatureText(run, send_known ? s : r) + ", as the group's other messages do" +
                    Where(run, odd.op->entry);
      } else {
        f.ranks = {std::min(c.src, c.dst), std::max(c.src, c.dst)};
        f.summary = "rank " + std::to_string(c.src) + " sends " + SignatureText(run, s) +
                    " and rank " + std::to_string(c.dst) + " receives " + SignatureText(run, r) +
                    " at " + what + ", and the group's other messages do not say which is right";
      }
      JsonValue ev = JsonValue::Object();
      ev.Set("source", "torch-flight-recorder");
      ev.Set("group", c.group->name());
      ev.Set("group_desc", c.group->desc());
      ev.Set("op", "send/recv");
      ev.Set("src", c.src);
      ev.Set("dst", c.dst);
      ev.Set("message", static_cast<int64_t>(i + 1));
      ev.Set("basis", basis);
      JsonValue rows = JsonValue::Array();
      rows.Push(SideRow(run, send, "send"));
      rows.Push(SideRow(run, recv, "recv"));
      ev.Set("ranks", std::move(rows));
      ev.Set("later_mismatches", later);
      f.evidence = std::move(ev);
      f.hint =
          "a send and the recv it meets need the same number of elements and the same dtype: "
          "fix the side named (the line above issued it)";
      findings->push_back(std::move(f));
      break;
    }
  }
}

// The op a rank waits in anywhere (its last in a group, not done), if any.
const FrOp* HeldIn(const std::vector<FrGroup>& groups, int rank, const FrGroup** in) {
  for (const FrGroup& g : groups)
    if (const FrRankOps* r = g.Of(rank))
      if (const FrOp* w = r->Waiting()) {
        *in = &g;
        return w;
      }
  return nullptr;
}

JsonValue PeerRow(const FrRun& run, const std::vector<FrGroup>& groups, int rank, std::string* at) {
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  row.Set("role", "never posted");
  const FrRankDump* d = run.DumpOf(rank);
  row.Set("file", d ? JsonValue(d->file_name) : JsonValue());
  if (d == nullptr) {
    row.Set("status", "no dump");
    *at = "left no dump";
    return row;
  }
  const FrGroup* g = nullptr;
  if (const FrOp* w = HeldIn(groups, rank, &g)) {
    JsonValue o = JsonValue::Object();
    o.Set("group", g->name());
    o.Set("seq", w->seq);
    o.Set("op", run.Str(w->entry->op));
    o.Set("python_where", run.Str(w->entry->where));
    row.Set("waiting_in", std::move(o));
    *at = "waits in " + run.Str(w->entry->op) + " " + g->Label() + " seq " +
          std::to_string(w->seq) + Where(run, w->entry);
  } else if (!d->entries.empty()) {
    const FrEntry& last = d->entries.back();
    JsonValue o = JsonValue::Object();
    o.Set("op", run.Str(last.op));
    o.Set("python_where", run.Str(last.where));
    row.Set("last_op", std::move(o));
    *at = "has nothing pending; its last op was " + run.Str(last.op) + Where(run, &last);
  } else {
    *at = "recorded no op";
  }
  return row;
}

void Hangs(const FrRun& run, const std::vector<FrGroup>& groups,
           const std::vector<Channel>& channels, std::vector<Finding>* findings) {
  for (const Channel& c : channels) {
    const bool recv_waits = c.recvs.size() > c.sends.size();
    const std::vector<P2p>& more = recv_waits ? c.recvs : c.sends;
    const size_t index = recv_waits ? c.sends.size() : c.recvs.size();
    if (index >= more.size() || more[index].op->done) continue;
    const P2p& waiting = more[index];
    const int peer = waiting.peer;
    const std::string op = recv_waits ? "recv" : "send";
    const std::string missing = recv_waits ? "send" : "recv";
    const std::string what = ChannelText(c, index);
    std::string peer_at;
    JsonValue peer_row = PeerRow(run, groups, peer, &peer_at);
    Finding f;
    f.kind = std::string(kind::kHang);
    f.severity = Severity::kError;
    f.ranks = {peer};
    f.subject = what;
    f.summary = "rank " + std::to_string(peer) + " never posted the " + missing + " that rank " +
                std::to_string(waiting.rank) + " waits for in its " + op + " (" + what + ")" +
                Where(run, waiting.op->entry) + "; rank " + std::to_string(peer) + " " + peer_at;
    JsonValue ev = JsonValue::Object();
    ev.Set("source", "torch-flight-recorder");
    ev.Set("group", c.group->name());
    ev.Set("group_desc", c.group->desc());
    ev.Set("op", op);
    ev.Set("src", c.src);
    ev.Set("dst", c.dst);
    ev.Set("message", static_cast<int64_t>(index + 1));
    ev.Set("seq", waiting.op->seq);
    JsonValue rows = JsonValue::Array();
    JsonValue w = SideRow(run, waiting, recv_waits ? "recv" : "send");
    w.Set("role", "waiting");
    rows.Push(std::move(w));
    rows.Push(std::move(peer_row));
    ev.Set("ranks", std::move(rows));
    f.evidence = std::move(ev);
    f.hint = "rank " + std::to_string(peer) + " went past the point where it should have " +
             (recv_waits ? "sent to" : "received from") + " rank " + std::to_string(waiting.rank) +
             ": look at the line above for a branch that skips it or a peer number that differs";
    findings->push_back(std::move(f));
  }
}

}  // namespace

void FindP2pFindings(const FrRun& run, const std::vector<FrGroup>& groups,
                     std::vector<Finding>* findings) {
  const std::vector<Channel> channels = Channels(run, groups);
  Mismatches(run, channels, findings);
  Hangs(run, groups, channels, findings);
}

}  // namespace dsdiag::analyzers::torch_fr
