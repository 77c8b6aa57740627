"""Each value of the trace format's closed vocabularies is spelled once: as a constant beside
its record's FieldKeys in trace/records/ (docs/trace-format.md, "Where each record's schema
lives"), exported to Python by dsdiag._core (python/core/vocabulary_binding.cc). This check
reads the vocabularies from those headers and fails on a value written again as a literal in
the C++ sources or in python/dsdiag (tests, fixtures and docs may keep literals; comments and
docstrings may quote them):

  - a value with a hyphen ("pre-step", "after-sync", "peer-failure") anywhere;
  - a plain word ("data", "error", "init") where it stands for its vocabulary: compared with
    the field (`why == "init"`), handed to what writes the field (`End("error", ...)`,
    `phase("data")`, `write_fingerprints(s, "param", "init", ...)`), or listed with two more
    values of the same vocabulary (a table of them kept by hand).

usage: vocabulary_check.py SOURCE_DIR  (exit 1 and one line per literal when one is found)
"""

import io
import os
import re
import sys
import tokenize

# name, header, how its constants are found there, and the code that takes the value:
# a field compared with it, a call writing it.
FINGERPRINT_WRITERS = (r"\b(?:Write)?Fingerprints?|\bwrite_fingerprints|\bFingerprintParams"
                       r"|\bfingerprint_params")
VOCABULARIES = [
    ("fp_what", "trace/records/fp_record.h", "namespace fp_what",
     r"\bwhat\b", FINGERPRINT_WRITERS),
    ("fp_why", "trace/records/fp_record.h", "namespace fp_why",
     r"\bwhy\b", FINGERPRINT_WRITERS),
    ("end_reason", "trace/records/end_record.h", "namespace end_reason",
     r"\breason\b", r"\b(?:End|end|StopRun)"),
    ("phase", "trace/records/phase_record.h", "namespace dsdiag::trace::phase",
     r"\bphase\b", r"\b(?:phase|PhaseScope)"),
    ("flight_dump_reason", "trace/flight_dump_keys.h", "namespace flight_dump_reason",
     r"\breason\b", r"\b(?:DumpNow|Dump|dump)"),
    ("torch_fr_state", "trace/torch_fr/torch_fr_keys.h", "namespace torch_fr_state",
     r"\bstate\b", r"\b(?:Value)"),
    ("ckpt_op", "trace/records/ckpt_record.h", "kCkpt",
     r"\b(?:op|kind)\b", r"\b(?:write_checkpoint|_begin)"),
]

SKIP_DIRS = {"tests", "fixtures", "docs", "build", ".git", "node_modules"}
CONSTANT = re.compile(r'inline constexpr std::string_view (k\w+) = "([^"]+)";')


def read_vocabulary(src, header, anchor):
    """The header's constants in the block opened by `anchor` (a namespace), or those whose
    name starts with it."""
    values = {}
    inside = False
    with open(os.path.join(src, header)) as f:
        for line in f:
            if anchor.startswith("namespace"):
                if line.startswith(anchor + " {"):
                    inside = True
                elif inside and line.startswith("}"):
                    inside = False
            m = CONSTANT.search(line)
            if m and (inside or m.group(1).startswith(anchor)):
                values[m.group(2)] = m.group(1)
    if not values:
        sys.exit("vocabulary_check: no constants for '%s' in %s" % (anchor, header))
    return values


CPP_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)


def cpp_code_lines(text):
    """The C++ source's lines with comments blanked (string literals kept)."""
    def blank(m):
        t = m.group(0)
        return t if t.startswith('"') else re.sub(r"[^\n]", " ", t)

    return CPP_TOKENS.sub(blank, text).split("\n")


def python_code_lines(text):
    """The Python source's lines with comments and docstrings dropped, each string literal
    written with double quotes, so that one set of patterns reads both languages."""
    lines = [[] for _ in text.split("\n")]
    previous = tokenize.NEWLINE
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text.split("\n")
    for tok in tokens:
        kind, string, (row, _), _, _ = tok
        if kind == tokenize.COMMENT:
            continue
        if kind == tokenize.STRING:
            if previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL):
                previous = kind
                continue  # a docstring (or a bare string statement)
            m = re.fullmatch(r"[rbuRBU]?(['\"])([^'\"\\]*)\1", string)
            if m:
                string = '"%s"' % m.group(2)
        if kind not in (tokenize.NL, tokenize.COMMENT):
            previous = kind
        lines[row - 1].append(string)
    return [" ".join(parts) for parts in lines]


def patterns(values, field, writers):
    """(regex, why) pairs for one vocabulary."""
    out = []
    for value in values:
        lit = '"%s"' % re.escape(value)
        if "-" in value:
            out.append((re.compile(lit), value, "anywhere"))
            continue
        # `why == "init"`, `fp.why() != "init"`, `view.reason().value_or("") != "signal"`,
        # and the other way round.
        accessor = r"\s*(?:\(\s*\))?\s*(?:\.value_or\([^()]*\)\s*)?"
        compared = r"%s%s[!=]=\s*%s|%s\s*[!=]=\s*[\w.>-]*%s" % (field, accessor, lit, lit, field)
        assigned = r"%s\s*=\s*%s\s*[;,)]?\s*$" % (field, lit)
        written = r"(?:%s)\s*\([^()]*%s" % (writers, lit)
        out.append((re.compile(compared), value, "compared with the field"))
        out.append((re.compile(assigned), value, "assigned to the field"))
        out.append((re.compile(written), value, "handed to what writes it"))
    return out


def sources(src):
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        dirs[:] = sorted(d for d in dirs if not (rel_root == "." and d in SKIP_DIRS)
                         and not d.startswith("."))
        for name in sorted(files):
            rel = os.path.normpath(os.path.join(rel_root, name))
            if name.endswith((".h", ".cc")):
                yield rel, "cpp"
            elif name.endswith(".py") and rel.startswith("python/dsdiag/"):
                yield rel, "python"


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    vocabularies = []
    for name, header, anchor, field, writers in VOCABULARIES:
        values = read_vocabulary(src, header, anchor)
        home = header[: -len(".h")]
        vocabularies.append((name, header, home, values, patterns(values, field, writers)))
    found = []
    for rel, language in sources(src):
        with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = cpp_code_lines(text) if language == "cpp" else python_code_lines(text)
        for number, line in enumerate(lines, 1):
            if '"' not in line:
                continue
            for name, header, home, values, checks in vocabularies:
                if rel in (home + ".h", home + ".cc"):
                    continue
                hits = set()
                for regex, value, how in checks:
                    if regex.search(line):
                        hits.add((value, how))
                listed = [v for v in values if '"%s"' % v in line]
                if len(listed) >= 3:
                    hits.update((v, "listed with others of its vocabulary") for v in listed)
                for value, how in sorted(hits):
                    found.append("%s:%d: \"%s\" (%s) spelled again, %s: use %s's %s" % (
                        rel, number, value, name, how, header, values[value]))
    for line in found:
        print(line)
    if found:
        print("vocabulary_check: %d literal(s) of a vocabulary outside its home (above)"
              % len(found), file=sys.stderr)
        return 1
    print("vocabulary_check: every vocabulary value is spelled once (%s)"
          % ", ".join("%s %d" % (v[0], len(v[3])) for v in vocabularies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
