# Writes the hand-made seeds of corpus/safetensors (the others are copies of tests/golden files).
#     /usr/bin/python3 tests/fuzz/make_corpus.py
import json
import os
import struct

d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")


def write(name, header, data=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


write("empty.safetensors", {})
write("meta.safetensors", {"__metadata__": {"format": "pt"}})
write("scalar_f64.safetensors", {"x": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}}, struct.pack("<d", 1.5))
write("two.safetensors",
      {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
       "b": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]}},
      struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<q", 7))
write("zero_size.safetensors", {"z": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}})
