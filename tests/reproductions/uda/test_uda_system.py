"""UDA's system options beyond the objective: the exponential moving average of the weights (Appendix E.2, 0.9999),
which the test metrics use when it is on; entropy minimisation on the unlabelled originals (Appendix E.3, full
ImageNet); the step schedule decaying by 10 (Appendix E.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from harness.errors import HarnessError
from reproductions.uda.data import ImageUDADataModule
from reproductions.uda.model import mean_entropy, uda_objective
from reproductions.uda.system import UDASystem, schedule_factor


@pytest.fixture(scope="module")
def digits_idx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tasks.fashion_mnist.data import write_digits_idx

    root = tmp_path_factory.mktemp("digits")
    write_digits_idx(root)
    return root


class Recorder(pl.Callback):
    """The raw weights and batch-norm statistics after every optimizer step."""

    def __init__(self) -> None:
        self.states: list[dict[str, torch.Tensor]] = []

    def on_train_batch_end(self, trainer: pl.Trainer, module: pl.LightningModule, *args: object) -> None:
        self.states.append({k: v.detach().clone() for k, v in module.model.state_dict().items()})


def _fit(data_root: Path, ema_decay: float) -> tuple[UDASystem, Recorder, float]:
    data = ImageUDADataModule("digits", str(data_root), per_class=2, unlabelled_size=64, batch_size=4,
                              unlabelled_ratio=2, steps_per_epoch=3, pool=2, test_size=40, seed=0)  # fmt: skip
    torch.manual_seed(0)
    system = UDASystem("uda-budget-wrn-10-1", lr=0.1, ema_decay=ema_decay)
    recorder = Recorder()
    trainer = pl.Trainer(max_steps=3, accelerator="cpu", logger=False, enable_checkpointing=False, callbacks=[recorder],
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0)  # fmt: skip
    trainer.fit(system, datamodule=data)
    (result,) = trainer.test(system, datamodule=data, verbose=False)
    return system, recorder, result["test/error"]


def test_the_moving_average_replaces_the_weights_and_is_what_is_tested(digits_idx: Path) -> None:
    system, recorder, error = _fit(digits_idx, ema_decay=0.5)
    assert len(recorder.states) == 3
    expected = dict(recorder.states[0])  # the average starts as the weights after the first step
    for state in recorder.states[1:]:
        expected = {k: 0.5 * expected[k] + 0.5 * v if v.is_floating_point() else v for k, v in state.items()}
    final = system.model.state_dict()
    for name, value in expected.items():  # every weight and the batch-norm statistics: no ramp on the decay
        assert torch.allclose(final[name].float(), value.float(), atol=1e-6), name
    conv = next(k for k in final if k.endswith("weight") and final[k].ndim == 4)
    bn = next(k for k in final if k.endswith("running_mean"))
    assert not torch.allclose(final[conv], recorder.states[-1][conv])  # not the last raw weights
    assert not torch.allclose(final[bn], recorder.states[-1][bn])
    plain, plain_recorder, _ = _fit(digits_idx, ema_decay=0.0)
    assert torch.equal(plain.model.state_dict()[conv], plain_recorder.states[-1][conv])  # off: the trained weights
    assert 0.0 <= error <= 100.0


def test_a_decay_outside_zero_one_is_refused() -> None:
    with pytest.raises(HarnessError, match="ema_decay"):
        UDASystem("uda-budget-wrn-10-1", ema_decay=1.0)


def test_entropy_minimisation_adds_the_originals_mean_entropy() -> None:
    uniform, peaked = torch.zeros(2, 4), torch.tensor([[9.0, 0.0, 0.0, 0.0]] * 2)
    assert mean_entropy(uniform).item() == pytest.approx(torch.log(torch.tensor(4.0)).item())
    assert mean_entropy(peaked).item() < 0.01
    labelled, labels = torch.randn(3, 4), torch.tensor([0, 1, 2])
    original = torch.randn(5, 4, requires_grad=True)
    augmented = torch.randn(5, 4)
    without = uda_objective(labelled, labels, original, augmented, weight=1.0)
    with_entropy = uda_objective(labelled, labels, original, augmented, weight=1.0, entropy_weight=0.5)
    assert with_entropy.loss.item() == pytest.approx(without.loss.item() + 0.5 * mean_entropy(original).item())
    with_entropy.loss.backward()
    assert original.grad is not None and original.grad.abs().sum() > 0  # the entropy term's gradient reaches them


def test_step_schedule_divides_by_ten_at_each_milestone() -> None:
    milestones = (0.2, 0.4, 0.6, 0.8)
    factors = [schedule_factor("step", p, 0.05, milestones) for p in (0.025, 0.1, 0.3, 0.5, 0.7, 0.9)]
    assert factors == pytest.approx([0.5, 1.0, 0.1, 0.01, 1e-3, 1e-4])
