"""dsdiag._core's vocabularies (python/core/vocabulary_binding.cc) are the C++ headers'
constants: each header constant kFooBar is the submodule's FOO_BAR with the same value, and
ALL lists them in the header's order. In process, in a second: no job."""
import importlib.util
import os
import re
import sys
import unittest

from dsdiag_jobs import package_dir

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# submodule of _core, the check's vocabulary it exports, constants the core keeps to itself
EXPORTED = [
    ("fp_what", "fp_what", ()),
    ("fp_why", "fp_why", ()),
    ("end_reason", "end_reason", ()),
    ("phase_name", "phase", ("kNone",)),  # a probe's state outside a phase, never a record's
    ("flight_dump_reason", "flight_dump_reason", ()),
    ("ckpt_op", "ckpt_op", ()),
]


def load_check():
    path = os.path.join(SOURCE, "tests", "docs", "vocabulary_check.py")
    spec = importlib.util.spec_from_file_location("vocabulary_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_name(constant):
    """kPreStep -> PRE_STEP, kCkptLoad -> LOAD (the ckpt_op submodule drops the prefix)."""
    words = re.findall(r"[A-Z][a-z0-9]*", constant[1:])
    if words[:1] == ["Ckpt"]:
        words = words[1:]
    return "_".join(w.upper() for w in words)


class Vocabulary(unittest.TestCase):
    def test_every_exported_vocabulary_is_its_headers_constants(self):
        if package_dir() not in sys.path:
            sys.path.insert(0, package_dir())
        from dsdiag import _core

        check = load_check()
        headers = {name: (header, anchor) for name, header, anchor, _, _ in check.VOCABULARIES}
        for submodule, vocabulary, kept in EXPORTED:
            with self.subTest(submodule):
                header, anchor = headers[vocabulary]
                values = check.read_vocabulary(SOURCE, header, anchor)  # value -> constant
                exported = getattr(_core, submodule)
                expected = [v for v, constant in values.items() if constant not in kept]
                self.assertEqual(list(exported.ALL), expected)
                for value, constant in values.items():
                    if constant not in kept:
                        self.assertEqual(getattr(exported, python_name(constant)), value)


if __name__ == "__main__":
    unittest.main()
