"""A data-parallel loop written by hand, as the PyTorch distributed tutorial writes one (Gloo,
`dsdiag run --nproc 3`): each step all-reduces the gradients as one flat tensor, then the
step's metrics, a tensor of the same size. Rank 1 skips the metrics all_reduce at step 5 (a
rank-local `if` around logging), so from there each of its all_reduces meets the others'
other one: same op, same size, nothing fails until the others wait in their last one."""
import torch
import torch.distributed as dist

STEPS = 8


def train_step(model, opt, step, rank, world):
    opt.zero_grad()
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    dist.all_reduce(grads)  # the gradients
    offset = 0
    for p in model.parameters():
        p.grad.copy_(grads[offset:offset + p.numel()].view_as(p) / world)
        offset += p.numel()
    metrics = torch.zeros(grads.numel())
    metrics[0] = loss.item()
    if not (rank == 1 and step == 5):
        dist.all_reduce(metrics)  # the metrics
    opt.step()


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1, bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    for step in range(STEPS):
        train_step(model, opt, step, rank, world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
