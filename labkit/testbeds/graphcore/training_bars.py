"""The progress bars both MNIST backends show while training (tqdm through :mod:`labkit.progress`)."""

from __future__ import annotations

from labkit.params import Config
from labkit.progress import bar, style

__all__ = ["progress_callbacks"]


def progress_callbacks(config: Config, steps_per_epoch: int, say):
    """Progress for both backends: in JupyterLab an epochs bar over a steps bar; as text (papermill,
    a terminal) one bar per epoch that stays, so the executed notebook reads like a log."""
    nested = style() == "widget"
    epochs_bar = bar(total=config.epochs, desc="Epochs", unit="epoch") if nested else None
    state = {"steps": None}

    def on_step(record) -> None:
        if state["steps"] is None:
            state["steps"] = bar(total=steps_per_epoch, desc="Epoch {}/{}".format(record.epoch, config.epochs),
                                 leave=not nested, unit="step")
        state["steps"].set_postfix_str("loss {:.4f} | accuracy {:.2f}%".format(record.loss, record.accuracy), refresh=False)
        state["steps"].update(1)

    def on_epoch(epoch: int, seconds: float) -> None:
        if state["steps"] is not None:
            state["steps"].close()
            state["steps"] = None
        if epochs_bar is not None:
            epochs_bar.update(1)
        say("Epoch {}/{}: {:.1f} s{}".format(epoch, config.epochs, seconds, " (includes warm-up)" if epoch == 1 else ""))

    def close() -> None:
        if state["steps"] is not None:
            state["steps"].close()
        if epochs_bar is not None:
            epochs_bar.close()

    return on_step, on_epoch, close
