"""From ONNX to accelerator binaries: the front end, the ISA, lowering and the simulator."""
