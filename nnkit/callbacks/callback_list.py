"""``CallbackList``: calls a hook on every callback, in order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nnkit.callbacks.callback import Callback
from nnkit.callbacks.history import History
from nnkit.callbacks.progbar_logger import ProgbarLogger

__all__ = ["CallbackList"]


class CallbackList(Callback):
    """A sequence of callbacks driven as one: each hook is called on each, in order.

    ``History`` and (unless ``verbose=0``) ``ProgbarLogger`` are appended when the list
    does not hold one already, so they see the logs after every user callback (a
    ``learning_rate`` entry added by :class:`ReduceLROnPlateau` is recorded).

    Args:
        callbacks: the user's callbacks (or None).
        add_history: append a :class:`History` if none is given.
        add_progbar: append a :class:`ProgbarLogger` if none is given.
        model: the model, passed to every callback's ``set_model``.
        **params: the loop's parameters (``verbose``, ``epochs``, ``steps``).

    Raises:
        TypeError: if an item is not a :class:`Callback`.

    Example:
        >>> from nnkit.callbacks import EarlyStopping
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> cbs = CallbackList([EarlyStopping(monitor="loss")], add_history=True, model=model,
        ...                    epochs=5)
        >>> [type(cb).__name__ for cb in cbs.callbacks]
        ['EarlyStopping', 'History']
        >>> cbs.on_train_begin()
        >>> cbs.on_epoch_begin(0)
        >>> cbs.on_epoch_end(0, {"loss": 0.5})
        >>> cbs.history.history
        {'loss': [0.5]}
    """

    def __init__(
        self,
        callbacks: Iterable[Callback] | None = None,
        *,
        add_history: bool = False,
        add_progbar: bool = False,
        model: Any = None,
        **params: Any,
    ) -> None:
        super().__init__()
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(
                    f"callbacks must be nnkit.callbacks.Callback instances; "
                    f"received {type(cb).__name__}"
                )
        self.history = next((cb for cb in self.callbacks if isinstance(cb, History)), None)
        if self.history is None and add_history:
            self.history = History()
            self.callbacks.append(self.history)
        if add_progbar and not any(isinstance(cb, ProgbarLogger) for cb in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if model is not None:
            self.set_model(model)
        self.set_params(params)
        self._order = self._ordered()

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self) -> int:
        return len(self.callbacks)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict[str, Any]) -> None:
        super().set_params(params)
        for cb in self.callbacks:
            cb.set_params(params)

    def keyed(self) -> dict[str, Callback]:
        """The callbacks whose state a checkpoint keeps, by a stable key.

        The key is the callback's ``state_key`` attribute if it has one (e.g.
        ``'CSVLogger:history.csv'``, ``'EarlyStopping:val_loss'``), else its class
        name; the second, third... callback with the same key get ``#2``, ``#3``. So a
        saved state finds its callback again when callbacks are added, removed or
        reordered between runs. Progress bars and checkpointing callbacks themselves
        (``BackupAndRestore``) are left out.

        Returns:
            ``{key: callback}`` in the list's order.
        """
        keyed: dict[str, Callback] = {}
        for cb in self.callbacks:
            if isinstance(cb, ProgbarLogger) or getattr(cb, "_runs_last", False):
                continue
            base = getattr(cb, "state_key", None) or type(cb).__name__
            key, n = base, 1
            while key in keyed:
                n += 1
                key = f"{base}#{n}"
            keyed[key] = cb
        return keyed

    def _ordered(self) -> list[Callback]:
        # Callbacks that checkpoint or restore the whole state (BackupAndRestore) go
        # last in every hook: the state they save is the one every other callback has
        # finished with (a scheduler stepped, a CSV row written), and a restore is not
        # undone by another callback resetting itself in on_train_begin.
        first = [cb for cb in self.callbacks if not getattr(cb, "_runs_last", False)]
        return first + [cb for cb in self.callbacks if getattr(cb, "_runs_last", False)]

    def _call(self, hook: str, *args: Any) -> None:
        for cb in self._order:
            getattr(cb, hook)(*args)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call("on_test_batch_end", batch, logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call("on_predict_batch_end", batch, logs)
