"""instrument() then uninstrument() in one process of one rank (Gloo, a file store), as a
job that calls dsdiag.torch itself would: run with PYTHONPATH holding the dsdiag package
and argv[1] the run directory. Prints one JSON object with what the test checks:
  patched      the torch attributes instrument() replaced (by name)
  restored     whether every one of them is torch's own again after uninstrument()
  areas        the hooked areas installed
  on_after     the probes after uninstrument() (False)
  sgd_step     SGD.step is no longer dsdiag's (it is wrapped per optimizer class, after
               torch's own profiling wrapper, which stays)
  excepthook_dsdiag  sys.excepthook is dsdiag's after uninstrument() (False): torch 2.x's
               init_process_group puts its own over it (which chains to the one it found:
               dsdiag's, which does nothing once the probes are off), and that one stays."""
import json
import os
import signal
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

run_dir = sys.argv[1]


def hooked():
    """Every attribute some area replaces, by a name for the report."""
    import torch.nn.utils.clip_grad as clip_grad

    found = {
        "dist.init_process_group": dist.init_process_group,
        "dist.new_group": dist.new_group,
        "dist.all_reduce": dist.all_reduce,
        "distributed_c10d.all_reduce": dist.distributed_c10d.all_reduce,
        "dist.all_to_all_single": dist.all_to_all_single,
        "dist.isend": dist.isend,
        "dist.batch_isend_irecv": dist.batch_isend_irecv,
        "Work.wait": vars(dist.distributed_c10d.Work).get("wait"),
        "DDP.__init__": DDP.__init__,
        "DDP.forward": DDP.forward,
        "DDP.register_comm_hook": DDP.register_comm_hook,
        "Optimizer.__init__": torch.optim.Optimizer.__init__,
        "Tensor.backward": torch.Tensor.backward,
        "DataLoader.__init__": DataLoader.__init__,
        "DataLoader.__iter__": DataLoader.__iter__,
        "DistributedSampler.__iter__": DistributedSampler.__iter__,
        "torch.save": torch.save,
        "torch.serialization.load": torch.serialization.load,
        "Module.load_state_dict": torch.nn.Module.load_state_dict,
        "clip_grad.clip_grad_norm_": clip_grad.clip_grad_norm_,
        "sys.excepthook": sys.excepthook,
        "signal.signal": signal.signal,
        "GradScaler.scale": vars(getattr(torch.amp, "GradScaler", object)).get("scale"),
        "SGD.step": vars(torch.optim.SGD).get("step"),
    }
    return found


torch_own = hooked()

import dsdiag.torch  # noqa: E402  (after torch's own attributes are noted)
from dsdiag.torch import _install  # noqa: E402
from dsdiag.torch._runtime import RUNTIME  # noqa: E402

dsdiag.torch.instrument(run_dir=run_dir, probes="light", timeout=60)
dist.init_process_group("gloo", init_method="file://" + os.path.join(run_dir, "store"), rank=0,
                        world_size=1)
ddp = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    ddp(torch.randn(8, 4)).sum().backward()
    opt.step()
instrumented = hooked()

dsdiag.torch.uninstrument()
after = hooked()
# A step after uninstrument(): torch's own code only, no record.
model = torch.nn.Linear(4, 1)
torch.optim.SGD(model.parameters(), lr=0.1).step()
dist.destroy_process_group()
print(json.dumps({
    "patched": sorted(k for k in torch_own if instrumented[k] is not torch_own[k]),
    "restored": sorted(k for k in torch_own if after[k] is torch_own[k]),
    "areas": [m.__name__.rsplit(".", 1)[1] for m in _install.INSTALLED.areas],
    "areas_were": list(_install.AREAS),
    "on_after": RUNTIME.on,
    "excepthook_dsdiag": getattr(sys.excepthook, "__module__", "").startswith("dsdiag"),
    "sgd_step": not getattr(vars(torch.optim.SGD).get("step"), "_dsdiag_wrapped", False),
}))
