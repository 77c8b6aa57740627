"""device time's collectives, in-process: where a backend's future completes once the work
is queued (NCCL), a bucket's op stays pending in the flight recorder until its span's end
event is seen done — by complete_ops (each step end, before a dump, before the watchdog
times an entry out) or by take_earlier resolving its step — each op marked once; when device
time fails, every op still waiting is marked so that none stays pending for the watchdog.
HostEvents on a HostStream of the test's own stand in for CUDA's: their work is done once the
test says the stream caught up."""
import unittest

import one_rank  # noqa: F401  (the package importable, the fake core in place)

import torch

from dsdiag.torch import _device, _device_time


class Op(object):
    """The core's CollectiveOp as _device_time sees it."""

    def __init__(self):
        self.device_completed = 0

    def mark_device_completed(self):
        self.device_completed += 1


class Lagging(object):
    """A device that runs behind the host: events complete when caught_up() says so."""

    def __init__(self):
        self.stream = _device.HostStream()
        self.timer = _device_time.DeviceTime(torch.device("cpu"))
        self.timer._event = self._event

    def _event(self):
        return _device.HostEvent(enable_timing=True, stream=self.stream)

    def caught_up(self):
        with self.stream.lock:
            self.stream.done = self.stream.recorded

    def bucket(self, step, op):
        span = self.timer.begin(step, _device_time.COLL)
        self.timer.end(span, op)
        return span


class QueuedOps(unittest.TestCase):
    def test_an_op_completes_only_once_its_end_event_is_done(self):
        device = Lagging()
        op = Op()
        device.bucket(0, op)
        device.timer.complete_ops()
        self.assertEqual(op.device_completed, 0)  # still queued on the device
        device.caught_up()
        device.timer.complete_ops()
        device.timer.complete_ops()
        self.assertEqual(op.device_completed, 1)  # once, however often it is polled

    def test_ops_of_a_lagging_device_complete_in_the_order_it_reaches_them(self):
        device = Lagging()
        first, second = Op(), Op()
        device.bucket(0, first)
        device.caught_up()
        device.bucket(0, second)
        device.timer.complete_ops()
        self.assertEqual((first.device_completed, second.device_completed), (1, 0))

    def test_resolving_a_step_completes_its_ops(self):
        device = Lagging()
        op = Op()
        device.bucket(0, op)
        self.assertIsNone(device.timer.take_earlier(1))  # not done: nothing resolved
        self.assertEqual(op.device_completed, 0)
        device.caught_up()
        step, times = device.timer.take_earlier(1)
        self.assertEqual(step, 0)
        self.assertIn(_device_time.COLL, times)
        self.assertEqual(op.device_completed, 1)
        device.timer.complete_ops()
        self.assertEqual(op.device_completed, 1)  # its events went back to the pool: not again

    def test_failing_device_time_releases_every_waiting_op(self):
        device = Lagging()
        ops = [Op(), Op()]
        for op in ops:
            device.bucket(0, op)
        device.timer.release_ops()
        self.assertEqual([op.device_completed for op in ops], [1, 1])

    def test_a_span_dropped_unresolved_releases_its_op(self):
        device = Lagging()
        op = Op()
        device.bucket(0, op)
        for _ in range(_device_time._MAX_OPEN):  # a loop whose steps never end: none resolved
            device.bucket(0, None)
        self.assertEqual(op.device_completed, 1)

    def test_a_span_without_an_op_is_left_to_the_step_times(self):
        device = Lagging()
        span = device.timer.begin(0, "backward")
        device.timer.end(span)
        device.caught_up()
        device.timer.complete_ops()
        self.assertIsNone(span.op)


if __name__ == "__main__":
    unittest.main()
