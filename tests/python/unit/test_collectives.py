"""collectives, in-process: each collective the job issues is one op the core is told of,
with its group, op, dtype, element count and bytes, and the job's line as its call site;
the collectives inside dsdiag's own hooks are not told twice."""
import unittest

from one_rank import OneRankTestCase, RUNTIME

import torch
import torch.distributed as dist


class Collectives(OneRankTestCase):
    def test_an_all_reduce_is_one_op_with_its_size_and_call_site(self):
        t = torch.ones(10, dtype=torch.float32)
        dist.all_reduce(t)
        [op] = self.args("collective")
        self.assertEqual((op["pg"], op["op"], op["dtype"], op["count"], op["bytes"]),
                         (0, "allreduce", "f32", 10, 40))
        [site] = self.args("site")
        self.assertEqual(op["site"], site["id"])
        self.assertTrue(site["file"].endswith("test_collectives.py"), site)
        [written] = self.args("op_written")
        self.assertEqual((written["seq"], written["failed"]), (op["seq"], False))

    def test_ops_of_one_group_are_numbered_in_order(self):
        t = torch.zeros(4, dtype=torch.int64)
        dist.broadcast(t, src=0)
        dist.all_reduce(t)
        dist.barrier()
        ops = self.args("collective")
        self.assertEqual([o["op"] for o in ops], ["broadcast", "allreduce", "barrier"])
        seqs = [o["seq"] for o in ops]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + 3)))

    def test_a_new_group_gets_the_next_number(self):
        group = dist.new_group([0])
        dist.all_reduce(torch.ones(2), group=group)
        [op] = self.args("collective")
        self.assertEqual(op["pg"], RUNTIME.group_id(group))
        self.assertGreater(op["pg"], 0)

    def test_an_async_op_is_written_once_waited_on(self):
        work = dist.all_reduce(torch.ones(3), async_op=True)
        work.wait()
        RUNTIME.write_pending_ops()
        self.assertEqual(len(self.args("collective")), 1)
        self.assertEqual(len(self.args("op_written")), 1)


if __name__ == "__main__":
    unittest.main()
