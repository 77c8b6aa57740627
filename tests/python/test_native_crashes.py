"""dsdiag run on a 2-rank DDP job (Gloo) whose rank 1 dies in native code at step 6
(jobs/native_crash.py): a segfault in an op's backward, an abort() in an op's forward. The
C++ core's fatal-signal handler writes the rank's held records, its end record (how it died)
and its flight dump, then lets it die by the same signal; compare names rank 1, the step, the
phase and the signal, and the other rank's end is a follow-on. A faulthandler the job turned on
still prints its traceback.

Run by ctest once per Python lane (DSDIAG_TEST_PYTHON); DSDIAG_BINARY names the dsdiag
executable."""
import json
import os
import unittest

from dsdiag_jobs import JobTestCase, compare, find, read_trace, run_job, serious

CRASH_STEP = 6


class NativeCrashes(JobTestCase):
    def crashed_run(self, name, env):
        status, _, err = run_job(self.path(name), "native_crash.py", env=env)
        self.assertNotEqual(status, 0, err)
        findings = compare(self.path(name))
        # One cause: rank 1's death; rank 0's end (a lost peer, or the launcher's stop) and
        # anything it waited in follow it.
        self.assertEqual(serious(findings), {"rank-died/error"}, json.dumps(findings, indent=1))
        died = find(findings, "rank-died")
        self.assertEqual(died["ranks"], [1], died)
        self.assertEqual(died["step"], CRASH_STEP, died)
        others = [f for f in findings if f["kind"] == "rank-died" and 0 in f["ranks"]]
        for f in others:
            self.assertEqual(f["severity"], "info", f)
        trace = [json.loads(line)
                 for line in read_trace(os.path.join(self.path(name), "rank-00001.jsonl"))]
        return died, trace, err

    def test_a_segfault_in_an_ops_backward_is_named_with_its_step_phase_and_address(self):
        died, trace, err = self.crashed_run("segv", {"CRASH": "segv", "FAULTHANDLER": "1"})
        self.assertEqual(died["evidence"]["died_by"], "SIGSEGV", died)
        self.assertEqual(died["evidence"]["fault"]["origin"], "fault", died)
        self.assertEqual(died["evidence"]["fault"]["addr"], "0x0", died)
        self.assertEqual(died["evidence"]["stopped_in"]["phase"], "backward", died)
        self.assertIn("rank 1 crashed on SIGSEGV in backward of step 6", died["summary"])
        self.assertIn("native code", died["hint"])
        end = trace[-1]
        self.assertEqual((end["type"], end["reason"], end["status"], end["signal"]),
                         ("end", "signal", 139, "SIGSEGV"), end)
        # The stop flag's all_reduce of the crash step, held by light mode until the step's
        # end, was written by the handler.
        flags = [r for r in trace if r["type"] == "coll" and r["step"] == CRASH_STEP]
        self.assertTrue(flags, trace[-5:])
        # faulthandler, on before the probes, still ran after them: its traceback names the
        # job's line.
        self.assertIn("Fatal Python error: Segmentation fault", err)
        self.assertIn("native_crash.py", err)

    def test_an_abort_in_an_ops_forward_is_an_abort_in_native_code(self):
        died, trace, _ = self.crashed_run("abort", {"CRASH": "abort"})
        self.assertEqual(died["evidence"]["died_by"], "SIGABRT", died)
        self.assertEqual(died["evidence"]["fault"]["origin"], "raise", died)
        self.assertEqual(died["evidence"]["stopped_in"]["phase"], "forward", died)
        self.assertIn("rank 1 aborted (SIGABRT: abort() in native code) in forward of step 6",
                      died["summary"])
        self.assertIn("called abort()", died["hint"])
        end = trace[-1]
        self.assertEqual((end["reason"], end["status"], end["signal"]),
                         ("signal", 134, "SIGABRT"), end)


if __name__ == "__main__":
    unittest.main()
