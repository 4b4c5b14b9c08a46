"""Tests of nnkit.onnx (ONNX export, checked with ONNX Runtime)."""
