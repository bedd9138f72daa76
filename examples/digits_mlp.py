"""A multilayer perceptron learns to read handwritten digits.

The 8x8 digits bundled with scikit-learn (1797 images, nothing to download): each image is flattened to 64
pixels, two hidden layers of ReLU units map it to 10 scores, and cross-entropy compares the scores with the
true digit. AdamW does the updates, with a cosine learning-rate schedule. Reaches about 97% test
accuracy (96.7% with seed 0; 96.7-97.8% over seeds 0-4) in a few seconds on a laptop CPU.

    python examples/digits_mlp.py [--epochs 30] [--seed 0]
"""

import argparse

import numpy as np

import leakygrad as lg
from leakygrad import nn, optim
from leakygrad.data import DataLoader, load_digits
from leakygrad.nn import functional as F


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, 128),
        nn.ReLU(),
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def accuracy(model: nn.Module, X: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    with lg.no_grad():
        predictions = model(lg.Tensor(X)).data.argmax(axis=1)
    model.train()
    return float((predictions == y).mean())


def train_epoch(model: nn.Module, optimizer: optim.Optimizer, batches: DataLoader) -> float:
    """One pass over the training set; returns the mean loss per image over the pass.

    (The loss of the last batch alone would be noisy: 1347 images in batches of 64 leave 3 for the last.)
    """
    total, count = 0.0, 0
    for images, labels in batches:
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(labels)
        count += len(labels)
    return total / count


def main(epochs: int = 30, seed: int = 0, verbose: bool = True) -> float:
    lg.manual_seed(seed)  # the weights' initialisation
    data = load_digits(seed=seed)
    model = build_model()
    optimizer = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    schedule = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)  # the step size decays to 0
    batches = DataLoader(data.X_train, data.y_train, batch_size=64, shuffle=True, seed=seed)

    for epoch in range(1, epochs + 1):
        training_loss = train_epoch(model, optimizer, batches)
        schedule.step()
        if verbose and (epoch % 5 == 0 or epoch == 1):
            print(
                f"epoch {epoch:3d}   training loss {training_loss:.4f}   "
                f"test accuracy {accuracy(model, data.X_test, data.y_test):.1%}"
            )

    test_accuracy = accuracy(model, data.X_test, data.y_test)
    if verbose:
        print(f"final test accuracy: {test_accuracy:.2%} on {len(data.y_test)} held-out digits")
    return test_accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train an MLP on the 8x8 digits.")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.epochs, args.seed)
