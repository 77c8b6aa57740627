"""Which optimizers make up one training step, and where a step ends when the loop steps
several per iteration (a GAN's discriminator and generator, an encoder and a decoder with
optimizers of their own).

A step is one iteration of the training loop: each optimizer the loop steps per
iteration steps once in it, and the step ends right after the optimizer step that
completes that set (the members). The members are learned from the loop itself:
  - until the first step has ended, every optimizer alive is a member (a GAN builds both
    before its loop): the first iteration ends at its last optimizer's step;
  - after that, an optimizer is a member once it has stepped, until it misses
    DROP_AFTER steps in a row (a stage of training that ended; it is a member again when
    it steps again) or the job frees it. One built and never stepped is no member.
An iteration in which not every member steps (a WGAN's critic-only iterations, or the
first one while an optimizer that never steps is still counted) ends at the next sign of
a new iteration:
  - the training loader's next batch (dsdiag.torch.data): the step ends before the fetch;
  - an optimizer that already stepped in the step stepping again: the step ends just before
    that second step (without a loader the loop gives no earlier sign, so the new
    iteration's forward and backward fall in the step that ends there);
  - the end of the trace.
A GradScaler step that skipped optimizer.step() (non-finite gradients) counts as that
optimizer's step. With one optimizer all of this is what it always was: each
optimizer.step() ends the step.
"""

import weakref

DROP_AFTER = 16  # steps in a row without it: a member no more (a WGAN's generator steps every 5)


class _Member(object):
    __slots__ = ("stepped", "missed")

    def __init__(self):
        self.stepped = False  # it ever stepped
        self.missed = 0  # steps in a row that ended without it


class Iteration(object):
    def __init__(self):
        self.optimizers = weakref.WeakKeyDictionary()  # every optimizer built -> _Member
        self.stepped = set()  # id() of the optimizers that stepped in the open step
        self.first = True  # no step has ended yet: every optimizer alive is a member

    def built(self, optimizer):
        try:
            self.optimizers[optimizer] = _Member()
        except TypeError:  # not weakly referenceable: never a member until it steps
            pass

    def steps_again(self, optimizer):
        """`optimizer` already stepped in the open step: the step ends before it steps."""
        return id(optimizer) in self.stepped

    def stepped_now(self, optimizer):
        """Records the step of `optimizer`; returns whether it completes the members."""
        self.stepped.add(id(optimizer))
        member = self.optimizers.get(optimizer)
        if member is None:
            member = _Member()
            try:
                self.optimizers[optimizer] = member
            except TypeError:
                pass
        member.stepped, member.missed = True, 0
        return self.complete()

    def any_stepped(self):
        return bool(self.stepped)

    def complete(self):
        for optimizer, member in list(self.optimizers.items()):
            if id(optimizer) not in self.stepped and self._member(member):
                return False
        return True

    def _member(self, member):
        if not member.stepped:
            return self.first
        return member.missed < DROP_AFTER

    def ended(self):
        """The open step ended (whatever ended it): the members that missed it count it."""
        for optimizer, member in list(self.optimizers.items()):
            if member.stepped and id(optimizer) not in self.stepped:
                member.missed += 1
        self.stepped.clear()
        self.first = False


ITERATION = Iteration()
