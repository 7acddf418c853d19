"""PreFM online audio-visual event parsing: network, live inference, metrics, labels."""
