"""ONNX Runtime and ONNX graphs: sessions, inputs, operators, precision, roofline."""
