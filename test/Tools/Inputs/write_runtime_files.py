"""Writes files for anvil-inspect.test with NumPy and the formats' specs,
independently of Anvil's writers: .npy arrays via np.save, a safetensors
file laid out by hand (header length, JSON header, data), and broken ones."""
import json
import struct
import sys

import numpy as np

out = sys.argv[1]
np.save(f"{out}/f32.npy", np.arange(12, dtype=np.float32).reshape(3, 4) / 4)
np.save(f"{out}/i64.npy", np.array([5, -7, 9], dtype=np.int64))
np.save(f"{out}/bool.npy", np.array([[True, False], [True, True]]))
np.save(f"{out}/scalar.npy", np.float64(2.5))
np.save(f"{out}/fortran.npy", np.asfortranarray(np.ones((2, 3), np.float32)))
np.save(f"{out}/big.npy", np.ones(3, dtype=">f4"))
np.save(f"{out}/u8.npy", np.ones(3, dtype=np.uint8))

w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
step = np.array(40, dtype=np.int64)
header = {
    "__metadata__": {"format": "pt", "step": "40"},
    "step": {"dtype": "I64", "shape": [], "data_offsets": [24, 32]},
    "h.0.w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
}
text = json.dumps(header).encode()
blob = struct.pack("<Q", len(text)) + text + w.tobytes() + step.tobytes()
open(f"{out}/ok.safetensors", "wb").write(blob)
open(f"{out}/truncated.safetensors", "wb").write(blob[:-5])
open(f"{out}/corrupt.safetensors", "wb").write(blob[:9] + b"#" + blob[10:])
