"""Pipeline-parallel training on Ray: one actor per stage, and a driver that chains them.

Each `StageRunner` holds one stage, its optimizer and both ends of its boundaries; `StageWorker` is the same
class as a Ray actor. On Ray the driver passes each worker's output ObjectRef straight into the next worker's
call; a step splits the batch into micro-batches and submits every forward chain, then every backward chain
(GPipe), so neighbouring stages work on different micro-batches at the same time. Every message between stages
is a `wire.pack` byte string, and each worker counts the bytes it sends to a neighbouring stage. The driver's
own input (token ids to the first stage, targets to the last) is data loading, the same for every mode, and is
not counted. With `on_ray=False` the same runners are called in this process, message for message (what the
fast tests check in seconds).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import numpy as np
import ray
import torch

from training.methods.protocol.model import ModelConfig, Stage
from training.methods.protocol.recipe import Recipe
from training.methods.protocol.wire import BoundaryCodec, pack, unpack


def ensure_ray() -> bool:
    """Join RAY_ADDRESS when set, else start a small local Ray on 127.0.0.1; True when this call started it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    address = os.environ.get("RAY_ADDRESS") or None
    kwargs = dict(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    if address is None:
        kwargs.update(num_cpus=2, _node_ip_address="127.0.0.1")
    ray.init(address=address, **kwargs)
    return address is None


class StageRunner:
    """One pipeline stage: forward, backward and the optimizer step of its parameters."""

    def __init__(self, index: int):
        torch.set_num_threads(1)
        self.index = index

    def build(self, config: ModelConfig, mode: str, recipe: Recipe) -> int:
        """A fresh stage (weights from the config's seed), its optimizer and schedule (`recipe`) and byte
        counters; returns its parameter count."""
        self.stage = Stage(config, mode, self.index)
        self.codec = BoundaryCodec(self.stage.subspace)
        self.opt, self.schedule = recipe.optimizer(self.stage.named_parameters())
        self.sent: dict[int, torch.Tensor] = {}  # micro-batch -> tensor sent forward (still on the graph)
        self.leaves: dict[int, torch.Tensor] = {}  # micro-batch -> leaf rebuilt from the received message
        self.bytes = {"forward": 0, "backward": 0}
        return sum(p.numel() for p in self.stage.parameters())

    def _input(self, payload: bytes, micro: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        if micro == 0:  # a new step: gradients accumulate over its micro-batches
            self.opt.zero_grad(set_to_none=True)
        if self.index == 0:
            tokens = unpack(payload)[0]
            return tokens, tokens
        self.leaves[micro], x, tokens = self.codec.decode(payload)
        return x, tokens

    def forward(self, payload: bytes, micro: int = 0) -> bytes:
        x, tokens = self._input(payload, micro)
        self.sent[micro], message = self.codec.encode(self.stage(x), tokens)
        self.bytes["forward"] += len(message)
        return message

    def _grad_message(self, micro: int) -> bytes | None:
        if self.index == 0:
            return None
        message = pack([self.leaves.pop(micro).grad])
        self.bytes["backward"] += len(message)
        return message

    def forward_backward(self, payload: bytes, targets: bytes, micro: int = 0,
                         scale: float = 1.0) -> tuple[float, bytes | None]:
        """The last stage: loss (scaled by the micro-batch's share), its backward, the gradient message back."""
        x, _ = self._input(payload, micro)
        logits = self.stage(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), unpack(targets)[0].reshape(-1))
        (loss * scale).backward()
        return loss.item(), self._grad_message(micro)

    def backward(self, grad: bytes, micro: int = 0) -> bytes | None:
        self.sent.pop(micro).backward(unpack(grad)[0])
        return self._grad_message(micro)

    def update(self) -> None:
        """The optimizer step, once every micro-batch of the step has been through backward."""
        self.opt.step()
        self.schedule.step()

    def gradients(self) -> dict[str, np.ndarray]:
        return {n: p.grad.numpy().copy() for n, p in self.stage.named_parameters() if p.grad is not None}

    def state(self) -> dict[str, torch.Tensor]:
        return {n: t.clone() for n, t in self.stage.state_dict().items()}

    def traffic(self) -> dict[str, int]:
        return dict(self.bytes)

    def cpu_seconds(self) -> float:
        """CPU time this worker process has used so far (for timing the experiment apart from machine load)."""
        return time.process_time()


StageWorker = ray.remote(num_cpus=0.25)(StageRunner)


@dataclass
class Traffic:
    """Bytes sent between stages over a run, by direction."""

    forward: int
    backward: int

    @property
    def total(self) -> int:
        return self.forward + self.backward


class Pipeline:
    """The driver: one stage worker per stage (Ray actors, or with `on_ray=False` runners in this process),
    rebuilt in place for each model so the processes are reused."""

    def __init__(self, stages: int, micro_batches: int = 2, on_ray: bool = True):
        self.on_ray = on_ray
        self.workers = [StageWorker.remote(i) if on_ray else StageRunner(i) for i in range(stages)]
        self.micro = micro_batches

    def _call(self, worker, method: str, *args, returns: int = 1):
        """Submit (Ray: an ObjectRef, or `returns` of them) or run (in process: the value) one worker method."""
        if not self.on_ray:
            return getattr(worker, method)(*args)
        remote = getattr(worker, method)
        return (remote.options(num_returns=returns) if returns > 1 else remote).remote(*args)

    def _get(self, refs):
        return ray.get(refs) if self.on_ray else refs

    def _all(self, method: str, *args) -> list:
        return self._get([self._call(w, method, *args) for w in self.workers])

    def build(self, config: ModelConfig, mode: str, recipe: Recipe | None = None) -> int:
        """Fresh stages of `mode` on every worker, trained with `recipe` (default: `Recipe()`)."""
        if config.stages != len(self.workers):
            raise ValueError(f"config has {config.stages} stages, the pipeline {len(self.workers)} workers")
        return sum(self._all("build", config, mode, recipe or Recipe()))

    def step(self, tokens: torch.Tensor, targets: torch.Tensor, update: bool = True) -> float:
        """One training step (GPipe schedule: every micro-batch forward, then every one backward, then the
        optimizer); with update=False the accumulated gradients stay for inspection. Returns the batch loss."""
        xs, ys = tokens.chunk(self.micro), targets.chunk(self.micro)
        losses, grads = [], []
        for m, (x, y) in enumerate(zip(xs, ys, strict=True)):
            message = pack([x])
            for w in self.workers[:-1]:
                message = self._call(w, "forward", message, m)
            loss, grad = self._call(self.workers[-1], "forward_backward", message, pack([y]), m,
                                    len(x) / len(tokens), returns=2)
            losses.append(loss)
            grads.append(grad)
        done = []
        for m, grad in enumerate(grads):
            for w in reversed(self.workers[:-1]):
                grad = self._call(w, "backward", grad, m)
            done.append(grad)
        self._get(done)
        if update:
            self._all("update")
        return float(sum(loss * len(x) for loss, x in zip(self._get(losses), xs, strict=True)) / len(tokens))

    def _merged(self, method: str) -> dict:
        return {f"stages.{i}.{name}": value for i, part in enumerate(self._all(method)) for name, value in part.items()}

    def gradients(self) -> dict[str, np.ndarray]:
        """Parameter gradients keyed as in `StagedModel.named_parameters()`."""
        return self._merged("gradients")

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Weights keyed as in `StagedModel.state_dict()`."""
        return self._merged("state")

    def traffic(self) -> Traffic:
        counts = self._all("traffic")
        return Traffic(sum(c["forward"] for c in counts), sum(c["backward"] for c in counts))

    def cpu_seconds(self) -> float:
        """CPU seconds of the stage workers (in process: of this whole process)."""
        seconds = self._all("cpu_seconds")
        return float(sum(seconds) if self.on_ray else seconds[0])

    def close(self) -> None:
        if self.on_ray:
            for w in self.workers:
                ray.kill(w)
