"""End to end: the real `signoff` CLI in a subprocess, on the simulator (examples/decode-campaign)."""
