"""Media made from package-carried speech, sounds and pictures: the demo clip, test and benchmark clips,
the training corpus; and a loopback RTSP server that streams a clip in real time."""
