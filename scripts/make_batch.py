"""Writes a fixed synthetic batch for the main job: tokens.npy, targets.npy.

  make_batch.py DIR BATCH SEQ VOCAB

Sequence b counts up from 7 b modulo min(VOCAB, 64); the target of each
token is the next one. A model that learns the rule drives the loss toward
zero, so a falling loss shows that training works.
"""
import sys

import numpy as np

out, batch, seq, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
period = min(vocab, 64)
k = np.arange(batch * seq).reshape(batch, seq)
tokens = ((k // seq) * 7 + k % seq) % period
np.save(f"{out}/tokens.npy", tokens.astype(np.int32))
np.save(f"{out}/targets.npy", ((tokens + 1) % period).astype(np.int32))
