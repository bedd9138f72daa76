"""A small convolutional network learns to read handwritten digits.

The same 8x8 digits as digits_mlp.py, kept as images (1 channel, 8x8). Two 3x3 convolutions find strokes and
their combinations wherever they are, max pooling keeps the strongest response of each 2x2 patch, and a
linear layer turns the 32 feature maps into 10 scores. Reaches about 98% test accuracy (97.6% with seed 0;
97.6-99.3% over seeds 0-4) in about ten seconds on a laptop CPU.

    python examples/digits_cnn.py [--epochs 20] [--seed 0]
"""

import argparse

import numpy as np

import leakygrad as lg
from leakygrad import nn, optim
from leakygrad.data import DataLoader, load_digits
from leakygrad.nn import functional as F


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),  # (N, 1, 8, 8) -> (N, 16, 8, 8)
        nn.ReLU(),
        nn.MaxPool2d(2),  # -> (N, 16, 4, 4)
        nn.Conv2d(16, 32, kernel_size=3, padding=1),  # -> (N, 32, 4, 4)
        nn.ReLU(),
        nn.Flatten(),  # -> (N, 512)
        nn.Dropout(0.25),  # during training, zero a random quarter of the features: less overfitting
        nn.Linear(32 * 4 * 4, 10),
    )


def accuracy(model: nn.Module, X: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    with lg.no_grad():
        predictions = model(lg.Tensor(X)).data.argmax(axis=1)
    model.train()
    return float((predictions == y).mean())


def train_epoch(model: nn.Module, optimizer: optim.Optimizer, batches: DataLoader) -> float:
    """One pass over the training set; returns the mean loss per image over the pass.

    (The loss of the last batch alone would be noisy: 1347 images in batches of 32 leave 3 for the last.)
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


def main(epochs: int = 20, seed: int = 0, verbose: bool = True) -> float:
    lg.manual_seed(seed)
    data = load_digits(seed=seed, images=True)
    model = build_model()
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    schedule = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)  # the step size decays to 0
    batches = DataLoader(data.X_train, data.y_train, batch_size=32, shuffle=True, seed=seed)

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
    parser = argparse.ArgumentParser(description="Train a small CNN on the 8x8 digits.")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.epochs, args.seed)
