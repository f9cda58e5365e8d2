# Vendored for ember's real-program benchmark (bench/bench_programs.py); not ember code.
# Source (commit pinned):
#   https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/super_resolution/model.py
#   https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/super_resolution/main.py
# Licence: BSD-3-Clause, see bench/real_programs/licenses/pytorch-examples.txt (the original copyright notice).
# Trimmed to what one training step runs; kept lines are the original's, unmodified:
#   model.py whole; from main.py only train() (argparse, the BSDS300 download and loaders, test
#   and checkpoints dropped; the harness presets model, criterion, optimizer, device and a one-
#   batch loader).

# ---- from pytorch/examples: super_resolution/model.py -------------------
import torch
import torch.nn as nn
import torch.nn.init as init


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)

# ---- from pytorch/examples: super_resolution/main.py --------------------
def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)

        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()

        print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(epoch, iteration, len(training_data_loader), loss.item()))

    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))
