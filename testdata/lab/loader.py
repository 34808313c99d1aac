# A PyTorch DataLoader whose batches are float32 images of 1 MiB each, BATCH of them per batch.
# The training loop holds the workers' pace: before it takes the next batch it waits until every
# batch it has asked for is written to /dev/shm, then takes its step. So every prefetch queue
# is full at each step however fast or slow the machine is, and /dev/shm reaches the loader's
# peak on a loaded machine as on a quiet one. The loop holds its batch while it asks for the
# next, as `for x in loader` does. Settings come from the environment.
import multiprocessing
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data._utils.collate import default_collate

ITEM = (1, 512, 512)  # 1 MiB of float32 per item
STEP = 0.3  # seconds of "training" at each step, with the queues full: watch samples them


class Images(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full(ITEM, float(i))


class Collate:
    """default_collate (which writes the batch to /dev/shm in a worker), then one release of
    the semaphore: the loop counts the batches written."""

    def __init__(self, written):
        self.written = written

    def __call__(self, items):
        batch = default_collate(items)
        self.written.release()
        return batch


def main():
    workers = int(os.environ["WORKERS"])
    prefetch = int(os.environ.get("PREFETCH", "2"))
    batch = int(os.environ["BATCH"])
    pin = os.environ.get("PIN_MEMORY", "0") == "1"
    persistent = os.environ.get("PERSISTENT", "0") == "1"
    epochs = int(os.environ.get("EPOCHS", "1"))
    method = os.environ.get("START_METHOD", "fork")
    if workers < 1:
        sys.exit("WORKERS must be at least 1")

    ctx = multiprocessing.get_context(method)
    written = ctx.Semaphore(0)
    batches = (workers * prefetch + 2) * 2
    loader = DataLoader(Images(batch * batches), batch_size=batch, num_workers=workers,
                        pin_memory=pin, timeout=120, prefetch_factor=prefetch,
                        persistent_workers=persistent, multiprocessing_context=ctx,
                        collate_fn=Collate(written))
    print(f"torch {torch.__version__}: workers={workers} prefetch={prefetch} batch={batch} MiB "
          f"pin_memory={pin} persistent_workers={persistent} start_method={method} "
          f"epochs={epochs}", flush=True)
    seen = 0
    held = None  # the batch the training loop holds
    for epoch in range(epochs):
        it = iter(loader)
        asked, got, taken = min(workers * prefetch, batches), 0, 0
        while True:
            # The loader asks for one more batch each time the loop takes one, up to the end.
            while got < asked:
                if not written.acquire(timeout=120):
                    sys.exit(f"epoch {epoch}: {asked - got} of the batches asked for were not written in 120 s")
                got += 1
            time.sleep(STEP)  # the training step, with every queue full
            try:
                nxt = next(it)
            except StopIteration:
                break
            held = nxt  # the loop lets go of its batch only once the next one is in hand
            taken += 1
            asked = min(workers * prefetch + taken, batches)
            seen += int(held.shape[0])
        del it
    print(f"done: {seen} items", flush=True)


if __name__ == "__main__":
    main()
