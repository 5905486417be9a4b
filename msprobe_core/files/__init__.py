"""Files in and out, safely: validation of untrusted input, the one .npy and YAML readers, atomic outputs."""
