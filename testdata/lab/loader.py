# A PyTorch DataLoader whose batches are float32 images of ITEM_MIB each, BATCH of them per
# batch; the training loop is slower than the workers, so every worker fills its prefetch
# queue and /dev/shm reaches the loader's peak. Settings come from the environment.
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

workers = int(os.environ["WORKERS"])
prefetch = int(os.environ.get("PREFETCH", "2"))
batch = int(os.environ["BATCH"])
pin = os.environ.get("PIN_MEMORY", "0") == "1"
persistent = os.environ.get("PERSISTENT", "0") == "1"
epochs = int(os.environ.get("EPOCHS", "1"))
ITEM = (1, 512, 512)  # 1 MiB of float32 per item


class Images(Dataset):
    def __len__(self):
        return batch * (workers * prefetch + 2) * 2

    def __getitem__(self, i):
        return torch.full(ITEM, float(i))


kw = {}
if workers > 0:
    kw = {"prefetch_factor": prefetch, "persistent_workers": persistent}
loader = DataLoader(Images(), batch_size=batch, num_workers=workers, pin_memory=pin, timeout=120, **kw)
print(f"torch {torch.__version__}: workers={workers} prefetch={prefetch} batch={batch} MiB "
      f"pin_memory={pin} persistent_workers={persistent} epochs={epochs}", flush=True)
seen = 0
for epoch in range(epochs):
    for x in loader:
        time.sleep(0.3)  # the training step: slower than the workers, so their queues fill
        seen += int(x.shape[0])
print(f"done: {seen} items", flush=True)
sys.exit(0)
