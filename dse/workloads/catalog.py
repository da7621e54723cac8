"""What the zoo holds: one :class:`ModelInfo` per model. Pure data, no torch import (``dse zoo list``).

Input sizes and frame rates are XRBench's (Kwon et al., "XRBench: An Extended Reality (XR) Machine
Learning Benchmark Suite for the Metaverse", MLSys 2023; artifact XRBench/XRBench-MLSys2023,
``XRbench_evaluation/usage_scenarios/*.m``: first-layer Y x X and ``FPS:`` of each network).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

XRBENCH = "XRBench (Kwon et al., MLSys 2023) usage_scenarios"


@dataclass(frozen=True)
class ModelInfo:
    """One zoo model: what it does, where its architecture comes from, what it eats, how often."""

    name: str
    task: str
    source: str                          # citation of the architecture
    inputs: dict[str, tuple[int, ...]]   # input name -> shape (batch 1)
    fps: float                           # default target frame rate
    fps_source: str                      # where the frame rate comes from
    module: str                          # module under dse.workloads that defines it
    builder: str                         # function in that module returning the nn.Module
    xrbench_id: str | None = None
    notes: str = field(default="")       # input-size choices
    simplified: str = field(default="")  # where the model departs from its source (details: module docstring)

    @property
    def short_source(self) -> str:
        """``Authors, VENUE YEAR`` (the first venue-year in the citation), for tables."""
        venue = re.search(r"\b[A-Z][A-Za-z]* \d{4}\b", self.source)
        return f"{self.source.split(',')[0]}, {venue.group(0)}" if venue else self.source

    @property
    def input_summary(self) -> str:
        return ", ".join("x".join(map(str, shape)) for shape in self.inputs.values())


MODELS: dict[str, ModelInfo] = {m.name: m for m in (
    ModelInfo("hand_tracking", "hand tracking (2-D heatmaps + 3-D mesh)",
              "Ge et al., 3D Hand Shape and Pose Estimation from a Single RGB Image, CVPR 2019 "
              "(stacked hourglass, Newell et al. ECCV 2016, + graph CNN)",
              {"x": (1, 3, 128, 128)}, 45.0, f"{XRBENCH} AR_gaming/VR_gaming (30 in Social A)",
              "hand_tracking", "hand_tracking", "HT_hand_graph_cnn_half",
              simplified="post-activation bottlenecks; graph head: 3 first-order graph convs on an 80/160/320-vertex "
                         "ring mesh (dense fixed adjacency), not Chebyshev convs on 1280 vertices"),
    ModelInfo("eye_segmentation", "eye segmentation (4 classes)",
              "Chaudhary et al., RITnet: Real-time Semantic Segmentation of the Eye for Gaze Tracking, ICCVW 2019",
              {"x": (1, 1, 160, 100)}, 60.0, f"{XRBENCH} VR_gaming/social_interaction",
              "eye_segmentation", "eye_segmentation", "ES_RITNet",
              "XRBench's listed 160x100 (Y x X; a quarter of RITnet's native 640x400), not the native size",
              simplified="BN before the last LeakyReLU of each down block (foldable); no dropout"),
    ModelInfo("gaze_estimation", "gaze estimation",
              "Wu et al., FBNet: Hardware-Aware Efficient ConvNet Design via Differentiable NAS, CVPR 2019 (FBNet-C)",
              {"x": (1, 3, 160, 100)}, 60.0, f"{XRBENCH} VR_gaming/social_interaction",
              "gaze_estimation", "gaze_estimation", "GE_FBNet_C",
              simplified="grouped 1x1 + channel shuffle as plain 1x1, 1000-way head (both as XRBench lists)"),
    ModelInfo("keyword_spotting", "keyword spotting (12 classes)",
              "Tang & Lin, Deep Residual Learning for Small-Footprint Keyword Spotting, ICASSP 2018 (res8-narrow)",
              {"x": (1, 1, 98, 40)}, 3.0, f"{XRBENCH} AR_Assistant/outdoor_activity",
              "keyword_spotting", "keyword_spotting", "KD_res8_narrow", "98 frames x 40 MFCCs",
              simplified="conv-BN-ReLU order (paper: ReLU then BN)"),
    ModelInfo("speech_encoder", "speech recognition encoder",
              "Shi et al., Emformer: Efficient Memory Transformer Based Acoustic Model for Low Latency "
              "Streaming Speech Recognition, ICASSP 2021",
              {"x": (128, 512)}, 3.0, f"{XRBENCH} AR_Assistant/outdoor_activity (cascaded after KWS)",
              "speech_encoder", "speech_encoder", "ASR_EM_24L",
              "one 128-frame segment x 512 features (frames x d_model, no batch axis)",
              simplified="4 layers, not 24; plain segment self-attention (no memory bank / right context)"),
    ModelInfo("depth_estimation", "monocular depth estimation",
              "Ranftl et al., Towards Robust Monocular Depth Estimation, TPAMI 2022 (MiDaS v2.1 small: "
              "EfficientNet-Lite3 encoder, Tan & Le ICML 2019)",
              {"x": (1, 3, 192, 256)}, 30.0, f"{XRBENCH} AR_gaming/AR_Assistant",
              "depth_estimation", "depth_estimation", "DE_midas_v21_small",
              "192x256: XRBench lists 96x128 after the stride-2 stem and a 192x256 output head",
              simplified="encoder's unused head conv/classifier dropped"),
    ModelInfo("action_segmentation", "temporal action segmentation (11 classes)",
              "Lea et al., Temporal Convolutional Networks for Action Segmentation and Detection, CVPR 2017 (ED-TCN)",
              {"x": (1, 128, 668)}, 30.0, f"{XRBENCH} social_interactionB",
              "action_segmentation", "action_segmentation", "AS_ED_TCN", "128 features x 668 frames",
              simplified="ReLU instead of normalised ReLU; per-frame FC as 1x1 conv"),
    ModelInfo("mobilenet_v2", "image classification (reference)",
              "Sandler et al., MobileNetV2: Inverted Residuals and Linear Bottlenecks, CVPR 2018",
              {"x": (1, 3, 224, 224)}, 30.0, "assumed camera rate (not an XRBench model)",
              "mobilenet_v2", "mobilenet_v2",
              simplified="none (no dropout)"),
    ModelInfo("resnet18", "image classification (reference)",
              "He et al., Deep Residual Learning for Image Recognition, CVPR 2016 (ResNet-18)",
              {"x": (1, 3, 224, 224)}, 30.0, "assumed camera rate (not an XRBench model)", "resnet", "resnet18",
              simplified="none"),
    ModelInfo("resnet50", "image classification (reference)",
              "He et al., Deep Residual Learning for Image Recognition, CVPR 2016 (ResNet-50)",
              {"x": (1, 3, 224, 224)}, 30.0, "assumed camera rate (not an XRBench model)", "resnet", "resnet50",
              simplified="none (stride on the 3x3: v1.5)"),
)}
