"""The ``nnkit`` command line: train, evaluate and use models described by YAML.

Commands (``nnkit --help``; each imports the rest of nnkit only when it runs)::

    nnkit train CONFIG.yaml [--set key.path=value ...] [--resume auto|CKPT] [--device D]
                [--dry-run] [--print-config] [--allow-change KEY ...]
    nnkit verify CKPT
    nnkit evaluate CONFIG.yaml --checkpoint CKPT
    nnkit predict CONFIG.yaml --checkpoint CKPT --input FILE [--output FILE]
    nnkit summary CONFIG.yaml
    nnkit export CONFIG.yaml --checkpoint CKPT --output MODEL.onnx [--opset N]
    nnkit --version

Config schema (``examples/digits_mlp.yaml`` and ``examples/digits_cnn.yaml`` are
commented examples). Unknown keys are errors; defaults in brackets::

    seed: int [0]               nnkit.manual_seed, the test split and the shuffling
    device: str [cpu]           'cpu', 'cuda', 'cuda:N' (--device replaces it)
    data:                       required
      name: str                 digits | moons | spirals | csv | npz | idx
      batch_size: int [32]
      shuffle: bool [true]      reshuffle the training samples every epoch
      validation_split: float [0.0]   last fraction of the training split held out
      test_size: float [0.2]    fraction held out as the test split (0: none)
      # digits:  scale [true], flatten [true] (false: samples of shape (1, 8, 8))
      # moons:   n_samples [500], noise [0.1]
      # spirals: n_samples [300], n_classes [3], noise [0.2]
      # csv:     path, test_path [null], target [-1] (index or name), header ['infer'],
      #          delimiter [',']
      # npz:     path, test_path [null], x_key ['x'], y_key ['y']
      # idx:     images, labels, test_images [null], test_labels [null],
      #          scale [true] (divide by 255), flatten [true]
    model:                      required
      input_shape: [int, ...]   optional: one sample's shape, checked against the data
      layers:                   a Sequential of nnkit.layers classes, in order:
        - {type: Dense, units: 128, activation: relu}   other keys are keyword arguments
        - Flatten                                        a bare name: no arguments
        - {type: Dense, units: 10, trainable: false}    any layer also takes Keras's
                                #   name (str) and trainable (bool: false freezes it)
    optimizer: {name: adam, lr: 0.001, ...} [adam]   sgd | adam | adamw | rmsprop | adagrad;
                                #   other keys are the optimizer's keyword arguments
                                #   (nnkit.optim); with keras: true, nnkit.optimizers's
                                #   (learning_rate, gradient_accumulation_steps, ...)
    scheduler: {name: StepLR, step_size: 10, ...} [null]   an nnkit.optim.lr_scheduler
                                #   class, stepped once per epoch (interval: step: after
                                #   every batch)
    loss: str [cross_entropy]   a loss name Model.compile accepts
    metrics: [str, ...] [[]]    metric names Model.compile accepts (accuracy, mae, ...)
    train:
      epochs: int [10]
      verbose: int [2]          0 silent, 1 a progress bar, 2 one line per epoch
      stop_on_nonfinite: bool [true]   a NaN/inf loss stops the run (exit 1)
      jit_compile: bool|auto [auto]    Model.compile's flag: auto compiles the training
                                #   step where safe and worthwhile (nnkit.compile); the
                                #   results are bitwise the same either way
    callbacks: [{type: EarlyStopping, patience: 3}, ...] [[]]   nnkit.callbacks classes;
                                #   relative filepath/filename/backup_dir go in output.dir
    distributed:                data parallel under mpiexec -n N
      sync_batchnorm: bool [false]   BatchNorm layers become SyncBatchNorm: statistics of
                                #   the whole global batch, not of each process's share
      timeout: float [null]     seconds a process waits in a collective before the job is
                                #   aborted (null: $NNKIT_DISTRIBUTED_TIMEOUT, else 1800)
    output:
      dir: str [runs/<config file stem>]
      checkpoint: str [last.h5] the final checkpoint: the whole training state (weights,
                                #   optimizer, callbacks, loader, RNG, history) and this
                                #   config as YAML; --resume it to train more epochs
      best: str [null]          also keep the best epoch's model here (ModelCheckpoint)
      monitor: str [null]       what "best" means (default val_loss, or loss without
                                #   validation)
      save_every: int [null]    also checkpoint every N steps (always after each epoch),
                                #   in <dir>/checkpoints, for --resume auto
      keep: int [2]             checkpoint generations kept there

``--set a.b=value`` overrides any key (``--set model.layers[0].units=64``); the value
is parsed as YAML and the result is validated like the file. Relative paths are taken
from the current directory. A config error prints one line naming the key, e.g.
``config error: model.layers[2].type: unknown layer 'Dense2' (did you mean 'Dense'?)``,
to stderr and exits with status 2.

The run folder (``output.dir``) is described in :mod:`nnkit.cli.run_folder`; a first
Ctrl-C or SIGTERM checkpoints the current step and exits 130/143 with the command that
resumes (``--resume auto``).
"""

from nnkit.cli.app import app, main

__all__ = ["app", "main"]
