"""The device path (python/dsdiag/torch/_device.py, _device_time.py), forced on CPU tensors with
DSDIAG_DEVICE_PATH=force: the code a CUDA job runs — gradient fingerprints reduced where the
gradients live, in DDP's hook per bucket, copied to the host without a wait and read at the
step's end; the loss and GradScaler's values the same way; the phases' and buckets' device
times, from pooled events, a step late — driven on the CPU lanes.

Against the host path (the same job without the setting): a planted grad-desync is named as
there, a clean job is clean, the losses and the scaler records are the same, and the probes
wait at most once per step however many buckets a step has (a shim counts dsdiag's waits
and its calls of item / tolist / cpu / synchronize: jobs/device_path.py)."""
import json
import os
import unittest

from dsdiag_jobs import TORCH, JobTestCase, compare, find, read_trace, run_job, serious

FORCE = {"DSDIAG_DEVICE_PATH": "force"}


def records(run_dir, rank, kind):
    return [r for r in map(json.loads, read_trace(os.path.join(run_dir, "rank-%05d.jsonl" % rank)))
            if r.get("type") == kind]


def untimed(recs):
    return [{k: v for k, v in r.items() if k != "ts"} for r in recs]


def per_rank(out, prefix):
    """{rank: [ints]} from the job's "<prefix> <rank> <n> <n> ..." lines."""
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == prefix:
            found[int(parts[1])] = [int(p) for p in parts[2:]]
    return found


class DevicePath(JobTestCase):
    def job(self, name, fault="clean", env=None, job="device_path.py"):
        status, out, err = run_job(self.path(name), job, env=dict(env or {}, FAULT=fault))
        self.assertEqual(status, 0, err)
        return out

    def test_a_clean_job_is_clean_with_device_fingerprints_and_the_host_paths_losses(self):
        forced = self.job("forced", env=FORCE)
        host = self.job("host")
        self.assertEqual(serious(compare(self.path("forced"))), set())
        for rank in (0, 1):
            fps = [r for r in records(self.path("forced"), rank, "fp") if r["what"] == "grad"]
            self.assertTrue(fps)
            self.assertTrue(all(r.get("fn") == "dsum" for r in fps), fps[:2])
            after = [r for r in fps if r["why"] == "after-sync"]
            self.assertEqual(len(after), 12)
            self.assertTrue(all(all(h != "0" * 16 for h in r["h"]) for r in after))
            host_fps = [r for r in records(self.path("host"), rank, "fp") if r["what"] == "grad"]
            self.assertTrue(host_fps and not any("fn" in r for r in host_fps))
            # The step records' losses: the same on both paths, and the job's own.
            losses = [r["loss"] for r in records(self.path("forced"), rank, "step")]
            self.assertEqual(losses, [r["loss"] for r in records(self.path("host"), rank, "step")])
            own = [float(l.split()[3]) for l in forced.splitlines()
                   if l.startswith("loss %d " % rank)]
            self.assertEqual(len(losses), len(own))
            for recorded, printed in zip(losses, own):  # the record keeps float32's digits
                self.assertAlmostEqual(recorded, printed, delta=1e-6 * abs(printed))
        self.assertEqual(sorted(l for l in forced.splitlines() if l.startswith("loss")),
                         sorted(l for l in host.splitlines() if l.startswith("loss")))

    def test_device_times_of_each_step_come_a_step_late_and_equal_the_host_times_on_cpu(self):
        self.job("timed", env=FORCE)
        self.job("untimed")
        for rank in (0, 1):
            steps = records(self.path("timed"), rank, "step")
            self.assertFalse(any("dev" in r for r in records(self.path("untimed"), rank, "step")))
            self.assertNotIn("dev", steps[0])  # nothing earlier to resolve yet
            for before, step in zip(steps, steps[1:]):
                dev = step["dev"]
                self.assertEqual(dev["step"], before["step"])  # the step before, resolved now
                # On the CPU the events are host clocks around the same spans as the host's
                # (a GIL handoff between the two can fall in one and not the other).
                for name in ("forward", "backward", "optimizer"):
                    host = before["phases"][name]
                    self.assertAlmostEqual(dev[name], host, delta=0.25 * host + 2e6,
                                           msg="%s: %s %s" % (name, dev, before["phases"]))
                # The buckets' allreduces, from each bucket ready to its completion: on the
                # CPU about the host's issue-to-completion time (its events just after).
                self.assertGreater(dev["coll"], 0)
                dur = before["coll"]["dur"]
                self.assertAlmostEqual(dev["coll"], dur, delta=0.25 * dur + 2e6,
                                       msg="coll: %s %s" % (dev, before["coll"]))

    def test_a_gradient_changed_after_the_sync_is_grad_desync_on_the_device_path(self):
        self.job("desync", "desync", env=FORCE)
        findings = compare(self.path("desync"))
        f = find(findings, "grad-desync")
        self.assertIsNotNone(f, findings)
        self.assertEqual((f["ranks"], f["step"], f["subject"]), ([0], 5, "0.weight"))
        self.assertEqual(f["evidence"].get("basis"), "changed after the sync", f)

    def test_the_device_path_waits_at_most_once_per_step_whatever_the_buckets(self):
        out = self.job("count", env=dict(FORCE, COUNT_SYNCS="1"))
        colls = records(self.path("count"), 0, "coll")
        buckets = len({r["tag"] for r in colls if r["tag"].startswith("ddp-bucket")})
        self.assertGreaterEqual(buckets, 4)  # bucket_cap_mb: several buckets per step
        waits, calls = per_rank(out, "syncs"), per_rank(out, "calls")
        for rank in (0, 1):
            # Every step reads its fingerprints once; step 9 also fingerprints the
            # parameters (light mode: every 10 steps), step 10 before its optimizer step.
            self.assertEqual(waits[rank][:9], [1] * 9, waits)
            self.assertLessEqual(max(waits[rank]), 2, waits)
            # What waits on the host, from dsdiag's code: a handful per step, not per bucket.
            self.assertLess(max(calls[rank]), buckets, calls)


@unittest.skipUnless(TORCH >= (2, 0), "the CPU GradScaler (torch.amp) is torch 2.x's")
class DevicePathScaler(JobTestCase):
    def test_the_scaler_records_and_losses_are_the_host_paths(self):
        runs = {}
        for name, env in (("forced", FORCE), ("host", {})):
            status, out, err = run_job(self.path(name), "scaler_amp.py",
                                       env=dict(env, FAULT="overflow", STEPS="12",
                                                OVERFLOW_STEPS="5"))
            self.assertEqual(status, 0, err)
            runs[name] = out
        for rank in (0, 1):
            forced = records(self.path("forced"), rank, "scaler")
            host = records(self.path("host"), rank, "scaler")
            self.assertEqual(untimed(forced), untimed(host))
            self.assertTrue(any(r["inf_global"] for r in forced))
            self.assertEqual([r.get("loss") for r in records(self.path("forced"), rank, "step")],
                             [r.get("loss") for r in records(self.path("host"), rank, "step")])
        self.assertEqual(serious(compare(self.path("forced"))), serious(compare(self.path("host"))))


if __name__ == "__main__":
    unittest.main()
